// The engine newly attached classic BPF programs load on, shared by every user of
// programs on the packet path (tc filters, capture taps). Default: bpf::default_engine()
// (the JIT unless PKTPATH_BPF_ENGINE or set_default_engine force an interpreter).
// Setting it asks each registered user to reload its attached programs.
#pragma once

#include <string>

#include "bpf/program.h"

namespace pktpath {

bpf::Engine net_bpf_engine();
// Sets the engine and reloads every attached program through the registered reloaders,
// in registration order; false with *err when one fails.
bool net_set_bpf_engine(bpf::Engine e, std::string* err);

// A user of programs that must follow the engine (registered at static initialisation by
// a BpfEngineUser object in its file).
using BpfEngineReloadFn = bool (*)(bpf::Engine e, std::string* err);
struct BpfEngineUser {
  explicit BpfEngineUser(BpfEngineReloadFn reload);
};

}  // namespace pktpath
