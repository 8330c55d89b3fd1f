// Packet: pktpath's sk_buff. A linear buffer with headroom (head <= data <= tail <= end),
// optional page fragments after the linear part, the metadata that classifiers and BPF
// ancillary loads read, and a user count for clone-style sharing.
//
// A Packet lives in a slot of a PacketPool: the struct, then its buffer. It is obtained
// from a Cpu (Cpu::alloc) and returned to one (Cpu::free / free_reason); never delete it.
//
// Concurrency: a Packet is owned by one thread at a time, except `users`, which holders of
// shared references may change concurrently (atomic).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/compiler.h"
#include "base/packet_frag.h"

namespace pktpath {

class Cpu;
class PacketPool;
class NetDevice;

// skb->pkt_type values (include/uapi/linux/if_packet.h).
enum PacketType : uint8_t {
  PACKET_HOST = 0,
  PACKET_BROADCAST = 1,
  PACKET_MULTICAST = 2,
  PACKET_OTHERHOST = 3,
  PACKET_OUTGOING = 4,
  PACKET_LOOPBACK = 5,
};


inline constexpr unsigned kMaxFrags = 4;
inline constexpr uint32_t kDefaultHeadroom = 128;  // NET_SKB_PAD plus room for encaps
inline constexpr uint32_t kDefaultBufSize = 2048;  // a pool's default buffer, headroom included

struct Packet {
  // --- cleared on every allocation: the first 64 bytes, zeroed with a few wide stores
  // (as __build_skb_around clears the head of the sk_buff). Keep them together.
  Packet* next;  // linkage: queues, bulk lists and the defer list chain through it
  NetDevice* dev;
  uint32_t len;       // linear bytes + fragment bytes (skb->len)
  uint32_t data_len;  // fragment bytes only (skb->data_len)
  uint32_t mark;
  uint32_t priority;
  uint32_t hash;
  int32_t skb_iif;          // ifindex the packet arrived on (0: locally generated)
  uint16_t protocol;        // ethertype, network byte order like skb->protocol
  uint16_t queue_mapping;
  uint16_t vlan_proto;      // network byte order
  uint16_t vlan_tci;
  uint16_t tc_index;
  uint8_t pkt_type;         // PacketType; PACKET_HOST == 0
  uint8_t nr_frags;
  bool vlan_present;
  bool xmit_more;           // more packets follow in this burst (netdev_xmit_more)
  uint16_t tc_class;       // the classful qdisc's leaf class minor it was queued in (trace)
  uint64_t tstamp_ns;      // when traced: the time its device's qdisc took it
  // --- end of the cleared block.

  // --- buffer geometry. Offsets are relative to head; head and end_off never change.
  uint8_t* head = nullptr;
  uint32_t data_off = 0;
  uint32_t tail_off = 0;
  uint32_t end_off = 0;

  // --- ownership.
  uint16_t alloc_cpu = 0xffff;  // id of the Cpu that allocated it (skb->alloc_cpu)
  std::atomic<uint32_t> users{1};
  PacketPool* pool = nullptr;   // where the slot goes back to
  uint64_t cb[2] = {0, 0};      // scratch for the layer holding the packet (skb->cb); not cleared

  PacketFrag frags[kMaxFrags];

  // --- geometry accessors.
  uint8_t* data() const { return head + data_off; }
  uint8_t* tail() const { return head + tail_off; }
  uint32_t headlen() const { return len - data_len; }  // skb_headlen
  uint32_t headroom() const { return data_off; }
  uint32_t tailroom() const { return data_len ? 0 : end_off - tail_off; }
  bool is_linear() const { return data_len == 0; }

  // skb_push: extend the data area at the front. nullptr (and no change) if the headroom
  // is too small; the kernel would panic (skb_under_panic).
  uint8_t* push(uint32_t n) {
    if (PP_UNLIKELY(n > data_off)) return nullptr;
    data_off -= n;
    len += n;
    return data();
  }
  // skb_pull: remove n bytes from the front of the linear part. nullptr if fewer remain.
  uint8_t* pull(uint32_t n) {
    if (PP_UNLIKELY(n > headlen())) return nullptr;
    data_off += n;
    len -= n;
    return data();
  }
  // skb_put: extend the linear data at the end; returns the start of the new bytes.
  // nullptr if the tailroom is too small or the packet already has fragments.
  uint8_t* put(uint32_t n) {
    if (PP_UNLIKELY(n > tailroom())) return nullptr;
    uint8_t* old = tail();
    tail_off += n;
    len += n;
    return old;
  }
  // skb_put on a packet just allocated, when the caller checked the pool's room
  // (total <= buf_size - headroom): no bounds test, nothing read back.
  uint8_t* put_fresh(uint32_t n) {
    uint8_t* old = head + tail_off;
    tail_off += n;
    len = n;
    return old;
  }
  // skb_reserve: move an empty packet's data pointer forward. false if not empty or no room.
  bool reserve(uint32_t n) {
    if (PP_UNLIKELY(len != 0 || n > end_off - tail_off)) return false;
    data_off += n;
    tail_off += n;
    return true;
  }
  // Copy bytes to the end of the linear part; false if they do not fit.
  bool append(const void* src, uint32_t n) {
    uint8_t* p = put(n);
    if (!p) return false;
    std::memcpy(p, src, n);
    return true;
  }
  // Attach a fragment (not copied; caller keeps it alive). false if kMaxFrags reached.
  bool add_frag(const uint8_t* p, uint32_t n) {
    if (PP_UNLIKELY(nr_frags == kMaxFrags)) return false;
    frags[nr_frags++] = PacketFrag{p, n};
    len += n;
    data_len += n;
    return true;
  }
  // Copy len bytes at offset off (linear and fragments) into dst; false if out of range
  // (skb_copy_bits).
  bool copy_bits(uint32_t off, void* dst, uint32_t n) const;

  // --- sharing. get() takes a user (skb_get); the packet is recycled when the last
  // user frees it. is_shared() is skb_shared().
  Packet* get() {
    users.fetch_add(1, std::memory_order_relaxed);
    return this;
  }
  bool is_shared() const { return users.load(std::memory_order_relaxed) != 1; }

  // Reset metadata and geometry for a fresh allocation (called by Cpu::alloc).
  PP_ALWAYS_INLINE void reset_for_alloc(uint32_t headroom, uint16_t cpu) {
    std::memset(static_cast<void*>(this), 0, kClearedBytes);
    data_off = headroom;
    tail_off = headroom;
    alloc_cpu = cpu;
    users.store(1, std::memory_order_relaxed);
  }
  // reset_for_alloc with the cleared block copied from `head` and `len` bytes put.
  PP_ALWAYS_INLINE void stamp_for_alloc(const void* head, uint32_t headroom, uint32_t len, uint16_t cpu) {
    std::memcpy(static_cast<void*>(this), head, kClearedBytes);
    data_off = headroom;
    tail_off = headroom + len;
    alloc_cpu = cpu;
    users.store(1, std::memory_order_relaxed);
  }
  static constexpr size_t kClearedBytes = 64;
};

static_assert(offsetof(Packet, head) == Packet::kClearedBytes,
              "the cleared block must end where the geometry starts");
// Cpu::alloc clears one constant line, then stores data_off, tail_off, alloc_cpu and users
// in the second; Cpu::free reads users, alloc_cpu and pool from that same line.
static_assert(Packet::kClearedBytes == kCacheLine, "the cleared block is one cache line");
static_assert(offsetof(Packet, next) == 0 && offsetof(Packet, tstamp_ns) + sizeof(uint64_t) == Packet::kClearedBytes,
              "the cleared block is next..tstamp_ns, no padding");
static_assert(offsetof(Packet, data_off) / kCacheLine == 1 && offsetof(Packet, users) / kCacheLine == 1 &&
                  (offsetof(Packet, pool) + sizeof(PacketPool*) - 1) / kCacheLine == 1,
              "alloc's other stores and free's loads share the second line");

// Singly-linked batch of packets, the sk_buff_head/list form used for bulk work.
struct PacketList {
  Packet* head = nullptr;
  Packet* tail_ = nullptr;
  uint32_t count = 0;

  bool empty() const { return head == nullptr; }
  void push_back(Packet* p) {
    p->next = nullptr;
    if (tail_) tail_->next = p; else head = p;
    tail_ = p;
    ++count;
  }
  // Append o's packets, leaving o empty.
  void splice(PacketList& o) {
    if (!o.head) return;
    if (tail_) tail_->next = o.head; else head = o.head;
    tail_ = o.tail_;
    count += o.count;
    o = PacketList{};
  }
  Packet* pop_front() {
    Packet* p = head;
    if (p) {
      head = p->next;
      if (!head) tail_ = nullptr;
      p->next = nullptr;
      --count;
    }
    return p;
  }
};

}  // namespace pktpath
