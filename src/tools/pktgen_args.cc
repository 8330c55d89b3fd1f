#include "tools/pktgen_args.h"

#include <cstdlib>

namespace pktpath {

bool parse_ipv4_range(std::string_view s, uint32_t* min, uint32_t* max) {
  size_t slash = s.find('/');
  auto net = parse_ipv4(s.substr(0, slash));
  if (!net) return false;
  if (slash == std::string_view::npos) {
    *min = *max = *net;
    return true;
  }
  auto prefix = parse_u64(s.substr(slash + 1));
  if (!prefix || *prefix > 32) return false;
  uint32_t mask = *prefix == 0 ? 0 : ~uint32_t{0} << (32 - *prefix);
  *min = *net & mask;
  *max = *net | ~mask;
  return true;
}

std::optional<PktgenCommand> parse_pktgen_args(const std::vector<std::string>& w, std::string* err,
                                               std::string* bad_word) {
  PktgenCommand cmd;
  PktgenConfig& c = cmd.cfg;
  c.count = 10'000'000;
  c.mode = PktgenMode::kQueueXmit;
  c.flags = F_QUEUE_MAP_CPU | F_NO_TIMESTAMP;
  parse_mac("90:e2:ba:ff:ff:ff", c.dst_mac);
  c.daddr_min = c.daddr_max = 0xc612002a;  // 198.18.0.42

  std::string current;  // the word being parsed, for error reports
  auto fail = [&](std::string m) -> std::optional<PktgenCommand> {
    if (err) *err = std::move(m);
    if (bad_word) *bad_word = current;
    return std::nullopt;
  };
  auto set = [&](const char* key, const std::string& v, const std::string& flag) -> bool {
    if (auto e = pktgen_set(c, key, v)) {
      if (err) *err = flag + ": " + *e;
      if (bad_word) *bad_word = v;
      return false;
    }
    return true;
  };

  for (size_t i = 0; i < w.size(); ++i) {
    const std::string& f = w[i];
    current = f;
    // Flags without a value.
    if (f == "-k") { c.flags |= F_UDPCSUM; continue; }
    if (f == "-v" || f == "-x") continue;  // verbose/debug: accepted, nothing to change
    if (f == "--pin") { cmd.pin = true; continue; }
    if (f == "--no-pin") { cmd.no_pin = true; continue; }
    if (f == "--rps") { cmd.rps = true; continue; }
    if (f == "--icmp") { c.flags |= F_ICMP_ECHO; continue; }
    if (f == "--json") { cmd.json = true; continue; }
    if (f == "-6") return fail("-6: IPv6 is not supported yet");
    if (i + 1 >= w.size()) return fail(f.rfind("-", 0) == 0 ? f + ": missing value" : "unexpected word '" + f + "'");
    const std::string& v = w[++i];
    current = v;
    if (f == "-i") {
      c.dev = v;
    } else if (f == "-n") {
      if (!set("count", v, f)) return std::nullopt;
    } else if (f == "-t" || f == "-f") {
      auto n = parse_u64(v);
      if (!n || (f == "-t" && (*n < 1 || *n > 64)) || (f == "-f" && *n > 1023))
        return fail(f + ": invalid value '" + v + "' (" + (f == "-t" ? "threads 1..64" : "a core number") + ")");
      if (f == "-t") cmd.threads = static_cast<unsigned>(*n); else cmd.first_core = static_cast<int>(*n);
    } else if (f == "-s") {
      if (!set("pkt_size", v, f)) return std::nullopt;
    } else if (f == "-m") {
      if (!set("dst_mac", v, f)) return std::nullopt;
    } else if (f == "-d") {
      if (!parse_ipv4_range(v, &c.daddr_min, &c.daddr_max))
        return fail("-d: invalid value '" + v + "' (expected an IPv4 address or CIDR)");
    } else if (f == "-p") {
      size_t dash = v.find('-');
      if (!set("udp_dst_min", v.substr(0, dash), f)) return std::nullopt;
      if (!set("udp_dst_max", dash == std::string::npos ? v : v.substr(dash + 1), f)) return std::nullopt;
      if (c.udp_dst_min > c.udp_dst_max) return fail("-p: invalid value '" + v + "' (min above max)");
      c.flags |= F_UDPDST_RND;
    } else if (f == "-b") {
      if (!set("burst", v, f)) return std::nullopt;
    } else if (f == "-c") {
      if (!set("clone_skb", v, f)) return std::nullopt;
    } else if (f == "-w") {
      if (!set("delay", v, f)) return std::nullopt;
    } else if (f == "--mode") {
      if (!set("xmit_mode", v, f)) return std::nullopt;
    } else if (f == "--duration") {
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(d > 0) || d > 86400)
        return fail("--duration: invalid value '" + v + "' (seconds, > 0)");
      c.duration_s = d;
    } else if (f == "--repeat") {
      auto n = parse_u64(v);
      if (!n || *n < 1 || *n > 1000) return fail("--repeat: invalid value '" + v + "' (1..1000)");
      cmd.repeat = static_cast<unsigned>(*n);
    } else if (f == "--ab") {
      size_t eq = v.find('='), bar = v.find('|');
      if (eq == std::string::npos || bar == std::string::npos || bar < eq || eq == 0 ||
          bar == eq + 1 || bar + 1 == v.size())
        return fail("--ab: invalid value '" + v + "' (expected SETTING=A|B)");
      const PktgenAb order = cmd.ab.value_or(PktgenAb{});  // an --ab-order given first stays
      cmd.ab = PktgenAb{v.substr(0, eq), v.substr(eq + 1, bar - eq - 1), v.substr(bar + 1), order.order, order.seed};
    } else if (f == "--ab-order") {
      PktgenAb& ab = cmd.ab ? *cmd.ab : cmd.ab.emplace();
      if (v == "abba") {
        ab.order = AbOrder::kBalanced;
      } else if (v == "random" || v.rfind("random:", 0) == 0) {
        ab.order = AbOrder::kRandom;
        ab.seed = 0;
        if (v.size() > 7) {
          auto n = parse_u64(v.substr(7));
          if (!n || *n == 0) return fail("--ab-order: invalid seed in '" + v + "' (random:N, N >= 1)");
          ab.seed = *n;
        }
      } else {
        return fail("--ab-order: invalid value '" + v + "' (abba, random or random:SEED)");
      }
    } else {
      current = f;
      return fail("unknown pktgen flag '" + f + "'");
    }
  }
  current = "pktgen";
  if (c.dev.empty()) return fail("-i: missing (the output device is required)");
  if (cmd.ab && cmd.ab->setting.empty()) {
    current = "--ab-order";
    return fail("--ab-order: needs --ab SETTING=A|B");
  }
  if (c.burst > 1 && c.mode == PktgenMode::kQueueXmit) {
    current = "-b";
    return fail("-b: bursting is not supported in queue_xmit mode (use --mode start_xmit)");
  }
  if (cmd.rps && c.mode != PktgenMode::kNetifReceive) {
    current = "--rps";
    return fail("--rps: needs --mode netif_receive");
  }
  if (auto e = pktgen_validate(c)) return fail(*e);
  return cmd;
}

}  // namespace pktpath
