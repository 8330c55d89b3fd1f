// Netfilter hook points of the netdev family: per-device ingress and egress hook entry
// arrays, registration ordered by priority, and the per-packet runner.
//
// Mirrors net/netfilter/core.c (nf_hook_entries, nf_register_net_hook, nf_hook_slow) and
// include/linux/netfilter_netdev.h (nf_hook_egress, nf_hook_ingress).
//
// Read side (datapath): takes no lock. An NfHookEntries array is immutable once published
// in an NfDeviceHooks; readers load the pointer (acquire) and may use the array until their
// next RCU quiescent state (see core/rcu.h for the reader contract).
// Write side: register/unregister/replace are serialised by one global mutex (as
// nf_hook_mutex); each builds a new array, publishes it with a release store, waits for a
// grace period and then frees the old array. They return only after the grace period, so
// when nf_unregister_hook returns no reader can still be inside the removed hook and the
// caller may free the hook's private data at once.
//
// Packet ownership: nf_hook_run returns ACCEPT when the packet must continue (caller still
// owns it), DROP when a hook dropped it (the runner has already freed it with
// Cpu::free_reason(p, DropReason::NETFILTER_DROP), counted exactly once), STOLEN when a
// hook took it over (not freed, not counted here). After DROP or STOLEN the caller must
// not touch the packet. Hook functions must not free a packet they return DROP for.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/compiler.h"
#include "core/cpu.h"
#include "core/packet.h"
#include "core/result.h"

namespace pktpath::nf {

// Verdicts, with the values of include/uapi/linux/netfilter.h.
enum class NfVerdict : uint8_t {
  DROP = 0,
  ACCEPT = 1,
  STOLEN = 2,
  QUEUE = 3,   // no nfqueue in pktpath: handled as nf_queue with no listener (dropped)
  REPEAT = 4,  // not handled by nf_hook_slow either: dropped
  STOP = 5,    // deprecated in Linux: dropped
};
const char* nf_verdict_name(NfVerdict v);

// Hook numbers of the netdev family (enum nf_dev_hooks).
enum class NfHookNum : uint8_t { INGRESS = 0, EGRESS = 1 };
inline constexpr unsigned kNfNumHooks = 2;
const char* nf_hook_name(NfHookNum h);

// nf_hook_state: what a hook function learns besides the packet.
struct NfHookState {
  NfHookNum hook;
  Cpu* cpu;   // the datapath context running the hook (never null)
  void* dev;  // NfDeviceHooks::dev of the device (the NetDevice), opaque here
};

using NfHookFn = NfVerdict (*)(void* priv, Packet* p, const NfHookState& state);

// nf_hook_ops: one registration. Owned by the registrant; must stay alive and unchanged
// while registered. The same ops may be registered on one device/hook only once.
struct NfHookOps {
  NfHookFn hook = nullptr;
  void* priv = nullptr;
  int priority = 0;  // lower runs first; equal priorities run in registration order
  NfHookNum hooknum = NfHookNum::EGRESS;
};

// One slot of the hot array: what nf_hook_slow needs per hook, 16 bytes.
struct NfHookEntry {
  NfHookFn hook;
  void* priv;
};

// nf_hook_entries: immutable after publication. One allocation: header, the hot entries,
// then the ops pointers (only the writer side reads those).
class NfHookEntries {
 public:
  static constexpr uint32_t kMaxEntries = 1024;  // MAX_HOOK_COUNT

  uint32_t size() const { return num_; }
  const NfHookEntry* entries() const { return reinterpret_cast<const NfHookEntry*>(this + 1); }
  const NfHookOps* const* ops() const {
    return reinterpret_cast<const NfHookOps* const*>(entries() + num_);
  }

  // Writer side only.
  static NfHookEntries* create(uint32_t n);
  static void destroy(const NfHookEntries* e);
  NfHookEntry* mutable_entries() { return reinterpret_cast<NfHookEntry*>(this + 1); }
  const NfHookOps** mutable_ops() { return reinterpret_cast<const NfHookOps**>(mutable_entries() + num_); }

 private:
  explicit NfHookEntries(uint32_t n) : num_(n) {}
  uint32_t num_;
  [[maybe_unused]] uint32_t pad_ = 0;  // keeps the entries 16-byte aligned
};
static_assert(sizeof(NfHookEntries) == 8);

// Owner of an NfHookEntries array (freed with NfHookEntries::destroy), for RCU publication.
struct NfHookEntriesFree {
  void operator()(const NfHookEntries* e) const { NfHookEntries::destroy(e); }
};
using NfHookEntriesPtr = std::unique_ptr<const NfHookEntries, NfHookEntriesFree>;

// The hook heads a NetDevice embeds (dev->nf_hooks_ingress / nf_hooks_egress).
// Not copyable or movable: readers hold pointers into it.
struct NfDeviceHooks {
  std::atomic<const NfHookEntries*> ingress{nullptr};
  std::atomic<const NfHookEntries*> egress{nullptr};
  void* dev = nullptr;  // handed to hooks in NfHookState::dev (set once by the owner)

  NfDeviceHooks() = default;
  explicit NfDeviceHooks(void* owner) : dev(owner) {}
  NfDeviceHooks(const NfDeviceHooks&) = delete;
  NfDeviceHooks& operator=(const NfDeviceHooks&) = delete;
  // Frees whatever arrays are still published. Only when no reader can run on the device
  // any more (the device is unregistered and a grace period has passed).
  ~NfDeviceHooks();

  std::atomic<const NfHookEntries*>& head(NfHookNum h) {
    return h == NfHookNum::INGRESS ? ingress : egress;
  }
  const std::atomic<const NfHookEntries*>& head(NfHookNum h) const {
    return h == NfHookNum::INGRESS ? ingress : egress;
  }
};

// --- write side (mirrors nf_register_net_hook / nf_unregister_net_hook).
// Fails (the kernel's -EEXIST, -E2BIG, -EINVAL) if ops is already registered there, the
// device holds kMaxEntries hooks, or ops->hook is null.
Status nf_register_hook(NfDeviceHooks& dev, const NfHookOps* ops);
// Fails (-ENOENT) if ops is not registered there. Returns after a grace period.
Status nf_unregister_hook(NfDeviceHooks& dev, const NfHookOps* ops);
// Atomically swap one registration for another (same hook number) in a single publication:
// readers see either the old or the new hook, never neither. The new ops takes its own
// priority's place. Returns after a grace period (old_ops's priv may then be freed).
Status nf_replace_hook(NfDeviceHooks& dev, const NfHookOps* old_ops, const NfHookOps* new_ops);
// Remove every hook of the device (device teardown). Returns after a grace period.
void nf_unregister_all(NfDeviceHooks& dev);

// --- read side.
// mirrors nf_hook_slow: run entries in order from the first; see the ownership note above.
PP_NOINLINE NfVerdict nf_hook_slow(const NfHookEntries* e, Packet* p, const NfHookState& st);

// The hook point. With nothing attached (e == nullptr) this is one well-predicted branch;
// the state is only built on the slow path.
PP_ALWAYS_INLINE NfVerdict nf_hook_run(const NfHookEntries* e, Packet* p, Cpu& cpu,
                                       NfHookNum hook, void* dev) {
  if (PP_LIKELY(e == nullptr)) return NfVerdict::ACCEPT;
  return nf_hook_slow(e, p, NfHookState{hook, &cpu, dev});
}

// mirrors nf_hook_egress: call in dev_queue_xmit before the queue pick. Linux 6.1 runs it
// before tc egress (and skips it for packets tc redirected); see docs/netfilter.md.
PP_ALWAYS_INLINE NfVerdict nf_hook_egress(const NfDeviceHooks& h, Packet* p, Cpu& cpu) {
  return nf_hook_run(h.egress.load(std::memory_order_acquire), p, cpu, NfHookNum::EGRESS, h.dev);
}
// mirrors nf_hook_ingress: call in the receive path after tc ingress, before delivery.
PP_ALWAYS_INLINE NfVerdict nf_hook_ingress(const NfDeviceHooks& h, Packet* p, Cpu& cpu) {
  return nf_hook_run(h.ingress.load(std::memory_order_acquire), p, cpu, NfHookNum::INGRESS, h.dev);
}

}  // namespace pktpath::nf
