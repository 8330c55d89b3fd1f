// tap: a kernel TAP interface as a device. `ip link add dev D type tap [name IF]
// [multi_queue N] [netns NAME]` opens /dev/net/tun as IFF_TAP|IFF_NO_PI (IFF_MULTI_QUEUE
// with one file per queue for N > 1) when D is set up, creating the kernel interface IF
// (default: D's name), in the network namespace NAME (made by `ip netns add`, as
// /run/netns/NAME) when given, and sets IF up with D's MTU. The kernel interface exists
// while D is up: setting D down closes the files, which removes IF.
//
// Transmit writes each frame to its queue's file (one write per frame, as tun takes
// them; writev for a fragmented frame): tun_get_user hands it to IF's receive path.
// Receive is one NAPI instance per queue on the Cpu of the thread that sets D up (the
// control thread in `pktpath run`): its poll reads frames from the non-blocking file up to
// its budget and hands each to netif_receive_skb; a file found empty completes the
// instance and re-arms its "interrupt": a thread per device that sleeps in poll() on the
// armed files and schedules an instance when its file turns readable (the interrupt
// handler's napi_schedule). Nothing stays pending while no frame waits, so the runner's
// lines never wait on the device.
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "core/dev_rx.h"
#include "core/link_kind.h"

namespace pktpath {

namespace {

constexpr uint32_t kMaxQueues = 16;

struct TapPriv;

struct TapQueue {
  TapPriv* owner = nullptr;
  int fd = -1;
  Napi napi;
  std::atomic<bool> armed{false};  // the interrupt thread watches fd
};

struct TapPriv final : DriverState {
  NetDevice* dev = nullptr;
  // Configuration (while down).
  std::string ifname;  // empty: the device's name
  std::string netns;   // empty: the namespace pktpath runs in
  uint32_t nqueues = 1;

  // Once up.
  std::unique_ptr<TapQueue[]> q;
  uint32_t nq = 0;            // queues open
  int kick = -1;              // eventfd: re-arm and stop for the interrupt thread
  int nl = -1;                // rtnetlink socket in IF's namespace: IF's counters
  int ifindex = 0;            // IF's, in its namespace
  uint32_t nl_seq = 0;
  uint64_t kernel_dropped = 0;  // IF's tx_dropped already counted on this device
  std::thread irq;
  std::atomic<bool> running{false};

  std::string error;  // the first failure, reported once through busy()
  bool error_reported = false;
  // IF was deleted in the kernel while up: its files answer EBADFD (tun detached them).
  std::atomic<bool> vanished{false};
  void lose_link() {
    vanished.store(true, std::memory_order_relaxed);
    dev->set_carrier(false);
  }

  ~TapPriv() override { close_all(); }
  void fail(std::string msg) {
    if (error.empty()) error = dev->name() + ": " + std::move(msg);
  }
  const std::string& kernel_name() const { return ifname.empty() ? dev->name() : ifname; }
  void stop_irq() {
    if (!irq.joinable()) return;
    running.store(false, std::memory_order_release);
    const uint64_t one = 1;
    (void)!::write(kick, &one, sizeof one);
    irq.join();
  }
  void close_all() {
    stop_irq();
    for (uint32_t i = 0; i < nq; ++i)
      if (q[i].fd >= 0) ::close(q[i].fd);
    nq = 0;
    q.reset();
    if (kick >= 0) ::close(kick);
    if (nl >= 0) ::close(nl);
    kick = nl = -1;
  }
};

TapPriv& priv(const NetDevice& dev) { return *static_cast<TapPriv*>(dev.priv()); }

// The interrupt: sleeps until an armed queue's file is readable (or has failed) and
// schedules that queue's instance, disarming it until its poll finds the file empty.
void irq_loop(TapPriv& s) {
  std::vector<pollfd> fds(s.nq + 1);
  while (s.running.load(std::memory_order_acquire)) {
    fds[0] = {s.kick, POLLIN, 0};
    for (uint32_t i = 0; i < s.nq; ++i)
      fds[i + 1] = {s.q[i].armed.load(std::memory_order_acquire) ? s.q[i].fd : -1, POLLIN, 0};
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) {
      uint64_t v;
      (void)!::read(s.kick, &v, sizeof v);
    }
    for (uint32_t i = 0; i < s.nq; ++i)
      if (fds[i + 1].revents && s.q[i].armed.exchange(false, std::memory_order_acq_rel)) napi_schedule(s.q[i].napi);
  }
}

// One frame the poll could not take: counted, and its bytes read off the file.
void rx_drop(Cpu& cpu, NetDevice& dev, Packet* p, DropReason why) {
  dev.stats(cpu).rx_dropped.add();
  if (p) cpu.free_reason(p, why);
  else cpu.stats().drops[static_cast<unsigned>(why)].add();
}

// mirrors a NAPI driver's poll (tun's own napi_gro_receive path, read from the other
// end): up to `budget` frames off the queue's file into packets of `cpu`.
int tap_poll(Napi& n, Cpu& cpu, int budget) {
  TapQueue& tq = *static_cast<TapQueue*>(n.ctx);
  TapPriv& s = *tq.owner;
  NetDevice& dev = *s.dev;
  int done = 0;
  while (done < budget) {
    if (PP_UNLIKELY(!s.running.load(std::memory_order_relaxed))) {
      napi_complete_done(n, done);
      return done;
    }
    Packet* p = cpu.alloc();
    ssize_t got;
    if (PP_LIKELY(p != nullptr)) {
      got = ::read(tq.fd, p->data(), p->tailroom());
    } else {
      uint8_t sink[64];  // read to drop it: tun discards the rest of a frame a short read leaves
      got = ::read(tq.fd, sink, sizeof sink);
    }
    if (got < 0) {
      if (p) cpu.free(p);
      if (errno == EINTR) continue;
      if (errno == EBADFD) {  // IF vanished: the interrupt stays disarmed
        s.lose_link();
        napi_complete_done(n, done);
        return done;
      }
      if (errno != EAGAIN) {
        s.fail("read " + s.kernel_name() + ": " + std::strerror(errno));
        napi_complete_done(n, done);
        return done;
      }
      // Empty: complete, and unless a schedule came meanwhile (MISSED) re-arm the interrupt.
      if (napi_complete_done(n, done)) {
        tq.armed.store(true, std::memory_order_release);
        const uint64_t one = 1;
        (void)!::write(s.kick, &one, sizeof one);
      }
      return done;
    }
    ++done;
    const uint32_t len = static_cast<uint32_t>(got);
    if (PP_UNLIKELY(!p)) rx_drop(cpu, dev, nullptr, DropReason::NOMEM);
    else if (PP_UNLIKELY(len < 14)) rx_drop(cpu, dev, p, DropReason::PKT_TOO_SMALL);
    else if (PP_UNLIKELY(len > dev.mtu() + 14 + 4 || len >= p->tailroom())) rx_drop(cpu, dev, p, DropReason::PKT_TOO_BIG);  // over the MTU, or (filling the buffer) maybe cut short
    else {
      p->put(len);
      eth_type_trans(*p, dev);
      dev_sw_netstats_rx_add(cpu, dev, len);  // tun_get_user counts it whatever the stack does
      netif_receive_skb(cpu, p);
    }
  }
  return done;
}

// IF's tx_dropped as rtnl_getlink reports it (IFLA_STATS64): the frames the kernel meant
// for this device and dropped, above all tun_net_xmit's FULL_RING when the tap's ring
// (IF's txqueuelen) was full because the polls fell behind.
bool kernel_tx_dropped(TapPriv& s, uint64_t& v) {
  struct {
    nlmsghdr h;
    ifinfomsg i;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = RTM_GETLINK;
  req.h.nlmsg_flags = NLM_F_REQUEST;
  req.h.nlmsg_seq = ++s.nl_seq;
  req.i.ifi_family = AF_UNSPEC;
  req.i.ifi_index = s.ifindex;
  if (::send(s.nl, &req, sizeof req, 0) != static_cast<ssize_t>(sizeof req)) return false;
  alignas(nlmsghdr) char buf[8192];
  int n = static_cast<int>(::recv(s.nl, buf, sizeof buf, 0));
  for (auto* h = reinterpret_cast<nlmsghdr*>(buf); n > 0 && NLMSG_OK(h, static_cast<unsigned>(n)); h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_seq != s.nl_seq) continue;
    auto* ifi = static_cast<ifinfomsg*>(NLMSG_DATA(h));
    int len = static_cast<int>(IFLA_PAYLOAD(h));
    for (auto* a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len))
      if (a->rta_type == IFLA_STATS64 && RTA_PAYLOAD(a) >= sizeof(rtnl_link_stats64)) {
        rtnl_link_stats64 st;
        std::memcpy(&st, RTA_DATA(a), sizeof st);
        v = st.tx_dropped;
        return true;
      }
  }
  return false;
}

// The kernel's drops since the last look, as this device's rx_dropped (FULL_RING): a
// frame the kernel sent on IF is either read by a poll or counted here.
void collect_kernel_drops(TapPriv& s, Cpu& cpu) {
  uint64_t v = 0;
  if (s.nl < 0 || !kernel_tx_dropped(s, v) || v <= s.kernel_dropped) return;
  const uint64_t d = v - s.kernel_dropped;
  s.kernel_dropped = v;
  s.dev->stats(cpu).rx_dropped.add(d);
  cpu.stats().drops[static_cast<unsigned>(DropReason::FULL_RING)].add(d);
}

// mirrors tun_get_user from the writer's side: one frame per write; tun drops (and the
// write fails) while IF is down.
NetdevTx tap_xmit(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue&) {
  TapPriv& s = priv(dev);
  DevCpuStats& st = dev.stats(cpu);
  if (PP_UNLIKELY(s.nq == 0)) {
    st.tx_dropped.add();
    cpu.free_reason(p, DropReason::DEV_READY);
    return NetdevTx::OK;
  }
  const int fd = s.q[p->queue_mapping % s.nq].fd;
  const uint32_t len = p->len;
  ssize_t put;
  if (PP_LIKELY(p->nr_frags == 0)) {
    put = ::write(fd, p->data(), len);
  } else {
    iovec iov[1 + kMaxFrags];
    iov[0] = {p->data(), p->headlen()};
    for (unsigned i = 0; i < p->nr_frags; ++i) iov[i + 1] = {const_cast<uint8_t*>(p->frags[i].data), p->frags[i].len};
    put = ::writev(fd, iov, 1 + p->nr_frags);
  }
  if (PP_LIKELY(put == static_cast<ssize_t>(len))) {
    st.tx_packets.add();
    st.tx_bytes.add(len);
    cpu.free(p);
  } else {
    const int e = put < 0 ? errno : 0;
    if (PP_UNLIKELY(e == EBADFD)) s.lose_link();
    st.tx_dropped.add();
    cpu.free_reason(p, e == EIO || e == EBADFD ? DropReason::DEV_READY : DropReason::NOT_SPECIFIED);
  }
  return NetdevTx::OK;
}

// ---- up, down

// Runs `fn` with the calling thread in network namespace `name` (/run/netns/NAME, as
// `ip netns exec` enters it); the thread's own namespace again afterwards.
template <typename Fn>
bool in_netns(const std::string& name, std::string& err, Fn fn) {
  if (name.empty()) return fn();
  const std::string path = "/run/netns/" + name;
  const int target = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) {
    err = "netns " + name + ": " + path + ": " + std::strerror(errno) + " (create it with ip netns add " + name + ")";
    return false;
  }
  const int home = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (home < 0 || ::setns(target, CLONE_NEWNET) != 0) {
    err = "netns " + name + ": " + std::strerror(errno);
    if (home >= 0) ::close(home);
    ::close(target);
    return false;
  }
  ::close(target);
  const bool ok = fn();
  if (::setns(home, CLONE_NEWNET) != 0) {  // cannot happen for a namespace we came from
    err = std::string("cannot return to the original network namespace: ") + std::strerror(errno);
    ::close(home);
    std::abort();
  }
  ::close(home);
  return ok;
}

// dev_set_mtu on the kernel side: interface `ifn`'s MTU through socket `sk`.
bool set_kernel_mtu(int sk, const std::string& ifn, uint32_t mtu, std::string& err) {
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifn.data(), std::min(ifn.size(), sizeof ifr.ifr_name - 1));
  ifr.ifr_mtu = static_cast<int>(mtu);
  if (::ioctl(sk, SIOCSIFMTU, &ifr) == 0) return true;
  err = "mtu " + std::to_string(mtu) + " on " + ifn + ": " + std::strerror(errno);
  return false;
}

// mirrors tun_set_iff (through TUNSETIFF) for each queue, then dev_change_flags(IFF_UP)
// and dev_set_mtu on the kernel side.
bool open_queues(TapPriv& s, std::string& err) {
  const std::string& ifn = s.kernel_name();
  if (ifn.size() >= IFNAMSIZ) {
    err = "name " + ifn + ": longer than " + std::to_string(IFNAMSIZ - 1) + " characters";
    return false;
  }
  for (uint32_t i = 0; i < s.nqueues; ++i) {
    const int fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      err = std::string("/dev/net/tun: ") + std::strerror(errno) +
            (errno == ENOENT ? " (no tun module or device node)" : errno == EACCES || errno == EPERM ? " (needs CAP_NET_ADMIN)" : "");
      return false;
    }
    s.q[s.nq++].fd = fd;
    ifreq ifr{};
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | (s.nqueues > 1 ? IFF_MULTI_QUEUE : 0);
    std::memcpy(ifr.ifr_name, ifn.data(), ifn.size());
    if (::ioctl(fd, TUNSETIFF, &ifr) != 0) {
      const int e = errno;
      err = "TUNSETIFF " + ifn + ": " + std::strerror(e) +
            (e == EPERM ? " (creating a tap needs CAP_NET_ADMIN)"
             : e == EBUSY ? " (a kernel interface of that name exists and is not a free tap)"
             : e == EINVAL && s.nqueues > 1 ? " (an interface of that name exists without multi_queue)" : "");
      return false;
    }
  }
  const int sk = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sk < 0) {
    err = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifn.data(), ifn.size());
  bool ok = set_kernel_mtu(sk, ifn, s.dev->mtu(), err);
  if (ok && (ok = ::ioctl(sk, SIOCGIFFLAGS, &ifr) == 0)) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    ok = ::ioctl(sk, SIOCSIFFLAGS, &ifr) == 0;
  }
  if (!ok && err.empty()) err = "setting " + ifn + " up: " + std::strerror(errno);
  if (ok && ::ioctl(sk, SIOCGIFINDEX, &ifr) == 0) {
    s.ifindex = ifr.ifr_ifindex;
    s.nl = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);  // counters only: none is fatal
  }
  ::close(sk);
  return ok;
}

int tap_open(NetDevice& dev) {
  TapPriv& s = priv(dev);
  s.error.clear();
  s.error_reported = false;
  s.vanished = false;
  dev.set_carrier(true);
  Cpu* cpu = Cpu::current();
  if (!cpu) {
    s.fail("receive needs a Cpu bound to the thread that sets it up");
    return -1;
  }
  s.q = std::make_unique<TapQueue[]>(s.nqueues);
  s.nq = 0;
  s.kernel_dropped = 0;
  std::string err;
  s.kick = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s.kick < 0 || !in_netns(s.netns, err, [&] { return open_queues(s, err); })) {
    s.fail(s.kick < 0 ? std::string("eventfd: ") + std::strerror(errno) : err);
    s.close_all();
    return -1;
  }
  for (uint32_t i = 0; i < s.nq; ++i) {
    TapQueue& tq = s.q[i];
    tq.owner = &s;
    tq.napi.poll = tap_poll;
    tq.napi.ctx = &tq;
    tq.napi.cpu = cpu;
    tq.armed.store(true, std::memory_order_relaxed);
  }
  s.running.store(true, std::memory_order_release);
  s.irq = std::thread(irq_loop, std::ref(s));
  return 0;
}

// mirrors ndo_stop with napi_disable: the interrupt stops, a scheduled poll runs out on
// the polling Cpu (it finds running false and completes), the files close (IF goes).
void tap_stop(NetDevice& dev) {
  TapPriv& s = priv(dev);
  s.stop_irq();
  for (uint32_t i = 0; i < s.nq; ++i) napi_wait_idle(s.q[i].napi);
  if (Cpu* cpu = Cpu::current()) collect_kernel_drops(s, *cpu);
  s.close_all();
}

bool tap_busy(NetDevice& dev, Cpu& cpu, std::string& err) {
  TapPriv& s = priv(dev);
  collect_kernel_drops(s, cpu);
  // mirrors NETDEV_UNREGISTER of IF: one message naming it; no carrier, and the runner
  // takes the device down.
  if (s.vanished.load(std::memory_order_relaxed) && s.error.empty())
    s.fail("tap interface " + s.kernel_name() + (s.netns.empty() ? "" : " in netns " + s.netns) +
           " vanished (deleted in the kernel): no carrier, the device goes down");
  if (!s.error.empty() && !s.error_reported) {
    err = s.error;
    s.error_reported = true;
  }
  return false;  // receive runs for as long as the device is up; nothing to wait for
}

bool tap_set_text_option(NetDevice& dev, std::string_view name, std::string_view value, std::string& err) {
  TapPriv& s = priv(dev);
  if (dev.is_up()) {
    err = "tap: " + std::string(name) + " cannot change while the device is up";
    return false;
  }
  if (value.find(' ') != std::string_view::npos || value.find('/') != std::string_view::npos) {
    err = "tap: " + std::string(name) + ": one word without '/' expected, got \"" + std::string(value) + "\"";
    return false;
  }
  if (name == "name") {
    if (value.size() >= IFNAMSIZ) {
      err = "tap: name \"" + std::string(value) + "\" is longer than " + std::to_string(IFNAMSIZ - 1) + " characters";
      return false;
    }
    s.ifname = value;
  } else {
    s.netns = value;
  }
  return true;
}

void tap_set_option(NetDevice& dev, std::string_view name, uint64_t value) {
  if (name == "multi_queue") priv(dev).nqueues = value == 0 ? 1 : static_cast<uint32_t>(value);
}

void tap_setup(NetDevice& dev) {
  auto s = std::make_unique<TapPriv>();
  s->dev = &dev;
  dev.set_priv(std::move(s));
}

// A new MTU while the kernel interface is open goes to it too (tun_net_change_mtu's
// counterpart on the other side of the fd); a down tap sets it when it opens.
Status tap_change_mtu(NetDevice& dev, uint32_t mtu) {
  TapPriv& s = priv(dev);
  if (s.nq == 0) return {};
  std::string err;
  const bool ok = in_netns(s.netns, err, [&] {
    const int sk = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sk < 0) {
      err = std::string("socket: ") + std::strerror(errno);
      return false;
    }
    const bool set = set_kernel_mtu(sk, s.kernel_name(), mtu, err);
    ::close(sk);
    return set;
  });
  if (!ok) return unexpected(err, std::to_string(mtu));
  return {};
}

const NetDeviceOps tap_ops = {
    .open = tap_open,
    .stop = tap_stop,
    .start_xmit = tap_xmit,
    .select_queue = nullptr,
    .change_mtu = tap_change_mtu,
};

const LinkKind::Option tap_options[] = {
    {"name", 0, LinkKind::kText},
    {"multi_queue", kMaxQueues},
    {"netns", 0, LinkKind::kText},
    {nullptr, 0},
};

// No queue and LLTX, as veth: tun takes concurrent writers on a file itself.
const LinkKindRegistrar kTap{{.kind = "tap",
                              .ops = &tap_ops,
                              .flags = IFF_NO_QUEUE | NETIF_F_LLTX,
                              .setup = tap_setup,
                              .options = tap_options,
                              .set_option = tap_set_option,
                              .dellink = nullptr,
                              .set_text_option = tap_set_text_option,
                              .busy = tap_busy,
                              .touches_host = true}};

}  // namespace
}  // namespace pktpath
