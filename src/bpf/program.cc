#include "bpf/program.h"

#include "bpf/check.h"

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

std::optional<Program> Program::load(std::span<const Insn> prog, Engine engine, std::string* err) {
  CheckResult c = check_program(prog);
  if (!c.ok) {
    if (err) *err = c.reason;
    return std::nullopt;
  }
  Program p;
  p.engine_ = engine;
  p.insns_.assign(prog.begin(), prog.end());
  std::string e;
  bool ok = false;
  switch (engine) {
    case Engine::Switch: ok = prepare_switch(p.insns_, &p.image_, &e); break;
    case Engine::Threaded: ok = prepare_threaded(p.insns_, &p.image_, &e); break;
    case Engine::Jit: ok = prepare_jit(p.insns_, &p.image_, &e); break;
  }
  if (!ok) {
    if (err) *err = e;
    return std::nullopt;
  }
  return p;
}

}  // namespace pktpath::bpf
