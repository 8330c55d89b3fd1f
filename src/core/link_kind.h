// Link kinds (rtnl_link_ops): what `ip link add ... type KIND` can create. Each driver
// file registers its kind with a static LinkKindRegistrar (rtnl_link_register).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/netdevice.h"

namespace pktpath {

struct LinkKind {
  const char* kind;
  const NetDeviceOps* ops;
  uint32_t flags;                 // IFF_NO_QUEUE, NETIF_F_LLTX, ...
  void (*setup)(NetDevice& dev);  // driver-private state; may be null
  // Kind-specific `ip link add|set ... type KIND NAME VALUE` options (IFLA_INFO_DATA):
  // the names this kind takes (nullptr-ended; null: none) and how to apply one
  // (newlink/changelink; while no traffic runs). Numbers are checked against min..max; a
  // text option takes the words up to the kind's next option name, joined by spaces,
  // and goes to set_text_option, which may refuse it; a flag takes no word.
  enum Value : uint8_t {
    kNumber,
    kText,
    kOutputPath,  // text naming a file the device writes (refused where scripts may not write)
    kInputPath,   // text naming a file the device reads
    kFlag,        // a word alone (`zerocopy`): set_option gets 1
  };
  struct Option {
    const char* name;
    uint64_t max;
    Value value = kNumber;
    uint64_t min = 0;  // numbers: the least accepted
  };
  const Option* options;
  void (*set_option)(NetDevice& dev, std::string_view name, uint64_t value);
  // dellink: called as the device is deleted (before it is closed), e.g. for veth to
  // take its peer with it. May be null.
  void (*dellink)(NetDevice& dev) = nullptr;
  bool (*set_text_option)(NetDevice& dev, std::string_view name, std::string_view value, std::string& err) = nullptr;
  // For a device with work of its own once up (a capture replay): called by the
  // control thread, on its Cpu `cpu`, between script lines and while no other traffic
  // runs. Writes out what the device buffers; true while the work still runs (the
  // caller keeps running `cpu`'s pending work); err set once when the device failed.
  // May be null.
  bool (*busy)(NetDevice& dev, Cpu& cpu, std::string& err) = nullptr;
  // Its work has no end of its own (a replay looping forever): the runner does not wait
  // for it after a line but keeps polling it while later lines run (`sleep` lets it
  // run), until the device goes down or the script ends. May be null.
  bool (*background)(const NetDevice& dev) = nullptr;
  // The device makes or uses objects of the host kernel (a tap's kernel interface, an
  // afpacket's socket on one): refused where scripts may not touch the host
  // (ScriptLimits::host_devices, the fuzzer).
  bool touches_host = false;
  // Its receive polls on the device's NAPI thread where one is set (NetDevice::napi_cpu,
  // `ip link set dev D threaded 1`): the poll shares nothing unguarded with the control
  // thread.
  bool threaded_napi = false;
};

void link_kind_register(const LinkKind& k);
struct LinkKindRegistrar {
  explicit LinkKindRegistrar(const LinkKind& k) { link_kind_register(k); }
};

// The kind's option called `name`, or null.
const LinkKind::Option* link_kind_option(const LinkKind& k, std::string_view name);

const LinkKind* link_kind_lookup(std::string_view kind);
const std::vector<LinkKind>& link_kinds();

}  // namespace pktpath
