#include "netfilter/nft_command.h"
#include "netfilter/nft_file.h"

#include <iostream>
#include <iterator>

namespace pktpath::nf {

int nft_command(const std::vector<std::string>& words, NftRuleset& ruleset,
                NftDeviceResolver& resolver, std::ostream& out, std::ostream& err, bool json,
                const std::string* stdin_text) {
  Result<NftCommand> r = nft_parse(words);
  if (!r) {
    err << "nft: " << nft_error_text(r.error()) << "\n";
    return 1;
  }
  NftCommand& c = *r;
  c.json = c.json || json;
  if (c.op == NftOp::RUN_FILE && c.file == "-") {
    if (stdin_text) return nft_run_text("/dev/stdin", *stdin_text, ruleset, resolver, out, err, c.json);
    // Bounded: one byte past the limit is enough for nft_run_text to refuse it.
    std::string text;
    std::istreambuf_iterator<char> it(std::cin), end;
    for (; it != end && text.size() <= kNftFileMaxBytes; ++it) text.push_back(*it);
    return nft_run_text("/dev/stdin", text, ruleset, resolver, out, err, c.json);
  }
  if (c.op == NftOp::RUN_FILE) return nft_run_file(c.file, ruleset, resolver, out, err, c.json);
  std::string text;
  Status s = ruleset.apply(c, resolver, &text);
  if (!s) {
    err << "nft: " << s.error().msg << "\n";
    return 1;
  }
  out << text;
  return 0;
}

}  // namespace pktpath::nf
