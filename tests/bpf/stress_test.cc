// A loaded Program is immutable: many threads may run it at once (as a tc filter runs on
// every Cpu). The tsan preset runs this suite.
#include <thread>

#include "bpf/parse.h"
#include "bpf_test_util.h"

namespace pktpath::bpf {
namespace {

TEST(BpfStress, ConcurrentRunsOfOneProgram) {
  PacketSet set = make_synthetic(2048);
  Insns prog;
  std::string err;
  ASSERT_TRUE(compile_expression("net 192.168.2.0/24 or udp port 53", CompileOptions{}, &prog, &err)) << err;
  // An ancillary RANDOM load too: its state is per thread.
  Insns anc = {{BPF_LD | BPF_W | BPF_ABS, 0, 0, static_cast<uint32_t>(SKF_AD_OFF) + SKF_AD_RANDOM},
               {BPF_RET | BPF_K, 0, 0, 1}};
  for (Engine e : testing::engines()) {
    auto p = testing::load(prog, e, &err);
    auto r = testing::load(anc, e, &err);
    ASSERT_TRUE(p && r) << err;
    std::vector<uint32_t> want(set.size());
    p->run_batch(set.views(), want.data());
    std::vector<std::thread> threads;
    std::vector<int> mismatches(4, 0);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::vector<uint32_t> got(set.size());
        for (int round = 0; round < 20; ++round) {
          p->run_batch(set.views(), got.data());
          for (size_t i = 0; i < got.size(); ++i) mismatches[t] += got[i] != want[i];
          mismatches[t] += r->run(set.views()[round]) != 1;
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int m : mismatches) EXPECT_EQ(m, 0) << engine_name(e);
  }
}

}  // namespace
}  // namespace pktpath::bpf
