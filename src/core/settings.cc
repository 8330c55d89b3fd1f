#include "core/settings.h"

#include <mutex>
#include <vector>

namespace pktpath {

namespace {
std::mutex& settings_mu() {
  static std::mutex m;
  return m;
}
std::vector<Setting>& settings() {
  static std::vector<Setting> v;
  return v;
}
}  // namespace

void setting_register(Setting s) {
  std::lock_guard g(settings_mu());
  for (auto& e : settings())
    if (e.name == s.name) {
      e = std::move(s);
      return;
    }
  settings().push_back(std::move(s));
}

std::optional<Setting> setting_find(const std::string& name) {
  std::lock_guard g(settings_mu());
  for (const auto& e : settings())
    if (e.name == name) return e;
  return std::nullopt;
}

std::string setting_names() {
  std::lock_guard g(settings_mu());
  std::string s;
  for (const auto& e : settings()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

std::optional<std::string> setting_parse_on_off(const std::string& name, const std::string& value, bool* on) {
  if (value != "on" && value != "off") return name + ": expected on or off, not '" + value + "'";
  *on = value == "on";
  return std::nullopt;
}

}  // namespace pktpath
