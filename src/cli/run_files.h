// The files one `pktpath run` reads and writes: the script, --trace, pcap devices' rx and
// tx files, `capture -w`. Each file has at most one writer, and nothing writes a file
// the run reads: two writers would interleave their records and a writer on the script
// or a replayed capture would destroy it. Standard output ("-") and character devices
// (/dev/null) are not files here.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace pktpath::cli {

class RunFiles {
 public:
  enum class Use { kRead, kWrite };
  // Claims `path` for `owner` (`what` names it in a refusal: "device out", "--trace");
  // a claim the owner held before under the same use is replaced. Refused with the
  // other claimant's name when the file is written by another owner, or when this use
  // writes a file another owner reads.
  Status claim(const std::string& path, Use use, const void* owner, const std::string& what);
  // Every claim of `owner` (a device deleted, a capture stopped).
  void release(const void* owner);

 private:
  struct Claim {
    std::string key;  // the absolute path, links resolved
    std::string path;
    Use use;
    const void* owner;
    std::string what;
  };
  static std::string key_of(const std::string& path);
  std::vector<Claim> claims_;
};

}  // namespace pktpath::cli
