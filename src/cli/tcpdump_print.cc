// tcpdump's terse per-packet lines (print-ether.c, print-sll.c, print-ip.c, print-ip6.c,
// print-arp.c, print-icmp.c, print-icmp6.c, print-tcp.c, print-udp.c), for the headers
// named in tcpdump_print.h.
#include "cli/tcpdump_print.h"

#include <arpa/inet.h>
#include <strings.h>

#include <cctype>
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/pcap_time.h"
#include "bpf/packet_view.h"
#include "bpf/parse.h"
#include "bpf/program.h"
#include "cli/tcpdump_args.h"
#include "cli/tcpdump_dns.h"
#include "core/inet_checksum.h"

namespace pktpath::cli {

namespace {

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

std::string mac_string(const uint8_t* m, unsigned n = 6) {
  std::string s;
  for (unsigned i = 0; i < n; ++i) s += fmt::format("{}{:02x}", i ? ":" : "", m[i]);
  return s;
}

std::string addr_string(const uint8_t* a, int alen) {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(alen == 4 ? AF_INET : AF_INET6, a, buf, sizeof(buf));
  return buf;
}

const char* ethertype_name(uint16_t et) {
  switch (et) {
    case 0x0800:
      return "IPv4";
    case 0x0806:
      return "ARP";
    case 0x86dd:
      return "IPv6";
    case 0x8100:
      return "802.1Q";
    default:
      return "Unknown";
  }
}

// ipproto.c's names of IP protocols (-v), "unknown" for the rest.
const char* ipproto_name(uint8_t p) {
  switch (p) {
    case 0: return "Options";
    case 1: return "ICMP";
    case 2: return "IGMP";
    case 4: return "IPIP";
    case 6: return "TCP";
    case 8: return "EGP";
    case 9: return "IGRP";
    case 17: return "UDP";
    case 33: return "DCCP";
    case 41: return "IPv6";
    case 43: return "Routing";
    case 44: return "Fragment";
    case 46: return "RSVP";
    case 47: return "GRE";
    case 50: return "ESP";
    case 51: return "AH";
    case 55: return "Mobile IP";
    case 58: return "ICMPv6";
    case 62: return "Mobile IP (old)";
    case 88: return "EIGRP";
    case 89: return "OSPF";
    case 103: return "PIM";
    case 108: return "Compressed IP";
    case 112: return "VRRP";
    case 113: return "PGM";
    case 132: return "SCTP";
    case 135: return "Mobility";
    case 143: return "Ethernet";
  }
  return "unknown";
}

// in_cksum_shouldbe: the checksum field's value that would have verified, from the field
// and the sum computed over the data with it.
uint16_t cksum_shouldbe(uint16_t field, uint16_t computed) {
  uint32_t s = uint32_t{field} + computed;
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

// print-ip.c's ip_optprint (-v): the options' names, comma-separated; EOL ends the
// list, a bad length ends it with the length.
void ip_options(std::string& o, const uint8_t* p, uint32_t len) {
  for (bool first = true; len > 0; first = false) {
    const uint8_t code = p[0];
    if (!first) o += ',';
    switch (code) {
      case 0: o += "EOL"; break;
      case 1: o += "NOP"; break;
      case 68: o += "timestamp"; break;
      case 130: o += "security"; break;
      case 7: o += "RR"; break;
      case 137: o += "SSRR"; break;
      case 131: o += "LSRR"; break;
      case 148: o += "RA"; break;
      case 82: o += "traceroute"; break;
      default: o += fmt::format("unknown {}", code);
    }
    uint32_t olen = 1;
    if (code > 1) {
      if (len < 2) return;
      olen = p[1];
      if (olen < 2) {
        o += fmt::format(" [bad length {}]", olen);
        return;
      }
    }
    if (olen > len) {
      o += fmt::format(" [bad length {}]", olen);
      return;
    }
    if (code == 0) return;
    if (code == 148) {
      if (olen < 4) o += fmt::format(" [bad length {}]", olen);
      else if (be16(p + 2) != 0) o += fmt::format(" value {}", be16(p + 2));
    }
    p += olen;
    len -= olen;
  }
}

// hex_and_ascii_print: "\n\t0x0000:  0102 ...  .." lines, 16 bytes each.
void hex_dump(std::string& o, const uint8_t* p, uint32_t n) {
  for (uint32_t off = 0; off < n; off += 16) {
    std::string hex, ascii;
    for (uint32_t i = off; i < std::min(n, off + 16); i += 2) {
      if (i + 1 < n && i + 1 < off + 16)
        hex += fmt::format(" {:02x}{:02x}", p[i], p[i + 1]);
      else
        hex += fmt::format(" {:02x}", p[i]);
    }
    for (uint32_t i = off; i < std::min(n, off + 16); ++i)
      ascii += (p[i] >= 0x20 && p[i] < 0x7f) ? char(p[i]) : '.';
    o += fmt::format("\n\t0x{:04x}: {:<40}  {}", off, hex, ascii);
  }
}

// print-http.c through util-print.c's txtproto_print: on port 80 or 8080, ": HTTP", and
// when the payload starts with a request method or a response's 3-digit code, the first
// line (": HTTP: GET / HTTP/1.1"); a line with no end in the packet ends "[|http]".
void tcp_payload(std::string& o, const uint8_t* p, uint32_t caplen, uint32_t length, uint16_t sport,
                 uint16_t dport, bool verbose) {
  if (length == 0 || !(sport == 80 || dport == 80 || sport == 8080 || dport == 8080)) return;
  const uint32_t len = std::min(length, caplen);
  // fetch_token: a token of printable ASCII up to whitespace; then the blanks after it.
  auto token = [&](uint32_t idx, std::string* tok) -> uint32_t {
    tok->clear();
    for (; idx < len; ++idx) {
      const uint8_t ch = p[idx];
      if (ch >= 0x80) return 0;
      if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') break;
      if (ch < 0x20 || ch == 0x7f || tok->size() + 2 > 128) return 0;
      *tok += static_cast<char>(ch);
    }
    if (tok->empty()) return 0;
    for (; idx < len; ++idx) {
      const uint8_t ch = p[idx];
      if (ch == '\r' || ch == '\n' || ch < 0x20 || ch >= 0x7f || (ch != ' ' && ch != '\t')) break;
    }
    return idx;
  };
  static const char* const kMethods[] = {
      "GET",      "PUT",        "COPY",       "HEAD",        "LOCK",           "MOVE",          "POLL",
      "POST",     "BCOPY",      "BMOVE",      "MKCOL",       "TRACE",          "LABEL",         "MERGE",
      "DELETE",   "SEARCH",     "UNLOCK",     "REPORT",      "UPDATE",         "NOTIFY",        "BDELETE",
      "CONNECT",  "OPTIONS",    "CHECKIN",    "PROPFIND",    "CHECKOUT",       "BPROPFIND",     "BPROPPATCH",
      "UNCHECKOUT", "MKACTIVITY", "MKWORKSPACE", "UNSUBSCRIBE", "RPC_CONNECT", "VERSION-CONTROL",
      "BASELINE-CONTROL"};
  bool show = false;
  std::string tok;
  uint32_t idx = token(0, &tok);
  if (idx) {
    for (const char* m : kMethods)
      if (strcasecmp(tok.c_str(), m) == 0) show = true;
    idx = token(idx, &tok);  // the response code is the second token (RESP_CODE_SECOND_TOKEN)
    if (idx && tok.size() == 3 && std::isdigit(static_cast<unsigned char>(tok[0])) &&
        std::isdigit(static_cast<unsigned char>(tok[1])) && std::isdigit(static_cast<unsigned char>(tok[2])))
      show = true;
  }
  o += ": HTTP";
  if (!show) return;
  // print_txt_line: the line at `start` without its CR-LF (or LF) after `prefix`, and
  // where the next one starts; binary or a lone CR prints nothing (0); no line end in the
  // packet prints what there is and "[|http]" (0).
  auto line = [&](const char* prefix, uint32_t start) -> uint32_t {
    for (uint32_t i = start; i < len; ++i) {
      const uint8_t ch = p[i];
      if (ch == '\n' || (ch == '\r' && i + 1 < len && p[i + 1] == '\n')) {
        o += prefix + std::string(reinterpret_cast<const char*>(p) + start, i - start);
        return i + (ch == '\r' ? 2 : 1);
      }
      if (ch == '\r' || ((ch < 0x20 || ch >= 0x7f) && ch != '\t')) return 0;
    }
    o += prefix + std::string(reinterpret_cast<const char*>(p) + start, len - start) + " [|http]";
    return 0;
  };
  if (!verbose) {
    line(": ", 0);
    return;
  }
  // -v: every line of the packet, each on a line of its own.
  o += fmt::format(", length: {}", length);
  for (uint32_t i = 0; i < len && (i = line("\n\t", i)) != 0;) {
  }
}

// print-icmp.c's unreachable (type 3) and redirect (5) lines: what the quoted IPv4
// header (8 bytes in, at least its 20 captured) says about the packet that failed.
std::string icmp_error(uint8_t type, uint8_t code, const uint8_t* p, uint32_t caplen) {
  const uint8_t* ip = p + 8;
  const std::string dst = addr_string(ip + 16, 4);
  if (type == 5) {
    static const char* const kRedirect[] = {"redirect {} to net {}", "redirect {} to host {}",
                                            "redirect-tos {} to net {}", "redirect-tos {} to host {}"};
    const std::string gw = addr_string(p + 4, 4);
    if (code < 4) return fmt::format(fmt::runtime(kRedirect[code]), dst, gw);
    return fmt::format("redirect-#{} {} to net {}", code, dst, gw);
  }
  switch (code) {
    case 2:
      return fmt::format("{} protocol {} unreachable", dst, ip[9]);
    case 3: {
      const uint32_t hlen = (ip[0] & 0x0f) * 4u;
      if (8 + hlen + 4 > caplen) return fmt::format("{} port unreachable", dst);
      const uint16_t dport = be16(ip + hlen + 2);
      if (ip[9] == 6) return fmt::format("{} tcp port {} unreachable", dst, dport);
      if (ip[9] == 17) return fmt::format("{} udp port {} unreachable", dst, dport);
      return fmt::format("{} protocol {} port {} unreachable", dst, ip[9], dport);
    }
    case 4: {
      const uint16_t mtu = be16(p + 6);
      return mtu ? fmt::format("{} unreachable - need to frag (mtu {})", dst, mtu)
                 : fmt::format("{} unreachable - need to frag", dst);
    }
    default:
      break;
  }
  static const char* const kUnreach[] = {"net {} unreachable",
                                         "host {} unreachable",
                                         nullptr,
                                         nullptr,
                                         nullptr,
                                         "{} unreachable - source route failed",
                                         "net {} unreachable - unknown",
                                         "host {} unreachable - unknown",
                                         "{} unreachable - source host isolated",
                                         "net {} unreachable - admin prohibited",
                                         "host {} unreachable - admin prohibited",
                                         "net {} unreachable - tos prohibited",
                                         "host {} unreachable - tos prohibited",
                                         "host {} unreachable - admin prohibited filter",
                                         "host {} unreachable - host precedence violation",
                                         "host {} unreachable - precedence cutoff"};
  if (code < 16 && kUnreach[code]) return fmt::format(fmt::runtime(kUnreach[code]), dst);
  return fmt::format("#{} {} unreachable", code, dst);
}

// print-icmp.c / print-icmp6.c, terse: echo, errors (and a few types tcpdump names simply).
void icmp(std::string& o, const uint8_t* p, uint32_t caplen, uint32_t length, bool v6,
          const std::string& src, const std::string& dst) {
  o += fmt::format("{} > {}: {}", src, dst, v6 ? "ICMP6, " : "ICMP ");
  if (caplen < 8) {
    o += v6 ? "[|icmp6]" : "[|icmp]";
    return;
  }
  const uint8_t type = p[0], code = p[1];
  const uint8_t echo_request = v6 ? 128 : 8, echo_reply = v6 ? 129 : 0;
  if (type == echo_request || type == echo_reply)
    o += fmt::format("echo {}, id {}, seq {}", type == echo_request ? "request" : "reply",
                     be16(p + 4), be16(p + 6));
  else if (!v6 && type == 11 && code <= 1)
    o += code == 0 ? "time exceeded in-transit" : "ip reassembly time exceeded";
  else if (!v6 && (type == 3 || type == 5) && caplen >= 28)
    o += icmp_error(type, code, p, caplen);
  else if (!v6 && type == 12)
    o += code ? fmt::format("parameter problem - code {}", code) : fmt::format("parameter problem - octet {}", p[4]);
  else if (v6 && (type == 135 || type == 136) && caplen >= 24)
    o += fmt::format("neighbor {}, {} {}", type == 135 ? "solicitation" : "advertisement",
                     type == 135 ? "who has" : "tgt is", addr_string(p + 8, 16));
  else
    o += fmt::format("type-#{}", type);
  o += fmt::format(", length {}", length);
}

}  // namespace

// The bytes still captured (caplen) and the packet's remaining length on the wire.
struct PacketPrinter::Cursor {
  const uint8_t* p;
  uint32_t caplen;
  uint32_t length;
  Cursor skip(uint32_t n) const {
    return {p + std::min(n, caplen), caplen > n ? caplen - n : 0, length > n ? length - n : 0};
  }
};

std::string PacketPrinter::format(const pcap_pkthdr& h, const uint8_t* data) {
  std::string o;
  const time_t sec = static_cast<time_t>(pcap_record_sec(h.ts.tv_sec));
  tm t;
  gmtime_r(&sec, &t);
  o += fmt::format("{:02}:{:02}:{:02}.{:06} ", t.tm_hour, t.tm_min, t.tm_sec,
                   static_cast<unsigned>(h.ts.tv_usec));
  Cursor c{data, h.caplen, h.len};
  if (linktype_ == DLT_EN10MB)
    ether(o, c);
  else if (linktype_ == DLT_LINUX_SLL)
    cooked(o, c);
  else
    hex_dump(o, data, h.caplen);
  o += '\n';
  return o;
}

void PacketPrinter::ether(std::string& o, Cursor c) {
  if (c.caplen < 14) {
    o += "[|ether]";
    return;
  }
  uint16_t et = be16(c.p + 12);
  const std::string hdr =
      fmt::format("{} > {}, ethertype {} (0x{:04x}), length {}: ", mac_string(c.p + 6),
                  mac_string(c.p), ethertype_name(et), et, c.length);
  Cursor pl = c.skip(14);
  const bool known = et == 0x0800 || et == 0x0806 || et == 0x86dd || et == 0x8100;
  if (link_header_ || !known) o += hdr;
  if (et == 0x8100) {
    if (pl.caplen < 4) {
      o += "[|vlan]";
      return;
    }
    const uint16_t tci = be16(pl.p);
    et = be16(pl.p + 2);
    if (link_header_)
      o += fmt::format("vlan {}, p {}{}, ethertype {} (0x{:04x}), ", tci & 0xfff, tci >> 13,
                       (tci & 0x1000) ? ", DEI" : "", ethertype_name(et), et);
    pl = pl.skip(4);
  }
  by_ethertype(o, et, pl, !link_header_);
}

// print-sll.c: with -e, the packet type, the source address, the protocol and the length.
void PacketPrinter::cooked(std::string& o, Cursor c) {
  if (c.caplen < 16) {
    o += "[|sll]";
    return;
  }
  const uint16_t pkttype = be16(c.p), halen = be16(c.p + 4), et = be16(c.p + 14);
  if (link_header_) {
    static const char* const kTypes[] = {"In", "B", "M", "P", "Out"};
    const std::string type = pkttype < 5 ? kTypes[pkttype] : fmt::format("#{}", pkttype);
    o += fmt::format("{:>3} ", type);
    if (halen > 0) o += mac_string(c.p + 6, std::min<uint16_t>(halen, 8)) + " ";
    o += fmt::format("ethertype {} (0x{:04x}), length {}: ", ethertype_name(et), et, c.length);
  }
  by_ethertype(o, et, c.skip(16), !link_header_);
}

void PacketPrinter::by_ethertype(std::string& o, uint16_t et, Cursor c, bool prefix) {
  switch (et) {
    case 0x0800:
      return ipv4(o, c, prefix);
    case 0x86dd:
      return ipv6(o, c, prefix);
    case 0x0806:
      return arp(o, c, prefix);
    default:
      hex_dump(o, c.p, c.caplen);
  }
}

void PacketPrinter::ipv4(std::string& o, Cursor c, bool prefix) {
  if (prefix) o += "IP ";
  if (c.caplen < 20 || (c.p[0] >> 4) != 4) {
    o += "[|ip]";
    return;
  }
  const uint32_t hlen = (c.p[0] & 0xf) * 4u;
  uint32_t len = be16(c.p + 2);
  if (hlen < 20 || len < hlen) {
    o += fmt::format("bad-hlen {}", hlen);
    return;
  }
  if (c.length < len) o += fmt::format("truncated-ip - {} bytes missing! ", len - c.length);
  const std::string src = addr_string(c.p + 12, 4), dst = addr_string(c.p + 16, 4);
  const uint8_t proto = c.p[9];
  const uint16_t frag = be16(c.p + 6), off = frag & 0x1fff;
  if (verbose_) {
    // print-ip.c's -v group: TOS and ECN, TTL, id, offset, flags, protocol, options, the
    // total length, a header checksum that does not verify.
    static const char* const kEcn[] = {"", ",ECT(1)", ",ECT(0)", ",CE"};
    o += fmt::format("(tos 0x{:x}{}", c.p[1], kEcn[c.p[1] & 3]);
    if (c.p[8] >= 1) o += fmt::format(", ttl {}", c.p[8]);
    std::string flags;
    for (auto [bit, name] : {std::pair{0x2000, "+"}, std::pair{0x4000, "DF"}, std::pair{0x8000, "rsvd"}})
      if (frag & bit) flags += (flags.empty() ? "" : ", ") + std::string(name);
    o += fmt::format(", id {}, offset {}, flags [{}], proto {} ({})", be16(c.p + 4), off * 8,
                     flags.empty() ? "none" : flags, ipproto_name(proto), proto);
    o += fmt::format(", length {}", be16(c.p + 2));
    if (hlen > 20) {
      o += ", options (";
      ip_options(o, c.p + 20, std::min(hlen, c.caplen) - 20);
      o += ")";
    }
    if (c.caplen >= hlen)
      if (const uint16_t sum = inet_checksum(c.p, hlen); sum != 0)
        o += fmt::format(", bad cksum {:x} (->{:x})!", be16(c.p + 10), cksum_shouldbe(be16(c.p + 10), sum));
    o += ")\n    ";
  }
  l3_src_ = c.p + 12;
  l3_dst_ = c.p + 16;
  l3_alen_ = 4;
  l3_fragment_ = (frag & 0x3fff) != 0;
  Cursor pl = c.skip(hlen);
  pl.caplen = std::min(pl.caplen, len - hlen);  // the snapshot ends with the IP payload
  len -= hlen;
  if (off != 0) {
    o += fmt::format("{} > {}: ip-proto-{}", src, dst, proto);
    return;
  }
  switch (proto) {
    case 6:
      return tcp(o, pl, len, c.p + 12, c.p + 16, 4);
    case 17:
      return udp(o, pl, len, src, dst);
    case 1:
      icmp(o, pl.p, pl.caplen, len, false, src, dst);
      if (verbose_) icmp_verbose(o, pl, len);
      return;
    default:
      o += fmt::format("{} > {}:  ip-proto-{} {}", src, dst, proto, len);
  }
}

// The sum of the transport pseudo-header (addresses, protocol, length) of the packet
// being printed.
uint64_t PacketPrinter::pseudo_sum(uint8_t proto, uint32_t length) const {
  uint64_t s = uint64_t{proto} + (length >> 16) + (length & 0xffff);
  for (int i = 0; i + 1 < l3_alen_; i += 2)
    s += static_cast<uint32_t>(be16(l3_src_ + i)) + be16(l3_dst_ + i);
  return s;
}

// print-icmp.c at -v: a checksum that does not verify, and for an error the IPv4 packet
// it quotes, printed on a line of its own.
void PacketPrinter::icmp_verbose(std::string& o, Cursor c, uint32_t length) {
  if (c.caplen < 8) return;
  if (!l3_fragment_ && c.caplen >= length)
    if (const uint16_t sum = inet_checksum(c.p, length); sum != 0)
      o += fmt::format(" (wrong icmp cksum {:x} (->{:x})!)", be16(c.p + 2), cksum_shouldbe(be16(c.p + 2), sum));
  const uint8_t type = c.p[0];
  if (type != 3 && type != 4 && type != 5 && type != 11 && type != 12) return;
  o += "\n\t";
  // The quoted packet ends where its own total length says (extensions may follow).
  Cursor q = c.skip(8);
  if (q.caplen < 4) {
    o += " [|icmp]";
    return;
  }
  q.length = be16(q.p + 2);
  q.caplen = std::min(q.caplen, q.length);
  if (q.caplen == 0) {
    o += " [|icmp]";
    return;
  }
  ipv4(o, q, !link_header_);
}

void PacketPrinter::ipv6(std::string& o, Cursor c, bool prefix) {
  if (prefix) o += "IP6 ";
  if (c.caplen < 40 || (c.p[0] >> 4) != 6) {
    o += "[|ip6]";
    return;
  }
  const uint32_t plen = be16(c.p + 4);
  if (c.length < plen + 40)
    o += fmt::format("truncated-ip6 - {} bytes missing!", plen + 40 - c.length);
  const std::string src = addr_string(c.p + 8, 16), dst = addr_string(c.p + 24, 16);
  const uint8_t nh = c.p[6];
  if (verbose_) {
    // print-ip6.c's -v group, on the same line.
    const uint32_t flow = be32(c.p);
    o += '(';
    if (flow & 0x0ff00000) o += fmt::format("class 0x{:02x}, ", (flow & 0x0ff00000) >> 20);
    if (flow & 0x000fffff) o += fmt::format("flowlabel 0x{:05x}, ", flow & 0x000fffff);
    o += fmt::format("hlim {}, next-header {} ({}) payload length: {}) ", c.p[7], ipproto_name(nh), nh, plen);
  }
  l3_src_ = c.p + 8;
  l3_dst_ = c.p + 24;
  l3_alen_ = 16;
  l3_fragment_ = false;
  Cursor pl = c.skip(40);
  pl.caplen = std::min(pl.caplen, plen);
  switch (nh) {
    case 6:
      return tcp(o, pl, plen, c.p + 8, c.p + 24, 16);
    case 17:
      return udp(o, pl, plen, src, dst);
    case 58:
      if (verbose_ && pl.caplen >= 4 && pl.caplen >= plen) {
        // print-icmp6.c at -v: the checksum's verdict before the message.
        const uint16_t sum = inet_checksum(pl.p, plen, pseudo_sum(58, plen));
        o += fmt::format("{} > {}: ", src, dst);
        o += sum ? fmt::format("[bad icmp6 cksum 0x{:04x} -> 0x{:04x}!] ", be16(pl.p + 2), cksum_shouldbe(be16(pl.p + 2), sum))
                 : "[icmp6 sum ok] ";
        std::string rest;
        icmp(rest, pl.p, pl.caplen, plen, true, src, dst);
        rest.erase(0, src.size() + dst.size() + 5);
        // At -v the message's length is not repeated at the end.
        if (const std::string tail = fmt::format(", length {}", plen); rest.ends_with(tail))
          rest.resize(rest.size() - tail.size());
        o += rest;
        return;
      }
      return icmp(o, pl.p, pl.caplen, plen, true, src, dst);
    default:
      o += fmt::format("{} > {}:  ip-proto-{} {}", src, dst, nh, plen);
  }
}

void PacketPrinter::arp(std::string& o, Cursor c, bool prefix) {
  if (prefix) o += "ARP, ";
  if (verbose_ && c.caplen >= 6 && be16(c.p) == 1 && be16(c.p + 2) == 0x0800)
    o += fmt::format("Ethernet (len {}), IPv4 (len {}), ", c.p[4], c.p[5]);
  // Ethernet/IPv4 ARP only: hardware 1, protocol 0x0800, lengths 6 and 4.
  if (c.caplen < 28 || be16(c.p) != 1 || be16(c.p + 2) != 0x0800 || c.p[4] != 6 || c.p[5] != 4) {
    o += "[|arp]";
    return;
  }
  const uint16_t op = be16(c.p + 6);
  const uint8_t *sha = c.p + 8, *spa = c.p + 14, *tha = c.p + 18, *tpa = c.p + 24;
  if (op == 1) {
    o += "Request who-has " + addr_string(tpa, 4);
    if (std::any_of(tha, tha + 6, [](uint8_t b) { return b != 0; }))
      o += " (" + mac_string(tha) + ")";
    o += " tell " + addr_string(spa, 4);
  } else if (op == 2) {
    o += "Reply " + addr_string(spa, 4) + " is-at " + mac_string(sha);
  } else {
    o += fmt::format("Unknown opcode ({})", op);
  }
  o += fmt::format(", length {}", c.length);
}

void PacketPrinter::udp(std::string& o, Cursor c, uint32_t length, const std::string& src,
                        const std::string& dst) {
  // tcpdump's truncation mark follows the addresses' ": " with its own space.
  if (c.caplen < 4) {
    o += fmt::format("{} > {}:  [|udp]", src, dst);
    return;
  }
  const uint16_t sport = be16(c.p), dport = be16(c.p + 2);
  o += fmt::format("{}.{} > {}.{}: ", src, sport, dst, dport);
  if (c.caplen < 8) {
    o += " [|udp]";
    return;
  }
  const uint16_t ulen = be16(c.p + 4);
  if (ulen < 8) {
    o += fmt::format("truncated-udplength {}", ulen);
    return;
  }
  // Both lengths past the UDP header, as udp_print prints them; a port's decoder sees the
  // shorter of the two (so a quoted header with a claimed length decodes as empty).
  const uint32_t udata = ulen - 8u, ipdata = length < 8 ? 0 : length - 8, data = std::min(udata, ipdata);
  // -v verifies UDP's checksum over IPv6 only (IPv4's needs -vv).
  if (verbose_ && l3_alen_ == 16 && udata <= ipdata && c.caplen >= ulen) {
    const uint16_t sum = inet_checksum(c.p, ulen, pseudo_sum(17, ulen));
    o += sum ? fmt::format("[bad udp cksum 0x{:04x} -> 0x{:04x}!] ", be16(c.p + 6), cksum_shouldbe(be16(c.p + 6), sum))
             : "[udp sum ok] ";
  }
  if (sport == 53 || dport == 53) {
    const Cursor m = c.skip(8);
    dns_print(o, m.p, std::min(m.caplen, data), data, verbose_ > 0);
    return;
  }
  if (udata > ipdata) o += fmt::format("UDP, bad length {} > {}", udata, ipdata);
  else o += fmt::format("UDP, length {}", udata);
}

void PacketPrinter::tcp(std::string& o, Cursor c, uint32_t length, const uint8_t* src,
                        const uint8_t* dst, int alen) {
  const std::string s = addr_string(src, alen), d = addr_string(dst, alen);
  if (c.caplen < 4) {
    o += fmt::format("{} > {}: [|tcp]", s, d);
    return;
  }
  const uint16_t sport = be16(c.p), dport = be16(c.p + 2);
  o += fmt::format("{}.{} > {}.{}: ", s, sport, d, dport);
  if (c.caplen < 20) {
    o += " [|tcp]";
    return;
  }
  uint32_t hlen = (c.p[12] >> 4) * 4u;
  if (hlen < 20) {
    o += fmt::format(" tcp {} [bad hdr length {} - too short, < 20]", length - hlen, hlen);
    return;
  }
  uint32_t seq = be32(c.p + 4), ack = be32(c.p + 8);
  const uint16_t win = be16(c.p + 14), urp = be16(c.p + 18);
  const uint8_t flags = c.p[13];
  std::string f;
  static const char kFlags[] = "FSRP.UEW";
  for (int i = 0; i < 8; ++i)
    if (flags & (1 << i)) f += kFlags[i];
  o += "Flags [" + (f.empty() ? std::string("none") : f) + "]";
  if (verbose_ && !l3_fragment_ && c.caplen >= length) {
    // print-tcp.c at -v: the checksum and whether it verifies.
    const uint16_t sum = inet_checksum(c.p, length, pseudo_sum(6, length)), field = be16(c.p + 16);
    o += sum ? fmt::format(", cksum 0x{:04x} (incorrect -> 0x{:04x})", field, cksum_shouldbe(field, sum))
             : fmt::format(", cksum 0x{:04x} (correct)", field);
  }
  uint32_t thseq = 0, thack = 0;
  bool rev = false;
  if (flags & 0x10) {
    // One entry for both directions: the lower port (or address) first.
    rev = sport > dport || (sport == dport && std::memcmp(src, dst, alen) > 0);
    const std::string a(reinterpret_cast<const char*>(rev ? dst : src), alen);
    const std::string b(reinterpret_cast<const char*>(rev ? src : dst), alen);
    const uint32_t ports = rev ? uint32_t{dport} << 16 | sport : uint32_t{sport} << 16 | dport;
    auto key = std::make_tuple(a, b, ports);
    auto it = tcp_seq_.find(key);
    if (it == tcp_seq_.end() || (flags & 0x02)) {
      TcpBase& th = tcp_seq_[key];
      if (rev)
        th.ack = seq, th.seq = ack - 1;
      else
        th.seq = seq, th.ack = ack - 1;
      thseq = th.seq, thack = th.ack;
    } else {
      if (rev)
        seq -= it->second.ack, ack -= it->second.seq;
      else
        seq -= it->second.seq, ack -= it->second.ack;
      thseq = it->second.seq, thack = it->second.ack;
    }
  }
  if (hlen > length) {
    o += fmt::format(" [bad hdr length {} - too long, > {}]", hlen, length);
    return;
  }
  length -= hlen;
  if (length > 0 || (flags & 0x07)) {
    o += fmt::format(", seq {}", seq);
    if (length > 0) o += fmt::format(":{}", seq + length);
  }
  if (flags & 0x10) o += fmt::format(", ack {}", ack);
  o += fmt::format(", win {}", win);
  if (flags & 0x20) o += fmt::format(", urg {}", urp);
  if (hlen > 20) {
    o += ", options [";
    const uint8_t* p = c.p + 20;
    uint32_t left = hlen - 20;
    if (c.caplen < hlen) {
      o += " [|tcp]";
      return;
    }
    bool first = true;
    while (left > 0) {
      if (!first) o += ',';
      first = false;
      const uint8_t opt = *p++;
      uint32_t len = 1;
      if (opt > 1) {
        if (left < 2) {  // the kind is the options' last byte: no room for its length
          o += "[bad opt]]";
          return;
        }
        len = *p++;
        if (len < 2 || len > left) {
          o += "[bad opt]]";
          return;
        }
        --left;
      }
      --left;
      uint32_t datalen = 0;
      auto need = [&](uint32_t n) { return n <= left; };
      switch (opt) {
        case 0:
          o += "eol";
          break;
        case 1:
          o += "nop";
          break;
        case 2:
          o += "mss";
          datalen = 2;
          if (!need(2)) goto bad;
          o += fmt::format(" {}", be16(p));
          break;
        case 3:
          o += "wscale";
          datalen = 1;
          if (!need(1)) goto bad;
          o += fmt::format(" {}", p[0]);
          break;
        case 4:
          o += "sackOK";
          break;
        case 5:
          o += "sack";
          datalen = len - 2;
          if (datalen % 8 != 0) {
            o += " invalid sack";
          } else {
            o += fmt::format(" {} ", datalen / 8);
            for (uint32_t i = 0; i < datalen; i += 8) {
              if (!need(i + 8)) goto bad;
              uint32_t b = be32(p + i), e = be32(p + i + 4);
              const uint32_t base = rev ? thseq : thack;
              o += fmt::format("{{{}:{}}}", b - base, e - base);
            }
          }
          break;
        case 8:
          o += "TS";
          datalen = 8;
          if (!need(8)) goto bad;
          o += fmt::format(" val {} ecr {}", be32(p), be32(p + 4));
          break;
        default:
          o += fmt::format("unknown-{}", opt);
          datalen = len - 2;
          if (datalen) o += " 0x";
          for (uint32_t i = 0; i < datalen; ++i) {
            if (!need(i + 1)) goto bad;
            o += fmt::format("{:02x}", p[i]);
          }
      }
      p += datalen;
      left -= datalen;
      if (datalen + (opt > 1 ? 2 : 1) != len) o += fmt::format("[len {}]", len);
      if (opt == 0) break;
    }
    o += "]";
  }
  o += fmt::format(", length {}", length);
  tcp_payload(o, c.skip(hlen).p, c.skip(hlen).caplen, length, sport, dport, verbose_ > 0);
  return;
bad:
  o += "[bad opt]]";
}

namespace {

bool open_offline(const std::string& path, pcap_t** pc, std::string* err) {
  char errbuf[PCAP_ERRBUF_SIZE];
  *pc = pcap_open_offline(path.c_str(), errbuf);
  if (!*pc) *err = errbuf;
  return *pc != nullptr;
}

const char* link_description(int dlt) {
  const char* d = pcap_datalink_val_to_description(dlt);
  return d ? d : "unknown";
}

}  // namespace

bool tcpdump_read(const ReadRequest& r, std::FILE* out, Error& err) {
  pcap_t* pc = nullptr;
  if (!open_offline(r.path, &pc, &err.msg)) {
    err.word = r.path;
    return false;
  }
  const int dlt = pcap_datalink(pc);
  // On pktpath's engine, under libpcap's userland rules (a savefile's filter).
  std::optional<bpf::Program> prog;
  if (!r.filter.empty()) {
    bpf::Insns insns;
    bpf::CompileOptions co;
    co.savefile = r.path;  // the file's own link type and snapshot length, as tcpdump -r
    co.netmask = kTcpdumpNetmask;
    std::string msg;
    if (bpf::compile_expression(r.filter, co, &insns, &msg))
      if (auto p =
              bpf::Program::load(insns, bpf::default_engine(), bpf::Acceptance::Userland, &msg))
        prog.emplace(std::move(*p));
    if (!prog) {
      pcap_close(pc);
      err.word = r.filter;
      err.msg = "filter: " + msg;
      return false;
    }
  }
  pcap_dumper_t* dumper = nullptr;
  if (!r.write.empty()) {
    dumper = pcap_dump_open(pc, r.write.c_str());
    if (!dumper) {
      err.word = r.write;
      err.msg = std::string("cannot write ") + r.write + ": " + pcap_geterr(pc);
      pcap_close(pc);
      return false;
    }
  }
  std::fprintf(stderr, "reading from file %s, link-type %s (%s), snapshot length %d\n",
               r.path.c_str(),
               pcap_datalink_val_to_name(dlt) ? pcap_datalink_val_to_name(dlt) : "?",
               link_description(dlt), pcap_snapshot(pc));
  PacketPrinter printer(dlt, r.link_header, r.verbose);
  uint64_t n = 0;
  pcap_pkthdr* h;
  const u_char* data;
  int rc = 0;
  while ((r.count == 0 || n < r.count) && (rc = pcap_next_ex(pc, &h, &data)) == 1) {
    if (prog) {
      bpf::PacketView v = bpf::PacketView::linear(data, h->caplen);
      v.wire_len = h->len;
      if (dlt == DLT_LINUX_SLL) v.net_off = std::min<uint32_t>(h->caplen, 16);
      if (prog->run(v) == 0) continue;
    }
    ++n;
    if (dumper) {
      pcap_dump(reinterpret_cast<u_char*>(dumper), h, data);
      if (r.packet_buffered) pcap_dump_flush(dumper);
    } else {
      const std::string line = printer.format(*h, data);
      std::fwrite(line.data(), 1, line.size(), out);
    }
  }
  bool ok = true;
  if ((r.count == 0 || n < r.count) && rc == PCAP_ERROR) {
    err.word = r.path;
    err.msg = r.path + ": " + pcap_geterr(pc);
    ok = false;
  }
  if (dumper) pcap_dump_close(dumper);
  pcap_close(pc);
  return ok;
}

bool print_pcap_file(const std::string& path, bool link_header, std::FILE* out, std::string* err, int verbose) {
  pcap_t* pc = nullptr;
  if (!open_offline(path, &pc, err)) return false;
  PacketPrinter printer(pcap_datalink(pc), link_header, verbose);
  pcap_pkthdr* h;
  const u_char* data;
  std::string text;
  while (pcap_next_ex(pc, &h, &data) == 1) text += printer.format(*h, data);
  pcap_close(pc);
  std::fwrite(text.data(), 1, text.size(), out);
  return true;
}

}  // namespace pktpath::cli
