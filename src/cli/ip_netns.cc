// iproute2's namespace verbs as script lines:
//   ip netns add|del|list [NAME]           named namespaces besides the script's first
//   ip netns exec NAME <line>              an ip|tc|nft|pktgen|capture|tcpdump|sysctl line run there
//   ip -n NAME <ip line>, tc -n NAME ...   the same, as `ip -n` / `tc -n` (also -netns)
//   ip link set [dev] D netns NAME         moves D (dev_change_net_namespace)
// The script's first namespace is the default (init_net): it has no name and is not
// listed, as `ip netns list` does not list init_net.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "core/tap.h"
#include "netfilter/nft_net.h"
#include "sched/clsact.h"
#include "sched/qdisc.h"
#include "base/json_text.h"

namespace pktpath::cli {

namespace {

std::string no_netns(const std::string& name) {
  return "Cannot open network namespace \"" + name + "\": No such file or directory";
}

struct NetnsAddDel final : ExtLine {
  bool add = true;
  std::string name;
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    if (add) {
      if (!r.add_net(name))
        return fail(err, name, "Cannot create namespace file \"/var/run/netns/" + name + "\": File exists");
      return true;
    }
    if (!r.find_net(name)) return fail(err, name, no_netns(name));
    if (!r.del_net(name)) return fail(err, name, "namespace \"" + name + "\" is in use");
    return true;
  }
};

struct NetnsList final : ExtLine {
  bool execute(ScriptRunner& r, ScriptError&) const override {
    std::vector<Net*> nets = r.named_nets();
    // iproute2 lists the newest first.
    for (auto it = nets.rbegin(); it != nets.rend(); ++it) {
      if (r.json())
        std::fprintf(r.out(), "%s\n", json_text(nlohmann::json{{"name", (*it)->name()}}).c_str());
      else
        std::fprintf(r.out(), "%s\n", (*it)->name().c_str());
    }
    return true;
  }
};

// `ip netns exec NAME <line>` and `ip -n NAME` / `tc -n NAME`.
struct NetnsExec final : ExtLine {
  std::string name;
  std::shared_ptr<ScriptCommand> cmd;
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    Net* net = r.find_net(name);
    if (!net) return fail(err, name, no_netns(name));
    return r.execute_in(*net, *cmd, err);
  }
};

// mirrors dev_change_net_namespace: the device goes down, leaves its Net's hooks (nft
// chains, tc filters and clsact, taps) and qdiscs, and is registered in the target
// with its ifindex if that is free there.
struct LinkSetNetns final : ExtLine {
  std::string dev, name;
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    Net& from = r.net();
    NetDevice* d = from.devices().find(dev);
    if (!d) return fail(err, dev, "Cannot find device \"" + dev + "\"");
    Net* to = r.find_net(name);
    if (!to) return fail(err, name, no_netns(name));
    if (to == &from) return true;
    if (to->devices().find(dev))
      return fail(err, dev, "RTNETLINK answers: File exists (device \"" + dev + "\" in namespace " + name + ")");
    r.drain_pending();
    (void)from.devices().set_up(*d, false);  // dev_close: cannot fail
    from.devices().notifier().call(NetdevEvent::UNREGISTER, *d);  // nft chains, mirred targets
    tc::tc_dev_unregister(*d);
    tap_device_gone(*d);
    if (std::unique_ptr<Qdisc> old = d->graft_root(nullptr)) from.devices().retire(std::move(old));  // dev_shutdown
    d->set_root_is_default(true);
    std::string kind;
    std::unique_ptr<NetDevice> owned = from.devices().unlink(*d, &kind);
    if (auto moved = to->devices().adopt(std::move(owned), kind); !moved) return fail(err, dev, moved.error().msg);
    return true;
  }
};

bool want_words(const std::vector<std::string>& w, size_t n, ScriptError& err, const char* what) {
  if (w.size() < n) return fail(err, w.back(), std::string("expected ") + what);
  return true;
}

}  // namespace

std::optional<bool> parse_netns_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  if (w.size() < 2 || (w[0] != "ip" && w[0] != "tc")) return std::nullopt;
  // ip -n NAME ... / tc -n NAME ... (also -netns)
  if (w[1] == "-n" || w[1] == "-netns" || w[1] == "--netns") {
    if (!want_words(w, 4, err, "-n NAME and a command")) return false;
    std::vector<std::string> inner{w[0]};
    inner.insert(inner.end(), w.begin() + 3, w.end());
    auto line = std::make_shared<NetnsExec>();
    line->name = w[2];
    line->cmd = std::make_shared<ScriptCommand>();
    if (!parse_command(inner, *line->cmd, err)) return false;
    out.line = std::move(line);
    return true;
  }
  if (w[0] != "ip") return std::nullopt;
  if (w[1] == "netns") {
    const std::string verb = w.size() > 2 ? w[2] : "list";
    if (verb == "list" || verb == "ls" || verb == "show") {
      if (w.size() > 3) return fail(err, w[3], "ip netns list takes no arguments");
      out.line = std::make_shared<NetnsList>();
      return true;
    }
    if (verb == "add" || verb == "del" || verb == "delete") {
      if (w.size() != 4) return fail(err, w.back(), "expected ip netns " + verb + " NAME");
      // ip's netns_name_valid: a file name under /run/netns (NAME_MAX, no '/', not . or ..)
      if (w[3].empty() || w[3].size() > 255 || w[3].find('/') != std::string::npos || w[3] == "." || w[3] == "..")
        return fail(err, w[3], "Invalid netns name \"" + w[3] + "\"");
      auto line = std::make_shared<NetnsAddDel>();
      line->add = verb == "add";
      line->name = w[3];
      out.line = std::move(line);
      return true;
    }
    if (verb == "exec") {
      if (!want_words(w, 5, err, "ip netns exec NAME COMMAND")) return false;
      static const char* const kAllowed[] = {"ip", "tc", "nft", "pktgen", "capture", "tcpdump", "sysctl"};
      if (std::find(std::begin(kAllowed), std::end(kAllowed), w[4]) == std::end(kAllowed))
        return fail(err, w[4], "ip netns exec runs ip, tc, nft, pktgen, capture, tcpdump or sysctl lines");
      auto line = std::make_shared<NetnsExec>();
      line->name = w[3];
      line->cmd = std::make_shared<ScriptCommand>();
      if (!parse_command(std::vector<std::string>(w.begin() + 4, w.end()), *line->cmd, err)) return false;
      out.line = std::move(line);
      return true;
    }
    return fail(err, verb, "Command \"" + verb + "\" is unknown, try \"ip netns help\"");
  }
  // ip link set [dev] D netns NAME
  if (w.size() >= 6 && w[1] == "link" && w[2] == "set" && w[w.size() - 2] == "netns") {
    std::string dev;
    if (w.size() == 6) dev = w[3];
    else if (w.size() == 7 && w[3] == "dev") dev = w[4];
    else return fail(err, w[w.size() - 2], "expected ip link set [dev] D netns NAME");
    auto line = std::make_shared<LinkSetNetns>();
    line->dev = dev;
    line->name = w.back();
    out.line = std::move(line);
    return true;
  }
  return std::nullopt;
}

}  // namespace pktpath::cli
