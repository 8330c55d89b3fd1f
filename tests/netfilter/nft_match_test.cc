// nft rules on packets: matches (mark, protocol, prefixes, ports and ranges, negation),
// counters, verdicts and chain policy, run through the device's egress/ingress hook.
#include <gtest/gtest.h>

#include "netfilter/nf_hooks.h"
#include "nf_test_util.h"

namespace pktpath::nf {
namespace {

using test::Pkt;

class NftMatchTest : public ::testing::Test {
 protected:
  PacketPool pool{PacketPool::Options{.capacity = 256}};
  Cpu cpu{pool};
  test::TestResolver devs;
  NfDeviceHooks& foo = devs.add("foo");
  NftRuleset rs;

  void SetUp() override {
    ASSERT_EQ(run({"nft", "add", "table", "netdev", "t"}), 0);
    ASSERT_EQ(run({"nft", "add", "chain", "netdev", "t", "c",
                   "{ type filter hook egress device foo priority 0; policy accept; }"}), 0);
  }
  void TearDown() override {
    rs.flush();
    cpu.drain_cache();
    EXPECT_EQ(pool.available(), pool.capacity());
  }
  int run(const std::vector<std::string>& w) {
    auto r = test::nft(rs, devs, w);
    EXPECT_EQ(r.err, "") << "for " << w.back();
    return r.rc;
  }
  // One rule "<match words> drop" in an otherwise accepting chain; true if it dropped.
  bool drops(const std::string& match, const Pkt& d) {
    rs.flush();
    EXPECT_EQ(run({"add", "table", "netdev", "t"}), 0);
    EXPECT_EQ(run({"add", "chain", "netdev", "t", "c", "{", "type", "filter", "hook", "egress",
                   "device", "foo", "priority", "0;", "}"}), 0);
    std::vector<std::string> w = {"add", "rule", "netdev", "t", "c"};
    std::istringstream is(match);
    for (std::string s; is >> s;) w.push_back(s);
    w.push_back("drop");
    EXPECT_EQ(run(w), 0) << match;
    Packet* p = test::make_packet(cpu, d);
    NfVerdict v = nf_hook_egress(foo, p, cpu);
    if (v == NfVerdict::ACCEPT) cpu.free(p);
    return v == NfVerdict::DROP;
  }
  uint64_t nf_drops() const {
    return cpu.stats().drops[static_cast<unsigned>(DropReason::NETFILTER_DROP)].get();
  }
};

TEST_F(NftMatchTest, MetaMark) {
  EXPECT_TRUE(drops("meta mark 7", Pkt{.mark = 7}));
  EXPECT_FALSE(drops("meta mark 7", Pkt{.mark = 8}));
  EXPECT_TRUE(drops("meta mark 0x10", Pkt{.mark = 16}));
  EXPECT_TRUE(drops("meta mark != 7", Pkt{.mark = 8}));
  EXPECT_FALSE(drops("meta mark != 7", Pkt{.mark = 7}));
}

TEST_F(NftMatchTest, MetaProtocol) {
  EXPECT_TRUE(drops("meta protocol ip", Pkt{}));
  EXPECT_FALSE(drops("meta protocol ip6", Pkt{}));
  EXPECT_TRUE(drops("meta protocol arp", Pkt{.ethertype = 0x0806}));
  EXPECT_TRUE(drops("meta protocol ip6", Pkt{.ethertype = 0x86dd}));
  EXPECT_TRUE(drops("meta protocol 0x0806", Pkt{.ethertype = 0x0806}));
  EXPECT_TRUE(drops("meta protocol 2054", Pkt{.ethertype = 0x0806}));
  EXPECT_TRUE(drops("meta protocol vlan", Pkt{.vlan_tag = true}));
  // Packet::protocol left 0 by the sender: the Ethernet type is used.
  EXPECT_TRUE(drops("meta protocol arp", Pkt{.ethertype = 0x0806, .set_protocol = false}));
  EXPECT_TRUE(drops("meta protocol != ip", Pkt{.ethertype = 0x0806}));
}

TEST_F(NftMatchTest, IpAddressesAndPrefixes) {
  const uint32_t a = 0xc0a80105;  // 192.168.1.5
  EXPECT_TRUE(drops("ip saddr 192.168.1.5", Pkt{.saddr = a}));
  EXPECT_FALSE(drops("ip saddr 192.168.1.6", Pkt{.saddr = a}));
  EXPECT_TRUE(drops("ip saddr 192.168.0.0/16", Pkt{.saddr = a}));
  EXPECT_TRUE(drops("ip saddr 192.168.1.0/24", Pkt{.saddr = a}));
  EXPECT_FALSE(drops("ip saddr 192.168.2.0/24", Pkt{.saddr = a}));
  EXPECT_TRUE(drops("ip saddr 192.168.1.4/31", Pkt{.saddr = a}));  // host bits ignored
  EXPECT_FALSE(drops("ip saddr 192.168.1.6/31", Pkt{.saddr = a}));
  EXPECT_TRUE(drops("ip saddr 0.0.0.0/0", Pkt{.saddr = a}));
  EXPECT_TRUE(drops("ip daddr 10.0.0.0/8", Pkt{.daddr = 0x0a010203}));
  EXPECT_FALSE(drops("ip daddr 10.0.0.0/8", Pkt{.daddr = 0x0b010203}));
  EXPECT_FALSE(drops("ip saddr 10.0.0.0/8", Pkt{.saddr = 0x0b000001, .daddr = 0x0a000001}));
  EXPECT_TRUE(drops("ip saddr != 10.0.0.0/8", Pkt{.saddr = 0x0b000001}));
  // Not IPv4: neither the match nor its negation applies (nft's implicit dependency).
  EXPECT_FALSE(drops("ip saddr 0.0.0.0/0", Pkt{.ethertype = 0x0806}));
  EXPECT_FALSE(drops("ip saddr != 1.2.3.4", Pkt{.ethertype = 0x0806}));
  // IPv4 behind an in-band VLAN tag whose protocol names the inner IP.
  Pkt tagged{.saddr = a, .vlan_tag = true};
  EXPECT_FALSE(drops("ip saddr 192.168.1.5", tagged));  // protocol says vlan
}

TEST_F(NftMatchTest, Ports) {
  EXPECT_TRUE(drops("udp dport 2000", Pkt{}));
  EXPECT_FALSE(drops("tcp dport 2000", Pkt{}));  // a UDP packet
  EXPECT_TRUE(drops("tcp dport 2000", Pkt{.l4proto = 6}));
  EXPECT_TRUE(drops("udp sport 1000", Pkt{}));
  EXPECT_FALSE(drops("udp sport 1001", Pkt{}));
  EXPECT_TRUE(drops("udp dport 1990-2010", Pkt{}));
  EXPECT_TRUE(drops("udp dport 2000-2000", Pkt{}));
  EXPECT_FALSE(drops("udp dport 2001-3000", Pkt{}));
  EXPECT_TRUE(drops("tcp sport != 80", Pkt{.l4proto = 6}));
  EXPECT_FALSE(drops("tcp sport != 1000", Pkt{.l4proto = 6}));
  // A later fragment has no transport header.
  EXPECT_FALSE(drops("udp dport 2000", Pkt{.frag_off = 100}));
  // ICMP: no ports.
  EXPECT_FALSE(drops("udp dport 2000", Pkt{.l4proto = 1}));
}

// ip protocol / length / dscp, meta l4proto and ether type, by name and number (the
// names nft prints), with ranges and negation; non-IPv4 packets match none of the IP
// fields nor their negations.
TEST_F(NftMatchTest, IpProtocolLengthDscpL4protoAndEtherType) {
  EXPECT_TRUE(drops("ip protocol udp", Pkt{}));
  EXPECT_TRUE(drops("ip protocol 17", Pkt{}));
  EXPECT_FALSE(drops("ip protocol tcp", Pkt{}));
  EXPECT_TRUE(drops("ip protocol icmp", Pkt{.l4proto = 1}));
  EXPECT_TRUE(drops("ip protocol != tcp", Pkt{}));
  EXPECT_TRUE(drops("meta l4proto tcp", Pkt{.l4proto = 6}));
  EXPECT_FALSE(drops("meta l4proto tcp", Pkt{}));
  // Pkt{}: 20 + 8 + 18 = 46 bytes of IPv4.
  EXPECT_TRUE(drops("ip length 46", Pkt{}));
  EXPECT_TRUE(drops("ip length 40-50", Pkt{}));
  EXPECT_FALSE(drops("ip length 47-50", Pkt{}));
  EXPECT_TRUE(drops("ip length != 60", Pkt{}));
  EXPECT_TRUE(drops("ip dscp ef", Pkt{.tos = 46 << 2}));
  EXPECT_TRUE(drops("ip dscp 0x2e", Pkt{.tos = 46 << 2 | 1}));  // ECN bits apart
  EXPECT_TRUE(drops("ip dscp cs1", Pkt{.tos = 8 << 2}));
  EXPECT_FALSE(drops("ip dscp af11", Pkt{.tos = 8 << 2}));
  EXPECT_TRUE(drops("ether type ip", Pkt{}));
  EXPECT_TRUE(drops("ether type arp", Pkt{.ethertype = 0x0806}));
  EXPECT_TRUE(drops("ether type 0x88cc", Pkt{.ethertype = 0x88cc}));
  EXPECT_TRUE(drops("ether type != ip", Pkt{.ethertype = 0x0806}));
  EXPECT_TRUE(drops("ether type vlan", Pkt{.vlan_tag = true}));
  for (const char* m : {"ip protocol udp", "ip protocol != tcp", "meta l4proto udp", "ip length != 1", "ip dscp != ef"})
    EXPECT_FALSE(drops(m, Pkt{.ethertype = 0x0806})) << m;
}

// Ethernet addresses, IPv6 addresses with prefixes, ip6 nexthdr, and the transport
// keys of IPv6 packets through a fragment header (a later fragment has no ports).
TEST_F(NftMatchTest, EtherAddressesIp6AddressesAndNexthdr) {
  EXPECT_TRUE(drops("ether saddr 22:22:22:22:22:22", Pkt{}));
  EXPECT_FALSE(drops("ether saddr 22:22:22:22:22:23", Pkt{}));
  EXPECT_TRUE(drops("ether daddr 11:11:11:11:11:11", Pkt{}));
  EXPECT_TRUE(drops("ether daddr != 11:11:11:11:11:12", Pkt{}));
  EXPECT_FALSE(drops("ether daddr != 11:11:11:11:11:11", Pkt{}));
  EXPECT_TRUE(drops("ether saddr 22:22:22:22:22:22", Pkt{.ethertype = 0x0806}));
  const Pkt v6{.ethertype = 0x86dd};
  EXPECT_TRUE(drops("ip6 saddr 2001:db8::1", v6));
  EXPECT_FALSE(drops("ip6 saddr 2001:db8::2", v6));
  EXPECT_TRUE(drops("ip6 saddr 2001:db8::/32", v6));
  EXPECT_FALSE(drops("ip6 saddr 2001:db9::/32", v6));
  EXPECT_TRUE(drops("ip6 daddr 2001:db8:1::/48", v6));
  EXPECT_FALSE(drops("ip6 daddr 2001:db8:2::/48", v6));
  EXPECT_TRUE(drops("ip6 daddr 2001:db8::/31", v6));  // a prefix that ends inside a byte
  EXPECT_TRUE(drops("ip6 daddr != ::1", v6));
  EXPECT_TRUE(drops("ip6 saddr ::/0", v6));
  EXPECT_TRUE(drops("ip6 nexthdr udp", v6));
  EXPECT_FALSE(drops("ip6 nexthdr tcp", v6));
  EXPECT_TRUE(drops("meta l4proto udp", v6));
  EXPECT_TRUE(drops("udp dport 2000", v6));
  EXPECT_TRUE(drops("tcp sport 1000", Pkt{.ethertype = 0x86dd, .l4proto = 6}));
  EXPECT_FALSE(drops("ip protocol udp", v6));
  EXPECT_FALSE(drops("ip saddr 0.0.0.0/0", v6));
  for (const char* m : {"ip6 saddr ::/0", "ip6 daddr != ::1", "ip6 nexthdr udp"})
    EXPECT_FALSE(drops(m, Pkt{})) << m;  // IPv4: no IPv6 header to read
  // A first fragment: nexthdr is the fragment header's, l4proto and ports the UDP header's.
  const Pkt first{.ethertype = 0x86dd, .frag_off = 1, .ip6_frag = true};
  EXPECT_TRUE(drops("ip6 nexthdr 44", first));
  EXPECT_TRUE(drops("meta l4proto udp", first));
  EXPECT_TRUE(drops("udp dport 2000", first));
  // A later fragment (offset 8 units): the protocol is known, the ports are not.
  const Pkt later{.ethertype = 0x86dd, .frag_off = 8 << 3, .ip6_frag = true};
  EXPECT_TRUE(drops("meta l4proto udp", later));
  EXPECT_FALSE(drops("udp dport 2000", later));
  EXPECT_FALSE(drops("udp dport != 2000", later));
  // Cut inside the IPv6 header: no address matches, nor its negation.
  EXPECT_FALSE(drops("ip6 saddr != ::1", Pkt{.ethertype = 0x86dd, .truncate_to = 30}));
}

TEST_F(NftMatchTest, TruncatedPacketsNeverMatchHeaders) {
  // Cut inside the IP header, inside the UDP ports, and to a bare Ethernet header.
  EXPECT_FALSE(drops("ip saddr 0.0.0.0/0", Pkt{.truncate_to = 30}));
  EXPECT_FALSE(drops("udp dport 2000", Pkt{.truncate_to = 36}));
  EXPECT_FALSE(drops("udp sport 1000", Pkt{.payload = 0, .truncate_to = 36}));  // IP total length says 28, 22 left
  EXPECT_FALSE(drops("meta protocol ip6", Pkt{.set_protocol = false, .truncate_to = 10}));
  EXPECT_TRUE(drops("meta mark 0", Pkt{.truncate_to = 1}));
}

TEST_F(NftMatchTest, HeadersInFragmentsAreRead) {
  // The linear part holds only the Ethernet header; IP and UDP sit in a page fragment.
  auto bytes = test::build_bytes(Pkt{.saddr = 0x01020304});
  ASSERT_EQ(run({"add", "rule", "netdev", "t", "c", "ip", "saddr", "1.2.3.4", "udp", "dport", "2000", "drop"}), 0);
  Packet* p = cpu.alloc();
  ASSERT_TRUE(p->append(bytes.data(), 14));
  ASSERT_TRUE(p->add_frag(bytes.data() + 14, static_cast<uint32_t>(bytes.size() - 14)));
  p->protocol = 0x0008;
  EXPECT_EQ(nf_hook_egress(foo, p, cpu), NfVerdict::DROP);
}

TEST_F(NftMatchTest, InBandVlanTagWithInnerProtocolIsSkipped) {
  // skb->protocol names IPv4 while the tag is still in the data: the IP header follows it.
  ASSERT_EQ(run({"add", "rule", "netdev", "t", "c", "ip", "saddr", "1.2.3.4", "udp", "dport", "2000", "drop"}), 0);
  Packet* p = test::make_packet(cpu, Pkt{.saddr = 0x01020304, .vlan_tag = true});
  p->protocol = 0x0008;
  EXPECT_EQ(nf_hook_egress(foo, p, cpu), NfVerdict::DROP);
}

TEST_F(NftMatchTest, AllMatchesOfARuleMustHold) {
  EXPECT_TRUE(drops("meta protocol ip ip saddr 10.0.0.1 udp dport 2000 meta mark 3", Pkt{.mark = 3}));
  EXPECT_FALSE(drops("meta protocol ip ip saddr 10.0.0.1 udp dport 2000 meta mark 3", Pkt{.mark = 4}));
}

TEST_F(NftMatchTest, FirstVerdictWinsCountersAndPolicy) {
  ASSERT_EQ(run({"add", "rule", "netdev", "t", "c", "meta", "mark", "1", "counter", "accept"}), 0);
  ASSERT_EQ(run({"add", "rule", "netdev", "t", "c", "counter"}), 0);  // counts, no verdict
  ASSERT_EQ(run({"add", "rule", "netdev", "t", "c", "ip", "saddr", "10.0.0.0/8", "counter", "drop"}), 0);
  ASSERT_EQ(run({"add", "chain", "netdev", "t", "c", "{ type filter hook egress device foo priority 0; policy drop; }"}), 0);
  const uint32_t len = test::build_bytes(Pkt{}).size();
  // mark 1: accepted by rule 1, never reaches rule 3.
  for (int i = 0; i < 3; ++i) {
    Packet* p = test::make_packet(cpu, Pkt{.mark = 1});
    ASSERT_EQ(nf_hook_egress(foo, p, cpu), NfVerdict::ACCEPT);
    cpu.free(p);
  }
  // 10.x source: dropped by rule 3.
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(nf_hook_egress(foo, test::make_packet(cpu, Pkt{}), cpu), NfVerdict::DROP);
  // Neither: the policy (drop).
  EXPECT_EQ(nf_hook_egress(foo, test::make_packet(cpu, Pkt{.saddr = 0x0b000001}), cpu), NfVerdict::DROP);
  EXPECT_EQ(nf_drops(), 3u);
  const std::string l = rs.list(true);
  EXPECT_NE(l.find("meta mark 0x00000001 counter packets 3 bytes " + std::to_string(3 * len) + " accept"),
            std::string::npos) << l;
  EXPECT_NE(l.find("\t\tcounter packets 3 bytes " + std::to_string(3 * len) + " # handle"), std::string::npos) << l;
  EXPECT_NE(l.find("ip saddr 10.0.0.0/8 counter packets 2 bytes " + std::to_string(2 * len) + " drop"),
            std::string::npos) << l;
  EXPECT_NE(l.find("policy drop;"), std::string::npos) << l;
}

TEST_F(NftMatchTest, CounterBeforeAMatchCountsEveryPacketThatReachesIt) {
  ASSERT_EQ(run({"add", "rule", "netdev", "t", "c", "counter", "meta", "mark", "5", "drop"}), 0);
  for (uint32_t m : {1u, 5u, 2u}) {
    Packet* p = test::make_packet(cpu, Pkt{.mark = m});
    if (nf_hook_egress(foo, p, cpu) == NfVerdict::ACCEPT) cpu.free(p);
  }
  EXPECT_NE(rs.list().find("counter packets 3 bytes"), std::string::npos) << rs.list();
  EXPECT_EQ(nf_drops(), 1u);
}

TEST_F(NftMatchTest, InsertPrependsAndDeleteByHandle) {
  uint64_t h = 0;
  NftRuleSpec accept_all;
  accept_all.verdict = NftRuleVerdict::ACCEPT;
  NftRuleSpec drop_all;
  drop_all.verdict = NftRuleVerdict::DROP;
  ASSERT_TRUE(rs.add_rule("t", "c", accept_all, false, &h).has_value());
  ASSERT_EQ(run({"insert", "rule", "netdev", "t", "c", "drop"}), 0);
  EXPECT_EQ(nf_hook_egress(foo, test::make_packet(cpu, Pkt{}), cpu), NfVerdict::DROP);
  // Delete the drop rule (handle h + 1) and the packet passes.
  ASSERT_EQ(run({"delete", "rule", "netdev", "t", "c", "handle", std::to_string(h + 1)}), 0);
  Packet* p = test::make_packet(cpu, Pkt{});
  EXPECT_EQ(nf_hook_egress(foo, p, cpu), NfVerdict::ACCEPT);
  cpu.free(p);
  // Replace the accept rule (handle h) by a drop rule in place; it gets a new handle.
  ASSERT_EQ(run({"replace", "rule", "netdev", "t", "c", "handle", std::to_string(h), "udp", "dport", "2000", "drop"}), 0);
  EXPECT_EQ(nf_hook_egress(foo, test::make_packet(cpu, Pkt{}), cpu), NfVerdict::DROP);
  EXPECT_NE(rs.list(true).find("udp dport 2000 drop # handle " + std::to_string(h + 2)), std::string::npos) << rs.list(true);
  EXPECT_EQ(test::nft(rs, devs, {"replace", "rule", "netdev", "t", "c", "handle", std::to_string(h), "drop"}).err,
            "nft: rule handle " + std::to_string(h) + " does not exist in chain 'c'\n");
}

TEST_F(NftMatchTest, IngressChainAndTwoChainsByPriority) {
  NfDeviceHooks& bar = devs.add("bar");
  ASSERT_EQ(run({"add", "chain", "netdev", "t", "in", "{ type filter hook ingress device bar priority 0; }"}), 0);
  ASSERT_EQ(run({"add", "rule", "netdev", "t", "in", "udp", "dport", "53", "drop"}), 0);
  EXPECT_EQ(nf_hook_ingress(bar, test::make_packet(cpu, Pkt{.dport = 53}), cpu), NfVerdict::DROP);
  Packet* p = test::make_packet(cpu, Pkt{.dport = 54});
  EXPECT_EQ(nf_hook_ingress(bar, p, cpu), NfVerdict::ACCEPT);
  EXPECT_EQ(nf_hook_egress(bar, p, cpu), NfVerdict::ACCEPT);  // nothing on bar's egress
  EXPECT_EQ(bar.egress.load(), nullptr);
  cpu.free(p);
  // Two egress chains on foo: the lower priority runs first; an accept there does not
  // skip the other chain (each hook decides independently, as in Linux).
  ASSERT_EQ(run({"add", "chain", "netdev", "t", "early", "{ type filter hook egress device foo priority -10; }"}), 0);
  ASSERT_EQ(run({"add", "rule", "netdev", "t", "early", "counter", "accept"}), 0);
  ASSERT_EQ(run({"add", "rule", "netdev", "t", "c", "meta", "mark", "9", "drop"}), 0);
  EXPECT_EQ(nf_hook_egress(foo, test::make_packet(cpu, Pkt{.mark = 9}), cpu), NfVerdict::DROP);
  EXPECT_NE(rs.list().find("counter packets 1 bytes"), std::string::npos);
  // Deleting the table detaches everything.
  ASSERT_EQ(run({"delete", "table", "netdev", "t"}), 0);
  EXPECT_EQ(foo.egress.load(), nullptr);
  EXPECT_EQ(bar.ingress.load(), nullptr);
}

}  // namespace
}  // namespace pktpath::nf
