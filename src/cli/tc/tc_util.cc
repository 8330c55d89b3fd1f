// tc's value syntax and printers (iproute2 6.1: lib/utils.c get_u32/get_time/print_time,
// tc/tc_util.c get_size/get_rate64/print_size/print_rate/get_tc_classid) and the
// registries of qdisc, filter and action kinds.
#include "cli/tc/tc_util.h"

#include "sched/sch_prio.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <strings.h>

namespace pktpath::cli::tc {

bool matches(std::string_view word, std::string_view keyword) {
  return !word.empty() && word.size() <= keyword.size() && keyword.substr(0, word.size()) == word;
}

// --- Lexer.

const std::string& Lexer::peek() const {
  static const std::string kEnd;
  return i_ < w_.size() ? w_[i_] : kEnd;
}

const std::string& Lexer::next() {
  const std::string& w = peek();
  if (i_ < w_.size()) ++i_;
  return w;
}

const std::string& Lexer::prev() const {
  static const std::string kNone;
  return i_ > 0 && i_ <= w_.size() ? w_[i_ - 1] : kNone;
}

Result<std::string> Lexer::value(const std::string& key) {
  if (done()) return unexpected("\"" + key + "\" needs a value", key);
  return next();
}

bool Lexer::eat(std::string_view w) {
  if (done() || peek() != w) return false;
  ++i_;
  return true;
}

bool is_show_verb(const std::string& verb) {
  return verb.empty() || matches(verb, "show") || matches(verb, "list") || matches(verb, "lst");
}

Result<QdiscOp> parse_modify_verb(const std::string& verb, const char* object) {
  if (matches(verb, "add")) return QdiscOp::Add;
  if (matches(verb, "change")) return QdiscOp::Change;
  if (matches(verb, "replace")) return QdiscOp::Replace;
  if (matches(verb, "delete")) return QdiscOp::Del;
  return unexpected("unknown tc " + std::string(object) + " command \"" + verb + "\"", verb);
}

namespace {
void print_as(PrintSink& out, PrintMode m, const char* key, const char* fmt, uint64_t v, const std::string& text) {
  if (m & PRINT_JSON) out.print_uint(PRINT_JSON, key, nullptr, v);
  if (m & PRINT_FP) out.print_string(PRINT_FP, nullptr, fmt, text);
}
}  // namespace

void print_size(PrintSink& out, PrintMode m, const char* key, const char* fmt, uint32_t bytes) {
  print_as(out, m, key, fmt, bytes, sprint_size(bytes));
}
void print_rate(PrintSink& out, PrintMode m, const char* key, const char* fmt, uint64_t bytes_ps) {
  print_as(out, m, key, fmt, bytes_ps, sprint_rate(bytes_ps));
}
void print_time(PrintSink& out, const char* key, const char* fmt, uint64_t usec) {
  print_as(out, PRINT_ANY, key, fmt, usec, sprint_time(usec));
}
void print_time64(PrintSink& out, const char* key, const char* fmt, int64_t nsec) {
  print_as(out, PRINT_ANY, key, fmt, static_cast<uint64_t>(nsec), sprint_time64(nsec));
}

void print_tcstats(PrintSink& out, const QdiscStats& s, const char* prefix) {
  out.print_string(PRINT_FP, nullptr, "%s", prefix);
  out.print_uint(PRINT_ANY, "bytes", "Sent %llu bytes", s.bytes);
  out.print_uint(PRINT_ANY, "packets", " %llu pkt", s.packets);
  out.print_uint(PRINT_ANY, "drops", " (dropped %u", s.drops);
  out.print_uint(PRINT_ANY, "overlimits", ", overlimits %u", s.overlimits);
  out.print_uint(PRINT_ANY, "requeues", " requeues %u) ", s.requeues);
  out.print_nl();
  out.print_string(PRINT_FP, nullptr, "%s", prefix);
  print_size(out, PRINT_ANY, "backlog", "backlog %s", static_cast<uint32_t>(s.backlog));
  out.print_uint(PRINT_ANY, "qlen", " %up", s.qlen);
  out.print_uint(PRINT_FP, nullptr, " requeues %u", s.requeues);
}

// --- numbers.

namespace {

// strtoull's syntax without its leniency: no sign, no leading space.
bool to_u64(const std::string& s, int base, uint64_t& v) {
  if (s.empty() || !std::isxdigit(static_cast<unsigned char>(s[0]))) return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long r = std::strtoull(s.c_str(), &end, base);
  if (end == s.c_str() || *end != '\0' || errno == ERANGE) return false;
  v = r;
  return true;
}

// strtod's number, and the rest of the word as the unit.
bool split_unit(const std::string& s, double& num, std::string& unit) {
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return false;
  char* end = nullptr;
  num = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(num)) return false;
  unit = end;
  return true;
}

bool ieq(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

}  // namespace

Result<uint32_t> get_u32(const std::string& s, int base) {
  uint64_t v;
  if (!to_u64(s, base, v) || v > UINT32_MAX) return unexpected("invalid number \"" + s + "\"", s);
  return static_cast<uint32_t>(v);
}

Result<uint64_t> get_u64(const std::string& s, int base) {
  uint64_t v;
  if (!to_u64(s, base, v)) return unexpected("invalid number \"" + s + "\"", s);
  return v;
}

Result<uint32_t> get_qdisc_handle(const std::string& s) {
  if (s == "none") return 0u;
  const size_t colon = s.find(':');
  const std::string maj = s.substr(0, colon);
  uint64_t v;
  if (!to_u64(maj, 16, v) || v >= (1u << 16) || (colon != std::string::npos && colon + 1 != s.size()))
    return unexpected("invalid qdisc handle \"" + s + "\" (want MAJ:)", s);
  return static_cast<uint32_t>(v << 16);
}

Result<uint32_t> get_tc_classid(const std::string& s) {
  if (s == "root") return 0xffffffffu;
  if (s == "none") return 0u;
  auto bad = [&] { return unexpected("invalid class id \"" + s + "\" (want MAJ:MIN)", s); };
  const size_t colon = s.find(':');
  uint64_t maj = 0, min = 0;
  if (colon == std::string::npos) {
    if (!to_u64(s, 16, maj) || maj > UINT32_MAX) return bad();
    return static_cast<uint32_t>(maj);
  }
  const std::string a = s.substr(0, colon), b = s.substr(colon + 1);
  if ((!a.empty() && !to_u64(a, 16, maj)) || maj >= (1u << 16)) return bad();
  if ((!b.empty() && !to_u64(b, 16, min)) || min >= (1u << 16)) return bad();
  return static_cast<uint32_t>(maj << 16 | min);
}

Result<uint32_t> get_size(const std::string& s) {
  double sz;
  std::string u;
  auto bad = [&] { return unexpected("invalid size \"" + s + "\"", s); };
  if (!split_unit(s, sz, u)) return bad();
  if (u.empty() || ieq(u, "b"))
    ;
  else if (ieq(u, "kb") || ieq(u, "k"))
    sz *= 1024;
  else if (ieq(u, "gb") || ieq(u, "g"))
    sz *= 1024.0 * 1024 * 1024;
  else if (ieq(u, "gbit"))
    sz *= 1024.0 * 1024 * 1024 / 8;
  else if (ieq(u, "mb") || ieq(u, "m"))
    sz *= 1024.0 * 1024;
  else if (ieq(u, "mbit"))
    sz *= 1024.0 * 1024 / 8;
  else if (ieq(u, "kbit"))
    sz *= 1024.0 / 8;
  else
    return bad();
  if (sz > UINT32_MAX) return bad();
  return static_cast<uint32_t>(sz);
}

Result<uint64_t> get_rate64(const std::string& s) {
  static const struct {
    const char* name;
    double scale;
  } kSuffixes[] = {
      {"bit", 1.},           {"Kibit", 1024.},         {"kbit", 1000.},        {"mibit", 1024. * 1024.},
      {"mbit", 1000000.},    {"gibit", 1024. * 1024. * 1024.}, {"gbit", 1000000000.},
      {"tibit", 1024. * 1024. * 1024. * 1024.},         {"tbit", 1000000000000.},
      {"Bps", 8.},           {"KiBps", 8. * 1024.},    {"KBps", 8000.},        {"MiBps", 8. * 1024 * 1024},
      {"MBps", 8000000.},    {"GiBps", 8. * 1024. * 1024. * 1024.}, {"GBps", 8000000000.},
      {"TiBps", 8. * 1024. * 1024. * 1024. * 1024.},    {"TBps", 8000000000000.},
  };
  double bps;
  std::string u;
  auto bad = [&] { return unexpected("invalid rate \"" + s + "\"", s); };
  if (!split_unit(s, bps, u)) return bad();
  if (!u.empty()) {
    bool found = false;
    for (const auto& x : kSuffixes)
      if (ieq(u, x.name)) {
        bps *= x.scale;
        found = true;
        break;
      }
    if (!found) return bad();
  }
  bps /= 8;  // bytes per second
  if (bps >= 18446744073709551615.0) return bad();
  return static_cast<uint64_t>(bps);
}

// The time units of get_time and get_time64: `t` scaled to nanoseconds, a bare number
// by `bare`; false for a unit neither knows (ns only with `ns_ok`).
static bool scale_time(const std::string& u, double& t, double bare, bool ns_ok) {
  if (u.empty())
    t *= bare;
  else if (ieq(u, "s") || ieq(u, "sec") || ieq(u, "secs"))
    t *= 1e9;
  else if (ieq(u, "ms") || ieq(u, "msec") || ieq(u, "msecs"))
    t *= 1e6;
  else if (ieq(u, "us") || ieq(u, "usec") || ieq(u, "usecs"))
    t *= 1e3;
  else if (!ns_ok || !(ieq(u, "ns") || ieq(u, "nsec") || ieq(u, "nsecs")))
    return false;
  return true;
}

Result<uint64_t> get_time(const std::string& s) {
  double t;
  std::string u;
  auto bad = [&] { return unexpected("invalid time \"" + s + "\"", s); };
  if (!split_unit(s, t, u) || !scale_time(u, t, 1e3, false)) return bad();
  if (t > 4294967295e3) return bad();  // tc keeps times in 32-bit microseconds
  return static_cast<uint64_t>(t);
}

// get_time64: nanoseconds; also ns/nsec/nsecs, and a bare number is nanoseconds.
Result<int64_t> get_time64(const std::string& s) {
  double t;
  std::string u;
  auto bad = [&] { return unexpected("invalid time \"" + s + "\"", s); };
  if (!split_unit(s, t, u) || !scale_time(u, t, 1, true)) return bad();
  if (!(t >= -9.2e18 && t <= 9.2e18)) return bad();
  return static_cast<int64_t>(t);
}

// --- printers.

// print_size
std::string sprint_size(uint32_t sz) {
  char b[64];
  const double tmp = sz;
  if (sz >= 1024 * 1024 && std::fabs(1024 * 1024 * std::rint(tmp / (1024 * 1024)) - sz) < 1024)
    std::snprintf(b, sizeof b, "%gMb", std::rint(tmp / (1024 * 1024)));
  else if (sz >= 1024 && std::fabs(1024 * std::rint(tmp / 1024) - sz) < 16)
    std::snprintf(b, sizeof b, "%gKb", std::rint(tmp / 1024));
  else
    std::snprintf(b, sizeof b, "%ub", sz);
  return b;
}

// print_rate (SI units, as without -iec)
std::string sprint_rate(uint64_t bytes_ps) {
  static const char* const kUnits[] = {"", "K", "M", "G", "T"};
  const uint64_t kilo = 1000;
  uint64_t rate = bytes_ps << 3;
  size_t i = 0;
  for (; i < 4; ++i) {
    if (rate < kilo) break;
    if ((rate % kilo) != 0 && rate < 1000 * kilo) break;
    rate /= kilo;
  }
  char b[64];
  std::snprintf(b, sizeof b, "%.0f%sbit", static_cast<double>(rate), kUnits[i]);
  return b;
}

// print_time (TIME_UNITS_PER_SEC = 1000000)
std::string sprint_time(uint64_t usec) {
  char b[64];
  const double tmp = static_cast<double>(usec);
  if (tmp >= 1e6)
    std::snprintf(b, sizeof b, "%.3gs", tmp / 1e6);
  else if (tmp >= 1e3)
    std::snprintf(b, sizeof b, "%.3gms", tmp / 1e3);
  else
    std::snprintf(b, sizeof b, "%uus", static_cast<unsigned>(usec));
  return b;
}

// print_time64: ns as tc prints them (10ms, 1.5s, 250us, 80ns).
std::string sprint_time64(int64_t nsec) {
  char b[64];
  const double tmp = static_cast<double>(nsec);
  if (nsec >= 1000000000)
    std::snprintf(b, sizeof b, "%.3gs", tmp / 1e9);
  else if (nsec >= 1000000)
    std::snprintf(b, sizeof b, "%.3gms", tmp / 1e6);
  else if (nsec >= 1000)
    std::snprintf(b, sizeof b, "%.3gus", tmp / 1e3);
  else
    std::snprintf(b, sizeof b, "%lldns", static_cast<long long>(nsec));
  return b;
}

// print_tc_classid
std::string sprint_tc_classid(uint32_t h) {
  char b[32];
  if (h == 0xffffffffu)
    return "root";
  else if (h == 0)
    return "none";
  else if ((h >> 16) == 0)
    std::snprintf(b, sizeof b, ":%x", h & 0xffff);
  else if ((h & 0xffff) == 0)
    std::snprintf(b, sizeof b, "%x:", h >> 16);
  else
    std::snprintf(b, sizeof b, "%x:%x", h >> 16, h & 0xffff);
  return b;
}

// --- registries: written only while static initialisers run.

namespace {

template <class U>
std::vector<U>& utils() {
  static std::vector<U> v;
  return v;
}

template <class U>
const U* find_util(std::string_view id) {
  for (const U& u : utils<U>())
    if (id == u.id) return &u;
  return nullptr;
}

template <class U>
void add_util(const U& u, const char* what) {
  if (find_util<U>(u.id)) {
    std::fprintf(stderr, "pktpath: tc %s kind \"%s\" registered twice\n", what, u.id);
    std::abort();
  }
  utils<U>().push_back(u);
}

}  // namespace

void register_qdisc_util(const QdiscUtil& u) { add_util(u, "qdisc"); }
const QdiscUtil* get_qdisc_util(std::string_view id) { return find_util<QdiscUtil>(id); }
void register_action_util(const ActionUtil& u) { add_util(u, "action"); }
const ActionUtil* get_action_util(std::string_view id) { return find_util<ActionUtil>(id); }
void register_filter_util(const FilterUtil& u) { add_util(u, "filter"); }
const FilterUtil* get_filter_util(std::string_view id) { return find_util<FilterUtil>(id); }

// mirrors prio_print_opt
void print_prio_qopt(const QdiscOptions& opts, PrintSink& out) {
  const auto* p = opts.get<PrioOptions>();
  if (!p) return;
  out.print_uint(PRINT_ANY, "bands", "bands %u ", p->bands);
  out.open_array("priomap");
  out.text(PRINT_FP, "priomap");
  for (unsigned i = 0; i <= kTcPrioMax; ++i) out.print_uint(PRINT_ANY, nullptr, " %d", p->priomap[i]);
  out.close_array();
  out.print_bool(PRINT_JSON, "multiqueue", nullptr, false);
}

// --- actions.

bool action_a2n(const std::string& s, int& verdict) {
  namespace ktc = ::pktpath::tc;
  static const struct {
    const char* a;
    int n;
  } kA2n[] = {
      {"continue", ktc::TC_ACT_UNSPEC}, {"drop", ktc::TC_ACT_SHOT},  {"shot", ktc::TC_ACT_SHOT},
      {"pass", ktc::TC_ACT_OK},         {"ok", ktc::TC_ACT_OK},      {"reclassify", ktc::TC_ACT_RECLASSIFY},
      {"pipe", ktc::TC_ACT_PIPE},       {"stolen", ktc::TC_ACT_STOLEN}, {"trap", ktc::TC_ACT_TRAP},
  };
  for (const auto& e : kA2n)
    if (s == e.a) {
      verdict = e.n;
      return true;
    }
  return false;
}

// mirrors tc_print_action: each action's "\taction order N: " and its kind's lines, with
// -s its counters under "Action statistics:"; in JSON the "actions" array.
void print_actions(const ::pktpath::tc::FilterSpec& spec, PrintSink& out) {
  if (spec.actions.empty()) return;
  out.open_array("actions");
  unsigned order = 1;
  for (const auto& a : spec.actions) {
    out.open_object(nullptr);
    out.print_nl();
    out.print_uint(PRINT_ANY, "order", "\taction order %u: ", order++);
    if (const ActionUtil* au = get_action_util(a->kind())) au->print_aopt(a->dump(), a->index, out);
    if (out.stats) {
      const auto as = a->stats.sum();
      QdiscStats qs;
      qs.bytes = as.bytes;
      qs.packets = as.packets;
      qs.drops = as.drops;
      qs.overlimits = as.overlimits;
      out.print_string(PRINT_FP, nullptr, "\tAction statistics:", "");
      out.print_nl();
      out.open_object("stats");
      print_tcstats(out, qs, "\t");
      out.close_object();
      out.print_nl();
    }
    out.close_object();
  }
  out.close_array();
}

// mirrors print_action_control: PREFIX verdict SUFFIX, in JSON {"type": verdict}.
void print_action_control(PrintSink& out, const char* prefix, int verdict, const char* suffix) {
  out.print_string(PRINT_FP, nullptr, "%s", prefix);
  out.open_object("control_action");
  out.print_string(PRINT_ANY, "type", "%s", ::pktpath::tc::tc_act_name(verdict));
  out.close_object();
  out.print_string(PRINT_FP, nullptr, "%s", suffix);
}

// The line every action kind ends with: "\t index N ref 1 bind 1" (mirred's "\tindex").
void print_action_index(PrintSink& out, const char* fmt, uint32_t index) {
  out.print_uint(PRINT_ANY, "index", fmt, index);
  out.print_int(PRINT_ANY, "ref", " ref %d", 1);
  out.print_int(PRINT_ANY, "bind", " bind %d", 1);
  out.print_nl();
}

// mirrors parse_action (m_action.c) for one action
Result<ActionRequest> parse_action(Lexer& lx) {
  const std::string kind = lx.peek();
  if (kind.empty()) return unexpected("\"action\" needs an action (gact, mirred, police, skbedit)", "action");
  int v;
  const ActionUtil* u = get_action_util(kind);
  if (u) {
    lx.next();
  } else if (action_a2n(kind, v)) {
    u = get_action_util("gact");  // `action drop`: gact's short form, the lexer on the verdict
  }
  if (!u) return unexpected("unknown action \"" + kind + "\" (supported: gact, mirred, police, skbedit)", kind);
  auto opts = u->parse_aopt(lx);
  if (!opts) return unexpected(opts.error());
  return ActionRequest{u->id, std::move(*opts)};
}

// The words of tc's filter kinds that every kind shares (iproute2 repeats them in each
// f_<kind>.c).
Result<bool> parse_filter_common(const std::string& k, Lexer& lx, FilterRequest& req,
                                 ::pktpath::tc::FilterSpec& spec) {
  if (k == "classid" || k == "flowid") {
    auto v = lx.value(k);
    if (!v) return unexpected(v.error());
    auto c = get_tc_classid(*v);
    if (!c || *v == "root" || v->find(':') == std::string::npos)
      return unexpected("bad classid \"" + *v + "\" (want MAJ:MIN)", *v);
    spec.classid = *c;
    spec.classid_set = true;
  } else if (k == "action" || k == "act") {
    auto a = parse_action(lx);
    if (!a) return unexpected(a.error());
    req.actions.push_back(std::move(*a));
  } else if (k == "skip_hw") {
    spec.skip_hw = true;
  } else if (k == "skip_sw") {
    return unexpected("skip_sw: pktpath has no hardware offload", k);
  } else {
    return false;
  }
  return true;
}

void print_filter_classid(const ::pktpath::tc::FilterSpec& s, const char* word, PrintSink& out) {
  if (!s.classid_set) return;
  const std::string fmt = std::string(word) + " %s ";
  out.print_string(PRINT_ANY, word, fmt.c_str(), sprint_tc_classid(s.classid));
}

void print_filter_flags(const ::pktpath::tc::FilterSpec& s, const char* sep, PrintSink& out) {
  const std::string tail = *sep ? "" : " ";
  const std::string skip = sep + std::string("skip_hw") + tail, not_in = sep + std::string("not_in_hw") + tail;
  if (s.skip_hw) out.print_bool(PRINT_ANY, "skip_hw", skip.c_str(), true);
  out.print_bool(PRINT_ANY, "not_in_hw", not_in.c_str(), true);
}

Result<uint32_t> get_u32_handle(const std::string& s) {
  auto bad = [&] { return unexpected("invalid u32 handle \"" + s + "\" (want HT:BKT:NODE in hex)", s); };
  uint64_t part[3] = {0, 0, 0};
  const uint64_t max[3] = {0xfff, 0xff, 0xfff};
  size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t colon = i < 2 ? s.find(':', start) : std::string::npos;
    const std::string p = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!p.empty() && (!to_u64(p, 16, part[i]) || part[i] > max[i])) return bad();
    if (colon == std::string::npos) {
      if (i == 0) return bad();  // a bare number is not a u32 handle
      break;
    }
    start = colon + 1;
  }
  return static_cast<uint32_t>(part[0] << 20 | part[1] << 12 | part[2]);
}

}  // namespace pktpath::cli::tc
