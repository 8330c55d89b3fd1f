// Every classic test of Linux lib/test_bpf.c (tests/data/conformance/cbpf/test_bpf.json)
// on every engine, with the packet and skb metadata the kernel harness builds.
//
// "BPF_MAXINSNS: jump over MSH" passes the kernel's classic checker and is refused while
// the kernel translates it to eBPF (its jump no longer fits 16 bits); kernel mode models
// that rule (check_ebpf_jumps), so it is an expected rejection like the other eleven.
#include <algorithm>
#include <cstdio>

#include "bpf/check.h"
#include "bpf_test_util.h"

namespace pktpath::bpf {
namespace {

using nlohmann::json;

constexpr const char* kTranslationTest = "BPF_MAXINSNS: jump over MSH";

bool has_flag(const json& t, const char* f) {
  for (const auto& x : t["flags"])
    if (x == f) return true;
  return false;
}

Insns insns_of(const json& t) {
  Insns p;
  for (const auto& i : t["insns"])
    p.push_back(Insn{i[0].get<uint16_t>(), i[1].get<uint8_t>(), i[2].get<uint8_t>(), i[3].get<uint32_t>()});
  return p;
}

PacketMeta meta_of(const json& m) {
  PacketMeta meta;
  auto be16 = [](uint32_t v) { return static_cast<uint16_t>(((v & 0xff) << 8) | ((v >> 8) & 0xff)); };
  meta.protocol = be16(m["protocol"].get<uint32_t>());
  meta.pkt_type = m["pkt_type"].get<uint8_t>();
  meta.mark = m["mark"].get<uint32_t>();
  meta.hash = m["hash"].get<uint32_t>();
  meta.queue_mapping = m["queue_mapping"].get<uint16_t>();
  meta.vlan_tci = m["vlan_tci"].get<uint16_t>();
  meta.vlan_present = m["vlan_present"].get<int>() != 0;
  meta.vlan_proto = be16(m["vlan_proto"].get<uint32_t>());
  meta.ifindex = m["dev_ifindex"].get<int32_t>();
  meta.hatype = m["dev_type"].get<uint16_t>();
  meta.cpu = m["cpu_id"].get<uint32_t>();
  meta.has_dev = true;
  return meta;
}

TEST(BpfConformance, KernelTestBpfClassic) {
  json doc = testing::load_json(testing::data_path("cbpf/test_bpf.json"));
  ASSERT_EQ(doc["tests"].size(), 134u);
  const PacketMeta meta = meta_of(doc["skb_metadata"]);
  int passed = 0, failed = 0, skipped = 0, rejected_ok = 0, cases = 0;
  for (const json& t : doc["tests"]) {
    const std::string name = t["name"];
    Insns prog = insns_of(t);
    const bool expect_reject = t["expect_reject"].get<bool>();
    const json& run_cases = t["cases"];
    bool ok = true;
    if (expect_reject) {
      for (Engine e : testing::engines()) {
        std::string err;
        auto p = testing::load(prog, e, &err);
        if (p) {
          ADD_FAILURE() << name << ": loaded on " << engine_name(e) << " but must be rejected";
          ok = false;
        } else if (err.empty()) {
          ADD_FAILURE() << name << ": rejected without a reason";
          ok = false;
        }
      }
      ok ? (++passed, ++rejected_ok) : ++failed;
      continue;
    }
    std::vector<uint8_t> data(128, 0), frag(128, 0);
    const json& d = t["data"];
    for (size_t i = 0; i < d.size() && i < 128; ++i) data[i] = d[i].get<uint8_t>();
    const bool has_frag = has_flag(t, "FLAG_SKB_FRAG");
    if (has_frag)
      for (size_t i = 0; i < t["frag_data"].size() && i < 128; ++i) frag[i] = t["frag_data"][i].get<uint8_t>();
    const bool no_data = has_flag(t, "FLAG_NO_DATA");
    PacketFrag pf{frag.data(), 128};
    for (Engine e : testing::engines()) {
      std::string err;
      auto p = testing::load(prog, e, &err);
      if (!p) {
        ADD_FAILURE() << name << ": rejected on " << engine_name(e) << ": " << err;
        ok = false;
        continue;
      }
      for (const json& c : run_cases) {
        uint32_t len = c["len"].get<uint32_t>();
        // Exactly len bytes on the heap, so ASan catches any read past the packet.
        std::vector<uint8_t> exact(data.begin(), data.begin() + std::min<uint32_t>(no_data ? 0 : len, 128));
        PacketView v = PacketView::linear(exact.data(), static_cast<uint32_t>(exact.size()));
        v.meta = meta;
        if (has_frag) {
          v.nr_frags = 1;
          v.frags = &pf;
          v.len += 128;
          v.wire_len = v.len;
        }
        uint32_t got = p->run(v);
        uint32_t want = c["expect"].get<uint32_t>();
        ++cases;
        if (got != want) {
          ADD_FAILURE() << name << " [" << engine_name(e) << ", len " << len << "]: got " << got
                        << " (0x" << std::hex << got << "), want " << std::dec << want;
          ok = false;
        }
      }
    }
    ok ? ++passed : ++failed;
  }
  std::printf("cbpf conformance: %d passed (%d of them expected rejects), %d failed, %d skipped; "
              "%d engine x case runs\n",
              passed, rejected_ok, failed, skipped, cases);
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(passed, 134);
}

// Every expected rejection is refused; exactly the one whose reject_stage is the eBPF
// conversion is refused by the translation rule, the others by the classic checks. Userland
// mode (no translation rule) accepts that one.
TEST(BpfConformance, TranslationRejection) {
  json doc = testing::load_json(testing::data_path("cbpf/test_bpf.json"));
  int translation = 0;
  for (const json& t : doc["tests"]) {
    if (!t["expect_reject"].get<bool>()) continue;
    const std::string name = t["name"];
    CheckResult r = check_program(insns_of(t));
    EXPECT_FALSE(r.ok) << name;
    const bool stage = t["reject_stage"] == "ebpf_conversion";
    EXPECT_EQ(r.translation, stage) << name << ": " << r.reason;
    EXPECT_EQ(name == kTranslationTest, stage) << name;
    if (stage) {
      ++translation;
      EXPECT_TRUE(check_program(insns_of(t), Acceptance::Userland).ok) << name;
    }
  }
  EXPECT_EQ(translation, 1);
}

}  // namespace
}  // namespace pktpath::bpf
