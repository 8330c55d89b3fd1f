// How a Net loads classic BPF programs on its packet path (tc filters, capture taps):
// the engine (net.pktpath.bpf_engine; default bpf::default_engine(), the JIT unless
// PKTPATH_BPF_ENGINE forces an interpreter) and the JIT's options
// (net.core.bpf_jit_enable, net.core.bpf_jit_harden, net.pktpath.bpf_jit_form). The values are per Net; bpf itself
// knows no Net: callers pass what net_bpf_config returns. Changing the engine asks each
// registered user to reload the programs attached in that Net.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "bpf/jit.h"
#include "bpf/program.h"

namespace pktpath {

class Net;

struct BpfLoadConfig {
  bpf::Engine engine = bpf::Engine::Threaded;
  bpf::JitOptions jit;
};

BpfLoadConfig net_bpf_config(Net& net);
bpf::Engine net_bpf_engine(Net& net);
// Loads a program as `net` says (check + prepare).
std::optional<bpf::Program> net_bpf_load(Net& net, std::span<const bpf::Insn> insns, std::string* err);
// Sets the engine and reloads every program attached in `net` through the registered
// reloaders, in registration order; false with *err when one fails.
bool net_set_bpf_engine(Net& net, bpf::Engine e, std::string* err);

// A user of programs that must follow the engine (registered at static initialisation by
// a BpfEngineUser object in its file): reloads what is attached in `net`.
using BpfEngineReloadFn = bool (*)(Net& net, const BpfLoadConfig& cfg, std::string* err);
struct BpfEngineUser {
  explicit BpfEngineUser(BpfEngineReloadFn reload);
};

}  // namespace pktpath
