// A private copy of a packet (pskb_copy's effect; the kernel often clones, pktpath
// copies: packets are small and a copy keeps ownership simple). The data and the
// metadata that classifiers read; not dev, the caller's to set. nullptr when the pool is
// exhausted.
#pragma once

#include "core/cpu.h"
#include "core/packet.h"

namespace pktpath {

inline Packet* packet_copy(Cpu& cpu, const Packet* p) {
  Packet* c = cpu.alloc();
  if (!c) return nullptr;
  uint8_t* dst = c->put(p->len);
  if (!dst || !p->copy_bits(0, dst, p->len)) {
    cpu.free(c);
    return nullptr;
  }
  c->protocol = p->protocol;
  c->pkt_type = p->pkt_type;
  c->mark = p->mark;
  c->priority = p->priority;
  c->hash = p->hash;
  c->queue_mapping = p->queue_mapping;
  c->vlan_tci = p->vlan_tci;
  c->vlan_proto = p->vlan_proto;
  c->vlan_present = p->vlan_present;
  c->tc_index = p->tc_index;
  return c;
}

}  // namespace pktpath
