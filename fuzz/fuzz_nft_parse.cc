// libFuzzer target for the nft front end: each input line is split as a script line is
// (cli tokenizer), parsed by nft_parse, and applied by nft_command to one ruleset over a
// device table holding `foo` and `bar` (so chains really attach hooks). Every rejection
// must carry a message; the ruleset is flushed at the end of each input. The whole input is
// then read as an `nft -f` file (nested blocks, define, include) into a second ruleset.
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli/script.h"
#include "core/cpu.h"
#include "core/dev_table.h"
#include "core/net.h"
#include "core/packet_pool.h"
#include "netfilter/nft_command.h"
#include "netfilter/nft_file.h"
#include "netfilter/nft_parse.h"
#include "sched/nf_dev_resolver.h"

using namespace pktpath;

namespace {

struct World {
  PacketPool pool{PacketPool::Options{.capacity = 64, .buf_size = 512, .headroom = 64}};
  Cpu cpu{pool};
  Net net{cpu};
  tc::DevTableNftResolver resolver{net.devices()};
  World() {
    cpu.bind();
    std::string err;
    for (const char* n : {"foo", "bar"}) {
      NetDevice::Config c;
      c.name = n;
      if (!net.devices().add(c, "dummy").value_or(nullptr)) std::abort();
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  static World* w = new World;  // devices live across inputs; each input's ruleset does not
  const std::string text(reinterpret_cast<const char*>(data), size);
  nf::NftRuleset ruleset;
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> words;
  while (std::getline(lines, line)) {
    cli::ScriptError e;
    if (!cli::tokenize_line(line, words, e)) {
      if (e.msg.empty()) std::abort();
      continue;
    }
    if (words.empty()) continue;
    Result<nf::NftCommand> r = nf::nft_parse(words);
    if (!r) {
      if (r.error().msg.empty() || r.error().index == Error::kNoIndex) std::abort();
      continue;
    }
    std::ostringstream out, err;
    if (nf::nft_command(words, ruleset, w->resolver, out, err) != 0 && err.str().empty()) std::abort();
  }
  nf::NftRuleset from_file;
  std::ostringstream out, err;
  // Includes resolve under a directory that does not exist: the input reads no real file.
  if (nf::nft_run_text("/nonexistent-fuzz/input.nft", text, from_file, w->resolver, out, err, false) != 0 &&
      err.str().empty())
    std::abort();
  return 0;
}
