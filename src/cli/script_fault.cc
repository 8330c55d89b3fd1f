// The `fault` script line: fault injection beyond the test driver's own link options.
//
//   fault alloc every N    every Nth packet allocation on each Cpu fails as if the
//                          pool were empty (failslab's interval); N = 0 turns it off
//
// Senders count such a failure as an error (send, pktgen); nothing is queued or dropped
// for it, since no packet was made.
#include "cli/script.h"
#include "cli/script_exec.h"
#include "cli/script_ext.h"

namespace pktpath::cli {

namespace {

struct FaultAllocLine final : ExtLine {
  uint32_t every = 0;
  bool execute(ScriptRunner& r, ScriptError&) const override {
    r.drain_pending();
    r.set_alloc_fail_every(every);
    return true;
  }
};

}  // namespace

bool parse_fault_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  auto word = [&](size_t i) -> const std::string& {
    static const std::string kEnd;
    return i < w.size() ? w[i] : kEnd;
  };
  if (word(1) != "alloc") return fail(err, word(1), "expected `fault alloc every N`");
  if (word(2) != "every") return fail(err, word(2), "expected `fault alloc every N`");
  auto line = std::make_shared<FaultAllocLine>();
  if (!parse_u32(word(3), line->every))
    return fail(err, word(3), "fault alloc every: expected N in 0..4294967295 (0 = off)");
  if (w.size() > 4) return fail(err, w[4], "unexpected \"" + w[4] + "\"");
  out.line = std::move(line);
  return true;
}

}  // namespace pktpath::cli
