// pktpath's side of ns3_qdisc_compare: the trace through pktpath's fq_codel or tbf,
// driven directly on a VirtualClock with the shared dequeue rule.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/clock.h"
#include "core/cpu.h"
#include "core/dev_table.h"
#include "core/net.h"
#include "core/packet_pool.h"
#include "ns3_qdisc_compare.h"
#include "sched/qdisc.h"
#include "sched/sch_api.h"
#include "sched/sch_tbf.h"

namespace qcmp {
namespace {

void udp_frame(pktpath::Packet* p, const Arrival& a) {
  uint8_t* f = p->put(a.size);
  std::memset(f, 0, 42);
  f[12] = 0x08;
  uint8_t* ip = f + 14;
  ip[0] = 0x45;
  const uint16_t tot = static_cast<uint16_t>(a.size - 14);
  ip[2] = static_cast<uint8_t>(tot >> 8);
  ip[3] = static_cast<uint8_t>(tot);
  ip[8] = 64;
  ip[9] = 17;
  const uint8_t addrs[8] = {10, 0, 0, 1, 10, 0, 1, static_cast<uint8_t>(a.flow)};
  std::memcpy(ip + 12, addrs, 8);
  uint8_t* udp = ip + 20;
  const uint16_t sport = static_cast<uint16_t>(1000 + a.flow);
  udp[0] = static_cast<uint8_t>(sport >> 8);
  udp[1] = static_cast<uint8_t>(sport);
  udp[3] = 9;
  p->protocol = 0x0008;
}

}  // namespace

Result run_pktpath(const std::vector<Arrival>& trace, bool tbf) {
  using namespace pktpath;
  PacketPool pool{PacketPool::Options{.capacity = 1u << 15, .buf_size = 2048, .headroom = 128}};
  Cpu cpu{pool};
  cpu.bind();
  VirtualClock clock(0);
  cpu.set_clock(&clock);
  Result r;
  {
    Net net{cpu};
    NetDevice::Config cfg;
    cfg.name = "b0";
    auto added = net.devices().add(cfg, "dummy");
    if (!added) {
      std::fprintf(stderr, "pktpath: %s\n", added.error().msg.c_str());
      std::exit(1);
    }
    NetDevice* dev = *added;
    QdiscOptions opts;
    if (tbf) {
      TbfOptions o;
      o.rate_bytes_ps = kTbfRateBytes;
      o.burst = kTbfBurst;
      o.limit = kTbfLimit;
      o.limit_set = true;
      opts = o;
    }
    auto created = qdisc_create(*dev, tbf ? "tbf" : "fq_codel", opts);
    if (!created) {
      std::fprintf(stderr, "pktpath: %s\n", created.error().msg.c_str());
      std::exit(1);
    }
    Qdisc& q = **created;
    r.sojourn_ms.reserve(trace.size());
    PacketList to_free;
    const double t0 = cpu_seconds();
    uint64_t t_deq = 0;
    size_t i = 0;
    while (i < trace.size() || q.qlen() > 0) {
      if (i < trace.size() && trace[i].t_ns < t_deq) {
        const Arrival& a = trace[i];
        clock.set(a.t_ns);
        Packet* p = cpu.alloc();
        udp_frame(p, a);
        p->tstamp_ns = a.t_ns;  // the arrival time, read back at departure
        ++r.arrivals;
        q.enqueue(cpu, p, to_free);
        while (Packet* x = to_free.pop_front()) cpu.free_reason(x, DropReason::QDISC_DROP);
        ++i;
        continue;
      }
      clock.set(t_deq);
      if (Packet* p = q.dequeue(cpu)) {
        ++r.sent;
        r.sojourn_ms.push_back((t_deq - p->tstamp_ns) / 1e6);
        t_deq += tx_ns(p->len);
        cpu.free(p);
      } else {
        t_deq += kPollNs;
      }
    }
    r.cpu_s = cpu_seconds() - t0;
    r.dropped = q.stats().drops;
    r.queued = q.qlen();
  }
  cpu.set_clock(nullptr);
  return r;
}

}  // namespace qcmp
