// nftables sets, verdict maps and nft -f: the two set backends against reference models,
// lookups, concatenations, anonymous sets, vmap with jump/goto/return on packets, the
// errors the kernel gives (overlap, size, type, loops, objects in use), and nft -f files
// (nesting, define, include, FILE:LINE:COL errors).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <set>

#include "core/clock.h"
#include "netfilter/nf_hooks.h"
#include "netfilter/nft_set.h"
#include "netfilter/nft_value.h"
#include "nf_test_util.h"

namespace pktpath::nf {
namespace {

using test::Pkt;

NftElemSpec v4(uint32_t lo, uint32_t hi) {
  NftElemSpec e;
  for (int i = 0; i < 4; ++i) {
    e.lo[i] = static_cast<uint8_t>(lo >> (24 - 8 * i));
    e.hi[i] = static_cast<uint8_t>(hi >> (24 - 8 * i));
  }
  e.range = lo != hi;
  return e;
}
std::array<uint8_t, 4> key4(uint32_t a) {
  return {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16), static_cast<uint8_t>(a >> 8), static_cast<uint8_t>(a)};
}

TEST(NftSetModel, HashSetAgreesWithAReferenceThroughGrowthAndDeletes) {
  NftSetSpec spec;
  spec.types = {NftType::IPV4_ADDR};
  NftSet set("s", spec, false);
  std::set<uint32_t> ref;
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<NftElemSpec> add, del;
    for (int k = 0; k < 50; ++k) {
      const uint32_t a = rng() % 5000;
      if (rng() % 3) {
        add.push_back(v4(a, a));
      } else if (ref.count(a) && std::none_of(del.begin(), del.end(), [&](const NftElemSpec& e) { return e.lo == v4(a, a).lo; })) {
        del.push_back(v4(a, a));
      }
    }
    ASSERT_TRUE(set.add(add, std::vector<NftVerdictData>(add.size()), true).has_value());
    for (auto& e : add) ref.insert(uint32_t{e.lo[0]} << 24 | e.lo[1] << 16 | e.lo[2] << 8 | e.lo[3]);
    ASSERT_TRUE(set.remove(del).has_value());
    for (auto& e : del) ref.erase(uint32_t{e.lo[0]} << 24 | e.lo[1] << 16 | e.lo[2] << 8 | e.lo[3]);
    ASSERT_EQ(set.size(), ref.size());
  }
  for (uint32_t a = 0; a < 5100; ++a) ASSERT_EQ(set.lookup(key4(a).data()) != nullptr, ref.count(a) == 1) << a;
  EXPECT_EQ(set.elements().size(), ref.size());
  // A duplicate without exist_ok fails and changes nothing; deleting a missing one too.
  const uint32_t in = *ref.begin();
  EXPECT_FALSE(set.add({v4(in, in), v4(9999, 9999)}, std::vector<NftVerdictData>(2), false).has_value());
  EXPECT_EQ(set.lookup(key4(9999).data()), nullptr);
  EXPECT_FALSE(set.remove({v4(9999, 9999)}).has_value());
  // A prefix needs flags interval.
  EXPECT_FALSE(set.add({v4(0x0a000000, 0x0affffff)}, std::vector<NftVerdictData>(1), true).has_value());
}

TEST(NftSetModel, IntervalSetAgreesWithAReferenceAndRefusesOverlaps) {
  NftSetSpec spec;
  spec.types = {NftType::IPV4_ADDR};
  spec.interval = true;
  NftSet set("iv", spec, false);
  std::vector<std::pair<uint32_t, uint32_t>> ref;
  std::mt19937 rng(11);
  auto overlaps = [&](uint32_t lo, uint32_t hi) {
    for (auto [a, b] : ref)
      if (lo <= b && a <= hi) return true;
    return false;
  };
  for (int k = 0; k < 400; ++k) {
    const uint32_t lo = rng() % 100000, hi = lo + rng() % 40;
    const bool ok = set.add({v4(lo, hi)}, {NftVerdictData{}}, false).has_value();
    ASSERT_EQ(ok, !overlaps(lo, hi)) << lo << "-" << hi;
    if (ok) ref.push_back({lo, hi});
  }
  // Adjacent ranges are separate elements, both accepted.
  NftSet adj("a", spec, false);
  EXPECT_TRUE(adj.add({v4(10, 19), v4(20, 29)}, std::vector<NftVerdictData>(2), false).has_value());
  EXPECT_EQ(adj.size(), 2u);
  for (uint32_t a = 0; a < 100100; ++a) {
    bool in = false;
    for (auto [l, h] : ref) in = in || (a >= l && a <= h);
    ASSERT_EQ(set.lookup(key4(a).data()) != nullptr, in) << a;
  }
  // Delete an element exactly as added; a part of one is not an element.
  auto [l0, h0] = ref[0];
  EXPECT_FALSE(set.remove({v4(l0, l0 == h0 ? h0 + 1 : h0 - 1)}).has_value());
  EXPECT_TRUE(set.remove({v4(l0, h0)}).has_value());
  EXPECT_EQ(set.lookup(key4(l0).data()), nullptr);
  EXPECT_EQ(set.size(), ref.size() - 1);
}

TEST(NftSetModel, ValuesParseAndPrintAsNft) {
  NftElemSpec e;
  NftRawElem raw{{"10.0.0.0/8"}, {}, 0};
  ASSERT_TRUE(nft_parse_elem({NftType::IPV4_ADDR}, NftMapData::NONE, raw, e).has_value());
  EXPECT_TRUE(e.range);
  NftElem got{e.lo, e.hi, true, e.prefix, {}};
  EXPECT_EQ(nft_elem_str({NftType::IPV4_ADDR}, NftMapData::NONE, got), "10.0.0.0/8");
  raw = {{"192.168.2.0-192.168.2.10"}, {}, 0};
  ASSERT_TRUE(nft_parse_elem({NftType::IPV4_ADDR}, NftMapData::NONE, raw, e).has_value());
  got = {e.lo, e.hi, true, e.prefix, {}};
  EXPECT_EQ(nft_elem_str({NftType::IPV4_ADDR}, NftMapData::NONE, got), "192.168.2.0-192.168.2.10");
  raw = {{"10.0.0.1", ".", "22"}, {}, 0};
  ASSERT_TRUE(nft_parse_elem({NftType::IPV4_ADDR, NftType::INET_SERVICE}, NftMapData::NONE, raw, e).has_value());
  EXPECT_EQ(nft_key_str({NftType::IPV4_ADDR, NftType::INET_SERVICE}, e.lo.data()), "10.0.0.1 . 22");
  raw = {{"2001:db8::/32"}, {}, 0};
  ASSERT_TRUE(nft_parse_elem({NftType::IPV6_ADDR}, NftMapData::NONE, raw, e).has_value());
  got = {e.lo, e.hi, true, e.prefix, {}};
  EXPECT_EQ(nft_elem_str({NftType::IPV6_ADDR}, NftMapData::NONE, got), "2001:db8::/32");
  // Wrong values, arity and data name what is wrong.
  raw = {{"10.0.0.300"}, {}, 0};
  EXPECT_NE(nft_parse_elem({NftType::IPV4_ADDR}, NftMapData::NONE, raw, e).error().msg.find("not a valid ipv4_addr"), std::string::npos);
  raw = {{"10.0.0.1"}, {}, 0};
  EXPECT_NE(nft_parse_elem({NftType::IPV4_ADDR, NftType::INET_SERVICE}, NftMapData::NONE, raw, e).error().msg.find("has 1 value"),
            std::string::npos);
  raw = {{"10.0.0.1"}, {"jump"}, 0};
  EXPECT_NE(nft_parse_elem({NftType::IPV4_ADDR}, NftMapData::VERDICT, raw, e).error().msg.find("missing chain"), std::string::npos);
  raw = {{"70000"}, {}, 0};
  EXPECT_FALSE(nft_parse_elem({NftType::INET_SERVICE}, NftMapData::NONE, raw, e).has_value());
}

class NftSetRules : public ::testing::Test {
 protected:
  PacketPool pool{PacketPool::Options{.capacity = 256}};
  Cpu cpu{pool};
  test::TestResolver devs;
  NfDeviceHooks& foo = devs.add("foo");
  NftRuleset rs;

  void TearDown() override {
    rs.flush();
    cpu.drain_cache();
    EXPECT_EQ(pool.available(), pool.capacity());
  }
  test::NftRun nft(const std::string& line) {
    std::vector<std::string> w;
    // Split on spaces; a word in single quotes stays one word.
    std::string cur;
    bool q = false;
    for (char c : line) {
      if (c == '\'') { q = !q; continue; }
      if (c == ' ' && !q) {
        if (!cur.empty()) w.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) w.push_back(cur);
    return test::nft(rs, devs, w);
  }
  void ok(const std::string& line) {
    auto r = nft(line);
    ASSERT_EQ(r.rc, 0) << line << ": " << r.err;
  }
  std::string fails(const std::string& line) {
    auto r = nft(line);
    EXPECT_EQ(r.rc, 1) << line;
    return r.err;
  }
  NfVerdict send(const Pkt& d) {
    Packet* p = test::make_packet(cpu, d);
    NfVerdict v = nf_hook_egress(foo, p, cpu);
    if (v == NfVerdict::ACCEPT) cpu.free(p);
    return v;
  }
  void base() {
    ok("add table netdev t");
    ok("add chain netdev t c '{ type filter hook egress device foo priority 0; policy accept; }'");
  }
};

TEST_F(NftSetRules, NamedSetLookupAndNegation) {
  base();
  ok("add set netdev t bl '{ type ipv4_addr; }'");
  ok("add element netdev t bl { 10.0.0.2, 10.0.0.9 }");
  ok("add rule netdev t c ip daddr @bl drop");
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000002}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000003}), NfVerdict::ACCEPT);
  ok("delete element netdev t bl { 10.0.0.2 }");
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000002}), NfVerdict::ACCEPT);
  ok("add element netdev t bl { 10.0.0.3 }");
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000003}), NfVerdict::DROP);
  // != @set: everything outside it; a packet without the field matches neither.
  ok("flush ruleset");
  base();
  ok("add set netdev t ok '{ type ipv4_addr; flags interval; elements = { 10.0.0.0/24 }; }'");
  ok("add rule netdev t c ip saddr != @ok drop");
  EXPECT_EQ(send(Pkt{.saddr = 0x0a000005}), NfVerdict::ACCEPT);
  EXPECT_EQ(send(Pkt{.saddr = 0x0b000005}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.ethertype = 0x0806}), NfVerdict::ACCEPT);
}

TEST_F(NftSetRules, AnonymousSetsConcatenationsAndPorts) {
  base();
  ok("add rule netdev t c tcp dport { 22, 80, 443 } counter drop");
  ok("add set netdev t cc '{ type ipv4_addr . inet_service; elements = { 10.0.0.1 . 53, 10.0.0.7 . 53 }; }'");
  ok("add rule netdev t c ip saddr . udp dport @cc drop");
  ok("add rule netdev t c ip daddr { 10.1.0.0/16, 10.2.0.1 } drop");
  EXPECT_EQ(send(Pkt{.l4proto = 6, .dport = 80}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.l4proto = 6, .dport = 81}), NfVerdict::ACCEPT);
  EXPECT_EQ(send(Pkt{.l4proto = 17, .dport = 80}), NfVerdict::ACCEPT);  // udp: not tcp dport
  EXPECT_EQ(send(Pkt{.saddr = 0x0a000007, .l4proto = 17, .dport = 53}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.saddr = 0x0a000007, .l4proto = 17, .dport = 54}), NfVerdict::ACCEPT);
  EXPECT_EQ(send(Pkt{.saddr = 0x0a000008, .l4proto = 17, .dport = 53}), NfVerdict::ACCEPT);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a01ff00}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a020001}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a020002}), NfVerdict::ACCEPT);
  const std::string list = nft("list ruleset").out;
  EXPECT_NE(list.find("\t\ttcp dport { 22, 80, 443 } counter packets 1 bytes "), std::string::npos) << list;
  EXPECT_NE(list.find("\t\tip saddr . udp dport @cc drop\n"), std::string::npos) << list;
  EXPECT_NE(list.find("\t\tip daddr { 10.1.0.0/16, 10.2.0.1 } drop\n"), std::string::npos) << list;
}

TEST_F(NftSetRules, VerdictMapsJumpGotoAndReturn) {
  base();
  ok("add chain netdev t sub");
  ok("add rule netdev t sub meta mark 5 drop");
  ok("add rule netdev t sub counter return");
  ok("add chain netdev t tail");
  ok("add rule netdev t tail counter");
  ok("add map netdev t vm '{ type ipv4_addr : verdict; elements = { 10.0.0.1 : drop, 10.0.0.2 : accept, 10.0.0.3 : jump sub }; }'");
  ok("add rule netdev t c ip daddr vmap @vm");
  ok("add rule netdev t c ip saddr vmap { 10.9.0.1 : goto tail }");
  ok("add rule netdev t c meta mark 6 drop");
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000001}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000002}), NfVerdict::ACCEPT);
  // jump sub: mark 5 drops inside sub; otherwise sub returns and c goes on to mark 6.
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000003, .mark = 5}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000003, .mark = 6}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000003, .mark = 7}), NfVerdict::ACCEPT);
  // goto tail: tail ends without a verdict and does not come back to c: the base
  // chain's policy decides, so mark 6 is not dropped.
  EXPECT_EQ(send(Pkt{.saddr = 0x0a090001, .daddr = 0x0a000009, .mark = 6}), NfVerdict::ACCEPT);
  EXPECT_EQ(send(Pkt{.saddr = 0x0a090002, .daddr = 0x0a000009, .mark = 6}), NfVerdict::DROP);
  const std::string list = nft("list ruleset").out;
  EXPECT_NE(list.find("\t\tcounter packets 2 bytes "), std::string::npos) << list;  // sub's return
  EXPECT_NE(list.find("elements = { 10.0.0.1 : drop, 10.0.0.2 : accept,\n\t\t\t     10.0.0.3 : jump sub }"), std::string::npos) << list;
  EXPECT_NE(list.find("\t\tip saddr vmap { 10.9.0.1 : goto tail }\n"), std::string::npos) << list;
  // A rule jump and a changed map element update what packets do.
  ok("add element netdev t vm { 10.0.0.4 : drop }");
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000004}), NfVerdict::DROP);
}

TEST_F(NftSetRules, RefusesWhatTheKernelRefuses) {
  base();
  ok("add chain netdev t a");
  ok("add chain netdev t b");
  ok("add rule netdev t a jump b");
  EXPECT_NE(fails("add rule netdev t b jump a").find("loop"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t a jump a").find("loop"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t a jump c").find("Operation not supported"), std::string::npos);  // a base chain
  EXPECT_NE(fails("delete chain netdev t b").find("in use"), std::string::npos);
  ok("add map netdev t m '{ type ipv4_addr : verdict; }'");
  ok("add rule netdev t b ip daddr vmap @m");
  EXPECT_NE(fails("add element netdev t m { 10.0.0.1 : jump a }").find("loop"), std::string::npos);
  ok("add set netdev t s '{ type ipv4_addr; size 2; }'");
  ok("add element netdev t s { 10.0.0.1, 10.0.0.2 }");
  EXPECT_NE(fails("add element netdev t s { 10.0.0.3 }").find("full"), std::string::npos);
  EXPECT_NE(fails("add element netdev t s { 10.1.0.0/16 }").find("flags interval"), std::string::npos);
  ok("add set netdev t iv '{ type ipv4_addr; flags interval; elements = { 10.0.0.0/8 }; }'");
  EXPECT_NE(fails("add element netdev t iv { 10.1.0.0/16 }").find("overlaps"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t c tcp dport @s drop").find("datatype mismatch"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t c ip daddr @m drop").find("vmap"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t c ip daddr @nope drop").find("does not exist"), std::string::npos);
  ok("add rule netdev t c ip daddr @s drop");
  EXPECT_NE(fails("delete set netdev t s").find("in use"), std::string::npos);
  ok("delete set netdev t iv");
  EXPECT_NE(fails("add element netdev t s { 10.0.0.300 }").find("not a valid ipv4_addr"), std::string::npos);
  EXPECT_NE(fails("add set netdev t x '{ type ipv4_addr : verdict; }'").find("declare a map"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t c ip daddr { } drop").find("at least one"), std::string::npos);
}

// Element timeouts on the Net's clock (here a virtual one, read by the control plane and
// the datapath's Cpu alike): an element stops matching and leaves the listing once it
// expires; the listing says what is left, as nft.
TEST_F(NftSetRules, ElementTimeoutsOnTheVirtualClock) {
  VirtualClock clock(1000000000ull);
  cpu.set_clock(&clock);
  rs.set_time_source([&clock] { return clock.now_ns(); });
  base();
  ok("add set netdev t seen '{ type ipv4_addr; timeout 10s; }'");
  ok("add set netdev t iv '{ type ipv4_addr; flags interval,timeout; }'");
  ok("add element netdev t seen { 10.0.0.2, 10.0.0.3 timeout 1h }");
  ok("add element netdev t iv { 10.9.0.0/16 timeout 90s }");
  ok("add rule netdev t c ip daddr @seen drop");
  ok("add rule netdev t c ip saddr @iv drop");
  clock.advance(4500000000ull);  // 4.5 s
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000002}), NfVerdict::DROP);
  const std::string list = nft("list ruleset").out;
  EXPECT_NE(list.find("\t\ttimeout 10s\n\t\telements = { 10.0.0.2 expires 5s500ms, 10.0.0.3 timeout 1h expires 59m55s500ms }"),
            std::string::npos) << list;
  EXPECT_NE(list.find("\t\tflags interval,timeout\n\t\telements = { 10.9.0.0/16 timeout 1m30s expires 1m25s500ms }"),
            std::string::npos) << list;
  clock.advance(6000000000ull);  // 10.5 s: 10.0.0.2 has expired, 10.0.0.3 has not
  cpu.set_clock(&clock);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000002}), NfVerdict::ACCEPT);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000003}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.saddr = 0x0a090001, .daddr = 0x0a000009}), NfVerdict::DROP);
  EXPECT_EQ(nft("list set netdev t seen").out.find("10.0.0.2"), std::string::npos);
  ok("add element netdev t seen { 10.0.0.2 }");  // an expired element is gone: added again
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000002}), NfVerdict::DROP);
  clock.advance(90000000000ull);
  EXPECT_EQ(send(Pkt{.saddr = 0x0a090001, .daddr = 0x0a000009}), NfVerdict::ACCEPT);
  ok("add set netdev t plain '{ type ipv4_addr; }'");
  EXPECT_NE(fails("add element netdev t plain { 10.0.0.1 timeout 5s }").find("flags timeout"), std::string::npos);
  EXPECT_NE(fails("add element netdev t seen { 10.0.0.1 timeout soon }").find("not a duration"), std::string::npos);
  cpu.set_clock(nullptr);
}

// The kernel's run of the same rules (nft 1.0.6 on Linux 6.18, a veth's ingress, the
// same four frames): rules add the packet's addresses to sets, elements count what finds
// them, and a full set breaks the rule that writes it.
TEST_F(NftSetRules, DynamicSetsAndElementCountersAsTheKernelLists) {
  VirtualClock clock(1000000000ull);
  cpu.set_clock(&clock);
  rs.set_time_source([&clock] { return clock.now_ns(); });
  base();
  ok("add set netdev t s '{ type ipv4_addr; counter; elements = { 10.0.0.2, 10.0.0.9, 10.0.0.10 }; }'");
  ok("add set netdev t e '{ type ipv4_addr; flags timeout; }'");
  ok("add set netdev t f '{ type ipv4_addr; size 1; flags dynamic; counter; }'");
  ok("add rule netdev t c ip saddr @s");
  ok("add rule netdev t c add @e { ip saddr counter }");
  ok("add rule netdev t c add @f { ip daddr } counter");
  ok("add rule netdev t c update @e { ip daddr timeout 1h }");
  Packet* probe = test::make_packet(cpu, Pkt{});
  const uint32_t len = probe->len;
  cpu.free(probe);
  const Pkt frames[] = {{.saddr = 0x0a000002, .daddr = 0x0a000007}, {.saddr = 0x0a000002, .daddr = 0x0a000008},
                        {.saddr = 0x0a000009, .daddr = 0x0a000007}, {.saddr = 0x0a000003, .daddr = 0x0a000003}};
  for (const Pkt& f : frames) EXPECT_EQ(send(f), NfVerdict::ACCEPT);
  clock.advance(20000000ull);  // 20 ms
  auto c = [&](int n) { return "counter packets " + std::to_string(n) + " bytes " + std::to_string(n * len); };
  const std::string want =
      "table netdev t {\n"
      "\tset s {\n\t\ttype ipv4_addr\n\t\tcounter\n"
      "\t\telements = { 10.0.0.2 " + c(2) + ", 10.0.0.9 " + c(1) + ",\n"
      "\t\t\t     10.0.0.10 " + c(0) + " }\n\t}\n\n"
      "\tset e {\n\t\ttype ipv4_addr\n\t\tsize 65535\n\t\tflags timeout\n"
      "\t\telements = { 10.0.0.2 " + c(2) + ", 10.0.0.3 " + c(2) + ",\n"
      "\t\t\t     10.0.0.7 timeout 1h expires 59m59s980ms, 10.0.0.8 timeout 1h expires 59m59s980ms,\n"
      "\t\t\t     10.0.0.9 " + c(1) + " }\n\t}\n\n"
      "\tset f {\n\t\ttype ipv4_addr\n\t\tsize 1\n\t\tflags dynamic\n\t\tcounter\n"
      "\t\telements = { 10.0.0.7 " + c(2) + " }\n\t}\n\n"
      "\tchain c {\n\t\ttype filter hook egress device \"foo\" priority filter; policy accept;\n"
      "\t\tip saddr @s\n\t\tadd @e { ip saddr counter }\n\t\tadd @f { ip daddr } " + c(2) + "\n"
      "\t\tupdate @e { ip daddr timeout 1h }\n\t}\n}\n";
  EXPECT_EQ(nft("list ruleset").out, want);
  // update restarts an element's expiry; add leaves it; both drop nothing by themselves.
  clock.advance(3000000000000ull);  // 50 min
  EXPECT_EQ(send(Pkt{.saddr = 0x0a000001, .daddr = 0x0a000008}), NfVerdict::ACCEPT);
  const std::string e = nft("list set netdev t e").out;
  EXPECT_NE(e.find("10.0.0.7 timeout 1h expires 9m59s980ms,"), std::string::npos) << e;
  EXPECT_NE(e.find("10.0.0.8 timeout 1h expires 1h,"), std::string::npos) << e;
  // An expired element is gone for lookups and comes back when a rule adds it again.
  clock.advance(1200000000000ull);  // 20 min: 10.0.0.7 has expired
  ok("add rule netdev t c ip daddr @e drop");
  EXPECT_EQ(send(Pkt{.saddr = 0x0a000063, .daddr = 0x0a000009}), NfVerdict::DROP);   // 10.0.0.9: added, no expiry
  EXPECT_EQ(nft("list set netdev t e").out.find("10.0.0.7 "), std::string::npos);
  EXPECT_EQ(send(Pkt{.saddr = 0x0a000063, .daddr = 0x0a000007}), NfVerdict::DROP);   // updated back in first
  cpu.set_clock(nullptr);
}

TEST_F(NftSetRules, ElementCountersFromCommandsAndIntervals) {
  base();
  ok("add set netdev t iv '{ type ipv4_addr; flags interval; counter; elements = { 10.0.0.0/24 }; }'");
  ok("add set netdev t h '{ type ipv4_addr; elements = { 10.1.0.1 counter packets 3 bytes 4, 10.1.0.2 }; }'");
  ok("add rule netdev t c ip daddr @iv drop");
  ok("add rule netdev t c ip daddr @h accept");
  Packet* probe = test::make_packet(cpu, Pkt{});
  const std::string len = std::to_string(probe->len), len2 = std::to_string(2 * probe->len + 4);
  cpu.free(probe);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000005}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a010001}), NfVerdict::ACCEPT);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a010001}), NfVerdict::ACCEPT);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a010002}), NfVerdict::ACCEPT);
  ok("add element netdev t iv { 10.9.0.0/16 }");  // a new interval table keeps the old counters
  const std::string l = nft("list ruleset").out;
  EXPECT_NE(l.find("elements = { 10.0.0.0/24 counter packets 1 bytes " + len + ", 10.9.0.0/16 counter packets 0 bytes 0 }"),
            std::string::npos) << l;
  EXPECT_NE(l.find("elements = { 10.1.0.1 counter packets 5 bytes " + len2 + ", 10.1.0.2 }"), std::string::npos) << l;
  const nlohmann::json j = rs.list_json();
  EXPECT_NE(j.dump().find(R"({"elem":{"counter":{"bytes":)" + len2 + R"(,"packets":5},"val":"10.1.0.1"}})"),
            std::string::npos)
      << j.dump();
}

// meta mark set from a map (no element: the rule breaks) or a value; later rules read it.
TEST_F(NftSetRules, MarkMapsSetTheMarkLaterRulesRead) {
  base();
  ok("add map netdev t m '{ type ipv4_addr . inet_service : mark; elements = { 10.0.0.2 . 53 : 0x10 }; }'");
  ok("add rule netdev t c meta mark set ip daddr . udp dport map @m");
  ok("add rule netdev t c meta mark 0x10 drop");
  ok("add rule netdev t c meta mark set tcp dport map { 22 : 7 } counter");
  ok("add rule netdev t c meta mark 7 meta mark set 0x20");
  ok("add rule netdev t c meta mark 0x20 accept");
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000002, .dport = 53}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000002, .dport = 54}), NfVerdict::ACCEPT);  // no element: mark stays 0
  Packet* p = test::make_packet(cpu, Pkt{.l4proto = 6, .dport = 22});
  EXPECT_EQ(nf_hook_egress(foo, p, cpu), NfVerdict::ACCEPT);
  EXPECT_EQ(p->mark, 0x20u);
  cpu.free(p);
  EXPECT_EQ(nft("list ruleset").out,
            "table netdev t {\n"
            "\tmap m {\n\t\ttype ipv4_addr . inet_service : mark\n"
            "\t\telements = { 10.0.0.2 . 53 : 0x00000010 }\n\t}\n\n"
            "\tchain c {\n\t\ttype filter hook egress device \"foo\" priority filter; policy accept;\n"
            "\t\tmeta mark set ip daddr . udp dport map @m\n"
            "\t\tmeta mark 0x00000010 drop\n"
            "\t\tmeta mark set tcp dport map { 22 : 0x00000007 } counter packets 1 bytes 72\n"
            "\t\tmeta mark 0x00000007 meta mark set 0x00000020\n"
            "\t\tmeta mark 0x00000020 accept\n\t}\n}\n");
  const std::string j = rs.list_json().dump();
  EXPECT_NE(j.find(R"({"mangle":{"key":{"meta":{"key":"mark"}},"value":32}})"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("map":"mark")"), std::string::npos) << j;
  EXPECT_NE(fails("add rule netdev t c ip daddr . udp dport vmap @m").find("not a verdict map"), std::string::npos);
  ok("add map netdev t v '{ type ipv4_addr : verdict; }'");
  EXPECT_NE(fails("add rule netdev t c meta mark set ip daddr map @v").find("datatype mismatch"), std::string::npos);
  EXPECT_NE(fails("add map netdev t bad '{ type ipv4_addr : mark; elements = { 10.0.0.1 : drop }; }'").find("not a mark"),
            std::string::npos);
}

TEST_F(NftSetRules, DynamicSetsRefuseWhatTheKernelRefuses) {
  base();
  ok("add set netdev t fixed '{ type ipv4_addr; size 100; }'");
  ok("add set netdev t iv '{ type ipv4_addr; flags interval; }'");
  ok("add set netdev t k '{ type ipv4_addr; flags constant; elements = { 10.0.0.1 }; }'");
  ok("add set netdev t plain '{ type ipv4_addr; }'");
  EXPECT_NE(fails("add rule netdev t c add @fixed { ip saddr }").find("Operation not supported"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t c add @iv { ip saddr }").find("Operation not supported"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t c add @k { ip saddr }").find("Device or resource busy"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t c update @plain { ip saddr timeout 1s }").find("Operation not supported"),
            std::string::npos);
  EXPECT_NE(fails("add rule netdev t c add @nope { ip saddr }").find("does not exist"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t c add @plain { }").find("expected a selector"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t c add @plain { ip saddr soon }").find("unexpected in the element"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t c add @plain ip saddr").find("expected '{'"), std::string::npos);
  // The kernel gives a set without a size 65535 when a rule first writes it.
  ok("add rule netdev t c add @plain { ip saddr }");
  EXPECT_NE(nft("list set netdev t plain").out.find("\t\tsize 65535\n"), std::string::npos);
  // A concatenation; a full set breaks the rule, so its verdict is not reached.
  ok("flush ruleset");
  base();
  ok("add set netdev t pair '{ type ipv4_addr . inet_service; size 2; flags dynamic; }'");
  ok("add rule netdev t c add @pair { ip daddr . udp dport } drop");
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000001, .dport = 53}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000001, .dport = 54}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000001, .dport = 55}), NfVerdict::ACCEPT);  // full
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000001, .dport = 53}), NfVerdict::DROP);    // already in
  EXPECT_NE(nft("list set netdev t pair").out.find("elements = { 10.0.0.1 . 53,\n\t\t\t     10.0.0.1 . 54 }"),
            std::string::npos) << nft("list set netdev t pair").out;
}

// Many rules jumping to the same chains: the loop check walks each chain a bounded number
// of times (a walk of every path would be 8^14 here).
TEST_F(NftSetRules, LoopCheckOverManyJumpsToTheSameChainsIsQuick) {
  base();
  for (int i = 0; i < 15; ++i) ok("add chain netdev t x" + std::to_string(i));
  for (int i = 0; i < 14; ++i)
    for (int k = 0; k < 8; ++k) ok("add rule netdev t x" + std::to_string(i) + " meta mark " + std::to_string(k) + " jump x" + std::to_string(i + 1));
  ok("add rule netdev t c jump x0");
  EXPECT_NE(fails("add rule netdev t x14 jump x0").find("loop"), std::string::npos);
  EXPECT_NE(fails("add rule netdev t x14 jump c").find("Operation not supported"), std::string::npos);
  ok("add chain netdev t x15");
  ok("add rule netdev t x14 jump x15");  // c -> x0 -> ... -> x15: 16 jumps, the stack's depth
  ok("add chain netdev t y0");
  ok("add chain netdev t y1");
  ok("add rule netdev t y0 jump y1");
  EXPECT_NE(fails("add rule netdev t y1 jump x0").find("deeper than 16"), std::string::npos);
}

class NftFileTest : public NftSetRules {
 protected:
  std::string dir = ::testing::TempDir();
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = dir + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
};

TEST_F(NftFileTest, NestedBlocksDefinesAndIncludes) {
  write("nft_inc.nft", "define web = { 80, 443 }\n");
  const std::string f = write("nft_main.nft",
                              "include \"nft_inc.nft\"\n"
                              "define bad = 10.9.9.9  # a comment\n"
                              "table netdev t {\n"
                              "\tset bl {\n\t\ttype ipv4_addr\n\t\tflags interval\n"
                              "\t\telements = { $bad, 10.8.0.0/16,\n\t\t\t192.168.0.1-192.168.0.9 }\n\t}\n"
                              "\tchain c {\n"
                              "\t\ttype filter hook egress device \"foo\" priority 0; policy accept;\n"
                              "\t\tip daddr @bl drop\n"
                              "\t\ttcp dport $web counter drop\n"
                              "\t}\n"
                              "}\n");
  ok("-f " + f);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a090909}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a08ff01}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0xc0a80005}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0xc0a8000a}), NfVerdict::ACCEPT);
  EXPECT_EQ(send(Pkt{.l4proto = 6, .dport = 443}), NfVerdict::DROP);
  EXPECT_EQ(nft("list ruleset").out,
            "table netdev t {\n"
            "\tset bl {\n\t\ttype ipv4_addr\n\t\tflags interval\n"
            "\t\telements = { 10.8.0.0/16, 10.9.9.9,\n\t\t\t     192.168.0.1-192.168.0.9 }\n\t}\n\n"
            "\tchain c {\n"
            "\t\ttype filter hook egress device \"foo\" priority filter; policy accept;\n"
            "\t\tip daddr @bl drop\n"
            "\t\ttcp dport { 80, 443 } counter packets 1 bytes 72 drop\n"
            "\t}\n"
            "}\n");
}

TEST_F(NftFileTest, SyntaxErrorsNameFileLineAndColumnAndChangeNothing) {
  const std::string f = write("nft_bad.nft",
                              "table netdev t {\n"
                              "\tchain c {\n"
                              "\t\ttype filter hook egress device \"foo\" priority 0;\n"
                              "\t\tip daddr 10.0.0.1 dorp\n"
                              "\t}\n"
                              "}\n");
  auto r = nft("-f " + f);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, f + ":4:21-24: Error: unsupported match or statement\n"
                       "\t\tip daddr 10.0.0.1 dorp\n"
                       "\t\t                  ^^^^\n");
  EXPECT_EQ(nft("list ruleset").out, "");  // nothing applied
  auto u = nft("-f " + write("nft_undef.nft", "table netdev t {\n\tset s { type ipv4_addr; elements = { $nope }; }\n}\n"));
  EXPECT_NE(u.err.find("nft_undef.nft:2:39-43: Error: unknown identifier 'nope'"), std::string::npos) << u.err;
  auto m = nft("-f " + dir + "/nft_missing.nft");
  EXPECT_NE(m.err.find("cannot open"), std::string::npos);
  auto loop = nft("-f " + write("nft_self.nft", "include \"nft_self.nft\"\n"));
  EXPECT_NE(loop.err.find("include nested deeper"), std::string::npos) << loop.err;
  auto unclosed = nft("-f " + write("nft_open.nft", "table netdev t {\n\tchain c {\n"));
  EXPECT_NE(unclosed.err.find("not closed"), std::string::npos) << unclosed.err;
}

// A file that fails part way is undone whole (nft's batch abort): what it flushed,
// deleted, replaced and added is back as it was, counters included, and the restored
// chains are hooked again.
TEST_F(NftFileTest, AFailingFileChangesNothing) {
  NfDeviceHooks& bar = devs.add("bar");
  const std::string before = write("nft_tx0.nft",
                                   "table netdev t {\n"
                                   "\tset bl { type ipv4_addr; counter; elements = { 10.0.0.2, 10.0.0.3 }; }\n"
                                   "\tset iv { type ipv4_addr; flags interval; elements = { 10.8.0.0/16 }; }\n"
                                   "\tset old { type ipv4_addr; }\n"
                                   "\tchain sub { counter; }\n"
                                   "\tchain c {\n"
                                   "\t\ttype filter hook egress device \"foo\" priority 0; policy accept;\n"
                                   "\t\tip daddr @bl counter drop\n"
                                   "\t\tip daddr @iv drop\n"
                                   "\t\tudp dport 53 counter accept\n"
                                   "\t}\n"
                                   "}\n"
                                   "table netdev u {\n"
                                   "\tchain e { type filter hook egress device \"bar\" priority 5; policy drop; }\n"
                                   "}\n");
  ok("-f " + before);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000002}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000009, .dport = 53}), NfVerdict::ACCEPT);
  const std::string listed = nft("-a list ruleset").out;
  // Each kind of change, then a chain on a device that does not exist.
  const std::string bad = write("nft_tx1.nft",
                                "add element netdev t bl { 10.0.0.4, 10.0.0.2 }\n"
                                "delete element netdev t bl { 10.0.0.3 }\n"
                                "flush set netdev t iv\n"
                                "delete set netdev t old\n"
                                "delete rule netdev t c handle 7\n"
                                "replace rule netdev t c handle 8 udp dport 53 drop\n"
                                "add rule netdev t c ip daddr 10.0.0.9 drop\n"
                                "delete chain netdev t sub\n"
                                "add chain netdev t c { type filter hook egress device \"foo\" priority 0; policy drop; }\n"
                                "add table netdev w\n"
                                "add set netdev w s { type ipv4_addr; elements = { 1.2.3.4 }; }\n"
                                "delete table netdev u\n"
                                "flush ruleset\n"
                                "table netdev t {\n"
                                "\tchain c { type filter hook egress device \"nope\" priority 0; }\n"
                                "}\n");
  auto r = nft("-f " + bad);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("nft_tx1.nft:15:"), std::string::npos) << r.err;
  EXPECT_EQ(nft("-a list ruleset").out, listed);
  // The restored chains run again: drops, accepts and counters go on from where they were.
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000003}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a080001}), NfVerdict::DROP);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000009, .dport = 53}), NfVerdict::ACCEPT);
  Packet* p = test::make_packet(cpu, Pkt{});
  EXPECT_EQ(nf_hook_egress(bar, p, cpu), NfVerdict::DROP);  // u's chain, policy drop
  const std::string after = nft("list ruleset").out;
  EXPECT_NE(after.find("10.0.0.2 counter packets 1 bytes"), std::string::npos) << after;
  EXPECT_NE(after.find("10.0.0.3 counter packets 1 bytes"), std::string::npos) << after;
  EXPECT_NE(after.find("udp dport 53 counter packets 2 bytes"), std::string::npos) << after;
  // A file that succeeds keeps everything it did.
  ok("-f " + write("nft_tx2.nft", "delete table netdev u\nadd element netdev t bl { 10.0.0.4 }\n"));
  EXPECT_EQ(nft("list ruleset").out.find("table netdev u"), std::string::npos);
  EXPECT_EQ(send(Pkt{.daddr = 0x0a000004}), NfVerdict::DROP);
}

}  // namespace
}  // namespace pktpath::nf
