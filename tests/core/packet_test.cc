#include "core/packet.h"

#include <gtest/gtest.h>

#include "core/cpu.h"
#include "core/packet_pool.h"

namespace pktpath {
namespace {

class PacketTest : public ::testing::Test {
 protected:
  PacketPool pool{PacketPool::Options{.capacity = 64, .buf_size = 512, .headroom = 64}};
  Cpu cpu{pool};
};

TEST_F(PacketTest, FreshPacketGeometry) {
  Packet* p = cpu.alloc();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->len, 0u);
  EXPECT_EQ(p->headroom(), 64u);
  EXPECT_EQ(p->tailroom(), 512u - 64u);
  EXPECT_EQ(p->users.load(), 1u);
  EXPECT_EQ(p->alloc_cpu, cpu.id());
  cpu.free(p);
}

TEST_F(PacketTest, PutPushPullKeepBounds) {
  Packet* p = cpu.alloc();
  uint8_t* body = p->put(100);
  ASSERT_NE(body, nullptr);
  body[0] = 0xab;
  EXPECT_EQ(p->len, 100u);
  uint8_t* hdr = p->push(14);
  ASSERT_NE(hdr, nullptr);
  EXPECT_EQ(hdr + 14, body);
  EXPECT_EQ(p->len, 114u);
  EXPECT_EQ(p->pull(14), body);
  EXPECT_EQ(p->data()[0], 0xab);
  EXPECT_EQ(p->len, 100u);
  cpu.free(p);
}

TEST_F(PacketTest, PushBeyondHeadroomFailsWithoutChange) {
  Packet* p = cpu.alloc();
  ASSERT_NE(p->put(10), nullptr);
  EXPECT_EQ(p->push(65), nullptr);
  EXPECT_EQ(p->len, 10u);
  EXPECT_EQ(p->headroom(), 64u);
  EXPECT_NE(p->push(64), nullptr);
  EXPECT_EQ(p->push(1), nullptr);
  cpu.free(p);
}

TEST_F(PacketTest, PullBeyondLenFailsWithoutChange) {
  Packet* p = cpu.alloc();
  ASSERT_NE(p->put(10), nullptr);
  EXPECT_EQ(p->pull(11), nullptr);
  EXPECT_EQ(p->len, 10u);
  EXPECT_NE(p->pull(10), nullptr);
  EXPECT_EQ(p->len, 0u);
  cpu.free(p);
}

TEST_F(PacketTest, PutBeyondTailroomFails) {
  Packet* p = cpu.alloc();
  EXPECT_EQ(p->put(512 - 64 + 1), nullptr);
  EXPECT_EQ(p->len, 0u);
  EXPECT_NE(p->put(512 - 64), nullptr);
  EXPECT_EQ(p->put(1), nullptr);
  cpu.free(p);
}

TEST_F(PacketTest, ReserveOnlyOnEmptyPacket) {
  Packet* p = cpu.alloc();
  EXPECT_TRUE(p->reserve(16));
  EXPECT_EQ(p->headroom(), 80u);
  ASSERT_NE(p->put(1), nullptr);
  EXPECT_FALSE(p->reserve(1));
  cpu.free(p);
}

TEST_F(PacketTest, FragmentsCountInLenAndCopyBits) {
  Packet* p = cpu.alloc();
  const uint8_t lin[4] = {1, 2, 3, 4};
  const uint8_t f1[3] = {5, 6, 7};
  const uint8_t f2[2] = {8, 9};
  ASSERT_TRUE(p->append(lin, 4));
  ASSERT_TRUE(p->add_frag(f1, 3));
  ASSERT_TRUE(p->add_frag(f2, 2));
  EXPECT_EQ(p->len, 9u);
  EXPECT_EQ(p->headlen(), 4u);
  EXPECT_EQ(p->put(1), nullptr);  // no tail growth once fragments exist
  uint8_t out[9] = {};
  ASSERT_TRUE(p->copy_bits(0, out, 9));
  for (int i = 0; i < 9; ++i) EXPECT_EQ(out[i], i + 1);
  uint8_t mid[4] = {};
  ASSERT_TRUE(p->copy_bits(3, mid, 4));  // spans linear, frag 1 and frag 2
  EXPECT_EQ(mid[0], 4);
  EXPECT_EQ(mid[3], 7);
  EXPECT_FALSE(p->copy_bits(6, out, 4));
  EXPECT_FALSE(p->pull(5));  // pull reaches only the linear part
  cpu.free(p);
}

TEST_F(PacketTest, GetSharesAndLastFreeRecycles) {
  uint32_t before = pool.available() + cpu.cached();
  Packet* p = cpu.alloc();
  EXPECT_FALSE(p->is_shared());
  p->get();
  p->get();
  EXPECT_TRUE(p->is_shared());
  cpu.free(p);
  cpu.free(p);
  EXPECT_EQ(pool.available() + cpu.cached(), before - 1);  // still held by one user
  EXPECT_EQ(p->users.load(), 1u);
  cpu.free(p);
  EXPECT_EQ(pool.available() + cpu.cached(), before);
}

TEST_F(PacketTest, AllocResetsMetadata) {
  Packet* p = cpu.alloc();
  p->mark = 7;
  p->priority = 3;
  p->vlan_present = true;
  p->queue_mapping = 2;
  ASSERT_NE(p->put(20), nullptr);
  cpu.free(p);
  Packet* q = cpu.alloc();
  EXPECT_EQ(q, p);  // LIFO cache: the same slot comes back
  EXPECT_EQ(q->mark, 0u);
  EXPECT_EQ(q->priority, 0u);
  EXPECT_FALSE(q->vlan_present);
  EXPECT_EQ(q->queue_mapping, 0u);
  EXPECT_EQ(q->len, 0u);
  cpu.free(q);
}

}  // namespace
}  // namespace pktpath
