// The `pktpath run` script language: lines in the kernel tools' syntax (ip, tc), plus
// `sleep` and `send`, '#' comments. Parsing is separate from execution so
// a whole script is checked before anything is applied.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cli/script_ext.h"
#include "core/result.h"
#include "core/netdevice.h"
#include "tools/pktgen_args.h"

namespace pktpath::cli {


// Sets err and returns false: the one way script parsers and executors report a line's error.
inline bool fail(ScriptError& err, const std::string& word, std::string msg) {
  err.word = word;
  err.msg = std::move(msg);
  return false;
}

// Split a line into words: whitespace separated, '...' and "..." quote, a '#' that
// starts a word starts a comment. Unterminated quote -> error.
bool tokenize_line(const std::string& line, std::vector<std::string>& words, ScriptError& err);

// `type KIND NAME VALUE ...`: the kind's own options (core/link_kind.h), in order.
// A kind's `NAME VALUE` option: a number, or text for the kind's text options.
struct LinkOption {
  std::string name;
  uint64_t value = 0;
  std::string text;
  bool is_text = false;
};
using LinkOptions = std::vector<LinkOption>;
struct IpLinkAdd {
  NetDevice::Config cfg;
  std::string kind;
  LinkOptions opts;
  // veth: `peer [name] B [netns NS] [address MAC] [mtu N] [txqueuelen N]`.
  NetDevice::Config peer;
  std::string peer_netns;
};
struct IpLinkSet {
  std::string dev;
  std::optional<bool> up;
  std::optional<uint32_t> mtu;
  std::optional<uint64_t> rps_cpus;  // rx-0's RPS mask (hex, as sysfs takes it)
  std::optional<bool> threaded;      // /sys/class/net/D/threaded: NAPI polled by a thread of its own
  std::optional<std::array<uint8_t, 6>> address;
  std::optional<uint32_t> txqlen;
  std::optional<bool> promisc;
  std::string kind;  // with `type KIND opts...`
  LinkOptions opts;
};
struct IpLinkDel {
  std::string dev;
};
struct IpLinkShow {
  bool stats = false;
  bool details = false;  // ip -d
  bool json = false;    // ip -j
  bool pretty = false;  // ip -p
  std::string dev;  // empty: all
};
struct SleepCmd {
  uint64_t ns = 0;
};
// A plain fixed-count traffic source (pktgen is the full one):
// `send dev D count N [size S] [threads T]`.
struct SendCmd {
  std::string dev;
  uint64_t count = 0;
  uint32_t size = 60;
  uint32_t threads = 1;
  uint32_t priority = 0;  // skb->priority, for pfifo_fast/prio band selection
};

// `pktgen -i DEV ...` (the sample script's flags; tools/pktgen_args.h), or the long
// form `pktgen set KEY VALUE` (pktgen's /proc parameters, collected) and `pktgen start`
// (runs what was set), `pktgen reset`.
struct PktgenLine {
  enum Kind { kRun, kSet, kStart, kReset } kind = kRun;
  PktgenCommand run;
  std::string key, value;  // kSet
};

// `bpf bench ...`, `bench micro ...`: another pktpath command run from a script (its
// output inline), so one script can hold a document's whole measurement.
struct CommandLine {
  std::vector<std::string> words;
};

using ScriptCommand = std::variant<IpLinkAdd, IpLinkSet, IpLinkDel, IpLinkShow, SleepCmd, SendCmd, PktgenLine, CommandLine, ExtCommand>;

// Parse one tokenized, non-empty line. false with err on bad input.
bool parse_command(const std::vector<std::string>& words, ScriptCommand& out, ScriptError& err);

bool parse_u32(const std::string& s, uint32_t& v);
bool parse_u64(const std::string& s, uint64_t& v);
bool parse_mac(const std::string& s, std::array<uint8_t, 6>& mac);

}  // namespace pktpath::cli
