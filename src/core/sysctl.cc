#include "core/sysctl.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <deque>

namespace pktpath {

namespace {
// Filled during static initialisation, read-only afterwards. A deque keeps the
// entries' addresses fixed while later registrations append.
std::deque<Sysctl>& table() {
  static std::deque<Sysctl> t;
  return t;
}
}  // namespace

void sysctl_register(const Sysctl& s) { table().push_back(s); }

const Sysctl* sysctl_find(std::string_view name) {
  for (const Sysctl& s : table())
    if (name == s.name || (s.alias && name == s.alias)) return &s;
  return nullptr;
}

std::vector<const Sysctl*> sysctl_all() {
  std::vector<const Sysctl*> v;
  for (const Sysctl& s : table()) v.push_back(&s);
  std::sort(v.begin(), v.end(), [](const Sysctl* a, const Sysctl* b) { return std::string_view(a->name) < b->name; });
  return v;
}

std::string sysctl_alias_names() {
  std::vector<std::string> names;
  for (const Sysctl& s : table())
    if (s.alias) names.emplace_back(s.alias);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

Status sysctl_parse_on_off(const char* name, const std::string& value, bool* out) {
  if (value != "on" && value != "off")
    return unexpected(std::string(name) + ": expected on or off, not '" + value + "'", value);
  *out = value == "on";
  return {};
}

// proc_dointvec_minmax's range check, on an unsigned number in base 0 as the kernel reads
// it (kstrtoul: 16, 0x10 and 020 are all sixteen).
Status sysctl_parse_uint(const char* name, const std::string& value, uint32_t lo, uint32_t hi, uint32_t* out) {
  const auto bad = [&] {
    return unexpected(std::string(name) + ": expected a number " + std::to_string(lo) + ".." + std::to_string(hi) +
                          ", not '" + value + "'",
                      value);
  };
  if (value.empty() || value.size() > 20 || !std::isdigit(static_cast<unsigned char>(value[0]))) return bad();
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 0);
  if (*end != '\0' || errno == ERANGE || v < lo || v > hi) return bad();
  *out = static_cast<uint32_t>(v);
  return {};
}

}  // namespace pktpath
