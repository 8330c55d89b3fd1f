// Hand-written parser for script lines: ip link, tc qdisc, sleep, send.
#include <cctype>
#include <charconv>
#include <cstring>

#include "cli/script.h"
#include "core/link_kind.h"

namespace pktpath::cli {

namespace {


// Word at i, or "" past the end (so errors can name "end of line").
const std::string& at(const std::vector<std::string>& w, size_t i) {
  static const std::string kEnd;
  return i < w.size() ? w[i] : kEnd;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Split "12.5mbit" into a number and a unit.
bool split_number(const std::string& s, double& num, std::string& unit) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return false;
  const std::string n = s.substr(0, i);
  if (n.find('.') != n.rfind('.')) return false;
  char* end = nullptr;
  num = std::strtod(n.c_str(), &end);
  if (end != n.c_str() + n.size()) return false;
  unit = lower(s.substr(i));
  return true;
}

bool need_value(const std::vector<std::string>& w, size_t i, ScriptError& err) {
  if (i + 1 >= w.size()) return fail(err, w[i], "\"" + w[i] + "\" needs a value");
  return true;
}

// ---- ip ------------------------------------------------------------------

// `type KIND [NAME VALUE]...` from w[i] (the word after `type`): the kind's own options.
// An unknown kind is left for the device table to reject, unless options follow.
bool parse_link_type(const std::vector<std::string>& w, size_t i, std::string& kind,
                     LinkOptions& opts, ScriptError& err) {
  kind = w[i];
  const LinkKind* lk = link_kind_lookup(kind);
  for (++i; i < w.size(); i += 2) {
    const LinkKind::Option* o = lk ? link_kind_option(*lk, w[i]) : nullptr;
    if (!o) return fail(err, w[i], "unexpected \"" + w[i] + "\" after the link type");
    if (!need_value(w, i, err)) return false;
    uint64_t v;
    if (!parse_u64(w[i + 1], v) || v > o->max)
      return fail(err, w[i + 1], w[i] + " must be 0.." + std::to_string(o->max));
    opts.emplace_back(w[i], v);
  }
  return true;
}

bool parse_ip_link_add(const std::vector<std::string>& w, size_t i, ScriptCommand& out,
                       ScriptError& err) {
  IpLinkAdd a;
  bool have_name = false;
  const size_t first = i;
  for (; i < w.size(); ++i) {
    const std::string& k = w[i];
    if (k == "type") {
      if (!need_value(w, i, err)) return false;
      if (!parse_link_type(w, i + 1, a.kind, a.opts, err)) return false;
      i = w.size();
      break;
    }
    if (k == "dev" || k == "name") {
      if (!need_value(w, i, err)) return false;
      a.cfg.name = w[++i];
      have_name = true;
    } else if (k == "numtxqueues") {
      uint32_t v;
      if (!need_value(w, i, err)) return false;
      if (!parse_u32(w[++i], v) || v < 1 || v > kMaxTxQueues)
        return fail(err, w[i], "numtxqueues must be 1.." + std::to_string(kMaxTxQueues));
      a.cfg.num_tx_queues = static_cast<uint16_t>(v);
    } else if (k == "txqueuelen" || k == "txqlen") {
      if (!need_value(w, i, err)) return false;
      if (!parse_u32(w[++i], a.cfg.tx_queue_len) || a.cfg.tx_queue_len > (1u << 20))
        return fail(err, w[i], "txqueuelen must be 0..1048576");
    } else if (k == "mtu") {
      if (!need_value(w, i, err)) return false;
      if (!parse_u32(w[++i], a.cfg.mtu) || a.cfg.mtu < 68 || a.cfg.mtu > 65535)
        return fail(err, w[i], "mtu must be 68..65535");
    } else if (k == "address") {
      if (!need_value(w, i, err)) return false;
      if (!parse_mac(w[++i], a.cfg.mac)) return fail(err, w[i], "bad MAC address \"" + w[i] + "\"");
      a.cfg.mac_set = true;
    } else if (!have_name && i == first) {
      a.cfg.name = k;  // `ip link add NAME type ...`
      have_name = true;
    } else {
      return fail(err, k, "unknown option \"" + k + "\"");
    }
  }
  if (!have_name) return fail(err, "add", "ip link add needs a device name");
  if (a.kind.empty()) return fail(err, at(w, i), "ip link add needs \"type KIND\"");
  out = a;
  return true;
}

bool parse_ip_link(const std::vector<std::string>& w, size_t i, bool stats, ScriptCommand& out,
                   ScriptError& err) {
  const std::string& verb = at(w, i);
  if (verb == "add") return parse_ip_link_add(w, i + 1, out, err);
  if (verb == "set") {
    IpLinkSet s;
    for (++i; i < w.size(); ++i) {
      const std::string& k = w[i];
      if (k == "dev") {
        if (!need_value(w, i, err)) return false;
        s.dev = w[++i];
      } else if (k == "up" || k == "down") {
        s.up = k == "up";
      } else if (k == "type") {
        if (!need_value(w, i, err)) return false;
        if (!parse_link_type(w, i + 1, s.kind, s.opts, err)) return false;
        i = w.size();
        break;
      } else if (k == "mtu") {
        uint32_t v;
        if (!need_value(w, i, err)) return false;
        if (!parse_u32(w[++i], v) || v < 68 || v > 65535)
          return fail(err, w[i], "mtu must be 68..65535");
        s.mtu = v;
      } else if (s.dev.empty()) {
        s.dev = k;
      } else {
        return fail(err, k, "unknown option \"" + k + "\"");
      }
    }
    if (s.dev.empty()) return fail(err, at(w, i), "ip link set needs a device");
    if (!s.up && !s.mtu && s.opts.empty())
      return fail(err, at(w, i), "ip link set: nothing to change (up, down, mtu N, type KIND OPTIONS)");
    out = s;
    return true;
  }
  if (verb == "del" || verb == "delete") {
    IpLinkDel d;
    ++i;
    if (at(w, i) == "dev") ++i;
    d.dev = at(w, i);
    if (d.dev.empty()) return fail(err, "", "ip link del needs a device");
    if (i + 1 < w.size()) return fail(err, w[i + 1], "unexpected \"" + w[i + 1] + "\"");
    out = d;
    return true;
  }
  if (verb.empty() || verb == "show" || verb == "list" || verb == "ls") {
    IpLinkShow s;
    s.stats = stats;
    if (!verb.empty()) ++i;
    if (at(w, i) == "dev") ++i;
    s.dev = at(w, i);
    if (i + 1 < w.size()) return fail(err, w[i + 1], "unexpected \"" + w[i + 1] + "\"");
    out = s;
    return true;
  }
  return fail(err, verb, "unknown ip link command \"" + verb + "\"");
}

bool parse_ip(const std::vector<std::string>& w, ScriptCommand& out, ScriptError& err) {
  size_t i = 1;
  bool stats = false;
  while (i < w.size() && w[i].size() > 1 && w[i][0] == '-') {
    if (w[i] == "-s" || w[i] == "-stats" || w[i] == "-statistics")
      stats = true;
    else if (w[i] != "-j" && w[i] != "-json" && w[i] != "-d" && w[i] != "-details")
      return fail(err, w[i], "unknown ip option \"" + w[i] + "\"");
    ++i;
  }
  const std::string& obj = at(w, i);
  if (obj == "link" || obj == "l") return parse_ip_link(w, i + 1, stats, out, err);
  if (obj.empty()) return fail(err, "", "ip needs an object (link)");
  return fail(err, obj, "unsupported ip object \"" + obj + "\" (only link)");
}

// ---- tc ------------------------------------------------------------------

bool parse_tc_qdisc(const std::vector<std::string>& w, size_t i, bool stats, ScriptCommand& out,
                    ScriptError& err) {
  const std::string& verb = at(w, i);
  if (verb.empty() || verb == "show" || verb == "list" || verb == "ls") {
    TcQdiscShow s;
    s.stats = stats;
    if (!verb.empty()) ++i;
    if (at(w, i) == "dev") {
      s.dev = at(w, i + 1);
      if (s.dev.empty()) return fail(err, "dev", "\"dev\" needs a value");
      i += 2;
    }
    if (i < w.size()) return fail(err, w[i], "unexpected \"" + w[i] + "\"");
    out = s;
    return true;
  }
  TcQdiscCmd c;
  if (verb == "add")
    c.req.op = QdiscOp::Add;
  else if (verb == "replace")
    c.req.op = QdiscOp::Replace;
  else if (verb == "change")
    c.req.op = QdiscOp::Change;
  else if (verb == "del" || verb == "delete")
    c.req.op = QdiscOp::Del;
  else
    return fail(err, verb, "unknown tc qdisc command \"" + verb + "\"");
  bool have_parent = false;
  for (++i; i < w.size(); ++i) {
    const std::string& k = w[i];
    if (k == "dev") {
      if (!need_value(w, i, err)) return false;
      c.dev = w[++i];
    } else if (k == "root") {
      if (have_parent) return fail(err, k, "\"root\" given twice or with \"parent\"");
      c.req.parent = TC_H_ROOT;
      have_parent = true;
    } else if (k == "parent") {
      if (have_parent) return fail(err, k, "\"parent\" given twice or with \"root\"");
      if (!need_value(w, i, err)) return false;
      if (!parse_tc_handle(w[++i], c.req.parent) || c.req.parent == TC_H_ROOT ||
          (c.req.parent & 0xffff) == 0)
        return fail(err, w[i], "bad parent \"" + w[i] + "\" (want MAJ:MIN)");
      have_parent = true;
    } else if (k == "handle") {
      if (!need_value(w, i, err)) return false;
      if (!parse_tc_handle(w[++i], c.req.handle) || (c.req.handle & 0xffff) != 0 ||
          c.req.handle == 0 || c.req.handle == TC_H_ROOT)
        return fail(err, w[i], "bad handle \"" + w[i] + "\" (want MAJ:)");
      c.req.handle_set = true;
    } else {
      c.req.kind = k;
      if (k == "clsact" || k == "ingress")
        return fail(err, k, "qdisc \"" + k + "\" is not supported yet");
      if (!qdisc_lookup_kind(k)) return fail(err, k, "unknown qdisc kind \"" + k + "\"");
      if (!parse_qdisc_options(k, w, i + 1, c.req.opts, err)) return false;
      break;
    }
  }
  if (c.dev.empty()) return fail(err, at(w, i), "tc qdisc needs \"dev DEV\"");
  if (!have_parent) return fail(err, at(w, i), "tc qdisc needs \"root\" or \"parent X:Y\"");
  if (c.req.kind.empty() && c.req.op != QdiscOp::Del)
    return fail(err, at(w, i), "tc qdisc needs a qdisc kind");
  out = c;
  return true;
}

bool parse_tc(const std::vector<std::string>& w, ScriptCommand& out, ScriptError& err) {
  size_t i = 1;
  bool stats = false;
  while (i < w.size() && w[i].size() > 1 && w[i][0] == '-') {
    if (w[i] == "-s" || w[i] == "-stats" || w[i] == "-statistics")
      stats = true;
    else if (w[i] != "-j" && w[i] != "-json" && w[i] != "-d" && w[i] != "-details" &&
             w[i] != "-p" && w[i] != "-pretty")
      return fail(err, w[i], "unknown tc option \"" + w[i] + "\"");
    ++i;
  }
  const std::string& obj = at(w, i);
  if (obj == "qdisc") return parse_tc_qdisc(w, i + 1, stats, out, err);
  if (obj.empty()) return fail(err, "", "tc needs an object (qdisc)");
  if (obj == "filter" || obj == "class")
    return fail(err, obj, "tc " + obj + " is not supported yet");
  return fail(err, obj, "unknown tc object \"" + obj + "\"");
}

bool parse_sleep(const std::vector<std::string>& w, ScriptCommand& out, ScriptError& err) {
  if (w.size() != 2) return fail(err, at(w, 2), "usage: sleep SECONDS");
  double num;
  std::string unit;
  if (!split_number(w[1], num, unit) || !(unit.empty() || unit == "s") || num > 3600)
    return fail(err, w[1], "bad sleep time \"" + w[1] + "\" (seconds, at most 3600)");
  out = SleepCmd{static_cast<uint64_t>(num * 1e9)};
  return true;
}

bool parse_send(const std::vector<std::string>& w, ScriptCommand& out, ScriptError& err) {
  SendCmd s;
  bool have_count = false;
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& k = w[i];
    if (!need_value(w, i, err)) return false;
    const std::string& v = w[++i];
    if (k == "dev") {
      s.dev = v;
    } else if (k == "count") {
      if (!parse_u64(v, s.count) || s.count == 0 || s.count > (1ull << 40))
        return fail(err, v, "bad count \"" + v + "\"");
      have_count = true;
    } else if (k == "size") {
      if (!parse_u32(v, s.size) || s.size < 14 || s.size > 1500 + 14)
        return fail(err, v, "size must be 14..1514");
    } else if (k == "priority") {
      if (!parse_u32(v, s.priority)) return fail(err, v, "bad priority \"" + v + "\"");
    } else if (k == "threads") {
      if (!parse_u32(v, s.threads) || s.threads < 1 || s.threads > 64)
        return fail(err, v, "threads must be 1..64");
    } else {
      return fail(err, k, "unknown send option \"" + k + "\"");
    }
  }
  if (s.dev.empty()) return fail(err, "send", "send needs \"dev DEV\"");
  if (!have_count) return fail(err, "send", "send needs \"count N\"");
  out = s;
  return true;
}

// ---- qdisc options ---------------------------------------------------------

bool parse_fifo_opts(const std::vector<std::string>& w, size_t i, bool bytes, QdiscOptions& out,
                     ScriptError& err) {
  FifoOptions f;
  for (; i < w.size(); ++i) {
    if (w[i] != "limit")
      return fail(err, w[i], "unknown option \"" + w[i] + "\" (fifo takes limit)");
    if (!need_value(w, i, err)) return false;
    uint64_t v;
    const bool ok = bytes ? parse_tc_size(w[i + 1], v) : parse_u64(w[i + 1], v);
    if (!ok || v > UINT32_MAX) return fail(err, w[i + 1], "bad limit \"" + w[i + 1] + "\"");
    f.limit = static_cast<uint32_t>(v);
    f.limit_set = true;
    ++i;
  }
  out = f;
  return true;
}

bool parse_prio_opts(const std::vector<std::string>& w, size_t i, QdiscOptions& out,
                     ScriptError& err) {
  PrioOptions p;
  bool have_map = false;
  for (; i < w.size(); ++i) {
    if (w[i] == "bands") {
      if (!need_value(w, i, err)) return false;
      if (!parse_u32(w[++i], p.bands) || p.bands < 2 || p.bands > 16)
        return fail(err, w[i], "bands must be 2..16");
    } else if (w[i] == "priomap") {
      size_t n = 0;
      while (i + 1 < w.size() && n <= kTcPrioMax) {
        uint32_t v;
        if (!parse_u32(w[i + 1], v)) break;
        if (v > 15) return fail(err, w[i + 1], "priomap entry must be a band number");
        p.priomap[n++] = static_cast<uint8_t>(v);
        ++i;
      }
      if (n == 0) return fail(err, w[i], "priomap needs band numbers");
      have_map = true;
    } else {
      return fail(err, w[i], "unknown option \"" + w[i] + "\" (prio takes bands, priomap)");
    }
  }
  for (size_t k = 0; k <= kTcPrioMax; ++k)
    if (p.priomap[k] >= p.bands)
      return fail(err, have_map ? "priomap" : "bands",
                  "priomap entry " + std::to_string(p.priomap[k]) + " is not a band (bands " +
                      std::to_string(p.bands) + ")");
  out = p;
  return true;
}

bool parse_tbf_opts(const std::vector<std::string>& w, size_t i, QdiscOptions& out,
                    ScriptError& err) {
  TbfOptions t;
  for (; i < w.size(); ++i) {
    const std::string& k = w[i];
    if (k == "rate" || k == "burst" || k == "buffer" || k == "maxburst" || k == "limit" ||
        k == "latency") {
      if (!need_value(w, i, err)) return false;
      const std::string& v = w[++i];
      uint64_t x;
      if (k == "rate") {
        if (!parse_tc_rate(v, t.rate_bytes_ps) || t.rate_bytes_ps == 0)
          return fail(err, v, "bad rate \"" + v + "\"");
      } else if (k == "limit") {
        if (!parse_tc_size(v, x) || x > UINT32_MAX) return fail(err, v, "bad limit \"" + v + "\"");
        t.limit = static_cast<uint32_t>(x);
        t.limit_set = true;
      } else if (k == "latency") {
        if (!parse_tc_time(v, t.latency_ns)) return fail(err, v, "bad latency \"" + v + "\"");
        t.latency_set = true;
      } else {
        if (!parse_tc_size(v, x) || x == 0 || x > UINT32_MAX)
          return fail(err, v, "bad burst \"" + v + "\"");
        t.burst = static_cast<uint32_t>(x);
      }
    } else if (k == "peakrate" || k == "mtu" || k == "minburst" || k == "overhead" ||
               k == "linklayer") {
      return fail(err, k, "tbf option \"" + k + "\" is not supported");
    } else {
      return fail(err, k, "unknown option \"" + k + "\" (tbf takes rate, burst, limit|latency)");
    }
  }
  if (t.rate_bytes_ps == 0) return fail(err, "tbf", "tbf needs \"rate\"");
  if (t.burst == 0) return fail(err, "tbf", "tbf needs \"burst\"");
  if (t.limit_set == t.latency_set)
    return fail(err, "tbf", "tbf needs exactly one of \"limit\" or \"latency\"");
  out = t;
  return true;
}

}  // namespace

bool tokenize_line(const std::string& line, std::vector<std::string>& words, ScriptError& err) {
  words.clear();
  size_t i = 0;
  const size_t n = line.size();
  while (i < n) {
    while (i < n && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= n || line[i] == '#') break;
    std::string w;
    while (i < n && !std::isspace(static_cast<unsigned char>(line[i]))) {
      const char c = line[i];
      if (c == '\'' || c == '"') {
        const size_t close = line.find(c, i + 1);
        if (close == std::string::npos) return fail(err, line.substr(i), "unterminated quote");
        w.append(line, i + 1, close - i - 1);
        i = close + 1;
      } else {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
          return fail(err, line.substr(i, 1), "control character in line");
        w.push_back(c);
        ++i;
      }
    }
    words.push_back(std::move(w));
  }
  return true;
}

// `pktgen ...`: the short form's flags are parsed by tools/pktgen_args; `set` keys are
// checked against a scratch configuration so a bad key fails at parse time.
bool parse_pktgen_line(const std::vector<std::string>& w, ScriptCommand& out, ScriptError& err) {
  PktgenLine line;
  if (w.size() >= 2 && (w[1] == "set" || w[1] == "start" || w[1] == "reset")) {
    if (w[1] == "set") {
      if (w.size() != 4) return fail(err, "set", "usage: pktgen set KEY VALUE");
      PktgenConfig scratch;
      if (w[2] != "dev" && w[2] != "threads" && w[2] != "duration") {
        if (auto e = pktgen_set(scratch, w[2], w[3]))
          return fail(err, e->rfind("unknown", 0) == 0 ? w[2] : w[3], *e);
      }
      line.kind = PktgenLine::kSet;
      line.key = w[2];
      line.value = w[3];
    } else {
      if (w.size() != 2) return fail(err, w[2], "pktgen " + w[1] + " takes no arguments");
      line.kind = w[1] == "start" ? PktgenLine::kStart : PktgenLine::kReset;
    }
    out = std::move(line);
    return true;
  }
  std::string msg, word;
  auto cmd = parse_pktgen_args(std::vector<std::string>(w.begin() + 1, w.end()), &msg, &word);
  if (!cmd) return fail(err, word.empty() ? "pktgen" : word, msg);
  line.run = std::move(*cmd);
  out = std::move(line);
  return true;
}

bool parse_command(const std::vector<std::string>& w, ScriptCommand& out, ScriptError& err) {
  const std::string& cmd = w.at(0);
  // clsact, tc filter and nft lines (script_ext.h).
  ExtCommand ext;
  if (auto r = parse_ext_command(w, ext, err)) {
    if (*r) out = std::move(ext);
    return *r;
  }
  if (cmd == "ip") return parse_ip(w, out, err);
  if (cmd == "tc") return parse_tc(w, out, err);
  if (cmd == "sleep") return parse_sleep(w, out, err);
  if (cmd == "send") return parse_send(w, out, err);
  if (cmd == "pktgen") return parse_pktgen_line(w, out, err);
  if (cmd == "fault") {
    if (!parse_fault_ext(w, ext, err)) return false;
    out = std::move(ext);
    return true;
  }
  if (cmd == "bpf" || cmd == "bench") {
    if (w.size() < 2 || (cmd == "bench" && w[1] != "micro") ||
        (cmd == "bpf" && w[1] != "bench" && w[1] != "check" && w[1] != "dump" && w[1] != "run"))
      return fail(err, w.size() < 2 ? cmd : w[1], "expected `bpf check|dump|run|bench ...` or `bench micro ...`");
    out = CommandLine{w};
    return true;
  }
  return fail(err, cmd, "unknown command \"" + cmd + "\"");
}

bool parse_qdisc_options(const std::string& kind, const std::vector<std::string>& w, size_t i,
                         QdiscOptions& out, ScriptError& err) {
  out = std::monostate{};
  if (kind == "pfifo") return parse_fifo_opts(w, i, false, out, err);
  if (kind == "bfifo") return parse_fifo_opts(w, i, true, out, err);
  if (kind == "prio") return parse_prio_opts(w, i, out, err);
  if (kind == "tbf") return parse_tbf_opts(w, i, out, err);
  if (i < w.size()) return fail(err, w[i], "qdisc " + kind + " takes no options");
  return true;
}

bool parse_u64(const std::string& s, uint64_t& v) {
  if (s.empty() || s.size() > 20) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_u32(const std::string& s, uint32_t& v) {
  uint64_t x;
  if (!parse_u64(s, x) || x > UINT32_MAX) return false;
  v = static_cast<uint32_t>(x);
  return true;
}

// tc's get_rate: bit, kbit, mbit, gbit, tbit (SI), kibit... (IEC), bps/kbps/... in bytes.
bool parse_tc_rate(const std::string& s, uint64_t& bytes_per_sec) {
  double num;
  std::string u;
  if (!split_number(s, num, u)) return false;
  static const struct {
    const char* unit;
    double bits;
  } kUnits[] = {
      {"", 1},
      {"bit", 1},
      {"kbit", 1e3},
      {"mbit", 1e6},
      {"gbit", 1e9},
      {"tbit", 1e12},
      {"kibit", 1024.0},
      {"mibit", 1048576.0},
      {"gibit", 1073741824.0},
      {"bps", 8},
      {"kbps", 8e3},
      {"mbps", 8e6},
      {"gbps", 8e9},
      {"tbps", 8e12},
      {"kibps", 8 * 1024.0},
      {"mibps", 8 * 1048576.0},
      {"gibps", 8 * 1073741824.0},
  };
  for (const auto& e : kUnits)
    if (u == e.unit) {
      const double bytes = num * e.bits / 8;
      if (bytes < 1 || bytes > 1e15) return false;
      bytes_per_sec = static_cast<uint64_t>(bytes + 0.5);
      return true;
    }
  return false;
}

// tc's get_size: bytes; k/kb = 1024, m/mb, g/gb; kbit/mbit/gbit in bits.
bool parse_tc_size(const std::string& s, uint64_t& bytes) {
  double num;
  std::string u;
  if (!split_number(s, num, u)) return false;
  static const struct {
    const char* unit;
    double mult;
  } kUnits[] = {
      {"", 1},
      {"b", 1},
      {"k", 1024},
      {"kb", 1024},
      {"m", 1048576},
      {"mb", 1048576},
      {"g", 1073741824.0},
      {"gb", 1073741824.0},
      {"kbit", 1024 / 8.0},
      {"mbit", 1048576 / 8.0},
      {"gbit", 1073741824.0 / 8},
      {"bit", 1 / 8.0},
  };
  for (const auto& e : kUnits)
    if (u == e.unit) {
      const double b = num * e.mult;
      if (b > 4294967295.0) return false;
      bytes = static_cast<uint64_t>(b);
      return true;
    }
  return false;
}

// tc's get_time: s/sec/secs, ms/msec/msecs, us/usec/usecs; a bare number is usec.
bool parse_tc_time(const std::string& s, uint64_t& ns) {
  double num;
  std::string u;
  if (!split_number(s, num, u)) return false;
  double mult;
  if (u == "s" || u == "sec" || u == "secs")
    mult = 1e9;
  else if (u == "ms" || u == "msec" || u == "msecs")
    mult = 1e6;
  else if (u.empty() || u == "us" || u == "usec" || u == "usecs")
    mult = 1e3;
  else if (u == "ns" || u == "nsec")
    mult = 1;
  else
    return false;
  const double v = num * mult;
  if (v > 3600e9) return false;
  ns = static_cast<uint64_t>(v);
  return true;
}

// "root", "MAJ:", "MAJ:MIN", ":MIN" in hex (tc's get_tc_classid / get_qdisc_handle).
bool parse_tc_handle(const std::string& s, uint32_t& h) {
  if (s == "root") {
    h = TC_H_ROOT;
    return true;
  }
  const size_t colon = s.find(':');
  if (colon == std::string::npos || s.find(':', colon + 1) != std::string::npos) return false;
  auto hex = [](const std::string& t, uint32_t& v) {
    if (t.empty()) {
      v = 0;
      return true;
    }
    if (t.size() > 4) return false;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 16);
    return ec == std::errc() && p == t.data() + t.size();
  };
  uint32_t maj, min;
  if (!hex(s.substr(0, colon), maj) || !hex(s.substr(colon + 1), min)) return false;
  h = (maj << 16) | min;
  return true;
}

bool parse_mac(const std::string& s, std::array<uint8_t, 6>& mac) {
  if (s.size() != 17) return false;
  for (int i = 0; i < 6; ++i) {
    if (i < 5 && s[i * 3 + 2] != ':') return false;
    uint32_t v;
    auto [p, ec] = std::from_chars(s.data() + i * 3, s.data() + i * 3 + 2, v, 16);
    if (ec != std::errc() || p != s.data() + i * 3 + 2) return false;
    mac[i] = static_cast<uint8_t>(v);
  }
  return true;
}

}  // namespace pktpath::cli
