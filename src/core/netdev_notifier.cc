// The netdevice notifier chain (net/core/dev.c's netdev_chain).
#include "core/netdev_notifier.h"

#include <algorithm>

namespace pktpath {

const char* netdev_event_name(NetdevEvent ev) {
  switch (ev) {
    case NetdevEvent::UP: return "NETDEV_UP";
    case NetdevEvent::DOWN: return "NETDEV_DOWN";
    case NetdevEvent::UNREGISTER: return "NETDEV_UNREGISTER";
  }
  return "?";
}

void NetdevSubscription::subscribe(NetdevNotifierChain& chain, Fn fn, void* priv) {
  reset();
  std::lock_guard g(chain.mu_);
  fn_ = fn;
  priv_ = priv;
  chain_ = &chain;
  chain.subs_.push_back(this);
}

void NetdevSubscription::reset() {
  // chain_ is only cleared under the chain's mutex (here or by ~NetdevNotifierChain);
  // the owner does not race its own reset() with the chain's destruction.
  NetdevNotifierChain* c = chain_;
  if (!c) return;
  std::lock_guard g(c->mu_);
  std::erase(c->subs_, this);
  chain_ = nullptr;
}

bool NetdevSubscription::subscribed() const { return chain_ != nullptr; }

NetdevNotifierChain::~NetdevNotifierChain() {
  std::lock_guard g(mu_);
  for (NetdevSubscription* s : subs_) s->chain_ = nullptr;
  subs_.clear();
}

void NetdevNotifierChain::call(NetdevEvent ev, NetDevice& dev) {
  std::lock_guard g(mu_);
  for (NetdevSubscription* s : subs_) s->fn_(s->priv_, ev, dev);
}

size_t NetdevNotifierChain::size() const {
  std::lock_guard g(mu_);
  return subs_.size();
}

}  // namespace pktpath
