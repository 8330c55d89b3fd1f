// The symbolic values nft reads and prints for the fields pktpath matches: ethertypes
// (`meta protocol`, `ether type`), IP protocols (`ip protocol`, `meta l4proto`, as
// /etc/protocols names them) and DSCP classes (`ip dscp`). Unknown values have no name:
// nft prints them as numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pktpath::nf {

struct NftName {
  const char* name;
  uint32_t value;
};

inline constexpr NftName kEtherTypes[] = {
    {"ip", 0x0800}, {"ip6", 0x86dd}, {"arp", 0x0806}, {"vlan", 0x8100}, {"8021q", 0x8100}, {"8021ad", 0x88a8}};
inline constexpr NftName kIpProtocols[] = {
    {"icmp", 1},  {"igmp", 2},  {"tcp", 6},        {"udp", 17},   {"ipv6", 41},    {"gre", 47},
    {"esp", 50},  {"ah", 51},   {"ipv6-icmp", 58}, {"icmpv6", 58}, {"sctp", 132},  {"udplite", 136}};
inline constexpr NftName kDscpClasses[] = {
    {"cs0", 0},   {"cs1", 8},   {"cs2", 16},  {"cs3", 24},  {"cs4", 32},  {"cs5", 40},  {"cs6", 48},
    {"cs7", 56},  {"af11", 10}, {"af12", 12}, {"af13", 14}, {"af21", 18}, {"af22", 20}, {"af23", 22},
    {"af31", 26}, {"af32", 28}, {"af33", 30}, {"af41", 34}, {"af42", 36}, {"af43", 38}, {"ef", 46}};

// The first name of a value (what nft prints), nullptr for none.
template <size_t N>
const char* nft_name_of(const NftName (&t)[N], uint32_t v) {
  for (const NftName& n : t)
    if (n.value == v) return n.name;
  return nullptr;
}
template <size_t N>
std::optional<uint32_t> nft_value_of(const NftName (&t)[N], std::string_view s) {
  for (const NftName& n : t)
    if (s == n.name) return n.value;
  return std::nullopt;
}

}  // namespace pktpath::nf
