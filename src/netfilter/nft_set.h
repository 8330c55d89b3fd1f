// nftables sets, verdict maps and their elements: the lookup a rule's `@set`, `{ ... }`
// and `vmap` run per packet, and the element commands that change them.
//
// Keys are bytes in network order, each component of a concatenation padded to a
// multiple of 4 (the kernel's NFT_REG32 layout), so one memcmp compares a whole key and
// byte order is value order for intervals.
//
// Two backends, chosen by the set's flags as nft_select_set_ops does:
//  - hash (mirrors nft_set_hash.c's rhashtable; the key lives in the node, one allocation
//    per element where core/rcu_hash.h's nodes point at a value): chained buckets changed in place under
//    the ruleset's mutex. An insert publishes the node with one release store; a delete
//    unlinks it and frees it after a grace period; growing copies the nodes into a table
//    twice as wide, published in one store (amortised O(1) per element).
//  - interval (the lookup of nft_set_rbtree.c / nft_set_pipapo.c for one field): sorted,
//    non-overlapping ranges searched by bisection. Like pipapo's clone, each command
//    builds a new array and publishes it whole: a transaction of many elements costs one
//    copy, one element at a time costs O(n) each.
// Readers take no lock and allocate nothing.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/compiler.h"
#include "core/rcu.h"
#include "netfilter/nft_rule.h"

namespace pktpath::nf {

inline constexpr unsigned kNftMaxKeyLen = 40;   // bytes of a (concatenated) key
inline constexpr unsigned kNftMaxConcat = 8;    // components of a concatenation
inline constexpr uint32_t kNftMaxSetSize = 1u << 26;

// The data types a set's key is declared with (nft's datatypes).
enum class NftType : uint8_t { IPV4_ADDR, IPV6_ADDR, ETHER_ADDR, INET_PROTO, INET_SERVICE, MARK, ETHER_TYPE, DSCP };

struct NftTypeInfo {
  const char* name;  // as nft spells it in `type ...`
  uint8_t len;       // value bytes
};
const NftTypeInfo& nft_type_info(NftType t);
std::optional<NftType> nft_type_by_name(std::string_view s);
// The type of what a selector loads (ip daddr: ipv4_addr); nullopt for selectors that
// have no set type here (ip length).
std::optional<NftType> nft_key_type(NftKey k);
// Bytes one component takes in a key: its length rounded up to 4.
inline unsigned nft_type_stride(NftType t) { return (nft_type_info(t).len + 3u) & ~3u; }

using NftKeyBytes = std::array<uint8_t, kNftMaxKeyLen>;

// An element as given on the command line: a key, or a range of keys [lo, hi] (a prefix
// or a-b, interval sets only), and for a verdict map its verdict.
struct NftElemSpec {
  NftKeyBytes lo{};
  NftKeyBytes hi{};
  bool range = false;     // written as a prefix or a range
  uint8_t prefix = 0xff;  // prefix length when written as ADDR/LEN (for printing)
  NftRuleVerdict verdict = NftRuleVerdict::CONTINUE;
  std::string target;     // jump/goto chain name
  uint32_t value = 0;     // a mark map's data
  uint64_t timeout_ns = 0;  // `timeout T` of its own (0: the set's)
  bool counter = false;     // `counter [packets N bytes M]` of its own
  uint64_t packets = 0, bytes = 0;
};

// What `add set|map` declares.
struct NftSetSpec {
  std::vector<NftType> types;  // one per component of the key
  std::vector<NftKey> typeof_keys;  // `typeof SEL . SEL`: the selectors the types came from
  bool typeof_data = false;         // `typeof ... : meta mark` (listed so; else `: mark`)
  bool map = false;            // `type K : verdict` or `type K : mark`
  bool mark_data = false;      // a map whose data is a mark (else a verdict)
  bool interval = false;       // flags interval
  bool constant = false;       // flags constant
  bool timeouts = false;       // flags timeout, or a `timeout T` default
  bool dynamic = false;        // flags dynamic (NFT_SET_EVAL): rules add elements
  bool counter = false;        // `counter`: every element counts what finds it
  uint64_t timeout_ns = 0;     // the elements' default timeout (0: none)
  uint32_t size = 0;           // 0: no limit
  bool has_elements = false;   // the declaration listed `elements = { ... }`
  std::vector<NftElemSpec> elements;
};

// A stored element, as listed.
struct NftElem {
  NftKeyBytes lo{};
  NftKeyBytes hi{};
  bool range = false;
  uint8_t prefix = 0xff;
  NftVerdictData data;
  uint64_t timeout_ns = 0;  // its own timeout when not the set's (listed as `timeout T`)
  uint64_t expires = 0;     // clock time it expires at (0: never)
  bool counter = false;     // the element has a counter: its packets and bytes
  uint64_t packets = 0, bytes = 0;
};

// An element's own counter (nft_counter as a set element's expression), shared by the
// Cpus that find the element.
struct NftElemCounter {
  std::atomic<uint64_t> packets{0};
  std::atomic<uint64_t> bytes{0};
  void add(uint32_t len) {
    packets.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(len, std::memory_order_relaxed);
  }
};

// What a rule's `add @s { KEY ... }` / `update @s { KEY ... }` asks of the set.
struct NftDynsetOp {
  bool update = false;      // update: an existing element's expiry starts again
  uint64_t timeout_ns = 0;  // the new element's timeout (0: the set's)
  bool counter = false;     // the new element gets a counter
};

class NftSet {
 public:
  NftSet(std::string name, const NftSetSpec& spec, bool anonymous);
  ~NftSet();
  NftSet(const NftSet&) = delete;
  NftSet& operator=(const NftSet&) = delete;

  const std::string& name() const { return name_; }
  const NftSetSpec& spec() const { return spec_; }
  bool anonymous() const { return anonymous_; }
  unsigned key_len() const { return klen_; }
  size_t size() const { return count_.load(std::memory_order_relaxed); }
  uint64_t handle = 0;
  int use = 0;  // rules that reference it (writer's count)

  // Read side (datapath): the element whose key (or range) holds `key` and has not
  // expired at `now` (the clock's ns; read only by sets with timeouts), or nullptr. An
  // element with a counter counts one packet of `len` bytes.
  const NftVerdictData* lookup(const uint8_t* key, uint64_t now = 0, uint32_t len = 0) const;
  bool has_timeouts() const { return spec_.timeouts; }

  // Datapath writer (mirrors nft_dynset_eval -> nft_rhash_update): find the element or
  // add it, under the set's insert lock (rhashtable's bucket lock); an element found or
  // made counts the packet. False when the set is full (the rule breaks).
  bool dynamic_update(const uint8_t* key, const NftDynsetOp& op, uint64_t now, uint32_t len);
  // Why a rule's `add|update @set` cannot write this set (nft_dynset_init), or ok; on
  // success a set without a size gets 65535, as the kernel gives it.
  Status bind_dynamic(const NftDynsetOp& op);

  // Write side, under the ruleset's mutex; `now` is the clock's time (timeouts start
  // from it; expired elements are gone first, as the kernel's gc and its
  // nft_set_elem_expired checks make them). `data[i]` is elems[i]'s resolved verdict.
  // All or nothing: a duplicate (without exist_ok), an overlap or the size limit fails
  // the whole call, naming the element.
  Status add(const std::vector<NftElemSpec>& elems, const std::vector<NftVerdictData>& data, bool exist_ok,
                uint64_t now = 0);
  Status remove(const std::vector<NftElemSpec>& elems, uint64_t now = 0);
  void flush();
  // Every element not expired at `now`, in key order.
  std::vector<NftElem> elements(uint64_t now = 0) const;
  // The element with exactly this key (or range), not expired at `now`.
  std::optional<NftElem> element(const NftElemSpec& key, uint64_t now = 0) const;

 private:
  struct HNode;
  struct HTable;
  struct IvTable;
  size_t hash(const uint8_t* key) const;
  const HNode* hfind(const HTable& t, const uint8_t* key) const;
  void hinsert(HTable& t, HNode* n);
  void unlink_where(std::atomic<HNode*>& bucket, const std::function<bool(const HNode*)>& pred, bool once,
                    std::vector<HNode*>& gone);
  std::unique_ptr<const HTable> grow();  // the old table, to free after a grace period
  HNode* make_node(const uint8_t* key, const NftVerdictData& d, uint64_t timeout, uint64_t expires,
                   NftElemCounter* counter) const;
  // Retired tables wait for one grace period, taken outside the insert lock.
  void free_retired(std::vector<std::unique_ptr<const HTable>>& old, std::vector<HNode*>& nodes);
  bool expired(uint64_t expires, uint64_t now) const { return spec_.timeouts && expires != 0 && now >= expires; }
  void collect_expired(uint64_t now);  // unlink (hash) or drop (interval) what has expired
  NftElem elem_of(const HNode& n) const;
  NftElem elem_of(const IvTable& t, size_t i) const;
  std::optional<size_t> iv_index(const IvTable& t, const uint8_t* lo) const;  // the range starting at lo

  std::string name_;
  NftSetSpec spec_;  // without its elements
  bool anonymous_;
  bool fixed_size_;  // declared with a size and not dynamic: the kernel's nft_hash, no update
  unsigned klen_;
  std::atomic<size_t> count_{0};  // changed under ins_mu_
  uint64_t seed_;
  std::mutex ins_mu_;  // serialises the hash table's writers: commands and the datapath's adds
  RcuPtr<HTable> ht_;
  RcuPtr<IvTable> iv_;
};

}  // namespace pktpath::nf
