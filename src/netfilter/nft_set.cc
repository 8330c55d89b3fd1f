// nftables set backends (see nft_set.h).
#include "netfilter/nft_set.h"

#include <algorithm>
#include <cstring>
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

// A hash node: the chain link, the element's data, then key_len() bytes of key, and in
// a set with timeouts the element's own timeout and its expiry (8-byte aligned).
struct NftSet::HNode {
  std::atomic<HNode*> next{nullptr};
  NftVerdictData data;
  uint8_t* key() { return reinterpret_cast<uint8_t*>(this + 1); }
  const uint8_t* key() const { return reinterpret_cast<const uint8_t*>(this + 1); }
  static size_t times_at(unsigned klen) { return sizeof(HNode) + ((klen + 7u) & ~7u); }
  uint64_t* times(unsigned klen) { return reinterpret_cast<uint64_t*>(reinterpret_cast<uint8_t*>(this) + times_at(klen)); }
  const uint64_t* times(unsigned klen) const {
    return reinterpret_cast<const uint64_t*>(reinterpret_cast<const uint8_t*>(this) + times_at(klen));
  }
  static HNode* make(const uint8_t* k, unsigned klen, const NftVerdictData& d, bool timed, uint64_t timeout,
                     uint64_t expires) {
    void* mem = ::operator new(timed ? times_at(klen) + 16 : sizeof(HNode) + klen);
    HNode* n = new (mem) HNode;
    n->data = d;
    std::memcpy(n->key(), k, klen);
    if (timed) n->times(klen)[0] = timeout, n->times(klen)[1] = expires;
    return n;
  }
  static void destroy(HNode* n) {
    n->~HNode();
    ::operator delete(n);
  }
};

// A bucket array; owns the nodes chained from it.
struct NftSet::HTable {
  explicit HTable(size_t nbuckets) : mask(nbuckets - 1), b(new std::atomic<HNode*>[nbuckets]) {
    for (size_t i = 0; i < nbuckets; ++i) b[i].store(nullptr, std::memory_order_relaxed);
  }
  ~HTable() {
    for (size_t i = 0; i <= mask; ++i)
      for (HNode* n = b[i].load(std::memory_order_relaxed); n;) {
        HNode* next = n->next.load(std::memory_order_relaxed);
        HNode::destroy(n);
        n = next;
      }
  }
  size_t mask;
  std::unique_ptr<std::atomic<HNode*>[]> b;
};

// Sorted, disjoint ranges; lo and hi are key_len() bytes each, back to back.
struct NftSet::IvTable {
  std::vector<uint8_t> lo, hi;
  std::vector<NftVerdictData> data;
  std::vector<uint8_t> prefix;  // as written, for listing
  std::vector<uint64_t> timeout, expires;  // sets with timeouts only
};

NftSet::NftSet(std::string name, const NftSetSpec& spec, bool anonymous)
    : name_(std::move(name)), anonymous_(anonymous), klen_(0), seed_(std::random_device{}()) {
  // The declaration without its elements (a million of them are not copied to be dropped).
  spec_.types = spec.types;
  spec_.map = spec.map;
  spec_.interval = spec.interval;
  spec_.constant = spec.constant;
  spec_.timeouts = spec.timeouts;
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

NftSet::HNode* NftSet::make_node(const uint8_t* key, const NftVerdictData& d, uint64_t timeout, uint64_t expires) const {
  return HNode::make(key, klen_, d, spec_.timeouts, timeout, expires);
}

// mirrors nft_lookup_eval -> ops->lookup (nft_rhash_lookup / nft_rbtree_lookup), which
// pass over an element nft_set_elem_expired says is gone.
const NftVerdictData* NftSet::lookup(const uint8_t* key, uint64_t now) const {
  if (const HTable* t = ht_.get()) {
    const HNode* n = hfind(*t, key);
    if (!n || (spec_.timeouts && expired(n->times(klen_)[1], now))) return nullptr;
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
  return &iv->data[i];
}

// The kernel's set gc (nft_rhash_gc, nft_rbtree_gc) removes what has expired; here the
// next command on the set does, before it looks at the elements.
void NftSet::collect_expired(uint64_t now) {
  if (!spec_.timeouts) return;
  if (!spec_.interval) {
    HTable& t = const_cast<HTable&>(*ht_.get());
    std::vector<HNode*> gone;
    for (size_t b = 0; b <= t.mask; ++b) {
      std::atomic<HNode*>* link = &t.b[b];
      for (HNode* n = link->load(std::memory_order_relaxed); n; n = link->load(std::memory_order_relaxed)) {
        if (expired(n->times(klen_)[1], now)) {
          link->store(n->next.load(std::memory_order_relaxed), std::memory_order_release);
          gone.push_back(n);
          --count_;
          continue;
        }
        link = &n->next;
      }
    }
    if (!gone.empty()) rcu_synchronize();
    for (HNode* n : gone) HNode::destroy(n);
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
  }
  count_ = t->data.size();
  iv_.replace(std::unique_ptr<const IvTable>(t.release()));
}

void NftSet::hinsert(HTable& t, HNode* n) {
  std::atomic<HNode*>& head = t.b[hash(n->key()) & t.mask];
  n->next.store(head.load(std::memory_order_relaxed), std::memory_order_relaxed);
  head.store(n, std::memory_order_release);  // readers see the whole node or none of it
}

// Double the buckets: copies of every node into a new table, published at once; the old
// table and its nodes are freed after a grace period (rhashtable's resize, done whole).
void NftSet::grow() {
  const HTable* old = ht_.get();
  auto t = std::make_unique<HTable>((old->mask + 1) * 2);
  for (size_t i = 0; i <= old->mask; ++i)
    for (const HNode* n = old->b[i].load(std::memory_order_relaxed); n; n = n->next.load(std::memory_order_relaxed))
      hinsert(*t, HNode::make(n->key(), klen_, n->data, spec_.timeouts, spec_.timeouts ? n->times(klen_)[0] : 0,
                              spec_.timeouts ? n->times(klen_)[1] : 0));
  ht_.replace(std::unique_ptr<const HTable>(t.release()));
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
    if (count_ + fresh > limit)
      return unexpected("set '" + name_ + "' is full: " + std::to_string(limit) + " elements at most (Too many open files in system)");
    for (size_t i = 0; i < elems.size(); ++i) {
      if (skip[i]) continue;
      if (count_ + 1 > (ht_.get()->mask + 1)) grow();  // load factor 1, as rhashtable grows at 75 %
      hinsert(const_cast<HTable&>(*ht_.get()),
              make_node(elems[i].lo.data(), data[i], own_timeout(elems[i]), expiry(elems[i])));
      ++count_;
    }
    return {};
  }
  // Interval: merge the new ranges into a copy, refusing overlaps (nft_rbtree_insert's
  // -EEXIST / -ENOTEMPTY).
  const IvTable* old = iv_.get();
  struct R { const uint8_t* lo; const uint8_t* hi; NftVerdictData d; uint8_t prefix; long src; uint64_t timeout, expires; };
  std::vector<R> all;
  all.reserve(old->data.size() + elems.size());
  for (size_t i = 0; i < old->data.size(); ++i)
    all.push_back({&old->lo[i * klen_], &old->hi[i * klen_], old->data[i], old->prefix[i], -1,
                   spec_.timeouts ? old->timeout[i] : 0, spec_.timeouts ? old->expires[i] : 0});
  for (size_t i = 0; i < elems.size(); ++i) {
    if (key_cmp(elems[i].lo.data(), elems[i].hi.data(), klen_) > 0)
      return unexpected(elem_word(i) + ": range's first value is above its last");
    all.push_back({elems[i].lo.data(), elems[i].hi.data(), data[i], elems[i].prefix, static_cast<long>(i),
                   own_timeout(elems[i]), expiry(elems[i])});
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
  for (size_t i = 0; i < keep.size(); ++i) {
    std::memcpy(&t->lo[i * klen_], keep[i].lo, klen_);
    std::memcpy(&t->hi[i * klen_], keep[i].hi, klen_);
    t->data.push_back(keep[i].d);
    t->prefix.push_back(keep[i].prefix);
    if (spec_.timeouts) t->timeout.push_back(keep[i].timeout), t->expires.push_back(keep[i].expires);
  }
  count_ = keep.size();
  iv_.replace(std::unique_ptr<const IvTable>(t.release()));
  return {};
}

Status NftSet::remove(const std::vector<NftElemSpec>& elems, uint64_t now) {
  collect_expired(now);
  if (!spec_.interval) {
    HTable& t = const_cast<HTable&>(*ht_.get());
    for (size_t i = 0; i < elems.size(); ++i)
      if (!hfind(t, elems[i].lo.data()))
        return unexpected(elem_word(i) + ": not in set '" + name_ + "' (No such file or directory)");
    std::vector<HNode*> gone;
    for (const NftElemSpec& e : elems) {
      std::atomic<HNode*>* link = &t.b[hash(e.lo.data()) & t.mask];
      for (HNode* n = link->load(std::memory_order_relaxed); n; n = link->load(std::memory_order_relaxed)) {
        if (key_cmp(n->key(), e.lo.data(), klen_) == 0) {
          link->store(n->next.load(std::memory_order_relaxed), std::memory_order_release);
          gone.push_back(n);
          --count_;
          break;
        }
        link = &n->next;
      }
    }
    if (!gone.empty()) rcu_synchronize();  // no reader still walks an unlinked node
    for (HNode* n : gone) HNode::destroy(n);
    return {};
  }
  const IvTable* old = iv_.get();
  std::vector<bool> drop(old->data.size());
  for (size_t i = 0; i < elems.size(); ++i) {
    size_t lo = 0, hi = old->data.size();  // the range starting exactly at the element's lo
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (key_cmp(&old->lo[mid * klen_], elems[i].lo.data(), klen_) < 0) lo = mid + 1;
      else hi = mid;
    }
    const bool found = lo < old->data.size() && !drop[lo] &&
                       key_cmp(&old->lo[lo * klen_], elems[i].lo.data(), klen_) == 0 &&
                       key_cmp(&old->hi[lo * klen_], elems[i].hi.data(), klen_) == 0;
    if (!found) return unexpected(elem_word(i) + ": not in set '" + name_ + "' (No such file or directory)");
    drop[lo] = true;
  }
  auto t = std::make_unique<IvTable>();
  for (size_t j = 0; j < old->data.size(); ++j) {
    if (drop[j]) continue;
    t->lo.insert(t->lo.end(), &old->lo[j * klen_], &old->lo[j * klen_] + klen_);
    t->hi.insert(t->hi.end(), &old->hi[j * klen_], &old->hi[j * klen_] + klen_);
    t->data.push_back(old->data[j]);
    t->prefix.push_back(old->prefix[j]);
    if (spec_.timeouts) t->timeout.push_back(old->timeout[j]), t->expires.push_back(old->expires[j]);
  }
  count_ = t->data.size();
  iv_.replace(std::unique_ptr<const IvTable>(t.release()));
  return {};
}

void NftSet::flush() {
  if (spec_.interval) iv_.replace(std::make_unique<const IvTable>());
  else ht_.replace(std::make_unique<const HTable>(16));
  count_ = 0;
}

std::vector<NftElem> NftSet::elements(uint64_t now) const {
  std::vector<NftElem> out;
  out.reserve(count_);
  if (const HTable* t = ht_.get()) {
    for (size_t i = 0; i <= t->mask; ++i)
      for (const HNode* n = t->b[i].load(std::memory_order_relaxed); n; n = n->next.load(std::memory_order_relaxed)) {
        NftElem e;
        std::memcpy(e.lo.data(), n->key(), klen_);
        e.hi = e.lo;
        e.data = n->data;
        if (spec_.timeouts) {
          e.timeout_ns = n->times(klen_)[0];
          e.expires = n->times(klen_)[1];
          if (expired(e.expires, now)) continue;
        }
        out.push_back(e);
      }
    std::sort(out.begin(), out.end(), [&](const NftElem& a, const NftElem& b) { return key_cmp(a.lo.data(), b.lo.data(), klen_) < 0; });
    return out;
  }
  const IvTable* iv = iv_.get();
  for (size_t i = 0; i < iv->data.size(); ++i) {
    NftElem e;
    std::memcpy(e.lo.data(), &iv->lo[i * klen_], klen_);
    std::memcpy(e.hi.data(), &iv->hi[i * klen_], klen_);
    e.range = true;
    e.prefix = iv->prefix[i];
    e.data = iv->data[i];
    if (spec_.timeouts) {
      e.timeout_ns = iv->timeout[i];
      e.expires = iv->expires[i];
      if (expired(e.expires, now)) continue;
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace pktpath::nf
