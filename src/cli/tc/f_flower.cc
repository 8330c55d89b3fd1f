// flower (iproute2's tc/f_flower.c), a subset: `flower [ip_proto tcp|udp|sctp|icmp|icmpv6|N]
// [src_ip|dst_ip ADDR[/LEN]] [src_port|dst_port PORT|MIN-MAX] [ip_tos TOS[/MASK]] [ip_ttl TTL[/MASK]]
// [vlan_id ID] [src_mac|dst_mac MAC[/LEN]] [classid|flowid X] [skip_hw] [action ...]...`.
// Address and port keys need the filter's protocol (ip, ipv6) and ip_proto as tc asks.
#include <arpa/inet.h>

#include <cstring>

#include "cli/tc/tc_util.h"
#include "sched/cls_flower.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;

constexpr uint16_t kEthPIp = 0x0800, kEthPIpv6 = 0x86dd, kEthP8021q = 0x8100, kEthP8021ad = 0x88a8;

// The first `len` bits of an n-byte mask.
void prefix_mask(uint8_t* m, size_t n, uint32_t len) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = len > i * 8 ? std::min<uint32_t>(8, len - static_cast<uint32_t>(i) * 8) : 0;
    m[i] = static_cast<uint8_t>(bits ? 0xff << (8 - bits) : 0);
  }
}

// The prefix length of a mask, or -1 when it is not contiguous.
int mask_len(const uint8_t* m, size_t n) {
  int len = 0;
  bool zero = false;
  for (size_t i = 0; i < n; ++i)
    for (int b = 7; b >= 0; --b) {
      const bool one = (m[i] >> b) & 1;
      if (one && zero) return -1;
      if (one) ++len; else zero = true;
    }
  return len;
}

Status parse_ip_addr(const std::string& k, const std::string& v, uint16_t proto, ktc::FlowerSpec& s) {
  const size_t slash = v.find('/');
  const std::string addr = v.substr(0, slash);
  const bool v6 = addr.find(':') != std::string::npos;
  if ((v6 && proto != kEthPIpv6) || (!v6 && proto != kEthPIp))
    return unexpected("flower: \"" + k + "\" " + (v6 ? "IPv6" : "IPv4") + " needs protocol " + (v6 ? "ipv6" : "ip"),
                      k);
  uint8_t a[16] = {};
  if (inet_pton(v6 ? AF_INET6 : AF_INET, addr.c_str(), a) != 1)
    return unexpected("flower: bad address \"" + v + "\"", v);
  const uint32_t full = v6 ? 128 : 32;
  uint32_t len = full;
  if (slash != std::string::npos) {
    auto n = get_u32(v.substr(slash + 1), 10);
    if (!n || *n > full) return unexpected("flower: bad prefix length in \"" + v + "\"", v);
    len = *n;
  }
  uint8_t* key = k == "src_ip" ? s.key.src_ip : s.key.dst_ip;
  uint8_t* mask = k == "src_ip" ? s.mask.src_ip : s.mask.dst_ip;
  std::memcpy(key, a, v6 ? 16 : 4);
  prefix_mask(mask, v6 ? 16 : 4, len);
  return {};
}

Status parse_mac(const std::string& k, const std::string& v, ktc::FlowerSpec& s) {
  const size_t slash = v.find('/');
  unsigned b[6];
  char tail;
  if (std::sscanf(v.substr(0, slash).c_str(), "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                  &tail) != 6)
    return unexpected("flower: bad MAC address \"" + v + "\"", v);
  uint8_t* key = k == "src_mac" ? s.key.src_mac : s.key.dst_mac;
  uint8_t* mask = k == "src_mac" ? s.mask.src_mac : s.mask.dst_mac;
  for (int i = 0; i < 6; ++i) {
    if (b[i] > 0xff) return unexpected("flower: bad MAC address \"" + v + "\"", v);
    key[i] = static_cast<uint8_t>(b[i]);
  }
  uint32_t len = 48;
  if (slash != std::string::npos) {
    auto n = get_u32(v.substr(slash + 1), 10);
    if (!n || *n > 48) return unexpected("flower: bad MAC prefix length in \"" + v + "\"", v);
    len = *n;
  }
  prefix_mask(mask, 6, len);
  return {};
}

Status parse_port(const std::string& k, const std::string& v, ktc::FlowerSpec& s, bool have_l4) {
  if (!have_l4) return unexpected("flower: \"" + k + "\" needs ip_proto tcp, udp or sctp first", k);
  const size_t dash = v.find('-');
  auto lo = get_u32(v.substr(0, dash), 10);
  if (!lo || *lo > 0xffff) return unexpected("flower: bad port \"" + v + "\"", v);
  const bool src = k == "src_port";
  if (dash == std::string::npos) {
    (src ? s.key.src_port : s.key.dst_port) = htons(static_cast<uint16_t>(*lo));
    (src ? s.mask.src_port : s.mask.dst_port) = 0xffff;
    return {};
  }
  auto hi = get_u32(v.substr(dash + 1), 10);
  if (!hi || *hi > 0xffff || *hi <= *lo) return unexpected("flower: bad port range \"" + v + "\" (MIN-MAX, MIN < MAX)", v);
  (src ? s.src_range : s.dst_range) = true;
  (src ? s.src_min : s.dst_min) = static_cast<uint16_t>(*lo);
  (src ? s.src_max : s.dst_max) = static_cast<uint16_t>(*hi);
  return {};
}

// mirrors flower_parse_opt for the keys above
Status flower_parse_opt(Lexer& lx, FilterRequest& req) {
  auto spec = std::make_shared<ktc::FlowerSpec>();
  ktc::FlowerSpec& s = *spec;
  const uint16_t proto = req.protocol;
  const bool vlan = proto == kEthP8021q || proto == kEthP8021ad;
  if (proto != ktc::kEthPAll && !vlan) {
    s.key.n_proto = htons(proto);
    s.mask.n_proto = 0xffff;
  }
  while (!lx.done()) {
    const std::string k = lx.next();
    if (k == "ip_proto") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      if (proto != kEthPIp && proto != kEthPIpv6) return unexpected("flower: ip_proto needs protocol ip or ipv6", k);
      uint32_t n;
      if (*v == "tcp") n = 6;
      else if (*v == "udp") n = 17;
      else if (*v == "sctp") n = 132;
      else if (*v == "icmp") n = 1;
      else if (*v == "icmpv6") n = 58;
      else if (auto x = get_u32(*v, 0); x && *x <= 0xff) n = *x;
      else return unexpected("flower: bad ip_proto \"" + *v + "\"", *v);
      s.key.ip_proto = static_cast<uint8_t>(n);
      s.mask.ip_proto = 0xff;
    } else if (k == "src_ip" || k == "dst_ip") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto st = parse_ip_addr(k, *v, proto, s);
      if (!st) return unexpected(st.error());
    } else if (k == "src_port" || k == "dst_port") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      const bool l4 = s.mask.ip_proto && (s.key.ip_proto == 6 || s.key.ip_proto == 17 || s.key.ip_proto == 132);
      auto st = parse_port(k, *v, s, l4);
      if (!st) return unexpected(st.error());
    } else if (k == "ip_tos" || k == "ip_ttl") {  // flower_parse_ip_tos_ttl: VALUE[/MASK]
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      if (proto != kEthPIp && proto != kEthPIpv6) return unexpected("flower: " + k + " needs protocol ip or ipv6", k);
      const size_t slash = v->find('/');
      auto val = get_u32(v->substr(0, slash), 0);
      auto m = slash == std::string::npos ? Result<uint32_t>(0xffu) : get_u32(v->substr(slash + 1), 16);
      if (!val || !m || *val > 0xff || *m > 0xff) return unexpected("flower: bad " + k + " \"" + *v + "\"", *v);
      (k == "ip_tos" ? s.key.tos : s.key.ttl) = static_cast<uint8_t>(*val);
      (k == "ip_tos" ? s.mask.tos : s.mask.ttl) = static_cast<uint8_t>(*m);
    } else if (k == "vlan_id") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      if (!vlan) return unexpected("flower: vlan_id needs protocol 802.1q or 802.1ad", k);
      auto n = get_u32(*v, 0);
      if (!n || *n > 0xfff) return unexpected("flower: bad vlan_id \"" + *v + "\" (0..4095)", *v);
      s.key.vlan_id = static_cast<uint16_t>(*n);
      s.mask.vlan_id = 0x0fff;
    } else if (k == "src_mac" || k == "dst_mac") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto st = parse_mac(k, *v, s);
      if (!st) return unexpected(st.error());
    } else {
      auto taken = parse_filter_common(k, lx, req, s);
      if (!taken) return unexpected(taken.error());
      if (!*taken) return unexpected("flower: \"" + k + "\" is not supported", k);
    }
  }
  req.spec = std::move(spec);
  return {};
}

std::string mac_text(const uint8_t* a) {
  char b[32];
  std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3], a[4], a[5]);
  return b;
}

bool any(const uint8_t* m, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (m[i]) return true;
  return false;
}

// mirrors flower_print_opt for the keys above: one key a line, in tc's order.
void flower_print_opt(const ktc::TcFilter& f, PrintSink& out) {
  const auto* s = dynamic_cast<const ktc::FlowerSpec*>(&f.spec_base());
  if (!s) return;
  char b[160];
  out.print_uint(PRINT_ANY, "handle", "handle 0x%x ", f.handle());
  print_filter_classid(*s, "classid", out);
  out.open_object("keys");
  // IND / MASKED: each key on its own line, "  KEY VALUE".
  auto line = [&](const char* key, const std::string& v) {
    const std::string fmt = std::string("  ") + key + " %s";
    out.print_nl();
    out.print_string(PRINT_ANY, key, fmt.c_str(), v);
  };
  auto number = [&](const char* key, uint64_t v) {
    const std::string fmt = std::string("  ") + key + " %u";
    out.print_nl();
    out.print_uint(PRINT_ANY, key, fmt.c_str(), v);
  };
  if (s->mask.vlan_id) number("vlan_id", s->key.vlan_id);
  for (const char* which : {"dst_mac", "src_mac"}) {
    const bool dst = which[0] == 'd';
    const uint8_t* m = dst ? s->mask.dst_mac : s->mask.src_mac;
    if (!any(m, 6)) continue;
    std::string v = mac_text(dst ? s->key.dst_mac : s->key.src_mac);
    const int len = mask_len(m, 6);
    if (len != 48) v += "/" + (len < 0 ? mac_text(m) : std::to_string(len));
    line(which, v);
  }
  const uint16_t proto = ntohs(s->key.n_proto);
  if (s->mask.n_proto) {
    if (proto == kEthPIp) line("eth_type", "ipv4");
    else if (proto == kEthPIpv6) line("eth_type", "ipv6");
    else if (proto == 0x0806) line("eth_type", "arp");
    else {
      std::snprintf(b, sizeof b, "%04x", proto);
      line("eth_type", b);
    }
  }
  if (s->mask.ip_proto) {
    const uint8_t p = s->key.ip_proto;
    if (p == 6) line("ip_proto", "tcp");
    else if (p == 17) line("ip_proto", "udp");
    else if (p == 132) line("ip_proto", "sctp");
    else if (p == 1) line("ip_proto", "icmp");
    else if (p == 58) line("ip_proto", "icmpv6");
    else {
      std::snprintf(b, sizeof b, "%02x", p);
      line("ip_proto", b);
    }
  }
  for (const char* which : {"ip_tos", "ip_ttl"}) {  // print_masked_u8: "ip_tos 16/0xfc"
    const bool tos = which[4] == 'o';
    const uint8_t key = tos ? s->key.tos : s->key.ttl, mask = tos ? s->mask.tos : s->mask.ttl;
    if (!mask) continue;
    number(which, key);
    if (mask != 0xff) out.print_hex(PRINT_ANY, tos ? "ip_tos_mask" : "ip_ttl_mask", "/0x%x", mask);
  }
  const bool v6 = proto == kEthPIpv6;
  for (const char* which : {"dst_ip", "src_ip"}) {
    const bool dst = which[0] == 'd';
    const uint8_t* m = dst ? s->mask.dst_ip : s->mask.src_ip;
    const size_t n = v6 ? 16 : 4;
    if (!any(m, n)) continue;
    char a[INET6_ADDRSTRLEN];
    inet_ntop(v6 ? AF_INET6 : AF_INET, dst ? s->key.dst_ip : s->key.src_ip, a, sizeof a);
    std::string v = a;
    const int len = mask_len(m, n);
    if (len != static_cast<int>(n * 8)) v += "/" + std::to_string(len);
    line(which, v);
  }
  for (const char* which : {"dst_port", "src_port"}) {
    const bool dst = which[0] == 'd';
    if (dst ? s->dst_range : s->src_range)
      line(which, std::to_string(dst ? s->dst_min : s->src_min) + "-" + std::to_string(dst ? s->dst_max : s->src_max));
    else if (dst ? s->mask.dst_port : s->mask.src_port)
      number(which, ntohs(dst ? s->key.dst_port : s->key.src_port));
  }
  out.close_object();
  print_filter_flags(*s, "\n  ", out);
}

const FilterUtilRegistrar kFlower{{"flower", flower_parse_opt, flower_print_opt}};

}  // namespace
}  // namespace pktpath::cli::tc
