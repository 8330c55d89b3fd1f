// `ethtool -K|--offload|--features DEV FEATURE on|off ...` script lines, as ethtool's
// feature setting. pktpath knows one feature, gro (generic-receive-offload), and only
// veth implements it (veth_set_features: GRO on puts the receiving end in NAPI mode;
// frames are not aggregated). The device is looked up when the line runs.
#include "cli/script.h"
#include "cli/script_exec.h"
#include "core/net.h"
#include "drivers/veth.h"

namespace pktpath::cli {

namespace {

struct EthtoolLine final : ExtLine {
  std::string dev;
  std::vector<bool> gro;  // each `gro on|off` in order

  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = r.net().devices().find(dev);
    if (!d) return fail(err, dev, "ethtool: device \"" + dev + "\" does not exist");
    r.drain_pending();  // no traffic runs between lines; settle queued work first
    for (const bool on : gro) {
      std::string msg;
      if (!veth_set_gro(*d, on, msg))
        return fail(err, dev, "ethtool: Could not change any device features: " + dev + ": " + msg);
    }
    return true;
  }
};

}  // namespace

std::optional<bool> parse_ethtool_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  if (w.empty() || w[0] != "ethtool") return std::nullopt;
  if (w.size() < 2 || (w[1] != "-K" && w[1] != "--offload" && w[1] != "--features"))
    return fail(err, w.size() < 2 ? w[0] : w[1], "ethtool: expected -K (--offload, --features) DEV FEATURE on|off");
  if (w.size() < 3) return fail(err, w[1], "ethtool: " + w[1] + " needs a device");
  auto line = std::make_shared<EthtoolLine>();
  line->dev = w[2];
  if (w.size() == 3) return fail(err, w[2], "ethtool: expected FEATURE on|off after the device");
  for (size_t i = 3; i < w.size(); i += 2) {
    if (w[i] != "gro" && w[i] != "generic-receive-offload")
      return fail(err, w[i], "ethtool: unknown feature \"" + w[i] + "\" (pktpath has gro)");
    if (i + 1 >= w.size()) return fail(err, w[i], "ethtool: " + w[i] + " needs on or off");
    if (w[i + 1] != "on" && w[i + 1] != "off") return fail(err, w[i + 1], "ethtool: expected on or off");
    line->gro.push_back(w[i + 1] == "on");
  }
  out.line = std::move(line);
  return true;
}

}  // namespace pktpath::cli
