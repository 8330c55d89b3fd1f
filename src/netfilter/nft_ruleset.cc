// nftables objects (write side), the base-chain hook (read side) and the listings.
#include "netfilter/nft_ruleset.h"
#include "netfilter/nft_names.h"
#include "netfilter/nft_value.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <unordered_map>

#include "core/netdevice.h"
#include "core/rcu.h"
#include "base/json_text.h"

namespace pktpath::nf {

namespace {

std::string ipv4_str(uint32_t a) {
  char b[16];
  std::snprintf(b, sizeof b, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
  return b;
}

const char* proto_name(uint32_t p) { return nft_name_of(kEtherTypes, p); }

// A byte key's address as nft prints it: lowercase aa:bb:..., or IPv6 in inet_ntop's
// compressed form.
std::string bytes_str(const NftMatch& m) {
  if (m.nbytes == 16) {
    char b[INET6_ADDRSTRLEN];
    return inet_ntop(AF_INET6, m.bytes.data(), b, sizeof b) ? b : "?";
  }
  char b[18];
  std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m.bytes[0], m.bytes[1], m.bytes[2], m.bytes[3],
                m.bytes[4], m.bytes[5]);
  return b;
}

std::string priority_str(int prio) {
  if (prio == 0) return "filter";
  if (prio > 0) return "filter + " + std::to_string(prio);
  return "filter - " + std::to_string(-static_cast<int64_t>(prio));
}

const char* l4_name(NftKey k) {
  return (k == NftKey::TCP_SPORT || k == NftKey::TCP_DPORT) ? "tcp" : "udp";
}
const char* field_name(NftKey k) {
  switch (k) {
    case NftKey::META_MARK: return "mark";
    case NftKey::META_PROTOCOL: return "protocol";
    case NftKey::IP_SADDR: return "saddr";
    case NftKey::IP_DADDR: return "daddr";
    case NftKey::TCP_SPORT: case NftKey::UDP_SPORT: return "sport";
    case NftKey::TCP_DPORT: case NftKey::UDP_DPORT: return "dport";
    case NftKey::META_L4PROTO: return "l4proto";
    case NftKey::IP_PROTOCOL: return "protocol";
    case NftKey::IP_LENGTH: return "length";
    case NftKey::IP_DSCP: return "dscp";
    case NftKey::ETHER_TYPE: return "type";
    case NftKey::IP6_NEXTHDR: return "nexthdr";
    case NftKey::ETHER_SADDR: case NftKey::IP6_SADDR: return "saddr";
    case NftKey::ETHER_DADDR: case NftKey::IP6_DADDR: return "daddr";
  }
  return "?";
}

// The right-hand side of a match as nft prints it: the value's name where it has one,
// else the number (hexadecimal for an ethertype or a DSCP value, as nft), and a range
// as N-M.
std::string value_str(const NftMatch& m) {
  const char* n = nullptr;
  char b[32];
  switch (m.key) {
    case NftKey::META_L4PROTO:
    case NftKey::IP6_NEXTHDR:
    case NftKey::IP_PROTOCOL: n = nft_name_of(kIpProtocols, m.lo); break;
    case NftKey::IP_DSCP:
      n = nft_name_of(kDscpClasses, m.lo);
      std::snprintf(b, sizeof b, "0x%02x", m.lo);
      return n ? n : b;
    case NftKey::ETHER_TYPE:
      n = proto_name(m.lo);
      std::snprintf(b, sizeof b, "0x%04x", m.lo);
      return n ? n : b;
    default: break;
  }
  if (n) return n;
  return m.hi != m.lo ? std::to_string(m.lo) + "-" + std::to_string(m.hi) : std::to_string(m.lo);
}
nlohmann::json value_json(const NftMatch& m) {
  const char* n = nullptr;
  switch (m.key) {
    case NftKey::META_L4PROTO:
    case NftKey::IP6_NEXTHDR:
    case NftKey::IP_PROTOCOL: n = nft_name_of(kIpProtocols, m.lo); break;
    case NftKey::IP_DSCP: n = nft_name_of(kDscpClasses, m.lo); break;
    case NftKey::ETHER_TYPE: n = proto_name(m.lo); break;
    default: break;
  }
  if (n) return n;
  if (m.hi != m.lo) return {{"range", {m.lo, m.hi}}};
  return m.lo;
}

std::string match_str(const NftMatch& m) {
  std::string s;
  const char* op = m.neg ? " != " : " ";
  switch (m.key) {
    case NftKey::META_MARK: {
      char b[16];
      std::snprintf(b, sizeof b, "0x%08x", m.lo);
      if (m.nbytes == kNftSetMark) return std::string("meta mark set ") + b;
      return std::string("meta mark") + op + b;
    }
    case NftKey::META_PROTOCOL: {
      const char* n = proto_name(m.lo);
      char b[16];
      std::snprintf(b, sizeof b, "0x%04x", m.lo);
      return std::string("meta protocol") + op + (n ? n : b);
    }
    case NftKey::IP_SADDR:
    case NftKey::IP_DADDR:
      s = std::string("ip ") + field_name(m.key) + op + ipv4_str(m.lo);
      if (m.prefix != 32) s += "/" + std::to_string(m.prefix);
      return s;
    case NftKey::META_L4PROTO: return std::string("meta l4proto") + op + value_str(m);
    case NftKey::IP_PROTOCOL:
    case NftKey::IP_LENGTH:
    case NftKey::IP_DSCP: return std::string("ip ") + field_name(m.key) + op + value_str(m);
    case NftKey::ETHER_TYPE: return std::string("ether type") + op + value_str(m);
    case NftKey::IP6_NEXTHDR: return std::string("ip6 nexthdr") + op + value_str(m);
    case NftKey::ETHER_SADDR:
    case NftKey::ETHER_DADDR: return std::string("ether ") + field_name(m.key) + op + bytes_str(m);
    case NftKey::IP6_SADDR:
    case NftKey::IP6_DADDR:
      s = std::string("ip6 ") + field_name(m.key) + op + bytes_str(m);
      if (m.prefix != 128) s += "/" + std::to_string(m.prefix);
      return s;
    default:
      s = std::string(l4_name(m.key)) + " " + field_name(m.key) + op + std::to_string(m.lo);
      if (m.hi != m.lo) s += "-" + std::to_string(m.hi);
      return s;
  }
}

// What a selector is called in a rule: "ip daddr", "tcp dport", "meta l4proto".
std::string selector_str(NftKey k) {
  switch (k) {
    case NftKey::META_MARK: case NftKey::META_PROTOCOL: case NftKey::META_L4PROTO:
      return std::string("meta ") + field_name(k);
    case NftKey::IP_SADDR: case NftKey::IP_DADDR: case NftKey::IP_PROTOCOL: case NftKey::IP_LENGTH:
    case NftKey::IP_DSCP:
      return std::string("ip ") + field_name(k);
    case NftKey::ETHER_TYPE: case NftKey::ETHER_SADDR: case NftKey::ETHER_DADDR:
      return std::string("ether ") + field_name(k);
    case NftKey::IP6_NEXTHDR: case NftKey::IP6_SADDR: case NftKey::IP6_DADDR:
      return std::string("ip6 ") + field_name(k);
    default: return std::string(l4_name(k)) + " " + field_name(k);
  }
}

nlohmann::json selector_json(NftKey k) {
  switch (k) {
    case NftKey::META_MARK: case NftKey::META_PROTOCOL: case NftKey::META_L4PROTO:
      return {{"meta", {{"key", field_name(k)}}}};
    case NftKey::IP_SADDR: case NftKey::IP_DADDR: case NftKey::IP_PROTOCOL: case NftKey::IP_LENGTH:
    case NftKey::IP_DSCP:
      return {{"payload", {{"protocol", "ip"}, {"field", field_name(k)}}}};
    case NftKey::ETHER_TYPE: case NftKey::ETHER_SADDR: case NftKey::ETHER_DADDR:
      return {{"payload", {{"protocol", "ether"}, {"field", field_name(k)}}}};
    case NftKey::IP6_NEXTHDR: case NftKey::IP6_SADDR: case NftKey::IP6_DADDR:
      return {{"payload", {{"protocol", "ip6"}, {"field", field_name(k)}}}};
    default: return {{"payload", {{"protocol", l4_name(k)}, {"field", field_name(k)}}}};
  }
}

std::string chain_name(const NftChain* c) { return c ? c->name : std::string(); }

// `{ a, b, c }` as nft prints an anonymous set or a set's elements on one line.
std::string elems_inline(const NftSet& set, uint64_t now) {
  std::string s = "{ ";
  bool first = true;
  for (const NftElem& e : set.elements(now)) {
    if (!first) s += ", ";
    first = false;
    s += nft_elem_str(set.spec().types, nft_map_data(set.spec()), e, now);
  }
  return s + " }";
}

// A named set's elements as nft lists them (set_expr_print's calculate_delim): 2 IPv4
// addresses or 5 numbers (ports, protocols, marks) per line, one per line for every
// other type and for concatenations; continuation lines start with 3 tabs and 5 spaces.
std::string elems_wrapped(const NftSet& set, uint64_t now) {
  const std::vector<NftType>& ty = set.spec().types;
  size_t per_line = 1;
  if (ty.size() == 1 && ty[0] == NftType::IPV4_ADDR) per_line = 2;
  if (ty.size() == 1 && (ty[0] == NftType::INET_SERVICE || ty[0] == NftType::INET_PROTO || ty[0] == NftType::MARK))
    per_line = 5;
  std::string s = "{ ";
  size_t n = 0;
  for (const NftElem& e : set.elements(now)) {
    if (n) s += n % per_line == 0 ? ",\n\t\t\t     " : ", ";
    s += nft_elem_str(ty, nft_map_data(set.spec()), e, now);
    ++n;
  }
  return s + " }";
}

// A set lookup as nft lists it: "ip saddr . tcp dport @s", "tcp dport { 22, 80 }",
// "ip daddr vmap @m".
std::string lookup_str(const NftMatch& m, uint64_t now) {
  std::string s;
  if (m.lookup->dynset) {  // add @s { ip saddr timeout 1m counter }
    s = std::string(m.lookup->update ? "update" : "add") + " @" + m.set->name() + " { ";
    for (size_t i = 0; i < m.lookup->keys.size(); ++i) s += (i ? " . " : "") + selector_str(m.lookup->keys[i]);
    if (m.lookup->timeout_ns) s += " timeout " + nft_time_str(m.lookup->timeout_ns);
    if (m.lookup->elem_counter) s += " counter";
    return s + " }";
  }
  if (m.lookup->mark_set) s = "meta mark set ";
  for (size_t i = 0; i < m.lookup->keys.size(); ++i) s += (i ? " . " : "") + selector_str(m.lookup->keys[i]);
  if (m.lookup->vmap) s += " vmap";
  else if (m.lookup->mark_set) s += " map";
  else if (m.neg) s += " !=";
  s += " ";
  s += m.set->anonymous() ? elems_inline(*m.set, now) : "@" + m.set->name();
  return s;
}

nlohmann::json verdict_json(const NftVerdictData& v) {
  switch (v.code) {
    case NftRuleVerdict::JUMP: return {{"jump", {{"target", chain_name(v.chain)}}}};
    case NftRuleVerdict::GOTO: return {{"goto", {{"target", chain_name(v.chain)}}}};
    default: return {{nft_verdict_str(v.code, ""), nullptr}};
  }
}

// A key (one value or a concatenation) as nft -j writes it.
nlohmann::json key_json(const std::vector<NftType>& types, const NftElem& e) {
  using nlohmann::json;
  json parts = json::array();
  unsigned off = 0;
  for (NftType t : types) {
    std::vector<NftType> single{t};
    std::string v = nft_key_str(single, e.lo.data() + off);
    json j = v;
    if (t == NftType::INET_SERVICE || (t == NftType::INET_PROTO && !std::isalpha(static_cast<unsigned char>(v[0]))))
      j = std::stoul(v);
    parts.push_back(j);
    off += nft_type_stride(t);
  }
  if (types.size() > 1) return {{"concat", parts}};
  if (e.range) {
    const std::string txt = nft_elem_str(types, NftMapData::NONE, e);
    const auto slash = txt.find('/');
    if (slash != std::string::npos)
      return {{"prefix", {{"addr", txt.substr(0, slash)}, {"len", std::stoi(txt.substr(slash + 1))}}}};
    if (std::memcmp(e.lo.data(), e.hi.data(), kNftMaxKeyLen) != 0) {
      const auto dash = txt.find('-', 1);
      json lo = txt.substr(0, dash), hi = txt.substr(dash + 1);
      if (types[0] == NftType::INET_SERVICE) { lo = std::stoul(txt.substr(0, dash)); hi = std::stoul(txt.substr(dash + 1)); }
      return {{"range", {lo, hi}}};
    }
  }
  return parts[0];
}

nlohmann::json elems_json(const NftSet& set, uint64_t now) {
  nlohmann::json out = nlohmann::json::array();
  for (const NftElem& e : set.elements(now)) {
    nlohmann::json k = key_json(set.spec().types, e);
    if (e.timeout_ns || e.expires || e.counter) {
      nlohmann::json el = {{"val", k}};
      if (e.timeout_ns) el["timeout"] = e.timeout_ns / 1000000000ull;
      if (e.expires) el["expires"] = (e.expires > now ? e.expires - now : 0) / 1000000000ull;
      if (e.counter) el["counter"] = {{"packets", e.packets}, {"bytes", e.bytes}};
      k = {{"elem", el}};
    }
    if (set.spec().mark_data) out.push_back(nlohmann::json::array({k, e.data.value}));
    else if (set.spec().map) out.push_back(nlohmann::json::array({k, verdict_json(e.data)}));
    else out.push_back(k);
  }
  return out;
}

nlohmann::json lookup_json(const NftMatch& m, uint64_t now) {
  using nlohmann::json;
  json left;
  if (m.lookup->keys.size() == 1) {
    left = selector_json(m.lookup->keys[0]);
  } else {
    json parts = json::array();
    for (NftKey k : m.lookup->keys) parts.push_back(selector_json(k));
    left = {{"concat", parts}};
  }
  if (m.lookup->dynset) {
    // mirrors nft's set_stmt_json: a timeout is part of the element, its statements
    // (the counter) a list beside it.
    json elem = left;
    if (m.lookup->timeout_ns) elem = {{"elem", {{"val", left}, {"timeout", m.lookup->timeout_ns / 1000000000ull}}}};
    json st = {{"op", m.lookup->update ? "update" : "add"}, {"elem", elem}, {"set", "@" + m.set->name()}};
    if (m.lookup->elem_counter) st["stmt"] = json::array({json{{"counter", nullptr}}});
    return {{"set", st}};
  }
  json right = m.set->anonymous() ? json{{"set", elems_json(*m.set, now)}} : json("@" + m.set->name());
  if (m.lookup->vmap) return {{"vmap", {{"key", left}, {"data", right}}}};
  if (m.lookup->mark_set)
    return {{"mangle", {{"key", {{"meta", {{"key", "mark"}}}}}, {"value", {{"map", {{"key", left}, {"data", right}}}}}}}};
  return {{"match", {{"op", m.neg ? "!=" : "=="}, {"left", left}, {"right", right}}}};
}

std::string types_str(const std::vector<NftType>& types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) s += (i ? " . " : "") + std::string(nft_type_info(types[i]).name);
  return s;
}

// The set block of `list ruleset` / `list set`.
std::string set_block(const NftSet& set, bool handles, uint64_t now) {
  const NftSetSpec& sp = set.spec();
  std::string o = std::string("\t") + (sp.map ? "map " : "set ") + set.name() + " {" +
                  (handles ? " # handle " + std::to_string(set.handle) : std::string()) + "\n";
  if (sp.typeof_keys.empty()) {
    o += "\t\ttype " + types_str(sp.types) + (sp.mark_data ? " : mark" : sp.map ? " : verdict" : "") + "\n";
  } else {
    o += "\t\ttypeof ";
    for (size_t i = 0; i < sp.typeof_keys.size(); ++i) o += (i ? " . " : "") + selector_str(sp.typeof_keys[i]);
    o += std::string(sp.typeof_data ? " : meta mark" : sp.mark_data ? " : mark" : sp.map ? " : verdict" : "") + "\n";
  }
  // nft prints the flags when one besides timeout is set, or timeout without a default.
  std::string flags;
  if (sp.constant) flags += "constant";
  if (sp.dynamic) flags += std::string(flags.empty() ? "" : ",") + "dynamic";
  if (sp.interval) flags += std::string(flags.empty() ? "" : ",") + "interval";
  const bool show_flags = !flags.empty() || (sp.timeouts && !sp.timeout_ns);
  if (sp.timeouts) flags += std::string(flags.empty() ? "" : ",") + "timeout";
  if (sp.size) o += "\t\tsize " + std::to_string(sp.size) + "\n";
  if (show_flags) o += "\t\tflags " + flags + "\n";
  if (sp.timeout_ns) o += "\t\ttimeout " + nft_time_str(sp.timeout_ns) + "\n";
  if (sp.counter) o += "\t\tcounter\n";
  if (!set.elements(now).empty()) o += "\t\telements = " + elems_wrapped(set, now) + "\n";
  return o + "\t}\n";
}

nlohmann::json set_json(const NftTable& t, const NftSet& set, uint64_t now) {
  using nlohmann::json;
  const NftSetSpec& sp = set.spec();
  json j = {{"family", "netdev"}, {"name", set.name()}, {"table", t.name}};
  if (sp.types.size() == 1) j["type"] = nft_type_info(sp.types[0]).name;
  else {
    json ty = json::array();
    for (NftType x : sp.types) ty.push_back(nft_type_info(x).name);
    j["type"] = ty;
  }
  j["handle"] = set.handle;
  if (sp.map) j["map"] = sp.mark_data ? "mark" : "verdict";
  json flags = json::array();
  if (sp.constant) flags.push_back("constant");
  if (sp.interval) flags.push_back("interval");
  if (sp.timeouts) flags.push_back("timeout");
  if (!flags.empty()) j["flags"] = flags;
  if (sp.size) j["size"] = sp.size;
  if (sp.timeout_ns) j["timeout"] = sp.timeout_ns / 1000000000ull;
  if (!set.elements(now).empty()) j["elem"] = elems_json(set, now);
  if (sp.counter) j["stmt"] = json::array({json{{"counter", nullptr}}});
  return {{sp.map ? "map" : "set", j}};
}

std::string rule_str(const NftRule& r, uint64_t now) {
  std::string s;
  auto add = [&](const std::string& w) {
    if (!s.empty()) s += ' ';
    s += w;
  };
  const int n = static_cast<int>(r.spec.matches.size());
  for (int i = 0; i <= n; ++i) {
    if (i == r.spec.counter_at)
      add("counter packets " + std::to_string(r.counter->packets()) + " bytes " +
          std::to_string(r.counter->bytes()));
    if (i < n) add(r.spec.matches[i].set ? lookup_str(r.spec.matches[i], now) : match_str(r.spec.matches[i]));
  }
  if (r.verdict.code != NftRuleVerdict::CONTINUE && r.verdict.code != NftRuleVerdict::VMAP)
    add(nft_verdict_str(r.verdict.code, chain_name(r.verdict.chain)));
  return s;
}

nlohmann::json match_json(const NftMatch& m) {
  using nlohmann::json;
  json left, right;
  switch (m.key) {
    case NftKey::META_MARK:
      left = {{"meta", {{"key", "mark"}}}};
      right = m.lo;
      if (m.nbytes == kNftSetMark) return {{"mangle", {{"key", left}, {"value", right}}}};
      break;
    case NftKey::META_PROTOCOL:
      left = {{"meta", {{"key", "protocol"}}}};
      if (const char* n = proto_name(m.lo)) right = n; else right = m.lo;
      break;
    case NftKey::IP_SADDR:
    case NftKey::IP_DADDR:
      left = {{"payload", {{"protocol", "ip"}, {"field", field_name(m.key)}}}};
      if (m.prefix == 32) right = ipv4_str(m.lo);
      else right = {{"prefix", {{"addr", ipv4_str(m.lo)}, {"len", m.prefix}}}};
      break;
    case NftKey::META_L4PROTO:
      left = {{"meta", {{"key", "l4proto"}}}};
      right = value_json(m);
      break;
    case NftKey::IP_PROTOCOL:
    case NftKey::IP_LENGTH:
    case NftKey::IP_DSCP:
      left = {{"payload", {{"protocol", "ip"}, {"field", field_name(m.key)}}}};
      right = value_json(m);
      break;
    case NftKey::ETHER_TYPE:
      left = {{"payload", {{"protocol", "ether"}, {"field", "type"}}}};
      right = value_json(m);
      break;
    case NftKey::IP6_NEXTHDR:
      left = {{"payload", {{"protocol", "ip6"}, {"field", "nexthdr"}}}};
      right = value_json(m);
      break;
    case NftKey::ETHER_SADDR:
    case NftKey::ETHER_DADDR:
      left = {{"payload", {{"protocol", "ether"}, {"field", field_name(m.key)}}}};
      right = bytes_str(m);
      break;
    case NftKey::IP6_SADDR:
    case NftKey::IP6_DADDR:
      left = {{"payload", {{"protocol", "ip6"}, {"field", field_name(m.key)}}}};
      if (m.prefix == 128) right = bytes_str(m);
      else right = {{"prefix", {{"addr", bytes_str(m)}, {"len", m.prefix}}}};
      break;
    default:
      left = {{"payload", {{"protocol", l4_name(m.key)}, {"field", field_name(m.key)}}}};
      if (m.hi == m.lo) right = m.lo; else right = {{"range", {m.lo, m.hi}}};
      break;
  }
  return {{"match", {{"op", m.neg ? "!=" : "=="}, {"left", left}, {"right", right}}}};
}

}  // namespace

static NftChain* find_chain(NftTable& t, const std::string& name);
static void unhook_chain(NftChain& c);

struct NftRuleset::Undo {
  virtual ~Undo() = default;
  virtual void run() = 0;
};

void NftRuleset::on_abort(std::unique_ptr<Undo> step) {
  if (in_batch_) undo_.push_back(std::move(step));
}

// Outside a batch the step (and whatever it keeps) goes at once.
template <typename F>
void NftRuleset::on_abort_fn(F&& f) {
  struct Step final : Undo {
    explicit Step(F&& g) : fn(std::move(g)) {}
    void run() override { fn(); }
    std::decay_t<F> fn;
  };
  if (in_batch_) on_abort(std::make_unique<Step>(std::forward<F>(f)));
}

template <typename T>
static void erase_ptr(std::vector<std::unique_ptr<T>>& v, const T* p) {
  v.erase(std::find_if(v.begin(), v.end(), [p](const auto& x) { return x.get() == p; }));
}

NftRuleset::NftRuleset() = default;

NftRuleset::~NftRuleset() {
  events_.reset();
  flush();
}

NftTable* NftRuleset::find_table(const std::string& name) {
  for (auto& t : tables_)
    if (t->name == name) return t.get();
  return nullptr;
}

Status NftRuleset::add_table(const std::string& table) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  if (find_table(table)) return {};  // `add` of an existing table is not an error in nft
  auto t = std::make_unique<NftTable>();
  t->name = table;
  t->handle = next_table_handle_++;
  on_abort_fn([this, p = t.get()] { erase_ptr(tables_, p); });
  tables_.push_back(std::move(t));
  return {};
}

const NftTable* NftRuleset::find_table(const std::string& name) const {
  for (auto& t : tables_)
    if (t->name == name) return t.get();
  return nullptr;
}

static NftSet* find_set(NftTable& t, const std::string& name) {
  for (auto& s : t.sets)
    if (s->name() == name) return s.get();
  return nullptr;
}

// The chains a packet in c may continue in: its rules' jump/goto targets and the chains
// the elements of the verdict maps it looks up name.
static void successors(const NftChain& c, std::vector<const NftChain*>& out) {
  for (const auto& r : c.rules) {
    if (r->verdict.chain) out.push_back(r->verdict.chain);
    for (const NftMatch& m : r->spec.matches)
      if (m.set && m.lookup->vmap)
        for (const NftElem& e : m.set->elements())
          if (e.data.chain) out.push_back(e.data.chain);
  }
}

// mirrors nf_tables_check_loops / nft_chain_validate: a jump from `from` to `to` must
// not lead back to `from`, nor nest deeper than the jump stack.
static Status check_jump(const NftChain& from, const NftChain* to) {
  std::vector<std::pair<const NftChain*, unsigned>> work{{to, 1}};
  std::vector<const NftChain*> next;
  // A chain is walked again only when reached deeper than before: at most 16 times, so
  // rules that jump to the same chains many times over cost no more than a path each.
  std::unordered_map<const NftChain*, unsigned> deepest;
  while (!work.empty()) {
    auto [c, depth] = work.back();
    work.pop_back();
    unsigned& seen = deepest[c];
    if (seen >= depth) continue;
    seen = depth;
    if (c == &from)
      return unexpected("jump to chain '" + to->name + "' would make a loop back to '" + from.name +
                             "' (Too many levels of symbolic links)");
    if (depth >= kNftJumpStack)
      return unexpected("jump to chain '" + to->name + "' nests deeper than " +
                             std::to_string(kNftJumpStack) + " chains (Too many links)");
    next.clear();
    successors(*c, next);
    for (const NftChain* n : next) work.push_back({n, depth + 1});
  }
  return {};
}

Status NftRuleset::resolve_data(NftTable& t, const NftSet& set, const std::vector<NftElemSpec>& elems,
                                   std::vector<NftVerdictData>& data) {
  data.assign(elems.size(), NftVerdictData{});
  if (!set.spec().map) return {};
  if (set.spec().mark_data) {
    for (size_t i = 0; i < elems.size(); ++i) data[i].value = elems[i].value;
    return {};
  }
  for (size_t i = 0; i < elems.size(); ++i) {
    data[i].code = elems[i].verdict;
    if (elems[i].verdict != NftRuleVerdict::JUMP && elems[i].verdict != NftRuleVerdict::GOTO) continue;
    NftChain* c = find_chain(t, elems[i].target);
    if (!c) return unexpected("chain '" + elems[i].target + "' does not exist in table '" + t.name + "'");
    if (c->spec.base) return unexpected("cannot jump to base chain '" + c->name + "' (Operation not supported)");
    data[i].chain = c;
  }
  return {};
}

static std::string selector_types_str(const std::vector<NftKey>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto t = nft_key_type(keys[i]);
    s += (i ? " . " : "") + std::string(t ? nft_type_info(*t).name : "?");
  }
  return s;
}

Status NftRuleset::build_rule(NftTable& t, const NftChain& c, const NftRuleSpec& spec,
                                 std::unique_ptr<NftRule>& out) {
  auto r = std::make_unique<NftRule>();
  r->spec = spec;
  std::vector<const NftChain*> targets;
  for (NftMatch& m : r->spec.matches) {
    if (m.nbytes != kNftLookup) continue;
    const NftLookupSpec& lk = *m.lookup;
    std::vector<NftType> types;
    for (NftKey k : lk.keys) types.push_back(*nft_key_type(k));
    if (lk.anon) {
      auto set = std::make_unique<NftSet>("__set" + std::to_string(t.next_anon++), *lk.anon, true);
      set->handle = t.next_handle++;  // the kernel's anonymous set takes a handle before its rule
      std::vector<NftVerdictData> data;
      if (Status st = resolve_data(t, *set, lk.anon->elements, data); !st) return st;
      if (Status st = set->add(lk.anon->elements, data, true, now()); !st) return st;
      for (const NftVerdictData& d : data)
        if (d.chain) targets.push_back(d.chain);
      m.set = set.get();
      r->anon_sets.push_back(std::move(set));
      continue;
    }
    NftSet* set = find_set(t, lk.set);
    if (!set) return unexpected("set '" + lk.set + "' does not exist in table '" + t.name + "' (No such file or directory)");
    if (set->spec().types != types)
      return unexpected("set '" + lk.set + "' has type " + types_str(set->spec().types) + ", the selector gives " +
                             selector_types_str(lk.keys) + " (datatype mismatch)");
    if (lk.dynset) {
      if (Status st = set->bind_dynamic({lk.update, lk.timeout_ns, lk.elem_counter}); !st) return st;
      m.set = set;
      continue;
    }
    if (lk.mark_set && !set->spec().mark_data)
      return unexpected("'" + lk.set + "' is not a map of marks (datatype mismatch)");
    if (!lk.mark_set && (lk.vmap != set->spec().map || set->spec().mark_data))
      return unexpected(lk.vmap ? "'" + lk.set + "' is not a verdict map"
                                : "'" + lk.set + "' is a map: use vmap @" + lk.set + " or meta mark set KEY map @" + lk.set);
    m.set = set;
    if (lk.vmap)
      for (const NftElem& e : set->elements())
        if (e.data.chain) targets.push_back(e.data.chain);
  }
  r->verdict.code = spec.verdict;
  if (spec.verdict == NftRuleVerdict::JUMP || spec.verdict == NftRuleVerdict::GOTO) {
    NftChain* to = find_chain(t, spec.target);
    if (!to) return unexpected("chain '" + spec.target + "' does not exist in table '" + t.name + "'");
    if (to->spec.base) return unexpected("cannot jump to base chain '" + to->name + "' (Operation not supported)");
    r->verdict.chain = to;
    targets.push_back(to);
  }
  for (const NftChain* to : targets)
    if (Status st = check_jump(c, to); !st) return st;
  if (spec.counter_at >= 0) {
    r->counter = std::make_unique<NftCounter>();
    r->counter->set_initial(spec.counter_packets, spec.counter_bytes);
  }
  r->handle = t.next_handle++;
  out = std::move(r);
  return {};
}

static NftChain* find_chain(NftTable& t, const std::string& name) {
  for (auto& c : t.chains)
    if (c->name == name) return c.get();
  return nullptr;
}

Status NftRuleset::add_chain(const std::string& table, const std::string& chain,
                                const NftChainSpec& spec, NftDeviceResolver& resolver) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return unexpected("table '" + table + "' does not exist");
  if (NftChain* c = find_chain(*t, chain)) {
    // nft `add` of an existing chain updates it: only the policy may change.
    if (!spec.base) return {};
    if (!c->spec.base || c->spec.hook != spec.hook || c->spec.device != spec.device ||
        c->spec.priority != spec.priority)
      return unexpected("chain '" + chain + "' exists in table '" + table +
                             "' with a different type/hook/device/priority");
    if (spec.has_policy) {
      on_abort_fn([c, old = c->spec] {
        c->spec = old;
        c->policy.store(static_cast<uint8_t>(old.policy), std::memory_order_relaxed);
      });
      c->spec.policy = spec.policy;
      c->policy.store(static_cast<uint8_t>(spec.policy), std::memory_order_relaxed);
    }
    return {};
  }
  auto c = std::make_unique<NftChain>();
  c->name = chain;
  c->spec = spec;
  c->policy.store(static_cast<uint8_t>(spec.policy), std::memory_order_relaxed);
  c->snapshot.exchange(std::make_unique<const NftRuleSnapshot>());
  if (spec.base) {
    NfDeviceHooks* dev = resolver.find_device(spec.device);
    if (!dev) return unexpected("device '" + spec.device + "' not found");
    c->ops = NfHookOps{nft_chain_hook, c.get(), spec.priority, spec.hook};
    if (Status st = nf_register_hook(*dev, &c->ops); !st)
      return unexpected("cannot attach chain '" + chain + "' to device '" + spec.device + "': " + st.error().msg);
    c->dev = dev;
  }
  c->handle = t->next_handle++;
  on_abort_fn([t, p = c.get()] {
    if (p->dev) (void)nf_unregister_hook(*p->dev, &p->ops);  // registered: cannot fail
    erase_ptr(t->chains, p);
  });
  t->chains.push_back(std::move(c));
  return {};
}

void NftRuleset::publish_rules(NftChain& c) {
  auto s = std::make_unique<NftRuleSnapshot>();
  s->rules.reserve(c.rules.size());
  for (auto& r : c.rules) s->rules.push_back(r.get());
  c.snapshot.replace(std::move(s));
}

Status NftRuleset::add_rule(const std::string& table, const std::string& chain,
                               const NftRuleSpec& spec, bool front, uint64_t* handle) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return unexpected("table '" + table + "' does not exist");
  NftChain* c = find_chain(*t, chain);
  if (!c) return unexpected("chain '" + chain + "' does not exist in table '" + table + "'");
  std::unique_ptr<NftRule> r;
  if (Status st = build_rule(*t, *c, spec, r); !st) return st;
  if (handle) *handle = r->handle;
  on_abort_fn([this, c, p = r.get()] {
    auto it = std::find_if(c->rules.begin(), c->rules.end(), [p](const auto& x) { return x.get() == p; });
    std::unique_ptr<NftRule> gone = std::move(*it);
    c->rules.erase(it);
    publish_rules(*c);
  });
  if (front) c->rules.insert(c->rules.begin(), std::move(r));
  else c->rules.push_back(std::move(r));
  publish_rules(*c);
  return {};
}

Status NftRuleset::replace_rule(const std::string& table, const std::string& chain, uint64_t handle,
                                   const NftRuleSpec& spec, uint64_t* new_handle) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return unexpected("table '" + table + "' does not exist");
  NftChain* c = find_chain(*t, chain);
  if (!c) return unexpected("chain '" + chain + "' does not exist in table '" + table + "'");
  auto it = std::find_if(c->rules.begin(), c->rules.end(),
                         [&](const auto& r) { return r->handle == handle; });
  if (it == c->rules.end())
    return unexpected("rule handle " + std::to_string(handle) + " does not exist in chain '" + chain + "'");
  std::unique_ptr<NftRule> fresh;
  if (Status st = build_rule(*t, *c, spec, fresh); !st) return st;
  std::unique_ptr<NftRule> gone = std::move(*it);
  *it = std::move(fresh);
  if (new_handle) *new_handle = (*it)->handle;
  publish_rules(*c);  // after the grace period no reader sees `gone`
  on_abort_fn([this, c, p = it->get(), old = std::move(gone)]() mutable {
    auto at = std::find_if(c->rules.begin(), c->rules.end(), [p](const auto& x) { return x.get() == p; });
    std::swap(*at, old);
    publish_rules(*c);
  });
  return {};
}

Status NftRuleset::delete_rule(const std::string& table, const std::string& chain, uint64_t handle) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return unexpected("table '" + table + "' does not exist");
  NftChain* c = find_chain(*t, chain);
  if (!c) return unexpected("chain '" + chain + "' does not exist in table '" + table + "'");
  auto it = std::find_if(c->rules.begin(), c->rules.end(),
                         [&](const auto& r) { return r->handle == handle; });
  if (it == c->rules.end())
    return unexpected("rule handle " + std::to_string(handle) + " does not exist in chain '" + chain + "'");
  std::unique_ptr<NftRule> gone = std::move(*it);
  const size_t at = static_cast<size_t>(it - c->rules.begin());
  c->rules.erase(it);
  publish_rules(*c);  // after the grace period no reader sees `gone`
  on_abort_fn([this, c, at, r = std::move(gone)]() mutable {
    c->rules.insert(c->rules.begin() + static_cast<std::ptrdiff_t>(at), std::move(r));
    publish_rules(*c);
  });
  return {};
}

void NftRuleset::destroy_chain(std::unique_ptr<NftChain> c) {
  if (c->dev) (void)nf_unregister_hook(*c->dev, &c->ops);  // registered: cannot fail; waits for a grace period
  // Unattached chains are never read by the datapath: free at once.
}

Status NftRuleset::delete_chain(const std::string& table, const std::string& chain) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return unexpected("table '" + table + "' does not exist");
  auto it = std::find_if(t->chains.begin(), t->chains.end(),
                         [&](const auto& c) { return c->name == chain; });
  if (it == t->chains.end())
    return unexpected("chain '" + chain + "' does not exist in table '" + table + "'");
  const NftChain* gone = it->get();
  for (const auto& other : t->chains) {
    std::vector<const NftChain*> next;
    successors(*other, next);
    if (other.get() != gone && std::find(next.begin(), next.end(), gone) != next.end())
      return unexpected("chain '" + chain + "' is in use: chain '" + other->name + "' jumps to it (Device or resource busy)");
  }
  for (const auto& set : t->sets)
    for (const NftElem& e : set->elements())
      if (e.data.chain == gone)
        return unexpected("chain '" + chain + "' is in use: map '" + set->name() + "' jumps to it (Device or resource busy)");
  std::unique_ptr<NftChain> c = std::move(*it);
  const size_t at = static_cast<size_t>(it - t->chains.begin());
  t->chains.erase(it);
  NfDeviceHooks* dev = c->dev;
  unhook_chain(*c);  // waits for a grace period
  on_abort_fn([t, at, dev, ch = std::move(c)]() mutable {
    if (dev && nf_register_hook(*dev, &ch->ops)) ch->dev = dev;
    t->chains.insert(t->chains.begin() + static_cast<std::ptrdiff_t>(at), std::move(ch));
  });
  return {};
}

static void unhook_chain(NftChain& c) {
  if (c.dev) {
    (void)nf_unregister_hook(*c.dev, &c.ops);  // registered: cannot fail
    c.dev = nullptr;
  }
}

Status NftRuleset::add_set(const std::string& table, const std::string& set, const NftSetSpec& spec) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return unexpected("table '" + table + "' does not exist (No such file or directory)");
  if (NftSet* old = find_set(*t, set)) {
    // `add` of an existing set with the same declaration adds its elements (nft's add).
    if (old->spec().types != spec.types || old->spec().map != spec.map || old->spec().mark_data != spec.mark_data ||
        old->spec().interval != spec.interval)
      return unexpected("set '" + set + "' exists in table '" + table + "' with another type or flags (File exists)");
    std::vector<NftVerdictData> data;
    if (Status st = resolve_data(*t, *old, spec.elements, data); !st) return st;
    return add_to_set(*old, spec.elements, data);
  }
  auto s = std::make_unique<NftSet>(set, spec, false);
  std::vector<NftVerdictData> data;
  if (Status st = resolve_data(*t, *s, spec.elements, data); !st) return st;
  if (Status st = s->add(spec.elements, data, true, now()); !st) return st;
  s->handle = t->next_handle++;
  on_abort_fn([t, p = s.get()] { erase_ptr(t->sets, p); });
  t->sets.push_back(std::move(s));
  return {};
}

static bool set_in_use(const NftTable& t, const NftSet* s, std::string* who) {
  for (const auto& c : t.chains)
    for (const auto& r : c->rules)
      for (const NftMatch& m : r->spec.matches)
        if (m.set == s) {
          *who = c->name;
          return true;
        }
  return false;
}

Status NftRuleset::delete_set(const std::string& table, const std::string& set) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return unexpected("table '" + table + "' does not exist (No such file or directory)");
  auto it = std::find_if(t->sets.begin(), t->sets.end(), [&](const auto& s) { return s->name() == set; });
  if (it == t->sets.end())
    return unexpected("set '" + set + "' does not exist in table '" + table + "' (No such file or directory)");
  std::string who;
  if (set_in_use(*t, it->get(), &who))
    return unexpected("set '" + set + "' is in use by a rule of chain '" + who + "' (Device or resource busy)");
  const size_t at = static_cast<size_t>(it - t->sets.begin());
  std::unique_ptr<NftSet> gone = std::move(*it);
  t->sets.erase(it);  // no rule reads it: freed at once (or at the batch's end)
  on_abort_fn([t, at, g = std::move(gone)]() mutable {
    t->sets.insert(t->sets.begin() + static_cast<std::ptrdiff_t>(at), std::move(g));
  });
  return {};
}

Status NftRuleset::flush_set(const std::string& table, const std::string& set) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t;
  NftSet* s;
  if (Status st = writable_set(table, set, t, s); !st) return st;
  if (in_batch_) put_back_on_abort(*s, s->elements(now()));
  s->flush();
  return {};
}

Status NftRuleset::writable_set(const std::string& table, const std::string& set, NftTable*& t, NftSet*& s,
                                   const std::vector<NftRawElem>* raw, std::vector<NftElemSpec>* elems) {
  t = find_table(table);
  if (!t) return unexpected("table '" + table + "' does not exist (No such file or directory)");
  s = find_set(*t, set);
  if (!s) return unexpected("set '" + set + "' does not exist in table '" + table + "' (No such file or directory)");
  if (s->spec().constant) return unexpected("set '" + set + "' is constant (Operation not supported)");
  if (!raw) return {};
  elems->resize(raw->size());
  for (size_t i = 0; i < raw->size(); ++i)
    if (Status st = nft_parse_elem(s->spec().types, nft_map_data(s->spec()), (*raw)[i], (*elems)[i]); !st)
      return unexpected("element " + std::to_string(i + 1) + " of set '" + set + "': " + st.error().msg);
  return {};
}

Status NftRuleset::add_elements(const std::string& table, const std::string& set, const std::vector<NftRawElem>& raw) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t;
  NftSet* s;
  std::vector<NftElemSpec> elems;
  if (Status st = writable_set(table, set, t, s, &raw, &elems); !st) return st;
  std::vector<NftVerdictData> data;
  if (Status st = resolve_data(*t, *s, elems, data); !st) return st;
  // A jump added to a map must not loop back to a chain that looks the map up.
  for (const auto& c : t->chains)
    for (const auto& r : c->rules)
      for (const NftMatch& m : r->spec.matches)
        if (m.set == s)
          for (const NftVerdictData& d : data)
            if (d.chain)
              if (Status st = check_jump(*c, d.chain); !st) return st;
  return add_to_set(*s, elems, data);
}

// An element as it was, to add back: its key, own timeout (its expiry starts again),
// counter and verdict.
static NftElemSpec spec_of(const NftElem& e) {
  NftElemSpec x;
  x.lo = e.lo;
  x.hi = e.hi;
  x.range = e.range;
  x.prefix = e.prefix;
  x.timeout_ns = e.timeout_ns;
  x.counter = e.counter;
  x.packets = e.packets;
  x.bytes = e.bytes;
  return x;
}

void NftRuleset::put_back_on_abort(NftSet& s, const std::vector<NftElem>& elems) {
  if (!in_batch_ || elems.empty()) return;
  std::vector<NftElemSpec> specs;
  std::vector<NftVerdictData> data;
  specs.reserve(elems.size());
  data.reserve(elems.size());
  for (const NftElem& e : elems) specs.push_back(spec_of(e)), data.push_back(e.data);
  on_abort_fn([this, &s, specs = std::move(specs), data = std::move(data)] { (void)s.add(specs, data, true, now()); });
}

// Adds (existing elements are kept); in a batch, the abort takes out what was new.
Status NftRuleset::add_to_set(NftSet& s, const std::vector<NftElemSpec>& elems, const std::vector<NftVerdictData>& data) {
  std::vector<NftElemSpec> fresh;
  if (in_batch_) {
    const uint64_t t = now();
    for (const NftElemSpec& e : elems)
      if (!s.element(e, t)) fresh.push_back(e);
    auto key = [](const NftElemSpec& e) { return std::tie(e.lo, e.hi); };
    std::sort(fresh.begin(), fresh.end(), [&](const NftElemSpec& a, const NftElemSpec& b) { return key(a) < key(b); });
    fresh.erase(std::unique(fresh.begin(), fresh.end(), [&](const NftElemSpec& a, const NftElemSpec& b) { return key(a) == key(b); }),
                fresh.end());
  }
  if (Status st = s.add(elems, data, true, now()); !st) return st;
  if (!fresh.empty()) on_abort_fn([this, &s, fresh = std::move(fresh)] { (void)s.remove(fresh, now()); });
  return {};
}

Status NftRuleset::delete_elements(const std::string& table, const std::string& set, const std::vector<NftRawElem>& raw) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t;
  NftSet* s;
  std::vector<NftElemSpec> elems;
  if (Status st = writable_set(table, set, t, s, &raw, &elems); !st) return st;
  std::vector<NftElem> was;
  if (in_batch_)
    for (const NftElemSpec& e : elems)
      if (auto x = s->element(e, now())) was.push_back(*x);
  if (Status st = s->remove(elems, now()); !st) return st;
  put_back_on_abort(*s, was);
  return {};
}

Status NftRuleset::delete_table(const std::string& table) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  auto it = std::find_if(tables_.begin(), tables_.end(), [&](const auto& t) { return t->name == table; });
  if (it == tables_.end()) return unexpected("table '" + table + "' does not exist");
  detach_table(static_cast<size_t>(it - tables_.begin()));
  return {};
}

// Base chains leave their hooks first (each after a grace period), so no packet is
// still in a regular chain they jump to when the table goes.
void NftRuleset::detach_table(size_t index) {
  std::unique_ptr<NftTable> t = std::move(tables_[index]);
  tables_.erase(tables_.begin() + static_cast<std::ptrdiff_t>(index));
  std::vector<std::pair<NftChain*, NfDeviceHooks*>> hooked;
  for (auto& c : t->chains) {
    if (c->dev) hooked.emplace_back(c.get(), c->dev);
    unhook_chain(*c);
  }
  if (!in_batch_) return;  // freed here
  on_abort_fn([this, index, hooked, tp = std::move(t)]() mutable {
    for (auto [c, dev] : hooked)
      if (nf_register_hook(*dev, &c->ops)) c->dev = dev;
    tables_.insert(tables_.begin() + static_cast<std::ptrdiff_t>(index), std::move(tp));
  });
}

void NftRuleset::flush() {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  for (size_t i = tables_.size(); i-- > 0;) detach_table(i);
}

Status NftRuleset::apply_batch(const std::vector<NftCommand>& cmds, NftDeviceResolver& resolver, std::string* out,
                               size_t* failed) {
  {
    std::lock_guard<std::mutex> g(mu_);
    in_batch_ = true;
    undo_.clear();
  }
  Status st;
  for (size_t k = 0; k < cmds.size(); ++k) {
    st = apply(cmds[k], resolver, out);
    if (!st) {
      if (failed) *failed = k;
      break;
    }
  }
  std::vector<std::unique_ptr<Undo>> steps;
  {
    RcuWriterScope writer;
    std::lock_guard<std::mutex> g(mu_);
    in_batch_ = false;
    steps.swap(undo_);
    if (!st)
      for (auto it = steps.rbegin(); it != steps.rend(); ++it) (*it)->run();
  }
  return st;  // what the batch deleted goes with `steps`, past its grace periods
}

// mirrors nf_tables_netdev_event / nft_netdev_event: a pktpath base chain hooks exactly
// one device, so the unregistered device is always its only one: __nft_release_basechain.
void NftRuleset::netdev_unregister(NfDeviceHooks* dev) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  for (auto& t : tables_) {
    auto gone = std::stable_partition(t->chains.begin(), t->chains.end(),
                                      [&](const auto& c) { return c->dev != dev; });
    for (auto it = gone; it != t->chains.end(); ++it) destroy_chain(std::move(*it));
    t->chains.erase(gone, t->chains.end());
  }
}

void NftRuleset::watch_devices(NetdevNotifierChain& chain) {
  events_.subscribe(chain, &NftRuleset::netdev_event, this);
}

void NftRuleset::netdev_event(void* self, NetdevEvent ev, NetDevice& dev) {
  if (ev == NetdevEvent::UNREGISTER) static_cast<NftRuleset*>(self)->netdev_unregister(&dev.nf_hooks());
}

namespace {
std::string table_block(const NftTable& t, bool handles, uint64_t now) {
  auto handle = [handles](uint64_t h) { return handles ? " # handle " + std::to_string(h) : std::string(); };
  std::string o = "table netdev " + t.name + " {" + handle(t.handle) + "\n";
  bool first = true;
  for (const auto& set : t.sets) {
    if (!first) o += "\n";
    first = false;
    o += set_block(*set, handles, now);
  }
  for (const auto& c : t.chains) {
    if (!first) o += "\n";
    first = false;
    o += "\tchain " + c->name + " {" + handle(c->handle) + "\n";
    if (c->spec.base) {
      o += "\t\ttype filter hook " + std::string(nf_hook_name(c->spec.hook)) + " device \"" +
           c->spec.device + "\" priority " + priority_str(c->spec.priority) + "; policy " +
           nf_verdict_name(static_cast<NfVerdict>(c->policy.load(std::memory_order_relaxed))) + ";\n";
    }
    for (const auto& r : c->rules)
      o += "\t\t" + rule_str(*r, now) + handle(r->handle) + "\n";
    o += "\t}\n";
  }
  return o + "}\n";
}
}  // namespace

std::string NftRuleset::list(bool handles) const {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  std::string o;
  const uint64_t t_now = now();
  for (const auto& t : tables_) o += table_block(*t, handles, t_now);
  return o;
}

Status NftRuleset::list_table(const std::string& table, bool handles, std::string* out) const {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  const NftTable* t = find_table(table);
  if (!t) return unexpected("table '" + table + "' does not exist (No such file or directory)");
  if (out) *out += table_block(*t, handles, now());
  return {};
}

Status NftRuleset::list_set(const std::string& table, const std::string& set, std::string* out) const {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  const NftTable* t = find_table(table);
  if (!t) return unexpected("table '" + table + "' does not exist (No such file or directory)");
  for (const auto& s : t->sets)
    if (s->name() == set) {
      if (out) *out += "table netdev " + t->name + " {\n" + set_block(*s, false, now()) + "}\n";
      return {};
    }
  return unexpected("set '" + set + "' does not exist in table '" + table + "' (No such file or directory)");
}

nlohmann::json NftRuleset::list_json() const {
  using nlohmann::json;
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  json items = json::array();
  items.push_back({{"metainfo", {{"json_schema_version", 1}}}});
  const uint64_t t_now = now();
  for (const auto& t : tables_) {
    items.push_back({{"table", {{"family", "netdev"}, {"name", t->name}, {"handle", t->handle}}}});
    for (const auto& set : t->sets) items.push_back(set_json(*t, *set, t_now));
    for (const auto& c : t->chains) {
      json ch = {{"family", "netdev"}, {"table", t->name}, {"name", c->name}, {"handle", c->handle}};
      if (c->spec.base) {
        ch["type"] = "filter";
        ch["hook"] = nf_hook_name(c->spec.hook);
        ch["prio"] = c->spec.priority;
        ch["policy"] = nf_verdict_name(static_cast<NfVerdict>(c->policy.load(std::memory_order_relaxed)));
        ch["dev"] = c->spec.device;
      }
      items.push_back({{"chain", ch}});
    }
    for (const auto& c : t->chains) {
      for (const auto& r : c->rules) {
        json expr = json::array();
        const int n = static_cast<int>(r->spec.matches.size());
        for (int i = 0; i <= n; ++i) {
          if (i == r->spec.counter_at)
            expr.push_back({{"counter", {{"packets", r->counter->packets()}, {"bytes", r->counter->bytes()}}}});
          if (i < n) {
            const NftMatch& m = r->spec.matches[i];
            expr.push_back(m.set ? lookup_json(m, t_now) : match_json(m));
          }
        }
        if (r->verdict.code != NftRuleVerdict::CONTINUE && r->verdict.code != NftRuleVerdict::VMAP)
          expr.push_back(verdict_json(r->verdict));
        items.push_back({{"rule", {{"family", "netdev"}, {"table", t->name}, {"chain", c->name},
                                   {"handle", r->handle}, {"expr", expr}}}});
      }
    }
  }
  return {{"nftables", items}};
}

Status NftRuleset::apply(const NftCommand& c, NftDeviceResolver& resolver, std::string* out) {
  switch (c.op) {
    case NftOp::ADD_TABLE: return add_table(c.table);
    case NftOp::ADD_CHAIN: return add_chain(c.table, c.chain, c.chain_spec, resolver);
    case NftOp::ADD_RULE: return add_rule(c.table, c.chain, c.rule, false);
    case NftOp::INSERT_RULE: return add_rule(c.table, c.chain, c.rule, true);
    case NftOp::REPLACE_RULE: return replace_rule(c.table, c.chain, c.handle, c.rule);
    case NftOp::DELETE_TABLE: return delete_table(c.table);
    case NftOp::DELETE_CHAIN: return delete_chain(c.table, c.chain);
    case NftOp::DELETE_RULE: return delete_rule(c.table, c.chain, c.handle);
    case NftOp::FLUSH_RULESET: flush(); return {};
    case NftOp::LIST_RULESET:
      if (out) *out += c.json ? json_text(list_json()) + "\n" : list(c.handles);
      return {};
    case NftOp::ADD_SET: return add_set(c.table, c.set, c.set_spec);
    case NftOp::DELETE_SET: return delete_set(c.table, c.set);
    case NftOp::FLUSH_SET: return flush_set(c.table, c.set);
    case NftOp::ADD_ELEMENT: return add_elements(c.table, c.set, c.elems);
    case NftOp::DELETE_ELEMENT: return delete_elements(c.table, c.set, c.elems);
    case NftOp::LIST_SET: return list_set(c.table, c.set, out);
    case NftOp::LIST_TABLE: return list_table(c.table, c.handles, out);
    case NftOp::RUN_FILE: return unexpected("-f FILE is read by nft_command");
  }
  return unexpected("unknown command");
}

}  // namespace pktpath::nf
