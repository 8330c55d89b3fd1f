// The same arrival trace through ns-3's FqCoDelQueueDisc and TbfQueueDisc and through
// pktpath's fq_codel and tbf, with the same dequeue rule: drop counts, sojourn
// percentiles side by side and packets processed per CPU second by each.
//
// Trace: 8 UDP flows (flow f: 200 + 150 f bytes, IPv4 10.0.0.1 -> 10.0.1.f, port
// 1000 + f), each at 1/8 of the offered rate, with deterministic jitter (an LCG), merged
// in time order; offered 15 Mbit/s. Bottleneck 10 Mbit/s: after a dequeue that returned
// a packet of L bytes the next dequeue comes L * 8 / 10 Mbit/s later; after an empty
// one, 100 us later. Arrival times are odd nanoseconds and dequeue times even, so the
// order of events is the same in both. tbf: rate 8 Mbit/s, burst 10000 bytes, limit
// 100000 bytes. fq_codel: the kernel's defaults (limit 10240 packets, 1024 flows,
// quantum 1514, target 5 ms, interval 100 ms, drop_batch 64).
//
// ns-3 runs on its simulator (one event per arrival and per dequeue, ns-3 packets and
// Ipv4QueueDiscItems, as an ns-3 model would); pktpath runs its qdiscs directly on a
// VirtualClock (packets from its pool, Ethernet/IPv4/UDP frames of the same length).
// ns-3's TbfQueueDisc also wakes itself when its tokens suffice (QueueDisc::Run into
// the send callback): those departures are counted like the polled ones.
//
//   build/bench/ns3_qdisc_compare [--packets N] [--runs R]
#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/traffic-control-module.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ns3_qdisc_compare.h"

namespace qcmp {
namespace {

// ---- ns-3.
struct Ns3Run {
  const std::vector<Arrival>* trace;
  ns3::Ptr<ns3::QueueDisc> qd;
  size_t next = 0;
  Result r;
  std::vector<uint64_t> arrival_of_uid;
  uint64_t uid0 = 0;

  void depart(ns3::Ptr<ns3::QueueDiscItem> item) {
    ++r.sent;
    const uint64_t uid = item->GetPacket()->GetUid();
    const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
    r.sojourn_ms.push_back((now - arrival_of_uid[uid - uid0]) / 1e6);
  }
  void arrive() {
    const Arrival& a = (*trace)[next++];
    ns3::Ptr<ns3::Packet> p = ns3::Create<ns3::Packet>(a.size - 28);
    ns3::UdpHeader udp;
    udp.SetSourcePort(1000 + static_cast<uint16_t>(a.flow));
    udp.SetDestinationPort(9);
    p->AddHeader(udp);
    ns3::Ipv4Header ip;
    ip.SetSource(ns3::Ipv4Address("10.0.0.1"));
    ip.SetDestination(ns3::Ipv4Address(0x0a000100u + a.flow));
    ip.SetProtocol(17);
    ip.SetPayloadSize(a.size - 20);
    ip.SetTtl(64);
    const uint64_t uid = p->GetUid();
    if (arrival_of_uid.empty()) uid0 = uid;
    if (uid - uid0 >= arrival_of_uid.size()) arrival_of_uid.resize(uid - uid0 + 1);
    arrival_of_uid[uid - uid0] = a.t_ns;
    ++r.arrivals;
    qd->Enqueue(ns3::Create<ns3::Ipv4QueueDiscItem>(p, ns3::Mac48Address("00:00:00:00:00:01"), 0x0800, ip));
    if (next < trace->size())
      ns3::Simulator::Schedule(ns3::NanoSeconds((*trace)[next].t_ns - a.t_ns), &Ns3Run::arrive, this);
  }
  void dequeue() {
    ns3::Ptr<ns3::QueueDiscItem> item = qd->Dequeue();
    uint64_t wait = kPollNs;
    if (item) {
      depart(item);
      wait = tx_ns(item->GetSize());
    }
    if (next < trace->size() || qd->GetNPackets() > 0)
      ns3::Simulator::Schedule(ns3::NanoSeconds(wait), &Ns3Run::dequeue, this);
  }
};

}  // namespace

Result run_ns3(const std::vector<Arrival>& trace, bool tbf) {
  Ns3Run run;
  run.trace = &trace;
  run.arrival_of_uid.reserve(trace.size() + 16);
  if (tbf) {
    auto q = ns3::CreateObject<ns3::TbfQueueDisc>();
    q->SetRate(ns3::DataRate(kTbfRateBytes * 8));
    q->SetBurst(kTbfBurst);
    q->SetPeakRate(ns3::DataRate(0));
    q->SetMaxSize(ns3::QueueSize(ns3::QueueSizeUnit::BYTES, kTbfLimit));
    run.qd = q;
  } else {
    auto q = ns3::CreateObject<ns3::FqCoDelQueueDisc>();
    q->SetQuantum(1514);
    q->SetMaxSize(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS, 10240));
    run.qd = q;
  }
  run.qd->SetSendCallback([&run](ns3::Ptr<ns3::QueueDiscItem> item) { run.depart(item); });
  run.qd->Initialize();
  const double t0 = cpu_seconds();
  ns3::Simulator::Schedule(ns3::NanoSeconds(trace[0].t_ns), &Ns3Run::arrive, &run);
  ns3::Simulator::Schedule(ns3::NanoSeconds(0), &Ns3Run::dequeue, &run);
  ns3::Simulator::Run();
  run.r.cpu_s = cpu_seconds() - t0;
  const auto& st = run.qd->GetStats();
  run.r.dropped = st.nTotalDroppedPackets;
  run.r.queued = run.qd->GetNPackets();
  run.qd = nullptr;
  ns3::Simulator::Destroy();
  return run.r;
}

}  // namespace qcmp

int main(int argc, char** argv) {
  using namespace qcmp;
  uint32_t packets = 200000, runs = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--packets" || a == "--runs") && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long v = std::strtoul(argv[++i], &end, 10);
      if (*end || v == 0 || v > 10'000'000) {
        std::fprintf(stderr, "ns3_qdisc_compare: bad value for %s: '%s'\n", a.c_str(), argv[i]);
        return 2;
      }
      (a == "--packets" ? packets : runs) = static_cast<uint32_t>(v);
    } else {
      std::fprintf(stderr, "usage: ns3_qdisc_compare [--packets N] [--runs R]\n");
      return 2;
    }
  }
  const std::vector<Arrival> trace = make_trace(packets);
  std::printf("trace: %u packets, %u flows, offered %.0f Mbit/s, bottleneck %.0f Mbit/s, %.3f s simulated\n",
              packets, kFlows, kOfferedBps / 1e6, kLinkBps / 1e6, trace.back().t_ns / 1e9);
  std::printf("%-9s %-8s %8s %8s %8s %6s %9s %9s %9s %12s\n", "qdisc", "model", "arrivals", "sent", "dropped",
              "queued", "p50 ms", "p90 ms", "p99 ms", "pkts/cpu-s");
  for (bool tbf : {false, true}) {
    // Interleaved A B A B: the packets per second are the median of the runs.
    std::vector<double> pps[2];
    Result last[2];
    for (uint32_t k = 0; k < runs; ++k) {
      last[0] = run_ns3(trace, tbf);
      pps[0].push_back(last[0].arrivals / last[0].cpu_s);
      last[1] = run_pktpath(trace, tbf);
      pps[1].push_back(last[1].arrivals / last[1].cpu_s);
    }
    double med[2];
    for (int m = 0; m < 2; ++m) {
      std::sort(pps[m].begin(), pps[m].end());
      med[m] = pps[m][pps[m].size() / 2];
      Result& r = last[m];
      const bool ok = r.arrivals == r.sent + r.dropped + r.queued;
      std::printf("%-9s %-8s %8lu %8lu %8lu %6lu %9.2f %9.2f %9.2f %12.0f%s\n", tbf ? "tbf" : "fq_codel",
                  m ? "pktpath" : "ns-3", static_cast<unsigned long>(r.arrivals),
                  static_cast<unsigned long>(r.sent), static_cast<unsigned long>(r.dropped),
                  static_cast<unsigned long>(r.queued), r.pct(0.5), r.pct(0.9), r.pct(0.99), med[m],
                  ok ? "" : "  (arrivals != sent + dropped + queued)");
    }
    std::printf("%-9s pktpath/ns-3 packets per second: %.1fx (median of %u interleaved runs each)\n",
                tbf ? "tbf" : "fq_codel", med[1] / med[0], runs);
  }
  return 0;
}
