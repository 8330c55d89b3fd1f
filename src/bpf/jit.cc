// Placeholder for the x86-64 JIT (issue 5): it replaces this file with a prepare_jit that
// emits code and fills PreparedImage{fn, image, owner}; the semantics helpers it calls
// for slow paths are in bpf/semantics.h.
#include "bpf/program.h"

namespace pktpath::bpf {

bool prepare_jit(std::span<const Insn>, PreparedImage*, std::string* err) {
  if (err) *err = "jit: unavailable";
  return false;
}

}  // namespace pktpath::bpf
