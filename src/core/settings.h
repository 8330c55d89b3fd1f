// Named runtime settings (`--ab NAME=A|B` flips one between pktgen runs). Each subsystem
// registers its own with a static SettingRegistrar in the file that owns the switch, so
// a tool reads them by name without knowing the layers above core.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace pktpath {

struct Setting {
  std::string name;
  std::string values;  // for messages, e.g. "on|off"
  // Applies a value; an error message for a value the setting does not know.
  std::function<std::optional<std::string>(const std::string& value)> set;
};

// Registers (or replaces, by name) a setting.
void setting_register(Setting s);
// A copy of the named setting, nullopt when none is registered under that name.
std::optional<Setting> setting_find(const std::string& name);
// The registered names, comma-separated, in registration order.
std::string setting_names();

struct SettingRegistrar {
  explicit SettingRegistrar(Setting s) { setting_register(std::move(s)); }
};

// Parses "on"/"off" for a setting called `name`: the error message, or nullopt with *on set.
std::optional<std::string> setting_parse_on_off(const std::string& name, const std::string& value, bool* on);

}  // namespace pktpath
