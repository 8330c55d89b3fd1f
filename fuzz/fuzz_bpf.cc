// libFuzzer target for the classic BPF machine: bytes -> parse or decode -> check ->
// run on every engine: switch, threaded and the x86-64 JIT (and libpcap's bpf_filter
// where its semantics coincide) on a packet built from the rest of the input. Aborts
// when the engines disagree.
//
// Input: byte 0 selects the mode and packet shape, then
//   mode 0 (raw):  byte 1 = instruction count n (1..64), n * 8 bytes of sock_filter,
//                  the rest is the packet;
//   mode 1 (text): everything up to the first NUL is bytecode text (tc, -ddd or -dd
//                  form), the rest is the packet.
#include <pcap/pcap.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "bpf/check.h"
#include "bpf/jit.h"
#include "bpf/parse.h"
#include "bpf/program.h"

using namespace pktpath::bpf;

namespace {

// Programs whose every instruction means the same in libpcap's bpf_filter: no ancillary
// or negative-offset loads, no indirect loads (libpcap does not sign-extend X + k) and no
// shifts by X (libpcap zeroes A for X >= 32; the kernel masks).
bool libpcap_comparable(const Insns& p) {
  for (const Insn& in : p) {
    uint16_t c = in.code;
    if (bpf_class(c) == BPF_LD && bpf_mode(c) == BPF_ABS && static_cast<int32_t>(in.k) < 0) return false;
    if (bpf_class(c) == BPF_LDX && bpf_mode(c) == BPF_MSH && static_cast<int32_t>(in.k) < 0) return false;
    if (bpf_class(c) == BPF_LD && bpf_mode(c) == BPF_IND) return false;
    if (c == (BPF_ALU | BPF_LSH | BPF_X) || c == (BPF_ALU | BPF_RSH | BPF_X)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0];
  Insns prog;
  std::string err;
  size_t pos;
  if ((mode & 1) == 0) {
    size_t n = 1 + data[1] % 64;
    if (size < 2 + n * 8) return 0;
    prog.resize(n);
    std::memcpy(prog.data(), data + 2, n * 8);
    pos = 2 + n * 8;
  } else {
    const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(data + 1, 0, size - 1));
    size_t tlen = nul ? static_cast<size_t>(nul - (data + 1)) : size - 1;
    std::string_view text(reinterpret_cast<const char*>(data + 1), tlen);
    if (!parse_bytecode_file_text(text, &prog, &err)) {
      if (err.empty()) std::abort();  // every rejection carries a message
      return 0;
    }
    pos = nul ? tlen + 2 : size;
  }
  // Kernel rules first; a program only libpcap's userland rules accept (backward jumps,
  // scratch reads before writes) runs bounded, on every engine.
  Acceptance rules = Acceptance::Kernel;
  CheckResult c = check_program(prog);
  if (!c.ok) {
    if (c.reason.empty()) std::abort();
    rules = Acceptance::Userland;
    CheckResult u = check_program(prog, rules);
    if (!u.ok) {
      if (u.reason.empty()) std::abort();
      return 0;
    }
  }
  auto sw = Program::load(prog, Engine::Switch, rules, &err);
  auto th = Program::load(prog, Engine::Threaded, rules, &err);
  // The JIT without its fallback: a program it cannot compile is a finding. Every
  // other input also runs with constant blinding.
  JitOptions jo;
  jo.allow_fallback = false;
  jo.blind = (size & 1) != 0;
  auto jt = Program::load(prog, Engine::Jit, rules, jo, &err);
  if (!sw || !th || !jt) {
    std::fprintf(stderr, "load failed: %s\n", err.c_str());
    std::abort();  // the checker accepted it
  }

  // The packet: the remaining bytes, optionally split into a head and two fragments.
  const uint8_t* pkt = data + pos;
  const uint32_t len = static_cast<uint32_t>(size - pos);
  PacketView v = PacketView::linear(pkt, len);
  v.meta.has_dev = (mode & 2) != 0;
  v.meta.protocol = (mode & 4) ? 0xdd86 : 0x0008;
  v.meta.mark = len * 2654435761u;
  pktpath::PacketFrag frags[2];
  if ((mode & 8) && len >= 2) {
    uint32_t head = (mode >> 4) % (len + 1);
    uint32_t f1 = (len - head) / 2;
    v.headlen = head;
    v.net_off = head < 14 ? head : 14;
    frags[0] = {pkt + head, f1};
    frags[1] = {pkt + head + f1, len - head - f1};
    v.frags = frags;
    v.nr_frags = 2;
  }
  for (const Insn& in : prog)  // RANDOM is not deterministic between runs
    if (is_ancillary_load(in) && in.k - static_cast<uint32_t>(SKF_AD_OFF) == SKF_AD_RANDOM) return 0;
  uint32_t a = sw->run(v), b = th->run(v), j = jt->run(v);
  if (a != b || a != j) {
    std::fprintf(stderr, "engines disagree: switch %u threaded %u jit %u\n", a, b, j);
    std::abort();
  }
  // The linear entry (no view; the threaded engine's and the JIT's twin) on the same bytes.
  if (!v.nr_frags && !(sw->view_needs() & kViewNeedsMeta)) {
    uint32_t lb = th->run_linear(pkt, len, len), lj = jt->run_linear(pkt, len, len);
    if (lb != a || lj != a) {
      std::fprintf(stderr, "linear entry disagrees: switch %u threaded %u jit %u\n", a, lb, lj);
      std::abort();
    }
  }
  // libpcap's bpf_filter has no bound: a looping program would hang it.
  if (!v.nr_frags && !sw->bounded() && libpcap_comparable(prog)) {
    uint32_t p = bpf_filter(reinterpret_cast<const bpf_insn*>(prog.data()), pkt, len, len);
    if (p != a) {
      std::fprintf(stderr, "libpcap disagrees: libpcap %u pktpath %u\n", p, a);
      std::abort();
    }
  }
  return 0;
}
