// u32 (iproute2's tc/f_u32.c): `u32 [ht HT:[BKT:]] [order N] [divisor D] (match
// SELECTOR)... [sample SELECTOR [divisor D]] [link HT:] [hashkey mask M at OFF]
// [classid|flowid X] [action ...]...` with SELECTOR one of `ip src|dst A.B.C.D[/N]`, `ip
// protocol|tos|dsfield N MASK`, `ip sport|dport N MASK`, `u32|u16|u8 VAL MASK at OFF`.
// Variable offsets (offset, nexthdr+, eat), indev, mark and police are refused, naming
// the word.
#include <arpa/inet.h>
#include <strings.h>

#include "cli/tc/tc_util.h"
#include "sched/cls_u32.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;

// mirrors pack_key: a key at the same offset is merged (its bits must agree).
Status pack_key(ktc::U32Spec& s, uint32_t val, uint32_t mask, int32_t off, const std::string& word) {
  if (off % 4 != 0) return unexpected("u32: offset " + std::to_string(off) + " is not a multiple of 4", word);
  for (ktc::U32Key& k : s.keys)
    if (k.off == off) {
      if ((k.val ^ val) & (k.mask & mask)) return unexpected("u32: the match contradicts an earlier one", word);
      k.val |= val;
      k.mask |= mask;
      return {};
    }
  if (s.keys.size() >= 128) return unexpected("u32: too many keys (128 at most)", word);
  s.keys.push_back({val, mask, off});
  return {};
}

// pack_key32/16/8: a value of `bits` bits at byte offset `off` within its 32-bit word.
Status pack_key_n(ktc::U32Spec& s, uint32_t val, uint32_t mask, int32_t off, int bits, const std::string& word) {
  if (val & ~mask) return unexpected("u32: value " + word + " has bits outside its mask", word);
  const int byte = ((off % 4) + 4) % 4;
  if (bits == 32 && byte) return unexpected("u32: offset " + std::to_string(off) + " is not a multiple of 4", word);
  if (bits == 16 && byte == 3) return unexpected("u32: a u16 cannot start at offset " + std::to_string(off), word);
  if (bits == 16 && byte == 1) return unexpected("u32: a u16 at an odd offset is not supported", word);
  const int shift = 32 - bits - byte * 8;
  if (bits < 32) {
    val <<= shift;
    mask <<= shift;
  }
  return pack_key(s, htonl(val), htonl(mask), off - byte, word);
}

Result<uint32_t> value_of(Lexer& lx, const std::string& key, uint32_t max) {
  auto v = lx.value(key);
  if (!v) return unexpected(v.error());
  auto n = get_u32(*v, 0);
  if (!n || *n > max) return unexpected("u32: bad value \"" + *v + "\" for " + key, *v);
  return *n;
}

// parse_ip: the IPv4 header fields tc names, at iproute2's fixed offsets (no options).
Status parse_ip(Lexer& lx, ktc::U32Spec& s) {
  const std::string f = lx.next();
  if (f == "src" || f == "dst") {
    auto v = lx.value(f);
    if (!v) return unexpected(v.error());
    const size_t slash = v->find('/');
    const std::string addr = v->substr(0, slash);
    in_addr a{};
    if (inet_pton(AF_INET, addr.c_str(), &a) != 1) return unexpected("u32: bad address \"" + *v + "\"", *v);
    uint32_t len = 32;
    if (slash != std::string::npos) {
      auto n = get_u32(v->substr(slash + 1), 10);
      if (!n || *n > 32) return unexpected("u32: bad prefix length in \"" + *v + "\"", *v);
      len = *n;
    }
    const uint32_t mask = len ? htonl(~0u << (32 - len)) : 0;
    return pack_key(s, a.s_addr & mask, mask, f == "src" ? 12 : 16, *v);
  }
  struct Field {
    const char* name;
    int off, bits;
  };
  static const Field kFields[] = {{"protocol", 9, 8}, {"tos", 1, 8}, {"dsfield", 1, 8},
                                  {"sport", 20, 16},  {"dport", 22, 16}};
  for (const Field& fd : kFields)
    if (f == fd.name) {
      const uint32_t max = fd.bits == 8 ? 0xff : 0xffff;
      auto val = value_of(lx, f, max);
      if (!val) return unexpected(val.error());
      const std::string word = lx.prev();
      auto mask = value_of(lx, word, max);
      if (!mask) return unexpected(mask.error());
      return pack_key_n(s, *val, *mask, fd.off, fd.bits, word);
    }
  return unexpected("u32: \"match ip " + f + "\" is not supported (src, dst, protocol, tos, dsfield, sport, dport)",
                    f.empty() ? "ip" : f);
}

// parse_u32/parse_u16/parse_u8: VAL MASK [at OFF] (no `at`: offset 0).
Status parse_raw(Lexer& lx, ktc::U32Spec& s, const std::string& kind) {
  const int bits = kind == "u32" ? 32 : kind == "u16" ? 16 : 8;
  const uint32_t max = bits == 32 ? 0xffffffffu : bits == 16 ? 0xffff : 0xff;
  auto val = value_of(lx, kind, max);
  if (!val) return unexpected(val.error());
  const std::string vword = lx.prev();
  auto mask = value_of(lx, vword, max);
  if (!mask) return unexpected(mask.error());
  if (*val & ~*mask) return unexpected("u32: value " + vword + " has bits outside its mask", vword);
  if (lx.peek() != "at") return pack_key_n(s, *val, *mask, 0, bits, vword);
  lx.next();
  auto ov = lx.value("at");
  if (!ov) return unexpected(ov.error());
  if (ov->rfind("nexthdr+", 0) == 0)
    return unexpected("u32: nexthdr+ offsets need a linked table (not supported)", *ov);
  char* end = nullptr;
  const long off = std::strtol(ov->c_str(), &end, 0);
  if (ov->empty() || *end != '\0' || off < -0x8000 || off > 0x7fff)
    return unexpected("u32: bad offset \"" + *ov + "\"", *ov);
  return pack_key_n(s, *val, *mask, static_cast<int32_t>(off), bits, *ov);
}

// `hashkey [mask M] [at OFF]`: the mask in hex (parse_hashkey).
Status parse_hashkey(Lexer& lx, ktc::U32Spec& s) {
  bool any = false;
  if (lx.peek() == "mask") {
    lx.next();
    auto v = lx.value("mask");
    if (!v) return unexpected(v.error());
    auto m = get_u32(*v, 16);
    if (!m) return unexpected("u32: Illegal \"hashkey\" mask \"" + *v + "\"", *v);
    s.hmask = htonl(*m);
    any = true;
  }
  if (lx.peek() == "at") {
    lx.next();
    auto v = lx.value("at");
    if (!v) return unexpected(v.error());
    char* end = nullptr;
    const long off = std::strtol(v->c_str(), &end, 0);
    if (v->empty() || *end != '\0' || off % 4 != 0 || off < -0x8000 || off > 0x7fff)
      return unexpected("u32: Illegal \"hashkey\" offset \"" + *v + "\" (a multiple of 4 from -32768 to 32764)", *v);
    s.hoff = static_cast<int32_t>(off);
    any = true;
  }
  if (!any) return unexpected("u32: \"hashkey\" needs \"mask M\" or \"at OFF\"", "hashkey");
  return {};
}

// `divisor D`: 1..256, a power of 2.
Result<uint32_t> parse_divisor(Lexer& lx, const std::string& key) {
  auto v = lx.value(key);
  if (!v) return unexpected(v.error());
  auto n = get_u32(*v, 0);
  if (!n || *n == 0 || *n > 0x100 || ((*n - 1) & *n))
    return unexpected("u32: Illegal \"divisor\" \"" + *v + "\" (a power of 2, 1..256)", *v);
  return *n;
}

Status parse_selector(Lexer& lx, ktc::U32Spec& s, const std::string& k) {
  const std::string what = lx.next();
  if (what == "ip") return parse_ip(lx, s);
  if (what == "u32" || what == "u16" || what == "u8") return parse_raw(lx, s, what);
  return unexpected("u32: \"" + k + " " + what + "\" is not supported (ip, u32, u16, u8)", what.empty() ? k : what);
}

// mirrors u32_parse_opt
Status u32_parse_opt(Lexer& lx, FilterRequest& req) {
  auto spec = std::make_shared<ktc::U32Spec>();
  uint32_t order = 0;
  bool sample = false;
  uint32_t sample_bucket = 0;
  while (!lx.done()) {
    const std::string k = lx.next();
    if (k == "match") {
      auto st = parse_selector(lx, *spec, k);
      if (!st) return unexpected(st.error());
    } else if (k == "ht") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto h = get_u32_handle(*v);
      if (!h) return unexpected("u32: Illegal \"ht\" \"" + *v + "\"", *v);
      if (ktc::u32_node(*h)) return unexpected("u32: \"ht\" must be a hash table (HT:[BKT:])", *v);
      spec->htid = *h & 0xfffff000u;
    } else if (k == "link") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto h = get_u32_handle(*v);
      if (!h) return unexpected("u32: Illegal \"link\" \"" + *v + "\"", *v);
      if (ktc::u32_key(*h)) return unexpected("u32: \"link\" must be a hash table (HT:)", *v);
      spec->link = *h;
    } else if (k == "divisor") {
      auto n = parse_divisor(lx, k);
      if (!n) return unexpected(n.error());
      spec->divisor = *n;
    } else if (k == "hashkey") {
      auto st = parse_hashkey(lx, *spec);
      if (!st) return unexpected(st.error());
    } else if (k == "sample") {
      // The bucket the one key's value hashes to (iproute2 computes it, not the kernel).
      ktc::U32Spec one;
      auto st = parse_selector(lx, one, k);
      if (!st) return unexpected(st.error());
      if (one.keys.size() != 1) return unexpected("u32: \"sample\" must contain exactly ONE key", k);
      uint32_t divisor = 0x100;
      if (lx.peek() == "divisor") {
        lx.next();
        auto n = parse_divisor(lx, "divisor");
        if (!n) return unexpected(n.error());
        divisor = *n;
      }
      // u32_hash_fold: the key's masked value, shifted down to its mask's lowest bit.
      const uint32_t mask = ntohl(one.keys[0].mask);
      const uint32_t hash = mask ? ntohl(one.keys[0].val & one.keys[0].mask) >> (ffs(static_cast<int>(mask)) - 1) : 0;
      sample = true;
      sample_bucket = hash % divisor;
    } else if (k == "order") {
      auto v = value_of(lx, k, 0xfff);
      if (!v || *v == 0) return unexpected("u32: bad order \"" + lx.prev() + "\" (1..0xfff)", lx.prev());
      order = *v;
    } else if (k == "offset" || k == "indev" || k == "police" || k == "mark") {
      return unexpected("u32: \"" + k + "\" is not supported", k);
    } else {
      auto taken = parse_filter_common(k, lx, req, *spec);
      if (!taken) return unexpected(taken.error());
      if (!*taken) return unexpected("unexpected word \"" + k + "\" for u32", k);
      if (k == "classid" || k == "flowid" || k == "action" || k == "act") spec->terminal = true;
    }
  }
  if (sample) spec->htid = (spec->htid & 0xfff00000u) | sample_bucket << 12;
  if (order) {
    if (req.handle && ktc::u32_node(req.handle) != order)
      return unexpected("u32: \"order\" contradicts \"handle\"", "order");
    req.handle = (req.handle & 0xfffff000u) | order;
  }
  req.spec = std::move(spec);
  return {};
}

// mirrors sprint_u32_handle: "800:", "800::800", "800:1:800".
std::string sprint_u32_handle(uint32_t h) {
  char b[64];
  int l = 0;
  const uint32_t ht = ktc::u32_htid(h) >> 20, bkt = ktc::u32_hash(h), node = ktc::u32_node(h);
  if (ht) l += std::snprintf(b + l, sizeof b - l, "%x:", ht);
  if (bkt) l += std::snprintf(b + l, sizeof b - l, "%x", bkt);
  if (node) l += std::snprintf(b + l, sizeof b - l, ":%x", node);
  return std::string(b, l);
}

// The root table's entry, as the kernel dumps it before the root's knodes (and, with
// no such knode, after the pref's other tables). state: the pref's root table id once a
// node showed it, | 1 once the entry is printed (or the pref has its own root entry, which
// an empty u32 line made).
void u32_print_gap(const ktc::TcFilter* next, uint64_t& state, const FilterHead& head, PrintSink& out) {
  if (state & 1) return;
  if (const auto* s = next ? dynamic_cast<const ktc::U32Spec*>(&next->spec_base()) : nullptr) state = s->root;
  const uint32_t root = state ? static_cast<uint32_t>(state) : ktc::kU32RootHt;
  if (next && ktc::u32_htid(next->handle()) != root) return;
  state |= 1;
  if (next && !ktc::u32_key(next->handle())) return;
  out.open_object(nullptr);
  head(out);
  out.open_object("options");
  out.print_string(PRINT_ANY, "fh", "fh %s ", sprint_u32_handle(root));
  out.print_int(PRINT_ANY, "ht_divisor", "ht divisor %d ", 1);
  out.close_object();
  out.print_nl();
  out.close_object();
}

// mirrors u32_print_opt: fh, order, the table's divisor or the knode's table and bucket,
// flowid, link, flags, with -s the node's counters (tc_u32_pcnt: rule hit / success),
// then each key (print_raw) and the hash key.
void u32_print_opt(const ktc::TcFilter& f, PrintSink& out) {
  const auto* s = dynamic_cast<const ktc::U32Spec*>(&f.spec_base());
  if (!s) return;
  out.print_string(PRINT_ANY, "fh", "fh %s ", sprint_u32_handle(f.handle()));
  if (ktc::u32_node(f.handle())) out.print_int(PRINT_ANY, "order", "order %d ", ktc::u32_node(f.handle()));
  if (!ktc::u32_key(f.handle())) {
    out.print_int(PRINT_ANY, "ht_divisor", "ht divisor %d ", s->divisor ? s->divisor : 1);
    return;
  }
  out.print_hex(PRINT_ANY, "key_ht", "key ht %x ", ktc::u32_htid(f.handle()) >> 20);
  out.print_hex(PRINT_ANY, "bkt", "bkt %x ", ktc::u32_hash(f.handle()));
  if (s->classid_set) {
    if (s->terminal) out.print_string(PRINT_FP, nullptr, "*", "");  // iproute2 6.1 marks a terminal key's flowid so
    print_filter_classid(*s, "flowid", out);
  } else if (s->terminal) {
    out.print_string(PRINT_FP, nullptr, "terminal flowid ", "");
  }
  if (s->link) out.print_string(PRINT_ANY, "link", "link %s ", sprint_u32_handle(s->link));
  print_filter_flags(*s, "", out);
  if (out.stats) {
    const auto st = f.stats.sum();
    out.print_uint(PRINT_ANY, "rule_hit", "(rule hit %llu ", st.packets);
    out.print_uint(PRINT_ANY, "success", "success %llu)", st.matched);
  }
  for (const ktc::U32Key& k : s->keys) {
    out.open_object("match");
    out.print_nl();
    out.print_hex(PRINT_ANY, "value", "  match %08x", ntohl(k.val));
    out.print_hex(PRINT_ANY, "mask", "/%08x ", ntohl(k.mask));
    out.print_string(PRINT_ANY, "offmask", "at %s", "");
    out.print_int(PRINT_ANY, "off", "%d", k.off);
    out.close_object();
  }
  if (s->hmask) {
    out.print_nl();
    out.print_hex(PRINT_ANY, "hash_mask", "    hash mask %08x ", ntohl(s->hmask));
    out.print_int(PRINT_ANY, "hash_off", "at %d ", s->hoff);
  }
}

const FilterUtilRegistrar kU32{{"u32", u32_parse_opt, u32_print_opt, u32_print_gap}};

}  // namespace
}  // namespace pktpath::cli::tc
