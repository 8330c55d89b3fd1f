#include "cli/ip/ip_link_print.h"
#include "base/json_text.h"

#include <nlohmann/json.hpp>

namespace pktpath::cli {

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

nlohmann::json json_of(const LinkRow& r, bool stats) {
  nlohmann::json j = {{"ifindex", r.ifindex}};
  j["ifname"] = r.name;
  if (!r.link.empty()) j["link"] = r.link;
  j.update(nlohmann::json{{"flags", r.flags},
                      {"mtu", r.mtu},
                      {"qdisc", r.qdisc},
                      {"operstate", r.operstate},
                      {"txqlen", r.txqlen},
                      {"num_tx_queues", r.num_tx_queues},
                      {"link_type", r.link_type},
                      {"address", r.address},
                      {"broadcast", r.broadcast}});
  if (!r.link_kind.empty()) j["link_kind"] = r.link_kind;
  if (stats)
    j["stats64"] = {
        {"rx",
         {{"bytes", r.rx_bytes},
          {"packets", r.rx_packets},
          {"errors", 0},
          {"dropped", r.rx_dropped},
          {"over_errors", 0},
          {"multicast", 0}}},
        {"tx",
         {{"bytes", r.tx_bytes},
          {"packets", r.tx_packets},
          {"errors", 0},
          {"dropped", r.tx_dropped},
          {"carrier_errors", 0},
          {"collisions", 0}}}};
  return j;
}

// mirrors print_linkinfo's text lines (and print_link_stats64 for -s)
void print_text(std::FILE* out, const LinkRow& r, bool stats) {
  const std::string name = r.link.empty() ? r.name : r.name + "@" + r.link;
  std::fprintf(out, "%d: %s: <%s> mtu %u qdisc %s state %s mode DEFAULT group default qlen %u\n", r.ifindex,
               name.c_str(), joined(r.flags).c_str(), r.mtu, r.qdisc.c_str(), r.operstate.c_str(), r.txqlen);
  std::fprintf(out, "    link/%s %s brd %s\n", r.link_type.c_str(), r.address.c_str(), r.broadcast.c_str());
  if (!stats) return;
  std::fprintf(out, "    RX:  bytes packets errors dropped  missed   mcast\n");
  std::fprintf(out, "    %10llu %7llu %6d %7llu %7d %7d\n", static_cast<unsigned long long>(r.rx_bytes),
               static_cast<unsigned long long>(r.rx_packets), 0, static_cast<unsigned long long>(r.rx_dropped), 0, 0);
  std::fprintf(out, "    TX:  bytes packets errors dropped carrier collsns\n");
  std::fprintf(out, "    %10llu %7llu %6d %7llu %7d %7d\n", static_cast<unsigned long long>(r.tx_bytes),
               static_cast<unsigned long long>(r.tx_packets), 0, static_cast<unsigned long long>(r.tx_dropped), 0, 0);
}

}  // namespace

void print_links(std::FILE* out, const std::vector<LinkRow>& rows, const LinkShowFormat& f) {
  if (!f.json) {
    for (const LinkRow& r : rows) print_text(out, r, f.stats);
    return;
  }
  nlohmann::json arr = nlohmann::json::array();
  for (const LinkRow& r : rows) arr.push_back(json_of(r, f.stats));
  std::fprintf(out, "%s\n", f.pretty ? json_text(arr, 4).c_str() : json_text(arr).c_str());
}

}  // namespace pktpath::cli
