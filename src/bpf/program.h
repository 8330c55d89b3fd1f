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
//   Jit       x86-64 code (issue 5); until it lands, load fails with "jit: unavailable".
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

#include "bpf/insn.h"
#include "bpf/packet_view.h"

namespace pktpath::bpf {

enum class Engine { Switch, Threaded, Jit };

const char* engine_name(Engine e);
std::optional<Engine> parse_engine(std::string_view name);

// The entry every engine provides: `image` is the engine's prepared form.
using RunFn = uint32_t (*)(const void* image, const PacketView& v);

// What an engine's prepare step hands back. `owner` keeps the image alive (decoded
// instructions, or executable memory for a JIT).
struct PreparedImage {
  RunFn fn = nullptr;
  const void* image = nullptr;
  std::shared_ptr<const void> owner;
};

// Engine prepare steps. Each takes a program that passed check_program.
bool prepare_switch(std::span<const Insn> prog, PreparedImage* out, std::string* err);
bool prepare_threaded(std::span<const Insn> prog, PreparedImage* out, std::string* err);
bool prepare_jit(std::span<const Insn> prog, PreparedImage* out, std::string* err);  // jit.cc

// The reference interpreter, callable directly (tests, fuzzing).
uint32_t run_switch(const Insn* prog, const PacketView& v);

class Program {
 public:
  // Checks (kernel rules) and prepares. On failure returns nullopt and sets *err to the
  // checker's reason ("insn 3: ...") or the engine's error.
  static std::optional<Program> load(std::span<const Insn> prog, Engine engine, std::string* err);

  uint32_t run(const PacketView& v) const { return image_.fn(image_.image, v); }
  // Runs every view; out[i] gets views[i]'s result.
  void run_batch(std::span<const PacketView> views, uint32_t* out) const {
    for (size_t i = 0; i < views.size(); ++i) out[i] = image_.fn(image_.image, views[i]);
  }

  Engine engine() const { return engine_; }
  const Insns& insns() const { return insns_; }

 private:
  Program() = default;
  Engine engine_ = Engine::Switch;
  Insns insns_;
  PreparedImage image_;
};

}  // namespace pktpath::bpf
