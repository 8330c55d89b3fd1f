// core/sysctl.h: sysctls registered by the subsystems that own them, values per Net.
#include "core/sysctl.h"

#include <gtest/gtest.h>

#include "core/bpf_engine.h"
#include "core/net.h"

namespace pktpath {
namespace {

class SysctlTest : public ::testing::Test {
 protected:
  SysctlTest() { cpu.bind(); }
  PacketPool pool{PacketPool::Options{.capacity = 64}};
  Cpu cpu{pool};
  Net net{cpu};
};

// Registered by static objects in their own files: present without any call into them.
TEST_F(SysctlTest, SubsystemSysctlsAreRegisteredStatically) {
  for (const char* name :
       {"net.core.bpf_jit_enable", "net.core.bpf_jit_harden", "net.core.skb_defer_max", "net.core.dev_weight",
        "net.core.netdev_budget", "net.core.netdev_max_backlog", "net.core.default_qdisc",
        "net.pktpath.qdisc_bypass", "net.pktpath.bpf_engine", "net.pktpath.egress_hooks",
        "net.pktpath.nf_hook_point", "net.pktpath.defer_free", "net.pktpath.bpf_jit_form"})
    EXPECT_NE(sysctl_find(name), nullptr) << name;
  for (const char* alias : {"bypass", "defer_free", "egress_hooks", "nf_hook_point", "bpf_engine"})
    EXPECT_NE(sysctl_find(alias), nullptr) << alias;
  EXPECT_EQ(sysctl_find("warp"), nullptr);
  const auto all = sysctl_all();
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(std::string(all[i - 1]->name), all[i]->name);
}

TEST_F(SysctlTest, SetAppliesToTheNetAndRejectsBadValues) {
  const Sysctl* bypass = sysctl_find("bypass");
  ASSERT_NE(bypass, nullptr);
  EXPECT_TRUE(bypass->set(net, "off"));
  EXPECT_FALSE(net.xmit_config().bypass.load());
  EXPECT_EQ(bypass->get(net), "off");
  EXPECT_TRUE(bypass->set(net, "on"));
  EXPECT_TRUE(net.xmit_config().bypass.load());
  Status err = bypass->set(net, "maybe");
  ASSERT_FALSE(err);
  EXPECT_EQ(err.error().msg, "net.pktpath.qdisc_bypass: expected on or off, not 'maybe'");
  EXPECT_EQ(err.error().word, "maybe");

  const Sysctl* w = sysctl_find("net.core.dev_weight");
  EXPECT_EQ(w->get(net), "64");
  EXPECT_TRUE(w->set(net, "16"));
  EXPECT_EQ(net.core().dev_weight.load(), 16u);
  EXPECT_FALSE(w->set(net, "0"));     // below the kernel's minimum
  EXPECT_FALSE(w->set(net, "-1"));
  EXPECT_FALSE(w->set(net, "99999999999"));
  EXPECT_EQ(w->get(net), "16");
}

TEST_F(SysctlTest, BpfJitEnableAndEngineAreOneSwitch) {
  const Sysctl* eng = sysctl_find("bpf_engine");
  const Sysctl* jit = sysctl_find("net.core.bpf_jit_enable");
  EXPECT_TRUE(jit->set(net, "1"));
  EXPECT_EQ(net_bpf_engine(net), bpf::Engine::Jit);
  EXPECT_EQ(eng->get(net), "jit");
  EXPECT_TRUE(jit->set(net, "0"));
  EXPECT_EQ(net_bpf_engine(net), bpf::Engine::Threaded);
  EXPECT_TRUE(eng->set(net, "switch"));
  EXPECT_EQ(jit->get(net), "0");
  EXPECT_FALSE(eng->set(net, "nosuch"));
  EXPECT_FALSE(jit->set(net, "2"));
}

TEST_F(SysctlTest, JitHardenBlindsProgramsLoadedInThatNet) {
  EXPECT_FALSE(net_bpf_config(net).jit.blind);
  EXPECT_TRUE(sysctl_find("net.core.bpf_jit_harden")->set(net, "2"));
  EXPECT_TRUE(net_bpf_config(net).jit.blind);
  Net other{cpu};
  EXPECT_FALSE(net_bpf_config(other).jit.blind);
}

// The JIT's form for programs loaded in that Net; bpf dump says which form a program got.
TEST_F(SysctlTest, JitFormChoosesTheShapeOfProgramsLoadedInThatNet) {
  const Sysctl* f = sysctl_find("bpf_jit_form");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->get(net), "auto");
  EXPECT_EQ(net_bpf_config(net).jit.form, bpf::JitForm::Auto);
  EXPECT_TRUE(f->set(net, "branching"));
  EXPECT_EQ(net_bpf_config(net).jit.form, bpf::JitForm::Branching);
  EXPECT_EQ(f->get(net), "branching");
  EXPECT_TRUE(f->set(net, "predicated"));
  EXPECT_EQ(net_bpf_config(net).jit.form, bpf::JitForm::Predicated);
  EXPECT_FALSE(f->set(net, "straight"));
  EXPECT_EQ(f->get(net), "predicated");
  EXPECT_TRUE(f->set(net, "split"));
  EXPECT_EQ(net_bpf_config(net).jit.form, bpf::JitForm::Split);
  EXPECT_EQ(f->get(net), "split");
  Net other{cpu};
  EXPECT_EQ(net_bpf_config(other).jit.form, bpf::JitForm::Auto);
}

TEST_F(SysctlTest, DefaultQdiscKnowsTheKinds) {
  const Sysctl* d = sysctl_find("net.core.default_qdisc");
  EXPECT_EQ(d->get(net), "pfifo_fast");
  EXPECT_TRUE(d->set(net, "pfifo"));
  EXPECT_EQ(net.default_qdisc(), "pfifo");
  EXPECT_FALSE(d->set(net, "fq_nope"));
  EXPECT_FALSE(d->set(net, "mq"));
  EXPECT_EQ(net.default_qdisc(), "pfifo");
}

}  // namespace
}  // namespace pktpath
