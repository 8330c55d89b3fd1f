// The entry the script runner calls for one `nft` line.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "netfilter/nft_ruleset.h"

namespace pktpath::nf {

// Parse and apply one nft command line (`words` may start with "nft"). Output of
// `list ruleset` goes to `out` (nft's text, or one JSON document on one line when `json`
// or -j/--json is given). Errors go to `err` as "nft: word N 'W': message" (parse) or
// "nft: message" (apply). Returns 0 on success, 1 on bad input.
// `-f -` reads `stdin_text` when given (a script's here-document), else standard input,
// named /dev/stdin in errors as nft names it.
int nft_command(const std::vector<std::string>& words, NftRuleset& ruleset,
                NftDeviceResolver& resolver, std::ostream& out, std::ostream& err,
                bool json = false, const std::string* stdin_text = nullptr);

}  // namespace pktpath::nf
