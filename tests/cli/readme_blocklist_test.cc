// The README's nft blocklist example, as written there: its `nft -f` file and its script
// lines are taken out of README.md and run; the 1000 frames from a blocked source are
// dropped and counted by the set lookup.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli/command.h"

namespace pktpath::cli {
namespace {

// The indented block after the line containing `marker`, dedented by 4 (up to `end`).
std::string block_after(const std::string& text, const std::string& marker, const std::string& end) {
  const size_t at = text.find(marker);
  if (at == std::string::npos) return {};
  std::istringstream in(text.substr(text.find('\n', at) + 1));
  std::string out;
  for (std::string l; std::getline(in, l);) {
    if (l.empty() && out.empty()) continue;
    if (l.rfind("    ", 0) != 0 || (!end.empty() && l == "    " + end)) break;
    out += l.substr(4) + "\n";
  }
  return out;
}

TEST(ReadmeBlocklist, RunsAsWrittenAndDropsTheBlockedSource) {
  std::ifstream f(std::string(PKTPATH_SOURCE_DIR) + "/README.md");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string readme = ss.str();
  const std::string nft = block_after(readme, "cat > blocklist.nft <<'EOF'", "EOF");
  const std::string script = block_after(readme, "and in the script:", "");
  ASSERT_NE(nft.find("table netdev filter"), std::string::npos) << "README's blocklist example moved";
  ASSERT_NE(script.find("nft -f blocklist.nft"), std::string::npos) << script;
  const std::string dir = ::testing::TempDir() + "readme_blocklist";
  std::system(("mkdir -p " + dir).c_str());
  std::ofstream(dir + "/blocklist.nft") << nft;
  std::string s = script;
  s.replace(s.find("nft -f blocklist.nft"), 20, "nft -f " + dir + "/blocklist.nft");
  std::ofstream(dir + "/run.pp") << s;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = run_main({"run", dir + "/run.pp"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << err;
  EXPECT_NE(out.find("ip saddr @blocked counter packets 1000 bytes 46000 drop"), std::string::npos) << out;
  EXPECT_NE(out.find("198.51.100.7, 198.51.100.99,"), std::string::npos) << out;
}

}  // namespace
}  // namespace pktpath::cli
