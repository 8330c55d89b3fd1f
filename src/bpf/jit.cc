// prepare_jit: convergence passes over the emitter, then a W^X mapping of the result.
#include "bpf/jit.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <random>

#include "bpf/check.h"
#include "bpf/jit_emit.h"

namespace pktpath::bpf {

JitCode::~JitCode() {
  if (mem) munmap(mem, map_len);
}

namespace {
std::atomic<int> g_default_engine{-1};  // PKTPATH_BPF_ENGINE, read once; -1: not read yet
}  // namespace

Engine default_engine() {
  int e = g_default_engine.load(std::memory_order_relaxed);
  if (e >= 0) return static_cast<Engine>(e);
  Engine d = Engine::Jit;
  if (const char* env = std::getenv("PKTPATH_BPF_ENGINE"))
    if (auto p = parse_engine(env)) d = *p;
  int expected = -1;
  g_default_engine.compare_exchange_strong(expected, static_cast<int>(d));
  return static_cast<Engine>(g_default_engine.load(std::memory_order_relaxed));
}


bool predicated_jit_ok(std::span<const Insn> prog) {
  if (prog.empty() || has_backward_jump(prog)) return false;
  for (const Insn& in : prog) {
    if (in.code == (BPF_ALU | BPF_DIV | BPF_X) || in.code == (BPF_ALU | BPF_MOD | BPF_X)) return false;
    if (bpf_class(in.code) == BPF_LD && bpf_mode(in.code) == BPF_ABS && in_ancillary_window(in.k)) {
      switch (in.k - static_cast<uint32_t>(SKF_AD_OFF)) {  // the inline forms that cannot end the program
        case SKF_AD_PROTOCOL: case SKF_AD_VLAN_TPID: case SKF_AD_PKTTYPE: case SKF_AD_MARK:
        case SKF_AD_RXHASH: case SKF_AD_CPU: case SKF_AD_QUEUE: case SKF_AD_VLAN_TAG:
        case SKF_AD_VLAN_TAG_PRESENT: case SKF_AD_ALU_XOR_X: break;
        default: return false;
      }
    }
  }
  return true;
}

namespace {

constexpr unsigned kMaxPasses = 20;

// Maps `code` as a fresh read+write region, copies it in, then flips the pages to
// read+execute (mirrors bpf_jit_binary_lock_ro's W^X rule): never writable and
// executable at once.
std::shared_ptr<JitCode> map_wx(const std::vector<uint8_t>& code, std::string* err) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t len = (code.size() + page - 1) / page * page;
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    if (err) *err = "jit: mmap failed";
    return nullptr;
  }
  auto jc = std::make_shared<JitCode>();
  jc->mem = m;
  jc->map_len = len;
  jc->code_len = code.size();
  std::memcpy(m, code.data(), code.size());
  std::memset(static_cast<uint8_t*>(m) + code.size(), 0xcc, len - code.size());  // int3 padding
  if (mprotect(m, len, PROT_READ | PROT_EXEC) != 0) {
    if (err) *err = "jit: mprotect to read+execute failed";
    return nullptr;  // jc's destructor unmaps
  }
  return jc;
}

}  // namespace

namespace {

// One image: the RunFn entry, or the LinearFn one (PassInput::linear).
std::shared_ptr<JitCode> compile_image(std::span<const Insn> prog, const JitOptions& opt, bool bounded,
                                       bool linear, std::string* err) {
  jit_detail::PassInput in;
  in.prog = prog;
  in.blind = opt.blind;
  in.bounded = bounded;
  in.linear = linear;
  in.predicated = !opt.blind && opt.form != JitForm::Branching && predicated_jit_ok(prog) &&
                  (opt.form != JitForm::Auto || prog.size() <= kPredicatedMaxInsns);
  in.split = in.predicated && opt.form != JitForm::Predicated;
  in.split_auto = opt.form == JitForm::Auto;
  if (opt.blind) in.blind_seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  std::vector<uint8_t> short_ok;
  in.short_ok = &short_ok;
  jit_detail::PassOutput po;
  unsigned passes = 0;
  try {
    // Start with every jump near, then shorten the ones a layout showed fit in rel8.
    // Shortening only ever shrinks distances, so a jump found to fit keeps fitting and
    // the flags grow monotonically until a pass changes nothing (do_jit's convergence).
    for (;;) {
      jit_detail::emit_pass(in, &po);
      ++passes;
      bool changed = false;
      if (short_ok.size() < po.fits_short.size()) short_ok.resize(po.fits_short.size(), 0);
      for (size_t s = 0; s < po.fits_short.size(); ++s)
        if (po.fits_short[s] && !short_ok[s]) {
          short_ok[s] = 1;
          changed = true;
        }
      // Each pass's image is valid on its own (the assembler checked every rel8), so
      // stopping at the cap only leaves some jumps longer than they could be.
      if (!changed || passes >= kMaxPasses) break;
    }
  } catch (const std::exception& e) {
    if (err) *err = std::string("jit: ") + e.what();
    return nullptr;
  }
  auto jc = map_wx(po.code, err);
  if (!jc) return nullptr;
  jc->passes = passes;
  jc->blinded = opt.blind;
  jc->predicated = in.predicated;
  jc->regions = po.regions;
  return jc;
}

// The program's image and, for a program without ancillary loads, its linear twin: the
// same code with the packet in registers (the C API's call without metadata).
bool compile(std::span<const Insn> prog, const JitOptions& opt, bool bounded, PreparedImage* out,
             std::string* err) {
  if (opt.force_failure) {
    if (err) *err = "jit: compilation disabled (forced failure)";
    return false;
  }
  auto jc = compile_image(prog, opt, bounded, false, err);
  if (!jc) return false;
  out->fn = reinterpret_cast<RunFn>(jc->mem);
  out->image = jc->mem;
  out->owner = std::move(jc);
  if (!(view_needs(prog) & kViewNeedsMeta)) {
    std::string ignored;  // without it, run_linear builds the view and calls fn
    if (auto lin = compile_image(prog, opt, bounded, true, &ignored)) {
      out->linear = reinterpret_cast<LinearFn>(lin->mem);
      out->linear_image = lin->mem;
      out->linear_owner = std::move(lin);
    }
  }
  return true;
}

}  // namespace

bool prepare_jit_with(std::span<const Insn> prog, const JitOptions& opt, PreparedImage* out,
                      std::string* err) {
  return compile(prog, opt, false, out, err);
}

bool prepare_jit_bounded(std::span<const Insn> prog, const JitOptions& opt, PreparedImage* out,
                         std::string* err) {
  return compile(prog, opt, true, out, err);
}

bool prepare_jit(std::span<const Insn> prog, PreparedImage* out, std::string* err) {
  return prepare_jit_with(prog, JitOptions{}, out, err);
}

const JitCode* jit_code_of(const PreparedImage& img) {
  // The JIT's images are their own entry point; no other engine's are.
  if (!img.fn || reinterpret_cast<const void*>(img.fn) != img.image) return nullptr;
  return static_cast<const JitCode*>(img.owner.get());
}

}  // namespace pktpath::bpf
