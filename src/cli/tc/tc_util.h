// tc's lexer and value syntax (iproute2's tc/tc_util.c and lib/utils.c): numbers with
// get_u32's base 0, handles, sizes, rates and times, the printers that format them back
// as tc does, prefix matching of keywords, and the registries through which each qdisc,
// filter and action kind's q_/f_/m_<kind>.cc parses and prints its own words (struct
// qdisc_util, filter_util, action_util).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sched/act_api.h"
#include "sched/cls_bpf.h"
#include "sched/qdisc_options.h"

namespace pktpath::cli::tc {

// --- words.

// iproute2's matches(): `word` is a non-empty prefix of `keyword` ("q" -> "qdisc").
bool matches(std::string_view word, std::string_view keyword);

// A line's words and a position in them. Errors name the word they are about; past the
// end that is the last word.
class Lexer {
 public:
  explicit Lexer(const std::vector<std::string>& words, size_t pos = 0) : w_(words), i_(pos) {}
  bool done() const { return i_ >= w_.size(); }
  // The current word, or "" past the end.
  const std::string& peek() const;
  // The current word, then advance.
  const std::string& next();
  // The word after `key` (which was just read), advancing; an error naming `key` when
  // the line ends (NEXT_ARG).
  Result<std::string> value(const std::string& key);
  // Consume the current word if it equals `w`.
  bool eat(std::string_view w);
  size_t pos() const { return i_; }
  // The word just read ("" before the first).
  const std::string& prev() const;

 private:
  const std::vector<std::string>& w_;
  size_t i_;
};

// --- values (each error names the word).

Result<uint32_t> get_u32(const std::string& s, int base);  // base 0: 0x.. hex, 0.. octal
Result<uint64_t> get_u64(const std::string& s, int base);
// "MAJ:" / "MAJ" in hex, "none" (get_qdisc_handle).
Result<uint32_t> get_qdisc_handle(const std::string& s);
// "root", "none", "MAJ:MIN", "MAJ:", ":MIN" in hex (get_tc_classid).
Result<uint32_t> get_tc_classid(const std::string& s);
// get_size: bytes; k/kb = 1024, m/mb, g/gb; kbit/mbit/gbit are sizes in bits (x1024/8).
Result<uint32_t> get_size(const std::string& s);
// get_rate64: bytes per second; the number is in bits unless a suffix says otherwise
// (bit, kbit, Kibit, mbit, ..., Bps, KBps, KiBps, ...; case-insensitive).
Result<uint64_t> get_rate64(const std::string& s);
// get_time: nanoseconds; s/sec/secs, ms/msec/msecs, us/usec/usecs; a bare number is usec.
Result<uint64_t> get_time(const std::string& s);

// --- printers (iproute2 6.1's sprint_size, sprint_rate, sprint_time).

std::string sprint_size(uint32_t bytes);      // 1600b, 4Kb, 1Mb
std::string sprint_rate(uint64_t bytes_ps);   // 8Kbit, 1Mbit, 1500bit
std::string sprint_time(uint64_t usec);       // 500us, 10ms, 1.5s
std::string sprint_tc_classid(uint32_t h);    // root, none, 1:, :2, 1:2

// What a kind prints: the text after the fixed part of the line, and its JSON object.
struct KindPrint {
  std::string text;
  nlohmann::json json = nlohmann::json::object();
};

// --- qdisc kinds (struct qdisc_util).

struct QdiscUtil {
  const char* id;
  // The words after the kind -> the kind's typed options; nullptr: takes no options.
  Result<QdiscOptions> (*parse_qopt)(Lexer& lx) = nullptr;
  // The options a qdisc dumps -> text and JSON; nullptr: prints nothing.
  void (*print_qopt)(const QdiscOptions& opts, KindPrint& out) = nullptr;
  // clsact / ingress: add, replace and del only, at parent ffff:fff1.
  bool ingress_hook = false;
  // The kind's extra statistics (tc -s) -> the lines after "backlog" (without the last
  // newline) and the keys tc -j adds to the qdisc's object; nullptr: none.
  void (*print_xstats)(const QdiscXstats& xstats, KindPrint& out) = nullptr;
};
void register_qdisc_util(const QdiscUtil& u);
const QdiscUtil* get_qdisc_util(std::string_view id);
// prio's printer (bands and priomap), which pfifo_fast shares as in iproute2.
void print_prio_qopt(const QdiscOptions& opts, KindPrint& out);
struct QdiscUtilRegistrar {
  explicit QdiscUtilRegistrar(const QdiscUtil& u) { register_qdisc_util(u); }
};

// --- action kinds (struct action_util).

struct ActionUtil {
  const char* id;
  // The words after the kind (the lexer stands on the first); stops at a word it does
  // not know, leaving it for the filter.
  Result<ActionOptions> (*parse_aopt)(Lexer& lx);
  // tc's description after "action order N: ", e.g. "gact action drop".
  void (*print_aopt)(const ActionOptions& opts, KindPrint& out);
};
void register_action_util(const ActionUtil& u);
const ActionUtil* get_action_util(std::string_view id);
struct ActionUtilRegistrar {
  explicit ActionUtilRegistrar(const ActionUtil& u) { register_action_util(u); }
};

// A parsed `action KIND ...`: the kind and its options (made into an action when the
// line runs, when devices can be resolved).
struct ActionRequest {
  std::string kind;
  ActionOptions opts;
};
// parse_action: the lexer stands after "action". A control word alone (`action drop`)
// is gact's short form.
Result<ActionRequest> parse_action(Lexer& lx);
// gact's verdict words (action_a2n): ok, pass, drop, shot, pipe, continue, ...
bool action_a2n(const std::string& s, int& verdict);

// --- filter kinds (struct filter_util).

// What `tc filter add ... KIND ...` asks for, once parsed.
struct FilterRequest {
  ::pktpath::tc::BpfFilterSpec spec;
  std::vector<ActionRequest> actions;
  bool have_prog = false;
};
struct FilterUtil {
  const char* id;
  // The words after the kind, to the end of the line.
  Status (*parse_fopt)(Lexer& lx, FilterRequest& req);
  // The filter's own options (after "handle H "), text and JSON.
  void (*print_fopt)(const ::pktpath::tc::BpfFilter& f, bool stats, KindPrint& out);
};
void register_filter_util(const FilterUtil& u);
const FilterUtil* get_filter_util(std::string_view id);
struct FilterUtilRegistrar {
  explicit FilterUtilRegistrar(const FilterUtil& u) { register_filter_util(u); }
};

}  // namespace pktpath::cli::tc
