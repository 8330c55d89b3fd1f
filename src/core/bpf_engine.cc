#include "core/bpf_engine.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "core/net.h"
#include "core/sysctl.h"

namespace pktpath {

namespace {

// Per-Net: the engine and JIT options programs load with (net->core's bpf_jit_* and
// pktpath's engine switch).
// Read without the mutex (loaders read them under their own writer locks, which the
// reloads also take: the engine is stored before the reloads run, so a program loaded
// meanwhile either sees the new engine or is reloaded).
struct BpfNet final : PernetState {
  std::mutex mu;  // serialises engine changes and the reloads they start
  std::atomic<int> engine{0};
  std::atomic<uint32_t> harden{0};  // net.core.bpf_jit_harden as set (0, 1 or 2)
  std::atomic<int> jit_form{static_cast<int>(bpf::JitForm::Auto)};  // net.pktpath.bpf_jit_form
};

const PernetRegistrar bpf_pernet{{"bpf", [](Net&) -> std::unique_ptr<PernetState> {
                                    auto s = std::make_unique<BpfNet>();
                                    s->engine.store(static_cast<int>(bpf::default_engine()));
                                    return s;
                                  }}};

BpfNet& bpf_net(Net& net) { return net.generic<BpfNet>(bpf_pernet.id); }

// Written during static initialisation only.
std::vector<BpfEngineReloadFn>& users() {
  static std::vector<BpfEngineReloadFn> v;
  return v;
}

const SysctlRegistrar engine_sysctl{
    {"net.pktpath.bpf_engine", "bpf_engine", "switch|threaded|jit",
     [](Net& n) { return std::string(bpf::engine_name(net_bpf_engine(n))); },
     [](Net& n, const std::string& v) -> Status {
       auto e = bpf::parse_engine(v);
       if (!e) return unexpected("net.pktpath.bpf_engine: expected switch, threaded or jit, not '" + v + "'", v);
       std::string err;
       if (!net_set_bpf_engine(n, *e, &err)) return unexpected("net.pktpath.bpf_engine: " + err);
       return {};
     }}};

// 1: programs load on the JIT; 0: on the threaded interpreter (Linux runs its
// interpreter). The same switch as net.pktpath.bpf_engine, seen as the kernel names it.
const SysctlRegistrar jit_enable_sysctl{
    {"net.core.bpf_jit_enable", nullptr, "0|1",
     [](Net& n) { return std::string(net_bpf_engine(n) == bpf::Engine::Jit ? "1" : "0"); },
     [](Net& n, const std::string& v) -> Status {
       uint32_t on = 0;
       if (Status st = sysctl_parse_uint("net.core.bpf_jit_enable", v, 0, 1, &on); !st) return st;
       const bpf::Engine cur = net_bpf_engine(n);
       const bpf::Engine want = on ? bpf::Engine::Jit : (cur == bpf::Engine::Jit ? bpf::Engine::Threaded : cur);
       std::string err;
       if (want != cur && !net_set_bpf_engine(n, want, &err)) return unexpected("net.core.bpf_jit_enable: " + err);
       return {};
     }}};

// Constant blinding for programs loaded from now on. Linux blinds unprivileged
// programs at 1 and all at 2; every loader here is privileged alike, so 1 and 2 blind
// every program.
const SysctlRegistrar jit_harden_sysctl{
    {"net.core.bpf_jit_harden", nullptr, "0|1|2",
     [](Net& n) { return std::to_string(bpf_net(n).harden.load()); },
     [](Net& n, const std::string& v) -> Status {
       uint32_t h = 0;
       if (Status st = sysctl_parse_uint("net.core.bpf_jit_harden", v, 0, 2, &h); !st) return st;
       bpf_net(n).harden.store(h);
       return {};
     }}};

// The JIT's code shape for programs loaded from now on (bpf/jit.h JitForm): auto
// (split for short forward-only programs), branching (one branch per conditional jump:
// faster where the traffic's branches predict), predicated (the whole program
// branch-free, wherever it qualifies) or split (one real branch on the first test, each
// region after it predicated, wherever the program qualifies).
const SysctlRegistrar jit_form_sysctl{
    {"net.pktpath.bpf_jit_form", "bpf_jit_form", "auto|branching|predicated|split",
     [](Net& n) {
       const auto f = static_cast<bpf::JitForm>(bpf_net(n).jit_form.load());
       return std::string(f == bpf::JitForm::Branching ? "branching"
                          : f == bpf::JitForm::Predicated ? "predicated"
                          : f == bpf::JitForm::Split      ? "split"
                                                           : "auto");
     },
     [](Net& n, const std::string& v) -> Status {
       bpf::JitForm f;
       if (v == "auto")
         f = bpf::JitForm::Auto;
       else if (v == "branching")
         f = bpf::JitForm::Branching;
       else if (v == "predicated")
         f = bpf::JitForm::Predicated;
       else if (v == "split")
         f = bpf::JitForm::Split;
       else
         return unexpected("net.pktpath.bpf_jit_form: expected auto, branching, predicated or split, not '" + v + "'", v);
       bpf_net(n).jit_form.store(static_cast<int>(f));
       return {};
     }}};

}  // namespace

BpfLoadConfig net_bpf_config(Net& net) {
  BpfNet& s = bpf_net(net);
  BpfLoadConfig c;
  c.engine = static_cast<bpf::Engine>(s.engine.load());
  c.jit.blind = s.harden.load() != 0;
  c.jit.form = static_cast<bpf::JitForm>(s.jit_form.load());
  return c;
}

bpf::Engine net_bpf_engine(Net& net) { return net_bpf_config(net).engine; }

std::optional<bpf::Program> net_bpf_load(Net& net, std::span<const bpf::Insn> insns, std::string* err) {
  const BpfLoadConfig c = net_bpf_config(net);
  return bpf::Program::load(insns, c.engine, c.jit, err);
}

bool net_set_bpf_engine(Net& net, bpf::Engine e, std::string* err) {
  BpfNet& s = bpf_net(net);
  std::lock_guard g(s.mu);
  s.engine.store(static_cast<int>(e));
  const BpfLoadConfig c = net_bpf_config(net);
  for (BpfEngineReloadFn fn : users())
    if (!fn(net, c, err)) return false;
  return true;
}

BpfEngineUser::BpfEngineUser(BpfEngineReloadFn reload) { users().push_back(reload); }

}  // namespace pktpath
