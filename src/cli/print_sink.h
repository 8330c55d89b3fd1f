// iproute2's print sink (lib/json_print.c): a `show` writes each field once,
// print_uint(PRINT_ANY, "limit", "limit %up ", v), and the sink renders it either as text
// (the format) or as a JSON member (the key), so the two outputs never drift apart and
// JSON keys come in the order the text prints them. PRINT_FP fields exist in the text
// only, PRINT_JSON fields in the JSON only.
//
// A format holds at most one conversion (%u, %llu, %x, %#x, %08x, %s, %d, ...; the length
// modifier is ignored, the value's type decides) and "%%"; the sink builds the printf
// specification itself, so a format can never read a wrong-typed argument.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace pktpath::cli {

enum PrintMode : unsigned { PRINT_FP = 1, PRINT_JSON = 2, PRINT_ANY = 3 };

class PrintSink {
 public:
  // json: render JSON; the outermost value is an array (new_json_obj).
  explicit PrintSink(bool json);

  bool is_json() const { return json_; }

  // What the show asked for, as iproute2's globals say it: -d, -s.
  bool details = false;
  bool stats = false;

  void print_string(PrintMode m, const char* key, const char* fmt, std::string_view v);
  void print_uint(PrintMode m, const char* key, const char* fmt, uint64_t v);
  void print_int(PrintMode m, const char* key, const char* fmt, int64_t v);
  // JSON: the number; text: the format's one %g/%f/%e conversion.
  void print_float(PrintMode m, const char* key, const char* fmt, double v);
  // JSON: the number as a string, "%x" (print_hex) or "0x%x" (print_0xhex).
  void print_hex(PrintMode m, const char* key, const char* fmt, uint64_t v);
  void print_0xhex(PrintMode m, const char* key, const char* fmt, uint64_t v);
  // JSON: true/false; text: the format (a %s gets "true"/"false").
  void print_bool(PrintMode m, const char* key, const char* fmt, bool v);
  // JSON: null; text: the format with `v` for its %s.
  void print_null(PrintMode m, const char* key, const char* fmt, std::string_view v);
  // Text only: a line break (iproute2's print_nl / _SL_).
  void print_nl() { text(PRINT_FP, "\n"); }
  // Text only, verbatim.
  void text(PrintMode m, std::string_view s) {
    if (!json_ && (m & PRINT_FP)) text_ += s;
  }

  // JSON structure (no-ops for text). A null key opens an element of the enclosing array.
  void open_object(const char* key);
  void close_object();
  void open_array(const char* key);
  void close_array();

  // The text rendered so far (text mode), taken.
  std::string take_text() { return std::move(text_); }
  // The finished JSON (json mode): the outermost array, every opened value closed.
  const nlohmann::ordered_json& json();
  // The compact JSON text, as iproute2 prints it (no spaces, no newline).
  std::string json_text();

 private:
  struct Open {
    std::string key;
    bool keyed;  // a member of the enclosing object, else an element of its array
    nlohmann::ordered_json value;
  };
  void member(PrintMode m, const char* key, nlohmann::ordered_json v);
  static void add(nlohmann::ordered_json& parent, const char* key, nlohmann::ordered_json v);
  void close();

  bool json_;
  std::string text_;
  std::vector<Open> stack_;
};

// The format with its one conversion filled (exposed for tests).
std::string format_one(const char* fmt, uint64_t u);
std::string format_one(const char* fmt, int64_t i);
std::string format_one(const char* fmt, std::string_view s);
std::string format_one(const char* fmt, double d);

}  // namespace pktpath::cli
