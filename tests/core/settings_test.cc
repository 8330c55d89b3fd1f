// core/settings.h: switches registered by the subsystems that own them, found by name.
#include "core/settings.h"

#include <gtest/gtest.h>

#include "core/bpf_engine.h"
#include "core/dev_xmit.h"

namespace pktpath {
namespace {

// Registered by static objects in their own files (dev_xmit.cc, bpf_engine.cc,
// sched/clsact.cc): present without any call into those subsystems.
TEST(Settings, SubsystemSwitchesAreRegisteredStatically) {
  for (const char* name : {"bypass", "bpf_engine", "egress_hooks", "nf_hook_point"})
    EXPECT_TRUE(setting_find(name).has_value()) << name << " (known: " << setting_names() << ")";
  EXPECT_FALSE(setting_find("warp").has_value());
}

TEST(Settings, SetAppliesAndRejectsUnknownValues) {
  auto bypass = setting_find("bypass");
  ASSERT_TRUE(bypass);
  EXPECT_FALSE(bypass->set("off"));
  EXPECT_FALSE(xmit_config().bypass.load());
  EXPECT_FALSE(bypass->set("on"));
  EXPECT_TRUE(xmit_config().bypass.load());
  auto err = bypass->set("maybe");
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "bypass: expected on or off, not 'maybe'");
}

TEST(Settings, BpfEngineSwitchIsShared) {
  const bpf::Engine before = net_bpf_engine();
  auto eng = setting_find("bpf_engine");
  ASSERT_TRUE(eng);
  EXPECT_FALSE(eng->set("switch"));
  EXPECT_EQ(net_bpf_engine(), bpf::Engine::Switch);
  EXPECT_TRUE(eng->set("nosuch"));
  std::string err;
  ASSERT_TRUE(net_set_bpf_engine(before, &err)) << err;
}

}  // namespace
}  // namespace pktpath
