// nft command-line parser (see nft_parse.h). Grammar follows nft(8) for the subset pktpath
// implements; error texts name the word and what was expected.
#include "netfilter/nft_parse.h"
#include "netfilter/nft_names.h"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

namespace pktpath::nf {

namespace {

struct Tok {
  std::string text;
  size_t index;  // word it came from
};

// Split words further on whitespace and the punctuation nft treats as tokens, so that
// "{ type filter ... ; }" in one quoted word and the same as separate words parse alike.
std::vector<Tok> tokenize(const std::vector<std::string>& words, size_t first) {
  std::vector<Tok> out;
  for (size_t w = first; w < words.size(); ++w) {
    const std::string& s = words[w];
    std::string cur;
    auto flush = [&] {
      if (!cur.empty()) out.push_back({cur, w});
      cur.clear();
    };
    for (char c : s) {
      if (c == ' ' || c == '\t' || c == '\n') {
        flush();
      } else if (c == '{' || c == '}' || c == ';' || c == ',') {
        flush();
        out.push_back({std::string(1, c), w});
      } else {
        cur += c;
      }
    }
    flush();
  }
  return out;
}

struct ParseFail {
  Error err;
};

class Parser {
 public:
  Parser(std::vector<Tok> toks, size_t nwords) : t_(std::move(toks)), nwords_(nwords) {}

  NftCommand parse() {
    NftCommand c;
    // Global options first (nft accepts them before the command).
    while (!at_end() && peek()[0] == '-' && peek().size() > 1) {
      const Tok& o = next();
      if (o.text == "-j" || o.text == "--json") c.json = true;
      else if (o.text == "-a" || o.text == "--handle") c.handles = true;
      else if (o.text == "-f" || o.text == "--file") {
        c.op = NftOp::RUN_FILE;
        c.file = need("a file name after -f").text;
        if (!at_end()) fail(peek_tok(), "unexpected word after -f FILE");
        return c;
      }
      else fail(o, "unsupported option");
    }
    const Tok& verb = need("a command (add, insert, replace, delete, flush, list)");
    if (verb.text == "replace") {
      const Tok& what = need("'rule'");
      if (what.text != "rule") fail(what, "unsupported: replace only takes 'rule'");
      c.op = NftOp::REPLACE_RULE;
      family();
      c.table = name("table name");
      c.chain = name("chain name");
      c.handle = handle();
      c.rule = rule();
    } else if (verb.text == "add" || verb.text == "insert") {
      const Tok& what = need("table, chain, rule, set, map or element");
      if (verb.text == "insert" && what.text != "rule") fail(what, "unsupported: insert only takes 'rule'");
      if (what.text == "set" || what.text == "map") {
        c.op = NftOp::ADD_SET;
        c.map = what.text == "map";
        family();
        c.table = name("table name");
        c.set = name(what.text + " name");
        c.set_spec = set_body(c.map);
      } else if (what.text == "element") {
        c.op = NftOp::ADD_ELEMENT;
        family();
        c.table = name("table name");
        c.set = name("set name");
        c.elems = raw_elements();
      } else if (what.text == "table") {
        c.op = NftOp::ADD_TABLE;
        family();
        c.table = name("table name");
      } else if (what.text == "chain") {
        c.op = NftOp::ADD_CHAIN;
        family();
        c.table = name("table name");
        c.chain = name("chain name");
        if (!at_end()) c.chain_spec = chain_body();
      } else if (what.text == "rule") {
        c.op = verb.text == "add" ? NftOp::ADD_RULE : NftOp::INSERT_RULE;
        family();
        c.table = name("table name");
        c.chain = name("chain name");
        c.rule = rule();
      } else {
        fail(what, "unsupported object (expected table, chain or rule)");
      }
    } else if (verb.text == "delete") {
      const Tok& what = need("table, chain, rule, set, map or element");
      family();
      c.table = name("table name");
      if (what.text == "set" || what.text == "map") {
        c.op = NftOp::DELETE_SET;
        c.map = what.text == "map";
        c.set = name(what.text + " name");
      } else if (what.text == "element") {
        c.op = NftOp::DELETE_ELEMENT;
        c.set = name("set name");
        c.elems = raw_elements();
      } else if (what.text == "table") {
        c.op = NftOp::DELETE_TABLE;
      } else if (what.text == "chain") {
        c.op = NftOp::DELETE_CHAIN;
        c.chain = name("chain name");
      } else if (what.text == "rule") {
        c.op = NftOp::DELETE_RULE;
        c.chain = name("chain name");
        c.handle = handle();
      } else {
        fail(what, "unsupported object (expected table, chain or rule)");
      }
    } else if (verb.text == "flush" || verb.text == "list") {
      const bool list = verb.text == "list";
      const Tok& what = need("'ruleset'");
      if (what.text == "set" || what.text == "map") {
        c.op = list ? NftOp::LIST_SET : NftOp::FLUSH_SET;
        c.map = what.text == "map";
        family();
        c.table = name("table name");
        c.set = name(what.text + " name");
      } else if (what.text == "table" && list) {
        c.op = NftOp::LIST_TABLE;
        family();
        c.table = name("table name");
      } else if (what.text == "ruleset") {
        c.op = list ? NftOp::LIST_RULESET : NftOp::FLUSH_RULESET;
      } else {
        fail(what, list ? "unsupported: list ruleset, table, set or map" : "unsupported: flush ruleset, set or map");
      }
    } else {
      fail(verb, "unsupported command (expected add, insert, replace, delete, flush or list)");
    }
    if (!at_end()) fail(peek_tok(), "unexpected word after the command");
    return c;
  }

 private:
  bool at_end() const { return i_ >= t_.size(); }
  const std::string& peek() const { return t_[i_].text; }
  const Tok& peek_tok() const { return t_[i_]; }
  const Tok& next() { return t_[i_++]; }

  [[noreturn]] void fail(const Tok& t, std::string msg) {
    throw ParseFail{Error{std::move(msg), t.text, t.index}};
  }
  [[noreturn]] void fail_missing(std::string what) {
    throw ParseFail{Error{"missing " + std::move(what), "", nwords_}};
  }
  const Tok& need(const std::string& what) {
    if (at_end()) fail_missing(what);
    return next();
  }

  // handle H
  uint64_t handle() {
    const Tok& h = need("'handle'");
    if (h.text != "handle") fail(h, "expected 'handle' (rules are named by handle)");
    const Tok& v = need("a rule handle");
    return number(v, 1, std::numeric_limits<uint64_t>::max(), "rule handle");
  }

  void family() {
    const Tok& f = need("family (netdev)");
    if (f.text == "netdev") return;
    if (f.text == "ip" || f.text == "ip6" || f.text == "inet" || f.text == "arp" || f.text == "bridge")
      fail(f, "unsupported family (only netdev)");
    fail(f, "unsupported: family omitted or unknown (nft defaults to ip); only netdev is supported");
  }

  std::string name(const std::string& what) {
    const Tok& n = need(what);
    std::string s = n.text;
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    if (s.empty() || s == "{" || s == "}" || s == ";" || s.size() > 255)
      fail(n, "invalid " + what);
    for (char ch : s)
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.' || ch == '/'))
        fail(n, "invalid " + what + " (letters, digits, _ - . / only)");
    return s;
  }

  uint64_t number(const Tok& t, uint64_t min, uint64_t max, const std::string& what) {
    const std::optional<uint64_t> n = nft_parse_uint(t.text);
    if (!n) fail(t, "invalid " + what + " (expected a number)");
    const uint64_t v = *n;
    if (v < min || v > max)
      fail(t, what + " out of range (" + std::to_string(min) + ".." + std::to_string(max) + ")");
    return v;
  }

  // '{' type filter hook H device D priority P ; [policy X ;] '}'
  NftChainSpec chain_body() {
    NftChainSpec s;
    const Tok& open = next();
    if (open.text != "{") fail(open, "expected '{' to start the chain description");
    bool have_hook = false;
    for (;;) {
      const Tok& w = need("'}' to close the chain description");
      if (w.text == "}") break;
      if (w.text == ";") continue;
      if (w.text == "type") {
        const Tok& ty = need("chain type");
        if (ty.text != "filter") fail(ty, "unsupported chain type (only filter)");
        const Tok& hk = need("'hook'");
        if (hk.text != "hook") fail(hk, "expected 'hook'");
        const Tok& h = need("hook name");
        if (h.text == "egress") s.hook = NfHookNum::EGRESS;
        else if (h.text == "ingress") s.hook = NfHookNum::INGRESS;
        else fail(h, "unsupported hook (expected ingress or egress)");
        const Tok& dv = need("'device'");
        if (dv.text == "devices") fail(dv, "unsupported: 'devices' (one device per chain)");
        if (dv.text != "device") fail(dv, "expected 'device' (netdev chains need one)");
        s.device = name("device name");
        const Tok& pr = need("'priority'");
        if (pr.text != "priority") fail(pr, "expected 'priority'");
        s.priority = priority();
        s.base = true;
        have_hook = true;
      } else if (w.text == "policy") {
        const Tok& p = need("policy");
        if (p.text == "accept") s.policy = NfVerdict::ACCEPT;
        else if (p.text == "drop") s.policy = NfVerdict::DROP;
        else fail(p, "unsupported policy (expected accept or drop)");
        s.has_policy = true;
      } else {
        fail(w, "unsupported in a chain description (expected type, policy or '}')");
      }
    }
    if (s.has_policy && !have_hook) fail_missing("'type filter hook ...' before a policy (only base chains have one)");
    return s;
  }

  // '{' type K [. K...] [: verdict] ; [flags F[,F]] ; [size N] ; [elements = { ... }] '}'
  NftSetSpec set_body(bool map) {
    NftSetSpec s;
    s.map = map;
    const Tok& open = need("'{' and the set's type");
    if (open.text != "{") fail(open, "expected '{' to start the set description");
    for (;;) {
      const Tok& w = need("'}' to close the set description");
      if (w.text == "}") break;
      if (w.text == ";") continue;
      if (w.text == "type") {
        if (!s.types.empty()) fail(w, "the set's type is given twice");
        for (;;) {
          const Tok& ty = need("a data type");
          auto t = nft_type_by_name(ty.text);
          if (!t) fail(ty, "unsupported set type (ipv4_addr, ipv6_addr, ether_addr, inet_proto, inet_service, mark, ether_type, dscp)");
          s.types.push_back(*t);
          if (at_end() || peek() != ".") break;
          next();
        }
        if (s.types.size() > kNftMaxConcat) fail(w, "too many values in the concatenation");
        if (!at_end() && peek() == ":") {
          const Tok& colon = next();
          if (!map) fail(colon, "':' in a set's type: declare a map");
          const Tok& d = need("the map's data type");
          if (d.text == "mark") s.mark_data = true;
          else if (d.text != "verdict") fail(d, "unsupported map data type (verdict, mark)");
        } else if (map) {
          fail(w, "a map's type needs ': verdict' or ': mark'");
        }
      } else if (w.text == "typeof") {
        // nft's typeof: the key's types from the selectors a rule would read.
        if (!s.types.empty()) fail(w, "the set's type is given twice");
        for (;;) {
          const Tok& at = need("an expression (ip saddr, tcp dport, meta mark, ...)");
          --i_;
          const auto k = selector();
          const auto t = k ? nft_key_type(*k) : std::nullopt;
          if (!t) fail(at, "unsupported typeof expression (ip saddr, tcp dport, meta mark, ether saddr, ...)");
          s.types.push_back(*t);
          s.typeof_keys.push_back(*k);
          if (at_end() || peek() != ".") break;
          next();
        }
        if (s.types.size() > kNftMaxConcat) fail(w, "too many values in the concatenation");
        if (!at_end() && peek() == ":") {
          const Tok& colon = next();
          if (!map) fail(colon, "':' in a set's typeof: declare a map");
          const Tok& d = need("the map's data (verdict, meta mark)");
          if (d.text == "meta" && !at_end() && peek() == "mark") {
            next();
            s.mark_data = s.typeof_data = true;
          } else if (d.text != "verdict") {
            fail(d, "unsupported map data (verdict, meta mark)");
          }
        } else if (map) {
          fail(w, "a map's typeof needs ': verdict' or ': meta mark'");
        }
      } else if (w.text == "flags") {
        for (;;) {
          const Tok& f = need("a set flag");
          if (f.text == "interval") s.interval = true;
          else if (f.text == "constant") s.constant = true;
          else if (f.text == "timeout") s.timeouts = true;
          else if (f.text == "dynamic") s.dynamic = true;
          else fail(f, "unsupported set flag (interval, constant, dynamic, timeout)");
          if (at_end() || peek() != ",") break;
          next();
        }
      } else if (w.text == "size") {
        s.size = static_cast<uint32_t>(number(need("set size"), 1, kNftMaxSetSize, "set size"));
      } else if (w.text == "elements") {
        const Tok& eq = need("'='");
        if (eq.text != "=") fail(eq, "expected '=' after elements");
        if (s.types.empty()) elems_raw_ = raw_elements();                // parsed once the type is known
        else raw_elements(&s.types, nft_map_data(s), &s.elements);     // parsed as read: no raw copy kept
        s.has_elements = true;
      } else if (w.text == "timeout") {
        const Tok& v = need("a timeout (30s, 1h30m)");
        auto t = nft_parse_time(v.text);
        if (!t || *t == 0) fail(v, "invalid timeout (30s, 1h30m, 500ms)");
        s.timeout_ns = *t;
        s.timeouts = true;
      } else if (w.text == "counter") {
        s.counter = true;
      } else if (w.text == "policy" || w.text == "auto-merge" ||
                 w.text == "gc-interval" || w.text == "comment") {
        fail(w, "unsupported in a set description");
      } else {
        fail(w, "unexpected in a set description (expected type, typeof, flags, size or elements)");
      }
    }
    if (s.types.empty()) fail_missing("the set's 'type' or 'typeof'");
    if (s.interval && s.types.size() > 1) fail(open, "unsupported: 'flags interval' on a concatenation");
    const size_t ktotal = [&] { size_t k = 0; for (NftType t : s.types) k += nft_type_stride(t); return k; }();
    if (ktotal > kNftMaxKeyLen) fail(open, "key too long (" + std::to_string(kNftMaxKeyLen) + " bytes at most)");
    for (const NftRawElem& r : elems_raw_) s.elements.push_back(elem(s.types, nft_map_data(s), r));
    elems_raw_.clear();
    return s;
  }

  // An element parsed for known types; an error names the element's first word.
  NftElemSpec elem(const std::vector<NftType>& types, NftMapData data, const NftRawElem& r) {
    NftElemSpec e;
    Status st = nft_parse_elem(types, data, r, e);
    if (!st) fail(t_[r.index], st.error().msg);
    return e;
  }

  // '{' E [, E]* '}' where E := words [':' words]. With types, each element is parsed
  // into *parsed as soon as it is read and none is returned.
  std::vector<NftRawElem> raw_elements(const std::vector<NftType>* types = nullptr,
                                       NftMapData map = NftMapData::NONE,
                                       std::vector<NftElemSpec>* parsed = nullptr) {
    const Tok& open = need("'{' and the elements");
    if (open.text != "{") fail(open, "expected '{' before the elements");
    std::vector<NftRawElem> out;
    if (parsed) parsed->reserve(parsed->size() + (t_.size() - i_) / 2);  // a value and a comma each
    NftRawElem cur;
    bool data = false;
    for (;;) {
      const size_t at = i_;
      const Tok& w = need("'}' to close the elements");
      if (w.text == "}" || w.text == ",") {
        if (cur.key.empty()) {
          if (w.text == "}" && out.empty() && (!parsed || parsed->empty())) break;
          if (w.text == "}" && !data) break;  // a trailing comma
          fail(w, "missing element before '" + w.text + "'");
        }
        if (data && cur.data.empty()) fail(w, "missing verdict after ':'");
        if (types) parsed->push_back(elem(*types, map, cur));
        else out.push_back(std::move(cur));
        cur = NftRawElem{};
        data = false;
        if (w.text == "}") break;
        continue;
      }
      if (w.text == "{" || w.text == ";") fail(w, "unexpected in an element list");
      if (w.text == ":") {
        if (data || cur.key.empty()) fail(w, "unexpected ':'");
        data = true;
        continue;
      }
      if (cur.key.empty()) cur.index = at;
      (data ? cur.data : cur.key).push_back(w.text);
    }
    if (out.size() > kNftMaxSetSize || (parsed && parsed->size() > kNftMaxSetSize)) fail(open, "too many elements");
    return out;
  }

  // A selector: ip saddr, tcp dport, meta l4proto, ... (what a set lookup reads).
  std::optional<NftKey> selector() {
    if (i_ + 1 >= t_.size()) return std::nullopt;
    const std::string& a = t_[i_].text;
    const std::string& b = t_[i_ + 1].text;
    std::optional<NftKey> k;
    if (a == "ip") {
      if (b == "saddr") k = NftKey::IP_SADDR;
      else if (b == "daddr") k = NftKey::IP_DADDR;
      else if (b == "protocol") k = NftKey::IP_PROTOCOL;
      else if (b == "dscp") k = NftKey::IP_DSCP;
    } else if (a == "ip6") {
      if (b == "saddr") k = NftKey::IP6_SADDR;
      else if (b == "daddr") k = NftKey::IP6_DADDR;
      else if (b == "nexthdr") k = NftKey::IP6_NEXTHDR;
    } else if (a == "tcp" || a == "udp") {
      if (b == "sport") k = a == "tcp" ? NftKey::TCP_SPORT : NftKey::UDP_SPORT;
      else if (b == "dport") k = a == "tcp" ? NftKey::TCP_DPORT : NftKey::UDP_DPORT;
    } else if (a == "meta") {
      if (b == "mark") k = NftKey::META_MARK;
      else if (b == "protocol") k = NftKey::META_PROTOCOL;
      else if (b == "l4proto") k = NftKey::META_L4PROTO;
    } else if (a == "ether") {
      if (b == "saddr") k = NftKey::ETHER_SADDR;
      else if (b == "daddr") k = NftKey::ETHER_DADDR;
      else if (b == "type") k = NftKey::ETHER_TYPE;
    }
    if (k) i_ += 2;
    return k;
  }

  // @name, or { E, ... }: an anonymous set (a map when `data`) of the rule's own.
  void set_ref(NftLookupSpec& lk, const std::vector<NftType>& types, NftMapData data) {
    const bool map = data != NftMapData::NONE;
    const Tok& v = need(map ? "@map or { ... }" : "@set or { ... }");
    if (v.text.size() > 1 && v.text[0] == '@') {
      lk.set = v.text.substr(1);
    } else if (v.text == "{") {
      --i_;
      auto spec = std::make_shared<NftSetSpec>();
      spec->types = types;
      spec->map = map;
      spec->mark_data = data == NftMapData::MARK;
      raw_elements(&types, data, &spec->elements);
      for (const NftElemSpec& e : spec->elements) spec->interval = spec->interval || e.range;
      if (spec->elements.empty()) fail(v, "an anonymous set needs at least one element");
      if (spec->interval && types.size() > 1) fail(v, "unsupported: ranges in a concatenation");
      spec->has_elements = true;
      lk.anon = std::move(spec);
    } else {
      fail(v, map ? "expected @map or { ... }" : "expected @set or { ... }");
    }
  }

  // The selectors of a concatenation: SELECTOR [. SELECTOR]*, with their set types;
  // false (position unchanged) when no selector starts here.
  bool selectors(NftLookupSpec& lk, std::vector<NftType>& types) {
    const size_t start = i_;
    for (;;) {
      const size_t at = i_;
      auto k = selector();
      if (!k) {
        i_ = start;
        lk.keys.clear();
        return false;
      }
      auto t = nft_key_type(*k);
      if (!t) fail(t_[at], "this selector cannot be looked up in a set");
      lk.keys.push_back(*k);
      types.push_back(*t);
      if (at_end() || peek() != ".") break;
      next();
    }
    if (lk.keys.size() > kNftMaxConcat) fail(t_[start], "too many values in the concatenation");
    return true;
  }

  // SELECTOR [. SELECTOR]* [==|!=] (@set | { E, ... } | vmap (@map | { E : V, ... })), or
  // nullopt (position unchanged) when what follows is a plain comparison.
  std::optional<NftMatch> lookup_match() {
    const size_t start = i_;
    auto lk = std::make_shared<NftLookupSpec>();
    for (;;) {
      auto k = selector();
      if (!k) { i_ = start; return std::nullopt; }
      lk->keys.push_back(*k);
      if (at_end() || peek() != ".") break;
      next();
    }
    const size_t after_sel = i_;
    bool neg = false;
    if (!at_end() && (peek() == "!=" || peek() == "ne")) { next(); neg = true; }
    else if (!at_end() && (peek() == "==" || peek() == "eq")) next();
    if (at_end()) { i_ = start; return std::nullopt; }
    const Tok& w = peek_tok();
    if (w.text == "vmap") {
      if (neg) fail(w, "'!=' before vmap");
      next();
      lk->vmap = true;
    } else if (!(w.text == "{" || (w.text.size() > 1 && w.text[0] == '@'))) {
      if (lk->keys.size() > 1) fail(w, "a concatenation is looked up in a set (@name or { ... })");
      i_ = start;
      return std::nullopt;
    }
    std::vector<NftType> types;
    for (NftKey k : lk->keys) {
      auto t = nft_key_type(k);
      if (!t) fail(t_[start], "this selector cannot be looked up in a set");
      types.push_back(*t);
    }
    if (lk->keys.size() > kNftMaxConcat) fail(t_[after_sel], "too many values in the concatenation");
    set_ref(*lk, types, lk->vmap ? NftMapData::VERDICT : NftMapData::NONE);
    NftMatch m;
    m.key = lk->keys[0];
    m.neg = neg;
    m.nbytes = kNftLookup;
    m.lookup = std::move(lk);
    return m;
  }

  // add|update @SET { SELECTOR [. SELECTOR]* [timeout T] [counter] } (nft_dynset), after
  // its verb.
  NftMatch dynset(bool update) {
    auto lk = std::make_shared<NftLookupSpec>();
    lk->dynset = true;
    lk->update = update;
    lk->set = next().text.substr(1);
    const Tok& open = need("'{' and the key");
    if (open.text != "{") fail(open, "expected '{' after @" + lk->set);
    std::vector<NftType> types;
    if (!selectors(*lk, types)) fail(i_ < t_.size() ? t_[i_] : open, "expected a selector (ip saddr, tcp dport, ...)");
    for (;;) {
      const Tok& w = need("'}' to close the element");
      if (w.text == "}") break;
      if (w.text == "timeout") {
        const Tok& v = need("a timeout (30s, 1h30m)");
        auto t = nft_parse_time(v.text);
        if (!t || *t == 0) fail(v, "invalid timeout (30s, 1h30m, 500ms)");
        lk->timeout_ns = *t;
      } else if (w.text == "counter") {
        lk->elem_counter = true;
      } else {
        fail(w, "unexpected in the element (expected timeout, counter or '}')");
      }
    }
    NftMatch m;
    m.key = lk->keys[0];
    m.nbytes = kNftLookup;
    m.lookup = std::move(lk);
    return m;
  }

  // P := N | filter [(+|-) N]
  int priority() {
    const Tok& t = need("priority value");
    constexpr int64_t kLim = std::numeric_limits<int32_t>::max();
    if (t.text == "filter") {
      if (!at_end() && (peek() == "+" || peek() == "-")) {
        const bool minus = next().text == "-";
        const Tok& n = need("priority offset");
        const int64_t v = static_cast<int64_t>(number(n, 0, kLim, "priority offset"));
        return static_cast<int>(minus ? -v : v);
      }
      return 0;
    }
    std::string_view s = t.text;
    const bool minus = !s.empty() && s[0] == '-';
    if (minus) s.remove_prefix(1);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v > kLim)
      fail(t, "invalid priority (expected an integer or 'filter')");
    return static_cast<int>(minus ? -v : v);
  }

  // Optional comparison operator before a value.
  bool op_neg() {
    if (at_end()) return false;
    if (peek() == "==" || peek() == "eq") { next(); return false; }
    if (peek() == "!=" || peek() == "ne") { next(); return true; }
    if (peek() == "<" || peek() == ">" || peek() == "<=" || peek() == ">=" || peek() == "lt" ||
        peek() == "gt" || peek() == "le" || peek() == "ge")
      fail(peek_tok(), "unsupported operator (only == and !=)");
    return false;
  }

  // meta mark set VALUE | meta mark set SELECTOR [. SELECTOR]* map (@m | { K : MARK, ... })
  // (nft_meta_set_eval; with a map, nft_lookup into a register first: no element breaks
  // the rule).
  NftMatch mark_set() {
    NftMatch m;
    m.key = NftKey::META_MARK;
    auto lk = std::make_shared<NftLookupSpec>();
    std::vector<NftType> types;
    if (selectors(*lk, types)) {
      const Tok& w = need("'map' after the key");
      if (w.text != "map") fail(w, "expected 'map' (meta mark set KEY map @m)");
      set_ref(*lk, types, NftMapData::MARK);
      lk->mark_set = true;
      m.nbytes = kNftLookup;
      m.lookup = std::move(lk);
      return m;
    }
    const Tok& v = need("mark value");
    m.lo = m.hi = static_cast<uint32_t>(number(v, 0, 0xffffffffu, "mark"));
    m.nbytes = kNftSetMark;
    return m;
  }

  NftMatch meta_match() {
    const Tok& k = need("meta key (mark or protocol)");
    NftMatch m;
    if (!at_end() && peek() == "set") {
      if (k.text != "mark") fail(peek_tok(), "unsupported statement (meta ... set: only mark)");
      next();
      return mark_set();
    }
    if (k.text == "mark") {
      m.key = NftKey::META_MARK;
      m.neg = op_neg();
      const Tok& v = need("mark value");
      m.lo = m.hi = static_cast<uint32_t>(number(v, 0, 0xffffffffu, "mark"));
    } else if (k.text == "protocol") {
      m.key = NftKey::META_PROTOCOL;
      m.neg = op_neg();
      const Tok& v = need("protocol");
      uint32_t p;
      if (v.text == "ip") p = 0x0800;
      else if (v.text == "ip6") p = 0x86dd;
      else if (v.text == "arp") p = 0x0806;
      else if (v.text == "vlan" || v.text == "8021q") p = 0x8100;
      else if (v.text == "8021ad") p = 0x88a8;
      else if (!v.text.empty() && std::isdigit(static_cast<unsigned char>(v.text[0])))
        p = static_cast<uint32_t>(number(v, 0, 0xffff, "protocol"));
      else fail(v, "unknown protocol (expected ip, ip6, arp, vlan, 8021ad or a number)");
      m.lo = m.hi = p;
    } else if (k.text == "l4proto") {
      m.key = NftKey::META_L4PROTO;
      m.neg = op_neg();
      m.lo = m.hi = named(need("l4proto"), kIpProtocols, 255, "l4proto");
    } else {
      fail(k, "unsupported meta key (only mark, protocol and l4proto)");
    }
    return m;
  }

  // A value by its nft name or as a number up to max.
  template <size_t N>
  uint32_t named(const Tok& v, const NftName (&names)[N], uint32_t max, const std::string& what) {
    if (auto x = nft_value_of(names, v.text)) return *x;
    if (v.text.empty() || !std::isdigit(static_cast<unsigned char>(v.text[0])))
      fail(v, "unknown " + what + " \"" + v.text + "\"");
    return static_cast<uint32_t>(number(v, 0, max, what));
  }

  // N or N-M (nft's range) up to max, into m.lo/m.hi.
  void range(NftMatch& m, const Tok& v, uint32_t max, const std::string& what) {
    const std::string& s = v.text;
    const auto dash = s.find('-', 1);
    if (dash == std::string::npos) {
      m.lo = m.hi = static_cast<uint32_t>(number(v, 0, max, what));
      return;
    }
    // Errors in either bound name the whole "a-b" word.
    auto bound = [&](std::string part) {
      try {
        return static_cast<uint32_t>(number(Tok{std::move(part), v.index}, 0, max, what));
      } catch (ParseFail& f) {
        f.err.word = v.text;
        throw;
      }
    };
    m.lo = bound(s.substr(0, dash));
    m.hi = bound(s.substr(dash + 1));
    if (m.lo > m.hi) fail(v, "invalid " + what + " range (first > last)");
  }

  NftMatch ether_match() {
    const Tok& k = need("ether field (saddr, daddr or type)");
    NftMatch m;
    if (k.text == "saddr" || k.text == "daddr") {
      m.key = k.text == "saddr" ? NftKey::ETHER_SADDR : NftKey::ETHER_DADDR;
      m.neg = op_neg();
      const Tok& v = need("Ethernet address");
      if (!nft_parse_mac(v.text, m.bytes.data())) fail(v, "invalid Ethernet address (expected six hex bytes, 02:00:00:00:00:01)");
      m.nbytes = 6;
      m.prefix = 48;
      std::fill_n(m.bytes_mask.begin(), 6, uint8_t{0xff});
      return m;
    }
    if (k.text != "type") fail(k, "unsupported ether field (only saddr, daddr and type)");
    m.key = NftKey::ETHER_TYPE;
    m.neg = op_neg();
    m.lo = m.hi = named(need("ether type"), kEtherTypes, 0xffff, "ether type");
    return m;
  }

  // The /LEN of an address word (max without one), taken off `addr`.
  unsigned prefix_length(const Tok& v, std::string_view& addr, unsigned max) {
    const auto slash = addr.find('/');
    if (slash == std::string_view::npos) return max;
    const std::string_view l = addr.substr(slash + 1);
    unsigned len = 0;
    auto [p, ec] = std::from_chars(l.data(), l.data() + l.size(), len);
    if (l.empty() || ec != std::errc() || p != l.data() + l.size() || len > max)
      fail(v, "invalid prefix length (0.." + std::to_string(max) + ")");
    addr = addr.substr(0, slash);
    return len;
  }

  NftMatch ip6_match() {
    const Tok& k = need("ip6 field (saddr, daddr or nexthdr)");
    NftMatch m;
    if (k.text == "nexthdr") {
      m.key = NftKey::IP6_NEXTHDR;
      m.neg = op_neg();
      m.lo = m.hi = named(need("ip6 nexthdr"), kIpProtocols, 255, "nexthdr");
      return m;
    }
    if (k.text == "saddr") m.key = NftKey::IP6_SADDR;
    else if (k.text == "daddr") m.key = NftKey::IP6_DADDR;
    else fail(k, "unsupported ip6 field (only saddr, daddr and nexthdr)");
    m.neg = op_neg();
    const Tok& v = need("IPv6 address");
    std::string_view addr = v.text;
    const unsigned len = prefix_length(v, addr, 128);
    if (inet_pton(AF_INET6, std::string(addr).c_str(), m.bytes.data()) != 1) fail(v, "invalid IPv6 address");
    m.nbytes = 16;
    m.prefix = static_cast<uint8_t>(len);
    for (unsigned i = 0; i < 16; ++i) {
      const unsigned bits = len > i * 8 ? std::min(8u, len - i * 8) : 0;
      m.bytes_mask[i] = static_cast<uint8_t>(bits ? 0xff << (8 - bits) : 0);
      m.bytes[i] &= m.bytes_mask[i];
    }
    return m;
  }

  NftMatch ip_match() {
    const Tok& k = need("ip field (saddr, daddr, protocol, length or dscp)");
    NftMatch m;
    if (k.text == "protocol" || k.text == "length" || k.text == "dscp") {
      m.neg = op_neg();
      const Tok& v = need("ip " + k.text);
      if (k.text == "protocol") {
        m.key = NftKey::IP_PROTOCOL;
        m.lo = m.hi = named(v, kIpProtocols, 255, "protocol");
      } else if (k.text == "length") {
        m.key = NftKey::IP_LENGTH;
        range(m, v, 65535, "length");
      } else {
        m.key = NftKey::IP_DSCP;
        m.lo = m.hi = named(v, kDscpClasses, 63, "dscp");
      }
      return m;
    }
    if (k.text == "saddr") m.key = NftKey::IP_SADDR;
    else if (k.text == "daddr") m.key = NftKey::IP_DADDR;
    else fail(k, "unsupported ip field (only saddr, daddr, protocol, length and dscp)");
    m.neg = op_neg();
    const Tok& v = need("IPv4 address");
    std::string_view s = v.text;
    const unsigned len = prefix_length(v, s, 32);
    auto a = nft_parse_ipv4(s);
    if (!a) fail(v, "invalid IPv4 address");
    m.prefix = static_cast<uint8_t>(len);
    m.mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
    m.lo = m.hi = *a & m.mask;
    return m;
  }

  NftMatch port_match(bool tcp) {
    const Tok& k = need("port field (sport or dport)");
    NftMatch m;
    if (k.text == "sport") m.key = tcp ? NftKey::TCP_SPORT : NftKey::UDP_SPORT;
    else if (k.text == "dport") m.key = tcp ? NftKey::TCP_DPORT : NftKey::UDP_DPORT;
    else fail(k, std::string("unsupported ") + (tcp ? "tcp" : "udp") + " field (only sport and dport)");
    m.neg = op_neg();
    const Tok& v = need("port");
    range(m, v, 65535, "port");
    return m;
  }

  NftRuleSpec rule() {
    NftRuleSpec r;
    bool verdict = false;
    if (at_end()) fail_missing("rule statements");
    while (!at_end()) {
      const Tok& w = next();
      if (verdict) fail(w, "statement after the terminal verdict has no effect");
      --i_;
      if (auto lm = lookup_match()) {
        if (lm->lookup->vmap) {
          r.verdict = NftRuleVerdict::VMAP;
          verdict = true;
        }
        r.matches.push_back(std::move(*lm));
        continue;
      }
      ++i_;
      if ((w.text == "add" || w.text == "update") && !at_end() && peek().size() > 1 && peek()[0] == '@') {
        r.matches.push_back(dynset(w.text == "update"));
      } else if (w.text == "jump" || w.text == "goto") {
        r.verdict = w.text == "jump" ? NftRuleVerdict::JUMP : NftRuleVerdict::GOTO;
        r.target = name("chain name after " + w.text);
        verdict = true;
      } else if (w.text == "return") {
        r.verdict = NftRuleVerdict::RETURN;
        verdict = true;
      } else if (w.text == "meta") {
        r.matches.push_back(meta_match());
      } else if (w.text == "ip") {
        r.matches.push_back(ip_match());
      } else if (w.text == "tcp" || w.text == "udp") {
        r.matches.push_back(port_match(w.text == "tcp"));
      } else if (w.text == "counter") {
        if (r.counter_at >= 0) fail(w, "unsupported: more than one counter in a rule");
        r.counter_at = static_cast<int>(r.matches.size());
        if (!at_end() && peek() == "packets") {
          next();
          r.counter_packets = number(need("packet count"), 0, std::numeric_limits<uint64_t>::max(), "packet count");
          const Tok& b = need("'bytes'");
          if (b.text != "bytes") fail(b, "expected 'bytes'");
          r.counter_bytes = number(need("byte count"), 0, std::numeric_limits<uint64_t>::max(), "byte count");
        }
      } else if (w.text == "accept") {
        r.verdict = NftRuleVerdict::ACCEPT;
        verdict = true;
      } else if (w.text == "drop") {
        r.verdict = NftRuleVerdict::DROP;
        verdict = true;
      } else if (w.text == "continue") {
        verdict = true;
      } else if (w.text == "ether") {
        r.matches.push_back(ether_match());
      } else if (w.text == "ip6") {
        r.matches.push_back(ip6_match());
      } else if (w.text == "vlan" || w.text == "arp" ||
                 w.text == "sctp" || w.text == "icmp" || w.text == "th" || w.text == "ct" ||
                 w.text == "iif" || w.text == "oif" || w.text == "iifname" || w.text == "oifname") {
        fail(w, "unsupported match");
      } else if (w.text == "queue" ||
                 w.text == "reject" || w.text == "log" || w.text == "limit" || w.text == "mark" ||
                 w.text == "fwd" || w.text == "dup" || w.text == "notrack" || w.text == "quota") {
        fail(w, "unsupported statement");
      } else {
        fail(w, "unsupported match or statement");
      }
    }
    return r;
  }

  std::vector<Tok> t_;
  std::vector<NftRawElem> elems_raw_;  // a set description's elements until its types are known
  size_t nwords_;
  size_t i_ = 0;
};

}  // namespace

std::string nft_error_text(const Error& e) {
  if (e.word.empty()) return "word " + std::to_string(e.index) + ": " + e.msg;
  return "word " + std::to_string(e.index) + " '" + e.word + "': " + e.msg;
}

Result<NftCommand> nft_parse(const std::vector<std::string>& words) {
  const size_t first = !words.empty() && words[0] == "nft" ? 1 : 0;
  try {
    return Parser(tokenize(words, first), words.size()).parse();
  } catch (ParseFail& f) {
    return unexpected(std::move(f.err));
  }
}

}  // namespace pktpath::nf
