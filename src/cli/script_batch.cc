// `ip [-force] -batch FILE` and `tc [-force] -batch FILE` (`-b FILE`), as iproute2's
// batch mode: each non-empty line of FILE ("-": standard input) is one `ip`/`tc`
// command, '#' starts a comment. When the line runs, FILE is read and its lines parsed
// and run in order; the first that fails ends the batch ("Command failed FILE:LINE",
// ip's words) unless -force, which reports each failure and goes on, the line failing
// at the end.
#include <cstdio>

#include "bpf/text_file.h"
#include "cli/script.h"
#include "cli/script_exec.h"

namespace pktpath::cli {

namespace {

// '#' to the end of the line is a comment (iproute2's makeargs), outside quotes.
std::string strip_comment(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

// The -b/-batch word among a line's leading options, if any (`-force -b FILE` too).
const std::string* batch_option(const std::vector<std::string>& words) {
  for (size_t i = 1; i < words.size() && words[i].size() > 1 && words[i][0] == '-'; ++i)
    if (words[i] == "-b" || words[i] == "-batch") return &words[i];
  return nullptr;
}

// Reads the file when it runs (as ip does: a batch may follow lines that make it) and
// runs each line as it is parsed.
struct BatchLine final : ExtLine {
  std::string tool;  // ip or tc
  std::string file;
  bool force = false;
  bool reads_stdin() const override { return file == "-"; }

  bool execute(ScriptRunner& r, ScriptError& err) const override {
    if (!r.limits().batch_files) return fail(err, file, "batch files are off in this runner");
    std::string text, why;
    if (file == "-" && here_doc()) text = *here_doc();
    else if (!bpf::read_text_file(file, bpf::kMaxScriptBytes, &text, &why)) return fail(err, file, why);
    size_t lineno = 0, at = 0, failed = 0, ran = 0;
    std::vector<std::string> words;
    while (at < text.size()) {
      size_t nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      std::string l = strip_comment(text.substr(at, nl - at));
      at = nl + 1;
      ++lineno;
      if (!l.empty() && l.back() == '\r') l.pop_back();
      ScriptError e;
      bool ok = tokenize_line(l, words, e);
      if (ok && words.empty()) continue;
      if (ok) {
        words.insert(words.begin(), tool);
        ScriptCommand c;
        if (const std::string* nested = batch_option(words))
          ok = fail(e, *nested, "a batch cannot run another batch");
        else
          ok = parse_command(words, c, e) && r.execute(c, e);
      }
      ++ran;
      if (ok) continue;
      const std::string where = "Command failed " + file + ":" + std::to_string(lineno);
      if (!force) return fail(err, e.word, e.msg + " (" + where + ")");
      std::fprintf(stderr, "%s%s\n%s\n", e.msg.c_str(), e.word.empty() ? "" : (" (at \"" + e.word + "\")").c_str(),
                   where.c_str());
      ++failed;
    }
    if (failed)
      return fail(err, file, std::to_string(failed) + " of " + std::to_string(ran) + " commands failed in " + file +
                                 " (-force)");
    return true;
  }
};

}  // namespace

std::optional<bool> parse_batch_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  if (w.empty() || (w[0] != "ip" && w[0] != "tc")) return std::nullopt;
  bool force = false, batch = false;
  std::string file;
  size_t i = 1;
  for (; i < w.size() && w[i].size() > 1 && w[i][0] == '-'; ++i) {
    if (w[i] == "-force") {
      force = true;
    } else if (w[i] == "-b" || w[i] == "-batch") {
      if (i + 1 >= w.size()) return fail(err, w[i], "Option \"" + w[i] + "\" needs a FILE argument");
      batch = true;
      file = w[++i];
    } else if (!batch) {
      return std::nullopt;  // another option: the ordinary line's parser
    } else {
      return fail(err, w[i], "unexpected \"" + w[i] + "\" after -batch FILE");
    }
  }
  if (!batch) {
    if (force) return fail(err, "-force", "-force is for batch mode (-batch FILE)");
    return std::nullopt;
  }
  if (i < w.size()) return fail(err, w[i], "unexpected \"" + w[i] + "\" after -batch FILE");
  auto line = std::make_shared<BatchLine>();
  line->tool = w[0];
  line->file = file;
  line->force = force;
  out.line = std::move(line);
  return true;
}

}  // namespace pktpath::cli
