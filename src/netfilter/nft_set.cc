// nftables set backends (see nft_set.h).
#include "netfilter/nft_set.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <random>

namespace pktpath::nf {

namespace {

constexpr NftTypeInfo kTypes[] = {
    {"ipv4_addr", 4}, {"ipv6_addr", 16}, {"ether_addr", 6}, {"inet_proto", 1},
    {"inet_service", 2}, {"mark", 4}, {"ether_type", 2}, {"dscp", 1},
};

int key_cmp(const uint8_t* a, const uint8_t* b, unsigned n) { return std::memcmp(a, b, n); }

std::string elem_word(size_t i) { return "element " + std::to_string(i + 1); }

}  // namespace

NftRule::NftRule() = default;
NftRule::~NftRule() = default;

const NftTypeInfo& nft_type_info(NftType t) { return kTypes[static_cast<unsigned>(t)]; }

std::optional<NftType> nft_type_by_name(std::string_view s) {
  for (unsigned i = 0; i < std::size(kTypes); ++i)
    if (s == kTypes[i].name) return static_cast<NftType>(i);
  return std::nullopt;
}

std::optional<NftType> nft_key_type(NftKey k) {
  switch (k) {
    case NftKey::IP_SADDR: case NftKey::IP_DADDR: return NftType::IPV4_ADDR;
    case NftKey::IP6_SADDR: case NftKey::IP6_DADDR: return NftType::IPV6_ADDR;
    case NftKey::ETHER_SADDR: case NftKey::ETHER_DADDR: return NftType::ETHER_ADDR;
    case NftKey::TCP_SPORT: case NftKey::TCP_DPORT: case NftKey::UDP_SPORT: case NftKey::UDP_DPORT:
      return NftType::INET_SERVICE;
    case NftKey::META_L4PROTO: case NftKey::IP_PROTOCOL: case NftKey::IP6_NEXTHDR: return NftType::INET_PROTO;
    case NftKey::META_MARK: return NftType::MARK;
    case NftKey::META_PROTOCOL: case NftKey::ETHER_TYPE: return NftType::ETHER_TYPE;
    case NftKey::IP_DSCP: return NftType::DSCP;
    case NftKey::IP_LENGTH: return std::nullopt;
  }
  return std::nullopt;
}

// A hash node: the chain link, the element's data, its counter (or none), then
// key_len() bytes of key, and in a set with timeouts the element's own timeout and its
// expiry (8-byte aligned; the expiry is read and written as an atomic: the datapath's
// `update` restarts it while readers look).
struct NftSet::HNode {
  std::atomic<HNode*> next{nullptr};
  NftVerdictData data;
  NftElemCounter* counter = nullptr;  // fixed once published
  uint8_t* key() { return reinterpret_cast<uint8_t*>(this + 1); }
  const uint8_t* key() const { return reinterpret_cast<const uint8_t*>(this + 1); }
  static size_t times_at(unsigned klen) { return sizeof(HNode) + ((klen + 7u) & ~7u); }
  uint64_t* times(unsigned klen) { return reinterpret_cast<uint64_t*>(reinterpret_cast<uint8_t*>(this) + times_at(klen)); }
  const uint64_t* times(unsigned klen) const {
    return reinterpret_cast<const uint64_t*>(reinterpret_cast<const uint8_t*>(this) + times_at(klen));
  }
  uint64_t expires(unsigned klen) const {
    return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(times(klen)[1])).load(std::memory_order_relaxed);
  }
  void set_expires(unsigned klen, uint64_t v) {
    std::atomic_ref<uint64_t>(times(klen)[1]).store(v, std::memory_order_relaxed);
  }
  static HNode* make(const uint8_t* k, unsigned klen, const NftVerdictData& d, bool timed, uint64_t timeout,
                     uint64_t expires, NftElemCounter* counter) {
    void* mem = ::operator new(timed ? times_at(klen) + 16 : sizeof(HNode) + klen);
    HNode* n = new (mem) HNode;
    n->data = d;
    n->counter = counter;
    std::memcpy(n->key(), k, klen);
    if (timed) n->times(klen)[0] = timeout, n->times(klen)[1] = expires;
    return n;
  }
  // with_counter: the node owns its counter (not a copy left behind by a resize).
  static void destroy(HNode* n, bool with_counter = true) {
    if (with_counter) delete n->counter;
    n->~HNode();
    ::operator delete(n);
  }
};

// A bucket array; owns the nodes chained from it, and their counters unless a resize
// handed them to the copies in the next table.
struct NftSet::HTable {
  explicit HTable(size_t nbuckets) : mask(nbuckets - 1), b(new std::atomic<HNode*>[nbuckets]) {
    for (size_t i = 0; i < nbuckets; ++i) b[i].store(nullptr, std::memory_order_relaxed);
  }
  ~HTable() {
    for (size_t i = 0; i <= mask; ++i)
      for (HNode* n = b[i].load(std::memory_order_relaxed); n;) {
        HNode* next = n->next.load(std::memory_order_relaxed);
        HNode::destroy(n, owns_counters);
        n = next;
      }
  }
  size_t mask;
  std::unique_ptr<std::atomic<HNode*>[]> b;
  mutable bool owns_counters = true;
};

// Sorted, disjoint ranges; lo and hi are key_len() bytes each, back to back.
struct NftSet::IvTable {
  std::vector<uint8_t> lo, hi;
  std::vector<NftVerdictData> data;
  std::vector<uint8_t> prefix;  // as written, for listing
  std::vector<uint64_t> timeout, expires;  // sets with timeouts only
  std::vector<std::shared_ptr<NftElemCounter>> counters;  // empty when no element has one
};

NftSet::NftSet(std::string name, const NftSetSpec& spec, bool anonymous)
    : name_(std::move(name)), anonymous_(anonymous), fixed_size_(spec.size && !spec.dynamic), klen_(0), seed_(std::random_device{}()) {
  // The declaration without its elements (a million of them are not copied to be dropped).
  spec_.types = spec.types;
  spec_.typeof_keys = spec.typeof_keys;
  spec_.typeof_data = spec.typeof_data;
  spec_.map = spec.map;
  spec_.mark_data = spec.mark_data;
  spec_.interval = spec.interval;
  spec_.constant = spec.constant;
  spec_.timeouts = spec.timeouts;
  spec_.dynamic = spec.dynamic;
  spec_.counter = spec.counter;
  spec_.timeout_ns = spec.timeout_ns;
  spec_.size = spec.size;
  spec_.has_elements = spec.has_elements;
  for (NftType t : spec_.types) klen_ += nft_type_stride(t);
  if (spec_.interval) iv_.exchange(std::make_unique<const IvTable>());
  else ht_.exchange(std::make_unique<const HTable>(16));
}

NftSet::~NftSet() = default;

size_t NftSet::hash(const uint8_t* key) const {
  uint64_t h = seed_ ^ klen_;
  for (unsigned i = 0; i < klen_; i += 4) {  // keys are a multiple of 4 bytes
    uint32_t w;
    std::memcpy(&w, key + i, 4);
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  return static_cast<size_t>(h ^ (h >> 32));
}

const NftSet::HNode* NftSet::hfind(const HTable& t, const uint8_t* key) const {
  for (const HNode* n = t.b[hash(key) & t.mask].load(std::memory_order_acquire); n;
       n = n->next.load(std::memory_order_acquire))
    if (key_cmp(n->key(), key, klen_) == 0) return n;
  return nullptr;
}

NftSet::HNode* NftSet::make_node(const uint8_t* key, const NftVerdictData& d, uint64_t timeout, uint64_t expires,
                                 NftElemCounter* counter) const {
  return HNode::make(key, klen_, d, spec_.timeouts, timeout, expires, counter);
}

// mirrors nft_lookup_eval -> ops->lookup (nft_rhash_lookup / nft_rbtree_lookup), which
// pass over an element nft_set_elem_expired says is gone.
const NftVerdictData* NftSet::lookup(const uint8_t* key, uint64_t now, uint32_t len) const {
  if (const HTable* t = ht_.get()) {
    const HNode* n = hfind(*t, key);
    if (!n || (spec_.timeouts && expired(n->expires(klen_), now))) return nullptr;
    if (PP_UNLIKELY(n->counter != nullptr)) n->counter->add(len);  // nft_set_elem_update_expr
    return &n->data;
  }
  const IvTable* iv = iv_.get();
  // The last range whose lo <= key, then key <= its hi.
  size_t lo = 0, hi = iv->data.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (key_cmp(&iv->lo[mid * klen_], key, klen_) <= 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return nullptr;
  const size_t i = lo - 1;
  if (key_cmp(key, &iv->hi[i * klen_], klen_) > 0) return nullptr;
  if (spec_.timeouts && expired(iv->expires[i], now)) return nullptr;
  if (PP_UNLIKELY(!iv->counters.empty()) && iv->counters[i]) iv->counters[i]->add(len);
  return &iv->data[i];
}

// Frees what the hash writers unlinked or replaced, after one grace period taken with
// the insert lock released (a datapath thread may wait for that lock inside its read
// section).
void NftSet::free_retired(std::vector<std::unique_ptr<const HTable>>& old, std::vector<HNode*>& nodes) {
  if (old.empty() && nodes.empty()) return;
  rcu_synchronize();
  old.clear();
  for (HNode* n : nodes) HNode::destroy(n);
  nodes.clear();
}

// The kernel's set gc (nft_rhash_gc, nft_rbtree_gc) removes what has expired; here the
// next command on the set does, before it looks at the elements.
void NftSet::collect_expired(uint64_t now) {
  if (!spec_.timeouts) return;
  if (!spec_.interval) {
    std::vector<HNode*> gone;
    {
      std::lock_guard<std::mutex> lk(ins_mu_);
      HTable& t = const_cast<HTable&>(*ht_.get());
      for (size_t b = 0; b <= t.mask; ++b)
        unlink_where(t.b[b], [&](const HNode* n) { return expired(n->expires(klen_), now); }, false, gone);
    }
    std::vector<std::unique_ptr<const HTable>> none;
    free_retired(none, gone);
    return;
  }
  const IvTable* old = iv_.get();
  bool any = false;
  for (uint64_t e : old->expires) any = any || expired(e, now);
  if (!any) return;
  auto t = std::make_unique<IvTable>();
  for (size_t j = 0; j < old->data.size(); ++j) {
    if (expired(old->expires[j], now)) continue;
    t->lo.insert(t->lo.end(), &old->lo[j * klen_], &old->lo[j * klen_] + klen_);
    t->hi.insert(t->hi.end(), &old->hi[j * klen_], &old->hi[j * klen_] + klen_);
    t->data.push_back(old->data[j]);
    t->prefix.push_back(old->prefix[j]);
    t->timeout.push_back(old->timeout[j]);
    t->expires.push_back(old->expires[j]);
    if (!old->counters.empty()) t->counters.push_back(old->counters[j]);
  }
  count_ = t->data.size();
  iv_.replace(std::unique_ptr<const IvTable>(t.release()));
}

// Unlinks from one bucket's chain the nodes `pred` picks (the first only, with once) into
// `gone`, for the caller to free after a grace period. Under ins_mu_.
void NftSet::unlink_where(std::atomic<HNode*>& bucket, const std::function<bool(const HNode*)>& pred, bool once,
                          std::vector<HNode*>& gone) {
  std::atomic<HNode*>* link = &bucket;
  for (HNode* n = link->load(std::memory_order_relaxed); n; n = link->load(std::memory_order_relaxed)) {
    if (!pred(n)) {
      link = &n->next;
      continue;
    }
    link->store(n->next.load(std::memory_order_relaxed), std::memory_order_release);
    gone.push_back(n);
    count_.fetch_sub(1, std::memory_order_relaxed);
    if (once) return;
  }
}

void NftSet::hinsert(HTable& t, HNode* n) {
  std::atomic<HNode*>& head = t.b[hash(n->key()) & t.mask];
  n->next.store(head.load(std::memory_order_relaxed), std::memory_order_relaxed);
  head.store(n, std::memory_order_release);  // readers see the whole node or none of it
}

// Double the buckets: copies of every node (sharing their counters) into a new table,
// published at once; the caller frees the old table after a grace period (rhashtable's
// resize, done whole). Under ins_mu_.
std::unique_ptr<const NftSet::HTable> NftSet::grow() {
  const HTable* old = ht_.get();
  auto t = std::make_unique<HTable>((old->mask + 1) * 2);
  for (size_t i = 0; i <= old->mask; ++i)
    for (const HNode* n = old->b[i].load(std::memory_order_relaxed); n; n = n->next.load(std::memory_order_relaxed))
      hinsert(*t, HNode::make(n->key(), klen_, n->data, spec_.timeouts, spec_.timeouts ? n->times(klen_)[0] : 0,
                              spec_.timeouts ? n->expires(klen_) : 0, n->counter));
  old->owns_counters = false;
  return ht_.exchange(std::unique_ptr<const HTable>(t.release()));
}

// An element's counter as a command gives it: its own `counter packets N bytes M`, or a
// fresh one when the set counts every element.
static NftElemCounter* elem_counter(const NftElemSpec& e, bool set_counts) {
  if (!e.counter && !set_counts) return nullptr;
  auto* c = new NftElemCounter;
  c->packets.store(e.packets, std::memory_order_relaxed);
  c->bytes.store(e.bytes, std::memory_order_relaxed);
  return c;
}

Status NftSet::add(const std::vector<NftElemSpec>& elems, const std::vector<NftVerdictData>& data, bool exist_ok,
                      uint64_t now) {
  const uint32_t limit = spec_.size ? spec_.size : kNftMaxSetSize;
  for (size_t i = 0; i < elems.size(); ++i)
    if (elems[i].timeout_ns && !spec_.timeouts)
      return unexpected(elem_word(i) + ": set '" + name_ + "' has no timeouts (flags timeout)");
  collect_expired(now);
  // An element's expiry: now + its own timeout, else the set's (0: never).
  auto expiry = [&](const NftElemSpec& e) {
    const uint64_t t = e.timeout_ns ? e.timeout_ns : spec_.timeout_ns;
    return t ? now + t : 0;
  };
  auto own_timeout = [&](const NftElemSpec& e) { return e.timeout_ns != spec_.timeout_ns ? e.timeout_ns : 0; };
  if (!spec_.interval) {
    std::vector<std::unique_ptr<const HTable>> old;
    std::vector<HNode*> none;
    {
      std::lock_guard<std::mutex> lk(ins_mu_);
      const HTable* t = ht_.get();
      // Check first, so a failing command changes nothing (nft's transaction).
      size_t fresh = 0;
      std::vector<bool> skip(elems.size());
      std::vector<size_t> order(elems.size());
      for (size_t i = 0; i < elems.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return key_cmp(elems[a].lo.data(), elems[b].lo.data(), klen_) < 0;
      });
      for (size_t k = 0; k < order.size(); ++k) {
        const size_t i = order[k];
        if (elems[i].range)
          return unexpected(elem_word(i) + ": set '" + name_ + "': You must add 'flags interval' to your set declaration if you want to add prefix or range elements");
        const bool dup = hfind(*t, elems[i].lo.data()) != nullptr ||
                         (k > 0 && key_cmp(elems[order[k - 1]].lo.data(), elems[i].lo.data(), klen_) == 0);
        if (dup && !exist_ok) return unexpected(elem_word(i) + ": already in set '" + name_ + "' (File exists)");
        skip[i] = dup;
        fresh += !dup;
      }
      if (size() + fresh > limit)
        return unexpected("set '" + name_ + "' is full: " + std::to_string(limit) + " elements at most (Too many open files in system)");
      for (size_t i = 0; i < elems.size(); ++i) {
        if (skip[i]) continue;
        if (size() + 1 > (ht_.get()->mask + 1)) old.push_back(grow());  // load factor 1, as rhashtable grows at 75 %
        hinsert(const_cast<HTable&>(*ht_.get()), make_node(elems[i].lo.data(), data[i], own_timeout(elems[i]),
                                                           expiry(elems[i]), elem_counter(elems[i], spec_.counter)));
        count_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    free_retired(old, none);
    return {};
  }
  // Interval: merge the new ranges into a copy, refusing overlaps (nft_rbtree_insert's
  // -EEXIST / -ENOTEMPTY).
  const IvTable* old = iv_.get();
  struct R {
    const uint8_t* lo;
    const uint8_t* hi;
    NftVerdictData d;
    uint8_t prefix;
    long src;
    uint64_t timeout, expires;
    std::shared_ptr<NftElemCounter> counter;
  };
  std::vector<R> all;
  all.reserve(old->data.size() + elems.size());
  for (size_t i = 0; i < old->data.size(); ++i)
    all.push_back({&old->lo[i * klen_], &old->hi[i * klen_], old->data[i], old->prefix[i], -1,
                   spec_.timeouts ? old->timeout[i] : 0, spec_.timeouts ? old->expires[i] : 0,
                   old->counters.empty() ? nullptr : old->counters[i]});
  for (size_t i = 0; i < elems.size(); ++i) {
    if (key_cmp(elems[i].lo.data(), elems[i].hi.data(), klen_) > 0)
      return unexpected(elem_word(i) + ": range's first value is above its last");
    all.push_back({elems[i].lo.data(), elems[i].hi.data(), data[i], elems[i].prefix, static_cast<long>(i),
                   own_timeout(elems[i]), expiry(elems[i]), nullptr});
  }
  std::stable_sort(all.begin(), all.end(), [&](const R& a, const R& b) { return key_cmp(a.lo, b.lo, klen_) < 0; });
  std::vector<R> keep;
  keep.reserve(all.size());
  for (const R& r : all) {
    if (!keep.empty() && key_cmp(r.lo, keep.back().hi, klen_) <= 0) {
      const bool same = key_cmp(r.lo, keep.back().lo, klen_) == 0 && key_cmp(r.hi, keep.back().hi, klen_) == 0;
      if (same && exist_ok) continue;
      const long who = r.src >= 0 ? r.src : keep.back().src;
      return unexpected((who >= 0 ? elem_word(static_cast<size_t>(who)) + ": " : std::string()) +
                             (same ? "already in set '" + name_ + "' (File exists)"
                             : r.src >= 0 && keep.back().src >= 0 ? std::string("conflicting intervals specified")
                                                                  : "interval overlaps with an existing one in set '" + name_ + "'"));
    }
    keep.push_back(r);
  }
  if (keep.size() > limit)
    return unexpected("set '" + name_ + "' is full: " + std::to_string(limit) + " elements at most (Too many open files in system)");
  auto t = std::make_unique<IvTable>();
  t->lo.resize(keep.size() * klen_);
  t->hi.resize(keep.size() * klen_);
  bool counted = false;
  for (R& r : keep) {
    if (r.src >= 0) {
      if (NftElemCounter* c = elem_counter(elems[static_cast<size_t>(r.src)], spec_.counter)) r.counter.reset(c);
    }
    counted = counted || r.counter;
  }
  for (size_t i = 0; i < keep.size(); ++i) {
    std::memcpy(&t->lo[i * klen_], keep[i].lo, klen_);
    std::memcpy(&t->hi[i * klen_], keep[i].hi, klen_);
    t->data.push_back(keep[i].d);
    t->prefix.push_back(keep[i].prefix);
    if (spec_.timeouts) t->timeout.push_back(keep[i].timeout), t->expires.push_back(keep[i].expires);
    if (counted) t->counters.push_back(keep[i].counter);
  }
  count_ = keep.size();
  iv_.replace(std::unique_ptr<const IvTable>(t.release()));
  return {};
}

Status NftSet::remove(const std::vector<NftElemSpec>& elems, uint64_t now) {
  collect_expired(now);
  if (!spec_.interval) {
    std::vector<HNode*> gone;
    {
      std::lock_guard<std::mutex> lk(ins_mu_);
      HTable& t = const_cast<HTable&>(*ht_.get());
      for (size_t i = 0; i < elems.size(); ++i)
        if (!hfind(t, elems[i].lo.data()))
          return unexpected(elem_word(i) + ": not in set '" + name_ + "' (No such file or directory)");
      for (const NftElemSpec& e : elems)
        unlink_where(t.b[hash(e.lo.data()) & t.mask],
                     [&](const HNode* n) { return key_cmp(n->key(), e.lo.data(), klen_) == 0; }, true, gone);
    }
    std::vector<std::unique_ptr<const HTable>> none;
    free_retired(none, gone);  // no reader still walks an unlinked node
    return {};
  }
  const IvTable* old = iv_.get();
  std::vector<bool> drop(old->data.size());
  for (size_t i = 0; i < elems.size(); ++i) {
    const auto at = iv_index(*old, elems[i].lo.data());
    if (!at || drop[*at] || key_cmp(&old->hi[*at * klen_], elems[i].hi.data(), klen_) != 0)
      return unexpected(elem_word(i) + ": not in set '" + name_ + "' (No such file or directory)");
    drop[*at] = true;
  }
  auto t = std::make_unique<IvTable>();
  for (size_t j = 0; j < old->data.size(); ++j) {
    if (drop[j]) continue;
    t->lo.insert(t->lo.end(), &old->lo[j * klen_], &old->lo[j * klen_] + klen_);
    t->hi.insert(t->hi.end(), &old->hi[j * klen_], &old->hi[j * klen_] + klen_);
    t->data.push_back(old->data[j]);
    t->prefix.push_back(old->prefix[j]);
    if (spec_.timeouts) t->timeout.push_back(old->timeout[j]), t->expires.push_back(old->expires[j]);
    if (!old->counters.empty()) t->counters.push_back(old->counters[j]);
  }
  count_ = t->data.size();
  iv_.replace(std::unique_ptr<const IvTable>(t.release()));
  return {};
}

void NftSet::flush() {
  if (spec_.interval) {
    iv_.replace(std::make_unique<const IvTable>());
    count_ = 0;
    return;
  }
  std::vector<std::unique_ptr<const HTable>> old;
  std::vector<HNode*> none;
  {
    std::lock_guard<std::mutex> lk(ins_mu_);
    old.push_back(ht_.exchange(std::make_unique<const HTable>(16)));
    count_ = 0;
  }
  free_retired(old, none);
}

Status NftSet::bind_dynamic(const NftDynsetOp& op) {
  const std::string why = "set '" + name_ + "' cannot take elements from a rule: ";
  if (spec_.constant) return unexpected(why + "it is constant (Device or resource busy)");
  if (spec_.interval) return unexpected(why + "it has intervals (Operation not supported)");
  if (spec_.map) return unexpected(why + "it is a map (Operation not supported)");
  // A set declared with a size and without `flags dynamic` gets the kernel's fixed-size
  // hash, which has no update operation.
  if (fixed_size_) return unexpected(why + "its size is fixed without 'flags dynamic' (Operation not supported)");
  if (op.timeout_ns && !spec_.timeouts) return unexpected(why + "it has no timeouts (Operation not supported)");
  if (!spec_.size) spec_.size = 65535;  // nft_dynset_init
  // Buckets for the size up front (up to a million): the datapath adds without resizing.
  const size_t want = std::min<size_t>(std::bit_ceil(static_cast<size_t>(spec_.size)), size_t{1} << 20);
  std::vector<std::unique_ptr<const HTable>> old;
  std::vector<HNode*> none;
  {
    std::lock_guard<std::mutex> lk(ins_mu_);
    while (ht_.get()->mask + 1 < want) old.push_back(grow());
  }
  free_retired(old, none);
  return {};
}

// mirrors nft_dynset_eval: nft_rhash_update finds the element or makes one
// (nft_dynset_new, bounded by the set's size); `update` restarts a found element's
// expiry; the element's counter counts the packet either way.
bool NftSet::dynamic_update(const uint8_t* key, const NftDynsetOp& op, uint64_t now, uint32_t len) {
  const uint64_t timeout = op.timeout_ns ? op.timeout_ns : spec_.timeout_ns;
  auto found = [&](HNode* n) {
    if (op.update && spec_.timeouts && n->expires(klen_) != 0) n->set_expires(klen_, now + timeout);
    if (n->counter) n->counter->add(len);
    return true;
  };
  const HTable* t = ht_.get();
  if (HNode* n = const_cast<HNode*>(hfind(*t, key)); n && !(spec_.timeouts && expired(n->expires(klen_), now)))
    return found(n);
  std::lock_guard<std::mutex> lk(ins_mu_);
  t = ht_.get();
  if (HNode* n = const_cast<HNode*>(hfind(*t, key))) {
    if (spec_.timeouts && expired(n->expires(klen_), now)) {
      // Gone but not yet collected: it comes back as a new element would.
      n->set_expires(klen_, timeout ? now + timeout : 0);
      if (n->counter) n->counter->packets.store(0, std::memory_order_relaxed), n->counter->bytes.store(0, std::memory_order_relaxed);
    }
    return found(n);
  }
  const uint32_t limit = spec_.size ? spec_.size : kNftMaxSetSize;
  if (size() >= limit) return false;
  NftElemCounter* c = op.counter || spec_.counter ? new NftElemCounter : nullptr;
  const uint64_t own = op.timeout_ns != spec_.timeout_ns ? op.timeout_ns : 0;
  HNode* n = make_node(key, NftVerdictData{}, own, timeout ? now + timeout : 0, c);
  if (c) c->add(len);
  hinsert(const_cast<HTable&>(*t), n);
  count_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

static void put_counter(NftElem& e, const NftElemCounter* c) {
  if (!c) return;
  e.counter = true;
  e.packets = c->packets.load(std::memory_order_relaxed);
  e.bytes = c->bytes.load(std::memory_order_relaxed);
}

NftElem NftSet::elem_of(const HNode& n) const {
  NftElem e;
  std::memcpy(e.lo.data(), n.key(), klen_);
  e.hi = e.lo;
  e.data = n.data;
  if (spec_.timeouts) {
    e.timeout_ns = n.times(klen_)[0];
    e.expires = n.expires(klen_);
  }
  put_counter(e, n.counter);
  return e;
}

NftElem NftSet::elem_of(const IvTable& t, size_t i) const {
  NftElem e;
  std::memcpy(e.lo.data(), &t.lo[i * klen_], klen_);
  std::memcpy(e.hi.data(), &t.hi[i * klen_], klen_);
  e.range = true;
  e.prefix = t.prefix[i];
  e.data = t.data[i];
  if (spec_.timeouts) {
    e.timeout_ns = t.timeout[i];
    e.expires = t.expires[i];
  }
  if (!t.counters.empty()) put_counter(e, t.counters[i].get());
  return e;
}

std::optional<size_t> NftSet::iv_index(const IvTable& t, const uint8_t* lo) const {
  size_t a = 0, b = t.data.size();
  while (a < b) {
    const size_t mid = (a + b) / 2;
    if (key_cmp(&t.lo[mid * klen_], lo, klen_) < 0) a = mid + 1;
    else b = mid;
  }
  if (a < t.data.size() && key_cmp(&t.lo[a * klen_], lo, klen_) == 0) return a;
  return std::nullopt;
}

std::vector<NftElem> NftSet::elements(uint64_t now) const {
  std::vector<NftElem> out;
  out.reserve(size());
  if (const HTable* t = ht_.get()) {
    for (size_t i = 0; i <= t->mask; ++i)
      for (const HNode* n = t->b[i].load(std::memory_order_acquire); n; n = n->next.load(std::memory_order_acquire)) {
        NftElem e = elem_of(*n);
        if (!expired(e.expires, now)) out.push_back(e);
      }
    // nft lists a set's elements in value order; a concatenation's value is its padded
    // key read as one host-order (little-endian) number, so its last byte leads.
    if (spec_.types.size() > 1) {
      std::sort(out.begin(), out.end(), [&](const NftElem& a, const NftElem& b) {
        for (unsigned i = klen_; i-- > 0;)
          if (a.lo[i] != b.lo[i]) return a.lo[i] < b.lo[i];
        return false;
      });
    } else {
      std::sort(out.begin(), out.end(), [&](const NftElem& a, const NftElem& b) { return key_cmp(a.lo.data(), b.lo.data(), klen_) < 0; });
    }
    return out;
  }
  const IvTable* iv = iv_.get();
  for (size_t i = 0; i < iv->data.size(); ++i) {
    NftElem e = elem_of(*iv, i);
    if (!expired(e.expires, now)) out.push_back(e);
  }
  return out;
}

std::optional<NftElem> NftSet::element(const NftElemSpec& key, uint64_t now) const {
  if (const HTable* t = ht_.get()) {
    const HNode* n = hfind(*t, key.lo.data());
    if (!n) return std::nullopt;
    NftElem e = elem_of(*n);
    if (expired(e.expires, now)) return std::nullopt;
    return e;
  }
  const IvTable* iv = iv_.get();
  auto i = iv_index(*iv, key.lo.data());
  if (!i || key_cmp(&iv->hi[*i * klen_], key.hi.data(), klen_) != 0) return std::nullopt;
  NftElem e = elem_of(*iv, *i);
  if (expired(e.expires, now)) return std::nullopt;
  return e;
}

}  // namespace pktpath::nf
