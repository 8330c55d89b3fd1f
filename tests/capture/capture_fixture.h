// Fixture for tap tests: the tc fixture (devices, a bound Cpu, receive/send helpers) plus
// IPv4 packets with a chosen destination, tap attach helpers, a pcap reader and the CLI
// run in-process.
#pragma once

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../tc/tc_fixture.h"
#include "bpf/parse.h"
#include "cli/command.h"
#include "core/tap.h"

namespace pktpath::testing {

// 192.168.a.b in host order.
inline uint32_t ip4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return a << 24 | b << 16 | c << 8 | d; }

class CaptureFixture : public TcFixture {
 protected:
  // An Ethernet/IPv4/UDP frame of `size` bytes to `dst` (host order); byte i of the
  // payload is (i + seed) & 0xff so files can be compared byte for byte.
  Packet* ip_packet(NetDevice* d, uint32_t dst, uint32_t size = 60, uint8_t seed = 0) {
    Packet* p = cpu.alloc();
    EXPECT_NE(p, nullptr);
    if (!p) return nullptr;
    uint8_t* h = p->put(size);
    for (uint32_t i = 0; i < size; ++i) h[i] = static_cast<uint8_t>(i + seed);
    std::memset(h, 0x11, 6);
    std::memcpy(h + 6, d->mac().data(), 6);
    h[12] = 0x08;
    h[13] = 0x00;
    uint8_t* ip = h + 14;
    ip[0] = 0x45;
    ip[1] = 0;
    const uint16_t tot = htons(static_cast<uint16_t>(size - 14));
    std::memcpy(ip + 2, &tot, 2);
    ip[6] = ip[7] = 0;  // no fragment
    ip[8] = 64;
    ip[9] = 17;
    const uint32_t src = htonl(ip4(10, 0, 0, 1)), ndst = htonl(dst);
    std::memcpy(ip + 12, &src, 4);
    std::memcpy(ip + 16, &ndst, 4);
    p->protocol = htons(0x0800);
    p->dev = d;
    return p;
  }
  int receive_ip(NetDevice* d, uint32_t dst, uint32_t size = 60, uint8_t seed = 0) {
    Packet* p = ip_packet(d, dst, size, seed);
    if (!p) return -1;
    ++sent;
    return netif_receive_skb(cpu, p);
  }
  int send_ip(NetDevice* d, uint32_t dst, uint32_t size = 60) {
    Packet* p = ip_packet(d, dst, size);
    if (!p) return -1;
    ++sent;
    return dev_queue_xmit(cpu, p);
  }
  static TapSpec tap_spec(const std::string& expr, uint32_t snaplen = kTapDefaultSnaplen, uint64_t count = 0,
                          const std::string& file = "") {
    TapSpec s;
    s.snaplen = snaplen;
    s.count = count;
    s.pcap_path = file;
    if (!expr.empty()) {
      bpf::CompileOptions o;
      o.snaplen = static_cast<int>(snaplen);
      std::string err;
      EXPECT_TRUE(bpf::compile_expression(expr, o, &s.insns, &err)) << err;
      s.has_filter = true;
      s.filter = expr;
    }
    return s;
  }
  std::shared_ptr<Tap> attach(NetDevice* d, TapSpec s) {
    std::string err;
    auto t = tap_attach(*d, std::move(s), &err);
    EXPECT_NE(t, nullptr) << err;
    return t;
  }
  std::string temp_path(const std::string& name) {
    return ::testing::TempDir() + "pktpath_capture_" + std::to_string(::getpid()) + "_" + name;
  }
};

struct PcapRecord {
  uint32_t caplen = 0, len = 0;
  std::vector<uint8_t> bytes;
};

// Every record of a pcap file, read back with libpcap; false when it does not open.
inline bool read_pcap_file(const std::string& path, std::vector<PcapRecord>* out, int* linktype = nullptr,
                           int* snaplen = nullptr) {
  char errbuf[PCAP_ERRBUF_SIZE];
  pcap_t* pc = pcap_open_offline(path.c_str(), errbuf);
  if (!pc) return false;
  if (linktype) *linktype = pcap_datalink(pc);
  if (snaplen) *snaplen = pcap_snapshot(pc);
  pcap_pkthdr* h;
  const u_char* data;
  while (pcap_next_ex(pc, &h, &data) == 1) out->push_back({h->caplen, h->len, {data, data + h->caplen}});
  pcap_close(pc);
  return true;
}

struct RunOut {
  int rc;
  std::string out, err;
};

// `pktpath ARGS...` in this process, its stdout and stderr captured.
inline RunOut run_pktpath(const std::vector<std::string>& args) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = cli::run_main(args);
  std::fflush(stdout);
  return {rc, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
}

// `pktpath run [--json] SCRIPT` on the text.
inline RunOut run_script(const std::string& text, bool json) {
  const std::string path = ::testing::TempDir() + "pktpath_capture_script_" + std::to_string(::getpid()) + ".pp";
  {
    std::ofstream f(path);
    f << text;
  }
  std::vector<std::string> args = {"run"};
  if (json) args.push_back("--json");
  args.push_back(path);
  RunOut r = run_pktpath(args);
  std::remove(path.c_str());
  return r;
}

}  // namespace pktpath::testing
