// veth: a pair of devices, each the other's wire (drivers/net/veth.c). What one end
// transmits the other receives through netif_rx, on the sending Cpu or the one RPS on
// the receiving end picks. The ends may be in different Nets.
#pragma once

#include <string>

#include "core/dev_table.h"
#include "core/netdevice.h"

namespace pktpath {

// mirrors veth_newlink: `ip link add A type veth peer name B [netns NS]`. `a_cfg` goes
// into `table`, `b_cfg` into `peer_table` (the same table, or another Net's); an empty
// b name gets the first free "vethN" there. Both ends or neither: nullptr with err.
NetDevice* veth_newlink(DeviceTable& table, const NetDevice::Config& a_cfg, DeviceTable& peer_table,
                        NetDevice::Config b_cfg, std::string& err);

// The other end, or nullptr (not a veth, or its peer is being deleted).
NetDevice* veth_peer(const NetDevice& dev);

}  // namespace pktpath
