#include "netfilter/nft_command.h"
#include "netfilter/nft_file.h"

namespace pktpath::nf {

int nft_command(const std::vector<std::string>& words, NftRuleset& ruleset,
                NftDeviceResolver& resolver, std::ostream& out, std::ostream& err, bool json) {
  NftParseResult r = nft_parse(words);
  if (auto* e = std::get_if<NftParseError>(&r)) {
    err << "nft: " << e->to_string() << "\n";
    return 1;
  }
  NftCommand& c = std::get<NftCommand>(r);
  c.json = c.json || json;
  if (c.op == NftOp::RUN_FILE) return nft_run_file(c.file, ruleset, resolver, out, err, c.json);
  std::string text;
  NftStatus s = ruleset.apply(c, resolver, &text);
  if (!s.ok) {
    err << "nft: " << s.error << "\n";
    return 1;
  }
  out << text;
  return 0;
}

}  // namespace pktpath::nf
