// tcpdump's own words: the option parser, -d/-dd/-ddd and -r against the installed
// tcpdump, and the `tcpdump` script line's -Q, -i any, -w -, -c and per-packet lines.
#include <gtest/gtest.h>

#include <cctype>
#include <pcap/pcap.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "capture_fixture.h"
#include "cli/command.h"
#include "cli/script.h"
#include "cli/tcpdump_args.h"
#include "cli/tcpdump_print.h"

namespace pktpath::testing {
namespace {

using Bytes = std::vector<uint8_t>;

// --- frames ------------------------------------------------------------------------

void put16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(Bytes& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v >> 16));
  put16(b, static_cast<uint16_t>(v));
}
Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
const Bytes kMacA = {0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff},
            kMacB = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66},
            kBcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

Bytes eth(const Bytes& dst, const Bytes& src, uint16_t et, const Bytes& payload) {
  Bytes b = cat(dst, src);
  put16(b, et);
  return cat(b, payload);
}
Bytes ipv4(uint32_t s, uint32_t d, uint8_t proto, const Bytes& payload, uint16_t frag = 0x4000) {
  Bytes b = {0x45, 0};
  put16(b, static_cast<uint16_t>(20 + payload.size()));
  put16(b, 1);
  put16(b, frag);
  b.push_back(64);
  b.push_back(proto);
  put16(b, 0);
  put32(b, s);
  put32(b, d);
  return cat(b, payload);
}
Bytes ip6(uint8_t s_last, uint8_t d_last, uint8_t nh, const Bytes& payload) {
  Bytes b;
  put32(b, 0x60000000);
  put16(b, static_cast<uint16_t>(payload.size()));
  b.push_back(nh);
  b.push_back(64);
  for (uint8_t last : {s_last, d_last}) {
    Bytes a = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
    b = cat(b, a);
  }
  return cat(b, payload);
}
Bytes tcp(uint16_t sp, uint16_t dp, uint32_t seq, uint32_t ack, uint8_t flags, uint16_t win,
          const Bytes& opts = {}, size_t data = 0) {
  Bytes b;
  put16(b, sp);
  put16(b, dp);
  put32(b, seq);
  put32(b, ack);
  b.push_back(static_cast<uint8_t>(((20 + opts.size()) / 4) << 4));
  b.push_back(flags);
  put16(b, win);
  put32(b, 0);
  b = cat(b, opts);
  b.resize(b.size() + data, 'x');
  return b;
}
Bytes udp(uint16_t sp, uint16_t dp, size_t data) {
  Bytes b;
  put16(b, sp);
  put16(b, dp);
  put16(b, static_cast<uint16_t>(8 + data));
  put16(b, 0);
  b.resize(b.size() + data, 'y');
  return b;
}
Bytes icmp(uint8_t type, uint8_t code, uint16_t id, uint16_t seq, size_t data) {
  Bytes b = {type, code, 0, 0};
  put16(b, id);
  put16(b, seq);
  b.resize(b.size() + data, 0);
  return b;
}
Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }
Bytes arp(uint16_t op, const Bytes& sha, uint32_t spa, const Bytes& tha, uint32_t tpa) {
  Bytes b;
  put16(b, 1);
  put16(b, 0x0800);
  b.push_back(6);
  b.push_back(4);
  put16(b, op);
  b = cat(b, sha);
  put32(b, spa);
  b = cat(b, tha);
  put32(b, tpa);
  return b;
}
Bytes sll(uint16_t pkttype, uint16_t et, const Bytes& payload) {
  Bytes b;
  put16(b, pkttype);
  put16(b, 1);
  put16(b, 6);
  b = cat(b, kMacA);
  put16(b, 0);
  put16(b, et);
  return cat(b, payload);
}

// Ethernet frames whose terse lines tcpdump 4.99 prints from the headers pktpath decodes.
std::vector<Bytes> ether_frames() {
  const uint32_t a = ip4(10, 0, 0, 1), b = ip4(10, 0, 0, 2);
  const Bytes opts = {2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};
  const Bytes sack = {1, 1, 5, 10, 0, 0, 0x13, 0x8d, 0, 0, 0x13, 0x97};
  Bytes vlan = {0x20, 0x0a, 0x08, 0x00};
  std::vector<Bytes> f = {
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 6, tcp(1234, 80, 1, 0, 0x02, 512))),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 6, tcp(40000, 7000, 1000, 0, 0x02, 64240, opts))),
      eth(kMacA, kMacB, 0x0800, ipv4(b, a, 6, tcp(7000, 40000, 5000, 1001, 0x12, 65160, opts))),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 6, tcp(40000, 7000, 1001, 5001, 0x10, 502))),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 6, tcp(40000, 7000, 1001, 5001, 0x18, 502, {}, 11))),
      eth(kMacA, kMacB, 0x0800, ipv4(b, a, 6, tcp(7000, 40000, 5001, 1012, 0x10, 509, sack))),
      eth(kMacA, kMacB, 0x0800, ipv4(b, a, 6, tcp(7000, 40000, 5001, 1012, 0x11, 509))),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 6, tcp(40000, 7000, 1012, 0, 0x04, 0))),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 6, tcp(40001, 7001, 5, 8, 0xe2 | 0x20, 512))),
      eth(kMacB, kMacA, 0x0800,
          ipv4(a, b, 6, tcp(7001, 7002, 0xffffffff, 0xfffffff0, 0x10, 512, {}, 2))),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 17, udp(1234, 9999, 12))),
      eth(kMacB, kMacA, 0x0800,
          ipv4(ip4(192, 168, 2, 1), ip4(192, 168, 2, 2), 1, icmp(8, 0, 1, 1, 56))),
      eth(kMacA, kMacB, 0x0800,
          ipv4(ip4(192, 168, 2, 2), ip4(192, 168, 2, 1), 1, icmp(0, 0, 1, 1, 56))),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 1, icmp(11, 0, 0, 0, 28))),
      // ICMP errors quoting the failed packet: port unreachable (UDP, TCP, other),
      // net/host/protocol/admin unreachable, need-to-frag with an MTU, a redirect.
      eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(3, 3, 0, 0, 0), ipv4(a, b, 17, udp(1234, 5001, 20))))),
      eth(kMacB, kMacA, 0x0800,
          ipv4(b, a, 1, cat(icmp(3, 3, 0, 0, 0), ipv4(a, b, 6, tcp(40000, 80, 1, 0, 0x02, 512))))),
      eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(3, 3, 0, 0, 0), ipv4(a, b, 132, Bytes(8, 1))))),
      eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(3, 0, 0, 0, 0), ipv4(a, b, 17, udp(1, 2, 0))))),
      eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(3, 1, 0, 0, 0), ipv4(a, b, 17, udp(1, 2, 0))))),
      eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(3, 2, 0, 0, 0), ipv4(a, b, 47, Bytes(8, 0))))),
      eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(3, 13, 0, 0, 0), ipv4(a, b, 17, udp(1, 2, 0))))),
      eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(3, 4, 0, 1400, 0), ipv4(a, b, 17, udp(1, 2, 1500))))),
      eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(5, 1, 0x0a00, 0x00fe, 0), ipv4(a, b, 17, udp(1, 2, 0))))),
      eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(12, 0, 0x1400, 0, 0), ipv4(a, b, 17, udp(1, 2, 0))))),
      // HTTP on port 80: a request line, a response line, a segment of body, a line cut
      // by the end of the packet.
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 6, cat(tcp(40010, 80, 1, 1, 0x18, 512), text("GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n")))),
      eth(kMacA, kMacB, 0x0800, ipv4(b, a, 6, cat(tcp(80, 40010, 1, 1, 0x18, 512), text("HTTP/1.0 200 OK\r\nServer: y\r\n\r\n")))),
      eth(kMacA, kMacB, 0x0800, ipv4(b, a, 6, cat(tcp(80, 40010, 30, 1, 0x10, 512), text("<html><body>hello</body></html>")))),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 6, cat(tcp(40011, 8080, 1, 1, 0x18, 512), text("POST /form HTTP/1.1")))),
      eth(kMacB, kMacA, 0x86dd, ip6(1, 2, 17, udp(1234, 9999, 20))),
      eth(kMacB, kMacA, 0x86dd, ip6(1, 2, 58, icmp(128, 0, 7, 3, 16))),
      eth(kMacA, kMacB, 0x86dd, ip6(2, 1, 58, icmp(129, 0, 7, 3, 16))),
      eth(kMacB, kMacA, 0x86dd, ip6(1, 2, 6, tcp(40002, 7000, 7, 0, 0x02, 1024))),
      eth(kMacB, kMacA, 0x86dd, ip6(1, 2, 99, Bytes(16, 0))),
      eth(kBcast, kMacA, 0x0806, cat(arp(1, kMacA, a, Bytes(6, 0), b), Bytes(18, 0))),
      eth(kMacA, kMacB, 0x0806, cat(arp(2, kMacB, b, kMacA, a), Bytes(18, 0))),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 99, Bytes(8, 0))),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 17, udp(1234, 9999, 100), 0x2000)),
      eth(kMacB, kMacA, 0x0800, ipv4(a, b, 17, Bytes(80, 'x'), 13)),
      eth(kMacB, kMacA, 0x8100, cat(vlan, ipv4(a, b, 17, udp(1234, 9999, 12)))),
      eth(kMacB, kMacA, 0x1234, Bytes(46, 0x41)),
  };
  Bytes cut = eth(kMacB, kMacA, 0x0800, ipv4(a, b, 17, udp(1234, 9999, 12)));
  cut.resize(44);  // the IP header says 10 bytes more
  f.push_back(cut);
  return f;
}

// The frame with its IPv4 header checksum and its TCP, UDP or ICMPv6 checksum filled in
// (an Ethernet frame of ipv4() or ip6()), so that -v finds them correct.
Bytes checksummed(Bytes f) {
  auto sum = [](const uint8_t* p, size_t n, uint64_t s) {
    for (; n >= 2; p += 2, n -= 2) s += static_cast<uint32_t>(p[0] << 8 | p[1]);
    if (n) s += static_cast<uint32_t>(p[0] << 8);
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return static_cast<uint16_t>(~s);
  };
  auto set16 = [&](size_t at, uint16_t v) {
    f[at] = static_cast<uint8_t>(v >> 8);
    f[at + 1] = static_cast<uint8_t>(v);
  };
  const bool v6 = f[12] == 0x86 && f[13] == 0xdd;
  const size_t l3 = 14, hlen = v6 ? 40 : (f[l3] & 0xf) * 4u;
  if (!v6) set16(l3 + 10, sum(&f[l3], hlen, 0));
  const uint8_t proto = f[l3 + (v6 ? 6 : 9)];
  const size_t l4 = l3 + hlen, len = f.size() - l4;
  const size_t at = proto == 6 ? 16 : proto == 17 ? 6 : proto == 58 ? 2 : 0;
  if (!at) return f;
  uint64_t pseudo = proto + len;
  for (size_t i = 0; i < (v6 ? 32u : 8u); i += 2) pseudo += static_cast<uint32_t>(f[l3 + (v6 ? 8 : 12) + i] << 8 | f[l3 + (v6 ? 8 : 12) + i + 1]);
  set16(l4 + at, 0);
  set16(l4 + at, sum(&f[l4], len, pseudo));
  return f;
}

// A DNS name in labels.
Bytes dns_name(const std::string& n) {
  Bytes b;
  std::istringstream in(n);
  for (std::string label; std::getline(in, label, '.');)
    if (!label.empty()) {
      b.push_back(static_cast<uint8_t>(label.size()));
      b = cat(b, text(label));
    }
  b.push_back(0);
  return b;
}
// A DNS message: the header, then the sections' bytes as given.
Bytes dns(uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns, uint16_t ar, const Bytes& body) {
  Bytes b;
  for (uint16_t v : {id, flags, qd, an, ns, ar}) put16(b, v);
  return cat(b, body);
}
Bytes question(const std::string& n, uint16_t type, uint16_t cls = 1) {
  Bytes b = dns_name(n);
  put16(b, type);
  put16(b, cls);
  return b;
}
Bytes record(const Bytes& owner, uint16_t type, const Bytes& data, uint16_t cls = 1) {
  Bytes b = owner;
  put16(b, type);
  put16(b, cls);
  put32(b, 300);
  put16(b, static_cast<uint16_t>(data.size()));
  return cat(b, data);
}
Bytes udp_with(uint16_t sp, uint16_t dp, const Bytes& payload) {
  Bytes b;
  put16(b, sp);
  put16(b, dp);
  put16(b, static_cast<uint16_t>(8 + payload.size()));
  put16(b, 0);
  return cat(b, payload);
}

// DNS queries and responses on UDP port 53: the record types tcpdump decodes, flags,
// rcodes, counts it flags, compression pointers (one pointing forward: "<BAD PTR>"), a
// message cut short, TXT with unprintable bytes.
std::vector<Bytes> dns_frames() {
  const uint32_t a = ip4(10, 0, 0, 1), b = ip4(10, 0, 0, 2);
  const Bytes ptr = {0xc0, 0x0c};
  Bytes mx = {0, 10};
  Bytes soa = cat(dns_name("ns1.soa.org"), dns_name("root.soa.org"));
  for (uint32_t v : {1u, 2u, 3u, 4u, 5u}) put32(soa, v);
  Bytes srv = {0, 1, 0, 2, 0x13, 0xc4};
  Bytes aaaa;
  for (int i = 0; i < 16; ++i) aaaa.push_back(static_cast<uint8_t>(i));
  const std::vector<Bytes> msgs = {
      dns(0x1234, 0x0100, 1, 0, 0, 0, question("example.com", 1)),
      dns(0x1234, 0x8180, 1, 1, 0, 0, cat(question("example.com", 1), record(ptr, 1, {93, 184, 216, 34}))),
      dns(7, 0x8180, 1, 2, 0, 0,
          cat(cat(question("example.com", 28), record(ptr, 5, dns_name("www.example.net"))),
              record(dns_name("www.example.net"), 28, aaaa))),
      dns(8, 0x8183, 1, 0, 0, 0, question("nope.example", 1)),
      dns(9, 0x0000, 1, 0, 0, 0, question("x.org", 15)),
      dns(9, 0x8580, 1, 1, 0, 0, cat(question("x.org", 15), record(ptr, 15, cat(mx, dns_name("mail.x.org"))))),
      dns(10, 0x8180, 1, 1, 0, 0, cat(question("1.0.0.10.in-addr.arpa", 12), record(ptr, 12, dns_name("host.lan")))),
      dns(11, 0x8180, 1, 1, 0, 0, cat(question("t.org", 16), record(ptr, 16, text(std::string("\x05he\x01lo\x03\xe9" "bc", 10))))),
      dns(12, 0x8180, 1, 2, 0, 0,
          cat(cat(question("ns.org", 2), record(ptr, 2, dns_name("a.ns.org"))), record(ptr, 2, dns_name("b.ns.org")))),
      dns(13, 0x8180, 1, 1, 0, 0, cat(question("s.org", 33), record(ptr, 33, cat(srv, dns_name("sip.s.org"))))),
      dns(14, 0x0100, 1, 0, 0, 0, question("any.org", 255)),
      dns(15, 0x0100, 1, 0, 0, 0, question("odd.org", 1, 3)),
      dns(16, 0x8180, 1, 1, 0, 0, cat(question("soa.org", 6), record(ptr, 6, soa))),
      dns(17, 0x0100, 1, 0, 0, 1, cat(question("e.org", 1), record({0}, 41, {}, 4096))),
      dns(18, 0x0110, 1, 0, 0, 0, question("cd.org", 1)),
      dns(19, 0x85b0, 1, 1, 0, 0, cat(question("ad.org", 1), record(ptr, 1, {1, 2, 3, 4}))),
      dns(20, 0x8302, 2, 0, 1, 0, cat(question("a.org", 1), question("b.org", 1))),
      dns(21, 0x2100, 1, 0, 0, 0, question("u.org", 6)),
      dns(22, 0x0100, 1, 0, 0, 0, Bytes{0xc0, 0x20, 0, 1, 0, 1}),
      dns(23, 0x0100, 1, 0, 0, 0, question("trunc.example.org", 1)),
      dns(24, 0x0100, 1, 0, 0, 0, question("x", 300)),
      Bytes{0, 25, 1},
  };
  std::vector<Bytes> f;
  for (size_t i = 0; i < msgs.size(); ++i) {
    Bytes m = msgs[i];
    if (i == 19) m.resize(m.size() - 9);  // the question cut inside its name
    const bool response = m.size() > 2 && (m[2] & 0x80);
    f.push_back(checksummed(eth(kMacB, kMacA, 0x0800,
                                response ? ipv4(b, a, 17, udp_with(53, static_cast<uint16_t>(40000 + i), m))
                                         : ipv4(a, b, 17, udp_with(static_cast<uint16_t>(40000 + i), 53, m)))));
  }
  // Over IPv6, and the same with a checksum that does not verify (-v says so).
  f.push_back(checksummed(eth(kMacB, kMacA, 0x86dd, ip6(1, 2, 17, udp_with(5353, 53, msgs[0])))));
  Bytes bad = f.back();
  bad[bad.size() - 1] ^= 1;
  f.push_back(bad);
  return f;
}

// Frames for -v: checksums right and wrong, TOS with ECN, TTL 0, the fragment flags, IP
// options, an IPv6 flow label and traffic class, ICMP errors quoting their packet.
std::vector<Bytes> verbose_frames() {
  const uint32_t a = ip4(10, 0, 0, 1), b = ip4(10, 0, 0, 2);
  std::vector<Bytes> f;
  f.push_back(checksummed(eth(kMacB, kMacA, 0x0800, ipv4(a, b, 6, tcp(40000, 80, 1, 0, 0x02, 512)))));
  f.push_back(checksummed(eth(kMacB, kMacA, 0x0800, ipv4(a, b, 17, udp(1234, 9999, 12)))));
  f.push_back(checksummed(eth(kMacB, kMacA, 0x0800, ipv4(a, b, 1, icmp(8, 0, 1, 1, 56)))));
  Bytes tos = checksummed(eth(kMacB, kMacA, 0x0800, ipv4(a, b, 17, udp(1, 2, 4), 0x2000)));
  tos[15] = 0xb9;  // EF with ECT(1); the header checksum is now wrong
  tos[22] = 0;     // TTL 0 prints no ttl
  f.push_back(tos);
  Bytes opt = ipv4(a, b, 17, udp(1, 2, 0), 0xe000);
  opt.insert(opt.begin() + 20, {148, 4, 0, 1, 1, 0, 7, 3});  // RA 1, NOP, RR (bad length)
  opt[0] = 0x47;
  opt[3] = static_cast<uint8_t>(opt[3] + 8);
  f.push_back(eth(kMacB, kMacA, 0x0800, opt));
  Bytes v6 = checksummed(eth(kMacB, kMacA, 0x86dd, ip6(1, 2, 6, tcp(40002, 7000, 7, 0, 0x02, 1024))));
  v6[14] = 0x6b;
  v6[15] = 0x81;
  v6[16] = 0x23;
  f.push_back(v6);
  f.push_back(checksummed(eth(kMacB, kMacA, 0x86dd, ip6(1, 2, 58, icmp(128, 0, 7, 3, 16)))));
  f.push_back(eth(kMacB, kMacA, 0x86dd, ip6(2, 1, 58, icmp(129, 0, 7, 3, 16))));
  f.push_back(checksummed(eth(kMacB, kMacA, 0x0800,
                              ipv4(b, a, 1, cat(icmp(3, 3, 0, 0, 0), ipv4(a, b, 17, udp(1234, 5001, 20)))))));
  f.push_back(eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(11, 0, 0, 0, 0), ipv4(a, b, 6, tcp(1, 2, 3, 4, 0x10, 5))))));
  // An ICMP error quoting the 8 bytes of TCP header RFC 792 asks for: the quote is cut.
  Bytes head8 = tcp(1234, 80, 1, 0, 0x02, 512);
  head8.resize(8);
  f.push_back(checksummed(eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(3, 3, 0, 0, 0), ipv4(a, b, 6, head8))))));
  // A quoted UDP header to port 53 claiming 12 bytes the quote lacks: DNS of length 0.
  Bytes udp8 = udp(1234, 53, 12);
  udp8.resize(8);
  f.push_back(checksummed(eth(kMacB, kMacA, 0x0800, ipv4(b, a, 1, cat(icmp(3, 3, 0, 0, 0), ipv4(a, b, 17, udp8))))));
  // UDP lengths that do not fit: under the header, 0, and past the IP payload.
  for (uint16_t ulen : {5, 0, 100}) {
    Bytes u = udp(1000, 2000, 4);
    u[4] = static_cast<uint8_t>(ulen >> 8);
    u[5] = static_cast<uint8_t>(ulen);
    f.push_back(checksummed(eth(kMacB, kMacA, 0x0800, ipv4(a, b, 17, u))));
  }
  return f;
}

std::vector<Bytes> cooked_frames() {
  const uint32_t a = ip4(10, 0, 0, 1), b = ip4(10, 0, 0, 2);
  return {sll(0, 0x0800, ipv4(a, b, 17, udp(1234, 9999, 12))),
          sll(4, 0x0800, ipv4(a, b, 1, icmp(8, 0, 1, 1, 56))),
          sll(1, 0x0806, arp(1, kMacA, a, Bytes(6, 0), b)),
          sll(3, 0x86dd, ip6(1, 2, 17, udp(1, 2, 0))),
          sll(2, 0x0800, ipv4(a, b, 6, tcp(40000, 7000, 1, 0, 0x02, 512)))};
}

// A pcap file of the frames, one per second from 2025-12-01 12:00:00 UTC.
void write_pcap(const std::string& path, int dlt, const std::vector<Bytes>& frames) {
  pcap_t* pc = pcap_open_dead(dlt, 262144);
  pcap_dumper_t* d = pcap_dump_open(pc, path.c_str());
  ASSERT_NE(d, nullptr) << pcap_geterr(pc);
  for (size_t i = 0; i < frames.size(); ++i) {
    pcap_pkthdr h{};
    h.ts.tv_sec = 1764590400 + static_cast<time_t>(i);
    h.ts.tv_usec = static_cast<suseconds_t>(i * 1001);
    h.caplen = h.len = static_cast<uint32_t>(frames[i].size());
    if (i + 1 == frames.size() && dlt == DLT_EN10MB)
      h.len = h.caplen;  // the cut frame: as captured
    pcap_dump(reinterpret_cast<u_char*>(d), &h, frames[i].data());
  }
  pcap_dump_close(d);
  pcap_close(pc);
}

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "pktpath_tcpdump_" + std::to_string(::getpid()) + "_" + name;
}

bool have_tcpdump() { return std::system("command -v tcpdump >/dev/null 2>&1") == 0; }

// `TZ=UTC tcpdump ARGS` (stderr dropped): its stdout.
std::string run_tcpdump(const std::string& args) {
  std::string out;
  FILE* p = ::popen(("TZ=UTC tcpdump " + args + " 2>/dev/null").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

RunOut script(const std::string& text, bool json = false) { return run_script(text, json); }
RunOut pktpath(const std::vector<std::string>& args) { return run_pktpath(args); }

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> w;
  std::istringstream in(line);
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

// --- options -----------------------------------------------------------------------

TEST(TcpdumpArgs, CombinedFlagsJoinedValuesAndFilterWords) {
  cli::TcpdumpArgs a;
  cli::ScriptError err;
  ASSERT_TRUE(cli::parse_tcpdump_args(words("-nni eth0 -c10 -s0 -vvv -pU -e -Qin -w - udp port 9"),
                                      "tcpdump", a, err))
      << err.msg;
  EXPECT_EQ(a.dev, "eth0");
  EXPECT_EQ(a.count, 10u);
  EXPECT_EQ(a.snaplen, 262144u);
  EXPECT_EQ(a.verbose, 3);
  EXPECT_TRUE(a.packet_buffered);
  EXPECT_TRUE(a.link_header);
  EXPECT_EQ(a.direction, TapDirection::In);
  EXPECT_EQ(a.write, "-");
  EXPECT_EQ(a.filter, "udp port 9");

  // Values in the next word; options after the filter words (getopt permutes); `--`.
  cli::TcpdumpArgs b;
  ASSERT_TRUE(
      cli::parse_tcpdump_args(words("-i any tcp and port 80 -c 5 -s 96 -Q OUT -y EN10MB -ddd"),
                              "tcpdump", b, err) == false);  // -y EN10MB is not -i any's type
  EXPECT_EQ(err.word, "-y");
  cli::TcpdumpArgs c;
  ASSERT_TRUE(cli::parse_tcpdump_args(words("-i any tcp and port 80 -c 5 -s 96 -Q OUT -ddd -- -e"),
                                      "tcpdump", c, err))
      << err.msg;
  EXPECT_TRUE(c.any());
  EXPECT_EQ(c.count, 5u);
  EXPECT_EQ(c.snaplen, 96u);
  EXPECT_EQ(c.direction, TapDirection::Out);
  EXPECT_EQ(c.dump, 3);
  EXPECT_FALSE(c.link_header);
  EXPECT_EQ(c.filter, "tcp and port 80 -e");
  cli::TcpdumpArgs d;
  ASSERT_TRUE(
      cli::parse_tcpdump_args({"-r", "x.pcap", "-d", "-d", "ip and udp"}, "tcpdump", d, err));
  EXPECT_EQ(d.read, "x.pcap");
  EXPECT_EQ(d.dump, 2);
  EXPECT_EQ(d.filter, "ip and udp");
}

TEST(TcpdumpArgs, BadInputNamesTheWord) {
  struct Case {
    std::string line, word, msg;
  };
  const std::vector<Case> cases = {
      {"-x", "-x", "unknown option -x"},
      {"-nx", "-nx", "unknown option -x in \"-nx\""},
      {"--count 3", "--count", "unknown option"},
      {"-c", "-c", "missing value"},
      {"-ni", "-ni", "-i: missing value"},
      {"-c0", "0", "invalid packet count"},
      {"-c abc", "abc", "invalid packet count"},
      {"-c -3", "-3", "invalid packet count"},
      {"-s 300000", "300000", "invalid snaplen"},
      {"-Q sideways", "sideways", "unknown capture direction"},
      {"-y LINUX_SLL", "LINUX_SLL", "LINUX_SLL\" is not supported"},
  };
  for (const auto& c : cases) {
    cli::TcpdumpArgs a;
    cli::ScriptError err;
    EXPECT_FALSE(cli::parse_tcpdump_args(words(c.line), "tcpdump", a, err)) << c.line;
    EXPECT_EQ(err.word, c.word) << c.line;
    EXPECT_NE(err.msg.find(c.msg), std::string::npos) << c.line << ": " << err.msg;
  }
  // The command: usage errors exit 2, naming the word; a live capture needs a script.
  RunOut r = pktpath({"tcpdump", "-nx"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("pktpath: tcpdump: unknown option -x in \"-nx\""), std::string::npos)
      << r.err;
  r = pktpath({"tcpdump", "-r", "f.pcap", "-c", "0"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("invalid packet count \"0\""), std::string::npos) << r.err;
  r = pktpath({"tcpdump", "-i", "eth0", "udp"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("runs in a script"), std::string::npos) << r.err;
  r = pktpath({"tcpdump", "-r", "/nonexistent/x.pcap"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("/nonexistent/x.pcap"), std::string::npos) << r.err;
  // As a script line: the file, the line and the word.
  r = script("ip link add dev foo type dummy\ntcpdump -ni foo -c 0 udp\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(
      r.err.find(":2: tcpdump: -c: invalid packet count \"0\" (expected 1 or more) (at \"0\")"),
      std::string::npos)
      << r.err;
}

// --- against the installed tcpdump -------------------------------------------------

TEST(TcpdumpListing, DdAndDddAsTcpdumpPrintsThem) {
  if (!have_tcpdump()) GTEST_SKIP() << "tcpdump is not installed: nothing to compare with";
  const std::string en = temp("dump_en.pcap"), cooked = temp("dump_sll.pcap");
  write_pcap(en, DLT_EN10MB, ether_frames());
  write_pcap(cooked, DLT_LINUX_SLL, cooked_frames());
  for (const std::string filter :
       {"", "udp", "tcp port 80 and host 10.0.0.1", "ip6 or arp", "icmp[icmptype] == 8",
        "ip broadcast or ip multicast"})  // netmask 0, as tcpdump without an interface
    for (const std::string d : {"-d", "-dd", "-ddd"}) {
      const std::string quoted = "'" + filter + "'";
      const std::string want = run_tcpdump("-r " + en + " " + d + " " + quoted);
      ASSERT_FALSE(want.empty()) << filter;
      std::vector<std::string> args = {"tcpdump", d};
      if (!filter.empty()) args.push_back(filter);
      RunOut r = pktpath(args);  // no -i: Ethernet, 262144 as the file
      EXPECT_EQ(r.rc, 0) << r.err;
      EXPECT_EQ(r.out, want) << d << " " << filter;
      r = pktpath({"tcpdump", "-r", en, d, filter});  // the file's own type
      EXPECT_EQ(r.out, want) << d << " " << filter;
      // -i any compiles for LINUX_SLL, as a cooked capture's filter.
      const std::string want_sll = run_tcpdump("-r " + cooked + " " + d + " " + quoted);
      r = pktpath({"tcpdump", "-i", "any", d, filter});
      EXPECT_EQ(r.out, want_sll) << d << " " << filter;
      // The script line prints the same and captures nothing.
      RunOut s = script("tcpdump -i any " + d + " " + quoted + "\n");
      EXPECT_EQ(s.rc, 0) << s.err;
      EXPECT_EQ(s.out, want_sll) << d << " " << filter;
    }
  std::remove(en.c_str());
  std::remove(cooked.c_str());
}

TEST(TcpdumpRead, LinesAsTcpdumpNPrintsThem) {
  if (!have_tcpdump()) GTEST_SKIP() << "tcpdump is not installed: nothing to compare with";
  const std::string en = temp("read_en.pcap"), cooked = temp("read_sll.pcap"), dns_file = temp("read_dns.pcap"),
                    verbose_file = temp("read_v.pcap");
  write_pcap(en, DLT_EN10MB, ether_frames());
  write_pcap(cooked, DLT_LINUX_SLL, cooked_frames());
  write_pcap(dns_file, DLT_EN10MB, dns_frames());
  write_pcap(verbose_file, DLT_EN10MB, verbose_frames());
  struct Case {
    std::string file, opts, filter;
  };
  const std::vector<Case> cases = {
      {en, "-n", ""},
      {en, "-n -e", ""},
      {en, "-nn", "tcp or icmp6"},
      {en, "-n -c 3", "udp or arp"},
      {en, "-nec2", "ip6"},
      {cooked, "-n", ""},
      {cooked, "-n -e", ""},
      {cooked, "-n", "udp or arp"},
      {dns_file, "-n", ""},
      {dns_file, "-n -v", ""},
      {verbose_file, "-n -v", ""},
      {verbose_file, "-nev", ""},
      // Not the ICMP errors quoting SCTP and GRE, whose headers tcpdump decodes at -v.
      {en, "-n -v", "not icmp[17] = 132 and not icmp[17] = 47"},
      {cooked, "-n -v", ""},
      {en, "-n", "not ip broadcast"},  // a savefile's netmask is 0
  };
  for (const auto& c : cases) {
    const std::string want =
        run_tcpdump(c.opts + " -r " + c.file + (c.filter.empty() ? "" : " '" + c.filter + "'"));
    ASSERT_FALSE(want.empty()) << c.opts << " " << c.filter;
    std::vector<std::string> args = {"tcpdump"};
    for (const auto& w : words(c.opts)) args.push_back(w);
    args.push_back("-r");
    args.push_back(c.file);
    for (const auto& w : words(c.filter)) args.push_back(w);  // the words joined, as tcpdump does
    RunOut r = pktpath(args);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, want) << c.file << " " << c.opts << " " << c.filter;
    EXPECT_NE(r.err.find("reading from file " + c.file), std::string::npos) << r.err;
  }
  std::remove(en.c_str());
  std::remove(cooked.c_str());
  std::remove(dns_file.c_str());
  std::remove(verbose_file.c_str());
}

// A TCP option kind in the header's last byte has no length byte: a bad option, unnamed as
// tcpdump prints it, never read past the header (the frame ends there; ASan sees over-reads).
TEST(TcpdumpPrint, OptionKindInTheLastByteIsABadOption) {
  Bytes tcp;
  put16(tcp, 40000);
  put16(tcp, 80);
  put32(tcp, 1);
  put32(tcp, 0);
  tcp.push_back(6 << 4);  // 24-byte header: four option bytes
  tcp.push_back(0x02);    // SYN
  put16(tcp, 512);
  put16(tcp, 0);
  put16(tcp, 0);
  for (uint8_t b : {1, 1, 1, 2}) tcp.push_back(b);  // nop, nop, nop, then mss with no length
  const Bytes frame = eth(kMacB, kMacA, 0x0800, ipv4(0x0a000001, 0x0a000002, 6, tcp));
  auto exact = std::make_unique<uint8_t[]>(frame.size());
  std::copy(frame.begin(), frame.end(), exact.get());
  pcap_pkthdr h{};
  h.caplen = h.len = static_cast<uint32_t>(frame.size());
  cli::PacketPrinter printer(DLT_EN10MB, false);
  const std::string line = printer.format(h, exact.get());
  EXPECT_NE(line.find("options [nop,nop,nop,[bad opt]]"), std::string::npos) << line;
  EXPECT_EQ(line.back(), '\n');
}

// -r with -w copies what passes the filter (and -c) to a new file.
TEST(TcpdumpRead, CopyWithFilterAndCount) {
  const std::string en = temp("copy_in.pcap"), out = temp("copy_out.pcap");
  write_pcap(en, DLT_EN10MB, ether_frames());
  RunOut r = pktpath({"tcpdump", "-r", en, "-w", out, "-c", "2", "udp"});
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<PcapRecord> recs;
  int dlt = 0;
  ASSERT_TRUE(read_pcap_file(out, &recs, &dlt));
  EXPECT_EQ(dlt, DLT_EN10MB);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].bytes, ether_frames()[10]);  // the first UDP frame
  std::remove(en.c_str());
  std::remove(out.c_str());
}

// --- live captures in a script -----------------------------------------------------

const char* const kUp = "ip link add dev foo type dummy\nip link set dev foo up\n";

TEST(TcpdumpScript, DirectionSelectsReceivedOrSent) {
  const std::string in = temp("q_in.pcap"), out = temp("q_out.pcap"), both = temp("q_both.pcap");
  RunOut r =
      script(std::string(kUp) + "tcpdump -ni foo -Q in -w " + in + "\ncapture -i foo -Qout -w " +
                 out + "\ntcpdump -i foo -Q inout -w " + both +
                 "\npktgen -i foo -n 5 --mode netif_receive\nsend dev foo count 3\ncapture stop\n",
             true);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<PcapRecord> a, b, c;
  ASSERT_TRUE(read_pcap_file(in, &a));
  ASSERT_TRUE(read_pcap_file(out, &b));
  ASSERT_TRUE(read_pcap_file(both, &c));
  EXPECT_EQ(a.size(), 5u);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(c.size(), 8u);
  // The other direction is not offered at all: not seen, not counted.
  std::map<std::string, uint64_t> seen;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);) {
    auto j = nlohmann::json::parse(l);
    if (j.contains("file")) {
      seen[j["file"]] = j["seen"];
      EXPECT_EQ(j["captured"], j["seen"]) << l;
    }
  }
  EXPECT_EQ(seen[in], 5u);
  EXPECT_EQ(seen[out], 3u);
  EXPECT_EQ(seen[both], 8u);
  for (const auto& p : {in, out, both}) std::remove(p.c_str());
}

TEST(TcpdumpScript, AnyCapturesEveryDeviceCooked) {
  const std::string path = temp("any.pcap");
  RunOut r =
      script(std::string(kUp) +
                 "ip link add dev bar type dummy\nip link set dev bar up\n"
                 "tcpdump -i any -w " +
                 path +
                 " 'udp and (inbound or outbound)'\n"
                 "send dev foo count 2\nsend dev bar count 3\n"
                 "pktgen -i bar -n 4 --mode netif_receive\n"
                 "ip link add dev baz type dummy\nip link set dev baz up\nsend dev baz count 1\n"
                 "capture stop -i any\n",
             true);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<PcapRecord> recs;
  int dlt = 0;
  ASSERT_TRUE(read_pcap_file(path, &recs, &dlt));
  EXPECT_EQ(dlt, DLT_LINUX_SLL);
  ASSERT_EQ(recs.size(), 10u);  // 2 + 3 sent, 4 received, 1 on the device added later
  size_t outgoing = 0, incoming = 0;
  for (const auto& rec : recs) {
    ASSERT_GE(rec.bytes.size(), 17u);
    const uint16_t pkttype = static_cast<uint16_t>(rec.bytes[0] << 8 | rec.bytes[1]);
    (pkttype == 4 ? outgoing : incoming) += 1;
    EXPECT_EQ(rec.bytes[2] << 8 | rec.bytes[3], 1);  // ARPHRD_ETHER
    EXPECT_EQ(rec.bytes[4] << 8 | rec.bytes[5], 6);
    EXPECT_EQ(rec.bytes[14] << 8 | rec.bytes[15], 0x0800);
    EXPECT_EQ(rec.bytes[16], 0x45);  // the IPv4 header follows the cooked one
    EXPECT_EQ(rec.len, rec.caplen);
  }
  EXPECT_EQ(outgoing, 6u);
  EXPECT_EQ(incoming, 4u);
  EXPECT_NE(r.out.find("\"dev\":\"any\""), std::string::npos) << r.out;
  std::remove(path.c_str());
  // An engine switch reloads the cooked program (rewritten again); a device deleted under
  // the tap takes nothing with it.
  r = script(
      std::string(kUp) +
          "ip link add dev bar type dummy\nip link set dev bar up\ntcpdump -i any 'udp and "
          "inbound'\n"
          "pktgen -i foo -n 64 --mode netif_receive --repeat 1 --ab bpf_engine=switch|threaded\n"
          "ip link del dev bar\npktgen -i foo -n 8 --mode netif_receive\ncapture stop\n",
      true);
  ASSERT_EQ(r.rc, 0) << r.err;
  bool seen = false;
  std::istringstream docs(r.out);
  for (std::string l; std::getline(docs, l);) {
    auto j = nlohmann::json::parse(l);
    if (!j.contains("captured")) continue;
    EXPECT_EQ(j["captured"], 3 * 64 + 8) << l;  // --ab: a warm-up run, then A and B
    EXPECT_EQ(j["engine"], "switch") << l;  // --ab leaves A applied
    seen = true;
  }
  EXPECT_TRUE(seen) << r.out;
  // A filter reading the cooked header beyond its type and protocol is refused.
  r = script(std::string(kUp) + "tcpdump -i any 'ether[6] == 0xaa'\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cooked header"), std::string::npos) << r.err;
}

TEST(TcpdumpScript, WriteDashIsAPcapOnStdout) {
  const std::string s = temp("dash.pp"), out = temp("dash.pcap"), err = temp("dash.err");
  {
    std::ofstream f(s);
    f << kUp << "tcpdump -i foo -U -w - udp\nsend dev foo count 4\n";
  }
  const std::string cmd = std::string(PKTPATH_BINARY) + " run " + s + " >" + out + " 2>" + err;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::vector<PcapRecord> recs;
  int dlt = 0;
  ASSERT_TRUE(read_pcap_file(out, &recs, &dlt));
  EXPECT_EQ(dlt, DLT_EN10MB);
  EXPECT_EQ(recs.size(), 4u);
  std::ifstream e(err);
  std::string text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("4 packets captured"), std::string::npos) << text;  // counts on stderr
  for (const auto& p : {s, out, err}) std::remove(p.c_str());
}

// Without -w the `tcpdump` line prints a line per packet (as -r prints them) at its stop,
// then the counts; -c N prints N. `capture` without -w counts only.
TEST(TcpdumpScript, PrintsPacketsAndHonoursCount) {
  const std::string file = temp("print.pcap");
  RunOut r = script(std::string(kUp) + "capture -i foo -w " + file +
                    " udp\ntcpdump -ni foo -c 3 udp\ncapture -i foo\n" + "send dev foo count 5\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  // A packet line: "HH:MM:SS.uuuuuu IP a.b.c.d.p > e.f.g.h.q: UDP, length N" (std::regex
  // is avoided: GCC 12 warns inside it at -O1 with the sanitizers).
  auto stamp = [](const std::string& l) {
    if (l.size() < 16 || l[2] != ':' || l[5] != ':' || l[8] != '.' || l[15] != ' ') return false;
    for (int i : {0, 1, 3, 4, 6, 7, 9, 10, 11, 12, 13, 14})
      if (!std::isdigit(static_cast<unsigned char>(l[i]))) return false;
    return true;
  };
  auto is_pkt = [&](const std::string& l) {
    return stamp(l) && l.compare(15, 4, " IP ") == 0 && l.find(": UDP, length ") != std::string::npos;
  };
  size_t n = 0;
  for (const auto& l : lines) n += is_pkt(l);
  EXPECT_EQ(n, 3u) << r.out;
  // Three captures: 5 written, 3 of 5 printed, 5 counted.
  EXPECT_NE(
      r.out.find("3 packets captured\n5 packets received by filter\n2 packets dropped by kernel\n"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("listening on foo, link-type EN10MB (Ethernet)"), std::string::npos)
      << r.err;
  // The lines are tcpdump's for the same packets, timestamps aside.
  if (have_tcpdump()) {
    std::string want = run_tcpdump("-n -c 3 -r " + file);
    auto strip = [&](const std::string& text) {
      std::string out;
      std::istringstream in(text);
      for (std::string l; std::getline(in, l);) out += (stamp(l) ? l.substr(16) : l) + "\n";
      return out;
    };
    std::string got;
    for (const auto& l : lines)
      if (is_pkt(l)) got += l + "\n";
    EXPECT_EQ(strip(got), strip(want));
  }
  std::remove(file.c_str());
}

// -U: each record is in the file as soon as its packet passed (not at the next 64 KiB);
// -Q in on the tap itself: a transmitted packet is not offered.
class TcpdumpTap : public CaptureFixture {};

TEST_F(TcpdumpTap, PacketBufferedWritesAndDirection) {
  NetDevice* d = make("foo", "dummy");
  const std::string buffered = temp("U.pcap"), plain = temp("noU.pcap");
  TapSpec u = tap_spec("", kTapDefaultSnaplen, 0, buffered);
  u.packet_buffered = true;
  u.direction = TapDirection::In;
  auto tu = attach(d, u);
  auto tp = attach(d, tap_spec("", kTapDefaultSnaplen, 0, plain));
  EXPECT_EQ(receive_ip(d, ip4(10, 0, 0, 2)), NET_RX_SUCCESS);
  EXPECT_EQ(send_ip(d, ip4(10, 0, 0, 3)), NET_XMIT_SUCCESS);
  std::vector<PcapRecord> recs;
  ASSERT_TRUE(read_pcap_file(buffered, &recs));
  EXPECT_EQ(recs.size(), 1u);  // written already; the transmitted one not offered
  std::ifstream f(plain, std::ios::binary | std::ios::ate);
  EXPECT_EQ(f.tellg(), 0);  // still in the tap's buffer
  EXPECT_EQ(tap_detach(tu).seen, 1u);
  EXPECT_EQ(tap_detach(tp).captured, 2u);
  recs.clear();
  ASSERT_TRUE(read_pcap_file(plain, &recs));
  EXPECT_EQ(recs.size(), 2u);
  std::remove(buffered.c_str());
  std::remove(plain.c_str());
}

}  // namespace
}  // namespace pktpath::testing
