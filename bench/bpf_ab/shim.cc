// One build of the bpf layer behind a C entry named after it (SHIM_prep), so that two
// builds (the namespace pktpath renamed to pkA and pkB by the compiler's -D) link into
// one program: prepares a program on the threaded engine or the JIT and hands back the
// linear entry and its image (kept for the life of the process).
#include <string>

#include "bpf/jit.h"
#include "bpf/program.h"

#define PKTPATH_AB_CAT2(a, b) a##b
#define PKTPATH_AB_CAT(a, b) PKTPATH_AB_CAT2(a, b)

extern "C" bool PKTPATH_AB_CAT(SHIM, _prep)(int jit, const void* insns, size_t n, void** fn, const void** image) {
  using namespace pktpath::bpf;
  auto* img = new PreparedImage;
  std::string err;
  const std::span<const Insn> prog(static_cast<const Insn*>(insns), n);
  bool ok = jit ? prepare_jit(prog, img, &err) : prepare_threaded(prog, img, &err);
  if (!ok && !jit) ok = prepare_threaded_bounded(prog, img, &err);  // a loop (protochain)
  if (!ok && jit) ok = prepare_jit_bounded(prog, JitOptions{}, img, &err);
  if (!ok || img->linear == nullptr) return false;
  *fn = reinterpret_cast<void*>(img->linear);
  *image = img->linear_image;
  return true;
}
