// Parser for `nft` command lines of the netdev family, independent of any script runner:
// it takes the words of one line (already split by the shell-style tokenizer; quoting
// removed) and returns a typed command, or an error naming the offending word.
//
// Supported (everything else is rejected as "unsupported" naming the word):
//   nft [-a] [-j|--json] add table netdev T
//   nft ... add chain netdev T C ['{ type filter hook egress|ingress device D priority P; [policy accept|drop;] }']
//   nft ... add|insert rule netdev T C [match...] [counter [packets N bytes M]] [accept|drop]
//       match := meta mark [OP] N | meta protocol [OP] ip|ip6|arp|vlan|8021q|8021ad|N
//              | ip saddr|daddr [OP] A.B.C.D[/LEN] | tcp|udp sport|dport [OP] N[-M]
//       OP    := == | != | eq | ne
//   nft replace rule netdev T C handle H [match...] [counter] [accept|drop]
//   nft delete table netdev T | delete chain netdev T C | delete rule netdev T C handle H
//   nft flush ruleset | nft list ruleset | nft list table netdev T | nft list set|map netdev T S
//   nft add set|map netdev T S '{ type K [. K...] [: verdict]; [flags interval;] [size N;] [elements = { E, ... };] }'
//   nft delete|flush set|map netdev T S | nft add|delete element netdev T S '{ E, ... }'
//   nft -f FILE (nft_file.h)
//   rules also take SELECTOR [. SELECTOR...] [!=] @set | { E, ... }, SELECTOR vmap @map | { E : V, ... },
//   and jump|goto CHAIN, return
// The chain body may arrive as one quoted word or as separate words; both are accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "netfilter/nf_hooks.h"
#include "netfilter/nft_rule.h"
#include "netfilter/nft_set.h"
#include "netfilter/nft_value.h"

namespace pktpath::nf {

enum class NftOp : uint8_t {
  ADD_TABLE,
  ADD_CHAIN,
  ADD_RULE,     // append
  INSERT_RULE,  // prepend
  REPLACE_RULE, // replace the rule with `handle` in place (one publication)
  DELETE_TABLE,
  DELETE_CHAIN,
  DELETE_RULE,
  FLUSH_RULESET,
  LIST_RULESET,
  ADD_SET,         // add set|map
  DELETE_SET,
  FLUSH_SET,
  ADD_ELEMENT,
  DELETE_ELEMENT,
  LIST_SET,
  LIST_TABLE,
  RUN_FILE,        // nft -f FILE
};

// A chain's hook description; base == false for a regular chain (no hook, never run by a
// packet since jumps are not supported).
struct NftChainSpec {
  bool base = false;
  NfHookNum hook = NfHookNum::EGRESS;
  std::string device;
  int priority = 0;
  bool has_policy = false;
  NfVerdict policy = NfVerdict::ACCEPT;
};

struct NftCommand {
  NftOp op = NftOp::LIST_RULESET;
  std::string table;
  std::string chain;
  NftChainSpec chain_spec;
  NftRuleSpec rule;
  std::string set;        // set or map name
  bool map = false;       // the command said `map`
  NftSetSpec set_spec;    // ADD_SET
  std::vector<NftRawElem> elems;  // ADD_ELEMENT, DELETE_ELEMENT
  std::string file;       // RUN_FILE
  uint64_t handle = 0;  // DELETE_RULE, REPLACE_RULE
  bool json = false;    // -j / --json
  bool handles = false; // -a / --handle: `# handle N` after each object listed
};

// `words` may start with "nft" or not. An error names the offending word and its index in
// `words` (words.size() and no word when something is missing at the end).
Result<NftCommand> nft_parse(const std::vector<std::string>& words);
// A parse error as nft's one-line form: "word 5 'egres': unknown hook (...)".
std::string nft_error_text(const Error& e);

}  // namespace pktpath::nf
