// nftables objects (write side), the base-chain hook (read side) and the listings.
#include "netfilter/nft_ruleset.h"
#include "netfilter/nft_names.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>

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

std::string rule_str(const NftRule& r) {
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
    if (i < n) add(match_str(r.spec.matches[i]));
  }
  if (r.spec.verdict == NftRuleVerdict::ACCEPT) add("accept");
  if (r.spec.verdict == NftRuleVerdict::DROP) add("drop");
  return s;
}

nlohmann::json match_json(const NftMatch& m) {
  using nlohmann::json;
  json left, right;
  switch (m.key) {
    case NftKey::META_MARK:
      left = {{"meta", {{"key", "mark"}}}};
      right = m.lo;
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

NftRuleset::~NftRuleset() {
  events_.reset();
  flush();
}

NftTable* NftRuleset::find_table(const std::string& name) {
  for (auto& t : tables_)
    if (t->name == name) return t.get();
  return nullptr;
}

NftStatus NftRuleset::add_table(const std::string& table) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  if (find_table(table)) return {};  // `add` of an existing table is not an error in nft
  auto t = std::make_unique<NftTable>();
  t->name = table;
  t->handle = next_table_handle_++;
  tables_.push_back(std::move(t));
  return {};
}

static std::unique_ptr<NftRule> make_rule(NftTable& t, const NftRuleSpec& spec) {
  auto r = std::make_unique<NftRule>();
  r->handle = t.next_handle++;
  r->spec = spec;
  if (spec.counter_at >= 0) {
    r->counter = std::make_unique<NftCounter>();
    r->counter->set_initial(spec.counter_packets, spec.counter_bytes);
  }
  return r;
}

static NftChain* find_chain(NftTable& t, const std::string& name) {
  for (auto& c : t.chains)
    if (c->name == name) return c.get();
  return nullptr;
}

NftStatus NftRuleset::add_chain(const std::string& table, const std::string& chain,
                                const NftChainSpec& spec, NftDeviceResolver& resolver) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return NftStatus::fail("table '" + table + "' does not exist");
  if (NftChain* c = find_chain(*t, chain)) {
    // nft `add` of an existing chain updates it: only the policy may change.
    if (!spec.base) return {};
    if (!c->spec.base || c->spec.hook != spec.hook || c->spec.device != spec.device ||
        c->spec.priority != spec.priority)
      return NftStatus::fail("chain '" + chain + "' exists in table '" + table +
                             "' with a different type/hook/device/priority");
    if (spec.has_policy) {
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
    if (!dev) return NftStatus::fail("device '" + spec.device + "' not found");
    c->ops = NfHookOps{nft_chain_hook, c.get(), spec.priority, spec.hook};
    if (int rc = nf_register_hook(*dev, &c->ops); rc != 0)
      return NftStatus::fail("cannot attach chain '" + chain + "' to device '" + spec.device +
                             "' (error " + std::to_string(rc) + ")");
    c->dev = dev;
  }
  c->handle = t->next_handle++;
  t->chains.push_back(std::move(c));
  return {};
}

void NftRuleset::publish_rules(NftChain& c) {
  auto s = std::make_unique<NftRuleSnapshot>();
  s->rules.reserve(c.rules.size());
  for (auto& r : c.rules) s->rules.push_back(r.get());
  c.snapshot.replace(std::move(s));
}

NftStatus NftRuleset::add_rule(const std::string& table, const std::string& chain,
                               const NftRuleSpec& spec, bool front, uint64_t* handle) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return NftStatus::fail("table '" + table + "' does not exist");
  NftChain* c = find_chain(*t, chain);
  if (!c) return NftStatus::fail("chain '" + chain + "' does not exist in table '" + table + "'");
  auto r = make_rule(*t, spec);
  if (handle) *handle = r->handle;
  if (front) c->rules.insert(c->rules.begin(), std::move(r));
  else c->rules.push_back(std::move(r));
  publish_rules(*c);
  return {};
}

NftStatus NftRuleset::replace_rule(const std::string& table, const std::string& chain, uint64_t handle,
                                   const NftRuleSpec& spec, uint64_t* new_handle) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return NftStatus::fail("table '" + table + "' does not exist");
  NftChain* c = find_chain(*t, chain);
  if (!c) return NftStatus::fail("chain '" + chain + "' does not exist in table '" + table + "'");
  auto it = std::find_if(c->rules.begin(), c->rules.end(),
                         [&](const auto& r) { return r->handle == handle; });
  if (it == c->rules.end())
    return NftStatus::fail("rule handle " + std::to_string(handle) + " does not exist in chain '" + chain + "'");
  std::unique_ptr<NftRule> gone = std::move(*it);
  *it = make_rule(*t, spec);
  if (new_handle) *new_handle = (*it)->handle;
  publish_rules(*c);  // after the grace period no reader sees `gone`
  return {};
}

NftStatus NftRuleset::delete_rule(const std::string& table, const std::string& chain, uint64_t handle) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return NftStatus::fail("table '" + table + "' does not exist");
  NftChain* c = find_chain(*t, chain);
  if (!c) return NftStatus::fail("chain '" + chain + "' does not exist in table '" + table + "'");
  auto it = std::find_if(c->rules.begin(), c->rules.end(),
                         [&](const auto& r) { return r->handle == handle; });
  if (it == c->rules.end())
    return NftStatus::fail("rule handle " + std::to_string(handle) + " does not exist in chain '" + chain + "'");
  std::unique_ptr<NftRule> gone = std::move(*it);
  c->rules.erase(it);
  publish_rules(*c);  // after the grace period no reader sees `gone`
  return {};
}

void NftRuleset::destroy_chain(std::unique_ptr<NftChain> c) {
  if (c->dev) nf_unregister_hook(*c->dev, &c->ops);  // waits for a grace period
  // Unattached chains are never read by the datapath: free at once.
}

NftStatus NftRuleset::delete_chain(const std::string& table, const std::string& chain) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  NftTable* t = find_table(table);
  if (!t) return NftStatus::fail("table '" + table + "' does not exist");
  auto it = std::find_if(t->chains.begin(), t->chains.end(),
                         [&](const auto& c) { return c->name == chain; });
  if (it == t->chains.end())
    return NftStatus::fail("chain '" + chain + "' does not exist in table '" + table + "'");
  std::unique_ptr<NftChain> c = std::move(*it);
  t->chains.erase(it);
  destroy_chain(std::move(c));
  return {};
}

NftStatus NftRuleset::delete_table(const std::string& table) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  auto it = std::find_if(tables_.begin(), tables_.end(), [&](const auto& t) { return t->name == table; });
  if (it == tables_.end()) return NftStatus::fail("table '" + table + "' does not exist");
  std::unique_ptr<NftTable> t = std::move(*it);
  tables_.erase(it);
  for (auto& c : t->chains) destroy_chain(std::move(c));
  return {};
}

void NftRuleset::flush() {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  for (auto& t : tables_)
    for (auto& c : t->chains) destroy_chain(std::move(c));
  tables_.clear();
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

std::string NftRuleset::list(bool handles) const {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  auto handle = [handles](uint64_t h) { return handles ? " # handle " + std::to_string(h) : std::string(); };
  std::string o;
  for (const auto& t : tables_) {
    o += "table netdev " + t->name + " {" + handle(t->handle) + "\n";
    bool first = true;
    for (const auto& c : t->chains) {
      if (!first) o += "\n";
      first = false;
      o += "\tchain " + c->name + " {" + handle(c->handle) + "\n";
      if (c->spec.base) {
        o += "\t\ttype filter hook " + std::string(nf_hook_name(c->spec.hook)) + " device \"" +
             c->spec.device + "\" priority " + priority_str(c->spec.priority) + "; policy " +
             nf_verdict_name(static_cast<NfVerdict>(c->policy.load(std::memory_order_relaxed))) + ";\n";
      }
      for (const auto& r : c->rules)
        o += "\t\t" + rule_str(*r) + handle(r->handle) + "\n";
      o += "\t}\n";
    }
    o += "}\n";
  }
  return o;
}

nlohmann::json NftRuleset::list_json() const {
  using nlohmann::json;
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(mu_);
  json items = json::array();
  items.push_back({{"metainfo", {{"json_schema_version", 1}}}});
  for (const auto& t : tables_) {
    items.push_back({{"table", {{"family", "netdev"}, {"name", t->name}, {"handle", t->handle}}}});
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
          if (i < n) expr.push_back(match_json(r->spec.matches[i]));
        }
        if (r->spec.verdict == NftRuleVerdict::ACCEPT) expr.push_back({{"accept", nullptr}});
        if (r->spec.verdict == NftRuleVerdict::DROP) expr.push_back({{"drop", nullptr}});
        items.push_back({{"rule", {{"family", "netdev"}, {"table", t->name}, {"chain", c->name},
                                   {"handle", r->handle}, {"expr", expr}}}});
      }
    }
  }
  return {{"nftables", items}};
}

NftStatus NftRuleset::apply(const NftCommand& c, NftDeviceResolver& resolver, std::string* out) {
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
  }
  return NftStatus::fail("unknown command");
}

}  // namespace pktpath::nf
