// Hook registry: ordering by priority, verdict handling of nf_hook_slow, registration
// errors, replace, and the packet accounting of each verdict.
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "netfilter/nf_hooks.h"
#include "nf_test_util.h"

namespace pktpath::nf {
namespace {

// A hook that records its id in a trace and returns a fixed verdict.
struct Probe {
  int id;
  NfVerdict verdict;
  std::vector<int>* trace;
  const NfHookState* last_state = nullptr;
  NfHookNum seen_hook = NfHookNum::INGRESS;
  void* seen_dev = nullptr;
};

NfVerdict probe_fn(void* priv, Packet*, const NfHookState& st) {
  auto* pr = static_cast<Probe*>(priv);
  pr->trace->push_back(pr->id);
  pr->seen_hook = st.hook;
  pr->seen_dev = st.dev;
  return pr->verdict;
}

// STOLEN hooks take the packet: this one keeps it in a list for the test to free.
struct Thief {
  std::vector<Packet*> taken;
};
NfVerdict steal_fn(void* priv, Packet* p, const NfHookState&) {
  static_cast<Thief*>(priv)->taken.push_back(p);
  return NfVerdict::STOLEN;
}

class NfHooksTest : public ::testing::Test {
 protected:
  PacketPool pool{PacketPool::Options{.capacity = 256}};
  Cpu cpu{pool};
  int dev_token = 0;
  NfDeviceHooks dev{&dev_token};
  std::vector<int> trace;

  uint64_t nf_drops() const {
    return cpu.stats().drops[static_cast<unsigned>(DropReason::NETFILTER_DROP)].get();
  }
  uint64_t all_drops() const {
    uint64_t s = 0;
    for (const auto& c : cpu.stats().drops) s += c.get();
    return s;
  }
  void TearDown() override {
    nf_unregister_all(dev);
    cpu.drain_cache();
    EXPECT_EQ(pool.available(), pool.capacity()) << "a packet was lost or leaked";
  }
};

TEST_F(NfHooksTest, NothingAttachedAccepts) {
  EXPECT_EQ(dev.egress.load(), nullptr);
  Packet* p = cpu.alloc();
  EXPECT_EQ(nf_hook_egress(dev, p, cpu), NfVerdict::ACCEPT);
  EXPECT_EQ(nf_hook_ingress(dev, p, cpu), NfVerdict::ACCEPT);
  EXPECT_EQ(nf_hook_run(nullptr, p, cpu, NfHookNum::EGRESS, nullptr), NfVerdict::ACCEPT);
  cpu.free(p);
  EXPECT_EQ(all_drops(), 0u);
}

TEST_F(NfHooksTest, RunsInPriorityOrderEqualPrioritiesInRegistrationOrder) {
  Probe a{1, NfVerdict::ACCEPT, &trace}, b{2, NfVerdict::ACCEPT, &trace},
      c{3, NfVerdict::ACCEPT, &trace}, d{4, NfVerdict::ACCEPT, &trace};
  NfHookOps oa{probe_fn, &a, 10, NfHookNum::EGRESS};
  NfHookOps ob{probe_fn, &b, -5, NfHookNum::EGRESS};
  NfHookOps oc{probe_fn, &c, 10, NfHookNum::EGRESS};
  NfHookOps od{probe_fn, &d, 0, NfHookNum::EGRESS};
  for (auto* o : {&oa, &ob, &oc, &od}) ASSERT_TRUE(nf_register_hook(dev, o).has_value());
  ASSERT_EQ(dev.egress.load()->size(), 4u);
  EXPECT_EQ(dev.ingress.load(), nullptr);  // egress registrations stay on egress
  Packet* p = cpu.alloc();
  EXPECT_EQ(nf_hook_egress(dev, p, cpu), NfVerdict::ACCEPT);
  EXPECT_EQ(trace, (std::vector<int>{2, 4, 1, 3}));
  EXPECT_EQ(a.seen_hook, NfHookNum::EGRESS);
  EXPECT_EQ(a.seen_dev, &dev_token);
  // Unregister the middle one: order of the rest kept.
  ASSERT_TRUE(nf_unregister_hook(dev, &od).has_value());
  trace.clear();
  EXPECT_EQ(nf_hook_egress(dev, p, cpu), NfVerdict::ACCEPT);
  EXPECT_EQ(trace, (std::vector<int>{2, 1, 3}));
  // Ingress is a separate list.
  Probe in{9, NfVerdict::ACCEPT, &trace};
  NfHookOps oin{probe_fn, &in, 0, NfHookNum::INGRESS};
  ASSERT_TRUE(nf_register_hook(dev, &oin).has_value());
  trace.clear();
  EXPECT_EQ(nf_hook_ingress(dev, p, cpu), NfVerdict::ACCEPT);
  EXPECT_EQ(trace, (std::vector<int>{9}));
  EXPECT_EQ(in.seen_hook, NfHookNum::INGRESS);
  cpu.free(p);
}

TEST_F(NfHooksTest, DropStopsFreesAndCountsOnce) {
  Probe a{1, NfVerdict::ACCEPT, &trace}, b{2, NfVerdict::DROP, &trace}, c{3, NfVerdict::ACCEPT, &trace};
  NfHookOps oa{probe_fn, &a, 0, NfHookNum::EGRESS}, ob{probe_fn, &b, 1, NfHookNum::EGRESS},
      oc{probe_fn, &c, 2, NfHookNum::EGRESS};
  for (auto* o : {&oa, &ob, &oc}) ASSERT_TRUE(nf_register_hook(dev, o).has_value());
  const uint32_t avail = pool.available() + cpu.cached();
  Packet* p = cpu.alloc();
  EXPECT_EQ(nf_hook_egress(dev, p, cpu), NfVerdict::DROP);
  EXPECT_EQ(trace, (std::vector<int>{1, 2}));  // the hook after the drop never ran
  EXPECT_EQ(nf_drops(), 1u);
  EXPECT_EQ(all_drops(), 1u);                  // under exactly one reason
  EXPECT_EQ(pool.available() + cpu.cached(), avail);  // the runner freed it
}

TEST_F(NfHooksTest, StolenStopsWithoutDrop) {
  Probe a{1, NfVerdict::ACCEPT, &trace}, c{3, NfVerdict::ACCEPT, &trace};
  Thief thief;
  NfHookOps oa{probe_fn, &a, 0, NfHookNum::EGRESS}, ot{steal_fn, &thief, 1, NfHookNum::EGRESS},
      oc{probe_fn, &c, 2, NfHookNum::EGRESS};
  for (auto* o : {&oa, &ot, &oc}) ASSERT_TRUE(nf_register_hook(dev, o).has_value());
  Packet* p = cpu.alloc();
  EXPECT_EQ(nf_hook_egress(dev, p, cpu), NfVerdict::STOLEN);
  EXPECT_EQ(trace, (std::vector<int>{1}));
  ASSERT_EQ(thief.taken.size(), 1u);
  EXPECT_EQ(thief.taken[0], p);
  EXPECT_EQ(all_drops(), 0u);
  cpu.free(thief.taken[0]);  // the thief owns it now
}

TEST_F(NfHooksTest, UnsupportedVerdictsDropAndCount) {
  for (NfVerdict v : {NfVerdict::QUEUE, NfVerdict::REPEAT, NfVerdict::STOP, static_cast<NfVerdict>(77)}) {
    Probe a{1, v, &trace};
    NfHookOps oa{probe_fn, &a, 0, NfHookNum::EGRESS};
    ASSERT_TRUE(nf_register_hook(dev, &oa).has_value());
    const uint64_t before = nf_drops();
    EXPECT_EQ(nf_hook_egress(dev, cpu.alloc(), cpu), NfVerdict::DROP);
    EXPECT_EQ(nf_drops(), before + 1);
    ASSERT_TRUE(nf_unregister_hook(dev, &oa).has_value());
  }
  EXPECT_EQ(dev.egress.load(), nullptr);  // the last unregister empties the head
}

TEST_F(NfHooksTest, RegistrationErrors) {
  Probe a{1, NfVerdict::ACCEPT, &trace};
  NfHookOps oa{probe_fn, &a, 0, NfHookNum::EGRESS};
  NfHookOps null_fn{nullptr, nullptr, 0, NfHookNum::EGRESS};
  EXPECT_EQ(nf_register_hook(dev, &null_fn).error().msg, "hook without a function");
  EXPECT_EQ(nf_unregister_hook(dev, &oa).error().msg, "hook not registered on the device");
  ASSERT_TRUE(nf_register_hook(dev, &oa).has_value());
  EXPECT_EQ(nf_register_hook(dev, &oa).error().msg, "hook already registered on the device");
  EXPECT_EQ(dev.egress.load()->size(), 1u);
}

TEST_F(NfHooksTest, TooManyHooks) {
  Probe a{1, NfVerdict::ACCEPT, &trace};
  std::vector<NfHookOps> ops(NfHookEntries::kMaxEntries + 1, NfHookOps{probe_fn, &a, 0, NfHookNum::INGRESS});
  for (uint32_t i = 0; i < NfHookEntries::kMaxEntries; ++i) ASSERT_TRUE(nf_register_hook(dev, &ops[i]).has_value());
  EXPECT_EQ(nf_register_hook(dev, &ops.back()).error().msg,
            "too many hooks on the device (at most " + std::to_string(NfHookEntries::kMaxEntries) + ")");
  nf_unregister_all(dev);
  EXPECT_EQ(dev.ingress.load(), nullptr);
}

TEST_F(NfHooksTest, ReplaceSwapsInOnePublication) {
  Probe a{1, NfVerdict::ACCEPT, &trace}, b{2, NfVerdict::DROP, &trace}, z{9, NfVerdict::ACCEPT, &trace};
  NfHookOps oa{probe_fn, &a, 0, NfHookNum::EGRESS}, ob{probe_fn, &b, -10, NfHookNum::EGRESS},
      oz{probe_fn, &z, 5, NfHookNum::EGRESS};
  ASSERT_TRUE(nf_register_hook(dev, &oa).has_value());
  ASSERT_TRUE(nf_register_hook(dev, &oz).has_value());
  ASSERT_TRUE(nf_replace_hook(dev, &oa, &ob).has_value());
  EXPECT_EQ(dev.egress.load()->size(), 2u);
  EXPECT_EQ(nf_hook_egress(dev, cpu.alloc(), cpu), NfVerdict::DROP);
  EXPECT_EQ(trace, (std::vector<int>{2}));
  EXPECT_EQ(nf_replace_hook(dev, &oa, &ob).error().msg, "hook not registered on the device");  // oa is gone
  EXPECT_EQ(nf_replace_hook(dev, &ob, &oz).error().msg, "hook already registered on the device");  // oz already there
  NfHookOps wrong_hook{probe_fn, &a, 0, NfHookNum::INGRESS};
  EXPECT_EQ(nf_replace_hook(dev, &ob, &wrong_hook).error().msg, "the replacement is for another hook");
}

}  // namespace
}  // namespace pktpath::nf
