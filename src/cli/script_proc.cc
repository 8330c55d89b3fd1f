// `cat /proc/net/softnet_stat` and `cat /proc/net/snmp`: the receive side's counters in
// the files the kernel shows them in.
//
// softnet_stat: one row per datapath Cpu of the runner (the Cpus RPS masks name; a
// sender thread's own Cpu is reported by its pktgen line), the 13 hex columns of 6.1's
// softnet_seq_show: processed, dropped, time_squeeze, five zeros, cpu_collision (0),
// received_rps, flow_limit_count (0), backlog length, Cpu index.
// snmp: the Icmp and IcmpMsg lines for the echo traffic the host sink answers, in the
// current namespace.
#include <cinttypes>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "core/host_sink.h"
#include "base/json_text.h"

namespace pktpath::cli {

namespace {

class SoftnetStatLine final : public ExtLine {
 public:
  bool execute(ScriptRunner& r, ScriptError&) const override {
    CpuSet& set = r.cpu_set();
    nlohmann::json rows = nlohmann::json::array();
    for (unsigned i = 0; i < set.size(); ++i) {
      CpuThread* t = set.at(i);
      if (!t) continue;
      const Cpu& c = t->cpu();
      const CpuStats& s = c.stats();
      const uint32_t processed = static_cast<uint32_t>(s.processed.get());
      const uint32_t dropped = static_cast<uint32_t>(c.backlog_dropped());
      const uint32_t squeeze = static_cast<uint32_t>(s.time_squeeze.get());
      const uint32_t rps = static_cast<uint32_t>(s.received_rps.get());
      const uint32_t qlen = c.backlog_queued();
      if (r.json()) {
        rows.push_back({{"cpu", i}, {"processed", processed}, {"dropped", dropped}, {"time_squeeze", squeeze},
                        {"received_rps", rps}, {"flow_limit_count", 0}, {"backlog_len", qlen}});
      } else {
        std::fprintf(r.out(), "%08x %08x %08x %08x %08x %08x %08x %08x %08x %08x %08x %08x %08x\n", processed,
                     dropped, squeeze, 0u, 0u, 0u, 0u, 0u, 0u, rps, 0u, qlen, i);
      }
    }
    if (r.json()) std::fprintf(r.out(), "%s\n", json_text(nlohmann::json{{"softnet_stat", rows}}).c_str());
    return true;
  }
};

class SnmpLine final : public ExtLine {
 public:
  bool execute(ScriptRunner& r, ScriptError&) const override {
    const HostStats h = host_stats(r.net());
    const uint64_t in = h.in_echos + h.in_echo_reps, out = h.out_echo_reps;
    if (r.json()) {
      const nlohmann::json j{{"Icmp", {{"InMsgs", in}, {"InEchos", h.in_echos}, {"InEchoReps", h.in_echo_reps},
                                        {"OutMsgs", out}, {"OutEchoReps", out}}}};
      std::fprintf(r.out(), "%s\n", json_text(j).c_str());
      return true;
    }
    // Icmp's columns as 6.1 prints them (icmp_put); pktpath counts the echo ones.
    std::fprintf(r.out(),
                 "Icmp: InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs "
                 "InRedirects InEchos InEchoReps InTimestamps InTimestampReps InAddrMasks InAddrMaskReps OutMsgs "
                 "OutErrors OutRateLimitGlobal OutRateLimitHost OutDestUnreachs OutTimeExcds OutParmProbs "
                 "OutSrcQuenchs OutRedirects OutEchos OutEchoReps OutTimestamps OutTimestampReps OutAddrMasks "
                 "OutAddrMaskReps\n");
    std::fprintf(r.out(),
                 "Icmp: %" PRIu64 " 0 0 0 0 0 0 0 %" PRIu64 " %" PRIu64 " 0 0 0 0 %" PRIu64
                 " 0 0 0 0 0 0 0 0 0 %" PRIu64 " 0 0 0 0\n",
                 in, h.in_echos, h.in_echo_reps, out, out);
    return true;
  }
};

}  // namespace

std::optional<bool> parse_proc_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  if (w.size() != 2) return fail(err, w.size() > 2 ? w[2] : w[0], "usage: cat /proc/net/softnet_stat | /proc/net/snmp");
  if (w[1] == "/proc/net/softnet_stat") {
    out.line = std::make_shared<SoftnetStatLine>();
    return true;
  }
  if (w[1] == "/proc/net/snmp") {
    out.line = std::make_shared<SnmpLine>();
    return true;
  }
  return fail(err, w[1], "cat: only /proc/net/softnet_stat and /proc/net/snmp are known");
}

}  // namespace pktpath::cli
