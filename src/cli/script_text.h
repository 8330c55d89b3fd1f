// A whole script's text -> parsed lines: `${VAR}` expansion, words, one command per
// non-empty line. `pktpath run` and the script fuzzers enter the parser here.
#pragma once

#include <string>
#include <vector>

#include "cli/script.h"

namespace pktpath::cli {

struct ScriptLine {
  size_t line;  // 1-based line number in the text
  ScriptCommand cmd;
};

// Parses every line before anything runs. false with err and *bad_line (the failing
// line's number) on the first bad line or on binary data (a NUL byte). *last_line is
// the number of lines read.
bool parse_script(const std::string& text, std::vector<ScriptLine>& out, size_t* bad_line,
                  size_t* last_line, ScriptError& err);

}  // namespace pktpath::cli
