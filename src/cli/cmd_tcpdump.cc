// `pktpath tcpdump ...`: the parts of tcpdump that need no running script: -r FILE (print
// or copy a capture) and -d/-dd/-ddd (the compiled filter). A live capture (-i) is the
// `tcpdump` script line (script_capture.cc).
#include <cstdio>

#include "cli/command.h"
#include "cli/tcpdump_args.h"
#include "cli/tcpdump_print.h"

namespace pktpath::cli {

namespace {

constexpr const char* kUsage =
    "usage: pktpath tcpdump -r FILE [-c N] [-e] [-n] [-w FILE [-U]] [filter ...]\n"
    "       pktpath tcpdump [-i any] [-s SNAPLEN] [-r FILE] -d|-dd|-ddd [filter ...]\n"
    "  a live capture (-i DEV) runs as a `tcpdump ...` line of a script (pktpath run)\n";

int cmd_tcpdump(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  TcpdumpArgs a;
  Error err;
  if (!parse_tcpdump_args(args, "tcpdump", a, err)) {
    std::fputs(kUsage, stderr);
    return usage_error(err.msg);
  }
  if (a.dump) {
    bpf::Insns prog;
    std::string msg;
    if (!tcpdump_compile(a, &prog, &msg)) {
      std::fprintf(stderr, "pktpath tcpdump: filter: %s\n", msg.c_str());
      return 1;
    }
    std::fputs(tcpdump_listing(prog, a.dump).c_str(), stdout);
    return 0;
  }
  if (a.read.empty()) {
    std::fputs(kUsage, stderr);
    return usage_error(
        "tcpdump: a live capture runs in a script: `pktpath run FILE` with a `tcpdump -i DEV ...` "
        "line");
  }
  ReadRequest rq{a.read, a.filter, a.write, a.count, a.link_header, a.packet_buffered, a.verbose};
  const bool ok = tcpdump_read(rq, stdout, err);
  std::fflush(stdout);
  if (!ok) {
    std::fprintf(stderr, "pktpath tcpdump: %s\n", err.msg.c_str());
    return 1;
  }
  return 0;
}

CommandRegistration reg("tcpdump", "tcpdump -r FILE | -d|-dd|-ddd: `tcpdump [options] [filter]`",
                        cmd_tcpdump);

}  // namespace
}  // namespace pktpath::cli
