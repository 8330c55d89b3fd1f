// The ruleset through nft_command: list ruleset text and JSON, handles, and the errors
// of applying commands (missing table/chain/device/handle).
#include <gtest/gtest.h>

#include "nf_test_util.h"

namespace pktpath::nf {
namespace {

class NftRulesetTest : public ::testing::Test {
 protected:
  test::TestResolver devs;
  NfDeviceHooks& foo = devs.add("foo");
  NftRuleset rs;

  test::NftRun run(const std::vector<std::string>& w, bool json = false) { return test::nft(rs, devs, w, json); }
  void ok(const std::vector<std::string>& w) {
    auto r = run(w);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.err, "");
  }
  // Each rule's "expr" array of `nft -j list ruleset`, as JSON text.
  std::vector<std::string> rule_exprs() {
    auto j = nlohmann::json::parse(run({"nft", "-j", "list", "ruleset"}, true).out);
    std::vector<std::string> exprs;
    for (const auto& o : j.at("nftables"))
      if (o.contains("rule")) exprs.push_back(o["rule"]["expr"].dump());
    return exprs;
  }
  void build() {
    ok({"nft", "add", "table", "netdev", "filt"});
    ok({"nft", "add", "chain", "netdev", "filt", "out",
        "{ type filter hook egress device foo priority 0; policy drop; }"});
    ok({"nft", "add", "rule", "netdev", "filt", "out", "meta", "mark", "1", "counter", "accept"});
    ok({"nft", "add", "rule", "netdev", "filt", "out", "ip", "saddr", "10.0.0.0/8", "udp", "dport",
        "1000-2000", "drop"});
    ok({"nft", "add", "chain", "netdev", "filt", "in",
        "{ type filter hook ingress device foo priority -5; }"});
    ok({"nft", "add", "rule", "netdev", "filt", "in", "meta", "protocol", "!=", "arp", "ip", "daddr",
        "1.2.3.4", "tcp", "sport", "80", "counter", "packets", "7", "bytes", "700"});
  }
};

TEST_F(NftRulesetTest, ListRulesetText) {
  build();
  auto r = run({"nft", "-a", "list", "ruleset"});
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(r.out,
            "table netdev filt { # handle 1\n"
            "\tchain out { # handle 1\n"
            "\t\ttype filter hook egress device \"foo\" priority filter; policy drop;\n"
            "\t\tmeta mark 0x00000001 counter packets 0 bytes 0 accept # handle 2\n"
            "\t\tip saddr 10.0.0.0/8 udp dport 1000-2000 drop # handle 3\n"
            "\t}\n"
            "\n"
            "\tchain in { # handle 4\n"
            "\t\ttype filter hook ingress device \"foo\" priority filter - 5; policy accept;\n"
            "\t\tmeta protocol != arp ip daddr 1.2.3.4 tcp sport 80 counter packets 7 bytes 700 # handle 5\n"
            "\t}\n"
            "}\n");
  ok({"nft", "add", "table", "netdev", "second"});
  EXPECT_NE(run({"nft", "-a", "list", "ruleset"}).out.find("}\ntable netdev second { # handle 2\n}\n"), std::string::npos);
  // Without -a, nft prints no handles.
  const std::string plain = run({"nft", "list", "ruleset"}).out;
  EXPECT_EQ(plain.find("# handle"), std::string::npos) << plain;
  EXPECT_NE(plain.find("table netdev filt {\n\tchain out {\n"), std::string::npos) << plain;
}

// The new fields list as nft 1.0.6 lists the same rules on this kernel (text and the
// JSON expressions).
TEST_F(NftRulesetTest, ListsProtocolLengthDscpL4protoAndEtherTypeAsNft) {
  ok({"nft", "add", "table", "netdev", "t"});
  ok({"nft", "add", "chain", "netdev", "t", "c", "{ type filter hook ingress device foo priority 0; }"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ip", "protocol", "tcp", "ip", "length", "100-200", "ip", "dscp",
      "cs1", "meta", "l4proto", "udp", "ether", "type", "arp", "drop"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ip", "dscp", "0x2e", "accept"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ip", "dscp", "10"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ether", "type", "0x88cc"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ip", "protocol", "200", "ip", "length", "!=", "60"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "meta", "l4proto", "7"});
  const std::string out = run({"nft", "list", "ruleset"}).out;
  EXPECT_NE(out.find("\t\tip protocol tcp ip length 100-200 ip dscp cs1 meta l4proto udp ether type arp drop\n"
                     "\t\tip dscp ef accept\n"
                     "\t\tip dscp af11\n"
                     "\t\tether type 0x88cc\n"
                     "\t\tip protocol 200 ip length != 60\n"
                     "\t\tmeta l4proto 7\n"),
            std::string::npos)
      << out;
  const std::vector<std::string> exprs = rule_exprs();
  ASSERT_EQ(exprs.size(), 6u);
  EXPECT_EQ(exprs[0],
            R"([{"match":{"left":{"payload":{"field":"protocol","protocol":"ip"}},"op":"==","right":"tcp"}},)"
            R"({"match":{"left":{"payload":{"field":"length","protocol":"ip"}},"op":"==","right":{"range":[100,200]}}},)"
            R"({"match":{"left":{"payload":{"field":"dscp","protocol":"ip"}},"op":"==","right":"cs1"}},)"
            R"({"match":{"left":{"meta":{"key":"l4proto"}},"op":"==","right":"udp"}},)"
            R"({"match":{"left":{"payload":{"field":"type","protocol":"ether"}},"op":"==","right":"arp"}},)"
            R"({"drop":null}])");
  EXPECT_EQ(exprs[3], R"([{"match":{"left":{"payload":{"field":"type","protocol":"ether"}},"op":"==","right":35020}}])");
  EXPECT_EQ(exprs[5], R"([{"match":{"left":{"meta":{"key":"l4proto"}},"op":"==","right":7}}])");
}

// Ethernet and IPv6 addresses and ip6 nexthdr list as nft 1.0.6 lists the same rules on
// this kernel: lowercase MACs, inet_ntop's compressed IPv6 with a prefix length.
TEST_F(NftRulesetTest, ListsEtherAndIp6AddressesAsNft) {
  ok({"nft", "add", "table", "netdev", "t"});
  ok({"nft", "add", "chain", "netdev", "t", "c", "{ type filter hook ingress device foo priority 0; }"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ether", "saddr", "02:00:00:00:00:01", "drop"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ether", "daddr", "!=", "02:00:00:00:00:0A", "counter", "drop"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ip6", "saddr", "2001:db8::/32", "drop"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ip6", "daddr", "::1", "accept"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ip6", "daddr", "2001:DB8:0:0:1::5", "accept"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ip6", "nexthdr", "tcp", "drop"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "ip6", "nexthdr", "99", "drop"});
  ok({"nft", "add", "rule", "netdev", "t", "c", "meta", "l4proto", "udp", "ip6", "saddr", "fe80::1/10", "drop"});
  const std::string out = run({"nft", "list", "ruleset"}).out;
  EXPECT_NE(out.find("\t\tether saddr 02:00:00:00:00:01 drop\n"
                     "\t\tether daddr != 02:00:00:00:00:0a counter packets 0 bytes 0 drop\n"
                     "\t\tip6 saddr 2001:db8::/32 drop\n"
                     "\t\tip6 daddr ::1 accept\n"
                     "\t\tip6 daddr 2001:db8::1:0:0:5 accept\n"
                     "\t\tip6 nexthdr tcp drop\n"
                     "\t\tip6 nexthdr 99 drop\n"
                     "\t\tmeta l4proto udp ip6 saddr fe80::/10 drop\n"),
            std::string::npos)
      << out;
  const std::vector<std::string> exprs = rule_exprs();
  ASSERT_EQ(exprs.size(), 8u);
  EXPECT_EQ(exprs[0],
            R"([{"match":{"left":{"payload":{"field":"saddr","protocol":"ether"}},"op":"==","right":"02:00:00:00:00:01"}},)"
            R"({"drop":null}])");
  EXPECT_EQ(exprs[2],
            R"([{"match":{"left":{"payload":{"field":"saddr","protocol":"ip6"}},"op":"==",)"
            R"("right":{"prefix":{"addr":"2001:db8::","len":32}}}},{"drop":null}])");
  EXPECT_EQ(exprs[5],
            R"([{"match":{"left":{"payload":{"field":"nexthdr","protocol":"ip6"}},"op":"==","right":"tcp"}},)"
            R"({"drop":null}])");
}

TEST_F(NftRulesetTest, ListRulesetJson) {
  build();
  auto r = run({"nft", "-j", "list", "ruleset"});
  ASSERT_EQ(r.rc, 0);
  auto j = nlohmann::json::parse(r.out);
  auto& items = j.at("nftables");
  ASSERT_EQ(items.size(), 1u + 1 + 2 + 3);
  EXPECT_EQ(items[0]["metainfo"]["json_schema_version"], 1);
  EXPECT_EQ(items[1]["table"]["name"], "filt");
  EXPECT_EQ(items[1]["table"]["family"], "netdev");
  EXPECT_EQ(items[2]["chain"]["hook"], "egress");
  EXPECT_EQ(items[2]["chain"]["dev"], "foo");
  EXPECT_EQ(items[2]["chain"]["policy"], "drop");
  EXPECT_EQ(items[3]["chain"]["prio"], -5);
  const auto& e1 = items[4]["rule"]["expr"];
  EXPECT_EQ(items[4]["rule"]["handle"], 2);
  EXPECT_EQ(e1[0]["match"]["left"]["meta"]["key"], "mark");
  EXPECT_EQ(e1[0]["match"]["right"], 1);
  EXPECT_EQ(e1[1]["counter"]["packets"], 0);
  EXPECT_TRUE(e1[2].contains("accept"));
  const auto& e2 = items[5]["rule"]["expr"];
  EXPECT_EQ(e2[0]["match"]["right"]["prefix"]["addr"], "10.0.0.0");
  EXPECT_EQ(e2[0]["match"]["right"]["prefix"]["len"], 8);
  EXPECT_EQ(e2[1]["match"]["left"]["payload"]["protocol"], "udp");
  EXPECT_EQ(e2[1]["match"]["right"]["range"], nlohmann::json::array({1000, 2000}));
  const auto& e3 = items[6]["rule"]["expr"];
  EXPECT_EQ(e3[0]["match"]["op"], "!=");
  EXPECT_EQ(e3[0]["match"]["right"], "arp");
  EXPECT_EQ(e3[3]["counter"]["bytes"], 700);
  // --json given by the runner instead of -j: same document.
  EXPECT_EQ(run({"nft", "list", "ruleset"}, true).out, r.out);
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1);  // one line (JSON Lines)
}

TEST_F(NftRulesetTest, ApplyErrors) {
  struct Case {
    std::vector<std::string> words;
    const char* err;
  } cases[] = {
      {{"nft", "add", "chain", "netdev", "nope", "c"}, "nft: table 'nope' does not exist\n"},
      {{"nft", "add", "rule", "netdev", "nope", "c", "accept"}, "nft: table 'nope' does not exist\n"},
      {{"nft", "add", "rule", "netdev", "filt", "nope", "accept"}, "nft: chain 'nope' does not exist in table 'filt'\n"},
      {{"nft", "add", "chain", "netdev", "filt", "c2", "{ type filter hook egress device bar priority 0; }"},
       "nft: device 'bar' not found\n"},
      {{"nft", "add", "chain", "netdev", "filt", "out", "{ type filter hook ingress device foo priority 0; }"},
       "nft: chain 'out' exists in table 'filt' with a different type/hook/device/priority\n"},
      {{"nft", "delete", "rule", "netdev", "filt", "out", "handle", "99"}, "nft: rule handle 99 does not exist in chain 'out'\n"},
      {{"nft", "delete", "chain", "netdev", "filt", "nope"}, "nft: chain 'nope' does not exist in table 'filt'\n"},
      {{"nft", "delete", "table", "netdev", "nope"}, "nft: table 'nope' does not exist\n"},
      {{"nft", "add", "chain", "netdev", "filt", "out", "{ type filter hook egress device foo priority 0; polcy drop; }"},
       "nft: word 6 'polcy': unsupported in a chain description (expected type, policy or '}')\n"},
  };
  build();
  const std::string before = run({"nft", "list", "ruleset"}).out;
  for (const auto& c : cases) {
    auto r = run(c.words);
    EXPECT_EQ(r.rc, 1) << c.err;
    EXPECT_EQ(r.err, c.err);
    EXPECT_EQ(r.out, "");
  }
  EXPECT_EQ(run({"nft", "list", "ruleset"}).out, before);  // nothing changed
  EXPECT_EQ(foo.egress.load()->size(), 1u);
  EXPECT_EQ(foo.ingress.load()->size(), 1u);
}

TEST_F(NftRulesetTest, AddIsIdempotentAndUpdatesPolicy) {
  build();
  ok({"nft", "add", "table", "netdev", "filt"});
  ok({"nft", "add", "chain", "netdev", "filt", "out"});
  ok({"nft", "add", "chain", "netdev", "filt", "out", "{ type filter hook egress device foo priority 0; policy accept; }"});
  EXPECT_NE(run({"nft", "list", "ruleset"}).out.find("hook egress device \"foo\" priority filter; policy accept;"),
            std::string::npos);
  EXPECT_EQ(foo.egress.load()->size(), 1u);  // not registered twice
}

TEST_F(NftRulesetTest, DeleteChainTableFlush) {
  build();
  ok({"nft", "delete", "rule", "netdev", "filt", "out", "handle", "2"});
  EXPECT_EQ(run({"nft", "list", "ruleset"}).out.find("handle 2\n"), std::string::npos);
  ok({"nft", "delete", "chain", "netdev", "filt", "out"});
  EXPECT_EQ(foo.egress.load(), nullptr);
  EXPECT_NE(foo.ingress.load(), nullptr);
  ok({"nft", "delete", "table", "netdev", "filt"});
  EXPECT_EQ(foo.ingress.load(), nullptr);
  EXPECT_EQ(run({"nft", "list", "ruleset"}).out, "");
  build();
  ok({"nft", "flush", "ruleset"});
  EXPECT_EQ(foo.egress.load(), nullptr);
  EXPECT_EQ(run({"nft", "list", "ruleset"}).out, "");
}

// NETDEV_UNREGISTER of a chain's only device releases the chain with its rules (Linux
// 6.1's __nft_release_basechain); chains on other devices and regular chains stay.
TEST_F(NftRulesetTest, DeviceUnregisterReleasesItsBaseChains) {
  NfDeviceHooks& bar = devs.add("bar");
  build();
  ok({"nft", "add", "chain", "netdev", "filt", "other", "{ type filter hook egress device bar priority 0; }"});
  ok({"nft", "add", "chain", "netdev", "filt", "plain"});
  rs.netdev_unregister(&foo);
  EXPECT_EQ(foo.egress.load(), nullptr);
  EXPECT_EQ(foo.ingress.load(), nullptr);
  ASSERT_NE(bar.egress.load(), nullptr);
  EXPECT_EQ(bar.egress.load()->size(), 1u);
  const std::string out = run({"nft", "list", "ruleset"}).out;
  EXPECT_EQ(out.find("chain out"), std::string::npos) << out;
  EXPECT_EQ(out.find("chain in"), std::string::npos) << out;
  EXPECT_EQ(out.find("device \"foo\""), std::string::npos) << out;
  EXPECT_NE(out.find("chain other"), std::string::npos) << out;
  EXPECT_NE(out.find("chain plain"), std::string::npos) << out;
  // The released chain's name is free again.
  ok({"nft", "add", "chain", "netdev", "filt", "out", "{ type filter hook egress device foo priority 0; }"});
  EXPECT_EQ(foo.egress.load()->size(), 1u);
}

TEST_F(NftRulesetTest, RegularChainIsListedWithoutHook) {
  ok({"nft", "add", "table", "netdev", "t"});
  ok({"nft", "add", "chain", "netdev", "t", "plain"});
  ok({"nft", "add", "rule", "netdev", "t", "plain", "counter", "drop"});
  EXPECT_EQ(run({"nft", "-a", "list", "ruleset"}).out,
            "table netdev t { # handle 1\n\tchain plain { # handle 1\n"
            "\t\tcounter packets 0 bytes 0 drop # handle 2\n\t}\n}\n");
  EXPECT_EQ(foo.egress.load(), nullptr);
}

}  // namespace
}  // namespace pktpath::nf
