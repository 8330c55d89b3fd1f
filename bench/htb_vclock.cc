// pktpath's side of scripts/compare-htb on a virtual clock: the script's tc lines (read
// from stdin) set up a dummy device d0, then two senders keep the classes backlogged
// (1000-byte IPv4 frames to 10.0.0.0 and 10.0.0.1, one each every 10 us of virtual
// time: 800 Mbit/s per destination) while the clock advances in 10 us steps and the Cpu runs
// its timers and tx work (the htb watchdog drives the qdisc). Prints the Mbit/s of
// classes 1:10 and 1:20 over [0.5 s, T - 0.5 s]; CPU load on the machine cannot change
// the figure.
//
//   build/bench/htb_vclock [--seconds T] [--only-first] < tc-lines
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "core/clock.h"
#include "core/dev_xmit.h"
#include "sched/qdisc.h"

namespace {

using namespace pktpath;

void send_to(Cpu& cpu, NetDevice* dev, uint8_t last_octet) {
  Packet* p = cpu.alloc();
  if (!p) return;
  uint8_t* d = p->put(1000);
  std::memset(d, 0, 1000);
  d[12] = 0x08;
  d[14] = 0x45;
  d[14 + 2] = 986 >> 8;
  d[14 + 3] = 986 & 0xff;
  d[14 + 8] = 64;
  d[14 + 9] = 17;
  const uint8_t addrs[8] = {10, 0, 1, 1, 10, 0, 0, last_octet};
  std::memcpy(d + 14 + 12, addrs, 8);
  p->protocol = 0x0008;
  p->dev = dev;
  dev_queue_xmit(cpu, p);
}

void class_bytes(Qdisc& q, uint64_t now, uint64_t& b10, uint64_t& b20) {
  b10 = b20 = 0;
  for (const auto& c : q.class_dump(now)) {
    if (c.classid == 0x10010) b10 = c.stats.bytes;
    if (c.classid == 0x10020) b20 = c.stats.bytes;
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 4;
  bool only_first = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
      if (!(seconds >= 2 && seconds <= 60)) {
        std::fprintf(stderr, "htb_vclock: --seconds must be 2..60\n");
        return 2;
      }
    } else if (a == "--only-first") {
      only_first = true;
    } else {
      std::fprintf(stderr, "usage: htb_vclock [--seconds T] [--only-first] < tc-lines\n");
      return 2;
    }
  }
  std::FILE* devnull = std::fopen("/dev/null", "w");
  cli::ScriptRunner runner(false, devnull ? devnull : stderr, 1u << 15);
  // The clock runs from the first line: the classes' buckets start on it.
  Cpu& cpu = runner.control_cpu();
  VirtualClock clock(1'000'000'000);
  cpu.set_clock(&clock);
  std::string line;
  int lineno = 0;
  while (std::getline(std::cin, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> w;
    cli::ScriptCommand c;
    cli::ScriptError e;
    if (!cli::tokenize_line(line, w, e) || !cli::parse_command(w, c, e) || !runner.execute(c, e)) {
      std::fprintf(stderr, "htb_vclock: line %d: %s (at \"%s\")\n", lineno, e.msg.c_str(), e.word.c_str());
      return 1;
    }
  }
  NetDevice* dev = runner.table().find("d0");
  if (!dev || !dev->qdisc()) {
    std::fprintf(stderr, "htb_vclock: the lines must create device d0 with a root htb\n");
    return 1;
  }
  const uint64_t step = 10000, start = clock.now_ns();
  const uint64_t t_a = start + 500'000'000, t_b = start + static_cast<uint64_t>((seconds - 0.5) * 1e9);
  uint64_t a10 = 0, a20 = 0, b10 = 0, b20 = 0;
  for (uint64_t t = start; t <= t_b; t += step) {
    clock.set(t);
    send_to(cpu, dev, 0);
    if (!only_first) send_to(cpu, dev, 1);
    cpu.run_pending();
    if (t == t_a) class_bytes(*dev->qdisc(), t, a10, a20);
  }
  class_bytes(*dev->qdisc(), t_b, b10, b20);
  const double secs = (t_b - t_a) / 1e9;
  std::printf("%.2f %.2f\n", (b10 - a10) * 8 / secs / 1e6, (b20 - a20) * 8 / secs / 1e6);
  (void)runner.table().set_up(*dev, false);  // drops what is queued before the clock goes
  cpu.set_clock(nullptr);
  if (devnull) std::fclose(devnull);
  return 0;
}
