// `nft -f FILE`: nft's file syntax (nested `table netdev T { set ... chain ... }` blocks,
// flat commands, `define NAME = VALUE` with `$NAME`, `include "FILE"`, `#` comments)
// turned into the same commands `nft` lines give, then applied in order.
//
// Every statement of the file (and its includes) is parsed before the first is applied:
// a syntax error changes nothing. The file is then applied as one transaction
// (NftRuleset::apply_batch): an error while applying (a missing device, a set that is
// full) undoes what the statements before it did, as nft's batch is aborted whole.
#pragma once

#include <ostream>
#include <string>

#include "netfilter/nft_ruleset.h"

namespace pktpath::nf {

inline constexpr size_t kNftFileMaxBytes = size_t{256} << 20;
inline constexpr int kNftIncludeDepth = 16;

// Errors go to `err` as nft prints them: "FILE:LINE:COL: Error: message", the line, and a
// caret under the word. Returns 0, or 1 on bad input.
int nft_run_file(const std::string& path, NftRuleset& ruleset, NftDeviceResolver& resolver, std::ostream& out,
                 std::ostream& err, bool json);

// The same for a file's text already in memory (includes are still read from disk,
// relative to `name`'s directory).
int nft_run_text(const std::string& name, const std::string& text, NftRuleset& ruleset, NftDeviceResolver& resolver,
                 std::ostream& out, std::ostream& err, bool json);

}  // namespace pktpath::nf
