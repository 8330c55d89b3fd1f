// Script lines that parse into self-executing commands: every `tc` line (cli/tc/),
// `nft ...` (script_nft.cc), `capture ...` and `ip link del` (script_ext.cc dispatches). The runner's parser asks parse_ext_command first; a line it takes
// becomes an ExtCommand that executes itself against the runner.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace pktpath::cli {

class ScriptRunner;
// A parse or execution error: the message and the word it is about.
using ScriptError = ::pktpath::Error;

// One parsed line, applied later (the whole script is parsed before anything runs).
class ExtLine {
 public:
  virtual ~ExtLine() = default;
  virtual bool execute(ScriptRunner& runner, ScriptError& err) const = 0;
  // Whether the line reads standard input (a file argument "-": `nft -f -`, `tc -b -`);
  // such a line may take a here-document (`<<EOF` ... `EOF`) instead.
  virtual bool reads_stdin() const { return false; }
  // The here-document's body, given by the script parser before the line is shared.
  void attach_here_doc(std::shared_ptr<const std::string> body) const { here_doc_ = std::move(body); }

 protected:
  const std::string* here_doc() const { return here_doc_.get(); }

 private:
  mutable std::shared_ptr<const std::string> here_doc_;
};

struct ExtCommand {
  std::shared_ptr<const ExtLine> line;
};

// nullopt: not an extension line (the runner parses it). Otherwise whether it parsed;
// on success `out` holds the command. `out` is an ExtCommand slot.
std::optional<bool> parse_ext_command(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);

// The parts (each returns nullopt when the line is not theirs).
std::optional<bool> parse_tc_ext(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);
std::optional<bool> parse_nft_ext(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);
std::optional<bool> parse_capture_ext(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);
bool parse_fault_ext(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);
// `cat /proc/net/softnet_stat`, `cat /proc/net/snmp` (cli/script_proc.cc).
std::optional<bool> parse_proc_ext(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);
// `clock virtual|monotonic` (cli/script_clock.cc).
std::optional<bool> parse_clock_ext(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);
// `sysctl ...` (cli/sysctl.cc).
std::optional<bool> parse_sysctl_ext(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);
// `ethtool -K DEV gro on|off` (cli/ethtool.cc).
std::optional<bool> parse_ethtool_ext(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);
// `ip netns ...`, `ip -n NAME ...`, `tc -n NAME ...`, `ip link set dev D netns NAME`
// (cli/ip/ip_netns.cc).
std::optional<bool> parse_netns_ext(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);
// `ip|tc [-force] -batch FILE` (cli/script_batch.cc).
std::optional<bool> parse_batch_ext(const std::vector<std::string>& words, ExtCommand& out, ScriptError& err);

}  // namespace pktpath::cli
