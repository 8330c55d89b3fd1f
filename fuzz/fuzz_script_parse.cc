// libFuzzer target for the script parser (`pktpath run`'s parse pass): the input is a
// script's text, every line kind included (ip, tc qdisc/filter, nft, pktgen, capture,
// send, sleep, fault, bpf ...). It must be accepted or rejected with a message naming
// the line; never crash, hang or leak.
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/script_text.h"

using namespace pktpath::cli;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<ScriptLine> lines;
  size_t bad = 0, last = 0;
  ScriptError err;
  if (!parse_script(text, lines, &bad, &last, err)) {
    if (err.msg.empty() || bad > last) std::abort();
    return 0;
  }
  if (!err.msg.empty() || lines.size() > last) std::abort();
  return 0;
}
