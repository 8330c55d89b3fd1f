// The classifier registry and the kinds beyond cls_bpf (matchall, u32, flower): tables of
// hand-built Ethernet/IPv4/IPv6/VLAN frames against each kind (match or not, classid),
// the fast path's only_da, and one kind per pref.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "sched/cls_flower.h"
#include "sched/cls_matchall.h"
#include "sched/cls_u32.h"
#include "tc_fixture.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

using tc::Dir;

// A frame to build: Ethernet (optionally one 802.1Q tag, in-band or accelerated), then
// IPv4 or IPv6, then a TCP/UDP header with ports.
struct Frame {
  uint16_t ethertype = 0x0800;
  int vlan = -1;          // >= 0: a tag with this id
  bool vlan_accel = false;  // the tag in Packet::vlan_tci instead of the frame
  uint8_t proto = 17;
  const char* src = "192.168.1.2";
  const char* dst = "10.1.2.3";
  uint16_t sport = 5000, dport = 80;
  uint8_t tos = 0;
  uint8_t smac[6] = {0x02, 0, 0, 0, 0, 0x01};
  uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x02};
};

class ClsTest : public TcFixture {
 protected:
  Packet* build(const Frame& f) {
    Packet* p = cpu.alloc();
    EXPECT_NE(p, nullptr);
    uint8_t* d = p->put(f.ethertype == 0x86dd ? 14 + 4 + 40 + 8 : 14 + 4 + 20 + 8);
    std::memset(d, 0, p->len);
    std::memcpy(d, f.dmac, 6);
    std::memcpy(d + 6, f.smac, 6);
    size_t o = 12;
    if (f.vlan >= 0 && !f.vlan_accel) {
      d[o] = 0x81, d[o + 1] = 0x00, d[o + 2] = static_cast<uint8_t>(f.vlan >> 8), d[o + 3] = f.vlan & 0xff;
      o += 4;
    }
    d[o] = f.ethertype >> 8, d[o + 1] = f.ethertype & 0xff;
    o += 2;
    size_t l4;
    if (f.ethertype == 0x86dd) {
      d[o] = static_cast<uint8_t>(0x60 | f.tos >> 4);
      d[o + 1] = static_cast<uint8_t>(f.tos << 4);
      d[o + 5] = 8;
      d[o + 6] = f.proto;
      d[o + 7] = 64;
      inet_pton(AF_INET6, f.src, d + o + 8);
      inet_pton(AF_INET6, f.dst, d + o + 24);
      l4 = o + 40;
    } else {
      d[o] = 0x45;
      d[o + 1] = f.tos;
      d[o + 3] = 28;
      d[o + 8] = 64;
      d[o + 9] = f.proto;
      inet_pton(AF_INET, f.src, d + o + 12);
      inet_pton(AF_INET, f.dst, d + o + 16);
      l4 = o + 20;
    }
    d[l4] = f.sport >> 8, d[l4 + 1] = f.sport & 0xff, d[l4 + 2] = f.dport >> 8, d[l4 + 3] = f.dport & 0xff;
    p->protocol = htons(f.vlan >= 0 && !f.vlan_accel ? 0x8100 : f.ethertype);
    if (f.vlan >= 0 && f.vlan_accel) {
      p->vlan_present = true;
      p->vlan_proto = htons(0x8100);
      p->vlan_tci = static_cast<uint16_t>(f.vlan);
    }
    return p;
  }
  // Runs the device's egress list on the frame: the verdict and the classid.
  int classify(NetDevice* d, const Frame& f, uint32_t* classid) {
    const tc::Miniq* mq = d->tc_egress().load(std::memory_order_acquire);
    EXPECT_NE(mq, nullptr);
    Packet* p = build(f);
    tc::TcResult res;
    const int v = tc::tcf_classify(tc::TcContext{cpu, false}, p, *mq, res);
    *classid = res.classid;
    cpu.free(p);
    return v;
  }
  void add(NetDevice* d, const tc::FilterSpec& s) {
      ASSERT_TRUE(ok(tc::filter_add(*d, Dir::Egress, s, false)));
  }
  template <class T>
  static T with(uint32_t pref, uint16_t protocol, uint32_t classid) {
    T s;
    s.pref = pref;
    s.protocol = protocol;
    s.classid = classid;
    s.classid_set = classid != 0;
    return s;
  }
  static tc::ActionList drop() { return {std::make_shared<tc::GactAction>(tc::TC_ACT_SHOT)}; }
};

// The registry lists every kind; a spec of any kind goes through filter_add.
TEST_F(ClsTest, RegistryHasTheKinds) {
  for (const char* k : {"bpf", "matchall", "u32", "flower"}) EXPECT_NE(tc::tcf_proto_lookup_ops(k), nullptr) << k;
  EXPECT_EQ(tc::tcf_proto_lookup_ops("fw"), nullptr);
  EXPECT_EQ(tc::tcf_proto_kinds(), "bpf, flower, matchall, u32");
}

// matchall: every packet of its protocol; classid to tc_index, actions decide.
TEST_F(ClsTest, MatchallClassidProtocolAndDrop) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  add(d, with<tc::MatchallSpec>(1, 0x86dd, 0x10007));  // IPv6 only
  add(d, with<tc::MatchallSpec>(2, tc::kEthPAll, 0x10009));
  uint32_t c = 0;
  Frame v6;
  v6.ethertype = 0x86dd;
  v6.src = "2001:db8::1";
  v6.dst = "2001:db8::2";
  EXPECT_EQ(classify(d, v6, &c), tc::TC_ACT_OK);
  EXPECT_EQ(c, 0x10007u);
  EXPECT_EQ(classify(d, Frame{}, &c), tc::TC_ACT_OK);
  EXPECT_EQ(c, 0x10009u);
  // Through the hook: tc_index is the minor; a drop action is counted under TC_EGRESS.
  tc::MatchallSpec dropper = with<tc::MatchallSpec>(0, tc::kEthPAll, 0);
  dropper.actions = drop();
  NetDevice* d2 = make("bar", "dummy");
  clsact(d2);
  add(d2, dropper);
  EXPECT_EQ(send(d2, 0), NET_XMIT_DROP);
  EXPECT_EQ(send(d2, 0), NET_XMIT_DROP);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 2u);
  EXPECT_EQ(all_drops(), 2u);
  EXPECT_EQ(tc::clsact_stats(*d2, Dir::Egress).drops, 2u);
  EXPECT_EQ(outstanding(), 0u);
}

// Only a lone direct-action cls_bpf filter for every protocol takes the walk-free path.
TEST_F(ClsTest, OnlyDaIsForALoneBpfFilter) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Egress, spec(ret_prog(0), true, 5));
  EXPECT_NE(d->tc_egress().load()->only_da, nullptr);
  add(d, with<tc::MatchallSpec>(6, tc::kEthPAll, 0));
  EXPECT_EQ(d->tc_egress().load()->only_da, nullptr);
  EXPECT_EQ(d->tc_egress().load()->filters.size(), 2u);
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Egress, 5, 0)));
  EXPECT_EQ(d->tc_egress().load()->only_da, nullptr);  // matchall alone: the walk
  EXPECT_EQ(send(d, 0), NET_XMIT_SUCCESS);
}

// One kind and protocol per pref, as tc refuses to mix them in a tcf_proto.
TEST_F(ClsTest, OneKindPerPref) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  add(d, with<tc::MatchallSpec>(3, tc::kEthPAll, 0));
  std::string err;
  err = failure_of(tc::filter_add(*d, Dir::Egress, spec(ret_prog(0), true, 3), false));
  EXPECT_NE(err.find("do not match"), std::string::npos) << err;
  EXPECT_FALSE(tc::filter_add(*d, Dir::Egress, with<tc::MatchallSpec>(3, 0x0800, 0), false));
  EXPECT_TRUE(ok(tc::filter_add(*d, Dir::Egress, with<tc::MatchallSpec>(3, tc::kEthPAll, 0), false)));
}

tc::U32Key key(uint32_t val, uint32_t mask, int32_t off) { return {htonl(val), htonl(mask), off}; }

// A terminal u32 knode at `pref` matching IPv4 destination `dst`, classid 1:1.
tc::U32Spec u32_node(uint32_t pref, uint32_t dst) {
  tc::U32Spec s;
  s.pref = pref;
  s.protocol = 0x0800;
  s.classid = 0x10001;
  s.classid_set = true;
  s.keys = {key(dst, 0xffffffff, 16)};
  s.terminal = true;
  return s;
}

// u32: keys ANDed, offsets from the network header (past an in-band VLAN tag too), the
// first matching node's classid; handles 800::800, 800::801, ...
TEST_F(ClsTest, U32Table) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  // pref 1: dst 10.0.0.0/8 and UDP dport 80 -> 1:1; pref 1 again: src 192.168.0.0/16 -> 1:2;
  // pref 2: TCP (protocol 6) -> 1:3; pref 3: a key past the end never matches.
  tc::U32Spec a = with<tc::U32Spec>(1, 0x0800, 0x10001);
  a.keys = {key(0x0a000000, 0xff000000, 16), key(17 << 16, 0x00ff0000, 8), key(80, 0xffff, 20)};
  a.terminal = true;
  tc::U32Spec b = with<tc::U32Spec>(1, 0x0800, 0x10002);
  b.keys = {key(0xc0a80000, 0xffff0000, 12)};
  b.terminal = true;
  tc::U32Spec c = with<tc::U32Spec>(2, 0x0800, 0x10003);
  c.keys = {key(6 << 16, 0x00ff0000, 8)};
  c.terminal = true;
  tc::U32Spec e = with<tc::U32Spec>(3, 0x0800, 0x10004);
  e.keys = {key(0, 0, 4000)};
  e.terminal = true;
  uint32_t pref, handle;
  for (const tc::U32Spec* s : {&a, &b, &c, &e})
    ASSERT_TRUE(ok(tc::filter_add(*d, Dir::Egress, *s, false, &pref, &handle)));
  std::vector<uint32_t> handles;
  tc::filter_walk_all(*d, Dir::Egress, [&](const tc::TcFilter& f) { handles.push_back(f.handle()); });
  // Prefs 2 and 3 get the block's next root tables, 801: and 802:.
  EXPECT_EQ(handles, (std::vector<uint32_t>{0x80000800, 0x80000801, 0x80100800, 0x80200800}));

  struct Row {
    const char* what;
    Frame f;
    int verdict;
    uint32_t classid;
  };
  Frame tcp;
  tcp.proto = 6;
  tcp.src = "172.16.0.1";
  Frame other;
  other.src = "172.16.0.1";
  other.dst = "11.0.0.1";
  Frame port81;
  port81.dport = 81;
  Frame vlan;  // an in-band tag: the network header is 4 bytes further
  vlan.vlan = 5;
  Frame v6;
  v6.ethertype = 0x86dd;
  v6.src = "2001:db8::1";
  v6.dst = "2001:db8::2";
  const Row rows[] = {
      {"udp to 10/8 port 80", Frame{}, tc::TC_ACT_OK, 0x10001},
      {"udp to 10/8 port 81: falls to the src key", port81, tc::TC_ACT_OK, 0x10002},
      {"tcp from 172.16", tcp, tc::TC_ACT_OK, 0x10003},
      {"nothing matches", other, tc::TC_ACT_UNSPEC, 0},
      {"ipv6: protocol ip filters skip it", v6, tc::TC_ACT_UNSPEC, 0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    uint32_t cl = 0;
    EXPECT_EQ(classify(d, r.f, &cl), r.verdict);
    EXPECT_EQ(cl, r.classid);
  }
  // An in-band VLAN frame has protocol 802.1Q: a protocol all u32 sees past the tag.
  NetDevice* d2 = make("bar", "dummy");
  clsact(d2);
  tc::U32Spec all = with<tc::U32Spec>(1, tc::kEthPAll, 0x20001);
  all.keys = {key(0x0a000000, 0xff000000, 16)};
  all.terminal = true;
  add(d2, all);
  uint32_t cl = 0;
  EXPECT_EQ(classify(d2, vlan, &cl), tc::TC_ACT_OK);
  EXPECT_EQ(cl, 0x20001u);
  // A node without classid or action (not terminal) never matches.
  NetDevice* d3 = make("baz", "dummy");
  clsact(d3);
  tc::U32Spec nt = with<tc::U32Spec>(1, tc::kEthPAll, 0);
  add(d3, nt);
  EXPECT_EQ(classify(d3, Frame{}, &cl), tc::TC_ACT_UNSPEC);
  EXPECT_EQ(outstanding(), 0u);
}

// A knode's handle names its table; a table must exist before nodes go in it.
TEST_F(ClsTest, U32RefusesNodesOfMissingTables) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  tc::U32Spec s = with<tc::U32Spec>(1, 0x0800, 0x10001);
  s.handle = 0x80101800;  // 801:1:800 without "ht 801:1:": the root's node id with another table
  s.terminal = true;
  std::string err;
  err = failure_of(tc::filter_add(*d, Dir::Egress, s, false));
  EXPECT_NE(err.find("mismatch"), std::string::npos) << err;
  s.handle = 0;
  s.htid = 0x80101000;  // ht 801:1:
  err = failure_of(tc::filter_add(*d, Dir::Egress, s, false));
  EXPECT_NE(err.find("not found (801:)"), std::string::npos) << err;
}

// The common hashed form: table 2: of 256 buckets; a root node for 10.0.0.0/24 links to it
// hashing the destination's last byte; nodes in buckets 1 and 2 pick the class; a
// destination whose bucket has no match falls back to the linking node's own classid
// (the POP to check_terminal).
TEST_F(ClsTest, U32HashTableLinkedFromTheRoot) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  tc::U32Spec table = with<tc::U32Spec>(5, 0x0800, 0);
  table.handle = 0x00200000;  // 2:
  table.divisor = 256;
  add(d, table);
  tc::U32Spec link = with<tc::U32Spec>(5, 0x0800, 0x10009);
  link.keys = {key(0x0a000000, 0xffffff00, 16)};
  link.terminal = true;
  link.link = 0x00200000;
  link.hmask = htonl(0xff);
  link.hoff = 16;
  add(d, link);
  for (uint32_t last : {1u, 2u}) {
    tc::U32Spec n = with<tc::U32Spec>(5, 0x0800, 0x10000 + last);
    n.htid = 0x00200000 | last << 12;  // ht 2:LAST:
    n.keys = {key(0x0a000000 | last, 0xffffffff, 16)};
    n.terminal = true;
    add(d, n);
  }
  std::vector<uint32_t> handles;
  tc::filter_walk_all(*d, Dir::Egress, [&](const tc::TcFilter& f) { handles.push_back(f.handle()); });
  EXPECT_EQ(handles, (std::vector<uint32_t>{0x00200000, 0x00201800, 0x00202800, 0x80000800}));

  struct Row {
    const char* dst;
    int verdict;
    uint32_t classid;
  };
  const Row rows[] = {{"10.0.0.1", tc::TC_ACT_OK, 0x10001},
                      {"10.0.0.2", tc::TC_ACT_OK, 0x10002},
                      {"10.0.0.3", tc::TC_ACT_OK, 0x10009},  // empty bucket: the linking node's class
                      {"10.0.1.1", tc::TC_ACT_UNSPEC, 0}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.dst);
    Frame f;
    f.dst = r.dst;
    uint32_t cl = 0;
    EXPECT_EQ(classify(d, f, &cl), r.verdict);
    EXPECT_EQ(cl, r.classid);
  }
  // rcnt / rhit per node: the root node ran 4 times and ended 1 (its own class); each
  // bucket node ran once and matched once.
  std::vector<std::pair<uint64_t, uint64_t>> counts;
  tc::filter_walk_all(*d, Dir::Egress, [&](const tc::TcFilter& f) {
    const auto st = f.stats.sum();
    counts.emplace_back(st.packets, st.matched);
  });
  EXPECT_EQ(counts, (std::vector<std::pair<uint64_t, uint64_t>>{{0, 0}, {1, 1}, {1, 1}, {4, 1}}));
  EXPECT_EQ(outstanding(), 0u);
}

// Links that loop end at TC_U32_MAXDEPTH without a verdict; what u32_change and
// u32_delete refuse.
TEST_F(ClsTest, U32LinksLoopsAndDeletes) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  std::string err;
  tc::U32Spec table = with<tc::U32Spec>(1, tc::kEthPAll, 0);
  table.handle = 0x00100000;  // 1:
  table.divisor = 1;
  add(d, table);
  EXPECT_FALSE(tc::filter_add(*d, Dir::Egress, table, false));  // the same table again
  tc::U32Spec bad = with<tc::U32Spec>(1, tc::kEthPAll, 0);
  bad.htid = 0x00101000;  // bucket 1 of a one-bucket table
  bad.terminal = true;
  err = failure_of(tc::filter_add(*d, Dir::Egress, bad, false));
  EXPECT_NE(err.find("buckets exceed"), std::string::npos) << err;
  bad.htid = 0;
  bad.link = 0x00300000;
  err = failure_of(tc::filter_add(*d, Dir::Egress, bad, false));
  EXPECT_NE(err.find("Link hash table not found"), std::string::npos) << err;
  bad.link = tc::kU32RootHt;
  err = failure_of(tc::filter_add(*d, Dir::Egress, bad, false));
  EXPECT_NE(err.find("root"), std::string::npos) << err;
  // 800: -> 1: and 1: -> 1: (itself): a loop.
  tc::U32Spec in_root = with<tc::U32Spec>(1, tc::kEthPAll, 0);
  in_root.keys = {key(0, 0, 0)};
  in_root.link = 0x00100000;
  add(d, in_root);
  tc::U32Spec self = in_root;
  self.htid = 0x00100000;
  add(d, self);
  Frame f;
  uint32_t cl = 0;
  EXPECT_EQ(classify(d, f, &cl), tc::TC_ACT_UNSPEC);
  uint64_t self_runs = 0;
  tc::filter_walk_all(*d, Dir::Egress, [&](const tc::TcFilter& fl) {
    if (fl.handle() == 0x00100800) self_runs = fl.stats.sum().packets;
  });
  EXPECT_EQ(self_runs, tc::kU32MaxDepth);  // pushed by the root node, then by itself up to depth 8
  // 1: is linked to: refused; its linking nodes go first. With the last knode gone the
  // qdisc's only u32 pref goes whole, table 1: with it (u32_delete's *last).
  err = failure_of(tc::filter_del(*d, Dir::Egress, 1, 0x00100000));
  EXPECT_NE(err.find("in-use"), std::string::npos) << err;
  err = failure_of(tc::filter_del(*d, Dir::Egress, 1, tc::kU32RootHt));
  EXPECT_NE(err.find("root"), std::string::npos) << err;
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Egress, 1, 0x80000800)));
  EXPECT_FALSE(tc::filter_del(*d, Dir::Egress, 1, 0x00100000));  // 1::800 still links to 1:
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Egress, 1, 0x00100800)));
  size_t left = 0;
  tc::filter_walk_all(*d, Dir::Egress, [&](const tc::TcFilter&) { ++left; });
  EXPECT_EQ(left, 0u);
  EXPECT_FALSE(tc::filter_del(*d, Dir::Egress, 1, 0x00100000));
}

// flower: dissect once, compare under the mask; port ranges apart.
TEST_F(ClsTest, FlowerTable) {
  struct Row {
    const char* what;
    Frame f;
    bool match[6];
  };
  NetDevice* devs[6];
  tc::FlowerSpec specs[6];
  // 0: ip_proto tcp dst_port 80
  specs[0].protocol = 0x0800;
  specs[0].key.ip_proto = 6, specs[0].mask.ip_proto = 0xff;
  specs[0].key.dst_port = htons(80), specs[0].mask.dst_port = 0xffff;
  // 1: udp src_port 1000-2000
  specs[1].protocol = 0x0800;
  specs[1].key.ip_proto = 17, specs[1].mask.ip_proto = 0xff;
  specs[1].src_range = true, specs[1].src_min = 1000, specs[1].src_max = 2000;
  // 2: dst_ip 10.0.0.0/8, ip_tos 0x10/0xfc
  specs[2].protocol = 0x0800;
  inet_pton(AF_INET, "10.0.0.0", specs[2].key.dst_ip);
  specs[2].mask.dst_ip[0] = 0xff;
  specs[2].key.tos = 0x10, specs[2].mask.tos = 0xfc;
  // 3: IPv6 src_ip 2001:db8::/32
  specs[3].protocol = 0x86dd;
  inet_pton(AF_INET6, "2001:db8::", specs[3].key.src_ip);
  std::memset(specs[3].mask.src_ip, 0xff, 4);
  // 4: protocol 802.1Q vlan_id 5
  specs[4].protocol = 0x8100;
  specs[4].key.vlan_id = 5, specs[4].mask.vlan_id = 0xfff;
  // 5: dst_mac 02:00:00:00:00:02, any protocol
  specs[5].key.dst_mac[0] = 2, specs[5].key.dst_mac[5] = 2;
  std::memset(specs[5].mask.dst_mac, 0xff, 6);
  for (int i = 0; i < 6; ++i) {
    if (specs[i].protocol != tc::kEthPAll && specs[i].protocol != 0x8100) {
      specs[i].key.n_proto = htons(specs[i].protocol);
      specs[i].mask.n_proto = 0xffff;
    }
    specs[i].classid = 0x10000 | (i + 1);
    specs[i].classid_set = true;
    devs[i] = make("fl" + std::to_string(i), "dummy");
    clsact(devs[i]);
    add(devs[i], specs[i]);
  }
  Frame tcp80;
  tcp80.proto = 6;
  Frame udp1500;
  udp1500.sport = 1500;
  udp1500.dst = "11.0.0.1";
  Frame tos;
  tos.tos = 0x13;  // ECN bits ignored by the mask
  Frame tos_no;
  tos_no.tos = 0x20;
  Frame v6;
  v6.ethertype = 0x86dd;
  v6.src = "2001:db8:1::5";
  v6.dst = "2001:db9::1";
  v6.proto = 6;
  Frame v6_no = v6;
  v6_no.src = "2001:db9::5";
  Frame vlan5;
  vlan5.vlan = 5;
  Frame vlan5_accel;
  vlan5_accel.vlan = 5;
  vlan5_accel.vlan_accel = true;
  Frame vlan6;
  vlan6.vlan = 6;
  Frame othermac;
  othermac.dmac[5] = 3;
  othermac.dst = "11.0.0.1";
  const Row rows[] = {
      //                           tcp80  udp-range dst/tos v6-src vlan5 dmac
      {"tcp to 10.1.2.3:80", tcp80, {true, false, false, false, false, true}},
      {"udp 1500 to 11.0.0.1", udp1500, {false, true, false, false, false, true}},
      {"udp tos 0x13", tos, {false, false, true, false, false, true}},
      {"udp tos 0x20", tos_no, {false, false, false, false, false, true}},
      {"ipv6 tcp from 2001:db8:1::5 port 80", v6, {false, false, false, true, false, true}},
      {"ipv6 from 2001:db9::5", v6_no, {false, false, false, false, false, true}},
      {"vlan 5 in-band", vlan5, {false, false, false, false, true, true}},
      {"vlan 5 accelerated", vlan5_accel, {false, false, false, false, true, true}},
      {"vlan 6", vlan6, {false, false, false, false, false, true}},
      {"other dst mac", othermac, {false, false, false, false, false, false}},
  };
  for (const Row& r : rows)
    for (int i = 0; i < 6; ++i) {
      SCOPED_TRACE(std::string(r.what) + " / filter " + std::to_string(i));
      uint32_t cl = 0;
      EXPECT_EQ(classify(devs[i], r.f, &cl), r.match[i] ? tc::TC_ACT_OK : tc::TC_ACT_UNSPEC);
      EXPECT_EQ(cl, r.match[i] ? 0x10000u | (i + 1) : 0u);
    }
  EXPECT_EQ(outstanding(), 0u);
}

}  // namespace
}  // namespace pktpath::testing

namespace pktpath::testing {
namespace {

// A linear model of fl_classify for the differential test: masks in the order they were
// made, each holding its nodes in the order they came; the first node whose masked key
// and ranges match decides (of two nodes with one key, which a replace may make, either).
struct FlowerModel {
  struct Node {
    tc::FlowerSpec spec;
    uint32_t handle;
  };
  struct Mask {
    tc::FlowerKey bits;
    bool sr, dr;
    std::vector<Node> nodes;
  };
  std::vector<Mask> masks;

  static bool same(const tc::FlowerKey& a, const tc::FlowerKey& b) { return std::memcmp(&a, &b, sizeof a) == 0; }
  static tc::FlowerKey and_of(const tc::FlowerKey& k, const tc::FlowerKey& m) {
    tc::FlowerKey r;
    auto* o = reinterpret_cast<uint8_t*>(&r);
    for (size_t i = 0; i < sizeof r; ++i)
      o[i] = reinterpret_cast<const uint8_t*>(&k)[i] & reinterpret_cast<const uint8_t*>(&m)[i];
    return r;
  }
  Mask* mask_of(const tc::FlowerSpec& s) {
    for (Mask& m : masks)
      if (same(m.bits, s.mask) && m.sr == s.src_range && m.dr == s.dst_range) return &m;
    return nullptr;
  }
  // False when the kernel would refuse it (the same key, ranges and mask are there);
  // `unique` false lets it in all the same (fl_ht_insert_unique when overwriting).
  bool add(const tc::FlowerSpec& s, uint32_t handle, bool unique = true) {
    tc::FlowerSpec c = s;
    c.key = and_of(s.key, s.mask);
    Mask* m = mask_of(c);
    if (m) {
      for (const Node& n : m->nodes)
        if (unique)
        if (same(n.spec.key, c.key) && n.spec.src_min == c.src_min && n.spec.src_max == c.src_max &&
            n.spec.dst_min == c.dst_min && n.spec.dst_max == c.dst_max)
          return false;
    } else {
      masks.push_back({c.mask, c.src_range, c.dst_range, {}});
      m = &masks.back();
    }
    m->nodes.push_back({c, handle});
    return true;
  }
  // fl_change with an old node: the new one joins its mask (made at the end if new), then
  // the old one leaves (its mask with it when empty).
  void replace(const tc::FlowerSpec& s, uint32_t handle) {
    for (Mask& m : masks)
      for (Node& n : m.nodes)
        if (n.handle == handle) n.handle = 0;  // the old node, found again below
    add(s, handle, false);
    del(0);
  }
  void del(uint32_t handle) {
    for (size_t i = 0; i < masks.size(); ++i) {
      auto& v = masks[i].nodes;
      for (size_t j = 0; j < v.size(); ++j)
        if (v[j].handle == handle) {
          v.erase(v.begin() + static_cast<long>(j));
          if (v.empty()) masks.erase(masks.begin() + static_cast<long>(i));
          return;
        }
    }
  }
  // The classids a lookup may give: the first matching node's, and of a hashed mask any
  // other node with the same key; {0} for none.
  std::vector<uint32_t> classify(const tc::FlowerKey& k) const {
    for (const Mask& m : masks) {
      std::vector<uint32_t> found;
      for (const Node& n : m.nodes) {
        if (!same(and_of(k, m.bits), n.spec.key)) continue;
        const uint16_t sp = ntohs(k.src_port), dp = ntohs(k.dst_port);
        if (n.spec.src_range && (sp < n.spec.src_min || sp > n.spec.src_max)) continue;
        if (n.spec.dst_range && (dp < n.spec.dst_min || dp > n.spec.dst_max)) continue;
        found.push_back(n.spec.classid);
        if (m.sr || m.dr) break;
      }
      if (!found.empty()) return found;
    }
    return {0};
  }
};

// Random flower nodes of six masks (exact, prefix, ports, port ranges) added to, replaced
// in and deleted from one pref, against the linear model: every packet gets the node the
// kernel's per-mask lookup would give, duplicates are refused as the kernel does, and a
// replace keeps the masks' order (a new mask goes last) and its node.
TEST_F(ClsTest, FlowerMaskTablesAgainstLinearModel) {
  NetDevice* d = make("flh", "dummy");
  clsact(d);
  std::mt19937 rng(7);
  auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  const char* dsts[] = {"10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2", "10.1.0.1", "11.0.0.1"};
  const char* srcs[] = {"192.168.1.2", "192.168.2.2", "172.16.0.1"};
  const uint16_t ports[] = {80, 443, 53, 1000, 1001, 2000};
  auto random_spec = [&](uint32_t classid) {
    tc::FlowerSpec s;
    s.pref = 10;
    s.protocol = 0x0800;
    s.key.n_proto = htons(0x0800), s.mask.n_proto = 0xffff;
    s.classid = classid, s.classid_set = true;
    switch (pick(6)) {
      case 0:  // dst_ip /32
        inet_pton(AF_INET, dsts[pick(6)], s.key.dst_ip);
        std::memset(s.mask.dst_ip, 0xff, 4);
        break;
      case 1:  // dst_ip /24
        inet_pton(AF_INET, dsts[pick(6)], s.key.dst_ip);
        std::memset(s.mask.dst_ip, 0xff, 3);
        break;
      case 2:  // ip_proto + dst_port
        s.key.ip_proto = pick(2) ? 6 : 17, s.mask.ip_proto = 0xff;
        s.key.dst_port = htons(ports[pick(6)]), s.mask.dst_port = 0xffff;
        break;
      case 3:  // src_ip /16 + ip_proto
        inet_pton(AF_INET, srcs[pick(3)], s.key.src_ip);
        std::memset(s.mask.src_ip, 0xff, 2);
        s.key.ip_proto = pick(2) ? 6 : 17, s.mask.ip_proto = 0xff;
        break;
      case 4: {  // ip_proto + dst_port range
        s.key.ip_proto = pick(2) ? 6 : 17, s.mask.ip_proto = 0xff;
        s.dst_range = true;
        s.dst_min = static_cast<uint16_t>(pick(1500));
        s.dst_max = static_cast<uint16_t>(s.dst_min + pick(1500));
        break;
      }
      default:  // tos
        s.key.tos = static_cast<uint8_t>(pick(4) << 2), s.mask.tos = 0xfc;
        break;
    }
    return s;
  };
  FlowerModel model;
  std::vector<uint32_t> live;  // handles
  auto check = [&](int round) {
    for (int i = 0; i < 60; ++i) {
      Frame f;
      f.dst = dsts[pick(6)];
      f.src = srcs[pick(3)];
      f.proto = pick(2) ? 6 : 17;
      f.dport = ports[pick(6)];
      f.tos = static_cast<uint8_t>(pick(4) << 2 | pick(4));
      Packet* p = build(f);
      tc::FlowerKey k;
      tc::flower_dissect(p, k);
      cpu.free(p);
      const std::vector<uint32_t> want = model.classify(k);
      uint32_t cl = 0;
      SCOPED_TRACE("round " + std::to_string(round) + " frame " + std::to_string(i));
      EXPECT_EQ(classify(d, f, &cl), want[0] ? tc::TC_ACT_OK : tc::TC_ACT_UNSPEC);
      EXPECT_NE(std::find(want.begin(), want.end(), cl), want.end()) << cl;
    }
  };
  uint32_t next_class = 1, refused = 0, replaced = 0;
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 8; ++i) {
      tc::FlowerSpec s = random_spec(0x10000 | next_class);
      const uint32_t handle = next_class++;
      s.handle = handle;
      const Status st = tc::filter_add(*d, Dir::Egress, s, false);
      ASSERT_EQ(st.has_value(), model.add(s, handle)) << (st ? "" : st.error().msg);
      if (st) {
        live.push_back(handle);
      } else {
        ++refused;
        EXPECT_NE(st.error().msg.find("File exists"), std::string::npos) << st.error().msg;
      }
    }
    for (int i = 0; i < 2 && !live.empty(); ++i) {
      const uint32_t handle = live[pick(static_cast<uint32_t>(live.size()))];
      tc::FlowerSpec s = random_spec(0x10000 | next_class++);
      s.handle = handle;
      std::string err;
      ASSERT_TRUE(ok(tc::filter_add(*d, Dir::Egress, s, true)));
      model.replace(s, handle);
      ++replaced;
    }
    for (int i = 0; i < 3 && !live.empty(); ++i) {
      const size_t at = pick(static_cast<uint32_t>(live.size()));
      std::string err;
      ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Egress, 10, live[at])));
      model.del(live[at]);
      live.erase(live.begin() + static_cast<long>(at));
    }
    check(round);
  }
  EXPECT_GT(refused, 0u);  // the pools are small: duplicates happen
  EXPECT_GT(replaced, 50u);
  EXPECT_GT(live.size(), 20u);
  EXPECT_EQ(outstanding(), 0u);
}

// Many u32 prefs: adding one binds only its own pref's tables; the others' bound objects
// run on unchanged (a rebuild of every pref per add made 2,000 prefs take over 30 s).
// Table ids are the qdisc's, as tc_u_common numbers them: the first pref's root is 800:,
// a later pref's the next id (gen_new_htid, cyclic), tables made with divisor too; a
// pref's ids go with it. Another pref's table cannot be named.
TEST_F(ClsTest, U32TableIdsAreNumberedAcrossTheQdisc) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  auto handles = [&](uint32_t pref) {
    std::vector<uint32_t> v;
    tc::filter_walk_all(*d, Dir::Egress, [&](const tc::TcFilter& f) {
      if (f.pref() == pref) v.push_back(f.handle());
    });
    return v;
  };
  add(d, u32_node(5, 0x0a000001));
  add(d, u32_node(6, 0x0a000002));
  EXPECT_EQ(handles(5), std::vector<uint32_t>{0x80000800});
  EXPECT_EQ(handles(6), std::vector<uint32_t>{0x80100800});
  tc::U32Spec table = with<tc::U32Spec>(6, 0x0800, 0);
  table.divisor = 4;
  add(d, table);
  add(d, table);
  // Newest table first, then the root's knode.
  EXPECT_EQ(handles(6), (std::vector<uint32_t>{0x80300000, 0x80200000, 0x80100800}));
  tc::U32Spec cross = u32_node(6, 0x0a000003);
  cross.htid = tc::kU32RootHt;  // ht 800:: is pref 5's root
  std::string err = failure_of(tc::filter_add(*d, Dir::Egress, cross, false));
  EXPECT_NE(err.find("belongs to pref 5"), std::string::npos) << err;
  cross.htid = 0;
  cross.link = tc::kU32RootHt;
  err = failure_of(tc::filter_add(*d, Dir::Egress, cross, false));
  EXPECT_NE(err.find("Not linking to root node"), std::string::npos) << err;
  tc::U32Spec taken = with<tc::U32Spec>(5, 0x0800, 0);
  taken.divisor = 2;
  taken.handle = 0x80200000;  // pref 6's
  err = failure_of(tc::filter_add(*d, Dir::Egress, taken, false));
  EXPECT_NE(err.find("exists"), std::string::npos) << err;
  // Pref 6 goes: its ids are free; the cursor moves on (804:), as idr_alloc_cyclic does.
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Egress, 6, 0)));
  add(d, u32_node(7, 0x0a000004));
  EXPECT_EQ(handles(7), std::vector<uint32_t>{0x80400800});
  Frame f;
  f.dst = "10.0.0.4";
  uint32_t cl = 0;
  EXPECT_EQ(classify(d, f, &cl), tc::TC_ACT_OK);
  EXPECT_EQ(cl, 0x10001u);
}

// The kernel keeps one tc_u_common per qdisc: clsact's ingress and egress number their
// tables together; a pref whose last node goes stays (its root table) while the qdisc has
// other u32 prefs or knodes (u32_delete's *last); with the last pref gone the ids start
// again at 800:.
TEST_F(ClsTest, U32TableIdsAreTheQdiscs) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  auto handles = [&](Dir dir, uint32_t pref) {
    std::vector<uint32_t> v;
    tc::filter_walk_all(*d, dir, [&](const tc::TcFilter& f) {
      if (f.pref() == pref) v.push_back(f.handle());
    });
    return v;
  };
  auto add_to = [&](Dir dir, const tc::FilterSpec& s) { ASSERT_TRUE(ok(tc::filter_add(*d, dir, s, false))); };
  add_to(Dir::Ingress, u32_node(5, 0x0a000001));
  add_to(Dir::Egress, u32_node(6, 0x0a000002));
  EXPECT_EQ(handles(Dir::Ingress, 5), std::vector<uint32_t>{0x80000800});
  EXPECT_EQ(handles(Dir::Egress, 6), std::vector<uint32_t>{0x80100800});  // 801:, after ingress's 800:
  tc::U32Spec table = with<tc::U32Spec>(7, 0x0800, 0);
  table.divisor = 2;
  add_to(Dir::Egress, table);  // pref 7: root 802:, the table 803:
  EXPECT_EQ(handles(Dir::Egress, 7), std::vector<uint32_t>{0x80300000});
  // The same pref on the other side is another pref: naming its table is refused.
  tc::U32Spec cross = u32_node(5, 0x0a000003);
  cross.htid = 0x80100000;  // egress pref 6's root
  std::string err = failure_of(tc::filter_add(*d, Dir::Ingress, cross, false));
  EXPECT_NE(err.find("belongs to pref 6"), std::string::npos) << err;
  // Pref 6's only knode goes; ingress still has one: pref 6 stays, as its root table.
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Egress, 6, 0x80100800)));
  EXPECT_EQ(handles(Dir::Egress, 6), std::vector<uint32_t>{0x80100000});
  // Ingress's knode goes: no knode left, but egress has prefs: pref 5 stays too.
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Ingress, 5, 0x80000800)));
  EXPECT_EQ(handles(Dir::Ingress, 5), std::vector<uint32_t>{0x80000000});
  // A kept pref takes knodes again, in its root.
  add_to(Dir::Egress, u32_node(6, 0x0a000004));
  EXPECT_EQ(handles(Dir::Egress, 6), (std::vector<uint32_t>{0x80100000, 0x80100800}));
  // The egress list goes whole, then ingress's pref: the qdisc has no u32 pref, and the
  // next one is 800: again.
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Egress, 0, 0)));
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Ingress, 5, 0)));
  add_to(Dir::Egress, u32_node(9, 0x0a000005));
  EXPECT_EQ(handles(Dir::Egress, 9), std::vector<uint32_t>{0x80000800});
  // The qdisc's only pref loses its last knode: it goes, with its table (*last).
  table.pref = 9;
  add_to(Dir::Egress, table);
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Egress, 9, 0x80000800)));
  EXPECT_TRUE(handles(Dir::Egress, 9).empty());
  EXPECT_EQ(d->tc_egress().load(), nullptr);
  // Frames still classify through a kept pref's neighbours (the husk matches nothing).
  add_to(Dir::Egress, u32_node(1, 0x0a000006));
  add_to(Dir::Egress, u32_node(2, 0x0a000007));
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Egress, 1, 0x80000800)));
  EXPECT_EQ(handles(Dir::Egress, 1), std::vector<uint32_t>{0x80000000});
  Frame f;
  f.dst = "10.0.0.7";
  uint32_t cl = 0;
  EXPECT_EQ(classify(d, f, &cl), tc::TC_ACT_OK);
  EXPECT_EQ(cl, 0x10001u);
  f.dst = "10.0.0.6";
  EXPECT_EQ(classify(d, f, &cl), tc::TC_ACT_UNSPEC);
}

TEST_F(ClsTest, U32PrefAddBindsOnlyItsOwnPref) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  constexpr uint32_t kPrefs = 2000;
  std::vector<const tc::TcFilter*> first_bound;
  for (uint32_t pref = 1; pref <= kPrefs; ++pref) {
    tc::U32Spec s = with<tc::U32Spec>(pref, 0x0800, 0x10001 + (pref & 0xff));
    s.keys = {key(0x0a000000 | pref, 0xffffffff, 16)};
    s.terminal = true;
    ASSERT_TRUE(ok(tc::filter_add(*d, Dir::Egress, s, false)));
    if (pref == 2) first_bound = d->tc_egress().load()->filters;
  }
  const tc::Miniq* mq = d->tc_egress().load();
  ASSERT_EQ(mq->filters.size(), kPrefs);
  EXPECT_EQ(mq->filters[0], first_bound[0]);
  EXPECT_EQ(mq->filters[1], first_bound[1]);
  // The last pref still classifies: 10.0.7.208 is pref 2000's key.
  uint32_t c = 0;
  Frame f;
  f.dst = "10.0.7.208";
  EXPECT_EQ(classify(d, f, &c), tc::TC_ACT_OK);
  EXPECT_EQ(c, 0x10001u + (kPrefs & 0xff));
}

}  // namespace
}  // namespace pktpath::testing
