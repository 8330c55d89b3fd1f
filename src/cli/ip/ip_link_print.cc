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

// iproute2's key order (print_linkinfo): ifindex, link, ifname, flags, ... broadcast,
// then with -d the details, then with -s stats64.
nlohmann::ordered_json json_of(const LinkRow& r, const LinkShowFormat& f) {
  nlohmann::ordered_json j;
  j["ifindex"] = r.ifindex;
  if (!r.link.empty()) j["link"] = r.link;
  j["ifname"] = r.name;
  j["flags"] = r.flags;
  j["mtu"] = r.mtu;
  j["qdisc"] = r.qdisc;
  j["operstate"] = r.operstate;
  j["linkmode"] = "DEFAULT";
  j["group"] = "default";
  j["txqlen"] = r.txqlen;
  j["link_type"] = r.link_type;
  j["address"] = r.address;
  j["broadcast"] = r.broadcast;
  if (f.details) {
    j["promiscuity"] = r.promiscuity;
    j["allmulti"] = 0;
    j["min_mtu"] = r.min_mtu;
    j["max_mtu"] = r.max_mtu;
    if (!r.link_kind.empty()) j["linkinfo"] = {{"info_kind", r.link_kind}};
    j["num_tx_queues"] = r.num_tx_queues;
    j["num_rx_queues"] = 1;
  }
  if (f.stats) {
    nlohmann::ordered_json rx, tx;
    rx["bytes"] = r.rx_bytes;
    rx["packets"] = r.rx_packets;
    rx["errors"] = 0;
    rx["dropped"] = r.rx_dropped;
    rx["over_errors"] = 0;
    rx["multicast"] = 0;
    tx["bytes"] = r.tx_bytes;
    tx["packets"] = r.tx_packets;
    tx["errors"] = 0;
    tx["dropped"] = r.tx_dropped;
    tx["carrier_errors"] = 0;
    tx["collisions"] = 0;
    j["stats64"]["rx"] = rx;
    j["stats64"]["tx"] = tx;
  }
  return j;
}

// mirrors print_linkinfo's text lines (and print_link_stats64 for -s)
void print_text(std::FILE* out, const LinkRow& r, const LinkShowFormat& f) {
  const std::string name = r.link.empty() ? r.name : r.name + "@" + r.link;
  std::fprintf(out, "%d: %s: <%s> mtu %u qdisc %s state %s mode DEFAULT group default qlen %u\n", r.ifindex,
               name.c_str(), joined(r.flags).c_str(), r.mtu, r.qdisc.c_str(), r.operstate.c_str(), r.txqlen);
  std::fprintf(out, "    link/%s %s brd %s", r.link_type.c_str(), r.address.c_str(), r.broadcast.c_str());
  if (f.details) {
    std::fprintf(out, " promiscuity %u  allmulti 0 minmtu %u maxmtu %u \n", r.promiscuity, r.min_mtu, r.max_mtu);
    std::fprintf(out, "    %s%snumtxqueues %u numrxqueues 1 \n", r.link_kind.c_str(), r.link_kind.empty() ? "" : " ",
                 r.num_tx_queues);
  } else {
    std::fprintf(out, "\n");
  }
  if (!f.stats) return;
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
    for (const LinkRow& r : rows) print_text(out, r, f);
    return;
  }
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const LinkRow& r : rows) arr.push_back(json_of(r, f));
  std::fprintf(out, "%s\n", f.pretty ? json_text(arr, 4).c_str() : json_text(arr).c_str());
}

}  // namespace pktpath::cli
