#include "cli/print_sink.h"

#include <cctype>
#include <cstdio>
#include <cstring>

#include "base/json_text.h"

namespace pktpath::cli {

namespace {

// One printf conversion as written in a format: its flags, width and precision, and the
// conversion letter (the length modifier dropped).
struct Spec {
  std::string head;  // "%" flags width precision
  char conv = 0;
  size_t begin = 0, end = 0;  // the conversion's span in the format
};

// The first conversion of `fmt` (not "%%"); conv 0 when there is none.
Spec find_spec(std::string_view fmt) {
  Spec s;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') continue;
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < fmt.size() && std::strchr("-+ #0", fmt[j])) ++j;
    while (j < fmt.size() && (std::isdigit(static_cast<unsigned char>(fmt[j])) || fmt[j] == '.')) ++j;
    const size_t head_end = j;
    while (j < fmt.size() && std::strchr("hlLqjzt", fmt[j])) ++j;
    if (j >= fmt.size()) break;  // a dangling '%': printed as written
    s.head = std::string(fmt.substr(i, head_end - i));
    s.conv = fmt[j];
    s.begin = i;
    s.end = j + 1;
    return s;
  }
  s.conv = 0;
  return s;
}

// The format's literal text around the conversion, "%%" folded to '%'.
void append_literal(std::string& out, std::string_view part) {
  for (size_t i = 0; i < part.size(); ++i) {
    out += part[i];
    if (part[i] == '%' && i + 1 < part.size() && part[i + 1] == '%') ++i;
  }
}

template <typename F>
std::string fill(const char* fmt, F&& render) {
  if (!fmt) return {};
  const std::string_view f(fmt);
  const Spec s = find_spec(f);
  std::string out;
  if (!s.conv) {
    append_literal(out, f);
    return out;
  }
  append_literal(out, f.substr(0, s.begin));
  out += render(s);
  append_literal(out, f.substr(s.end));
  return out;
}

// `spec` is built here from a checked conversion and the value's own type.
std::string snprint(const std::string& spec, auto v) {
  const int n = std::snprintf(nullptr, 0, spec.c_str(), v);
  if (n <= 0) return {};
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), v);
  out.pop_back();
  return out;
}

// "%" flags width precision, a length modifier and a conversion (built in steps: GCC
// 12's -Wrestrict misreads a chain of string additions).
std::string spec_of(const Spec& s, const char* length, char conv) {
  std::string spec = s.head;
  spec.append(length);
  spec.push_back(conv);
  return spec;
}

std::string render_unsigned(const Spec& s, uint64_t v) {
  const auto u = static_cast<unsigned long long>(v);
  switch (s.conv) {
    case 'x': case 'X': case 'o': case 'u': return snprint(spec_of(s, "ll", s.conv), u);
    case 's': return snprint(spec_of(s, "", 's'), std::to_string(u).c_str());
    default: return snprint(spec_of(s, "ll", 'u'), u);
  }
}

std::string render_signed(const Spec& s, int64_t v) {
  const auto i = static_cast<long long>(v);
  switch (s.conv) {
    case 'x': case 'X': case 'o': case 'u':
      return snprint(spec_of(s, "ll", s.conv), static_cast<unsigned long long>(i));
    case 's': return snprint(spec_of(s, "", 's'), std::to_string(i).c_str());
    default: return snprint(spec_of(s, "ll", 'd'), i);
  }
}

}  // namespace

std::string format_one(const char* fmt, uint64_t u) {
  return fill(fmt, [&](const Spec& s) { return render_unsigned(s, u); });
}
std::string format_one(const char* fmt, int64_t i) {
  return fill(fmt, [&](const Spec& s) { return render_signed(s, i); });
}
std::string format_one(const char* fmt, std::string_view str) {
  return fill(fmt, [&](const Spec& s) {
    // Width and flags apply as printf's %s would; the value never becomes a format.
    const std::string v(str);
    return s.head == "%" ? v : snprint(spec_of(s, "", 's'), v.c_str());
  });
}

std::string format_one(const char* fmt, double d) {
  return fill(fmt, [&](const Spec& s) {
    const char conv = std::strchr("eEfFgGaA", s.conv) ? s.conv : 'g';
    return snprint(spec_of(s, "", conv), d);
  });
}

PrintSink::PrintSink(bool json) : json_(json) {
  if (json_) stack_.push_back(Open{{}, false, nlohmann::ordered_json::array()});
}

void PrintSink::member(PrintMode m, const char* key, nlohmann::ordered_json v) {
  if (!json_ || !(m & PRINT_JSON)) return;
  add(stack_.back().value, key, std::move(v));
}

// A member appended as iproute2's writer appends it: a key given twice (u32's "match")
// appears twice.
void PrintSink::add(nlohmann::ordered_json& parent, const char* key, nlohmann::ordered_json v) {
  if (parent.is_array() || !key)
    parent.push_back(std::move(v));
  else
    parent.get_ref<nlohmann::ordered_json::object_t&>().emplace_back(key, std::move(v));
}

void PrintSink::print_string(PrintMode m, const char* key, const char* fmt, std::string_view v) {
  if (json_) return member(m, key, std::string(v));
  if (m & PRINT_FP) text_ += format_one(fmt, v);
}

void PrintSink::print_uint(PrintMode m, const char* key, const char* fmt, uint64_t v) {
  if (json_) return member(m, key, v);
  if (m & PRINT_FP) text_ += format_one(fmt, v);
}

void PrintSink::print_int(PrintMode m, const char* key, const char* fmt, int64_t v) {
  if (json_) return member(m, key, v);
  if (m & PRINT_FP) text_ += format_one(fmt, v);
}

void PrintSink::print_float(PrintMode m, const char* key, const char* fmt, double v) {
  if (json_) return member(m, key, v);
  if (m & PRINT_FP) text_ += format_one(fmt, v);
}

void PrintSink::print_hex(PrintMode m, const char* key, const char* fmt, uint64_t v) {
  if (json_) return member(m, key, format_one("%x", v));
  if (m & PRINT_FP) text_ += format_one(fmt, v);
}

void PrintSink::print_0xhex(PrintMode m, const char* key, const char* fmt, uint64_t v) {
  if (json_) return member(m, key, format_one("%#x", v));
  if (m & PRINT_FP) text_ += format_one(fmt, v);
}

void PrintSink::print_bool(PrintMode m, const char* key, const char* fmt, bool v) {
  if (json_) return member(m, key, v);
  if (m & PRINT_FP) text_ += format_one(fmt, std::string_view(v ? "true" : "false"));
}

void PrintSink::print_null(PrintMode m, const char* key, const char* fmt, std::string_view v) {
  if (json_) return member(m, key, nullptr);
  if (m & PRINT_FP) text_ += format_one(fmt, v);
}

void PrintSink::open_object(const char* key) {
  if (!json_) return;
  stack_.push_back(Open{key ? key : "", key != nullptr, nlohmann::ordered_json::object()});
}

void PrintSink::open_array(const char* key) {
  if (!json_) return;
  stack_.push_back(Open{key ? key : "", key != nullptr, nlohmann::ordered_json::array()});
}

void PrintSink::close() {
  if (!json_ || stack_.size() < 2) return;  // the outermost array stays open
  Open done = std::move(stack_.back());
  stack_.pop_back();
  add(stack_.back().value, done.keyed ? done.key.c_str() : nullptr, std::move(done.value));
}

void PrintSink::close_object() { close(); }
void PrintSink::close_array() { close(); }

const nlohmann::ordered_json& PrintSink::json() {
  if (!json_) stack_.assign(1, Open{{}, false, nlohmann::ordered_json::array()});
  while (stack_.size() > 1) close();
  return stack_.front().value;
}

std::string PrintSink::json_text() { return pktpath::json_text(json()); }

}  // namespace pktpath::cli
