// Command-line options of kernel_af_packet (the kernel-baseline sender). Header-only so
// that tests/kernel can check the parser without linking the tool or pktpath_lib.
#pragma once

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace kbase {

enum class TxMode { Ring, Sendto };

struct AfPacketOptions {
  std::string ifname;                      // -i, required
  double duration_s = 2.0;                 // --duration
  unsigned repeat = 1;                     // --repeat
  TxMode mode = TxMode::Ring;              // --mode ring|sendto
  unsigned frames = 1024;                  // --frames: TX ring slots
  std::array<uint8_t, 6> dst_mac{0x11, 0x11, 0x11, 0x11, 0x11, 0x11};  // -m
  uint32_t dst_ip = 0x01010101;            // -d, host order
  bool help = false;
};

struct ParseResult {
  bool ok = false;
  std::string error;  // names the option and the bad value when !ok
};

inline constexpr const char* kAfPacketUsage =
    "usage: kernel_af_packet -i IFNAME [--duration S] [--repeat R] [--mode ring|sendto]\n"
    "                        [--frames N] [-m DST_MAC] [-d DST_IP]\n"
    "  Sends pktgen's 60-byte Ethernet/IPv4/UDP frame (UDP 9->9) from an AF_PACKET socket\n"
    "  bound to IFNAME as fast as the kernel takes it, through dev_queue_xmit (tc and\n"
    "  netfilter egress run; PACKET_QDISC_BYPASS is not set). Needs CAP_NET_RAW.\n"
    "  --mode ring    PACKET_TX_RING (TPACKET_V2): mark the ring, one send() flushes it (default)\n"
    "  --mode sendto  one sendto() per frame\n"
    "  --duration S   seconds per run, 0.01..3600 (default 2)\n"
    "  --repeat R     runs, 1..1000 (default 1); R > 1 adds min/median/max\n"
    "  --frames N     TX ring slots, 1..65536, rounded up to whole pages (default 1024)\n"
    "  -m MAC         destination MAC (default 11:11:11:11:11:11, document 000's)\n"
    "  -d IP          destination IPv4 (default 1.1.1.1)\n";

inline bool parse_af_packet_double(std::string_view s, double& out) {
  if (s.empty() || s.size() > 32) return false;
  std::string tmp(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(tmp.c_str(), &end);
  if (errno != 0 || end != tmp.c_str() + tmp.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

inline bool parse_af_packet_uint(std::string_view s, unsigned long& out) {
  if (s.empty() || s.size() > 10) return false;
  unsigned long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned long>(c - '0');
  }
  out = v;
  return true;
}

inline bool parse_af_packet_mac(std::string_view s, std::array<uint8_t, 6>& out) {
  if (s.size() != 17) return false;
  for (size_t i = 0; i < 6; ++i) {
    unsigned v = 0;
    for (size_t k = 0; k < 2; ++k) {
      char c = s[i * 3 + k];
      unsigned d;
      if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
      else return false;
      v = v * 16 + d;
    }
    if (i < 5 && s[i * 3 + 2] != ':') return false;
    out[i] = static_cast<uint8_t>(v);
  }
  return true;
}

// Dotted quad, each part 0..255 without a sign; result in host order.
inline bool parse_af_packet_ipv4(std::string_view s, uint32_t& out) {
  uint32_t v = 0;
  size_t pos = 0;
  for (int part = 0; part < 4; ++part) {
    size_t start = pos;
    unsigned n = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - start < 3) {
      n = n * 10 + static_cast<unsigned>(s[pos] - '0');
      ++pos;
    }
    if (pos == start || n > 255) return false;
    v = (v << 8) | n;
    if (part < 3) {
      if (pos >= s.size() || s[pos] != '.') return false;
      ++pos;
    }
  }
  if (pos != s.size()) return false;
  out = v;
  return true;
}

// Accepts "--opt VALUE" and "--opt=VALUE" (and "-i VALUE"); unknown or repeated-meaningless
// words are errors. A later occurrence of an option overrides an earlier one.
inline ParseResult parse_af_packet_args(int argc, const char* const* argv, AfPacketOptions& o) {
  auto fail = [](std::string msg) { return ParseResult{false, std::move(msg)}; };
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view name = arg, value;
    bool inline_value = false;
    if (arg.starts_with("--")) {
      if (size_t eq = arg.find('='); eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inline_value = true;
      }
    }
    if (name == "-h" || name == "--help") {
      if (inline_value) return fail("option " + std::string(name) + " takes no value");
      o.help = true;
      continue;
    }
    const bool known = name == "-i" || name == "--dev" || name == "--duration" || name == "--repeat" ||
                       name == "--mode" || name == "--frames" || name == "-m" || name == "-d";
    if (!known) return fail("argument " + std::to_string(i) + ": unknown option '" + std::string(arg) + "'");
    if (!inline_value) {
      if (i + 1 >= argc) return fail("option " + std::string(name) + " needs a value");
      value = argv[++i];
    }
    const std::string shown = "option " + std::string(name) + ": '" + std::string(value) + "' ";
    if (name == "-i" || name == "--dev") {
      // IFNAMSIZ is 16 including the terminating NUL.
      if (value.empty() || value.size() > 15 || value.find('/') != std::string_view::npos ||
          value.find(' ') != std::string_view::npos)
        return fail(shown + "is not an interface name (1..15 characters, no '/' or space)");
      o.ifname = std::string(value);
    } else if (name == "--duration") {
      double d = 0;
      if (!parse_af_packet_double(value, d) || d < 0.01 || d > 3600)
        return fail(shown + "is not a duration in seconds (0.01..3600)");
      o.duration_s = d;
    } else if (name == "--repeat") {
      unsigned long r = 0;
      if (!parse_af_packet_uint(value, r) || r < 1 || r > 1000) return fail(shown + "is not a run count (1..1000)");
      o.repeat = static_cast<unsigned>(r);
    } else if (name == "--mode") {
      if (value == "ring") o.mode = TxMode::Ring;
      else if (value == "sendto") o.mode = TxMode::Sendto;
      else return fail(shown + "is not a mode (ring or sendto)");
    } else if (name == "--frames") {
      unsigned long f = 0;
      if (!parse_af_packet_uint(value, f) || f < 1 || f > 65536)
        return fail(shown + "is not a ring size in frames (1..65536)");
      o.frames = static_cast<unsigned>(f);
    } else if (name == "-m") {
      if (!parse_af_packet_mac(value, o.dst_mac)) return fail(shown + "is not a MAC address (xx:xx:xx:xx:xx:xx)");
    } else if (name == "-d") {
      if (!parse_af_packet_ipv4(value, o.dst_ip)) return fail(shown + "is not an IPv4 address (a.b.c.d)");
    }
  }
  if (!o.help && o.ifname.empty()) return fail("option -i IFNAME is required");
  return ParseResult{true, {}};
}

}  // namespace kbase
