// Load semantics on hand-built views and on a pktpath::Packet with fragments: what the
// kernel's helpers do at the edges (head/fragment boundary, negative offsets reaching
// only the head, a missing device, division by X == 0).
#include "bpf/semantics.h"

#include "bpf/parse.h"

#include "bpf_test_util.h"
#include "core/bpf_view.h"
#include "core/cpu.h"
#include "core/packet_pool.h"

namespace pktpath::bpf {
namespace {

uint32_t run_both(const Insns& prog, const PacketView& v) {
  std::string err;
  auto sw = testing::load(prog, Engine::Switch, &err);
  auto th = testing::load(prog, Engine::Threaded, &err);
  EXPECT_TRUE(sw && th) << err;
  if (!sw || !th) return 0xdeadbeef;
  uint32_t a = sw->run(v), b = th->run(v);
  EXPECT_EQ(a, b);
  return a;
}

TEST(BpfSemantics, LoadsSpanHeadAndFragments) {
  uint8_t head[6] = {0, 1, 2, 3, 4, 5};
  uint8_t f1[3] = {6, 7, 8}, f2[2] = {9, 10};
  PacketFrag frags[2] = {{f1, 3}, {f2, 2}};
  PacketView v = PacketView::linear(head, 6);
  v.frags = frags;
  v.nr_frags = 2;
  v.len = v.wire_len = 11;
  EXPECT_EQ(load_packet(v, 4, 4), 0x04050607u);   // head -> frag 1
  EXPECT_EQ(load_packet(v, 7, 4), 0x0708090au);   // frag 1 -> frag 2
  EXPECT_EQ(load_packet(v, 10, 1), 10u);
  EXPECT_TRUE(load_failed(load_packet(v, 8, 4)));  // one byte past the end
  EXPECT_TRUE(load_failed(load_packet(v, 11, 1)));
  // Negative offsets reach only the head: net header at 4.
  v.net_off = 4;
  EXPECT_EQ(load_packet(v, SKF_NET_OFF, 2), 0x0405u);
  EXPECT_TRUE(load_failed(load_packet(v, SKF_NET_OFF + 1, 2)));  // would need frag bytes
  EXPECT_EQ(load_packet(v, SKF_LL_OFF + 2, 4), 0x02030405u);
  EXPECT_TRUE(load_failed(load_packet(v, SKF_LL_OFF - 1, 1)));
  EXPECT_EQ(run_both({{BPF_LD | BPF_W | BPF_LEN, 0, 0, 0}, {BPF_RET | BPF_A, 0, 0, 0}}, v), 11u);
  EXPECT_EQ(run_both({{BPF_LD | BPF_H | BPF_ABS, 0, 0, 9}, {BPF_RET | BPF_A, 0, 0, 0}}, v), 0x090au);
  EXPECT_EQ(run_both({{BPF_LD | BPF_H | BPF_ABS, 0, 0, 10}, {BPF_RET | BPF_K, 0, 0, 7}}, v), 0u);
}

TEST(BpfSemantics, ProgramEndsOnFailureAndDivByZero) {
  uint8_t b[4] = {0, 0, 0, 9};
  PacketView v = PacketView::linear(b, 4);
  // X = 0; A = 5; A /= X -> 0, not 5.
  EXPECT_EQ(run_both({{BPF_LD | BPF_IMM, 0, 0, 5}, {BPF_ALU | BPF_DIV | BPF_X, 0, 0, 0}, {BPF_RET | BPF_K, 0, 0, 77}}, v), 0u);
  EXPECT_EQ(run_both({{BPF_LD | BPF_IMM, 0, 0, 5}, {BPF_ALU | BPF_MOD | BPF_X, 0, 0, 0}, {BPF_RET | BPF_K, 0, 0, 77}}, v), 0u);
  // A failed load returns 0 rather than continuing with A = 0.
  EXPECT_EQ(run_both({{BPF_LD | BPF_W | BPF_ABS, 0, 0, 1}, {BPF_RET | BPF_K, 0, 0, 77}}, v), 0u);
  EXPECT_EQ(run_both({{BPF_LDX | BPF_B | BPF_MSH, 0, 0, 3}, {BPF_MISC | BPF_TXA, 0, 0, 0}, {BPF_RET | BPF_A, 0, 0, 0}}, v), 36u);
  // LD IND wraps: X = 4, k = -1 -> offset 3.
  EXPECT_EQ(run_both({{BPF_LDX | BPF_IMM, 0, 0, 4}, {BPF_LD | BPF_B | BPF_IND, 0, 0, 0xffffffff}, {BPF_RET | BPF_A, 0, 0, 0}}, v), 9u);
  // Shift by X uses the low five bits.
  EXPECT_EQ(run_both({{BPF_LDX | BPF_IMM, 0, 0, 33}, {BPF_LD | BPF_IMM, 0, 0, 1}, {BPF_ALU | BPF_LSH | BPF_X, 0, 0, 0}, {BPF_RET | BPF_A, 0, 0, 0}}, v), 2u);
}

TEST(BpfSemantics, AncillaryFromPacketMetadata) {
  PacketPool pool{PacketPool::Options{.capacity = 8, .buf_size = 512, .headroom = 64}};
  Cpu cpu{pool};
  Packet* p = cpu.alloc();
  ASSERT_NE(p, nullptr);
  uint8_t frame[20] = {};
  frame[12] = 0x08;
  ASSERT_TRUE(p->append(frame, sizeof(frame)));
  uint8_t frag[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(p->add_frag(frag, sizeof(frag)));
  p->protocol = 0x0008;  // ETH_P_IP, network order
  p->mark = 0x1234;
  p->hash = 0xabcd;
  p->queue_mapping = 3;
  p->vlan_tci = 0x0064;
  p->vlan_present = true;
  p->vlan_proto = 0x0081;
  p->pkt_type = PACKET_OTHERHOST;
  auto anc = [](uint32_t ad) {
    return Insns{{BPF_LD | BPF_W | BPF_ABS, 0, 0, static_cast<uint32_t>(SKF_AD_OFF) + ad}, {BPF_RET | BPF_A, 0, 0, 0}};
  };
  DeviceInfo dev{7, 1};
  PacketView v = view_of(*p, &dev, 14, 2);
  EXPECT_EQ(v.len, 28u);
  EXPECT_EQ(v.headlen, 20u);
  EXPECT_EQ(run_both(anc(SKF_AD_PROTOCOL), v), 0x0800u);
  EXPECT_EQ(run_both(anc(SKF_AD_PKTTYPE), v), 3u);
  EXPECT_EQ(run_both(anc(SKF_AD_IFINDEX), v), 7u);
  EXPECT_EQ(run_both(anc(SKF_AD_HATYPE), v), 1u);
  EXPECT_EQ(run_both(anc(SKF_AD_MARK), v), 0x1234u);
  EXPECT_EQ(run_both(anc(SKF_AD_QUEUE), v), 3u);
  EXPECT_EQ(run_both(anc(SKF_AD_RXHASH), v), 0xabcdu);
  EXPECT_EQ(run_both(anc(SKF_AD_CPU), v), 2u);
  EXPECT_EQ(run_both(anc(SKF_AD_VLAN_TAG), v), 0x64u);
  EXPECT_EQ(run_both(anc(SKF_AD_VLAN_TAG_PRESENT), v), 1u);
  EXPECT_EQ(run_both(anc(SKF_AD_VLAN_TPID), v), 0x8100u);
  EXPECT_EQ(run_both({{BPF_LD | BPF_W | BPF_ABS, 0, 0, 20}, {BPF_RET | BPF_A, 0, 0, 0}}, v), 0x01020304u);
  // No device: IFINDEX ends the program returning A as it was.
  PacketView nodev = view_of(*p);
  EXPECT_EQ(run_both({{BPF_LD | BPF_IMM, 0, 0, 42}, anc(SKF_AD_IFINDEX)[0], {BPF_RET | BPF_K, 0, 0, 1}}, nodev), 42u);
  cpu.free(p);
}

TEST(BpfSemantics, BatchRunEqualsSingleRuns) {
  PacketSet set = make_synthetic(256);
  Insns prog;
  std::string err;
  ASSERT_TRUE(parse_bytecode("4,40 0 0 12,21 0 1 2048,6 0 0 65535,6 0 0 0", &prog, &err));
  for (Engine e : testing::engines()) {
    auto p = testing::load(prog, e, &err);
    ASSERT_TRUE(p);
    std::vector<uint32_t> out(set.size());
    p->run_batch(set.views(), out.data());
    for (size_t i = 0; i < set.size(); ++i) EXPECT_EQ(out[i], p->run(set.views()[i]));
  }
  auto j = testing::load(prog, Engine::Jit, &err);
  ASSERT_TRUE(j) << err;
  EXPECT_EQ(j->engine(), Engine::Jit);
}

}  // namespace
}  // namespace pktpath::bpf
