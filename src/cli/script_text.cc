#include "cli/script_text.h"

#include <sstream>

#include "cli/script_vars.h"

namespace pktpath::cli {

bool parse_script(const std::string& text, std::vector<ScriptLine>& out, size_t* bad_line,
                  size_t* last_line, ScriptError& err) {
  out.clear();
  *bad_line = 0;
  *last_line = 0;
  if (text.find('\0') != std::string::npos) return fail(err, "", "binary data in script");
  std::istringstream lines(text);
  std::string line, expanded;
  std::vector<std::string> words;
  size_t lineno = 0;
  while (std::getline(lines, line)) {
    ++lineno;
    *last_line = lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ScriptCommand c;
    if (!expand_vars(line, expanded, err) || !tokenize_line(expanded, words, err) ||
        (!words.empty() && !parse_command(words, c, err))) {
      *bad_line = lineno;
      return false;
    }
    if (!words.empty()) out.push_back({lineno, std::move(c)});
  }
  return true;
}

}  // namespace pktpath::cli
