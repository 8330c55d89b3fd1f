// Device events: the netdevice notifier chain (register_netdevice_notifier /
// call_netdevice_notifiers, include/linux/netdevice.h's NETDEV_* events).
//
// One chain per device table (the netns's chain). Subscribers are what keeps a pointer
// to a device it does not own: a mirred action's target, an nft netdev base chain's
// hook. On NETDEV_UNREGISTER they drop that pointer; the device table then waits for a
// grace period (synchronize_net) before it frees the device, so a reader that loaded the
// pointer just before is done with it.
//
// Concurrency: the chain's mutex guards its list; subscriptions may come and go on any
// thread (an action is freed by whichever tc writer retires it). Events are called on the
// control thread with the mutex held: a handler must not subscribe or unsubscribe.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace pktpath {

class NetDevice;

enum class NetdevEvent : uint8_t {
  UP,          // NETDEV_UP: the device was opened
  DOWN,        // NETDEV_DOWN: the device was closed
  UNREGISTER,  // NETDEV_UNREGISTER: the device is going away; drop every pointer to it
};
const char* netdev_event_name(NetdevEvent ev);

class NetdevNotifierChain;

// notifier_block with its registration: subscribed while it lives (or until reset()).
// Declare it as the owner's last member, so it unsubscribes before the rest goes away.
class NetdevSubscription {
 public:
  using Fn = void (*)(void* priv, NetdevEvent ev, NetDevice& dev);
  NetdevSubscription() = default;
  NetdevSubscription(NetdevNotifierChain& chain, Fn fn, void* priv) { subscribe(chain, fn, priv); }
  ~NetdevSubscription() { reset(); }
  NetdevSubscription(const NetdevSubscription&) = delete;
  NetdevSubscription& operator=(const NetdevSubscription&) = delete;

  // register_netdevice_notifier (without the replay of existing devices' events).
  void subscribe(NetdevNotifierChain& chain, Fn fn, void* priv);
  // unregister_netdevice_notifier; idempotent.
  void reset();
  bool subscribed() const;

 private:
  friend class NetdevNotifierChain;
  NetdevNotifierChain* chain_ = nullptr;  // guarded by the chain's mutex once subscribed
  Fn fn_ = nullptr;
  void* priv_ = nullptr;
};

class NetdevNotifierChain {
 public:
  NetdevNotifierChain() = default;
  // Subscriptions that outlive the chain are detached (their reset() does nothing).
  ~NetdevNotifierChain();
  NetdevNotifierChain(const NetdevNotifierChain&) = delete;
  NetdevNotifierChain& operator=(const NetdevNotifierChain&) = delete;

  // call_netdevice_notifiers: every subscriber, in subscription order.
  void call(NetdevEvent ev, NetDevice& dev);
  size_t size() const;

 private:
  friend class NetdevSubscription;
  mutable std::mutex mu_;
  std::vector<NetdevSubscription*> subs_;
};

}  // namespace pktpath
