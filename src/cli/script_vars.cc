#include "cli/script_vars.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace pktpath::cli {

namespace {

// Where a comment starts: a '#' beginning a word outside quotes (as tokenize_line).
size_t comment_start(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(line[i - 1])))) {
      return i;
    }
  }
  return line.size();
}

}  // namespace

bool expand_vars(const std::string& line, std::string& out, ScriptError& err) {
  out.clear();
  const size_t stop = comment_start(line);
  size_t i = 0;
  while (i < stop) {
    size_t at = line.find("${", i);
    if (at >= stop) {
      out.append(line, i);
      return true;
    }
    out.append(line, i, at - i);
    size_t end = line.find('}', at + 2);
    if (end == std::string::npos) {
      err = {"unterminated ${ in line", line.substr(at)};
      return false;
    }
    std::string body = line.substr(at + 2, end - at - 2);
    size_t dflt = body.find(":-");
    std::string name = body.substr(0, dflt);
    bool ok_name = !name.empty();
    for (char c : name) ok_name = ok_name && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok_name) {
      err = {"bad variable name \"" + name + "\"", "${" + body + "}"};
      return false;
    }
    const char* v = std::getenv(name.c_str());
    if (v && *v) {
      out += v;
    } else if (dflt != std::string::npos) {
      out += body.substr(dflt + 2);
    } else {
      err = {"variable " + name + " is not set", "${" + body + "}"};
      return false;
    }
    i = end + 1;
  }
  out.append(line, std::min(i, line.size()));
  return true;
}

}  // namespace pktpath::cli
