// The `tc` script line (iproute2's tc/tc.c): global flags, then an object matched by
// prefix as tc does (`tc q` = qdisc, `tc f` = filter), then the object's own parser.
// Every tc line becomes one ExtCommand (script_ext.h), run when the script runs.
#pragma once

#include <string>
#include <vector>

#include "cli/script_ext.h"
#include "core/result.h"

namespace pktpath {
class NetDevice;
}

namespace pktpath::cli::tc {

// tc's global flags.
struct TcFlags {
  bool stats = false;  // -s
  bool json = false;   // -j
  bool details = false;  // -d
};

// The device a line acts on, with the pending work run so that what it shows is
// settled; nullptr after an error naming the device ("Cannot find device").
NetDevice* find_settled_device(ScriptRunner& r, const std::string& dev, ScriptError& err);

// words[0] is "tc".
Result<ExtCommand> parse_tc(const std::vector<std::string>& words);

// The objects (tc_qdisc.cc, tc_filter.cc): the lexer stands after the object word.
class Lexer;
Result<ExtCommand> parse_qdisc(Lexer& lx, const TcFlags& flags);
Result<ExtCommand> parse_filter(Lexer& lx, const TcFlags& flags);
Result<ExtCommand> parse_class(Lexer& lx, const TcFlags& flags);

}  // namespace pktpath::cli::tc
