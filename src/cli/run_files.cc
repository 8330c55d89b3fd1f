#include "cli/run_files.h"

#include <algorithm>
#include <filesystem>

#include <sys/stat.h>

namespace pktpath::cli {

// Two spellings of one file ("./x" and "x", a link to it) give one key: the absolute path
// with every link that exists resolved.
std::string RunFiles::key_of(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? std::filesystem::absolute(path, ec).lexically_normal().string() : p.string();
}

Status RunFiles::claim(const std::string& path, Use use, const void* owner, const std::string& what) {
  if (path == "-") return {};
  // A character device (/dev/null) keeps nothing a second writer could interleave with
  // or destroy.
  if (struct stat st; ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode)) return {};
  const std::string key = key_of(path);
  for (const Claim& c : claims_) {
    if (c.key != key || (c.owner == owner && c.use == use)) continue;
    if (c.use == Use::kWrite)
      return unexpected(path + ": already written by " + c.what + " in this run", path);
    if (use == Use::kWrite) return unexpected(path + ": read by " + c.what + " in this run; it would be overwritten", path);
  }
  std::erase_if(claims_, [&](const Claim& c) { return c.owner == owner && c.use == use; });
  claims_.push_back({key, path, use, owner, what});
  return {};
}

void RunFiles::release(const void* owner) {
  std::erase_if(claims_, [&](const Claim& c) { return c.owner == owner; });
}

}  // namespace pktpath::cli
