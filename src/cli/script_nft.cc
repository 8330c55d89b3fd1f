// `nft ...` lines (the netfilter branch's parser and ruleset) and the cleanup a device
// needs before `ip link del` when hooks refer to it.
#include <sstream>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "netfilter/nft_command.h"
#include "sched/act_mirred.h"
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
    const int rc = nf::nft_command(words, nf::nft_ruleset(r.net()), resolver, out, errs, r.json());
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
};

// `ip link del [dev] D`: netfilter chains on D are detached and a device that a mirred
// action still sends to is refused, then the runner deletes it.
struct LinkDelLine final : ExtLine {
  std::string dev;
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = r.table().find(dev);
    if (d) {
      for (NetDevice* other : r.table().list()) {
        if (other == d) continue;
        for (tc::Dir dir : {tc::Dir::Egress, tc::Dir::Ingress}) {
          bool used = false;
          tc::filter_walk(*other, dir, [&](const tc::BpfFilter& f) {
            for (const auto& a : f.spec().actions)
              if (auto* m = dynamic_cast<const tc::MirredAction*>(a.get()); m && m->target() == d) used = true;
          });
          if (used)
            return fail(err, dev, "device \"" + dev + "\" is the target of a mirred action on " + other->name() +
                                      " (delete that filter first)");
        }
      }
      nf::nft_ruleset(r.net()).detach_device(&d->nf_hooks());
    }
    return r.execute(IpLinkDel{dev}, err);
  }
};

}  // namespace

std::optional<bool> parse_nft_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  nf::NftParseResult pr = nf::nft_parse(w);
  if (auto* e = std::get_if<nf::NftParseError>(&pr)) {
    const std::string word = e->word.empty() ? (w.empty() ? "nft" : w.back()) : e->word;
    return fail(err, word, "nft: " + e->to_string());
  }
  auto line = std::make_shared<NftLine>();
  line->words = w;
  out.line = std::move(line);
  return true;
}

std::optional<bool> parse_link_del_ext(const std::vector<std::string>& w, ExtCommand& out) {
  // Only the plain form; anything else goes to the runner's own parser and messages.
  if (w.size() < 4 || w[0] != "ip" || w[1] != "link" || (w[2] != "del" && w[2] != "delete")) return std::nullopt;
  std::string dev;
  if (w.size() == 4 && w[3] != "dev") dev = w[3];
  else if (w.size() == 5 && w[3] == "dev") dev = w[4];
  else return std::nullopt;
  auto line = std::make_shared<LinkDelLine>();
  line->dev = dev;
  out.line = std::move(line);
  return true;
}

}  // namespace pktpath::cli
