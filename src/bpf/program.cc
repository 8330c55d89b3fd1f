#include "bpf/program.h"

#include "bpf/check.h"
#include "bpf/jit.h"

namespace pktpath::bpf {

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::Switch: return "switch";
    case Engine::Threaded: return "threaded";
    case Engine::Jit: return "jit";
  }
  return "?";
}

std::optional<Engine> parse_engine(std::string_view name) {
  if (name == "switch") return Engine::Switch;
  if (name == "threaded") return Engine::Threaded;
  if (name == "jit") return Engine::Jit;
  return std::nullopt;
}

uint8_t view_needs(std::span<const Insn> prog) {
  uint8_t needs = kViewNeedsNothing;
  for (const Insn& i : prog) {
    const uint16_t cls = bpf_class(i.code), mode = bpf_mode(i.code);
    if (cls == BPF_LD && (mode == BPF_ABS || mode == BPF_IND || mode == BPF_LEN)) {
      needs |= kViewNeedsData;
      if (mode == BPF_ABS && in_ancillary_window(i.k)) needs |= kViewNeedsMeta;
    } else if (cls == BPF_LDX && (mode == BPF_LEN || mode == BPF_MSH)) {
      needs |= kViewNeedsData;
    }
  }
  return needs;
}

std::optional<Program> Program::load(std::span<const Insn> prog, Engine engine, std::string* err) {
  return load(prog, engine, Acceptance::Kernel, JitOptions{}, err);
}

std::optional<Program> Program::load(std::span<const Insn> prog, Engine engine, Acceptance mode,
                                     std::string* err) {
  return load(prog, engine, mode, JitOptions{}, err);
}

std::optional<Program> Program::load(std::span<const Insn> prog, Engine engine, const JitOptions& jit,
                                     std::string* err) {
  return load(prog, engine, Acceptance::Kernel, jit, err);
}

std::optional<Program> Program::load(std::span<const Insn> prog, Engine engine, Acceptance mode,
                                     const JitOptions& jit, std::string* err) {
  CheckResult c = check_program(prog, mode);
  if (!c.ok) {
    if (err) *err = c.reason;
    return std::nullopt;
  }
  Program p;
  p.engine_ = engine;
  p.requested_ = engine;
  p.acceptance_ = mode;
  p.insns_.assign(prog.begin(), prog.end());
  p.needs_ = bpf::view_needs(prog);
  // A userland program the kernel's classic checks would refuse runs bounded (check.h,
  // kUserlandBound); one refused only by the eBPF translation's jump limit runs as it is.
  if (mode == Acceptance::Userland) {
    const CheckResult k = check_program(prog, Acceptance::Kernel);
    p.bounded_ = !k.ok && !k.translation;
  }
  std::string e;
  bool ok = false;
  if (p.bounded_) {
    if (engine == Engine::Jit) {
      ok = prepare_jit_bounded(p.insns_, jit, &p.image_, &e);
      if (!ok && jit.allow_fallback) {  // the JIT refused: run bounded on the threaded engine
        p.jit_fallback_ = e;
        p.engine_ = Engine::Threaded;
      }
    }
    if (p.engine_ == Engine::Switch) ok = prepare_switch_bounded(p.insns_, &p.image_, &e);
    else if (p.engine_ == Engine::Threaded) ok = prepare_threaded_bounded(p.insns_, &p.image_, &e);
    if (!ok) {
      if (err) *err = e;
      return std::nullopt;
    }
    return p;
  }
  switch (engine) {
    case Engine::Switch: ok = prepare_switch(p.insns_, &p.image_, &e); break;
    case Engine::Threaded: ok = prepare_threaded(p.insns_, &p.image_, &e); break;
    case Engine::Jit:
      ok = prepare_jit_with(p.insns_, jit, &p.image_, &e);
      if (!ok && jit.allow_fallback) {  // the JIT refused: run on the threaded engine and keep the reason
        p.jit_fallback_ = e;
        p.engine_ = Engine::Threaded;
        ok = prepare_threaded(p.insns_, &p.image_, &e);
      }
      break;
  }
  if (!ok) {
    if (err) *err = e;
    return std::nullopt;
  }
  return p;
}

}  // namespace pktpath::bpf
