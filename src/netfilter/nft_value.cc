// nft values of the set key types (see nft_value.h).
#include "netfilter/nft_value.h"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "netfilter/nft_names.h"
#include "netfilter/nft_ruleset.h"

namespace pktpath::nf {

namespace {

std::optional<uint64_t> number(std::string_view s, uint64_t max) {
  const std::optional<uint64_t> v = nft_parse_uint(s);
  if (!v || *v > max) return std::nullopt;
  return v;
}

template <size_t N>
std::optional<uint64_t> named_or_number(std::string_view s, const NftName (&names)[N], uint64_t max) {
  if (auto v = nft_value_of(names, s)) return *v;
  return number(s, max);
}

void put_be(uint8_t* out, uint64_t v, unsigned len) {
  for (unsigned i = 0; i < len; ++i) out[i] = static_cast<uint8_t>(v >> (8 * (len - 1 - i)));
}
uint64_t get_be(const uint8_t* in, unsigned len) {
  uint64_t v = 0;
  for (unsigned i = 0; i < len; ++i) v = v << 8 | in[i];
  return v;
}

// One value of type t into out (len bytes); false when the word is not one.
bool parse_value(NftType t, std::string_view w, uint8_t* out) {
  switch (t) {
    case NftType::IPV4_ADDR: {
      auto a = nft_parse_ipv4(w);
      if (a) put_be(out, *a, 4);
      return a.has_value();
    }
    case NftType::IPV6_ADDR: return inet_pton(AF_INET6, std::string(w).c_str(), out) == 1;
    case NftType::ETHER_ADDR: return nft_parse_mac(w, out);
    case NftType::INET_PROTO:
      if (auto v = named_or_number(w, kIpProtocols, 255)) return put_be(out, *v, 1), true;
      return false;
    case NftType::INET_SERVICE:
      if (auto v = number(w, 65535)) return put_be(out, *v, 2), true;
      return false;
    case NftType::MARK:
      if (auto v = number(w, 0xffffffffu)) return put_be(out, *v, 4), true;
      return false;
    case NftType::ETHER_TYPE:
      if (auto v = named_or_number(w, kEtherTypes, 0xffff)) return put_be(out, *v, 2), true;
      return false;
    case NftType::DSCP:
      if (auto v = named_or_number(w, kDscpClasses, 63)) return put_be(out, *v, 1), true;
      return false;
  }
  return false;
}

bool is_addr(NftType t) { return t == NftType::IPV4_ADDR || t == NftType::IPV6_ADDR; }

std::string value_str(NftType t, const uint8_t* v) {
  char b[64];
  switch (t) {
    case NftType::IPV4_ADDR:
      std::snprintf(b, sizeof b, "%u.%u.%u.%u", v[0], v[1], v[2], v[3]);
      return b;
    case NftType::IPV6_ADDR: return inet_ntop(AF_INET6, v, b, sizeof b) ? b : "?";
    case NftType::ETHER_ADDR:
      std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", v[0], v[1], v[2], v[3], v[4], v[5]);
      return b;
    case NftType::INET_PROTO:
      if (const char* n = nft_name_of(kIpProtocols, v[0])) return n;
      return std::to_string(v[0]);
    case NftType::INET_SERVICE: return std::to_string(get_be(v, 2));
    case NftType::MARK:
      std::snprintf(b, sizeof b, "0x%08x", static_cast<unsigned>(get_be(v, 4)));
      return b;
    case NftType::ETHER_TYPE:
      if (const char* n = nft_name_of(kEtherTypes, static_cast<uint32_t>(get_be(v, 2)))) return n;
      std::snprintf(b, sizeof b, "0x%04x", static_cast<unsigned>(get_be(v, 2)));
      return b;
    case NftType::DSCP:
      if (const char* n = nft_name_of(kDscpClasses, v[0])) return n;
      std::snprintf(b, sizeof b, "0x%02x", v[0]);
      return b;
  }
  return "?";
}

// The prefix length when [lo, hi] is exactly one prefix of a len-byte value, else -1.
int prefix_of(const uint8_t* lo, const uint8_t* hi, unsigned len) {
  unsigned bits = 0;
  unsigned i = 0;
  for (; i < len && lo[i] == hi[i]; ++i) bits += 8;
  if (i == len) return static_cast<int>(bits);
  const uint8_t diff = lo[i] ^ hi[i];
  int host = 0;  // trailing bits that differ in this byte
  while (host < 8 && (diff >> host)) ++host;
  const uint8_t hmask = static_cast<uint8_t>((1u << host) - 1);
  if ((diff | hmask) != hmask || (lo[i] & hmask) != 0 || (hi[i] & hmask) != hmask) return -1;
  bits += 8 - host;
  for (unsigned j = i + 1; j < len; ++j)
    if (lo[j] != 0 || hi[j] != 0xff) return -1;
  return static_cast<int>(bits);
}

}  // namespace

std::optional<uint64_t> nft_parse_uint(std::string_view s) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<uint32_t> nft_parse_ipv4(std::string_view s) {
  uint32_t addr = 0;
  for (int part = 0; part < 4; ++part) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p == s.data() || v > 255 || (p - s.data() > 1 && s[0] == '0')) return std::nullopt;
    addr = addr << 8 | v;
    s.remove_prefix(static_cast<size_t>(p - s.data()));
    if (part < 3) {
      if (s.empty() || s[0] != '.') return std::nullopt;
      s.remove_prefix(1);
    }
  }
  if (!s.empty()) return std::nullopt;
  return addr;
}

// aa:bb:cc:dd:ee:ff, each byte one or two hex digits.
bool nft_parse_mac(std::string_view s, uint8_t* out) {
  for (int i = 0; i < 6; ++i) {
    if (i > 0) {
      if (s.empty() || s[0] != ':') return false;
      s.remove_prefix(1);
    }
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + std::min<size_t>(s.size(), 2), v, 16);
    if (ec != std::errc() || p == s.data()) return false;
    out[i] = static_cast<uint8_t>(v);
    s.remove_prefix(static_cast<size_t>(p - s.data()));
  }
  return s.empty();
}

Status nft_parse_elem(const std::vector<NftType>& types, NftMapData data, const NftRawElem& raw, NftElemSpec& out) {
  const bool map = data != NftMapData::NONE;
  out = NftElemSpec{};
  // KEY [timeout T] [counter [packets N bytes M]]: the key is the words before them.
  size_t nkey = raw.key.size();
  for (size_t i = 0; i < raw.key.size(); ++i) {
    if (raw.key[i] == "timeout" || raw.key[i] == "counter") {
      nkey = i;
      break;
    }
  }
  for (size_t i = nkey; i < raw.key.size();) {
    const std::string& w = raw.key[i];
    if (w == "timeout" && !out.timeout_ns && !out.counter) {
      if (i + 1 >= raw.key.size()) return unexpected("'timeout' needs one duration (30s, 1h30m) after the key");
      auto t = nft_parse_time(raw.key[i + 1]);
      if (!t || *t == 0) return unexpected("'" + raw.key[i + 1] + "': not a duration (30s, 1h30m, 500ms)");
      out.timeout_ns = *t;
      i += 2;
    } else if (w == "counter" && !out.counter) {
      out.counter = true;
      ++i;
      if (i < raw.key.size() && raw.key[i] == "packets") {
        auto p = i + 3 < raw.key.size() && raw.key[i + 2] == "bytes" ? nft_parse_uint(raw.key[i + 1]) : std::nullopt;
        auto b = p ? nft_parse_uint(raw.key[i + 3]) : std::nullopt;
        if (!p || !b) return unexpected("'counter' takes 'packets N bytes M'");
        out.packets = *p;
        out.bytes = *b;
        i += 4;
      }
    } else {
      return unexpected("'" + w + "': unexpected after the element's key (timeout T, counter)");
    }
  }
  // Components are separated by "." words.
  std::vector<std::string_view> comps;
  for (size_t i = 0; i < nkey; ++i) {
    if (i % 2 == 1) {
      if (raw.key[i] != ".") return unexpected("'" + raw.key[i] + "': expected ',' or '.' between values");
      continue;
    }
    comps.push_back(raw.key[i]);
  }
  if (comps.empty()) return unexpected("an element needs a value");
  if (comps.size() != types.size() || nkey % 2 == 0)
    return unexpected("element '" + (raw.key.empty() ? std::string() : raw.key[0]) + "' has " +
                           std::to_string(comps.size()) + " value(s), the set's type has " + std::to_string(types.size()));
  unsigned off = 0;
  for (size_t c = 0; c < comps.size(); ++c) {
    const NftType t = types[c];
    const unsigned len = nft_type_info(t).len;
    std::string_view w = comps[c];
    const std::string what = std::string(nft_type_info(t).name);
    const auto slash = w.find('/');
    const auto dash = t == NftType::IPV6_ADDR ? std::string_view::npos : w.find('-', 1);
    if (slash != std::string_view::npos && is_addr(t)) {
      const unsigned max = len * 8;
      auto l = number(w.substr(slash + 1), max);
      if (!l) return unexpected("'" + std::string(w) + "': invalid prefix length (0.." + std::to_string(max) + ")");
      if (!parse_value(t, w.substr(0, slash), out.lo.data() + off))
        return unexpected("'" + std::string(w) + "': not a valid " + what);
      for (unsigned b = 0; b < len; ++b) {
        const unsigned bits = *l > b * 8 ? std::min<unsigned>(8, static_cast<unsigned>(*l) - b * 8) : 0;
        const uint8_t m = static_cast<uint8_t>(bits ? 0xff << (8 - bits) : 0);
        out.lo[off + b] &= m;
        out.hi[off + b] = static_cast<uint8_t>(out.lo[off + b] | ~m);
      }
      out.range = true;
      out.prefix = static_cast<uint8_t>(*l);
    } else if (dash != std::string_view::npos && (is_addr(t) || t == NftType::INET_SERVICE || t == NftType::MARK ||
                                                  t == NftType::INET_PROTO || t == NftType::ETHER_TYPE)) {
      if (!parse_value(t, w.substr(0, dash), out.lo.data() + off) || !parse_value(t, w.substr(dash + 1), out.hi.data() + off))
        return unexpected("'" + std::string(w) + "': not a valid " + what + " range");
      if (std::memcmp(out.lo.data() + off, out.hi.data() + off, len) > 0)
        return unexpected("'" + std::string(w) + "': range's first value is above its last");
      out.range = true;
    } else if (t == NftType::IPV6_ADDR && w.find('-') != std::string_view::npos) {
      const auto d6 = w.find('-');
      if (!parse_value(t, w.substr(0, d6), out.lo.data() + off) || !parse_value(t, w.substr(d6 + 1), out.hi.data() + off))
        return unexpected("'" + std::string(w) + "': not a valid " + what + " range");
      if (std::memcmp(out.lo.data() + off, out.hi.data() + off, len) > 0)
        return unexpected("'" + std::string(w) + "': range's first value is above its last");
      out.range = true;
    } else {
      if (!parse_value(t, w, out.lo.data() + off)) return unexpected("'" + std::string(w) + "': not a valid " + what);
      std::memcpy(out.hi.data() + off, out.lo.data() + off, len);
    }
    off += nft_type_stride(t);
  }
  if (out.range && comps.size() > 1)
    return unexpected("'" + raw.key[0] + "': ranges and prefixes in a concatenation are not supported");
  if (!map) {
    if (!raw.data.empty()) return unexpected("'" + raw.data[0] + "': ':' in a set that is not a map");
    return {};
  }
  if (data == NftMapData::MARK) {
    if (raw.data.empty()) return unexpected("element '" + raw.key[0] + "' needs ': MARK' in a mark map");
    auto m = nft_parse_uint(raw.data[0]);
    if (!m || *m > 0xffffffffu) return unexpected("'" + raw.data[0] + "': not a mark (0..0xffffffff)");
    if (raw.data.size() > 1) return unexpected("'" + raw.data[1] + "': unexpected after the mark");
    out.value = static_cast<uint32_t>(*m);
    return {};
  }
  if (raw.data.empty()) return unexpected("element '" + raw.key[0] + "' needs ': VERDICT' in a verdict map");
  const std::string& v = raw.data[0];
  size_t want = 1;
  if (v == "accept") out.verdict = NftRuleVerdict::ACCEPT;
  else if (v == "drop") out.verdict = NftRuleVerdict::DROP;
  else if (v == "continue") out.verdict = NftRuleVerdict::CONTINUE;
  else if (v == "return") out.verdict = NftRuleVerdict::RETURN;
  else if (v == "jump" || v == "goto") {
    out.verdict = v == "jump" ? NftRuleVerdict::JUMP : NftRuleVerdict::GOTO;
    if (raw.data.size() < 2) return unexpected("'" + v + "': missing chain name");
    out.target = raw.data[1];
    want = 2;
  } else {
    return unexpected("'" + v + "': unknown verdict (accept, drop, continue, return, jump CHAIN, goto CHAIN)");
  }
  if (raw.data.size() > want) return unexpected("'" + raw.data[want] + "': unexpected after the verdict");
  return {};
}

std::string nft_key_str(const std::vector<NftType>& types, const uint8_t* key) {
  std::string s;
  unsigned off = 0;
  for (size_t c = 0; c < types.size(); ++c) {
    if (c) s += " . ";
    s += value_str(types[c], key + off);
    off += nft_type_stride(types[c]);
  }
  return s;
}

std::string nft_verdict_str(NftRuleVerdict code, const std::string& chain) {
  switch (code) {
    case NftRuleVerdict::ACCEPT: return "accept";
    case NftRuleVerdict::DROP: return "drop";
    case NftRuleVerdict::CONTINUE: return "continue";
    case NftRuleVerdict::RETURN: return "return";
    case NftRuleVerdict::JUMP: return "jump " + chain;
    case NftRuleVerdict::GOTO: return "goto " + chain;
    case NftRuleVerdict::VMAP: return "vmap";
  }
  return "?";
}

std::string nft_time_str(uint64_t ns) {
  uint64_t ms = ns / 1000000;
  static constexpr struct { uint64_t ms; const char* unit; } kUnits[] = {
      {86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
  std::string s;
  for (const auto& u : kUnits) {
    if (ms >= u.ms) {
      s += std::to_string(ms / u.ms) + u.unit;
      ms %= u.ms;
    }
  }
  return s.empty() ? "0s" : s;
}

std::optional<uint64_t> nft_parse_time(std::string_view s) {
  if (s.empty()) return std::nullopt;
  if (auto secs = nft_parse_uint(s)) {
    if (*secs > UINT64_MAX / 1000000000ull) return std::nullopt;
    return *secs * 1000000000ull;
  }
  uint64_t total = 0;
  while (!s.empty()) {
    size_t d = 0;
    while (d < s.size() && std::isdigit(static_cast<unsigned char>(s[d]))) ++d;
    if (d == 0 || d > 12) return std::nullopt;
    const uint64_t v = *nft_parse_uint(s.substr(0, d));
    s.remove_prefix(d);
    uint64_t unit;
    if (s.rfind("ms", 0) == 0) unit = 1000000ull, s.remove_prefix(2);
    else if (!s.empty() && s[0] == 'd') unit = 86400000000000ull, s.remove_prefix(1);
    else if (!s.empty() && s[0] == 'h') unit = 3600000000000ull, s.remove_prefix(1);
    else if (!s.empty() && s[0] == 'm') unit = 60000000000ull, s.remove_prefix(1);
    else if (!s.empty() && s[0] == 's') unit = 1000000000ull, s.remove_prefix(1);
    else return std::nullopt;
    if (v > (UINT64_MAX - total) / unit) return std::nullopt;
    total += v * unit;
  }
  return total;
}

std::string nft_elem_str(const std::vector<NftType>& types, NftMapData data, const NftElem& e, uint64_t now) {
  std::string s;
  if (e.range && types.size() == 1 && std::memcmp(e.lo.data(), e.hi.data(), nft_type_info(types[0]).len) != 0) {
    const unsigned len = nft_type_info(types[0]).len;
    const int p = is_addr(types[0]) ? prefix_of(e.lo.data(), e.hi.data(), len) : -1;
    if (p >= 0) s = value_str(types[0], e.lo.data()) + "/" + std::to_string(p);
    else s = value_str(types[0], e.lo.data()) + "-" + value_str(types[0], e.hi.data());
  } else {
    s = nft_key_str(types, e.lo.data());
  }
  if (e.timeout_ns) s += " timeout " + nft_time_str(e.timeout_ns);
  if (e.expires) s += " expires " + nft_time_str(e.expires > now ? e.expires - now : 0);
  if (e.counter) s += " counter packets " + std::to_string(e.packets) + " bytes " + std::to_string(e.bytes);
  if (data == NftMapData::MARK) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", e.data.value);
    s += std::string(" : ") + b;
  } else if (data == NftMapData::VERDICT) {
    s += " : " + nft_verdict_str(e.data.code, e.data.chain ? e.data.chain->name : std::string());
  }
  return s;
}

}  // namespace pktpath::nf
