#include "bpf/parse.h"

#include "bpf/text_file.h"

#include <pcap/pcap.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace pktpath::bpf {

namespace {

struct Record {
  std::string_view text;
  int line;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits on ',' and '\n', dropping empty records (trailing separators, blank lines).
std::vector<Record> split_records(std::string_view text) {
  std::vector<Record> out;
  int line = 1;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ',' || text[i] == '\n') {
      std::string_view r = trim(text.substr(start, i - start));
      if (!r.empty()) out.push_back({r, line});
      if (i < text.size() && text[i] == '\n') ++line;
      start = i + 1;
    }
  }
  return out;
}

// Parses an unsigned decimal or 0x-hex number up to `max`.
bool parse_number(std::string_view tok, uint64_t max, uint64_t* out, std::string* why) {
  int base = 10;
  std::string_view digits = tok;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (digits.empty() || ec == std::errc::invalid_argument || p != digits.data() + digits.size()) {
    *why = fmt::format("bad number '{}'", tok);
    return false;
  }
  if (ec == std::errc::result_out_of_range || v > max) {
    *why = fmt::format("{} out of range 0..{}", tok, max);
    return false;
  }
  *out = v;
  return true;
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t b = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

constexpr const char* kFieldNames[4] = {"code", "jt", "jf", "k"};
constexpr uint64_t kFieldMax[4] = {0xffff, 0xff, 0xff, 0xffffffff};

// Fills an Insn from four tokens; the error names the instruction and the field.
bool make_insn(const std::vector<std::string_view>& f, size_t index, const std::string& where,
               Insn* out, std::string* err) {
  if (f.size() != 4) {
    // Name the first word past the fourth, so the message points at it.
    *err = fmt::format("{}insn {}: expected 4 fields (code jt jf k), got {}{}", where, index, f.size(),
                       f.size() > 4 ? fmt::format(" (extra '{}')", f[4]) : std::string());
    return false;
  }
  uint64_t v[4];
  for (int j = 0; j < 4; ++j) {
    std::string why;
    if (!parse_number(f[j], kFieldMax[j], &v[j], &why)) {
      *err = fmt::format("{}insn {}: field {}: {}", where, index, kFieldNames[j], why);
      return false;
    }
  }
  *out = Insn{static_cast<uint16_t>(v[0]), static_cast<uint8_t>(v[1]), static_cast<uint8_t>(v[2]),
              static_cast<uint32_t>(v[3])};
  return true;
}

std::string line_prefix(const std::vector<Record>& recs, bool multiline, size_t i) {
  return multiline ? fmt::format("line {}: ", recs[i].line) : std::string();
}

}  // namespace

bool parse_bytecode(std::string_view text, Insns* out, std::string* err) {
  std::vector<Record> recs = split_records(text);
  const bool multiline = text.find('\n') != std::string_view::npos;
  if (recs.empty()) {
    *err = "empty bytecode: expected 'N,code jt jf k,...'";
    return false;
  }
  uint64_t count;
  std::string why;
  if (!parse_number(recs[0].text, 0xffff, &count, &why)) {
    *err = fmt::format("{}instruction count: {}", line_prefix(recs, multiline, 0), why);
    return false;
  }
  if (count == 0) {
    *err = fmt::format("{}instruction count: 0 (must be at least 1)", line_prefix(recs, multiline, 0));
    return false;
  }
  size_t have = recs.size() - 1;
  Insns prog;
  prog.reserve(have);
  for (size_t i = 0; i < have; ++i) {
    Insn in;
    if (!make_insn(split_ws(recs[i + 1].text), i, line_prefix(recs, multiline, i + 1), &in, err))
      return false;
    prog.push_back(in);
  }
  if (have != count) {
    *err = fmt::format("instruction count {} but {} instructions given", count, have);
    return false;
  }
  *out = std::move(prog);
  return true;
}

bool parse_c_array(std::string_view text, Insns* out, std::string* err) {
  Insns prog;
  int line = 1;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (c == '}') {
      *err = fmt::format("line {}: '}}' without '{{'", line);
      return false;
    }
    if (c != '{') {
      if (!std::isspace(static_cast<unsigned char>(c)) && c != ',') {
        *err = fmt::format("line {}: unexpected '{}' outside {{ }}", line, c);
        return false;
      }
      ++i;
      continue;
    }
    size_t close = text.find('}', i);
    size_t nested = text.find('{', i + 1);
    if (close == std::string_view::npos || (nested != std::string_view::npos && nested < close)) {
      *err = fmt::format("line {}: insn {}: missing '}}'", line, prog.size());
      return false;
    }
    std::string_view body = text.substr(i + 1, close - i - 1);
    std::vector<std::string_view> fields;
    size_t s = 0;
    for (size_t j = 0; j <= body.size(); ++j) {
      if (j == body.size() || body[j] == ',') {
        std::string_view f = trim(body.substr(s, j - s));
        if (!f.empty() || j < body.size()) fields.push_back(f);
        s = j + 1;
      }
    }
    for (char ch : body) line += ch == '\n';
    Insn in;
    if (!make_insn(fields, prog.size(), fmt::format("line {}: ", line), &in, err)) return false;
    prog.push_back(in);
    i = close + 1;
  }
  if (prog.empty()) {
    *err = "no { code, jt, jf, k } instructions found";
    return false;
  }
  *out = std::move(prog);
  return true;
}

// A file may carry `#` comments, whole-line or after an instruction: each runs to the end
// of its line and is blanked (the newline stays, so errors keep their line numbers).
namespace {
std::string strip_comments(std::string_view text) {
  std::string s(text);
  bool in_comment = false;
  for (char& c : s) {
    if (c == '\n') in_comment = false;
    else if (c == '#') in_comment = true;
    if (in_comment) c = ' ';
  }
  return s;
}
}  // namespace

bool parse_bytecode_file_text(std::string_view text, Insns* out, std::string* err) {
  const std::string body = strip_comments(text);
  if (body.find('{') != std::string::npos) return parse_c_array(body, out, err);
  return parse_bytecode(body, out, err);
}

bool read_bytecode_file(const std::string& path, Insns* out, std::string* err) {
  std::string text;
  if (!read_text_file(path, kMaxBytecodeFileBytes, &text, err)) return false;
  std::string e;
  if (!parse_bytecode_file_text(text, out, &e)) {
    *err = fmt::format("{}: {}", path, e);
    return false;
  }
  return true;
}

bool compile_expression(const std::string& expr, const CompileOptions& opt, Insns* out,
                        std::string* err) {
  // libpcap's grammar state is shared in older releases; one compile at a time.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  pcap_t* p;
  if (!opt.savefile.empty()) {
    char ebuf[PCAP_ERRBUF_SIZE] = {0};
    p = pcap_open_offline(opt.savefile.c_str(), ebuf);
    if (!p) {
      *err = fmt::format("{}: {}", opt.savefile, ebuf);
      return false;
    }
  } else {
    p = pcap_open_dead(opt.linktype, opt.snaplen);
    if (!p) {
      *err = fmt::format("pcap_open_dead(linktype {}, snaplen {}) failed", opt.linktype, opt.snaplen);
      return false;
    }
  }
  bpf_program fp{};
  if (pcap_compile(p, &fp, expr.c_str(), opt.optimize ? 1 : 0, opt.netmask) != 0) {
    *err = fmt::format("expression: {}", pcap_geterr(p));
    pcap_close(p);
    return false;
  }
  static_assert(sizeof(bpf_insn) == sizeof(Insn));
  Insns prog(fp.bf_len);
  for (u_int i = 0; i < fp.bf_len; ++i)
    prog[i] = Insn{fp.bf_insns[i].code, fp.bf_insns[i].jt, fp.bf_insns[i].jf, fp.bf_insns[i].k};
  pcap_freecode(&fp);
  pcap_close(p);
  *out = std::move(prog);
  return true;
}

int parse_linktype(std::string_view name) {
  std::string n(name);
  if (n.empty()) return -1;
  uint64_t v;
  std::string why;
  if (parse_number(n, 0x7fffffff, &v, &why)) return static_cast<int>(v);
  if (n.size() > 4 && (n.compare(0, 4, "DLT_") == 0 || n.compare(0, 4, "dlt_") == 0)) n = n.substr(4);
  return pcap_datalink_name_to_val(n.c_str());
}

}  // namespace pktpath::bpf
