// `${NAME}` and `${NAME:-default}` in script lines, expanded from the environment before
// a line is split into words, as a shell would. Scripts use it for run lengths, e.g.
// `--duration ${PP_DURATION:-2}`, so CI can run them in a short mode.
#pragma once

#include <string>

#include "cli/script.h"

namespace pktpath::cli {

// false with err (naming the variable) for an unset variable without a default or an
// unterminated `${`.
bool expand_vars(const std::string& line, std::string& out, ScriptError& err);

}  // namespace pktpath::cli
