// Dispatch of the lines that parse into ExtCommands: tc (cli/tc/), nft, capture/tcpdump.
#include "cli/script.h"
#include "cli/tc/tc.h"
#include "sched/clsact.h"

namespace pktpath::cli {

std::optional<bool> parse_tc_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  auto r = tc::parse_tc(w);
  if (!r) {
    err = r.error();
    return false;
  }
  out = std::move(*r);
  return true;
}

std::optional<bool> parse_ext_command(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  if (w.empty()) return std::nullopt;
  if (auto r = parse_batch_ext(w, out, err)) return r;
  if (auto r = parse_netns_ext(w, out, err)) return r;
  if (w[0] == "clock") return parse_clock_ext(w, out, err);
  if (w[0] == "sysctl") return parse_sysctl_ext(w, out, err);
  if (w[0] == "ethtool") return parse_ethtool_ext(w, out, err);
  if (w[0] == "tc") return parse_tc_ext(w, out, err);
  if (w[0] == "nft") return parse_nft_ext(w, out, err);
  if (w[0] == "capture" || w[0] == "tcpdump") return parse_capture_ext(w, out, err);
  if (w[0] == "cat") return parse_proc_ext(w, out, err);
  return std::nullopt;
}

}  // namespace pktpath::cli
