// The `capture` script line, and `tcpdump`, its alias: tcpdump on a device of this
// script's instance, with tcpdump's options (cli/tcpdump_args.h).
//
//   capture|tcpdump -i DEV|any [-c N] [-s SNAPLEN] [-w FILE|-] [-Q in|out|inout] [-U] [-e] ['filter']
//   capture|tcpdump -r FILE [-c N] [-e] [-w FILE] ['filter']   # print (or copy) a file
//   capture|tcpdump [-i any] -d|-dd|-ddd ['filter']              # the compiled filter
//   capture stop [-i DEV]
//
// A capture attaches a tap (core/tap.h) that stays until `capture stop` (every capture,
// or those on DEV) or the end of the script, then prints tcpdump's closing counts, or
// with --json {"captured", "received_by_filter", "dropped", ...}. `tcpdump` without -w
// also prints a line per packet there: its tap writes a temporary pcap file (the
// datapath does no formatting) that is printed, as -r prints, when the capture stops.
// The filter is compiled with libpcap when the line is parsed, so a bad expression stops
// the script before anything runs.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "cli/tcpdump_args.h"
#include "cli/tcpdump_print.h"
#include "core/tap.h"
#include "base/json_text.h"

namespace pktpath::cli {

struct CaptureState {
  struct Active {
    std::string dev;
    std::shared_ptr<Tap> tap;
    bool json = false;
    std::string print_path;   // the temporary file of a printing capture (removed at stop)
    bool link_header = false;  // -e
    const void* file_owner = nullptr;  // its -w file's claim (RunFiles)
    int verbose = 0;                   // -v
  };
  std::vector<Active> active;  // attach order
  ~CaptureState() {
    for (auto& a : active) {
      tap_detach(a.tap);
      if (!a.print_path.empty()) std::remove(a.print_path.c_str());
    }
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
  // With -w - the file is standard output: the counts go to stderr, as tcpdump's do.
  std::FILE* const to = s.pcap_path == "-" ? stderr : r.out();
  if (!a.print_path.empty()) {
    std::string msg;
    const bool printed = print_pcap_file(a.print_path, a.link_header, r.out(), &msg, a.verbose);
    std::remove(a.print_path.c_str());
    if (!printed) return fail(err, a.dev, "capture: cannot read back the packets: " + msg);
  }
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
    std::fprintf(to, "%s\n", json_text(j).c_str());
  } else {
    std::fprintf(to, "%llu packets captured\n%llu packets received by filter\n%llu packets dropped by kernel\n",
                 static_cast<unsigned long long>(c.captured), static_cast<unsigned long long>(c.received_by_filter),
                 static_cast<unsigned long long>(c.dropped));
  }
  if (c.write_errno)
    return fail(err, s.pcap_path,
                "capture: " + s.pcap_path + ": write failed: " + std::strerror(c.write_errno) + " (" +
                    std::to_string(c.dropped) + " packets not written)");
  return true;
}

// A temporary file for a printing capture's packets; empty when none can be made.
std::string temp_pcap_path() {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/pktpath-tcpdump-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) return {};
  close(fd);
  return path;
}

struct CaptureLine final : ExtLine {
  std::string cmd;  // "capture" or "tcpdump"
  TcpdumpArgs args;
  TapSpec spec;
  bool print = false;  // a line per packet at the stop (tcpdump without -w)
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    if (args.dump) return dump(r, err);
    if (!args.read.empty()) return read(r, err);
    const bool json = r.json() || args.json;
    NetDevice* d = args.any() ? nullptr : r.table().find(args.dev);
    if (!d && !args.any()) return fail(err, args.dev, cmd + ": -i: cannot find device \"" + args.dev + "\"");
    if (!spec.pcap_path.empty() && !r.limits().write_files)
      return fail(err, spec.pcap_path, cmd + ": -w: writing files is off in this runner");
    r.drain_pending();
    TapSpec sp = spec;
    CaptureState::Active a{args.dev, nullptr, args.json, {}, args.link_header};
    a.verbose = args.verbose;
    if (print && !json) {
      if (!r.limits().write_files)
        return fail(err, cmd, cmd + ": printing packets needs a temporary file; writing files is off in this runner");
      a.print_path = temp_pcap_path();
      if (a.print_path.empty()) return fail(err, cmd, cmd + ": cannot make a temporary file: " + std::strerror(errno));
      sp.pcap_path = a.print_path;
    }
    // Claimed before the tap opens (and truncates) the file; this line owns the claim.
    if (!spec.pcap_path.empty())
      if (Status st = r.files().claim(spec.pcap_path, RunFiles::Use::kWrite, this, cmd + " -w"); !st)
        return fail(err, spec.pcap_path, cmd + ": -w " + st.error().msg);
    a.file_owner = this;
    if (sp.pcap_path == "-") std::fflush(r.out());  // what the script printed comes first
    std::string msg;
    a.tap = args.any() ? tap_attach_all(r.net(), std::move(sp), &msg) : tap_attach(*d, std::move(sp), &msg);
    if (!a.tap) {
      r.files().release(this);
      if (!a.print_path.empty()) std::remove(a.print_path.c_str());
      return fail(err, spec.pcap_path.empty() ? args.dev : spec.pcap_path, cmd + ": " + msg);
    }

    if (const bpf::Program* p = a.tap->program(); p && p->acceptance() == bpf::Acceptance::Userland)
      std::fprintf(stderr,
                   "%s: note: the kernel's checker refuses this filter; it runs in userland "
                   "(libpcap's rules%s), as libpcap does when the kernel refuses a filter\n",
                   cmd.c_str(), p->bounded() ? ", bounded" : "");
    if (!json)
      std::fprintf(stderr, "listening on %s, link-type %s, snapshot length %u bytes\n", args.dev.c_str(),
                   args.any() ? "LINUX_SLL (Linux cooked v1)" : "EN10MB (Ethernet)", spec.snaplen);
    state_of(r).active.push_back(std::move(a));
    return true;
  }
  // -d, -dd, -ddd: the listing, nothing captured.
  bool dump(ScriptRunner& r, ScriptError& err) const {
    bpf::Insns prog = spec.insns;
    std::string msg;
    if (!args.read.empty() && !tcpdump_compile(args, &prog, &msg))
      return fail(err, args.filter, cmd + ": filter: " + msg);
    const std::string text = tcpdump_listing(prog, args.dump);
    std::fwrite(text.data(), 1, text.size(), r.out());
    return true;
  }
  // -r FILE: printed (or copied with -w) now, to the script's output.
  bool read(ScriptRunner& r, ScriptError& err) const {
    if (!args.write.empty() && !r.limits().write_files)
      return fail(err, args.write, cmd + ": -w: writing files is off in this runner");
    ReadRequest rq{args.read, args.filter, args.write, args.count, args.link_header, args.packet_buffered, args.verbose};
    // Claimed for the line's length: -w may not name the file read or one written.
    struct Release {
      RunFiles& f;
      const void* owner;
      ~Release() { f.release(owner); }
    } release{r.files(), this};
    if (Status st = r.files().claim(args.read, RunFiles::Use::kRead, this, cmd + " -r"); !st)
      return fail(err, args.read, cmd + ": -r " + st.error().msg);
    if (!args.write.empty())
      if (Status st = r.files().claim(args.write, RunFiles::Use::kWrite, this, cmd + " -r"); !st)
        return fail(err, args.write, cmd + ": -w " + st.error().msg);
    if (!tcpdump_read(rq, r.out(), err)) {
      err.msg = cmd + ": " + err.msg;
      return false;
    }
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
        r.files().release(it->file_owner);
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

}  // namespace

bool ScriptRunner::finish(ScriptError& err) {
  if (!capture_) return true;
  drain_pending();
  bool ok = true;
  for (const auto& a : capture_->active) {
    ok = report(*this, a, err) && ok;
    files_.release(a.file_owner);
  }
  capture_->active.clear();
  return ok;
}

std::optional<bool> parse_capture_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  if (w.empty() || (w[0] != "capture" && w[0] != "tcpdump")) return std::nullopt;
  if (w.size() >= 2 && w[1] == "stop") {
    auto line = std::make_shared<CaptureStopLine>();
    size_t i = 2;
    if (i < w.size() && w[i] == "-i") {
      if (i + 1 >= w.size()) return fail(err, w[i], w[0] + " stop: -i: missing value");
      line->dev = w[++i];
      ++i;
    }
    if (i < w.size())
      return fail(err, w[i], w[0] + " stop: unexpected \"" + w[i] + "\" (expected `" + w[0] + " stop [-i DEV]`)");
    out.line = std::move(line);
    return true;
  }
  auto line = std::make_shared<CaptureLine>();
  line->cmd = w[0];
  TcpdumpArgs& a = line->args;
  if (!parse_tcpdump_args(std::vector<std::string>(w.begin() + 1, w.end()), w[0], a, err)) return false;
  // -r and -d need no device; a live capture does.
  if (a.read.empty() && !a.dump && a.dev.empty()) return fail(err, w[0], w[0] + ": -i DEV is required");
  TapSpec& s = line->spec;
  s.snaplen = a.snaplen;
  s.count = a.count;
  s.pcap_path = a.write;
  s.direction = a.direction;
  s.linktype = tcpdump_linktype(a);
  s.packet_buffered = a.packet_buffered;
  line->print = w[0] == "tcpdump" && a.write.empty();
  // Compiled now (a savefile's filter when the file is read), so a bad expression stops
  // the script before anything runs; -d lists what an empty filter compiles to.
  if (a.read.empty() && (!a.filter.empty() || a.dump)) {
    std::string msg;
    if (!tcpdump_compile(a, &s.insns, &msg)) return fail(err, a.filter, w[0] + ": filter: " + msg);
    s.has_filter = !a.filter.empty();
    s.filter = a.filter;
  }
  out.line = std::move(line);
  return true;
}

}  // namespace pktpath::cli
