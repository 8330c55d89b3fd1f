// libpcap's own filter-apply cases (tests/data/conformance/libpcap-apply/): each
// expression compiled by Debian's libpcap for its capture's link type and snapshot
// length must give, on every engine, exactly what libpcap's bpf_filter gives.
#include <arpa/inet.h>

#include <cstdio>
#include <map>

#include "bpf/check.h"
#include "bpf/parse.h"
#include "bpf_test_util.h"

namespace pktpath::bpf {
namespace {

TEST(BpfLibpcapApply, EnginesEqualLibpcap) {
  nlohmann::json cases = testing::load_json(testing::data_path("libpcap-apply/apply.json"));
  ASSERT_EQ(cases.size(), 185u);
  std::map<std::string, PacketSet> files;
  int passed = 0, failed = 0, skipped = 0, backward = 0, same_as_upstream = 0;
  for (const auto& c : cases) {
    const std::string name = c["name"], file = c["savefile"], expr = c["expr"];
    if (!files.count(file)) {
      PacketSet s;
      std::string err;
      ASSERT_TRUE(read_pcap(testing::data_path("libpcap-apply/captures/" + file), &s, &err)) << err;
      files.emplace(file, std::move(s));
    }
    const PacketSet& set = files.at(file);
    CompileOptions opt;
    opt.savefile = testing::data_path("libpcap-apply/captures/" + file);
    if (c.contains("netmask")) {
      in_addr a{};
      ASSERT_EQ(inet_pton(AF_INET, c["netmask"].get<std::string>().c_str(), &a), 1);
      opt.netmask = a.s_addr;
    }
    Insns prog;
    std::string err;
    if (!compile_expression(expr, opt, &prog, &err)) {
      ++skipped;  // newer syntax or link type than this libpcap knows
      continue;
    }
    // Userland rules, as libpcap filters a savefile. libpcap's `protochain` loops with a
    // backward jump: the kernel's checker refuses those programs, userland runs them.
    if (has_backward_jump(prog)) {
      CheckResult r = check_program(prog, Acceptance::Kernel);
      EXPECT_FALSE(r.ok) << name;
      EXPECT_NE(r.reason.find("backward jump"), std::string::npos) << name << ": " << r.reason;
      ++backward;
    }
    bool ok = true, upstream = true;
    const auto& want_upstream = c["results"];
    for (Engine e : testing::engines()) {
      auto p = testing::load(prog, e, &err, Acceptance::Userland);
      if (!p) {
        ADD_FAILURE() << name << " ('" << expr << "'): rejected on " << engine_name(e) << ": " << err;
        ok = false;
        continue;
      }
      for (size_t i = 0; i < set.size(); ++i) {
        uint32_t want = testing::pcap_run(prog, set.bytes(i), set.wirelen(i), set.caplen(i));
        uint32_t got = p->run(set.views()[i]);
        if (got != want) {
          ADD_FAILURE() << name << " ('" << expr << "') packet " << i << " [" << engine_name(e)
                        << "]: got " << got << ", libpcap " << want;
          ok = false;
        }
        if (i >= want_upstream.size() || want_upstream[i].get<uint32_t>() != got) upstream = false;
      }
    }
    ok ? ++passed : ++failed;
    same_as_upstream += ok && upstream;
  }
  std::printf("libpcap-apply: %d passed, %d failed, %d skipped (do not compile with %s), "
              "%d of the passed with backward jumps (protochain, bounded); "
              "%d also equal upstream's stored results\n",
              passed, failed, skipped, pcap_lib_version(), backward, same_as_upstream);
  EXPECT_EQ(failed, 0);
  EXPECT_GE(passed, 144);
  EXPECT_GE(backward, 13);
}

}  // namespace
}  // namespace pktpath::bpf
