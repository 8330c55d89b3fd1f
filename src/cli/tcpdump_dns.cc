// print-domain.c's domain_print for `-n` and `-v`: the header's id and flags, the
// questions of a query, the answers of a response, each read within the capture (a name's
// compression pointers may only point back, so a crafted message cannot loop).
#include "cli/tcpdump_dns.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cctype>

namespace pktpath::cli {
namespace {

constexpr unsigned kMaxName = 1025;  // NS_MAXDNAME

const char* type_name(uint16_t t) {
  static const char* const kLow[] = {
      nullptr, "A",     "NS",    "MD",   "MF",     "CNAME", "SOA",   "MB",    "MG",       "MR",
      "NULL",  "WKS",   "PTR",   "HINFO", "MINFO", "MX",    "TXT",   "RP",    "AFSDB",    "X25",
      "ISDN",  "RT",    "NSAP",  "NSAP_PTR", "SIG", "KEY",  "PX",    "GPOS",  "AAAA",     "LOC",
      "NXT",   "EID",   "NIMLOC", "SRV", "ATMA",   "NAPTR", "KX",    "CERT",  "A6",       "DNAME",
      "SINK",  "OPT",   "APL",   "DS",   "SSHFP",  "IPSECKEY", "RRSIG", "NSEC", "DNSKEY"};
  if (t < sizeof kLow / sizeof kLow[0]) return kLow[t];
  switch (t) {
    case 99: return "SPF";
    case 100: return "UINFO";
    case 101: return "UID";
    case 102: return "GID";
    case 103: return "UNSPEC";
    case 104: return "UNSPECA";
    case 249: return "TKEY";
    case 250: return "TSIG";
    case 251: return "IXFR";
    case 252: return "AXFR";
    case 253: return "MAILB";
    case 254: return "MAILA";
    case 255: return "ANY";
    case 256: return "URI";
  }
  return nullptr;
}

std::string type_text(uint16_t t) {
  const char* n = type_name(t);
  return n ? n : fmt::format("Type{}", t);
}

std::string class_text(uint16_t c) {
  switch (c) {
    case 1: return "IN";
    case 3: return "CHAOS";
    case 4: return "HS";
    case 255: return "ANY";
  }
  return fmt::format("(Class {})", c);
}

// fn_print_char: printable ASCII as is, the rest as M- and ^ escapes.
void print_char(std::string& o, uint8_t c) {
  if (c & 0x80) {
    o += "M-";
    c &= 0x7f;
  }
  if (!std::isprint(c)) {
    o += '^';
    c ^= 0x40;
  }
  o += static_cast<char>(c);
}

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

// The message and where its capture ends.
struct Msg {
  const uint8_t* base;
  const uint8_t* end;
  bool has(const uint8_t* p, size_t n) const { return p >= base && p <= end && static_cast<size_t>(end - p) >= n; }
};

// ns_nskip: past the name at p (labels, or a pointer that ends it); nullptr if cut off
// or of a label type tcpdump does not know.
const uint8_t* skip_name(const Msg& m, const uint8_t* p) {
  while (m.has(p, 1)) {
    const uint8_t l = *p;
    if ((l & 0xc0) == 0xc0) return m.has(p, 2) ? p + 2 : nullptr;
    if ((l & 0xc0) == 0x40) return nullptr;  // EDNS0 extended label
    if (l == 0) return p + 1;
    p += l + 1;
  }
  return nullptr;
}

// fqdn_print: the name at p, each label followed by "."; the root alone is ".". Returns
// the end of the name where it was written (nullptr: cut off or a bad pointer).
const uint8_t* print_name(std::string& o, const Msg& m, const uint8_t* p) {
  if (!m.has(p, 1)) return nullptr;
  size_t max_offset = static_cast<size_t>(p - m.base);
  const uint8_t* rest = nullptr;  // where the name ends in the record (set at the first pointer)
  uint8_t l = *p++;
  if (l == 0) {
    o += '.';
    return p;
  }
  unsigned chars = 0;
  while (l) {
    if ((l & 0xc0) == 0xc0) {
      if (!m.has(p, 1)) return nullptr;
      if (!rest) rest = p + 1;
      const size_t off = ((l & 0x3f) << 8) | *p;
      if (off >= max_offset) {
        o += "<BAD PTR>";
        return nullptr;
      }
      max_offset = off;
      p = m.base + off;
      if (!m.has(p, 1)) return nullptr;
      l = *p++;
      continue;
    }
    if ((l & 0xc0) == 0x40) {
      o += fmt::format("<ELT {}>", l & 0x3f);
      return nullptr;
    }
    if (!m.has(p, l)) return nullptr;
    if (chars + l <= kMaxName) {
      for (unsigned i = 0; i < l; ++i) print_char(o, p[i]);
    } else if (chars < kMaxName) {
      o += "<TOO LONG>";
    }
    chars += l;
    p += l;
    if (chars <= kMaxName) o += '.';
    ++chars;
    if (!m.has(p, 1)) return nullptr;
    l = *p++;
  }
  return rest ? rest : p;
}

// ns_qprint: " TYPE[ CLASS]? name".
const uint8_t* print_question(std::string& o, const Msg& m, const uint8_t* p) {
  const uint8_t* name = p;
  p = skip_name(m, p);
  if (!p || !m.has(p, 4)) return nullptr;
  o += ' ' + type_text(be16(p));
  if (const uint16_t c = be16(p + 2); c != 1) o += ' ' + class_text(c);
  o += "? ";
  return print_name(o, m, name) ? p + 4 : nullptr;
}

// ns_rprint: "[ owner] TYPE data" for the types tcpdump decodes; the record's end.
const uint8_t* print_record(std::string& o, const Msg& m, const uint8_t* p, bool verbose) {
  if (verbose) {
    o += ' ';
    p = print_name(o, m, p);
  } else {
    p = skip_name(m, p);
  }
  if (!p || !m.has(p, 10)) return m.end;
  const uint16_t type = be16(p), cls = be16(p + 2), len = be16(p + 8);
  p += 10;
  if (cls != 1 && type != 41) o += ' ' + class_text(cls);
  o += ' ' + type_text(type);
  const uint8_t* next = p + len;
  if (!m.has(p, len)) return nullptr;
  char addr[INET6_ADDRSTRLEN];
  switch (type) {
    case 1:  // A
      if (len < 4) return nullptr;
      o += ' ' + fmt::format("{}.{}.{}.{}", p[0], p[1], p[2], p[3]);
      break;
    case 28:  // AAAA
      if (len < 16 || !inet_ntop(AF_INET6, p, addr, sizeof addr)) return nullptr;
      o += ' ';
      o += addr;
      break;
    case 2: case 5: case 12: case 39:  // NS, CNAME, PTR, DNAME
      o += ' ';
      if (!print_name(o, m, p)) return nullptr;
      break;
    case 6: {  // SOA: only with -v
      if (!verbose) break;
      o += ' ';
      if (!(p = print_name(o, m, p))) return nullptr;
      o += ' ';
      if (!(p = print_name(o, m, p)) || !m.has(p, 20)) return nullptr;
      for (int i = 0; i < 5; ++i) o += fmt::format(" {}", be32(p + 4 * i));
      break;
    }
    case 15:  // MX: name, then preference
      if (len < 2) return nullptr;
      o += ' ';
      if (!print_name(o, m, p + 2)) return nullptr;
      o += fmt::format(" {}", be16(p));
      break;
    case 16:  // TXT: each character-string quoted
      while (p < next) {
        o += " \"";
        const uint8_t n = *p++;
        if (!m.has(p, n)) return nullptr;
        for (unsigned i = 0; i < n; ++i) print_char(o, p[i]);
        p += n;
        o += '"';
      }
      break;
    case 33:  // SRV: target:port priority weight
      if (len < 6) return nullptr;
      o += ' ';
      if (!print_name(o, m, p + 6)) return nullptr;
      o += fmt::format(":{} {} {}", be16(p + 4), be16(p), be16(p + 2));
      break;
  }
  return next;
}

}  // namespace

void dns_print(std::string& o, const uint8_t* msg, uint32_t caplen, uint32_t length, bool verbose) {
  const Msg m{msg, msg + caplen};
  if (length < 12) {
    o += fmt::format("domain [length {} < 12] (invalid)", length);
    return;
  }
  if (caplen < 12) {
    o += " [|domain]";
    return;
  }
  static const char* const kOps[] = {"",         " inv_q",    " stat",    " op3",     " notify",  " update",
                                     " op6",     " op7",      " op8",     " updateA", " updateD", " updateDA",
                                     " updateM", " updateMA", " zoneInit", " zoneRef"};
  static const char* const kRcodes[] = {"",         " FormErr",  " ServFail", " NXDomain", " NotImp", " Refused",
                                        " YXDomain", " YXRRSet", " NXRRSet",  " NotAuth",  " NotZone"};
  const uint16_t id = be16(msg), flags = be16(msg + 2);
  uint16_t qd = be16(msg + 4), an = be16(msg + 6);
  const uint16_t ns = be16(msg + 8), ar = be16(msg + 10);
  const unsigned opcode = flags >> 11 & 0xf, rcode = flags & 0xf;
  const uint8_t* p = msg + 12;
  auto trunc = [&] { o += " [|domain]"; };
  if (flags & 0x8000) {  // a response
    o += fmt::format("{}{}{}{}{}{}{}", id, kOps[opcode],
                     rcode < std::size(kRcodes) ? kRcodes[rcode] : fmt::format(" Resp{}", rcode),
                     flags & 0x0400 ? "*" : "", flags & 0x0080 ? "" : "-", flags & 0x0200 ? "|" : "",
                     flags & 0x0020 ? "$" : "");
    if (qd != 1) o += fmt::format(" [{}q]", qd);
    for (unsigned i = 0; i < qd; ++i) {  // the questions are skipped, separated by ","
      if (i) o += ',';
      if (!(p = skip_name(m, p)) || !m.has(p, 4)) return trunc();
      p += 4;
    }
    o += fmt::format(" {}/{}/{}", an, ns, ar);
    if (an) {
      if (!(p = print_record(o, m, p, verbose))) return trunc();
      --an;
      while (p < m.end && an) {
        o += ',';
        if (!(p = print_record(o, m, p, verbose))) return trunc();
        --an;
      }
    }
    if (an) return trunc();
  } else {  // a query
    o += fmt::format("{}{}{}{}", id, kOps[opcode], flags & 0x0100 ? "+" : "", flags & 0x0010 ? "%" : "");
    if (flags & 0x6cf) o += fmt::format(" [b2&3=0x{:x}]", flags);
    if (opcode == 1) {
      if (qd) o += fmt::format(" [{}q]", qd);
      if (an != 1) o += fmt::format(" [{}a]", an);
    } else {
      if (qd != 1) o += fmt::format(" [{}q]", qd);
      if (an) o += fmt::format(" [{}a]", an);
    }
    if (ns) o += fmt::format(" [{}n]", ns);
    if (ar) o += fmt::format(" [{}au]", ar);
    if (qd) {
      if (!(p = print_question(o, m, p))) return trunc();
      --qd;
      while (p < m.end && qd) {
        if (!(p = print_question(o, m, p))) return trunc();
        --qd;
      }
    }
    if (qd) return trunc();
  }
  o += fmt::format(" ({})", length);
}

}  // namespace pktpath::cli
