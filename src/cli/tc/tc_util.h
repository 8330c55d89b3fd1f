// tc's lexer and value syntax (iproute2's tc/tc_util.c and lib/utils.c): numbers with
// get_u32's base 0, handles, sizes, rates and times, the printers that format them back
// as tc does, prefix matching of keywords, and the registries through which each qdisc,
// filter and action kind's q_/f_/m_<kind>.cc parses and prints its own words (struct
// qdisc_util, filter_util, action_util).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/print_sink.h"
#include "core/result.h"
#include "sched/act_api.h"
#include "sched/cls_api.h"
#include "sched/qdisc_options.h"
#include "sched/sch_api.h"

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

// tc's show verbs: none, or show, list, lst by prefix.
bool is_show_verb(const std::string& verb);
// add, change, replace, delete by prefix (tc_qdisc_modify / tc_class_modify); the error
// names the verb ("unknown tc OBJECT command").
Result<QdiscOp> parse_modify_verb(const std::string& verb, const char* object);

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
// get_time64: nanoseconds; also ns/nsec/nsecs, and a bare number is nanoseconds.
Result<int64_t> get_time64(const std::string& s);

// --- printers (iproute2 6.1's sprint_size, sprint_rate, sprint_time).

std::string sprint_size(uint32_t bytes);      // 1600b, 4Kb, 1Mb
std::string sprint_rate(uint64_t bytes_ps);   // 8Kbit, 1Mbit, 1500bit
std::string sprint_time(uint64_t usec);       // 500us, 10ms, 1.5s
std::string sprint_time64(int64_t nsec);      // 10us, 1.5ms, 999ns
std::string sprint_tc_classid(uint32_t h);    // root, none, 1:, :2, 1:2

// iproute2's print_size, tc_print_rate and the qdiscs' time pairs: in JSON the number
// under `key` (bytes, bytes/s, microseconds, nanoseconds), in text `fmt` with sprint_size,
// sprint_rate, sprint_time or sprint_time64. `m` PRINT_FP: text only.
void print_size(PrintSink& out, PrintMode m, const char* key, const char* fmt, uint32_t bytes);
void print_rate(PrintSink& out, PrintMode m, const char* key, const char* fmt, uint64_t bytes_ps);
void print_time(PrintSink& out, const char* key, const char* fmt, uint64_t usec);
void print_time64(PrintSink& out, const char* key, const char* fmt, int64_t nsec);

// tc -s's two counter lines for a qdisc, a class or an action (print_tcstats2_attr:
// "PREFIX Sent ...", "PREFIX backlog ..."), the second without its newline; in JSON the
// counters' keys.
void print_tcstats(PrintSink& out, const QdiscStats& s, const char* prefix);

// --- qdisc kinds (struct qdisc_util).

struct QdiscUtil {
  const char* id;
  // The words after the kind -> the kind's typed options; nullptr: takes no options.
  Result<QdiscOptions> (*parse_qopt)(Lexer& lx) = nullptr;
  // The options a qdisc dumps, through the sink; nullptr: prints nothing.
  void (*print_qopt)(const QdiscOptions& opts, PrintSink& out) = nullptr;
  // clsact / ingress: add, replace and del only, at parent ffff:fff1.
  bool ingress_hook = false;
  // The kind's extra statistics (tc -s) -> the lines after "backlog" (without the last
  // newline) and the keys tc -j adds to the qdisc's object; nullptr: none.
  void (*print_xstats)(const QdiscXstats& xstats, PrintSink& out) = nullptr;
  // Classful kinds with tc class words (htb): the words after the kind -> the class's
  // typed options; a class dump -> text and JSON; its xstats (tc -s class) -> the lines
  // after "backlog". nullptr: the kind takes no `tc class` options.
  Result<KindOptions> (*parse_copt)(Lexer& lx) = nullptr;
  void (*print_copt)(const KindOptions& opts, PrintSink& out) = nullptr;
  void (*print_cxstats)(const QdiscXstats& xstats, PrintSink& out) = nullptr;
};
void register_qdisc_util(const QdiscUtil& u);
const QdiscUtil* get_qdisc_util(std::string_view id);
// prio's printer (bands and priomap), which pfifo_fast shares as in iproute2.
void print_prio_qopt(const QdiscOptions& opts, PrintSink& out);
struct QdiscUtilRegistrar {
  explicit QdiscUtilRegistrar(const QdiscUtil& u) { register_qdisc_util(u); }
};

// --- action kinds (struct action_util).

struct ActionUtil {
  const char* id;
  // The words after the kind (the lexer stands on the first); stops at a word it does
  // not know, leaving it for the filter.
  Result<ActionOptions> (*parse_aopt)(Lexer& lx);
  // mirrors print_<kind>: what follows "action order N: ", to its index line and the
  // newline after it (print_action_index).
  void (*print_aopt)(const ActionOptions& opts, uint32_t index, PrintSink& out);
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
// mirrors tc_print_action: a filter's actions, in JSON its "actions" array.
void print_actions(const ::pktpath::tc::FilterSpec& spec, PrintSink& out);
// mirrors print_action_control: PREFIX verdict SUFFIX; JSON "control_action": {"type"}.
void print_action_control(PrintSink& out, const char* prefix, int verdict, const char* suffix);
// An action's last line: FMT's index (iproute2's "\t index %u", mirred's "\tindex %u"),
// " ref 1 bind 1", newline.
void print_action_index(PrintSink& out, const char* fmt, uint32_t index);
// gact's verdict words (action_a2n): ok, pass, drop, shot, pipe, continue, ...
bool action_a2n(const std::string& s, int& verdict);

// --- filter kinds (struct filter_util).

// What `tc filter add ... KIND ...` asks for, once parsed: the words before the kind,
// then the kind's spec (made by its parse_fopt) and the actions.
struct FilterRequest {
  uint32_t pref = 0;
  uint32_t handle = 0;
  uint16_t protocol = ::pktpath::tc::kEthPAll;
  std::shared_ptr<::pktpath::tc::FilterSpec> spec;
  std::vector<ActionRequest> actions;
};
// Prints a filter's fixed part, "filter [parent P ]protocol P pref N KIND chain 0 ".
using FilterHead = std::function<void(PrintSink&)>;
struct FilterUtil {
  const char* id;
  // The words after the kind, to the end of the line (the lexer stands on the first);
  // sets req.spec.
  Status (*parse_fopt)(Lexer& lx, FilterRequest& req);
  // mirrors <kind>_print_opt: the filter's options after "filter ... chain 0 " (from
  // its handle on), without the actions (print_actions follows) or the last newline.
  void (*print_fopt)(const ::pktpath::tc::TcFilter& f, PrintSink& out);
  // Optional: entries between a pref's filters (u32's root table): called before each
  // filter (next) and once after the pref's last (next nullptr); `state` is zero at the
  // pref's start and the kind's own between calls; `head` prints "filter ... chain 0 ".
  void (*print_gap)(const ::pktpath::tc::TcFilter* next, uint64_t& state, const FilterHead& head,
                    PrintSink& out) = nullptr;
};
// The words every kind takes after its name: classid|flowid X:Y, action ..., skip_hw,
// skip_sw (refused: no offload). True when `k` (just read) was one of them.
Result<bool> parse_filter_common(const std::string& k, Lexer& lx, FilterRequest& req,
                                 ::pktpath::tc::FilterSpec& spec);
// "WORD X:Y " when a classid was given (word: flowid or classid, as the kind prints it).
void print_filter_classid(const ::pktpath::tc::FilterSpec& s, const char* word, PrintSink& out);
// The offload flags as the kernel reports a software filter: [skip_hw] not_in_hw, each
// after `sep` ("\n  " for flower and matchall) or followed by a space (sep "").
void print_filter_flags(const ::pktpath::tc::FilterSpec& s, const char* sep, PrintSink& out);
// get_u32_handle: u32's "HT:BKT:NODE" in hex, parts optional ("800:", "800::800").
Result<uint32_t> get_u32_handle(const std::string& s);
void register_filter_util(const FilterUtil& u);
const FilterUtil* get_filter_util(std::string_view id);
struct FilterUtilRegistrar {
  explicit FilterUtilRegistrar(const FilterUtil& u) { register_filter_util(u); }
};

}  // namespace pktpath::cli::tc
