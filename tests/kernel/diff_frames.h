// Frames for the differential tests: the same list sent into a kernel veth (AF_PACKET from
// python3 in the namespace) and replayed by a pktpath pcap device; and how many lines of
// two outputs differ.
#pragma once

#include <pcap/pcap.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "drivers/kernel_ns.h"

namespace pktpath::kernel_test {

using Frame = std::vector<uint8_t>;

// Ethernet + IPv4 + UDP or TCP, 64 bytes and up, checksums left 0 (no one checks them).
inline Frame frame(uint32_t saddr, uint32_t daddr, uint8_t proto, uint16_t dport, size_t pad) {
  Frame b = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00};
  const size_t l4 = proto == 6 ? 20 : 8;
  const size_t tot = 20 + l4 + pad;
  auto u16 = [&](uint32_t v) { b.push_back(static_cast<uint8_t>(v >> 8)), b.push_back(static_cast<uint8_t>(v)); };
  auto u32 = [&](uint32_t v) { u16(v >> 16), u16(v & 0xffff); };
  b.push_back(0x45), b.push_back(0), u16(static_cast<uint32_t>(tot)), u16(1), u16(0), b.push_back(64), b.push_back(proto), u16(0);
  u32(saddr), u32(daddr);
  u16(40000), u16(dport);
  if (proto == 6) u32(1), u32(0), u16(0x5002), u16(512), u16(0), u16(0);
  else u16(static_cast<uint32_t>(8 + pad)), u16(0);
  b.resize(b.size() + pad, 0xab);
  return b;
}

inline std::string hex(const Frame& f) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t c : f) s += d[c >> 4], s += d[c & 15];
  return s;
}

// The frames as a pcap file (for pktpath's `type pcap rx FILE`).
inline bool write_pcap(const std::string& path, const std::vector<Frame>& fs) {
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  if (!d) {
    pcap_close(dead);
    return false;
  }
  for (const Frame& f : fs) {
    pcap_pkthdr ph{};
    ph.caplen = ph.len = static_cast<bpf_u_int32>(f.size());
    pcap_dump(reinterpret_cast<u_char*>(d), &ph, f.data());
  }
  pcap_dump_close(d);
  pcap_close(dead);
  return true;
}

// Sends the frames out of `dev` in kernel namespace `ns` (they arrive at its veth peer),
// then waits for veth's NAPI poll to have delivered them. False when python3 failed.
inline bool kernel_send(const std::string& ns, const std::string& dev, const std::vector<Frame>& fs) {
  const std::string tag = std::to_string(::getpid());
  const std::string hexfile = ::testing::TempDir() + "diff_frames_" + tag + ".hex";
  const std::string pyfile = ::testing::TempDir() + "diff_frames_" + tag + ".py";
  {
    std::ofstream h(hexfile);
    for (const Frame& f : fs) h << hex(f) << "\n";
  }
  std::ofstream(pyfile) << "import socket,sys\n"
                           "s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\n"
                           "s.bind((sys.argv[2],0))\n"
                           "for l in open(sys.argv[1]).read().split(): s.send(bytes.fromhex(l))\n";
  const bool ok = sh("ip netns exec " + ns + " python3 " + pyfile + " " + hexfile + " " + dev);
  ::usleep(300 * 1000);
  std::remove(hexfile.c_str());
  std::remove(pyfile.c_str());
  return ok;
}

// Lines that differ, position by position (a missing line counts as differing).
// The digits after each `key` in s replaced by "*".
inline void star_number_after(std::string& s, const std::string& key) {
  for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + key.size())) {
    size_t end = at + key.size();
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    if (end > at + key.size()) s.replace(at + key.size(), end - at - key.size(), "*");
  }
}

// Each JSON member `"key":VALUE` in s removed with its comma (VALUE a number or an
// object, braces balanced).
inline void erase_json_member(std::string& s, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  for (size_t at = s.find(k); at != std::string::npos; at = s.find(k, at)) {
    size_t end = at + k.size();
    if (end < s.size() && s[end] == '{') {
      for (int depth = 0; end < s.size(); ++end) {
        depth += s[end] == '{';
        depth -= s[end] == '}';
        if (depth == 0) break;
      }
      ++end;
    } else {
      while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    }
    if (end < s.size() && s[end] == ',')
      ++end;
    else if (at > 0 && s[at - 1] == ',')
      --at;
    s.erase(at, end - at);
  }
}

// What may differ between the kernel's tc and pktpath's, and why, in one place:
// - `refcnt N` ("refcnt":N in JSON): the kernel counts the references its tx queues and
//   the dump itself hold; pktpath's qdiscs have no reference count.
// - ` installed N sec used N sec [firstused N sec]` after an action's index (JSON
//   "installed", "last_used", "first_used"): wall-clock ages of the kernel's action, each
//   printed only once a 10 ms tick has passed; pktpath keeps no timestamps of use.
// - pktpath's own line under a bpf filter (`\t Sent N bytes N pkt (matched N, dropped N)
//   engine E`, JSON "pktpath_stats"): the classifier's counters and engine, which the
//   kernel does not keep.
// - u32's `(rule hit N success N)` (JSON "rule_hit", "success"): this kernel is built
//   without CONFIG_CLS_U32_PERF, pktpath counts as a kernel with it does.
inline std::string normalise_tc(std::string s) {
  star_number_after(s, " refcnt ");
  star_number_after(s, "\"refcnt\":");
  for (size_t at = s.find("\n\t Sent "); at != std::string::npos; at = s.find("\n\t Sent ", at)) {
    const size_t end = s.find('\n', at + 1);
    if (s.find(" engine ", at) > end) {
      at = end;
      continue;
    }
    s.erase(at, end == std::string::npos ? std::string::npos : end - at);
  }
  for (size_t at = s.find(" installed "); at != std::string::npos; at = s.find(" installed ", at)) {
    const size_t end = s.find('\n', at);
    s.erase(at, end == std::string::npos ? std::string::npos : end - at);
  }
  for (const char* key : {"installed", "last_used", "first_used", "pktpath_stats", "rule_hit", "success"})
    erase_json_member(s, key);
  for (size_t at = s.find("(rule hit "); at != std::string::npos; at = s.find("(rule hit ", at)) {
    const size_t end = s.find(')', at);
    if (end == std::string::npos || s.compare(at, 10, "(rule hit ") != 0 || s.find(" success ", at) > end) {
      at += 10;
      continue;
    }
    s.erase(at, end + 1 - at);
  }
  return s;
}

inline size_t differing_lines(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  size_t differ = 0;
  for (;;) {
    std::string x, y;
    const bool more_a = static_cast<bool>(std::getline(a, x)), more_b = static_cast<bool>(std::getline(b, y));
    if (!more_a && !more_b) break;
    differ += x != y;
  }
  return differ;
}

}  // namespace pktpath::kernel_test
