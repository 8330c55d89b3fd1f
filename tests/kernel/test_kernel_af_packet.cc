// The kernel-baseline sender's option parser and frame (bench/kernel); the sender itself
// needs CAP_NET_RAW and a namespace, so scripts/kernel-baseline is its test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../bench/kernel/af_packet_args.h"
#include "../../bench/kernel/af_packet_frame.h"

namespace {

struct Parsed {
  kbase::ParseResult res;
  kbase::AfPacketOptions opt;
};

Parsed parse(std::vector<std::string> words) {
  std::vector<const char*> argv{"kernel_af_packet"};
  for (const auto& w : words) argv.push_back(w.c_str());
  Parsed p;
  p.res = kbase::parse_af_packet_args(static_cast<int>(argv.size()), argv.data(), p.opt);
  return p;
}

TEST(KernelAfPacketArgs, DefaultsAreDocument000s) {
  Parsed p = parse({"-i", "lo"});
  ASSERT_TRUE(p.res.ok) << p.res.error;
  EXPECT_EQ(p.opt.ifname, "lo");
  EXPECT_EQ(p.opt.mode, kbase::TxMode::Ring);
  EXPECT_DOUBLE_EQ(p.opt.duration_s, 2.0);
  EXPECT_EQ(p.opt.repeat, 1u);
  EXPECT_EQ(p.opt.frames, 1024u);
  EXPECT_EQ(p.opt.dst_ip, 0x01010101u);
  for (uint8_t b : p.opt.dst_mac) EXPECT_EQ(b, 0x11);
}

TEST(KernelAfPacketArgs, EveryOptionInBothForms) {
  Parsed p = parse({"--dev=eth0", "--duration", "0.5", "--repeat=6", "--mode", "sendto", "--frames=64", "-m",
                    "aa:BB:cc:00:01:ff", "-d", "198.18.0.42"});
  ASSERT_TRUE(p.res.ok) << p.res.error;
  EXPECT_EQ(p.opt.ifname, "eth0");
  EXPECT_DOUBLE_EQ(p.opt.duration_s, 0.5);
  EXPECT_EQ(p.opt.repeat, 6u);
  EXPECT_EQ(p.opt.mode, kbase::TxMode::Sendto);
  EXPECT_EQ(p.opt.frames, 64u);
  const std::array<uint8_t, 6> mac{0xaa, 0xbb, 0xcc, 0x00, 0x01, 0xff};
  EXPECT_EQ(p.opt.dst_mac, mac);
  EXPECT_EQ(p.opt.dst_ip, (198u << 24) | (18u << 16) | 42u);
  EXPECT_FALSE(p.opt.help);
}

TEST(KernelAfPacketArgs, HelpNeedsNoInterface) {
  Parsed p = parse({"--help"});
  ASSERT_TRUE(p.res.ok) << p.res.error;
  EXPECT_TRUE(p.opt.help);
}

TEST(KernelAfPacketArgs, RejectsBadInputNamingOptionAndValue) {
  struct Case {
    std::vector<std::string> words;
    std::string must_contain;
  };
  const std::vector<Case> cases = {
      {{}, "-i IFNAME is required"},
      {{"-i", "lo", "--bogus"}, "unknown option '--bogus'"},
      {{"-i", "lo", "extra"}, "argument 3"},
      {{"-i"}, "-i needs a value"},
      {{"-i", "lo", "--duration"}, "--duration needs a value"},
      {{"-i", "a/b"}, "'a/b'"},
      {{"-i", "sixteen-chars-xx"}, "interface name"},
      {{"-i", ""}, "interface name"},
      {{"-i", "lo", "--duration", "0"}, "--duration: '0'"},
      {{"-i", "lo", "--duration", "-1"}, "'-1'"},
      {{"-i", "lo", "--duration", "abc"}, "'abc'"},
      {{"-i", "lo", "--duration", "nan"}, "'nan'"},
      {{"-i", "lo", "--duration", "inf"}, "'inf'"},
      {{"-i", "lo", "--duration", "2s"}, "'2s'"},
      {{"-i", "lo", "--duration", "3601"}, "'3601'"},
      {{"-i", "lo", "--repeat", "0"}, "--repeat: '0'"},
      {{"-i", "lo", "--repeat", "1001"}, "'1001'"},
      {{"-i", "lo", "--repeat", "-3"}, "'-3'"},
      {{"-i", "lo", "--repeat", "99999999999"}, "'99999999999'"},
      {{"-i", "lo", "--mode", "bypass"}, "--mode: 'bypass'"},
      {{"-i", "lo", "--frames", "0"}, "--frames: '0'"},
      {{"-i", "lo", "--frames", "65537"}, "'65537'"},
      {{"-i", "lo", "-m", "11:11:11:11:11"}, "-m: '11:11:11:11:11'"},
      {{"-i", "lo", "-m", "11:11:11:11:11:1g"}, "MAC"},
      {{"-i", "lo", "-m", "11-11-11-11-11-11"}, "MAC"},
      {{"-i", "lo", "-d", "1.1.1"}, "-d: '1.1.1'"},
      {{"-i", "lo", "-d", "1.1.1.256"}, "IPv4"},
      {{"-i", "lo", "-d", "1.1.1.1.1"}, "IPv4"},
      {{"-i", "lo", "-d", "1..1.1"}, "IPv4"},
      {{"-i", "lo", "-d", "+1.1.1.1"}, "IPv4"},
      {{"-i", "lo", "-d", "0001.1.1.1"}, "IPv4"},
      {{"-i", "lo", "--help=yes"}, "takes no value"},
  };
  for (const auto& c : cases) {
    Parsed p = parse(c.words);
    std::string shown;
    for (const auto& w : c.words) shown += "[" + w + "]";
    EXPECT_FALSE(p.res.ok) << shown;
    EXPECT_NE(p.res.error.find(c.must_contain), std::string::npos) << shown << " -> " << p.res.error;
  }
}

TEST(KernelAfPacketFrame, IsPktgensSixtyByteUdpFrame) {
  kbase::FrameFields f;
  f.dst_mac = {0x11, 0x11, 0x11, 0x11, 0x11, 0x11};
  f.src_mac = {0x02, 0, 0, 0, 0, 0x01};
  f.saddr = 0;
  f.daddr = 0x01010101;
  f.ip_id = 0;
  f.seq = 7;
  uint8_t b[kbase::kFrameLen + 4];
  std::fill(std::begin(b), std::end(b), 0xee);
  kbase::build_pktgen_frame(b, f);
  EXPECT_EQ(b[kbase::kFrameLen], 0xee) << "wrote past 60 bytes";
  for (int i = 0; i < 6; ++i) EXPECT_EQ(b[i], 0x11);
  EXPECT_EQ(b[6], 0x02);
  EXPECT_EQ(b[11], 0x01);
  EXPECT_EQ(b[12], 0x08);
  EXPECT_EQ(b[13], 0x00);
  const uint8_t* ip = b + 14;
  EXPECT_EQ(ip[0], 0x45);
  EXPECT_EQ(ip[2] << 8 | ip[3], 46);  // 60 - 14
  EXPECT_EQ(ip[8], 32);               // ttl
  EXPECT_EQ(ip[9], 17);               // UDP
  // 4500 + 002e + 2011 + 0101 + 0101 = 6741, inverted: 98be (worked by hand).
  EXPECT_EQ(ip[10] << 8 | ip[11], 0x98be);
  EXPECT_EQ(kbase::kb_ipv4_checksum(ip, 20), 0) << "the header must sum to all ones";
  const uint8_t* udp = ip + 20;
  EXPECT_EQ(udp[0] << 8 | udp[1], 9);
  EXPECT_EQ(udp[2] << 8 | udp[3], 9);
  EXPECT_EQ(udp[4] << 8 | udp[5], 26);
  EXPECT_EQ(udp[6] << 8 | udp[7], 0);
  const uint8_t* pgh = udp + 8;
  EXPECT_EQ(uint32_t(pgh[0]) << 24 | pgh[1] << 16 | pgh[2] << 8 | pgh[3], kbase::kPktgenMagic);
  EXPECT_EQ(pgh[7], 7);
}

TEST(KernelAfPacketFrame, ChecksumFollowsTheFields) {
  kbase::FrameFields f;
  f.saddr = 0x7f000001;
  f.daddr = 0xc6120002;
  for (uint32_t id : {0u, 1u, 0x1234u, 0xffffu}) {
    f.ip_id = static_cast<uint16_t>(id);
    uint8_t b[kbase::kFrameLen];
    kbase::build_pktgen_frame(b, f);
    EXPECT_EQ(kbase::kb_ipv4_checksum(b + 14, 20), 0) << "id " << id;
    EXPECT_EQ(b[14 + 4] << 8 | b[14 + 5], static_cast<int>(id));
  }
}

}  // namespace
