// Bounded reads of text inputs (scripts, bytecode files): at most `limit` bytes, from a
// regular file, a pipe or a terminal, never a directory; NUL bytes rejected as they
// arrive, so `/dev/zero` or a binary file fails after one read, not after the limit.
#pragma once

#include <cstddef>
#include <string>

namespace pktpath::bpf {

inline constexpr size_t kMaxScriptBytes = 16u << 20;  // a script: 16 MiB
inline constexpr size_t kMaxBytecodeFileBytes = 1u << 20;  // 4096 insns as C: ~200 KiB

// Reads `path` ("-": standard input) into *out. false with *err ("PATH: why") when it
// cannot be opened, is a directory or other non-file, holds a NUL byte, or is longer
// than `limit`.
bool read_text_file(const std::string& path, size_t limit, std::string* out, std::string* err);

}  // namespace pktpath::bpf
