// nft -f (see nft_file.h): a lexer with locations, the nested blocks unfolded into flat
// commands, each parsed by nft_parse and applied by the ruleset.
#include "netfilter/nft_file.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "netfilter/nft_parse.h"

namespace pktpath::nf {

namespace {

struct Source {
  std::string path;
  std::vector<std::string> lines;
};

struct FTok {
  std::string text;
  int src = 0;
  int line = 0;  // 1-based
  int col = 0;   // 1-based
  bool nl = false;  // an end of line
};

// Where a word came from, for error messages.
struct Loc {
  int src = -1;
  int line = 0, col = 0, width = 1;
};
Loc loc(const FTok& t) { return {t.src, t.line, t.col, t.text.empty() ? 1 : static_cast<int>(t.text.size())}; }

struct FileError {
  FileError(const FTok& t, std::string m) : at(loc(t)), message(std::move(m)) {}
  FileError(const Loc& l, std::string m) : at(l), message(std::move(m)) {}
  Loc at;
  std::string message;
};

class Reader {
 public:
  std::vector<Source> sources;
  std::map<std::string, std::vector<FTok>> defines;

  // Tokens of a file, its includes expanded and $names replaced.
  void read(const std::string& path, const FTok* from, int depth, std::vector<FTok>& out) {
    if (depth > kNftIncludeDepth) throw FileError{*from, "include nested deeper than " + std::to_string(kNftIncludeDepth)};
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      if (from) throw FileError{*from, "cannot open '" + path + "': No such file or directory"};
      throw FileError{FTok{"", -1, 0, 0, false}, "cannot open '" + path + "': No such file or directory"};
    }
    std::string text;
    char buf[65536];
    while (f.read(buf, sizeof buf) || f.gcount() > 0) {
      text.append(buf, static_cast<size_t>(f.gcount()));
      if (text.size() > kNftFileMaxBytes)
        throw FileError{from ? *from : FTok{"", -1, 0, 0, false}, "'" + path + "' is larger than " +
                                                                    std::to_string(kNftFileMaxBytes >> 20) + " MiB"};
    }
    read_text(path, text, depth, out);
  }

  void read_text(const std::string& path, const std::string& text, int depth, std::vector<FTok>& out) {
    const int src = static_cast<int>(sources.size());
    sources.push_back({path, {}});
    std::vector<FTok> raw = lex(text, src);
    out.reserve(out.size() + raw.size());
    // Directives: include "F", define NAME = words to the end of the line.
    for (size_t i = 0; i < raw.size(); ++i) {
      const FTok& t = raw[i];
      const bool stmt_start = i == 0 || raw[i - 1].nl || raw[i - 1].text == ";";
      if (stmt_start && t.text == "include") {
        if (i + 1 >= raw.size() || raw[i + 1].nl) throw FileError{t, "include needs a file name"};
        std::string name = raw[i + 1].text;
        if (name.size() >= 2 && name.front() == '"' && name.back() == '"') name = name.substr(1, name.size() - 2);
        std::string full = name;
        if (!name.empty() && name[0] != '/') {
          const auto slash = path.rfind('/');
          if (slash != std::string::npos) full = path.substr(0, slash + 1) + name;
        }
        read(full, &raw[i + 1], depth + 1, out);
        ++i;
        continue;
      }
      if (stmt_start && t.text == "define") {
        if (i + 2 >= raw.size() || raw[i + 1].nl || raw[i + 2].text != "=")
          throw FileError{t, "define needs NAME = VALUE"};
        const std::string name = raw[i + 1].text;
        std::vector<FTok> value;
        size_t j = i + 3;
        int depth_b = 0;
        for (; j < raw.size(); ++j) {
          if (depth_b == 0 && (raw[j].nl || raw[j].text == ";")) break;
          if (raw[j].nl) continue;
          if (raw[j].text == "{") ++depth_b;
          if (raw[j].text == "}") --depth_b;
          expand(raw[j], value);
        }
        if (value.empty()) throw FileError{raw[i + 2], "define " + name + " has no value"};
        defines[name] = std::move(value);
        i = j;
        continue;
      }
      expand(t, out);
    }
  }

 private:
  void expand(const FTok& t, std::vector<FTok>& out) {
    if (t.text.size() > 1 && t.text[0] == '$') {
      auto it = defines.find(t.text.substr(1));
      if (it == defines.end()) throw FileError{t, "unknown identifier '" + t.text.substr(1) + "'"};
      for (FTok v : it->second) {
        v.src = t.src, v.line = t.line, v.col = t.col;
        out.push_back(v);
      }
      return;
    }
    out.push_back(t);
  }

  std::vector<FTok> lex(const std::string& text, int src) {
    std::vector<FTok> out;
    out.reserve(text.size() / 8);  // a word and a separator per ~16 bytes in a big set
    Source& s = sources[static_cast<size_t>(src)];
    std::string line;
    int ln = 1, col = 0;
    std::string cur;
    int cur_col = 0;
    bool comment = false, quoted = false;
    auto flush = [&] {
      if (!cur.empty()) out.push_back({cur, src, ln, cur_col, false});
      cur.clear();
    };
    for (size_t i = 0; i <= text.size(); ++i) {
      const char c = i < text.size() ? text[i] : '\n';
      ++col;
      if (c == '\n') {
        if (quoted) throw FileError{FTok{cur, src, ln, cur_col, false}, "unterminated string"};
        flush();
        out.push_back({"", src, ln, col, true});
        s.lines.push_back(line);
        line.clear();
        ++ln;
        col = 0;
        comment = false;
        continue;
      }
      line += c;
      if (comment) continue;
      if (quoted) {
        cur += c;
        if (c == '"') quoted = false;
        continue;
      }
      if (c == '"') {
        if (cur.empty()) cur_col = col;
        cur += c;
        quoted = true;
      } else if (c == '#') {
        flush();
        comment = true;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        flush();
      } else if (c == '{' || c == '}' || c == ';' || c == ',') {
        flush();
        out.push_back({std::string(1, c), src, ln, col, false});
      } else if (c == '=' || (c == '!' && i + 1 < text.size() && text[i + 1] == '=')) {
        const bool two = i + 1 < text.size() && text[i + 1] == '=';
        if (c == '=' && !cur.empty() && (cur.back() == '<' || cur.back() == '>')) {  // <= >=
          cur += c;
          continue;
        }
        flush();
        out.push_back({two ? std::string(1, c) + "=" : "=", src, ln, col, false});
        if (two) {
          ++i;
          ++col;
          line += '=';
        }
      } else {
        if (cur.empty()) cur_col = col;
        cur += c;
      }
    }
    return out;
  }
};

// One flat command and where each of its words came from.
struct Stmt {
  std::vector<std::string> words;
  std::vector<Loc> at;
};

class Unfolder {
 public:
  explicit Unfolder(const std::vector<FTok>& t) : t_(t) {}

  std::vector<Stmt> run() {
    while (skip_breaks()) {
      const FTok& w = t_[i_];
      if (w.text == "table") table();
      else flat();
    }
    return std::move(out_);
  }

 private:
  bool is_break(const FTok& t) const { return t.nl || t.text == ";"; }
  bool skip_breaks() {
    while (i_ < t_.size() && is_break(t_[i_])) ++i_;
    return i_ < t_.size();
  }
  const FTok& need(const std::string& what) {
    if (i_ >= t_.size()) throw FileError{t_.empty() ? FTok{} : t_.back(), "unexpected end of file, expected " + what};
    return t_[i_++];
  }
  static void add(Stmt& s, const std::string& w, const FTok& at) {
    s.words.push_back(w);
    s.at.push_back(loc(at));
  }
  static void add(Stmt& s, const std::string& w, const Loc& at) {
    s.words.push_back(w);
    s.at.push_back(at);
  }

  // Words to the end of the statement (a line break or ';' outside braces).
  void statement_into(Stmt& s) {
    int depth = 0;
    while (i_ < t_.size()) {
      const FTok& t = t_[i_];
      if (depth == 0 && (is_break(t) || t.text == "}")) break;
      ++i_;
      if (t.nl) continue;
      if (t.text == "{") ++depth;
      if (t.text == "}") --depth;
      add(s, t.text, t);
    }
  }

  void flat() {
    Stmt s;
    statement_into(s);
    if (s.words.empty()) throw FileError{t_[i_], "syntax error, unexpected '" + t_[i_].text + "'"};
    out_.push_back(std::move(s));
  }

  void table() {
    const FTok& kw = t_[i_++];
    const FTok& fam = need("family");
    const FTok& name = need("table name");
    Stmt s;
    add(s, "add", kw), add(s, "table", kw), add(s, fam.text, fam), add(s, name.text, name);
    out_.push_back(s);
    const FTok& open = need("'{'");
    if (open.text != "{") throw FileError{open, "syntax error, expected '{' after the table's name"};
    // Emitted as nft_cmd_expand orders a table's objects: chains, then sets and maps
    // (whose elements may jump to the chains), then rules (which may use the sets).
    chains_.clear(), sets_.clear(), rules_.clear();
    for (;;) {
      if (!skip_breaks()) throw FileError{open, "unexpected end of file, table block not closed"};
      const FTok& w = t_[i_++];
      if (w.text == "}") {
        for (auto* v : {&chains_, &sets_, &rules_})
          for (Stmt& x : *v) out_.push_back(std::move(x));
        return;
      }
      if (w.text == "set" || w.text == "map") set_block(w, fam, name);
      else if (w.text == "chain") chain_block(w, fam, name);
      else throw FileError{w, "syntax error, unexpected '" + w.text + "' in a table block (set, map or chain)"};
    }
  }

  void set_block(const FTok& kw, const FTok& fam, const FTok& table) {
    const FTok& name = need("set name");
    Stmt s;
    add(s, "add", kw), add(s, kw.text, kw), add(s, fam.text, fam), add(s, table.text, table), add(s, name.text, name);
    const FTok& open = need("'{'");
    if (open.text != "{") throw FileError{open, "syntax error, expected '{' after the set's name"};
    add(s, "{", open);
    int depth = 1;
    while (depth > 0) {
      const FTok& t = need("'}' to close the set");
      if (t.nl) continue;
      if (t.text == "{") ++depth;
      if (t.text == "}") --depth;
      add(s, t.text, t);
    }
    sets_.push_back(std::move(s));
  }

  void chain_block(const FTok& kw, const FTok& fam, const FTok& table) {
    const FTok& name = need("chain name");
    const FTok& open = need("'{'");
    if (open.text != "{") throw FileError{open, "syntax error, expected '{' after the chain's name"};
    Stmt chain;
    add(chain, "add", kw), add(chain, "chain", kw), add(chain, fam.text, fam), add(chain, table.text, table),
        add(chain, name.text, name);
    Stmt hook;
    std::vector<Stmt> rules;
    for (;;) {
      if (!skip_breaks()) throw FileError{open, "unexpected end of file, chain block not closed"};
      const FTok& w = t_[i_];
      if (w.text == "}") {
        ++i_;
        break;
      }
      if (w.text == "type" || w.text == "policy") {
        statement_into(hook);
        add(hook, ";", w);
        continue;
      }
      Stmt r;
      add(r, "add", w), add(r, "rule", w), add(r, fam.text, fam), add(r, table.text, table), add(r, name.text, name);
      const size_t before = r.words.size();
      statement_into(r);
      if (r.words.size() == before) throw FileError{w, "syntax error, unexpected '" + w.text + "'"};
      rules.push_back(std::move(r));
    }
    if (!hook.words.empty()) {
      add(chain, "{", open);
      for (size_t k = 0; k < hook.words.size(); ++k) add(chain, hook.words[k], hook.at[k]);
      add(chain, "}", open);
    }
    chains_.push_back(std::move(chain));
    for (Stmt& r : rules) rules_.push_back(std::move(r));
  }

  const std::vector<FTok>& t_;
  size_t i_ = 0;
  std::vector<Stmt> out_;
  std::vector<Stmt> chains_, sets_, rules_;  // of the table block being read
};

void print_error(std::ostream& err, const std::vector<Source>& sources, const Loc& at, const std::string& msg) {
  if (at.src < 0 || static_cast<size_t>(at.src) >= sources.size()) {
    err << "Error: " << msg << "\n";
    return;
  }
  const Source& s = sources[static_cast<size_t>(at.src)];
  const int width = at.width;
  err << s.path << ":" << at.line << ":" << at.col;
  if (width > 1) err << "-" << at.col + width - 1;
  err << ": Error: " << msg << "\n";
  if (at.line >= 1 && static_cast<size_t>(at.line) <= s.lines.size()) {
    const std::string& l = s.lines[static_cast<size_t>(at.line - 1)];
    err << l << "\n";
    std::string caret;
    for (int k = 1; k < at.col && static_cast<size_t>(k) <= l.size(); ++k) caret += l[static_cast<size_t>(k - 1)] == '\t' ? '\t' : ' ';
    err << caret << std::string(static_cast<size_t>(width), '^') << "\n";
  }
}

}  // namespace

namespace {
// Like nft's evaluation of a dynset statement (NFT_SET_EVAL on the set it writes), a set
// declared in the same file as a rule that adds to it is declared `flags dynamic`.
void mark_dynamic_sets(std::vector<NftCommand>& cmds) {
  std::vector<std::pair<std::string, std::string>> written;  // (table, set)
  for (const NftCommand& c : cmds)
    if (c.op == NftOp::ADD_RULE || c.op == NftOp::INSERT_RULE || c.op == NftOp::REPLACE_RULE)
      for (const NftMatch& m : c.rule.matches)
        if (m.lookup && m.lookup->dynset) written.emplace_back(c.table, m.lookup->set);
  if (written.empty()) return;
  for (NftCommand& c : cmds)
    if (c.op == NftOp::ADD_SET && !c.map &&
        std::find(written.begin(), written.end(), std::make_pair(c.table, c.set)) != written.end())
      c.set_spec.dynamic = true;
}

int run(const std::string& path, const std::string* text, NftRuleset& ruleset, NftDeviceResolver& resolver,
        std::ostream& out, std::ostream& err, bool json) {
  Reader rd;
  std::vector<NftCommand> cmds;
  std::vector<Loc> first;  // each command's first word
  try {
    std::vector<Stmt> stmts;
    {
      std::vector<FTok> toks;
      if (text) rd.read_text(path, *text, 0, toks);
      else rd.read(path, nullptr, 0, toks);
      stmts = Unfolder(toks).run();
    }  // the tokens go before the statements are parsed (a million-element set: ~100 MB)
    for (Stmt& s : stmts) {
      Result<NftCommand> r = nft_parse(s.words);
      if (!r) {
        const Error& e = r.error();
        const Loc& at = e.index < s.at.size() ? s.at[e.index] : s.at.back();
        throw FileError{at, e.msg};
      }
      NftCommand& c = *r;
      if (c.op == NftOp::RUN_FILE) throw FileError{s.at[0], "-f inside a file"};
      c.json = c.json || json;
      cmds.push_back(std::move(c));
      first.push_back(s.at[0]);
      s = Stmt{};  // its words are in the command now
    }
  } catch (const FileError& e) {
    print_error(err, rd.sources, e.at, e.message);
    return 1;
  }
  mark_dynamic_sets(cmds);
  std::string listing;
  size_t failed = 0;
  Status st = ruleset.apply_batch(cmds, resolver, &listing, &failed);
  out << listing;
  if (!st) {
    print_error(err, rd.sources, first[failed], st.error().msg);
    return 1;
  }
  return 0;
}
}  // namespace

int nft_run_file(const std::string& path, NftRuleset& ruleset, NftDeviceResolver& resolver, std::ostream& out,
                 std::ostream& err, bool json) {
  return run(path, nullptr, ruleset, resolver, out, err, json);
}

int nft_run_text(const std::string& name, const std::string& text, NftRuleset& ruleset, NftDeviceResolver& resolver,
                 std::ostream& out, std::ostream& err, bool json) {
  if (text.size() > kNftFileMaxBytes) {
    err << "Error: '" << name << "' is larger than " << (kNftFileMaxBytes >> 20) << " MiB\n";
    return 1;
  }
  return run(name, &text, ruleset, resolver, out, err, json);
}

}  // namespace pktpath::nf
