// tc's command line: flags and object dispatch (mirrors tc.c's main and do_cmd).
#include "cli/tc/tc.h"

#include "cli/script_exec.h"
#include "cli/tc/tc_util.h"

namespace pktpath::cli::tc {

Result<ExtCommand> parse_tc(const std::vector<std::string>& words) {
  Lexer lx(words, 1);
  TcFlags flags;
  while (!lx.done() && lx.peek().size() > 1 && lx.peek()[0] == '-') {
    const std::string& f = lx.next();
    if (matches(f, "-stats") || matches(f, "-statistics"))
      flags.stats = true;
    else if (matches(f, "-json"))
      flags.json = true;
    else if (matches(f, "-details"))
      flags.details = true;
    else if (!matches(f, "-pretty"))
      return unexpected("unknown tc option \"" + f + "\"", f);
  }
  const std::string obj = lx.next();
  if (obj.empty()) return unexpected("tc needs an object (qdisc, class, filter)", "");
  if (matches(obj, "qdisc")) return parse_qdisc(lx, flags);
  if (matches(obj, "class")) return parse_class(lx, flags);
  if (matches(obj, "filter")) return parse_filter(lx, flags);
  return unexpected("unknown tc object \"" + obj + "\"", obj);
}

NetDevice* find_settled_device(ScriptRunner& r, const std::string& dev, ScriptError& err) {
  NetDevice* d = r.table().find(dev);
  if (!d) {
    fail(err, dev, "Cannot find device \"" + dev + "\"");
    return nullptr;
  }
  r.drain_pending();
  return d;
}

}  // namespace pktpath::cli::tc
