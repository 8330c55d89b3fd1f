// The words and printers codel and fq_codel share (q_codel.cc, q_fq_codel.cc): times in
// microseconds as tc sends them, the options both take, the xstats fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/tc/tc_util.h"

namespace pktpath::cli::tc {

// A time word as tc sends it: microseconds in a u32.
inline Result<uint32_t> codel_time_us(const std::string& k, const std::string& v) {
  auto t = get_time(v);
  if (!t || *t / 1000 > UINT32_MAX) return unexpected("bad " + k + " \"" + v + "\"", v);
  return static_cast<uint32_t>(*t / 1000);
}

// limit, target, interval, ce_threshold, ecn, noecn (`k` was just read); false: not one
// of them. Zero limit, target or interval are not sent, as tc does.
inline Result<bool> parse_codel_word(Lexer& lx, const std::string& k,
                                     std::optional<uint32_t>& limit,
                                     std::optional<uint32_t>& target,
                                     std::optional<uint32_t>& interval,
                                     std::optional<uint32_t>& ce_threshold,
                                     std::optional<bool>& ecn) {
  if (k == "ecn" || k == "noecn") {
    ecn = k == "ecn";
    return true;
  }
  if (k != "limit" && k != "target" && k != "interval" && k != "ce_threshold") return false;
  auto v = lx.value(k);
  if (!v) return unexpected(v.error());
  if (k == "limit") {
    auto n = get_u32(*v, 0);
    if (!n) return unexpected("bad limit \"" + *v + "\"", *v);
    if (*n) limit = *n;
    return true;
  }
  auto t = codel_time_us(k, *v);
  if (!t) return unexpected(t.error());
  if (k == "ce_threshold")
    ce_threshold = *t;
  else if (*t)
    (k == "target" ? target : interval) = *t;
  return true;
}

// "limit Np " (codel_print_opt, fq_codel_print_opt).
inline void print_codel_limit(PrintSink& out, std::optional<uint32_t> limit) {
  if (limit) out.print_uint(PRINT_ANY, "limit", "limit %up ", *limit);
}

// A time option: JSON in microseconds, text as sprint_time.
inline void print_codel_time(PrintSink& out, const char* key, const char* fmt, std::optional<uint32_t> us) {
  if (us) print_time(out, key, fmt, *us);
}

// target, ce_threshold, interval in that order.
inline void print_codel_times(PrintSink& out, std::optional<uint32_t> target, std::optional<uint32_t> ce,
                              std::optional<uint32_t> interval) {
  print_codel_time(out, "target", "target %s ", target);
  print_codel_time(out, "ce_threshold", "ce_threshold %s ", ce);
  print_codel_time(out, "interval", "interval %s ", interval);
}

inline void print_codel_ecn(PrintSink& out, std::optional<bool> ecn) {
  if (ecn && *ecn) out.print_bool(PRINT_ANY, "ecn", "ecn ", true);
}

}  // namespace pktpath::cli::tc
