#include "tools/pktgen_config.h"

#include <charconv>
#include <limits>

namespace pktpath {

namespace {

struct FlagName {
  const char* name;
  uint32_t bit;
};
constexpr FlagName kFlags[] = {
    {"IPSRC_RND", F_IPSRC_RND},       {"IPDST_RND", F_IPDST_RND},
    {"UDPSRC_RND", F_UDPSRC_RND},     {"UDPDST_RND", F_UDPDST_RND},
    {"TXSIZE_RND", F_TXSIZE_RND},     {"MACSRC_RND", F_MACSRC_RND},
    {"MACDST_RND", F_MACDST_RND},     {"QUEUE_MAP_RND", F_QUEUE_MAP_RND},
    {"QUEUE_MAP_CPU", F_QUEUE_MAP_CPU}, {"NO_TIMESTAMP", F_NO_TIMESTAMP},
    {"UDPCSUM", F_UDPCSUM},
    {"ICMP_ECHO", F_ICMP_ECHO},
};

std::string err(std::string_view key, std::string_view value, std::string_view why) {
  return std::string(key) + ": invalid value '" + std::string(value) + "' (" + std::string(why) + ")";
}

template <class T>
std::optional<T> parse_bounded(std::string_view v, uint64_t lo, uint64_t hi) {
  auto n = parse_u64(v);
  if (!n || *n < lo || *n > hi) return std::nullopt;
  return static_cast<T>(*n);
}

}  // namespace

std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<uint32_t> parse_ipv4(std::string_view s) {
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) {
    size_t dot = s.find('.');
    std::string_view part = i < 3 ? s.substr(0, dot) : s;
    if ((i < 3 && dot == std::string_view::npos) || part.empty() || part.size() > 3) return std::nullopt;
    auto n = parse_u64(part);
    if (!n || *n > 255) return std::nullopt;
    out = out << 8 | static_cast<uint32_t>(*n);
    if (i < 3) s.remove_prefix(dot + 1);
  }
  return out;
}

bool parse_mac(std::string_view s, std::array<uint8_t, 6>& out) {
  std::array<uint8_t, 6> m{};
  for (int i = 0; i < 6; ++i) {
    if (s.size() < 2) return false;
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + 2, v, 16);
    if (ec != std::errc() || p != s.data() + 2) return false;
    m[i] = static_cast<uint8_t>(v);
    s.remove_prefix(2);
    if (i < 5) {
      if (s.empty() || s[0] != ':') return false;
      s.remove_prefix(1);
    }
  }
  if (!s.empty()) return false;
  out = m;
  return true;
}

const char* pktgen_mode_name(PktgenMode m) {
  switch (m) {
    case PktgenMode::kStartXmit: return "start_xmit";
    case PktgenMode::kQueueXmit: return "queue_xmit";
    case PktgenMode::kNetifReceive: return "netif_receive";
  }
  return "?";
}

std::optional<std::string> pktgen_set(PktgenConfig& c, std::string_view key, std::string_view v) {
  constexpr uint64_t kU16 = 0xffff, kU32 = 0xffffffffu, kU64 = std::numeric_limits<uint64_t>::max();
  auto u = [&](auto& field, uint64_t lo, uint64_t hi) -> std::optional<std::string> {
    using T = std::remove_reference_t<decltype(field)>;
    auto n = parse_bounded<T>(v, lo, hi);
    if (!n) return err(key, v, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    field = *n;
    return std::nullopt;
  };
  auto ip = [&](uint32_t& field) -> std::optional<std::string> {
    auto a = parse_ipv4(v);
    if (!a) return err(key, v, "expected an IPv4 address");
    field = *a;
    return std::nullopt;
  };
  if (key == "count") return u(c.count, 0, kU64);
  // Sizes: from the headers (14 + 20 + 8) up to what one packet buffer holds; a larger
  // frame could never be built (pktpath has no paged fragments).
  auto size = [&](uint32_t& field) -> std::optional<std::string> {
    auto n = parse_bounded<uint32_t>(v, kPktgenMinSize, kPktgenMaxSize);
    if (!n)
      return err(key, v, "expected " + std::to_string(kPktgenMinSize) + ".." + std::to_string(kPktgenMaxSize) +
                             ": a packet buffer holds " + std::to_string(kPktgenMaxSize) + " bytes");
    field = *n;
    return std::nullopt;
  };
  if (key == "pkt_size") {
    uint32_t s = 0;
    if (auto e = size(s)) return e;
    c.min_pkt_size = c.max_pkt_size = s;
    return std::nullopt;
  }
  if (key == "min_pkt_size") return size(c.min_pkt_size);
  if (key == "max_pkt_size") return size(c.max_pkt_size);
  if (key == "dst") {
    if (auto e = ip(c.daddr_min)) return e;
    c.daddr_max = c.daddr_min;
    return std::nullopt;
  }
  if (key == "dst_min") return ip(c.daddr_min);
  if (key == "dst_max") return ip(c.daddr_max);
  if (key == "src_min") return ip(c.saddr_min);
  if (key == "src_max") return ip(c.saddr_max);
  if (key == "dst_mac" || key == "src_mac") {
    auto& m = key == "dst_mac" ? c.dst_mac : c.src_mac;
    if (!parse_mac(v, m)) return err(key, v, "expected a MAC address like 11:22:33:44:55:66");
    if (key == "src_mac") c.src_mac_set = true;
    return std::nullopt;
  }
  if (key == "src_mac_count") return u(c.src_mac_count, 0, kU32);
  if (key == "dst_mac_count") return u(c.dst_mac_count, 0, kU32);
  if (key == "udp_src_min") return u(c.udp_src_min, 0, kU16);
  if (key == "udp_src_max") return u(c.udp_src_max, 0, kU16);
  if (key == "udp_dst_min") return u(c.udp_dst_min, 0, kU16);
  if (key == "udp_dst_max") return u(c.udp_dst_max, 0, kU16);
  if (key == "clone_skb") return u(c.clone_skb, 0, kU64);
  if (key == "burst") return u(c.burst, 1, 1024);
  if (key == "delay") return u(c.delay_ns, 0, kU64);
  if (key == "rate" || key == "ratep") {
    uint64_t r = 0;
    if (auto e = u(r, 1, kU64)) return e;
    // rate is Mb/s: delay = bits per packet / rate; ratep is packets per second.
    c.delay_ns = key == "rate" ? uint64_t{c.min_pkt_size} * 8 * 1000 / r : 1'000'000'000ull / r;
    return std::nullopt;
  }
  if (key == "queue_map_min") return u(c.queue_map_min, 0, kU16);
  if (key == "queue_map_max") return u(c.queue_map_max, 0, kU16);
  if (key == "tos") {
    // pktgen_if_write reads tos with hex32_arg(.., 2, ..): `tos 10` is 0x10.
    unsigned t = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), t, 16);
    if (v.empty() || v.size() > 2 || ec != std::errc() || p != v.data() + v.size())
      return err(key, v, "expected 1 or 2 hex digits, as the kernel reads it: tos 10 is 0x10");
    c.tos = static_cast<uint8_t>(t);
    return std::nullopt;
  }
  if (key == "skb_priority") return u(c.skb_priority, 0, kU32);
  if (key == "flag") {
    bool clear = !v.empty() && v[0] == '!';
    std::string_view name = clear ? v.substr(1) : v;
    for (const FlagName& f : kFlags) {
      if (name == f.name) {
        c.flags = clear ? c.flags & ~f.bit : c.flags | f.bit;
        return std::nullopt;
      }
    }
    return err(key, v, "unknown flag");
  }
  if (key == "xmit_mode") {
    if (v == "start_xmit") c.mode = PktgenMode::kStartXmit;
    else if (v == "queue_xmit") c.mode = PktgenMode::kQueueXmit;
    else if (v == "netif_receive") c.mode = PktgenMode::kNetifReceive;
    else return err(key, v, "expected start_xmit, queue_xmit or netif_receive");
    return std::nullopt;
  }
  return std::string("unknown pktgen parameter '") + std::string(key) + "'";
}

std::optional<std::string> pktgen_validate(const PktgenConfig& c) {
  if (c.dev.empty()) return "no device (-i DEV)";
  // A MIN set above its MAX (src_min alone, say) is no error: as in pktgen, a range
  // varies only while min < max; otherwise the value stays at MIN.
  // pktgen refuses burst > 1 where it cannot batch (samples/pktgen: queue_xmit).
  if (c.burst > 1 && c.mode == PktgenMode::kQueueXmit) return "burst > 1 is not supported with xmit_mode queue_xmit";
  if (c.clone_skb > 0 && c.mode == PktgenMode::kNetifReceive && c.burst > 1)
    return "clone_skb with burst is not supported with xmit_mode netif_receive";
  return std::nullopt;
}

}  // namespace pktpath
