// The runtime API: load (check + prepare for an engine), run on a PacketView, batch run.
//
//   std::string err;
//   auto prog = Program::load(insns, Engine::Threaded, &err);   // nullopt + err on reject
//   uint32_t verdict = prog->run(view);
//
// Engines give identical results (tests/bpf checks this):
//   Switch    the plain reference interpreter over the raw instructions;
//   Threaded  computed-goto threaded code, decoded once at load (handler address plus
//             pre-resolved operands; one indirect jump per instruction — document 003);
//   Jit       x86-64 code (bpf/jit.h); a program the JIT cannot compile runs on
//             the threaded engine instead: engine() says Threaded and
//             jit_fallback_reason() why.
//
// A Program is immutable after load and may be run from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/check.h"
#include "bpf/insn.h"
#include "bpf/packet_view.h"

namespace pktpath::bpf {

enum class Engine { Switch, Threaded, Jit };
struct JitOptions;  // jit.h

const char* engine_name(Engine e);
std::optional<Engine> parse_engine(std::string_view name);

// The engine a filter gets when it is attached (tc cls_bpf, taps) or run without
// --engine: the JIT, unless the environment variable PKTPATH_BPF_ENGINE=switch|threaded|jit
// (read once) forces another. jit.cc.
Engine default_engine();

// The entry every engine provides: `image` is the engine's prepared form.
using RunFn = uint32_t (*)(const void* image, const PacketView& v);

// The entry for a linear buffer without metadata, the packet passed in registers instead
// of a PacketView built in memory (the C API's call without metadata): the same result as
// RunFn on PacketView::linear(p, buflen) with wire_len set.
using LinearFn = uint32_t (*)(const void* image, const uint8_t* p, uint32_t wire_len, uint32_t buflen);

// What an engine's prepare step hands back. `owner` keeps the image alive (decoded
// instructions, or executable memory for a JIT). `linear`, where the engine has one, is
// the LinearFn entry over `linear_image` (kept alive by `linear_owner`).
struct PreparedImage {
  RunFn fn = nullptr;
  const void* image = nullptr;
  std::shared_ptr<const void> owner;
  LinearFn linear = nullptr;
  const void* linear_image = nullptr;
  std::shared_ptr<const void> linear_owner;
};

// Engine prepare steps. Each takes a program that passed check_program (kernel mode);
// the _bounded forms take one that passed only userland mode (check.h).
bool prepare_switch(std::span<const Insn> prog, PreparedImage* out, std::string* err);
bool prepare_threaded(std::span<const Insn> prog, PreparedImage* out, std::string* err);
bool prepare_switch_bounded(std::span<const Insn> prog, PreparedImage* out, std::string* err);
bool prepare_threaded_bounded(std::span<const Insn> prog, PreparedImage* out, std::string* err);
bool prepare_jit(std::span<const Insn> prog, PreparedImage* out, std::string* err);  // jit.cc

// The threaded engine's two shapes (interp_threaded.cc), as the JIT's (jit.h JitForm):
//   Branching   one handler per instruction, jumps move the instruction pointer;
//   Predicated  a forward-only program's basic blocks as one fixed sequence of handlers
//               that every packet runs; each block commits its effect on A and X, or
//               undoes it, by whether the packet's path is in it. The dispatch jumps then
//               follow the same order for every packet and predict; every block runs.
// Auto (what prepare_threaded and _bounded use) is Branching: on mixed traffic the
// predicated form measured slower (docs/benchmarks.md); a backward jump (userland's
// protochain loop) or a random draw (SKF_AD_RANDOM, whose per-thread state a block off
// the path would advance) always runs Branching.
enum class ThreadedForm : uint8_t { Auto, Branching, Predicated };
bool threaded_predicated(std::span<const Insn> prog, ThreadedForm form);
bool prepare_threaded_form(std::span<const Insn> prog, bool bounded, ThreadedForm form, PreparedImage* out,
                           std::string* err);
// The branching form's superinstructions for a checked program (docs/bpf.md): slots
// testing two `jeq` constants in one branch, pairs of load-and-test groups, and tests
// returning one of two `ret #k` by a select, and guarded tests (a group or pair whose way
// out to `ret #0` clears a mask instead of branching), and libpcap's IPv4 transport
// header prologue in one slot (headers; its groups count as guarded too), and
// protochain's step over an IPv6 extension header in one slot (ext_steps). Counted by the
// slot that runs them (pairs_or: the pairs among `pairs` whose tests are JEQ-or).
struct ThreadedShapes {
  unsigned jeq_or = 0, pairs = 0, pairs_or = 0, returning = 0, guarded = 0, headers = 0, ext_steps = 0;
};
ThreadedShapes threaded_shapes(std::span<const Insn> prog);

// What of a packet a program can read, found once at load (the idea of the kernel's old
// x86 cBPF JIT "seen" flags: load skb fields only for programs that use them). A caller
// building a view per packet fills only these parts; the rest is never read.
enum ViewNeeds : uint8_t {
  kViewNeedsNothing = 0,  // no packet load at all: the result is the same for every packet
  kViewNeedsData = 1,     // bytes, lengths and header offsets (LD/LDX ABS, IND, LEN, MSH)
  kViewNeedsMeta = 2,     // ancillary fields (SKF_AD_*), which may also read the bytes
};
uint8_t view_needs(std::span<const Insn> prog);

// The reference interpreter, callable directly (tests, fuzzing); the program must have
// passed the kernel checker.
uint32_t run_switch(const Insn* prog, const PacketView& v);
// libpcap's bpf_filter semantics on an unchecked program of unknown length (as
// bpf_filter, it trusts jump targets): backward jumps bounded (each charges 4096 against
// kUserlandBound), scratch reads before writes give 0. The span form charges its length.
uint32_t run_userland(const Insn* prog, const PacketView& v);
uint32_t run_userland(std::span<const Insn> prog, const PacketView& v);

class Program {
 public:
  // Checks (kernel rules) and prepares. On failure returns nullopt and sets *err to the
  // checker's reason ("insn 3: ...") or the engine's error.
  static std::optional<Program> load(std::span<const Insn> prog, Engine engine, std::string* err);
  // The same in an acceptance mode (check.h). A userland program that the kernel's rules
  // would refuse (a backward jump, a scratch read before a write) runs bounded on every
  // engine (check.h kUserlandBound; the JIT: prepare_jit_bounded).
  static std::optional<Program> load(std::span<const Insn> prog, Engine engine, Acceptance mode,
                                     std::string* err);
  // The same with explicit JIT options (the forms above use JitOptions{}).
  static std::optional<Program> load(std::span<const Insn> prog, Engine engine, const JitOptions& jit,
                                     std::string* err);
  static std::optional<Program> load(std::span<const Insn> prog, Engine engine, Acceptance mode,
                                     const JitOptions& jit, std::string* err);

  uint32_t run(const PacketView& v) const { return image_.fn(image_.image, v); }
  // The same on a linear buffer of buflen bytes whose wire length is wire_len, with no
  // metadata (PacketView::linear): through the engine's LinearFn when it has one.
  uint32_t run_linear(const uint8_t* p, uint32_t wire_len, uint32_t buflen) const {
    if (image_.linear) return image_.linear(image_.linear_image, p, wire_len, buflen);
    return run(PacketView::linear(p, buflen, wire_len));
  }
  // Runs every view; out[i] gets views[i]'s result.
  void run_batch(std::span<const PacketView> views, uint32_t* out) const {
    for (size_t i = 0; i < views.size(); ++i) out[i] = image_.fn(image_.image, views[i]);
  }

  // The engine that runs this program (Threaded when a requested JIT fell back).
  Engine engine() const { return engine_; }
  Engine requested_engine() const { return requested_; }
  // Non-empty when Engine::Jit was requested and the JIT could not compile the program.
  const std::string& jit_fallback_reason() const { return jit_fallback_; }
  const PreparedImage& image() const { return image_; }
  const Insns& insns() const { return insns_; }
  uint8_t view_needs() const { return needs_; }
  Acceptance acceptance() const { return acceptance_; }
  // True when the program runs with the userland bound (it passed only userland rules).
  bool bounded() const { return bounded_; }

 private:
  Program() = default;
  Engine engine_ = Engine::Switch;
  Engine requested_ = Engine::Switch;
  Acceptance acceptance_ = Acceptance::Kernel;
  bool bounded_ = false;
  std::string jit_fallback_;
  Insns insns_;
  PreparedImage image_;
  uint8_t needs_ = kViewNeedsData | kViewNeedsMeta;
};

}  // namespace pktpath::bpf
