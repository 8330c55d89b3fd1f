// A hash table that readers search without locks while one writer at a time (holding
// its owner's lock) inserts and erases: the role rhashtable plays for flower's masks and
// nftables' hash sets. Buckets are singly linked lists published with release stores;
// when the table holds more entries than buckets, a bucket array twice as large, with
// fresh nodes, is built and published whole, and the old one retired, so an insert is
// O(1) amortised and a lookup walks one short chain.
//
// Readers: find() inside an RCU read-side section (core/rcu.h); what it returns stays
// valid until the reader's next quiescent state. Writers: insert/erase hand what readers
// may still see to the RcuRetireList given, which frees it after a grace period.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/rcu.h"

namespace pktpath {

// V: a small trivially copyable value (a pointer); entries are told apart by the caller's
// predicate on V, picked by their 64-bit hash.
template <class V>
class RcuHashTable {
 public:
  RcuHashTable() : table_(new Table(kMinBuckets)) {}
  ~RcuHashTable() { delete table_.load(std::memory_order_relaxed); }
  RcuHashTable(const RcuHashTable&) = delete;
  RcuHashTable& operator=(const RcuHashTable&) = delete;

  // Reader: the first entry with this hash for which eq(value) holds, or V{}.
  template <class Eq>
  V find(uint64_t hash, Eq&& eq) const {
    const Table* t = table_.load(std::memory_order_acquire);
    for (const Node* n = t->buckets[hash & t->mask].load(std::memory_order_acquire); n;
         n = n->next.load(std::memory_order_acquire))
      if (n->hash == hash && eq(n->value)) return n->value;
    return V{};
  }

  // Writer: adds an entry (duplicates are the caller's to refuse, with find first).
  void insert(uint64_t hash, V value, RcuRetireList& retired) {
    Table* t = table_.load(std::memory_order_relaxed);
    if (size_ + 1 > t->mask + 1) t = grow(t, retired);
    push(*t, new Node{hash, value});
    ++size_;
  }

  // Writer: removes the entry holding exactly `value`; false when there is none.
  bool erase(uint64_t hash, V value, RcuRetireList& retired) {
    Table* t = table_.load(std::memory_order_relaxed);
    std::atomic<Node*>* link = &t->buckets[hash & t->mask];
    for (Node* n = link->load(std::memory_order_relaxed); n; n = link->load(std::memory_order_relaxed)) {
      if (n->hash == hash && n->value == value) {
        // Readers on n go on to its successor (so n keeps its link); n is freed after
        // they are done.
        link->store(n->next.load(std::memory_order_relaxed), std::memory_order_release);
        retired.retire(std::unique_ptr<Node>(n));  // n alone: a Node frees no successor
        --size_;
        return true;
      }
      link = &n->next;
    }
    return false;
  }

  size_t size() const { return size_; }
  size_t buckets() const { return table_.load(std::memory_order_relaxed)->mask + 1; }

  // Writer (or with no writer running): every value, in no particular order.
  template <class F>
  void for_each(F&& fn) const {
    const Table* t = table_.load(std::memory_order_acquire);
    for (size_t b = 0; b <= t->mask; ++b)
      for (const Node* n = t->buckets[b].load(std::memory_order_acquire); n; n = n->next.load(std::memory_order_acquire))
        fn(n->value);
  }

 private:
  static constexpr size_t kMinBuckets = 4;
  struct Node {
    uint64_t hash;
    V value;
    std::atomic<Node*> next{nullptr};
  };
  struct Table {
    explicit Table(size_t n) : mask(n - 1), buckets(new std::atomic<Node*>[n]) {
      for (size_t i = 0; i < n; ++i) buckets[i].store(nullptr, std::memory_order_relaxed);
    }
    ~Table() {
      for (size_t b = 0; b <= mask; ++b)
        for (Node* n = buckets[b].load(std::memory_order_relaxed); n;) {
          Node* next = n->next.load(std::memory_order_relaxed);
          delete n;
          n = next;
        }
    }
    size_t mask;
    std::unique_ptr<std::atomic<Node*>[]> buckets;
  };

  static void push(Table& t, Node* n) {
    std::atomic<Node*>& head = t.buckets[n->hash & t.mask];
    n->next.store(head.load(std::memory_order_relaxed), std::memory_order_relaxed);
    head.store(n, std::memory_order_release);
  }

  // A table of twice the buckets with copies of every node, published; the old one (and
  // its nodes) retired.
  Table* grow(Table* old, RcuRetireList& retired) {
    auto* t = new Table((old->mask + 1) * 2);
    for (size_t b = 0; b <= old->mask; ++b)
      for (Node* n = old->buckets[b].load(std::memory_order_relaxed); n; n = n->next.load(std::memory_order_relaxed))
        push(*t, new Node{n->hash, n->value});
    table_.store(t, std::memory_order_release);
    retired.retire(std::unique_ptr<Table>(old));
    return t;
  }

  std::atomic<Table*> table_;
  size_t size_ = 0;
};

// A 64-bit hash of a key of whole 8-byte words (flower's masked key, a set element).
inline uint64_t rcu_hash_words(const uint64_t* w, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  for (size_t i = 0; i < n; ++i) {
    h ^= w[i];
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

}  // namespace pktpath
