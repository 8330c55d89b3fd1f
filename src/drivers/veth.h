// veth: a pair of devices, each the other's wire (drivers/net/veth.c). What one end
// transmits the other receives through netif_rx, on the sending Cpu or the one RPS on
// the receiving end picks, or, with GRO on at the receiving end, through that end's NAPI
// ring (veth_set_gro). The ends may be in different Nets.
#pragma once

#include <string>

#include "core/dev_table.h"
#include "core/netdevice.h"

namespace pktpath {

// mirrors veth_newlink: `ip link add A type veth peer name B [netns NS]`. `a_cfg` goes
// into `table`, `b_cfg` into `peer_table` (the same table, or another Net's); an empty
// b name gets the first free "vethN" there. Both ends (A returned) or neither.
Result<NetDevice*> veth_newlink(DeviceTable& table, const NetDevice::Config& a_cfg, DeviceTable& peer_table,
                                NetDevice::Config b_cfg);

// mirrors veth_set_features for NETIF_F_GRO (`ethtool -K DEV gro on|off`): with GRO on
// (and while up) the end receives in NAPI mode: the peer's xmit puts frames on this end's
// ring of 256 and schedules its NAPI instance on the sending Cpu, whose poll hands them
// up (RPS applies). pktpath has no GRO engine: frames are not aggregated. Turning it off
// or setting the end down drains the ring (counted as rx_dropped). Not a veth: false
// with err "Operation not supported". Configuration: no traffic runs meanwhile.
bool veth_set_gro(NetDevice& dev, bool on, std::string& err);
bool veth_gro(const NetDevice& dev);  // false for other kinds

// mirrors veth_get_stats64: this end's counters with the pair's (rx from the peer's tx,
// plus the NAPI ring's counters on both sides). A veth only.
DevStatsSum veth_get_stats64(const NetDevice& dev);

// The other end, or nullptr (not a veth, or its peer is being deleted).
NetDevice* veth_peer(const NetDevice& dev);

}  // namespace pktpath
