// libFuzzer target for the trace reader of `pktpath plot`: the input is a trace file's
// text. It is read or refused with a message naming the line; every name it accepts is
// free of control characters (so it cannot end a gnuplot command); never a crash, hang
// or leak.
#include <cstdlib>
#include <string>

#include "cli/plot_trace.h"

using namespace pktpath::cli;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65536) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = read_plot_trace_text(text);
  if (!r) {
    if (r.error().msg.empty() || r.error().msg[0] < '1' || r.error().msg[0] > '9') std::abort();
    return 0;
  }
  for (const auto* m : {&r->sojourn, &r->tput, &r->qlen})
    for (const auto& [k, s] : *m)
      if (!plot_safe_string(s.title)) std::abort();
  return 0;
}
