// The nft ruleset's device resolver over a DeviceTable: a chain naming device D attaches
// to D's NetDevice::nf_hooks(); an egress chain also installs D's egress hook pointer
// (the kernel's egress_needed_key), so dev_queue_xmit runs netfilter egress.
#pragma once

#include "core/dev_table.h"
#include "netfilter/nft_ruleset.h"
#include "sched/clsact.h"

namespace pktpath::tc {

class DevTableNftResolver final : public nf::NftDeviceResolver {
 public:
  explicit DevTableNftResolver(DeviceTable& t) : table_(t) {}
  nf::NfDeviceHooks* find_device(std::string_view name) override {
    NetDevice* d = table_.find(name);
    if (!d) return nullptr;
    // Whether the chain hooks egress or ingress is not known here; enabling the egress
    // hook pointer for a device with only ingress chains costs one extra (empty) check.
    netdev_nf_egress_enable(*d);
    return &d->nf_hooks();
  }

 private:
  DeviceTable& table_;
};

}  // namespace pktpath::tc
