// The order in which the kernel dumps a classful qdisc's classes from its
// Qdisc_class_hash (net/sched/sch_api.c): buckets in turn, each chain from its head. A
// class goes to the head of its bucket (qdisc_class_hash_insert); once the table holds
// more than 3/4 of its size it doubles, each old bucket's chain moved head to tail onto
// the heads of the new ones (qdisc_class_hash_grow); it never shrinks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace pktpath {

class ClassHashOrder {
 public:
  // mirrors qdisc_class_hash_insert followed by qdisc_class_hash_grow
  void insert(uint32_t classid) {
    auto& b = buckets_[hash(classid, mask())];
    b.insert(b.begin(), classid);
    if (++elems_ * 4 <= buckets_.size() * 3) return;
    std::vector<std::vector<uint32_t>> grown(buckets_.size() * 2);
    const uint32_t m = static_cast<uint32_t>(grown.size() - 1);
    for (const auto& old : buckets_)
      for (uint32_t id : old) grown[hash(id, m)].insert(grown[hash(id, m)].begin(), id);
    buckets_ = std::move(grown);
  }
  // mirrors qdisc_class_hash_remove
  void remove(uint32_t classid) {
    auto& b = buckets_[hash(classid, mask())];
    if (auto it = std::find(b.begin(), b.end(), classid); it != b.end()) {
      b.erase(it);
      --elems_;
    }
  }
  // The classids as a walk of the table visits them.
  std::vector<uint32_t> order() const {
    std::vector<uint32_t> v;
    v.reserve(elems_);
    for (const auto& b : buckets_) v.insert(v.end(), b.begin(), b.end());
    return v;
  }

 private:
  // mirrors qdisc_class_hash
  static uint32_t hash(uint32_t id, uint32_t mask) {
    id ^= id >> 8;
    id ^= id >> 4;
    return id & mask;
  }
  uint32_t mask() const { return static_cast<uint32_t>(buckets_.size() - 1); }

  std::vector<std::vector<uint32_t>> buckets_ = std::vector<std::vector<uint32_t>>(4);
  size_t elems_ = 0;
};

}  // namespace pktpath
