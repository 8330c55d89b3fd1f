#include "core/host_sink.h"

#include <cstring>
#include <memory>

#include "core/counter.h"
#include "core/dev_xmit.h"
#include "core/inet_checksum.h"
#include "core/net.h"
#include "core/sysctl.h"

namespace pktpath {

namespace {

struct alignas(kCacheLine) HostCpuStats {
  Counter delivered, in_echos, out_echo_reps, in_echo_reps;
};

struct HostNet final : PernetState {
  std::atomic<bool> echo_ignore_all{true};
  std::unique_ptr<HostCpuStats[]> pcpu = std::make_unique<HostCpuStats[]>(kMaxCpus);
};

const PernetRegistrar host_pernet{{"host", [](Net&) -> std::unique_ptr<PernetState> {
                                     return std::make_unique<HostNet>();
                                   }}};
HostNet& host_net(Net& net) { return net.generic<HostNet>(host_pernet.id); }

const SysctlRegistrar echo_ignore_all{
    {"net.ipv4.icmp_echo_ignore_all", nullptr, "0|1",
     [](Net& n) { return std::string(host_net(n).echo_ignore_all.load() ? "1" : "0"); },
     [](Net& n, const std::string& v) -> Status {
       uint32_t x = 0;
       if (Status st = sysctl_parse_uint("net.ipv4.icmp_echo_ignore_all", v, 0, 1, &x); !st) return st;
       host_net(n).echo_ignore_all.store(x != 0);
       return {};
     }}};

constexpr uint32_t kEth = 14;

// The ICMP type of an Ethernet/IPv4 ICMP packet with a whole header, or -1.
int icmp_type(const Packet& p, unsigned* ihl_out) {
  const uint8_t* d = p.data();
  const uint32_t n = p.headlen();
  if (n < kEth + 20 + 8 || d[12] != 0x08 || d[13] != 0x00) return -1;
  const uint8_t* ip = d + kEth;
  const unsigned ihl = (ip[0] & 0x0f) * 4u;
  if ((ip[0] >> 4) != 4 || ihl < 20 || ip[9] != 1 || n < kEth + ihl + 8) return -1;
  if ((ip[6] & 0x3f) != 0 || ip[7] != 0) return -1;  // fragments are not answered
  *ihl_out = ihl;
  return ip[ihl];
}

// mirrors icmp_echo + icmp_reply: the request becomes its reply in place (a shared
// packet is copied first) and leaves through the device it came in on.
void icmp_echo_reply(Cpu& cpu, Packet* p, unsigned ihl) {
  if (p->users.load(std::memory_order_relaxed) != 1 || !p->is_linear()) {
    Packet* c = cpu.alloc();
    if (!c || p->headlen() > c->tailroom()) {
      if (c) cpu.free(c);
      cpu.free_reason(p, DropReason::NOMEM);
      return;
    }
    std::memcpy(c->put(p->headlen()), p->data(), p->headlen());
    c->dev = p->dev;
    cpu.free(p);
    p = c;
  }
  uint8_t* d = p->data();
  uint8_t mac[6];
  std::memcpy(mac, d, 6);
  std::memcpy(d, d + 6, 6);
  std::memcpy(d + 6, mac, 6);
  uint8_t* ip = d + kEth;
  uint8_t a[4];
  std::memcpy(a, ip + 12, 4);
  std::memcpy(ip + 12, ip + 16, 4);
  std::memcpy(ip + 16, a, 4);
  ip[8] = 64;  // the reply's own TTL (sysctl_ip_default_ttl)
  const uint16_t hc = ip_fast_csum(ip, ihl);
  ip[10] = static_cast<uint8_t>(hc >> 8);
  ip[11] = static_cast<uint8_t>(hc);
  uint8_t* icmp = ip + ihl;
  // Type 8 -> 0: the checksum updated for the changed word (type, code).
  const uint16_t old = static_cast<uint16_t>(icmp[2] << 8 | icmp[3]);
  const uint16_t sum = csum_replace2(old, static_cast<uint16_t>(icmp[0] << 8 | icmp[1]), icmp[1]);
  icmp[0] = 0;
  icmp[2] = static_cast<uint8_t>(sum >> 8);
  icmp[3] = static_cast<uint8_t>(sum);
  p->skb_iif = 0;
  p->mark = 0;
  p->priority = 0;
  p->hash = 0;
  p->tc_index = 0;
  p->queue_mapping = 0;
  p->vlan_present = false;
  p->pkt_type = PACKET_HOST;
  dev_queue_xmit(cpu, p);
}

}  // namespace

void host_deliver(Cpu& cpu, Packet* p) {
  HostNet& h = host_net(p->dev->net());
  HostCpuStats& s = h.pcpu[cpu.id()];
  s.delivered.add();
  unsigned ihl = 0;
  // Only frames addressed to this host are answered (ip_rcv drops PACKET_OTHERHOST).
  if (PP_UNLIKELY(!h.echo_ignore_all.load(std::memory_order_relaxed)) && p->pkt_type != PACKET_OTHERHOST) {
    const int t = icmp_type(*p, &ihl);
    if (t == 8) {
      s.in_echos.add();
      s.out_echo_reps.add();
      icmp_echo_reply(cpu, p, ihl);
      return;
    }
    if (t == 0) s.in_echo_reps.add();
  }
  cpu.free(p);
}

HostStats host_stats(Net& net) {
  HostNet& h = host_net(net);
  HostStats t;
  for (unsigned i = 0; i < kMaxCpus; ++i) {
    t.delivered += h.pcpu[i].delivered.get();
    t.in_echos += h.pcpu[i].in_echos.get();
    t.out_echo_reps += h.pcpu[i].out_echo_reps.get();
    t.in_echo_reps += h.pcpu[i].in_echo_reps.get();
  }
  return t;
}

bool host_echo_enabled(Net& net) { return !host_net(net).echo_ignore_all.load(); }

}  // namespace pktpath
