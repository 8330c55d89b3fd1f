// `sysctl` script lines, as procps' sysctl: `sysctl -w KEY=VALUE ...` sets (and prints
// `KEY = VALUE` unless -q), `sysctl [-n] KEY ...` prints, `sysctl -a` lists every key.
// Keys are the registered sysctls (core/sysctl.h) of the line's Net; the short aliases
// (bypass, bpf_engine, ...) are accepted too. Keys and values are checked when the
// script is parsed (values against a scratch Net), so a bad one stops the script first.
#include <nlohmann/json.hpp>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "core/net.h"
#include "core/sysctl.h"
#include "base/json_text.h"

namespace pktpath::cli {

namespace {

struct SysctlLine final : ExtLine {
  bool all = false, quiet = false, value_only = false;
  std::vector<std::pair<const Sysctl*, std::optional<std::string>>> items;  // value: a write

  // A write echoes the value as written (procps: `= 0x40`), a read the value held.
  void print(ScriptRunner& r, const Sysctl& s, const std::string* written = nullptr) const {
    const std::string v = written ? *written : s.get(r.net());
    if (r.json())
      std::fprintf(r.out(), "%s\n", json_text(nlohmann::json{{"key", s.name}, {"value", v}}).c_str());
    else if (value_only)
      std::fprintf(r.out(), "%s\n", v.c_str());
    else
      std::fprintf(r.out(), "%s = %s\n", s.name, v.c_str());
  }

  bool execute(ScriptRunner& r, ScriptError& err) const override {
    if (all) {
      for (const Sysctl* s : sysctl_all()) print(r, *s);
      return true;
    }
    for (const auto& [s, value] : items) {
      if (value) {
        r.drain_pending();  // no traffic runs between lines; settle queued work first
        if (Status st = s->set(r.net(), *value); !st) return fail(err, *value, "sysctl: " + st.error().msg);
        if (quiet) continue;
      }
      print(r, *s, value ? &*value : nullptr);
    }
    return true;
  }
};

// A value's check: applied to a Net of its own that nothing else sees.
Status check_value(const Sysctl& s, const std::string& value) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Cpu cpu(pool);
  Net scratch(cpu);
  return s.set(scratch, value);
}

}  // namespace

std::optional<bool> parse_sysctl_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  if (w.empty() || w[0] != "sysctl") return std::nullopt;
  auto line = std::make_shared<SysctlLine>();
  bool write = false;
  size_t i = 1;
  for (; i < w.size() && w[i].size() > 1 && w[i][0] == '-'; ++i) {
    if (w[i] == "-a" || w[i] == "--all" || w[i] == "-A") line->all = true;
    else if (w[i] == "-w" || w[i] == "--write") write = true;
    else if (w[i] == "-q" || w[i] == "--quiet") line->quiet = true;
    else if (w[i] == "-n" || w[i] == "--values") line->value_only = true;
    else return fail(err, w[i], "sysctl: unknown option (expected -w, -n, -q or -a)");
  }
  if (line->all) {
    if (i != w.size() || write) return fail(err, i < w.size() ? w[i] : w.back(), "sysctl: -a takes no keys");
  } else if (i == w.size()) {
    return fail(err, w.back(), write ? "sysctl: -w needs KEY=VALUE" : "sysctl: expected a key, or -a");
  }
  for (; i < w.size(); ++i) {
    const std::string& word = w[i];
    const size_t eq = word.find('=');
    if (write != (eq != std::string::npos))
      return fail(err, word, write ? "sysctl: -w needs KEY=VALUE" : "sysctl: setting a key needs -w");
    std::string key = write ? word.substr(0, eq) : word;
    // procps accepts '/' as the separator too (net/core/dev_weight).
    for (char& c : key)
      if (c == '/') c = '.';
    while (!key.empty() && key.back() == ' ') key.pop_back();
    const Sysctl* s = sysctl_find(key);
    if (!s) {  // procps names the file: net.core.nope is /proc/sys/net/core/nope
      std::string file = key;
      for (char& c : file)
        if (c == '.') c = '/';
      return fail(err, word, "sysctl: cannot stat /proc/sys/" + file + ": No such file or directory");
    }
    std::optional<std::string> value;
    if (write) {
      value = word.substr(eq + 1);
      if (Status st = check_value(*s, *value); !st) return fail(err, word, "sysctl: " + st.error().msg);
    }
    line->items.emplace_back(s, std::move(value));
  }
  out.line = std::move(line);
  return true;
}

}  // namespace pktpath::cli
