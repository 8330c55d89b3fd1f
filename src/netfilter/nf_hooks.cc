// Hook registry (write side) and nf_hook_slow (read side).
#include "netfilter/nf_hooks.h"

#include <mutex>
#include <new>
#include <string>

#include "core/rcu.h"

namespace pktpath::nf {

namespace {
// nf_hook_mutex: serialises every writer of every device's hook heads.
std::mutex& hook_mutex() {
  static std::mutex m;
  return m;
}

// Build an array from `old` with `remove` left out and `add` inserted before the first
// entry of higher priority (mirrors nf_hook_entries_grow). nullptr for an empty result.
NfHookEntries* rebuild(const NfHookEntries* old, const NfHookOps* remove, const NfHookOps* add) {
  const uint32_t old_n = old ? old->size() : 0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < old_n; ++i)
    if (old->ops()[i] != remove) ++n;
  if (add) ++n;
  if (n == 0) return nullptr;
  NfHookEntries* e = NfHookEntries::create(n);
  NfHookEntry* out = e->mutable_entries();
  const NfHookOps** out_ops = e->mutable_ops();
  uint32_t k = 0;
  auto put = [&](const NfHookOps* o) {
    out[k] = NfHookEntry{o->hook, o->priv};
    out_ops[k] = o;
    ++k;
  };
  for (uint32_t i = 0; i < old_n; ++i) {
    const NfHookOps* o = old->ops()[i];
    if (o == remove) continue;
    if (add && add->priority < o->priority) {
      put(add);
      add = nullptr;
    }
    put(o);
  }
  if (add) put(add);
  return e;
}

bool contains(const NfHookEntries* e, const NfHookOps* ops) {
  if (!e) return false;
  for (uint32_t i = 0; i < e->size(); ++i)
    if (e->ops()[i] == ops) return true;
  return false;
}

// Publish `next` in place of `old`, wait for readers, free `old`. Called with the mutex
// held: writers are rare, and holding it keeps the frees in publication order.
void publish(std::atomic<const NfHookEntries*>& head, const NfHookEntries* old,
             const NfHookEntries* next) {
  (void)old;  // what the head holds: rcu_replace frees it
  rcu_replace(head, NfHookEntriesPtr(next));
}
constexpr const char* kNoHookFunction = "hook without a function";
constexpr const char* kAlreadyThere = "hook already registered on the device";
constexpr const char* kNotThere = "hook not registered on the device";

}  // namespace

const char* nf_verdict_name(NfVerdict v) {
  switch (v) {
    case NfVerdict::DROP: return "drop";
    case NfVerdict::ACCEPT: return "accept";
    case NfVerdict::STOLEN: return "stolen";
    case NfVerdict::QUEUE: return "queue";
    case NfVerdict::REPEAT: return "repeat";
    case NfVerdict::STOP: return "stop";
  }
  return "?";
}

const char* nf_hook_name(NfHookNum h) { return h == NfHookNum::INGRESS ? "ingress" : "egress"; }

NfHookEntries* NfHookEntries::create(uint32_t n) {
  const size_t bytes = sizeof(NfHookEntries) + n * sizeof(NfHookEntry) + n * sizeof(NfHookOps*);
  void* mem = ::operator new(bytes, std::align_val_t{alignof(NfHookEntry) < 16 ? 16 : alignof(NfHookEntry)});
  return new (mem) NfHookEntries(n);
}

void NfHookEntries::destroy(const NfHookEntries* e) {
  if (!e) return;
  ::operator delete(const_cast<NfHookEntries*>(e),
                    std::align_val_t{alignof(NfHookEntry) < 16 ? 16 : alignof(NfHookEntry)});
}

NfDeviceHooks::~NfDeviceHooks() {
  NfHookEntries::destroy(ingress.load(std::memory_order_relaxed));
  NfHookEntries::destroy(egress.load(std::memory_order_relaxed));
}

Status nf_register_hook(NfDeviceHooks& dev, const NfHookOps* ops) {
  if (!ops || !ops->hook) return unexpected(kNoHookFunction);
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(hook_mutex());
  auto& head = dev.head(ops->hooknum);
  const NfHookEntries* old = head.load(std::memory_order_relaxed);
  if (contains(old, ops)) return unexpected(kAlreadyThere);
  if (old && old->size() >= NfHookEntries::kMaxEntries)
    return unexpected("too many hooks on the device (at most " + std::to_string(NfHookEntries::kMaxEntries) + ")");
  publish(head, old, rebuild(old, nullptr, ops));
  return {};
}

Status nf_unregister_hook(NfDeviceHooks& dev, const NfHookOps* ops) {
  if (!ops) return unexpected(kNoHookFunction);
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(hook_mutex());
  auto& head = dev.head(ops->hooknum);
  const NfHookEntries* old = head.load(std::memory_order_relaxed);
  if (!contains(old, ops)) return unexpected(kNotThere);
  publish(head, old, rebuild(old, ops, nullptr));
  return {};
}

Status nf_replace_hook(NfDeviceHooks& dev, const NfHookOps* old_ops, const NfHookOps* new_ops) {
  if (!old_ops || !new_ops || !new_ops->hook) return unexpected(kNoHookFunction);
  if (old_ops->hooknum != new_ops->hooknum) return unexpected("the replacement is for another hook");
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(hook_mutex());
  auto& head = dev.head(old_ops->hooknum);
  const NfHookEntries* old = head.load(std::memory_order_relaxed);
  if (!contains(old, old_ops)) return unexpected(kNotThere);
  if (old_ops != new_ops && contains(old, new_ops)) return unexpected(kAlreadyThere);
  publish(head, old, rebuild(old, old_ops, new_ops));
  return {};
}

void nf_unregister_all(NfDeviceHooks& dev) {
  RcuWriterScope writer;
  std::lock_guard<std::mutex> g(hook_mutex());
  NfHookEntriesPtr in = rcu_publish(dev.ingress, NfHookEntriesPtr());
  NfHookEntriesPtr eg = rcu_publish(dev.egress, NfHookEntriesPtr());
  if (in || eg) rcu_synchronize();
}

// mirrors nf_hook_slow. A packet leaves here in exactly one state: still ours (ACCEPT),
// freed and counted once (DROP), or owned by a hook (STOLEN).
NfVerdict nf_hook_slow(const NfHookEntries* e, Packet* p, const NfHookState& st) {
  const NfHookEntry* h = e->entries();
  const uint32_t n = e->size();
  for (uint32_t i = 0; i < n; ++i) {
    const NfVerdict v = h[i].hook(h[i].priv, p, st);
    if (PP_LIKELY(v == NfVerdict::ACCEPT)) continue;
    if (v == NfVerdict::STOLEN) return NfVerdict::STOLEN;
    // DROP, and the verdicts pktpath has no machinery for: QUEUE is nf_queue with no
    // listener (Linux frees the packet there too); REPEAT/STOP/garbage would make Linux
    // WARN. All are drops so that the packet is never lost uncounted.
    st.cpu->free_reason(p, DropReason::NETFILTER_DROP);
    return NfVerdict::DROP;
  }
  return NfVerdict::ACCEPT;
}

}  // namespace pktpath::nf
