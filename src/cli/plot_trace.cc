// Reading a trace for `pktpath plot`: bounded lines, text only, numbers checked by field,
// names free of control characters (a newline in a name would end a gnuplot command).
#include "cli/plot_trace.h"

#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

namespace pktpath::cli {

namespace {

using json = nlohmann::json;

// Splits a byte stream into lines of at most kMaxTraceLine bytes; a NUL byte is binary
// input and stops the read at once (/dev/zero fails after one chunk).
class LineSplitter {
 public:
  enum class Got { kLine, kEof, kTooLong, kBinary };
  explicit LineSplitter(std::function<size_t(char*, size_t)> fill) : fill_(std::move(fill)) {}

  Got next(std::string& line) {
    line.clear();
    for (;;) {
      if (pos_ == len_) {
        if (eof_) return line.empty() ? Got::kEof : Got::kLine;
        len_ = fill_(buf_, sizeof buf_);
        pos_ = 0;
        if (len_ == 0) {
          eof_ = true;
          continue;
        }
        if (std::memchr(buf_, '\0', len_)) return Got::kBinary;
      }
      const char* start = buf_ + pos_;
      const char* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - pos_));
      const size_t take = nl ? size_t(nl - start) : len_ - pos_;
      if (line.size() + take > kMaxTraceLine) return Got::kTooLong;
      line.append(start, take);
      pos_ += take;
      if (nl) {
        ++pos_;
        return Got::kLine;
      }
    }
  }

 private:
  std::function<size_t(char*, size_t)> fill_;
  char buf_[1 << 16];
  size_t pos_ = 0, len_ = 0;
  bool eof_ = false;
};

Unexpected at_line(size_t line, const std::string& msg, const std::string& field = {}) {
  return unexpected(std::to_string(line) + ": " + msg, field);
}

// A field that must be absent (def) or a number of type T.
template <class T>
Result<T> number_field(const json& obj, const char* field, T def, size_t line) {
  auto it = obj.find(field);
  if (it == obj.end()) return def;
  if (!it->is_number()) return at_line(line, std::string("field \"") + field + "\": expected a number, got " + it->type_name(), field);
  if constexpr (std::is_unsigned_v<T>) {
    if (!it->is_number_unsigned()) return at_line(line, std::string("field \"") + field + "\": expected a non-negative integer", field);
  }
  return it->get<T>();
}

// A name field: absent (def) or a string of printable characters.
Result<std::string> name_field(const json& obj, const char* field, const char* def, size_t line) {
  auto it = obj.find(field);
  if (it == obj.end()) return std::string(def);
  if (!it->is_string()) return at_line(line, std::string("field \"") + field + "\": expected a string, got " + it->type_name(), field);
  std::string s = it->get<std::string>();
  if (!plot_safe_string(s)) return at_line(line, std::string("field \"") + field + "\": control character in a name", field);
  return s;
}

std::string num(double v) {
  char b[48];
  const int n = std::snprintf(b, sizeof b, "%.9g", v);
  return std::string(b, size_t(n));
}

Status add_summary(PlotData& d, const json& s, size_t line, bool have_t0, uint64_t t0) {
  if (!s.is_object()) return at_line(line, "field \"summary\": expected an object", "summary");
  auto dev = name_field(s, "dev", "", line);
  if (!dev) return unexpected(dev.error());
  auto cls = name_field(s, "class", "", line);
  if (!cls) return unexpected(cls.error());
  auto st0 = number_field<uint64_t>(s, "t0_ns", 0, line);
  if (!st0) return unexpected(st0.error());
  auto bin = number_field<uint64_t>(s, "bin_ns", 1, line);
  if (!bin) return unexpected(bin.error());
  auto it = s.find("throughput_bps");
  if (it == s.end() || !it->is_array()) return at_line(line, "field \"throughput_bps\": expected an array", "throughput_bps");
  const std::string key = *dev + " " + *cls;
  PlotSeries& se = d.tput[key];
  se.title = key;
  const double origin = double(have_t0 ? t0 : *st0);
  for (size_t i = 0; i < it->size(); ++i) {
    const json& v = (*it)[i];
    if (!v.is_number()) return at_line(line, "field \"throughput_bps\": element " + std::to_string(i) + " is not a number", "throughput_bps");
    const double t = (double(*st0) + double(i) * double(*bin) - origin) / 1e9;
    se.data += num(t) + " " + num(v.get<double>() / 1e6) + "\n";
  }
  return {};
}

}  // namespace

bool plot_safe_string(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

namespace {

Result<PlotData> read_lines(LineSplitter& in) {
  PlotData d;
  std::string line;
  size_t lineno = 0;
  bool have_t0 = false;
  uint64_t t0 = 0;
  for (;;) {
    const LineSplitter::Got got = in.next(line);
    if (got == LineSplitter::Got::kEof) break;
    ++lineno;
    if (got == LineSplitter::Got::kBinary) return at_line(lineno, "binary data (a NUL byte): not a trace");
    if (got == LineSplitter::Got::kTooLong)
      return at_line(lineno, "line longer than " + std::to_string(kMaxTraceLine) + " bytes: not a trace");
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return at_line(lineno, "not a JSON object");
    if (auto s = j.find("summary"); s != j.end()) {
      if (Status st = add_summary(d, *s, lineno, have_t0, t0); !st) return unexpected(st.error());
      continue;
    }
    if (!j.contains("t_ns")) continue;  // the end record
    auto t = number_field<uint64_t>(j, "t_ns", 0, lineno);
    if (!t) return unexpected(t.error());
    if (!have_t0) {
      t0 = *t;
      have_t0 = true;
    }
    ++d.records;
    const double ts = (double(*t) - double(t0)) / 1e9;
    auto dev = name_field(j, "dev", "-", lineno);
    if (!dev) return unexpected(dev.error());
    auto cls = name_field(j, "class", "", lineno);
    if (!cls) return unexpected(cls.error());
    auto verdict = name_field(j, "verdict", "", lineno);
    if (!verdict) return unexpected(verdict.error());
    auto qlen = number_field<uint64_t>(j, "qlen", 0, lineno);
    if (!qlen) return unexpected(qlen.error());
    if (*verdict == "sent") {
      auto soj = number_field<double>(j, "sojourn_ns", 0.0, lineno);
      if (!soj) return unexpected(soj.error());
      PlotSeries& se = d.sojourn[*dev + " " + *cls];
      se.title = *dev + " " + *cls;
      se.data += num(ts) + " " + num(*soj / 1e6) + "\n";
    }
    PlotSeries& q = d.qlen[*dev];
    q.title = *dev;
    q.data += num(ts) + " " + std::to_string(*qlen) + "\n";
  }
  return d;
}

}  // namespace

Result<PlotData> read_plot_trace(std::FILE* in) {
  LineSplitter split([in](char* b, size_t n) { return std::fread(b, 1, n, in); });
  return read_lines(split);
}

Result<PlotData> read_plot_trace_text(std::string_view text) {
  LineSplitter split([&](char* b, size_t n) -> size_t {
    const size_t k = std::min(n, text.size());
    std::memcpy(b, text.data(), k);
    text.remove_prefix(k);
    return k;
  });
  return read_lines(split);
}

}  // namespace pktpath::cli
