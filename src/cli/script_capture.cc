// The `capture` script line: tcpdump on a device of this script's instance.
//
//   capture -i DEV [-c N] [-s SNAPLEN] [-w FILE.pcap] ['pcap filter']
//   capture stop [-i DEV]
//
// A capture attaches a tap (core/tap.h) that stays until `capture stop` (every capture,
// or those on DEV) or the end of the script, then prints tcpdump's closing counts, or
// with --json {"captured", "received_by_filter", "dropped", ...}. The filter is compiled
// with libpcap when the line is parsed, so a bad expression stops the script before
// anything runs.
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "bpf/parse.h"
#include "cli/script.h"
#include "cli/script_exec.h"
#include "core/tap.h"

namespace pktpath::cli {

struct CaptureState {
  struct Active {
    std::string dev;
    std::shared_ptr<Tap> tap;
    bool json = false;
  };
  std::vector<Active> active;  // attach order
  ~CaptureState() {
    for (auto& a : active) tap_detach(a.tap);
  }
};

namespace {

CaptureState& state_of(ScriptRunner& r) {
  auto& slot = r.capture_slot();
  if (!slot) slot = std::make_shared<CaptureState>();
  return *slot;
}

// Detach and print tcpdump's closing lines (or one JSON document). A failed -w write
// is an error of the line (the counts still print: what was lost counts as dropped).
bool report(ScriptRunner& r, const CaptureState::Active& a, ScriptError& err) {
  const TapCounts c = tap_detach(a.tap);
  const TapSpec& s = a.tap->spec();
  if (r.json() || a.json) {
    nlohmann::json j = {{"captured", c.captured},
                        {"received_by_filter", c.received_by_filter},
                        {"dropped", c.dropped},
                        {"seen", c.seen},
                        {"dev", a.dev},
                        {"filter", s.filter},
                        {"snaplen", s.snaplen}};
    if (!s.pcap_path.empty()) j["file"] = s.pcap_path;
    if (c.write_errno) j["write_error"] = std::strerror(c.write_errno);
    if (const bpf::Program* p = a.tap->program()) {
      j["engine"] = bpf::engine_name(p->engine());
      j["filter_rules"] = bpf::acceptance_name(p->acceptance());
    }
    std::fprintf(r.out(), "%s\n", j.dump().c_str());
  } else {
    std::fprintf(r.out(), "%llu packets captured\n%llu packets received by filter\n%llu packets dropped by kernel\n",
                 static_cast<unsigned long long>(c.captured), static_cast<unsigned long long>(c.received_by_filter),
                 static_cast<unsigned long long>(c.dropped));
  }
  if (c.write_errno)
    return fail(err, s.pcap_path,
                "capture: " + s.pcap_path + ": write failed: " + std::strerror(c.write_errno) + " (" +
                    std::to_string(c.dropped) + " packets not written)");
  return true;
}

struct CaptureLine final : ExtLine {
  std::string dev;
  TapSpec spec;
  bool json = false;
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = r.table().find(dev);
    if (!d) return fail(err, dev, "capture: -i: cannot find device \"" + dev + "\"");
    if (!spec.pcap_path.empty() && !r.limits().write_files)
      return fail(err, spec.pcap_path, "capture: -w: writing files is off in this runner");
    r.drain_pending();
    std::string msg;
    auto tap = tap_attach(*d, spec, &msg);
    if (!tap) return fail(err, spec.pcap_path.empty() ? dev : spec.pcap_path, "capture: " + msg);
    if (const bpf::Program* p = tap->program(); p && p->acceptance() == bpf::Acceptance::Userland)
      std::fprintf(stderr,
                   "capture: note: the kernel's checker refuses this filter; it runs in userland "
                   "(libpcap's rules%s), as libpcap does when the kernel refuses a filter\n",
                   p->bounded() ? ", bounded" : "");
    if (!r.json() && !json)
      std::fprintf(stderr, "listening on %s, link-type EN10MB (Ethernet), snapshot length %u bytes\n", dev.c_str(),
                   spec.snaplen);
    state_of(r).active.push_back({dev, std::move(tap), json});
    return true;
  }
};

struct CaptureStopLine final : ExtLine {
  std::string dev;  // empty: every capture
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    CaptureState& st = state_of(r);
    r.drain_pending();
    bool any = false, ok = true;
    for (auto it = st.active.begin(); it != st.active.end();) {
      if (dev.empty() || it->dev == dev) {
        ok = report(r, *it, err) && ok;
        it = st.active.erase(it);
        any = true;
      } else {
        ++it;
      }
    }
    if (!ok) return false;
    if (!any)
      return fail(err, dev.empty() ? "stop" : dev,
                  dev.empty() ? "capture stop: no capture is running" : "capture stop: no capture on \"" + dev + "\"");
    return true;
  }
};

// A value option: the next word, which must exist.
bool value_of(const std::vector<std::string>& w, size_t& i, std::string& v, ScriptError& err) {
  if (i + 1 >= w.size()) return fail(err, w[i], "capture: " + w[i] + ": missing value");
  v = w[++i];
  return true;
}

}  // namespace

bool ScriptRunner::finish(ScriptError& err) {
  if (!capture_) return true;
  drain_pending();
  bool ok = true;
  for (const auto& a : capture_->active) ok = report(*this, a, err) && ok;
  capture_->active.clear();
  return ok;
}

std::optional<bool> parse_capture_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  if (w.empty() || w[0] != "capture") return std::nullopt;
  if (w.size() >= 2 && w[1] == "stop") {
    auto line = std::make_shared<CaptureStopLine>();
    size_t i = 2;
    if (i < w.size() && w[i] == "-i") {
      if (!value_of(w, i, line->dev, err)) return false;
      ++i;
    }
    if (i < w.size()) return fail(err, w[i], "capture stop: unexpected \"" + w[i] + "\" (expected `capture stop [-i DEV]`)");
    out.line = std::move(line);
    return true;
  }
  auto line = std::make_shared<CaptureLine>();
  std::string filter;
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& f = w[i];
    std::string v;
    if (f == "--json") {
      line->json = true;
    } else if (f == "-i") {
      if (!value_of(w, i, v, err)) return false;
      if (v.empty()) return fail(err, f, "capture: -i: empty device name");
      line->dev = v;
    } else if (f == "-c") {
      if (!value_of(w, i, v, err)) return false;
      uint64_t n = 0;
      if (!parse_u64(v, n) || n == 0) return fail(err, v, "capture: -c: invalid packet count \"" + v + "\" (expected 1 or more)");
      line->spec.count = n;
    } else if (f == "-s") {
      if (!value_of(w, i, v, err)) return false;
      uint32_t n = 0;
      if (!parse_u32(v, n) || n > kTapDefaultSnaplen)
        return fail(err, v, "capture: -s: invalid snaplen \"" + v + "\" (expected 0..262144; 0 = 262144)");
      line->spec.snaplen = n == 0 ? kTapDefaultSnaplen : n;
    } else if (f == "-w") {
      if (!value_of(w, i, v, err)) return false;
      if (v.empty() || v == "-") return fail(err, f, "capture: -w: expected a file name");
      line->spec.pcap_path = v;
    } else if (f.size() > 1 && f[0] == '-') {
      return fail(err, f, "capture: unknown option \"" + f + "\" (expected -i, -c, -s, -w or a filter)");
    } else {
      // tcpdump joins the words after its options into one expression.
      if (!filter.empty()) filter += ' ';
      filter += f;
    }
  }
  if (line->dev.empty()) return fail(err, "capture", "capture: -i DEV is required");
  if (!filter.empty()) {
    bpf::CompileOptions opt;
    opt.snaplen = static_cast<int>(line->spec.snaplen);
    std::string msg;
    if (!bpf::compile_expression(filter, opt, &line->spec.insns, &msg))
      return fail(err, filter, "capture: filter: " + msg);
    line->spec.has_filter = true;
    line->spec.filter = filter;
  }
  out.line = std::move(line);
  return true;
}

}  // namespace pktpath::cli
