#include "cli/script_text.h"

#include <memory>
#include <optional>
#include <sstream>
#include <variant>

#include "cli/script_ext.h"
#include "cli/script_vars.h"

namespace pktpath::cli {

namespace {

struct HereDoc {
  std::string end;        // the line that closes it
  bool strip_tabs = false;  // <<-: leading tabs go, as the shell strips them
};

// `CMD ... <<END` or `CMD ... << END` (quotes around END already gone): the words lose
// the redirection.
std::optional<HereDoc> here_doc_word(std::vector<std::string>& words) {
  if (words.empty()) return std::nullopt;
  std::string w = words.back();
  size_t take = 1;
  if (words.size() >= 2 && (words[words.size() - 2] == "<<" || words[words.size() - 2] == "<<-")) {
    w = words[words.size() - 2] + words.back();
    take = 2;
  }
  if (w.rfind("<<", 0) != 0) return std::nullopt;
  HereDoc hd;
  w.erase(0, 2);
  if (!w.empty() && w[0] == '-') hd.strip_tabs = true, w.erase(0, 1);
  if (w.empty()) return std::nullopt;
  hd.end = w;
  words.resize(words.size() - take);
  return hd;
}

// The body up to the closing line, taken as written (no ${VAR} expansion, as a quoted
// here-document: nft's own $NAME defines pass through); nullptr when the text ends first.
std::shared_ptr<const std::string> read_here_doc(std::istringstream& lines, const HereDoc& hd, size_t& lineno) {
  auto body = std::make_shared<std::string>();
  std::string l;
  while (std::getline(lines, l)) {
    ++lineno;
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (hd.strip_tabs) l.erase(0, l.find_first_not_of('\t') == std::string::npos ? l.size() : l.find_first_not_of('\t'));
    if (l == hd.end) return body;
    *body += l;
    *body += '\n';
  }
  return nullptr;
}

}  // namespace

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
    if (!expand_vars(line, expanded, err) || !tokenize_line(expanded, words, err)) {
      *bad_line = lineno;
      return false;
    }
    const size_t at = lineno;
    std::shared_ptr<const std::string> body;
    if (std::optional<HereDoc> hd = here_doc_word(words)) {
      body = read_here_doc(lines, *hd, lineno);
      *last_line = lineno;
      if (!body) {
        *bad_line = at;
        return fail(err, "<<" + hd->end, "here-document not closed by a line '" + hd->end + "'");
      }
    }
    if (!words.empty() && !parse_command(words, c, err)) {
      *bad_line = at;
      return false;
    }
    if (body) {
      const auto* ext = std::get_if<ExtCommand>(&c);
      if (!ext || !ext->line->reads_stdin()) {
        *bad_line = at;
        return fail(err, words.empty() ? std::string("<<") : words[0],
                    "a here-document feeds a command that reads '-' (nft -f -, ip|tc -b -)");
      }
      ext->line->attach_here_doc(std::move(body));
    }
    if (!words.empty()) out.push_back({at, std::move(c)});
  }
  return true;
}

}  // namespace pktpath::cli
