// A `pktpath run --trace` file read for `pktpath plot`: the series to draw, every string
// checked before it can reach gnuplot. A trace is data people exchange, so reading is
// bounded (line length, text only) and each bad record is named by line and field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>

#include "core/result.h"

namespace pktpath::cli {

inline constexpr size_t kMaxTraceLine = 4u << 20;  // a summary with 65,536 bins fits

struct PlotSeries {
  std::string title;  // printable, no control characters
  std::string data;   // "x y\n" lines of numbers
};

struct PlotData {
  std::map<std::string, PlotSeries> sojourn;  // per device and class: ms against s
  std::map<std::string, PlotSeries> tput;     // per device and class: Mbit/s against s
  std::map<std::string, PlotSeries> qlen;     // per device: packets against s
  size_t records = 0;                         // packet records (sent or dropped)
};

// Reads a whole trace. The error's message starts with "LINE: " where a line is at
// fault, and its word names the field.
Result<PlotData> read_plot_trace(std::FILE* in);
// The same over text in memory (the fuzz target's entry).
Result<PlotData> read_plot_trace_text(std::string_view text);

// True when `s` can be written inside a gnuplot single-quoted string without ending the
// command: no byte below 0x20 and no DEL.
bool plot_safe_string(std::string_view s);

}  // namespace pktpath::cli
