// The C API (include/pktpath/bpf.h) over Program, the checker and the interpreters.
#define PKTPATH_BPF_BUILDING 1
#include "pktpath/bpf.h"

#include <pcap/pcap.h>

#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <string>

#include "base/compiler.h"
#include "bpf/check.h"
#include "bpf/insn.h"
#include "bpf/packet_view.h"
#include "bpf/parse.h"
#include "bpf/program.h"

static_assert(sizeof(pktpath_bpf_insn) == sizeof(bpf_insn) &&
                  offsetof(pktpath_bpf_insn, code) == offsetof(bpf_insn, code) &&
                  offsetof(pktpath_bpf_insn, jt) == offsetof(bpf_insn, jt) &&
                  offsetof(pktpath_bpf_insn, jf) == offsetof(bpf_insn, jf) &&
                  offsetof(pktpath_bpf_insn, k) == offsetof(bpf_insn, k),
              "pktpath_bpf_insn must match libpcap's struct bpf_insn");
static_assert(sizeof(pktpath_bpf_insn) == sizeof(pktpath::bpf::Insn) &&
                  offsetof(pktpath_bpf_insn, jt) == offsetof(pktpath::bpf::Insn, jt) &&
                  offsetof(pktpath_bpf_insn, jf) == offsetof(pktpath::bpf::Insn, jf) &&
                  offsetof(pktpath_bpf_insn, k) == offsetof(pktpath::bpf::Insn, k),
              "pktpath_bpf_insn must match Insn (struct sock_filter)");
static_assert(PKTPATH_BPF_NETMASK_UNKNOWN == PCAP_NETMASK_UNKNOWN);

using pktpath::bpf::Acceptance;
using pktpath::bpf::Engine;
using pktpath::bpf::Insn;
using pktpath::bpf::Insns;
using pktpath::bpf::PacketView;
using pktpath::bpf::Program;

struct pktpath_bpf {
  Program prog;
};

namespace {

Acceptance acceptance_of(int mode) {
  return mode == PKTPATH_BPF_KERNEL ? Acceptance::Kernel : Acceptance::Userland;
}

void set_error(char* errbuf, size_t size, const std::string& msg) {
  if (errbuf == nullptr || size == 0) return;
  size_t n = msg.size() < size - 1 ? msg.size() : size - 1;
  std::memcpy(errbuf, msg.data(), n);
  errbuf[n] = '\0';
}

std::optional<Engine> engine_of(int engine) {
  switch (engine) {
    case PKTPATH_BPF_ENGINE_DEFAULT: return pktpath::bpf::default_engine();
    case PKTPATH_BPF_ENGINE_SWITCH: return Engine::Switch;
    case PKTPATH_BPF_ENGINE_THREADED: return Engine::Threaded;
    case PKTPATH_BPF_ENGINE_JIT: return Engine::Jit;
  }
  return std::nullopt;
}

int engine_value(Engine e) {
  switch (e) {
    case Engine::Switch: return PKTPATH_BPF_ENGINE_SWITCH;
    case Engine::Threaded: return PKTPATH_BPF_ENGINE_THREADED;
    case Engine::Jit: return PKTPATH_BPF_ENGINE_JIT;
  }
  return PKTPATH_BPF_ENGINE_SWITCH;
}

pktpath_bpf* load(std::span<const Insn> insns, int mode, int engine, char* errbuf, size_t errbuf_size) {
  if (mode != PKTPATH_BPF_KERNEL && mode != PKTPATH_BPF_USERLAND) {
    set_error(errbuf, errbuf_size, "unknown acceptance mode " + std::to_string(mode));
    return nullptr;
  }
  std::optional<Engine> e = engine_of(engine);
  if (!e) {
    set_error(errbuf, errbuf_size, "unknown engine " + std::to_string(engine));
    return nullptr;
  }
  std::string err;
  std::optional<Program> p = Program::load(insns, *e, acceptance_of(mode), &err);
  if (!p) {
    set_error(errbuf, errbuf_size, err);
    return nullptr;
  }
  auto* h = new (std::nothrow) pktpath_bpf{std::move(*p)};
  if (h == nullptr) set_error(errbuf, errbuf_size, "out of memory");
  return h;
}

// The view of a caller's buffer, built in place by the caller's frame (returned by value:
// copying a freshly written view through a pointer costs a store-forwarding stall per call).
PacketView view_of(const unsigned char* p, unsigned int wirelen, unsigned int buflen, const pktpath_bpf_meta* m) {
  PacketView v = PacketView::linear(p, buflen, wirelen);
  if (m == nullptr) return v;
  v.mac_off = m->mac_off;
  v.net_off = m->net_off;
  v.meta.mark = m->mark;
  v.meta.hash = m->hash;
  v.meta.ifindex = m->ifindex;
  v.meta.cpu = m->cpu;
  v.meta.protocol = m->protocol;
  v.meta.queue_mapping = m->queue_mapping;
  v.meta.vlan_tci = m->vlan_tci;
  v.meta.vlan_proto = m->vlan_proto;
  v.meta.hatype = m->hatype;
  v.meta.pkt_type = m->pkt_type;
  v.meta.vlan_present = m->vlan_present != 0;
  v.meta.has_dev = m->has_dev != 0;
  return v;
}

// pktpath_bpf_run with metadata: out of line, so that the common call (no metadata)
// builds no view and makes no stack frame before it jumps into the engine.
PP_NOINLINE uint32_t run_with_meta(const pktpath::bpf::Program& prog, const unsigned char* p, unsigned int wirelen,
                                   unsigned int buflen, const pktpath_bpf_meta* meta) {
  return prog.run(view_of(p, wirelen, buflen, meta));
}

}  // namespace

extern "C" {

void pktpath_bpf_meta_init(pktpath_bpf_meta* meta) {
  std::memset(meta, 0, sizeof(*meta));
  pktpath::bpf::PacketMeta d;
  meta->hatype = d.hatype;
  meta->net_off = 14;
}

unsigned int pktpath_bpf_version(void) { return PKTPATH_BPF_VERSION; }

pktpath_bpf* pktpath_bpf_load(const pktpath_bpf_insn* insns, size_t n, int mode, int engine, char* errbuf,
                              size_t errbuf_size) {
  if (insns == nullptr && n != 0) {
    set_error(errbuf, errbuf_size, "no instructions (NULL with a count)");
    return nullptr;
  }
  // The layouts are identical (static_asserts above): read the caller's array as Insns.
  std::span<const Insn> prog(reinterpret_cast<const Insn*>(insns), n);
  return load(prog, mode, engine, errbuf, errbuf_size);
}

pktpath_bpf* pktpath_bpf_compile(const char* expr, int linktype, int snaplen, int optimize, uint32_t netmask,
                                 int mode, int engine, char* errbuf, size_t errbuf_size) {
  if (expr == nullptr) {
    set_error(errbuf, errbuf_size, "no expression (NULL)");
    return nullptr;
  }
  pktpath::bpf::CompileOptions co;
  co.linktype = linktype;
  co.snaplen = snaplen;
  co.optimize = optimize != 0;
  co.netmask = netmask;
  Insns prog;
  std::string err;
  if (!pktpath::bpf::compile_expression(expr, co, &prog, &err)) {
    set_error(errbuf, errbuf_size, err);
    return nullptr;
  }
  return load(prog, mode, engine, errbuf, errbuf_size);
}

uint32_t pktpath_bpf_run(const pktpath_bpf* prog, const unsigned char* p, unsigned int wirelen,
                         unsigned int buflen, const pktpath_bpf_meta* meta) {
  if (PP_LIKELY(meta == nullptr)) return prog->prog.run_linear(p, wirelen, buflen);
  return run_with_meta(prog->prog, p, wirelen, buflen, meta);
}

int pktpath_bpf_engine(const pktpath_bpf* prog) { return engine_value(prog->prog.engine()); }

const char* pktpath_bpf_jit_fallback_reason(const pktpath_bpf* prog) {
  return prog->prog.jit_fallback_reason().c_str();
}

const char* pktpath_bpf_engine_name(int engine) {
  switch (engine) {
    case PKTPATH_BPF_ENGINE_SWITCH: return "switch";
    case PKTPATH_BPF_ENGINE_THREADED: return "threaded";
    case PKTPATH_BPF_ENGINE_JIT: return "jit";
  }
  return "?";
}

int pktpath_bpf_mode(const pktpath_bpf* prog) {
  return prog->prog.acceptance() == Acceptance::Kernel ? PKTPATH_BPF_KERNEL : PKTPATH_BPF_USERLAND;
}

const pktpath_bpf_insn* pktpath_bpf_insns(const pktpath_bpf* prog, size_t* n) {
  const Insns& insns = prog->prog.insns();
  if (n != nullptr) *n = insns.size();
  return reinterpret_cast<const pktpath_bpf_insn*>(insns.data());
}

void pktpath_bpf_free(pktpath_bpf* prog) { delete prog; }

unsigned int pktpath_bpf_filter(const pktpath_bpf_insn* pc, const unsigned char* p, unsigned int wirelen,
                                unsigned int buflen) {
  if (pc == nullptr) return 0xffffffffu;  // no program: accept everything, as bpf_filter
  return pktpath::bpf::run_userland(reinterpret_cast<const Insn*>(pc), view_of(p, wirelen, buflen, nullptr));
}

}  // extern "C"
