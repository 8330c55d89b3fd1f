// Small compiler helpers shared by the datapath.
#pragma once

#define PP_LIKELY(x) __builtin_expect(!!(x), 1)
#define PP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PP_ALWAYS_INLINE inline __attribute__((always_inline))
#define PP_NOINLINE __attribute__((noinline))

namespace pktpath {
// One cache line; per-Cpu and shared-between-threads state is aligned to it so that two
// threads never write the same line by accident.
inline constexpr unsigned kCacheLine = 64;

inline void cpu_relax() { __builtin_ia32_pause(); }
}  // namespace pktpath
