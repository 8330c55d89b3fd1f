// Two builds of the bpf layer (A and B, see run.sh) and libpcap's bpf_filter on one
// capture in one process: every round runs libpcap, A's threaded engine, B's, A's JIT,
// B's, each over the whole capture `passes` times (A before B in odd rounds, B before A
// in even ones). Prints the medians of the rounds (ns per packet) and of each round's
// ratio against libpcap; "MISMATCH" when an engine accepted other packets than libpcap.
//
//   ab FILE.pcap EXPR [ROUNDS [PASSES]]
#include <pcap/pcap.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

using LinearFn = uint32_t (*)(const void*, const uint8_t*, uint32_t, uint32_t);
extern "C" bool pkA_prep(int, const void*, size_t, void**, const void**);
extern "C" bool pkB_prep(int, const void*, size_t, void**, const void**);

namespace {

struct Engine {
  LinearFn fn = nullptr;
  const void* image = nullptr;
};

struct Frame {
  std::vector<unsigned char> bytes;
  unsigned wirelen;
};

bool prepare(bool b, int jit, const bpf_program& bp, Engine* e) {
  void* fn = nullptr;
  const bool ok = (b ? pkB_prep : pkA_prep)(jit, bp.bf_insns, bp.bf_len, &fn, &e->image);
  e->fn = reinterpret_cast<LinearFn>(fn);
  return ok;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ab FILE.pcap EXPR [ROUNDS [PASSES]]\n");
    return 2;
  }
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 15, passes = argc > 4 ? std::atoi(argv[4]) : 10;
  char errbuf[PCAP_ERRBUF_SIZE];
  pcap_t* in = pcap_open_offline(argv[1], errbuf);
  if (!in) {
    std::fprintf(stderr, "%s\n", errbuf);
    return 1;
  }
  std::vector<Frame> frames;
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(in, &h, &d) == 1) frames.push_back({std::vector<unsigned char>(d, d + h->caplen), h->len});
  bpf_program bp;
  if (pcap_compile(in, &bp, argv[2], 1, PCAP_NETMASK_UNKNOWN) != 0) {
    std::fprintf(stderr, "%s: %s\n", argv[2], pcap_geterr(in));
    return 1;
  }
  Engine eng[4];  // threaded A, threaded B, jit A, jit B
  for (int e = 0; e < 4; ++e)
    if (!prepare(e % 2 == 1, e / 2, bp, &eng[e])) {
      std::fprintf(stderr, "%s: engine %d did not load\n", argv[2], e);
      return 1;
    }
  const char* names[5] = {"libpcap", "thrA", "thrB", "jitA", "jitB"};
  std::vector<double> ns[5];
  size_t accepted[5] = {};
  for (int r = 0; r < rounds; ++r) {
    const int order[5] = {0, r % 2 ? 2 : 1, r % 2 ? 1 : 2, r % 2 ? 4 : 3, r % 2 ? 3 : 4};
    for (const int c : order) {
      size_t acc = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (int p = 0; p < passes; ++p) {
        if (c == 0) {
          for (const Frame& f : frames) acc += bpf_filter(bp.bf_insns, f.bytes.data(), f.wirelen, f.bytes.size()) != 0;
        } else {
          const Engine& e = eng[c - 1];
          for (const Frame& f : frames)
            acc += e.fn(e.image, f.bytes.data(), f.wirelen, static_cast<uint32_t>(f.bytes.size())) != 0;
        }
      }
      const auto t1 = std::chrono::steady_clock::now();
      ns[c].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / (double(passes) * frames.size()));
      accepted[c] = acc / passes;
    }
  }
  std::printf("%s:", argv[2]);
  for (int c = 0; c < 5; ++c) std::printf(" %s %.2f", names[c], median(ns[c]));
  std::printf(" | vs libpcap:");
  for (int c = 1; c < 5; ++c) {
    std::vector<double> ratio;
    for (int r = 0; r < rounds; ++r) ratio.push_back(ns[0][r] / ns[c][r]);
    std::printf(" %s %.2fx", names[c], median(ratio));
  }
  for (int c = 1; c < 5; ++c)
    if (accepted[c] != accepted[0]) std::printf(" MISMATCH %s", names[c]);
  std::printf("\n");
  pcap_freecode(&bp);
  pcap_close(in);
  return 0;
}
