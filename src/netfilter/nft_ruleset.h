// The nftables ruleset of the netdev family: tables, chains and rules, attached to devices
// through the hook registry (nf_hooks.h). Mirrors the parts of nf_tables_api.c that keep
// the objects and nft_chain_filter_netdev / nft_do_chain that run them.
//
// Concurrency: every method is a writer (or a listing) and takes the ruleset's mutex;
// several threads may call them. The datapath never calls into NftRuleset: it runs the
// hook registered for each base chain (nft_chain_hook), which reads an immutable snapshot
// of the chain's rules under RCU. A writer publishes a new snapshot and frees the old one
// (and deleted rules/chains) after a grace period. Counters keep counting across
// snapshots since they belong to the rule.
//
// Devices: chains name a device; the NftDeviceResolver given to the mutating calls turns
// that name into the device's NfDeviceHooks. The ruleset subscribes to the device table's
// events (watch_devices): when a device goes away, every base chain hooked on it is
// released with its rules, as Linux 6.1 does for a netdev chain whose only device is
// unregistered. Without a subscription the owner calls netdev_unregister() itself.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/netdev_notifier.h"
#include "core/rcu.h"
#include "netfilter/nf_hooks.h"
#include "netfilter/nft_parse.h"
#include "netfilter/nft_rule.h"
#include "netfilter/nft_set.h"

namespace pktpath::nf {

// Device name -> hook heads. Implemented by the device table (NetDevice registry).
class NftDeviceResolver {
 public:
  virtual ~NftDeviceResolver() = default;
  virtual NfDeviceHooks* find_device(std::string_view name) = 0;
};

// Immutable rule list of a chain, as published to readers.
struct NftRuleSnapshot {
  std::vector<const NftRule*> rules;
};

struct NftChain {
  std::string name;
  uint64_t handle = 0;
  NftChainSpec spec;
  NfDeviceHooks* dev = nullptr;  // attached device (base chains), nullptr when detached
  NfHookOps ops;                 // registered on dev while attached; ops.priv == this
  RcuPtr<NftRuleSnapshot> snapshot;
  std::atomic<uint8_t> policy{static_cast<uint8_t>(NfVerdict::ACCEPT)};
  std::vector<std::unique_ptr<NftRule>> rules;  // writer's view, in order

};

struct NftTable {
  std::string name;
  uint64_t handle = 0;
  uint64_t next_handle = 1;  // chains, sets and rules share the table's handle space, as in nft
  std::vector<std::unique_ptr<NftSet>> sets;  // named sets and maps, in creation order
  std::vector<std::unique_ptr<NftChain>> chains;
  unsigned next_anon = 0;  // __setN names of anonymous sets
};

// The hook function of a base chain (mirrors nft_do_chain_netdev): walk the snapshot,
// first rule with a verdict decides, else the chain's policy.
NfVerdict nft_chain_hook(void* priv, Packet* p, const NfHookState& st);

class NftRuleset {
 public:
  NftRuleset();
  ~NftRuleset();  // flushes: unregisters every hook
  NftRuleset(const NftRuleset&) = delete;
  NftRuleset& operator=(const NftRuleset&) = delete;

  Status add_table(const std::string& table);
  Status add_chain(const std::string& table, const std::string& chain, const NftChainSpec& spec,
                      NftDeviceResolver& resolver);
  // Append (or, with front, prepend) a rule; its handle goes to *handle when given.
  Status add_rule(const std::string& table, const std::string& chain, const NftRuleSpec& spec,
                     bool front = false, uint64_t* handle = nullptr);
  // Replace the rule with `handle` by a new rule (new handle, fresh counter) in the same
  // position, in one publication: readers see the old rule or the new one, never neither.
  Status replace_rule(const std::string& table, const std::string& chain, uint64_t handle,
                         const NftRuleSpec& spec, uint64_t* new_handle = nullptr);
  Status delete_table(const std::string& table);
  // Sets and maps (nf_tables_newset / delset, newsetelem / delsetelem).
  Status add_set(const std::string& table, const std::string& set, const NftSetSpec& spec);
  Status delete_set(const std::string& table, const std::string& set);
  Status flush_set(const std::string& table, const std::string& set);
  Status add_elements(const std::string& table, const std::string& set, const std::vector<NftRawElem>& elems);
  Status delete_elements(const std::string& table, const std::string& set, const std::vector<NftRawElem>& elems);
  // `nft list set netdev T S`, `nft list table netdev T`.
  Status list_set(const std::string& table, const std::string& set, std::string* out) const;
  Status list_table(const std::string& table, bool handles, std::string* out) const;
  Status delete_chain(const std::string& table, const std::string& chain);
  Status delete_rule(const std::string& table, const std::string& chain, uint64_t handle);
  void flush();
  // mirrors nft_netdev_event on NETDEV_UNREGISTER: every base chain hooked on dev is
  // released (__nft_release_basechain: hook unregistered, rules and chain deleted).
  void netdev_unregister(NfDeviceHooks* dev);
  // Call netdev_unregister for every device that `chain` unregisters, from now on.
  void watch_devices(NetdevNotifierChain& chain);

  // `nft -a list ruleset` text (nft's layout, counters and handles).
  std::string list(bool handles = false) const;  // handles: nft -a's `# handle N` comments
  // `nft -j list ruleset` document.
  nlohmann::json list_json() const;

  // Where set timeouts read the time (the Net's clock); the monotonic clock by default.
  void set_time_source(std::function<uint64_t()> now) { now_ = std::move(now); }

  // Apply a parsed command; list output goes to *out.
  Status apply(const NftCommand& c, NftDeviceResolver& resolver, std::string* out);

  // nft -f's transaction (nf_tables_commit / __nf_tables_abort): the commands in order;
  // when one fails, every change the ones before it made is undone, newest first, and
  // *failed is its index. Deleted objects are kept (unhooked, past a grace period) until
  // the batch ends, so an abort puts them back with their counters. Listings print as
  // they run.
  Status apply_batch(const std::vector<NftCommand>& cmds, NftDeviceResolver& resolver, std::string* out,
                     size_t* failed);

 private:
  NftTable* find_table(const std::string& name);
  const NftTable* find_table(const std::string& name) const;
  // The table and set a set command names, refusing a constant set; with raw, its
  // elements parsed for the set's type into *elems (errors name the element).
  Status writable_set(const std::string& table, const std::string& set, NftTable*& t, NftSet*& s,
                         const std::vector<NftRawElem>* raw = nullptr, std::vector<NftElemSpec>* elems = nullptr);
  // A rule from its spec: sets bound (anonymous ones built), jump targets resolved.
  Status build_rule(NftTable& t, const NftChain& c, const NftRuleSpec& spec, std::unique_ptr<NftRule>& out);
  // Element verdicts resolved to chains of t (a verdict map's jump/goto).
  Status resolve_data(NftTable& t, const NftSet& set, const std::vector<NftElemSpec>& elems,
                         std::vector<NftVerdictData>& data);
  void destroy_chain(std::unique_ptr<NftChain> c);  // unregister, wait, free
  void publish_rules(NftChain& c);                  // new snapshot, wait, free the old

  static void netdev_event(void* self, NetdevEvent ev, NetDevice& dev);

  // While a batch runs, each change records how to undo it (run under mu_).
  struct Undo;
  void on_abort(std::unique_ptr<Undo> step);  // under mu_; nothing outside a batch
  template <typename F>
  void on_abort_fn(F&& f);
  void detach_table(size_t index);  // unhook its chains, keep it for the batch's undo
  void put_back_on_abort(NftSet& s, const std::vector<NftElem>& elems);
  Status add_to_set(NftSet& s, const std::vector<NftElemSpec>& elems, const std::vector<NftVerdictData>& data);

  uint64_t now() const { return now_ ? now_() : MonotonicClock::instance().now_ns(); }

  std::function<uint64_t()> now_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<NftTable>> tables_;
  bool in_batch_ = false;
  std::vector<std::unique_ptr<Undo>> undo_;
  uint64_t next_table_handle_ = 1;
  NetdevSubscription events_;  // last: unsubscribes before the rest goes away
};

}  // namespace pktpath::nf
