// nft command lines: what parses into which command, and every malformed line with the
// word it names and its message.
#include <gtest/gtest.h>

#include "netfilter/nft_parse.h"

namespace pktpath::nf {
namespace {

std::vector<std::string> split(const std::string& line) {
  // Test-side tokenizer: single quotes group words, as the script runner's will.
  std::vector<std::string> w;
  std::string cur;
  bool quoted = false, have = false;
  for (char c : line) {
    if (c == '\'') { quoted = !quoted; have = true; continue; }
    if (c == ' ' && !quoted) {
      if (have) w.push_back(cur);
      cur.clear();
      have = false;
      continue;
    }
    cur += c;
    have = true;
  }
  if (have) w.push_back(cur);
  return w;
}

NftCommand ok(const std::string& line) {
  auto r = nft_parse(split(line));
  if (!r) {
    ADD_FAILURE() << line << " -> " << nft_error_text(r.error());
    return {};
  }
  return *r;
}

TEST(NftParseTest, Tables) {
  auto c = ok("nft add table netdev filt");
  EXPECT_EQ(c.op, NftOp::ADD_TABLE);
  EXPECT_EQ(c.table, "filt");
  EXPECT_EQ(ok("add table netdev x").table, "x");  // without the leading "nft"
  EXPECT_EQ(ok("nft delete table netdev x").op, NftOp::DELETE_TABLE);
}

TEST(NftParseTest, ChainBodyAsOneWordOrSeparateWords) {
  for (const char* line :
       {"nft add chain netdev t c '{ type filter hook egress device foo priority 0; policy drop; }'",
        "nft add chain netdev t c { type filter hook egress device foo priority 0 ; policy drop ; }",
        "nft add chain netdev t c {type filter hook egress device \"foo\" priority 0;policy drop;}",
        "nft add chain netdev t c '{ type filter hook egress device foo priority filter; policy drop }'"}) {
    auto c = ok(line);
    EXPECT_EQ(c.op, NftOp::ADD_CHAIN) << line;
    EXPECT_EQ(c.table, "t");
    EXPECT_EQ(c.chain, "c");
    EXPECT_TRUE(c.chain_spec.base);
    EXPECT_EQ(c.chain_spec.hook, NfHookNum::EGRESS);
    EXPECT_EQ(c.chain_spec.device, "foo") << line;
    EXPECT_EQ(c.chain_spec.priority, 0);
    EXPECT_TRUE(c.chain_spec.has_policy);
    EXPECT_EQ(c.chain_spec.policy, NfVerdict::DROP) << line;
  }
  auto in = ok("nft add chain netdev t c '{ type filter hook ingress device eth0 priority -100; }'");
  EXPECT_EQ(in.chain_spec.hook, NfHookNum::INGRESS);
  EXPECT_EQ(in.chain_spec.priority, -100);
  EXPECT_FALSE(in.chain_spec.has_policy);
  EXPECT_EQ(in.chain_spec.policy, NfVerdict::ACCEPT);
  EXPECT_EQ(ok("nft add chain netdev t c '{ type filter hook ingress device e priority filter + 5; }'").chain_spec.priority, 5);
  EXPECT_EQ(ok("nft add chain netdev t c '{ type filter hook ingress device e priority filter - 5; }'").chain_spec.priority, -5);
  EXPECT_FALSE(ok("nft add chain netdev t regular").chain_spec.base);
}

TEST(NftParseTest, Rules) {
  auto c = ok("nft add rule netdev t c meta mark 0x10 meta protocol ip ip saddr 10.1.2.3/8 "
              "ip daddr != 192.168.1.1 udp dport 1000-2000 tcp sport 80 counter drop");
  EXPECT_EQ(c.op, NftOp::ADD_RULE);
  ASSERT_EQ(c.rule.matches.size(), 6u);
  EXPECT_EQ(c.rule.matches[0].key, NftKey::META_MARK);
  EXPECT_EQ(c.rule.matches[0].lo, 16u);
  EXPECT_EQ(c.rule.matches[1].key, NftKey::META_PROTOCOL);
  EXPECT_EQ(c.rule.matches[1].lo, 0x0800u);
  EXPECT_EQ(c.rule.matches[2].key, NftKey::IP_SADDR);
  EXPECT_EQ(c.rule.matches[2].lo, 0x0a000000u);  // host bits cleared
  EXPECT_EQ(c.rule.matches[2].mask, 0xff000000u);
  EXPECT_EQ(c.rule.matches[2].prefix, 8);
  EXPECT_TRUE(c.rule.matches[3].neg);
  EXPECT_EQ(c.rule.matches[3].mask, 0xffffffffu);
  EXPECT_EQ(c.rule.matches[4].key, NftKey::UDP_DPORT);
  EXPECT_EQ(c.rule.matches[4].lo, 1000u);
  EXPECT_EQ(c.rule.matches[4].hi, 2000u);
  EXPECT_EQ(c.rule.matches[5].key, NftKey::TCP_SPORT);
  EXPECT_EQ(c.rule.counter_at, 6);
  EXPECT_EQ(c.rule.verdict, NftRuleVerdict::DROP);
  auto d = ok("nft add rule netdev t c counter packets 5 bytes 300 accept");
  EXPECT_EQ(d.rule.counter_at, 0);
  EXPECT_EQ(d.rule.counter_packets, 5u);
  EXPECT_EQ(d.rule.counter_bytes, 300u);
  EXPECT_EQ(d.rule.verdict, NftRuleVerdict::ACCEPT);
  EXPECT_EQ(ok("nft insert rule netdev t c accept").op, NftOp::INSERT_RULE);
  EXPECT_EQ(ok("nft add rule netdev t c meta mark 1 counter").rule.verdict, NftRuleVerdict::CONTINUE);
  auto rep = ok("nft replace rule netdev t c handle 7 udp dport 53 drop");
  EXPECT_EQ(rep.op, NftOp::REPLACE_RULE);
  EXPECT_EQ(rep.handle, 7u);
  EXPECT_EQ(rep.rule.matches.size(), 1u);
  EXPECT_EQ(rep.rule.verdict, NftRuleVerdict::DROP);
  auto del = ok("nft delete rule netdev t c handle 42");
  EXPECT_EQ(del.op, NftOp::DELETE_RULE);
  EXPECT_EQ(del.handle, 42u);
  EXPECT_EQ(ok("nft flush ruleset").op, NftOp::FLUSH_RULESET);
  auto l = ok("nft -j list ruleset");
  EXPECT_EQ(l.op, NftOp::LIST_RULESET);
  EXPECT_TRUE(l.json);
  EXPECT_FALSE(ok("nft -a list ruleset").json);
}

struct Bad {
  const char* line;
  size_t index;
  const char* word;
  const char* message;
};

// typeof: the key's types from the selectors, kept to be listed back as written.
TEST(NftParseTest, SetsDeclaredByTypeof) {
  NftCommand c = ok("nft add set netdev t s { typeof ip saddr . tcp dport ; }");
  EXPECT_EQ(c.op, NftOp::ADD_SET);
  EXPECT_EQ(c.set_spec.types, (std::vector<NftType>{NftType::IPV4_ADDR, NftType::INET_SERVICE}));
  EXPECT_EQ(c.set_spec.typeof_keys, (std::vector<NftKey>{NftKey::IP_SADDR, NftKey::TCP_DPORT}));
  c = ok("nft add map netdev t m { typeof ip daddr : meta mark ; }");
  EXPECT_TRUE(c.set_spec.map);
  EXPECT_TRUE(c.set_spec.mark_data);
  EXPECT_TRUE(c.set_spec.typeof_data);
  c = ok("nft add map netdev t v { typeof ether saddr : verdict ; }");
  EXPECT_FALSE(c.set_spec.mark_data);
  EXPECT_EQ(c.set_spec.types, std::vector<NftType>{NftType::ETHER_ADDR});
  for (const char* bad : {"nft add set netdev t s { typeof ip bogus ; }", "nft add set netdev t s { typeof ; }",
                          "nft add map netdev t m { typeof ip daddr : ip saddr ; }",
                          "nft add map netdev t m { typeof ip daddr ; }",
                          "nft add set netdev t s { type ipv4_addr ; typeof ip saddr ; }"}) {
    auto r = nft_parse(split(bad));
    EXPECT_FALSE(r) << bad;
  }
}

TEST(NftParseTest, MalformedLinesNameTheWord) {
  const Bad cases[] = {
      {"nft", 1, "", "missing a command (add, insert, replace, delete, flush, list)"},
      {"nft rename table netdev t", 1, "rename", "unsupported command (expected add, insert, replace, delete, flush or list)"},
      {"nft replace table netdev t", 2, "table", "unsupported: replace only takes 'rule'"},
      {"nft replace rule netdev t c accept", 6, "accept", "expected 'handle' (rules are named by handle)"},
      {"nft add set netdev t s", 6, "", "missing '{' and the set's type"},
      {"nft add table ip t", 3, "ip", "unsupported family (only netdev)"},
      {"nft add table t", 3, "t", "unsupported: family omitted or unknown (nft defaults to ip); only netdev is supported"},
      {"nft add table netdev", 4, "", "missing table name"},
      {"nft add table netdev t extra", 5, "extra", "unexpected word after the command"},
      {"nft add table netdev b@d", 4, "b@d", "invalid table name (letters, digits, _ - . / only)"},
      {"nft insert chain netdev t c", 2, "chain", "unsupported: insert only takes 'rule'"},
      {"nft --numeric list ruleset", 1, "--numeric", "unsupported option"},
      {"nft list tables", 2, "tables", "unsupported: list ruleset, table, set or map"},
      {"nft flush chain netdev t c", 2, "chain", "unsupported: flush ruleset, set or map"},
      {"nft add chain netdev t c type filter", 6, "type", "expected '{' to start the chain description"},
      {"nft add chain netdev t c '{ type nat hook egress device d priority 0; }'", 6, "nat", "unsupported chain type (only filter)"},
      {"nft add chain netdev t c '{ type filter hook output device d priority 0; }'", 6, "output", "unsupported hook (expected ingress or egress)"},
      {"nft add chain netdev t c '{ type filter hook egress priority 0; }'", 6, "priority", "expected 'device' (netdev chains need one)"},
      {"nft add chain netdev t c '{ type filter hook egress devices = { a, b } priority 0; }'", 6, "devices", "unsupported: 'devices' (one device per chain)"},
      {"nft add chain netdev t c '{ type filter hook egress device d; }'", 6, ";", "expected 'priority'"},
      {"nft add chain netdev t c '{ type filter hook egress device d priority x; }'", 6, "x", "invalid priority (expected an integer or 'filter')"},
      {"nft add chain netdev t c '{ type filter hook egress device d priority 99999999999; }'", 6, "99999999999", "invalid priority (expected an integer or 'filter')"},
      {"nft add chain netdev t c '{ type filter hook egress device d priority 0; policy reject; }'", 6, "reject", "unsupported policy (expected accept or drop)"},
      {"nft add chain netdev t c '{ type filter hook egress device d priority 0; comment \"x\" }'", 6, "comment", "unsupported in a chain description (expected type, policy or '}')"},
      {"nft add chain netdev t c '{ type filter hook egress device d priority 0;'", 7, "", "missing '}' to close the chain description"},
      {"nft add chain netdev t c '{ policy drop; }'", 7, "", "missing 'type filter hook ...' before a policy (only base chains have one)"},
      {"nft add rule netdev t c", 6, "", "missing rule statements"},
      {"nft add rule netdev t c meta mark x accept", 8, "x", "invalid mark (expected a number)"},
      {"nft add rule netdev t c meta mark 4294967296 accept", 8, "4294967296", "mark out of range (0..4294967295)"},
      {"nft add rule netdev t c meta protocol set 1", 8, "set", "unsupported statement (meta ... set: only mark)"},
      {"nft add rule netdev t c meta mark set ip daddr vmap @m", 11, "vmap", "expected 'map' (meta mark set KEY map @m)"},
      {"nft add rule netdev t c meta iif 1 accept", 7, "iif", "unsupported meta key (only mark, protocol and l4proto)"},
      {"nft add rule netdev t c meta protocol ipx accept", 8, "ipx", "unknown protocol (expected ip, ip6, arp, vlan, 8021ad or a number)"},
      {"nft add rule netdev t c meta protocol 70000 accept", 8, "70000", "protocol out of range (0..65535)"},
      {"nft add rule netdev t c meta mark > 1 accept", 8, ">", "unsupported operator (only == and !=)"},
      {"nft add rule netdev t c ip version 4 accept", 7, "version",
       "unsupported ip field (only saddr, daddr, protocol, length and dscp)"},
      {"nft add rule netdev t c ip protocol frob accept", 8, "frob", "unknown protocol \"frob\""},
      {"nft add rule netdev t c ip dscp 64 accept", 8, "64", "dscp out of range (0..63)"},
      {"nft add rule netdev t c ether vlan 1", 7, "vlan", "unsupported ether field (only saddr, daddr and type)"},
      {"nft add rule netdev t c ether saddr 1:2:3:4:5", 8, "1:2:3:4:5",
       "invalid Ethernet address (expected six hex bytes, 02:00:00:00:00:01)"},
      {"nft add rule netdev t c ether daddr 1:2:3:4:5:6:7", 8, "1:2:3:4:5:6:7",
       "invalid Ethernet address (expected six hex bytes, 02:00:00:00:00:01)"},
      {"nft add rule netdev t c ether daddr 1:2:3:4:5:xyz", 8, "1:2:3:4:5:xyz",
       "invalid Ethernet address (expected six hex bytes, 02:00:00:00:00:01)"},
      {"nft add rule netdev t c ip saddr 10.0.0.256 accept", 8, "10.0.0.256", "invalid IPv4 address"},
      {"nft add rule netdev t c ip saddr 10.0.0 accept", 8, "10.0.0", "invalid IPv4 address"},
      {"nft add rule netdev t c ip saddr 10.0.0.0/33 accept", 8, "10.0.0.0/33", "invalid prefix length (0..32)"},
      {"nft add rule netdev t c ip daddr", 8, "", "missing IPv4 address"},
      {"nft add rule netdev t c tcp flags syn accept", 7, "flags", "unsupported tcp field (only sport and dport)"},
      {"nft add rule netdev t c udp dport 65536 accept", 8, "65536", "port out of range (0..65535)"},
      {"nft add rule netdev t c udp dport 200-100 accept", 8, "200-100", "invalid port range (first > last)"},
      {"nft add rule netdev t c udp dport 1-x accept", 8, "1-x", "invalid port (expected a number)"},
      {"nft add rule netdev t c udp dport 53,54 accept", 8, ",", "unsupported match or statement"},
      {"nft add rule netdev t c ip6 hoplimit 1 accept", 7, "hoplimit", "unsupported ip6 field (only saddr, daddr and nexthdr)"},
      {"nft add rule netdev t c ip6 saddr 10.0.0.1 accept", 8, "10.0.0.1", "invalid IPv6 address"},
      {"nft add rule netdev t c ip6 saddr 2001:db8::/129 accept", 8, "2001:db8::/129", "invalid prefix length (0..128)"},
      {"nft add rule netdev t c ip6 daddr", 8, "", "missing IPv6 address"},
      {"nft add rule netdev t c ip6 nexthdr frob", 8, "frob", "unknown nexthdr \"frob\""},
      {"nft add rule netdev t c vlan id 1 accept", 6, "vlan", "unsupported match"},
      {"nft add rule netdev t c jump", 7, "", "missing chain name after jump"},
      {"nft add rule netdev t c reject", 6, "reject", "unsupported statement"},
      {"nft add rule netdev t c frobnicate", 6, "frobnicate", "unsupported match or statement"},
      {"nft add rule netdev t c accept counter", 7, "counter", "statement after the terminal verdict has no effect"},
      {"nft add rule netdev t c counter counter accept", 7, "counter", "unsupported: more than one counter in a rule"},
      {"nft add rule netdev t c counter packets 1 accept", 9, "accept", "expected 'bytes'"},
      {"nft delete rule netdev t c 5", 6, "5", "expected 'handle' (rules are named by handle)"},
      {"nft delete rule netdev t c handle 0", 7, "0", "rule handle out of range (1..18446744073709551615)"},
      {"nft delete rule netdev t c handle", 7, "", "missing a rule handle"},
      {"nft delete map netdev t", 5, "", "missing map name"},
  };
  for (const Bad& b : cases) {
    auto r = nft_parse(split(b.line));
    ASSERT_FALSE(r) << "accepted: " << b.line;
    EXPECT_EQ(r.error().index, b.index) << b.line;
    EXPECT_EQ(r.error().word, b.word) << b.line;
    EXPECT_EQ(r.error().msg, b.message) << b.line;
  }
}

TEST(NftParseTest, ErrorText) {
  auto r = nft_parse(split("nft add chain netdev t c '{ type filter hook egres device d priority 0; }'"));
  ASSERT_FALSE(r);
  EXPECT_EQ(nft_error_text(r.error()),
            "word 6 'egres': unsupported hook (expected ingress or egress)");
  auto m = nft_parse(split("nft add table netdev"));
  ASSERT_FALSE(m);
  EXPECT_EQ(nft_error_text(m.error()), "word 4: missing table name");
}

}  // namespace
}  // namespace pktpath::nf
