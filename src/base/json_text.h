// JSON output text that never throws: strings that are not valid UTF-8 (a device name
// is any bytes but '/', ':' and whitespace, as the kernel's dev_valid_name allows) print
// with U+FFFD for each bad byte, as iproute2's JSON writer cannot refuse a name either.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pktpath {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}
// The same for an object whose keys keep their insertion order (iproute2's key order).
inline std::string json_text(const nlohmann::ordered_json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace pktpath
