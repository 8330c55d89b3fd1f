#include "core/drop_reason.h"

#include <gtest/gtest.h>

#include "core/cpu.h"
#include "core/packet_pool.h"

namespace pktpath {
namespace {

TEST(DropReasonTest, NamesAreTheKernelSpelling) {
  EXPECT_EQ(drop_reason_name(DropReason::NOT_SPECIFIED), "NOT_SPECIFIED");
  EXPECT_EQ(drop_reason_name(DropReason::QDISC_DROP), "QDISC_DROP");
  EXPECT_EQ(drop_reason_name(DropReason::TC_EGRESS), "TC_EGRESS");
  EXPECT_EQ(drop_reason_name(DropReason::kCount), "INVALID");
}

TEST(DropReasonTest, FreeReasonCountsOncePerDropAndFreesThePacket) {
  PacketPool pool(PacketPool::Options{.capacity = 8});
  Cpu cpu(pool);
  uint64_t total_before = drop_total();
  auto qdisc_before = drop_totals()[static_cast<unsigned>(DropReason::QDISC_DROP)];
  Packet* a = cpu.alloc();
  Packet* b = cpu.alloc();
  Packet* c = cpu.alloc();
  cpu.free_reason(a, DropReason::QDISC_DROP);
  cpu.free_reason(b, DropReason::QDISC_DROP);
  cpu.free_reason(c, DropReason::NETFILTER_DROP);
  EXPECT_EQ(cpu.stats().drops[static_cast<unsigned>(DropReason::QDISC_DROP)].get(), 2u);
  EXPECT_EQ(cpu.stats().drops[static_cast<unsigned>(DropReason::NETFILTER_DROP)].get(), 1u);
  EXPECT_EQ(drop_total(), total_before + 3);
  EXPECT_EQ(drop_totals()[static_cast<unsigned>(DropReason::QDISC_DROP)], qdisc_before + 2);
  cpu.drain_cache();
  EXPECT_EQ(pool.available(), 8u);
}

TEST(DropReasonTest, TotalsSurviveTheCpu) {
  PacketPool pool(PacketPool::Options{.capacity = 8});
  uint64_t before = drop_totals()[static_cast<unsigned>(DropReason::DEV_READY)];
  {
    Cpu cpu(pool);
    cpu.free_reason(cpu.alloc(), DropReason::DEV_READY);
  }
  EXPECT_EQ(drop_totals()[static_cast<unsigned>(DropReason::DEV_READY)], before + 1);
}

}  // namespace
}  // namespace pktpath
