// `nft ...` lines: the netfilter parser and one ruleset per runner, which follows the
// runner's device events (a deleted device's chains are released).
#include <sstream>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "netfilter/nft_command.h"
#include "netfilter/nft_net.h"
#include "sched/clsact.h"
#include "sched/nf_dev_resolver.h"

namespace pktpath::cli {

namespace {

struct NftLine final : ExtLine {
  std::vector<std::string> words;
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    tc::DevTableNftResolver resolver(r.table());
    std::ostringstream out, errs;
    const int rc = nf::nft_command(words, nf::nft_ruleset(r.net()), resolver, out, errs, r.json(), here_doc());
    const std::string text = out.str();
    if (!text.empty()) {
      std::fputs(text.c_str(), r.out());
      if (text.back() != '\n') std::fputc('\n', r.out());
    }
    if (rc != 0) {
      std::string m = errs.str();
      while (!m.empty() && m.back() == '\n') m.pop_back();
      return fail(err, "nft", m);
    }
    return true;
  }
  bool reads_stdin() const override { return from_stdin; }
  bool from_stdin = false;  // nft -f -
};

}  // namespace

std::optional<bool> parse_nft_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  Result<nf::NftCommand> pr = nf::nft_parse(w);
  if (!pr) {
    const Error& e = pr.error();
    const std::string word = e.word.empty() ? (w.empty() ? "nft" : w.back()) : e.word;
    return fail(err, word, "nft: " + nf::nft_error_text(e));
  }
  auto line = std::make_shared<NftLine>();
  line->words = w;
  line->from_stdin = pr->op == nf::NftOp::RUN_FILE && pr->file == "-";
  out.line = std::move(line);
  return true;
}

}  // namespace pktpath::cli
