// netem (iproute2's tc/q_netem.c): `limit N`, `delay TIME [JITTER [CORR]]`,
// `distribution NAME`, `loss random P [CORR] | state P13 [P31 [P32 [P23 [P14]]]] |
// gemodel P [R [1-H [1-K]]]`, `duplicate P [CORR]`, `reorder P [CORR] [gap N]`,
// `corrupt P [CORR]`, `rate RATE [OVERHEAD [CELLSIZE [CELLOVERHEAD]]]`,
// `slot MIN [MAX] [packets N] [bytes B]`, `seed N`.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/tc/tc_util.h"
#include "sched/sch_netem.h"

namespace pktpath::cli::tc {
namespace {

constexpr double kMaxPercent = 4294967295.0;  // UINT32_MAX

// parse_percent: "30%" or "30" is 0.3; anything after the number but "%" is an error,
// and so is a value outside 0..100%.
bool parse_percent(const std::string& s, double& v) {
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end) / 100.;
  return end != s.c_str() && (*end == '\0' || std::string_view(end) == "%") && v >= 0. && v <= 1.;
}
// tc's explain1 text for a bad percentage: `Illegal "loss percent"`, with the range.
Unexpected illegal_percent(const std::string& what, const std::string& w) {
  return unexpected("Illegal \"" + (what == "loss" ? std::string("loss percent") : what) + "\" \"" + w + "\" (0% to 100%)", w);
}
uint32_t scale_percent(double v) {  // set_percent
  const double r = std::rint(v * kMaxPercent);
  return r <= 0 ? 0 : r >= kMaxPercent ? UINT32_MAX : static_cast<uint32_t>(r);
}
// NEXT_IS_NUMBER / NEXT_IS_SIGNED_NUMBER: the following word starts with a digit (or '-').
bool next_is_number(const Lexer& lx, bool sign = false) {
  if (lx.done()) return false;
  const char c = lx.peek()[0];
  return std::isdigit(static_cast<unsigned char>(c)) || (sign && c == '-');
}

Status percent_word(Lexer& lx, const std::string& what, uint32_t& out) {
  const std::string& w = lx.next();
  double v;
  if (!parse_percent(w, v)) return illegal_percent(what, w);
  out = scale_percent(v);
  return {};
}
// A keyword's required percent, then an optional correlation.
Status percent_corr(Lexer& lx, const std::string& k, uint32_t& p, uint32_t* corr) {
  if (lx.done()) return unexpected("\"" + k + "\" needs a percentage", k);
  if (auto s = percent_word(lx, k, p); !s) return s;
  if (corr && next_is_number(lx)) return percent_word(lx, k + " correlation", *corr);
  return {};
}
// netem's times are 64-bit nanoseconds (TCA_NETEM_LATENCY64): tc's units, a bare number
// in microseconds, up to 2^63 ns.
Status time_word(Lexer& lx, const std::string& what, int64_t& out) {
  const std::string& w = lx.next();
  const bool bare = !w.empty() && w.find_first_not_of("0123456789.") == std::string::npos;
  auto t = get_time64(bare ? w + "us" : w);
  if (!t || *t < 0) return unexpected("bad " + what + " \"" + w + "\" (a time from 0 to 9223372036s)", w);
  out = *t;
  return {};
}
Status s32_word(Lexer& lx, const std::string& what, int32_t& out) {
  const std::string& w = lx.next();
  char* end = nullptr;
  const long v = std::strtol(w.c_str(), &end, 0);
  if (end == w.c_str() || *end || v < INT32_MIN || v > INT32_MAX)
    return unexpected("bad " + what + " \"" + w + "\"", w);
  out = static_cast<int32_t>(v);
  return {};
}

Status parse_loss(Lexer& lx, NetemOptions& o) {
  if (lx.done()) return unexpected("\"loss\" needs a model or a percentage", "loss");
  if (next_is_number(lx) || lx.peek() == "random") {
    lx.eat("random");
    o.loss_model = NetemLossModel::Random;
    return percent_corr(lx, "loss", o.loss, &o.loss_corr);
  }
  const std::string model = lx.next();
  if (model == "state") {
    if (lx.done()) return unexpected("\"loss state\" needs p13", model);
    const std::string& w = lx.next();
    double p13;
    if (!parse_percent(w, p13)) return illegal_percent("loss p13", w);
    o.loss_model = NetemLossModel::State;
    o.p13 = scale_percent(p13);  // defaults: p31 = 1 - p13, p32 = 0, p23 = 1, p14 = 0
    o.p31 = scale_percent(1. - p13);
    o.p32 = 0;
    o.p23 = UINT32_MAX;
    o.p14 = 0;
    uint32_t* rest[] = {&o.p31, &o.p32, &o.p23, &o.p14};
    const char* names[] = {"loss p31", "loss p32", "loss p23", "loss p14"};
    for (int i = 0; i < 4 && next_is_number(lx); ++i)
      if (auto s = percent_word(lx, names[i], *rest[i]); !s) return s;
    return {};
  }
  if (model == "gemodel") {
    if (lx.done()) return unexpected("\"loss gemodel\" needs p", model);
    o.loss_model = NetemLossModel::GeModel;
    if (auto s = percent_word(lx, "loss gemodel p", o.ge_p); !s) return s;
    o.ge_r = UINT32_MAX;  // defaults: r = 1, 1-h = 1 (h = 0), 1-k = 0
    o.ge_h = 0;
    o.ge_k1 = 0;
    if (next_is_number(lx))
      if (auto s = percent_word(lx, "loss gemodel r", o.ge_r); !s) return s;
    if (next_is_number(lx)) {
      uint32_t one_minus_h;
      if (auto s = percent_word(lx, "loss gemodel 1-h", one_minus_h); !s) return s;
      o.ge_h = UINT32_MAX - one_minus_h;  // tc takes 1-h, the kernel keeps h
    }
    if (next_is_number(lx))
      if (auto s = percent_word(lx, "loss gemodel 1-k", o.ge_k1); !s) return s;
    return {};
  }
  return unexpected("unknown loss model \"" + model + "\" (random, state, gemodel)", model);
}

Status parse_slot(Lexer& lx, NetemOptions& o) {
  if (!next_is_number(lx)) {
    const std::string w = lx.done() ? "slot" : lx.peek();
    return unexpected("\"slot\" needs a minimum delay (slot distribution is not supported)", w);
  }
  if (auto s = time_word(lx, "slot min delay", o.slot_min_ns); !s) return s;
  o.slot_max_ns = o.slot_min_ns;
  if (next_is_number(lx))
    if (auto s = time_word(lx, "slot max delay", o.slot_max_ns); !s) return s;
  if (o.slot_max_ns < o.slot_min_ns) o.slot_max_ns = o.slot_min_ns;
  if (!lx.done() && matches(lx.peek(), "packets")) {
    const std::string k = lx.next();
    if (lx.done()) return unexpected("\"packets\" needs a number", k);
    if (auto s = s32_word(lx, "slot packets", o.slot_packets); !s) return s;
  }
  if (!lx.done() && matches(lx.peek(), "bytes")) {
    const std::string k = lx.next();
    auto v = lx.value(k);
    if (!v) return unexpected(v.error());
    auto n = get_size(*v);
    if (!n || *n > INT32_MAX) return unexpected("bad slot bytes \"" + *v + "\"", *v);
    o.slot_bytes = static_cast<int32_t>(*n);
  }
  return {};
}

// mirrors netem_parse_opt
Result<QdiscOptions> netem_parse_opt(Lexer& lx) {
  NetemOptions o;
  bool loss_seen = false, reorder_seen = false;
  std::string dist_word;
  while (!lx.done()) {
    const std::string k = lx.next();
    Status st;
    if (matches(k, "limit")) {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_u32(*v, 0);
      if (!n) return unexpected("bad limit \"" + *v + "\"", *v);
      o.limit = *n;
    } else if (matches(k, "latency") || matches(k, "delay")) {
      if (lx.done()) return unexpected("\"" + k + "\" needs a time", k);
      st = time_word(lx, "delay", o.latency_ns);
      if (st && next_is_number(lx)) {
        st = time_word(lx, "jitter", o.jitter_ns);
        if (st && next_is_number(lx)) st = percent_word(lx, "delay correlation", o.delay_corr);
      }
    } else if (matches(k, "loss") || matches(k, "drop")) {
      if (loss_seen) return unexpected("duplicate loss argument", k);
      loss_seen = true;
      st = parse_loss(lx, o);
    } else if (matches(k, "reorder")) {
      reorder_seen = true;
      st = percent_corr(lx, k, o.reorder, &o.reorder_corr);
    } else if (matches(k, "corrupt")) {
      st = percent_corr(lx, k, o.corrupt, &o.corrupt_corr);
    } else if (matches(k, "duplicate")) {
      st = percent_corr(lx, k, o.duplicate, &o.dup_corr);
    } else if (matches(k, "gap")) {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_u32(*v, 0);
      if (!n) return unexpected("bad gap \"" + *v + "\"", *v);
      o.gap = *n;
    } else if (matches(k, "distribution")) {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      dist_word = *v;
      if (*v == "uniform") {
        o.delay_dist = nullptr;  // the kernel's default without a table
      } else {
        auto t = netem_dist_table(*v);
        if (t.empty()) return unexpected("no distribution data for \"" + *v + "\" (normal, pareto, paretonormal, uniform)", *v);
        o.delay_dist = std::make_shared<const std::vector<int16_t>>(std::move(t));
      }
      o.dist_name = *v;
    } else if (matches(k, "rate")) {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto r = get_rate64(*v);
      if (!r) return unexpected("bad rate \"" + *v + "\"", *v);
      o.rate = *r;
      if (next_is_number(lx, true)) st = s32_word(lx, "rate packet overhead", o.packet_overhead);
      if (st && next_is_number(lx)) {
        const std::string& w = lx.next();
        auto n = get_u32(w, 0);
        if (!n) return unexpected("bad rate cell size \"" + w + "\"", w);
        o.cell_size = *n;
      }
      if (st && next_is_number(lx, true)) st = s32_word(lx, "rate cell overhead", o.cell_overhead);
    } else if (matches(k, "slot")) {
      st = parse_slot(lx, o);
    } else if (k == "seed") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_u64(*v, 0);
      if (!n) return unexpected("bad seed \"" + *v + "\"", *v);
      o.seed = *n;
    } else if (k == "ecn") {
      return unexpected("netem option \"ecn\" is not supported", k);
    } else {
      return unexpected("unknown option \"" + k +
                            "\" (netem takes limit, delay, distribution, loss, duplicate, reorder, gap, "
                            "corrupt, rate, slot, seed)",
                        k);
    }
    if (!st) return unexpected(st.error());
  }
  if (o.reorder) {
    if (o.latency_ns == 0) return unexpected("reordering not possible without specifying some delay", "reorder");
    if (o.gap == 0) o.gap = 1;
  } else if (o.gap > 0) {
    return unexpected("gap specified without reorder probability", "gap");
  }
  (void)reorder_seen;
  if (o.delay_dist && (o.latency_ns == 0 || o.jitter_ns == 0))
    return unexpected("distribution specified but no latency and jitter values", dist_word);
  return QdiscOptions(o);
}

std::string sprint_percent(uint32_t per) {  // print_percent
  char b[64];
  std::snprintf(b, sizeof b, "%g%%", 100. * per / kMaxPercent);
  return b;
}

// __print_percent: " WORD P%" in text, the percentage in JSON.
void percent_out(PrintSink& out, const char* key, const std::string& word, uint32_t per) {
  out.print_string(PRINT_FP, nullptr, "%s", " " + word + (word.empty() ? "" : " ") + sprint_percent(per));
  out.print_float(PRINT_JSON, key, nullptr, 100. * per / kMaxPercent);
}
// print_corr: the correlation when present in text; always in JSON.
void corr_out(PrintSink& out, bool present, uint32_t corr) {
  if (present) out.print_string(PRINT_FP, nullptr, " %s", sprint_percent(corr));
  out.print_float(PRINT_JSON, "correlation", nullptr, 100. * corr / kMaxPercent);
}

// duplicate, reorder, corrupt: " NAME P[ CORR]" when P is set, JSON {NAME, correlation}.
void prob_group(PrintSink& out, const char* name, uint32_t p, uint32_t corr) {
  if (!p) return;
  out.open_object(name);
  percent_out(out, name, name, p);
  corr_out(out, corr != 0, corr);
  out.close_object();
}

// PRINT_INT_OPT: JSON always, text " NAME N" when not zero.
void int_opt(PrintSink& out, const char* name, int64_t v) {
  out.print_int(PRINT_JSON, name, nullptr, v);
  if (v) out.print_string(PRINT_FP, nullptr, "%s", " " + std::string(name) + " " + std::to_string(v));
}

// mirrors netem_print_opt
void netem_print_opt(const QdiscOptions& opts, PrintSink& out) {
  const auto* o = opts.get<NetemOptions>();
  if (!o) return;
  out.print_uint(PRINT_ANY, "limit", "limit %u", o->limit);
  if (o->latency_ns) {
    out.open_object("delay");
    out.print_string(PRINT_FP, nullptr, " delay %s", sprint_time64(o->latency_ns));
    if (o->jitter_ns) out.print_string(PRINT_FP, nullptr, "  %s", sprint_time64(o->jitter_ns));
    out.print_float(PRINT_JSON, "delay", nullptr, static_cast<double>(o->latency_ns) / 1e9);
    out.print_float(PRINT_JSON, "jitter", nullptr, static_cast<double>(o->jitter_ns) / 1e9);
    corr_out(out, o->jitter_ns && o->delay_corr, o->delay_corr);
    out.close_object();
  }
  if (o->loss_model == NetemLossModel::Random && o->loss) {
    out.open_object("loss-random");
    percent_out(out, "loss", "loss", o->loss);
    corr_out(out, o->loss_corr != 0, o->loss_corr);
    out.close_object();
  }
  if (o->loss_model == NetemLossModel::State) {
    out.open_object("loss-state");
    percent_out(out, "p13", "loss state p13", o->p13);
    percent_out(out, "p31", "p31", o->p31);
    percent_out(out, "p32", "p32", o->p32);
    percent_out(out, "p23", "p23", o->p23);
    percent_out(out, "p14", "p14", o->p14);
    out.close_object();
  }
  if (o->loss_model == NetemLossModel::GeModel) {
    out.open_object("loss-gemodel");
    percent_out(out, "p", "loss gemodel p", o->ge_p);
    percent_out(out, "r", "r", o->ge_r);
    percent_out(out, "1-h", "1-h", UINT32_MAX - o->ge_h);
    percent_out(out, "1-k", "1-k", o->ge_k1);
    out.close_object();
  }
  prob_group(out, "duplicate", o->duplicate, o->dup_corr);
  prob_group(out, "reorder", o->reorder, o->reorder_corr);
  prob_group(out, "corrupt", o->corrupt, o->corrupt_corr);
  if (o->rate) {
    out.open_object("rate");
    print_rate(out, PRINT_ANY, "rate", " rate %s", o->rate);
    int_opt(out, "packetoverhead", o->packet_overhead);
    out.print_uint(PRINT_JSON, "cellsize", nullptr, o->cell_size);
    if (o->cell_size) out.print_uint(PRINT_FP, nullptr, " cellsize %u", o->cell_size);
    int_opt(out, "celloverhead", o->cell_overhead);
    out.close_object();
  }
  if (o->slot_min_ns || o->slot_max_ns) {
    out.open_object("slot");
    out.print_string(PRINT_FP, nullptr, " slot %s", sprint_time64(o->slot_min_ns));
    out.print_float(PRINT_JSON, "min-delay", nullptr, static_cast<double>(o->slot_min_ns) / 1e9);
    out.print_string(PRINT_FP, nullptr, " %s", sprint_time64(o->slot_max_ns));
    out.print_float(PRINT_JSON, "max-delay", nullptr, static_cast<double>(o->slot_max_ns) / 1e9);
    int_opt(out, "packets", o->slot_packets);
    int_opt(out, "bytes", o->slot_bytes);
    out.close_object();
  }
  if (o->seed) out.print_uint(PRINT_ANY, "seed", " seed %llu", *o->seed);
  out.print_bool(PRINT_JSON, "ecn", nullptr, false);
  out.print_uint(PRINT_JSON, "gap", nullptr, o->gap);
  if (o->gap) out.print_uint(PRINT_FP, nullptr, " gap %lu", o->gap);
}

const QdiscUtilRegistrar kNetem{{"netem", netem_parse_opt, netem_print_opt}};

}  // namespace
}  // namespace pktpath::cli::tc
