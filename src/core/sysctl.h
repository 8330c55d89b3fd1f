// Sysctls: named settings whose values each Net holds (net.core.*, net.pktpath.*).
// A subsystem registers its own with a file-scope SysctlRegistrar in the file that owns
// the value (the kernel's ctl_table registered per netns); the table is immutable once
// static initialisation is over. `sysctl -w KEY=VALUE`, `sysctl KEY`, `sysctl -a` and
// pktgen's `--ab KEY=A|B` reach a Net's values only through it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace pktpath {

class Net;

struct Sysctl {
  const char* name;   // "net.core.dev_weight"
  const char* alias;  // a short name (`--ab bypass=on|off`), or nullptr
  const char* values;  // for messages, e.g. "on|off", "0|1", "N"
  // The value as `sysctl KEY` prints it.
  std::string (*get)(Net& net);
  // Applies a value to this Net, or says what is wrong with it (the value as the word).
  Status (*set)(Net& net, const std::string& value);
};

// Registers a sysctl (static initialisation only).
void sysctl_register(const Sysctl& s);
struct SysctlRegistrar {
  explicit SysctlRegistrar(const Sysctl& s) { sysctl_register(s); }
};

// By full name or alias; nullptr when unknown.
const Sysctl* sysctl_find(std::string_view name);
// Every sysctl, sorted by name (`sysctl -a`).
std::vector<const Sysctl*> sysctl_all();
// The aliases, comma-separated, sorted (for messages).
std::string sysctl_alias_names();

// Value parsers for set(): *out set, or what is wrong with the value.
Status sysctl_parse_on_off(const char* name, const std::string& value, bool* out);
Status sysctl_parse_uint(const char* name, const std::string& value, uint32_t lo, uint32_t hi, uint32_t* out);

}  // namespace pktpath
