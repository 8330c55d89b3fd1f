// Hand-written parser for script lines: ip link, sleep, send, pktgen; tc lines are parsed
// by cli/tc/ (through parse_ext_command).
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
    if (o->value == LinkKind::kFlag) {  // no value: the next word is the next option
      opts.push_back({w[i], 1, "", false});
      --i;
      continue;
    }
    if (!need_value(w, i, err)) return false;
    if (o->value != LinkKind::kNumber) {
      // The words up to the kind's next option name (`pace pps 1000 loop 2`).
      LinkOption t{w[i], 0, w[i + 1], true};
      while (i + 2 < w.size() && !link_kind_option(*lk, w[i + 2])) t.text += " " + w[++i + 1];
      opts.push_back(std::move(t));
      continue;
    }
    uint64_t v;
    if (!parse_u64(w[i + 1], v) || v < o->min || v > o->max)
      return fail(err, w[i + 1], w[i] + " must be " + std::to_string(o->min) + ".." + std::to_string(o->max));
    opts.push_back({w[i], v, "", false});
  }
  return true;
}

// One of `ip link add`'s device words at w[i] (numtxqueues, txqueuelen, mtu, address)
// into cfg; advances i past its value. nullopt: not such a word.
std::optional<bool> parse_link_config_word(const std::vector<std::string>& w, size_t& i, NetDevice::Config& cfg,
                                           ScriptError& err) {
  const std::string& k = w[i];
  if (k == "numtxqueues") {
    uint32_t v;
    if (!need_value(w, i, err)) return false;
    if (!parse_u32(w[++i], v) || v < 1 || v > kMaxTxQueues)
      return fail(err, w[i], "numtxqueues must be 1.." + std::to_string(kMaxTxQueues));
    cfg.num_tx_queues = static_cast<uint16_t>(v);
  } else if (k == "txqueuelen" || k == "txqlen") {
    if (!need_value(w, i, err)) return false;
    if (!parse_u32(w[++i], cfg.tx_queue_len) || cfg.tx_queue_len > (1u << 20))
      return fail(err, w[i], "txqueuelen must be 0..1048576");
  } else if (k == "mtu") {
    if (!need_value(w, i, err)) return false;
    if (!parse_u32(w[++i], cfg.mtu) || cfg.mtu < 68 || cfg.mtu > 65535)
      return fail(err, w[i], "mtu must be 68..65535");
  } else if (k == "address") {
    if (!need_value(w, i, err)) return false;
    if (!parse_mac(w[++i], cfg.mac)) return fail(err, w[i], "bad MAC address \"" + w[i] + "\"");
    cfg.mac_set = true;
  } else {
    return std::nullopt;
  }
  return true;
}

// veth's IFLA_INFO_DATA: `peer [name] NAME [netns NS] [device words]` from w[i].
bool parse_veth_peer(const std::vector<std::string>& w, size_t i, IpLinkAdd& a, ScriptError& err) {
  if (i >= w.size()) return true;
  if (w[i] != "peer") return fail(err, w[i], "veth: expected \"peer\", got \"" + w[i] + "\"");
  for (++i; i < w.size(); ++i) {
    const std::string& k = w[i];
    if (auto r = parse_link_config_word(w, i, a.peer, err)) {
      if (!*r) return false;
    } else if (k == "name") {
      if (!need_value(w, i, err)) return false;
      a.peer.name = w[++i];
    } else if (k == "netns") {
      if (!need_value(w, i, err)) return false;
      a.peer_netns = w[++i];
    } else if (a.peer.name.empty()) {
      a.peer.name = k;
    } else {
      return fail(err, k, "veth peer: unknown option \"" + k + "\"");
    }
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
      if (w[i + 1] == "loopback") return fail(err, w[i + 1], "Error: Unknown device type (lo exists in every namespace).");
      if (w[i + 1] == "veth") {
        a.kind = "veth";
        if (!parse_veth_peer(w, i + 2, a, err)) return false;
      } else if (!parse_link_type(w, i + 1, a.kind, a.opts, err)) {
        return false;
      }
      i = w.size();
      break;
    }
    if (auto r = parse_link_config_word(w, i, a.cfg, err)) {
      if (!*r) return false;
    } else if (k == "dev" || k == "name") {
      if (!need_value(w, i, err)) return false;
      a.cfg.name = w[++i];
      have_name = true;
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

// An RPS mask as /sys/class/net/D/queues/rx-N/rps_cpus takes it: hex, comma-separated
// 32-bit groups allowed ("3", "0x3", "00000000,00000003").
bool parse_cpu_mask(const std::string& s, uint64_t& mask) {
  std::string hex;
  size_t i = (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 2 : 0;
  for (; i < s.size(); ++i) {
    if (s[i] == ',') continue;
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
    hex += s[i];
  }
  while (hex.size() > 1 && hex[0] == '0') hex.erase(0, 1);
  if (hex.empty() || hex.size() > 16) return false;
  mask = std::stoull(hex, nullptr, 16);
  return true;
}

bool parse_ip_link(const std::vector<std::string>& w, size_t i, const IpLinkShow& opts, ScriptCommand& out,
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
      } else if (k == "address" || k == "txqueuelen" || k == "txqlen") {
        NetDevice::Config cfg;
        if (!*parse_link_config_word(w, i, cfg, err)) return false;
        if (k == "address")
          s.address = cfg.mac;
        else
          s.txqlen = cfg.tx_queue_len;
      } else if (k == "promisc") {
        if (!need_value(w, i, err)) return false;
        const std::string& v = w[++i];
        if (v != "on" && v != "off") return fail(err, v, "Error: argument of \"promisc\" must be \"on\" or \"off\", not \"" + v + "\"");
        s.promisc = v == "on";
      } else if (k == "rps_cpus") {
        uint64_t m = 0;
        if (!need_value(w, i, err)) return false;
        if (!parse_cpu_mask(w[++i], m)) return fail(err, w[i], "rps_cpus: bad CPU mask \"" + w[i] + "\" (hex, e.g. 3)");
        s.rps_cpus = m;
      } else if (k == "threaded") {
        if (!need_value(w, i, err)) return false;
        const std::string& v = w[++i];
        if (v != "0" && v != "1" && v != "on" && v != "off")
          return fail(err, v, "threaded: expected 1 or 0 (on or off), got \"" + v + "\"");
        s.threaded = v == "1" || v == "on";
      } else if (s.dev.empty()) {
        s.dev = k;
      } else {
        return fail(err, k, "unknown option \"" + k + "\"");
      }
    }
    if (s.dev.empty()) return fail(err, at(w, i), "ip link set needs a device");
    if (!s.up && !s.mtu && !s.rps_cpus && !s.threaded && !s.address && !s.txqlen && !s.promisc && s.opts.empty())
      return fail(err, at(w, i),
                  "ip link set: nothing to change (up, down, mtu N, address MAC, txqueuelen N, promisc on|off, "
                  "rps_cpus MASK, threaded 1|0, type KIND OPTIONS)");
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
    IpLinkShow s = opts;
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
  IpLinkShow opts;  // the global options `ip link show` uses
  while (i < w.size() && w[i].size() > 1 && w[i][0] == '-') {
    if (w[i] == "-s" || w[i] == "-stats" || w[i] == "-statistics")
      opts.stats = true;
    else if (w[i] == "-j" || w[i] == "-json")
      opts.json = true;
    else if (w[i] == "-p" || w[i] == "-pretty")
      opts.pretty = true;
    else if (w[i] == "-d" || w[i] == "-details")
      opts.details = true;
    else
      return fail(err, w[i], "unknown ip option \"" + w[i] + "\"");
    ++i;
  }
  const std::string& obj = at(w, i);
  if (obj == "link" || obj == "l") return parse_ip_link(w, i + 1, opts, out, err);
  if (obj.empty()) return fail(err, "", "ip needs an object (link)");
  return fail(err, obj, "unsupported ip object \"" + obj + "\" (only link)");
}

constexpr double kMaxVirtualSleepS = 365 * 86400.;

bool parse_sleep(const std::vector<std::string>& w, ScriptCommand& out, ScriptError& err) {
  if (w.size() != 2) return fail(err, at(w, 2), "usage: sleep SECONDS");
  double num;
  std::string unit;
  // A year of virtual time costs nothing; the real clock's hour is checked as it runs.
  if (!split_number(w[1], num, unit) || !(unit.empty() || unit == "s") || !(num >= 0) || num > kMaxVirtualSleepS)
    return fail(err, w[1], "bad sleep time \"" + w[1] + "\" (seconds, at most 3600, or 31536000 on clock virtual)");
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
  // tc, nft, capture and `ip link del` lines (script_ext.h).
  ExtCommand ext;
  if (auto r = parse_ext_command(w, ext, err)) {
    if (*r) out = std::move(ext);
    return *r;
  }
  if (cmd == "ip") return parse_ip(w, out, err);
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
