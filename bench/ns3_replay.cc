// ns-3's side of scripts/compare-ns3-replay: a capture replayed through a shaper as an
// ns-3 model does it, end to end, to set beside `pktpath run` of the same capture
// through the same tc tree on the virtual clock.
//
//   build/bench/ns3_replay IN.pcap OUT.pcap [RATE_BPS]
//
// IN is read record by record with ns-3's PcapFile reader; each record arrives at its
// own timestamp (one simulator event per arrival, the next record read as it is
// scheduled): its bytes become an ns-3 Packet, the Ethernet and IPv4 headers are
// removed into an Ipv4QueueDiscItem (what ns-3's traffic control layer enqueues), and
// the item goes into a TbfQueueDisc (rate RATE_BPS, default 5 Mbit/s, burst 10000
// bytes) whose one class is an FqCoDelQueueDisc (ns-3's defaults: target 5 ms, interval
// 100 ms, 1024 flows, limit 10240 packets; quantum 1514 and ECN marking on, as the
// kernel's). The shaper
// runs after each enqueue and wakes itself when its tokens suffice; every departure is
// written to OUT (PcapFile, Ethernet, its IPv4 header put back) with the simulator's
// time. Prints the frames read, sent, dropped and still queued, and the CPU time of the
// replay (the file's opening and the process's start left out).
#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/traffic-control-module.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

struct Replay {
  ns3::PcapFile in, out;
  bool nsec = false;
  std::vector<uint8_t> buf = std::vector<uint8_t>(65536);
  ns3::Ptr<ns3::QueueDisc> qd;
  uint64_t read = 0, sent = 0, first_ns = 0;
  uint32_t len = 0;  // the record read and not yet arrived
  ns3::EthernetHeader eth;

  // The next record into buf; its time from the first record's, or false at the end.
  bool next(uint64_t& at) {
    uint32_t sec = 0, frac = 0, incl = 0, orig = 0, got = 0;
    in.Read(buf.data(), static_cast<uint32_t>(buf.size()), sec, frac, incl, orig, got);
    if (in.Fail() || in.Eof() || got == 0) return false;
    const uint64_t t = uint64_t{sec} * 1'000'000'000ull + (nsec ? frac : uint64_t{frac} * 1000);
    if (read == 0) first_ns = t;
    ++read;
    len = got;
    at = t > first_ns ? t - first_ns : 0;
    return true;
  }
  void arrive() {
    ns3::Ptr<ns3::Packet> p = ns3::Create<ns3::Packet>(buf.data(), len);
    ns3::EthernetHeader e(false);
    p->RemoveHeader(e);
    ns3::Ipv4Header ip;
    p->RemoveHeader(ip);
    qd->Enqueue(ns3::Create<ns3::Ipv4QueueDiscItem>(p, e.GetSource(), 0x0800, ip));
    qd->Run();
    uint64_t at;
    if (next(at)) {
      const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
      ns3::Simulator::Schedule(ns3::NanoSeconds(at > now ? at - now : 0), &Replay::arrive, this);
    }
  }
  void depart(ns3::Ptr<ns3::QueueDiscItem> item) {
    ++sent;
    item->AddHeader();
    const int64_t now = ns3::Simulator::Now().GetNanoSeconds();
    out.Write(static_cast<uint32_t>(now / 1'000'000'000), static_cast<uint32_t>(now % 1'000'000'000 / 1000), eth,
              item->GetPacket());
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: ns3_replay IN.pcap OUT.pcap [RATE_BPS]\n");
    return 2;
  }
  const uint64_t rate = argc == 4 ? std::strtoull(argv[3], nullptr, 10) : 5'000'000;
  if (rate == 0) {
    std::fprintf(stderr, "ns3_replay: bad rate '%s'\n", argv[3]);
    return 2;
  }
  Replay r;
  r.in.Open(argv[1], std::ios::in);
  if (r.in.Fail()) {
    std::fprintf(stderr, "ns3_replay: cannot read %s\n", argv[1]);
    return 1;
  }
  r.nsec = r.in.IsNanoSecMode();
  r.out.Open(argv[2], std::ios::out);
  if (r.out.Fail()) {
    std::fprintf(stderr, "ns3_replay: cannot write %s\n", argv[2]);
    return 1;
  }
  r.out.Init(1 /* Ethernet */);
  r.eth.SetLengthType(0x0800);

  auto fq = ns3::CreateObject<ns3::FqCoDelQueueDisc>();
  fq->SetQuantum(1514);
  fq->SetAttribute("UseEcn", ns3::BooleanValue(true));  // the kernel's fq_codel marks ECT packets
  fq->SetMaxSize(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS, 10240));
  auto cls = ns3::CreateObject<ns3::QueueDiscClass>();
  cls->SetQueueDisc(fq);
  auto tbf = ns3::CreateObject<ns3::TbfQueueDisc>();
  tbf->SetRate(ns3::DataRate(rate));
  tbf->SetBurst(10000);
  tbf->SetPeakRate(ns3::DataRate(0));
  tbf->AddQueueDiscClass(cls);
  r.qd = tbf;
  r.qd->SetSendCallback([&r](ns3::Ptr<ns3::QueueDiscItem> item) { r.depart(item); });
  r.qd->Initialize();

  const double t0 = cpu_seconds();
  uint64_t at;
  if (r.next(at)) ns3::Simulator::Schedule(ns3::NanoSeconds(at), &Replay::arrive, &r);
  ns3::Simulator::Run();
  const double cpu = cpu_seconds() - t0;
  const auto& st = r.qd->GetStats();
  const uint64_t dropped = st.nTotalDroppedPackets, queued = r.qd->GetNPackets(), marked = st.nTotalMarkedPackets;
  const double end_s = ns3::Simulator::Now().GetSeconds();
  r.qd = nullptr;
  ns3::Simulator::Destroy();
  r.out.Close();
  std::printf("ns-3: read %lu sent %lu dropped %lu queued %lu ecn_marked %lu end %.3f s cpu %.3f s (%.0f frames per CPU s)\n",
              static_cast<unsigned long>(r.read), static_cast<unsigned long>(r.sent),
              static_cast<unsigned long>(dropped), static_cast<unsigned long>(queued),
              static_cast<unsigned long>(marked), end_s, cpu, r.read / cpu);
  return r.read == r.sent + dropped + queued ? 0 : 1;
}
