// Iteration counts for tests that loop many times: the full count in release, a smaller
// one under AddressSanitizer or ThreadSanitizer, which run the same code several times
// slower (CI runs every test under asan and the stress tests under tsan).
#pragma once

namespace pktpath::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif

// `release` normally, `sanitized` under a sanitizer.
template <typename T>
constexpr T scaled(T release, T sanitized) {
  return kUnderSanitizer ? sanitized : release;
}

}  // namespace pktpath::testing
