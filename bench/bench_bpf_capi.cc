// The C API (include/pktpath/bpf.h) against libpcap on a mixed-traffic capture: per
// packet, libpcap's bpf_filter and pcap_offline_filter, pktpath_bpf_filter (the drop-in
// entry) and pktpath_bpf_run on each engine. Contenders interleaved round by round
// (A B C ... A B C ...), the median of the rounds reported, ratios against bpf_filter
// from the same run. The capture is generated (a fixed seed): IPv4 TCP/UDP/ICMP, IPv6
// with and without extension headers, ARP and VLAN-tagged frames in shuffled order, so
// that branches follow real traffic's mix rather than one repeated frame.
//
//   bench_bpf_capi [--packets N] [--rounds R] [--passes P] [--write FILE.pcap] [--filter EXPR]...
//   bench_bpf_capi --pcap FILE.pcap [--rounds R] [--passes P]   (an Ethernet capture instead)
//   (--filter, repeated, replaces the three default filters)
#include <pcap/pcap.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "pktpath/bpf.h"

namespace {

struct Frame {
  std::vector<unsigned char> bytes;
};

void put16(unsigned char* p, unsigned v) { p[0] = static_cast<unsigned char>(v >> 8), p[1] = static_cast<unsigned char>(v); }

// One frame of the mix, from the generator's draw.
Frame make_frame(std::mt19937& rng) {
  auto below = [&](unsigned n) { return static_cast<unsigned>(rng() % n); };
  Frame f;
  std::vector<unsigned char>& b = f.bytes;
  b.assign(14, 0);
  for (int i = 0; i < 12; ++i) b[i] = static_cast<unsigned char>(rng());
  unsigned kind = below(100);
  size_t l2 = 12;
  if (kind >= 95) {  // 802.1Q-tagged IPv4
    b.resize(18);
    put16(&b[12], 0x8100);
    put16(&b[14], below(4096));
    l2 = 16;
  }
  auto l4 = [&](size_t at, unsigned proto) {
    static const unsigned kPorts[] = {80, 443, 53, 22, 8080, 123};
    unsigned sport = below(3) ? 1024 + below(60000) : kPorts[below(6)];
    unsigned dport = below(4) ? kPorts[below(6)] : 1024 + below(60000);
    if (proto == 6) {
      b.resize(at + 20);
      put16(&b[at], sport), put16(&b[at + 2], dport);
      b[at + 12] = 0x50;
      b[at + 13] = static_cast<unsigned char>(below(2) ? 0x10 : 0x02);
    } else if (proto == 17) {
      b.resize(at + 8);
      put16(&b[at], sport), put16(&b[at + 2], dport);
      put16(&b[at + 4], 8);
    } else {
      b.resize(at + 8);
      b[at] = 8;
    }
  };
  if (kind < 70 || kind >= 95) {  // IPv4
    put16(&b[l2], 0x0800);
    size_t ip = l2 + 2;
    b.resize(ip + 20);
    b[ip] = 0x45;
    unsigned proto = below(10) < 6 ? 6 : (below(4) ? 17 : 1);
    b[ip + 9] = static_cast<unsigned char>(proto);
    auto addr = [&](unsigned char* a) {
      unsigned net = below(10);
      if (net < 3) a[0] = 192, a[1] = 168, a[2] = 2;                         // 192.168.2.0/24
      else if (net < 5) a[0] = 10, a[1] = static_cast<unsigned char>(rng()), a[2] = static_cast<unsigned char>(rng());
      else if (net < 7) a[0] = 192, a[1] = 168, a[2] = static_cast<unsigned char>(below(8));
      else a[0] = static_cast<unsigned char>(1 + below(223)), a[1] = static_cast<unsigned char>(rng()), a[2] = static_cast<unsigned char>(rng());
      a[3] = static_cast<unsigned char>(rng());
    };
    addr(&b[ip + 12]);
    addr(&b[ip + 16]);
    if (below(50) == 0) put16(&b[ip + 6], 0x2000 | below(100));  // a fragment
    l4(ip + 20, proto);
    put16(&b[ip + 2], static_cast<unsigned>(b.size() - ip));
  } else if (kind < 90) {  // IPv6, sometimes with a hop-by-hop or destination-options header
    put16(&b[12], 0x86dd);
    b.resize(14 + 40);
    b[14] = 0x60;
    b[14 + 8] = 0x20, b[14 + 9] = 0x01;
    for (int i = 10; i < 40; ++i) b[14 + i] = static_cast<unsigned char>(rng());
    unsigned proto = below(3) ? 6 : 17;
    size_t at = 14 + 40;
    size_t next = 14 + 6;  // where the next-header value goes (indexes: b grows)
    for (unsigned ext = below(3) == 0 ? 1 + below(2) : 0; ext; --ext) {
      b[next] = ext == 1 ? 60 : 0;  // destination options, hop-by-hop
      b.resize(at + 8);
      next = at;
      b[at + 1] = 0;
      at += 8;
    }
    b[next] = static_cast<unsigned char>(proto);
    l4(at, proto);
    put16(&b[14 + 4], static_cast<unsigned>(b.size() - 54));
  } else {  // ARP
    put16(&b[12], 0x0806);
    b.resize(14 + 28);
    put16(&b[14], 1), put16(&b[16], 0x0800);
    b[18] = 6, b[19] = 4;
    put16(&b[20], 1 + below(2));
  }
  if (b.size() < 60) b.resize(60);
  return f;
}

struct Filter {
  const char* name;
  const char* expr;
};

const Filter kDefaultFilters[] = {
    {"net", "net 192.168.2.0/24"},
    {"five-term", "tcp and (port 80 or port 443) and not net 10.0.0.0/8"},
    {"protochain", "ip6 protochain 17"},
};

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t packets = 20000;
  int rounds = 7, passes = 25;
  const char* write = nullptr;
  const char* read = nullptr;
  std::vector<Filter> filters(std::begin(kDefaultFilters), std::end(kDefaultFilters));
  bool own_filters = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--packets") packets = std::strtoul(argv[i + 1], nullptr, 10);
    else if (k == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (k == "--passes") passes = std::atoi(argv[i + 1]);
    else if (k == "--write") write = argv[i + 1];
    else if (k == "--pcap") read = argv[i + 1];
    else if (k == "--filter") {
      if (!own_filters) filters.clear(), own_filters = true;
      filters.push_back({argv[i + 1], argv[i + 1]});
    }
    else {
      std::fprintf(stderr, "usage: bench_bpf_capi [--packets N | --pcap FILE] [--rounds R] [--passes P] [--write FILE] [--filter EXPR ...]\n");
      return 2;
    }
  }
  if (packets == 0 || rounds < 1 || passes < 1) return 2;
  std::vector<Frame> frames;
  if (read) {
    char perr[PCAP_ERRBUF_SIZE];
    pcap_t* in = pcap_open_offline(read, perr);
    if (!in || pcap_datalink(in) != DLT_EN10MB) {
      std::fprintf(stderr, "%s: %s\n", read, in ? "not an Ethernet capture" : perr);
      return 1;
    }
    pcap_pkthdr* h;
    const u_char* d;
    while (pcap_next_ex(in, &h, &d) == 1) frames.push_back({std::vector<unsigned char>(d, d + h->caplen)});
    pcap_close(in);
    packets = frames.size();
    if (packets == 0) return 1;
  } else {
    std::mt19937 rng(20261201);
    frames.reserve(packets);
    for (size_t i = 0; i < packets; ++i) frames.push_back(make_frame(rng));
  }
  std::vector<pcap_pkthdr> hdrs(packets);
  for (size_t i = 0; i < packets; ++i) {
    hdrs[i] = {};
    hdrs[i].caplen = hdrs[i].len = static_cast<bpf_u_int32>(frames[i].bytes.size());
  }
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 262144);
  if (write) {
    pcap_dumper_t* d = pcap_dump_open(dead, write);
    if (!d) return 1;
    for (size_t i = 0; i < packets; ++i) pcap_dump(reinterpret_cast<u_char*>(d), &hdrs[i], frames[i].bytes.data());
    pcap_dump_close(d);
  }
  std::printf("%s: %zu frames, %d rounds x %d passes, contenders interleaved\n\n",
              read ? read : "mixed capture (generated, shuffled mix)", packets, rounds, passes);
  std::printf("| filter | insns | libpcap bpf_filter | pcap_offline_filter | pktpath_bpf_filter | switch | threaded | jit | "
              "threaded vs libpcap | jit vs libpcap | accepted |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Filter& f : filters) {
    bpf_program fp;
    if (pcap_compile(dead, &fp, f.expr, 1, PCAP_NETMASK_UNKNOWN) != 0) {
      std::fprintf(stderr, "%s: %s\n", f.expr, pcap_geterr(dead));
      return 1;
    }
    char err[PKTPATH_BPF_ERRBUF_SIZE];
    const auto* insns = reinterpret_cast<const pktpath_bpf_insn*>(fp.bf_insns);
    pktpath_bpf* eng[3];
    const int ids[3] = {PKTPATH_BPF_ENGINE_SWITCH, PKTPATH_BPF_ENGINE_THREADED, PKTPATH_BPF_ENGINE_JIT};
    for (int e = 0; e < 3; ++e) {
      eng[e] = pktpath_bpf_load(insns, fp.bf_len, PKTPATH_BPF_USERLAND, ids[e], err, sizeof err);
      if (!eng[e]) {
        std::fprintf(stderr, "%s: %s\n", f.expr, err);
        return 1;
      }
    }
    // Contender c over every frame once; returns the accepted count (kept live). Each
    // contender has its own loop, calling its entry as a user's loop would: the choice
    // of contender is made once per pass, not per packet.
    auto each = [&](auto&& run) {
      size_t acc = 0;
      for (size_t i = 0; i < packets; ++i) acc += run(frames[i].bytes.data(), hdrs[i]) != 0;
      return acc;
    };
    auto pass = [&](int c) -> size_t {
      switch (c) {
        case 0:
          return each([&](const unsigned char* p, const pcap_pkthdr& h) { return bpf_filter(fp.bf_insns, p, h.caplen, h.caplen); });
        case 1:
          return each([&](const unsigned char* p, const pcap_pkthdr& h) { return pcap_offline_filter(&fp, &h, p); });
        case 2:
          return each([&](const unsigned char* p, const pcap_pkthdr& h) { return pktpath_bpf_filter(insns, p, h.caplen, h.caplen); });
        default: {
          const pktpath_bpf* e = eng[c - 3];
          return each([&](const unsigned char* p, const pcap_pkthdr& h) { return pktpath_bpf_run(e, p, h.caplen, h.caplen, nullptr); });
        }
      }
    };
    constexpr int kContenders = 6;
    std::vector<double> ns[kContenders];
    size_t accepted[kContenders] = {};
    for (int r = 0; r < rounds; ++r)
      for (int c = 0; c < kContenders; ++c) {
        auto t0 = Clock::now();
        size_t acc = 0;
        for (int k = 0; k < passes; ++k) acc += pass(c);
        auto t1 = Clock::now();
        ns[c].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / (double(packets) * passes));
        accepted[c] = acc / passes;
      }
    for (int c = 1; c < kContenders; ++c)
      if (accepted[c] != accepted[0]) {
        std::fprintf(stderr, "%s: contender %d accepted %zu, libpcap %zu\n", f.expr, c, accepted[c], accepted[0]);
        return 1;
      }
    double m[kContenders];
    for (int c = 0; c < kContenders; ++c) m[c] = median(ns[c]);
    std::printf("| `%s` | %u | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f (%s) | %.2fx | %.2fx | %zu/%zu |\n", f.expr, fp.bf_len,
                m[0], m[1], m[2], m[3], m[4], m[5], pktpath_bpf_engine_name(pktpath_bpf_engine(eng[2])), m[0] / m[4],
                m[0] / m[5], accepted[0], packets);
    for (auto* e : eng) pktpath_bpf_free(e);
    pcap_freecode(&fp);
  }
  std::printf("\nns per packet, medians of the rounds; jit's engine in brackets (threaded where the JIT fell "
              "back)\n");
  pcap_close(dead);
  return 0;
}
