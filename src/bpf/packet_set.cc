#include "bpf/packet_set.h"

#include <pcap/pcap.h>

#include <cstring>

#include <fmt/format.h>

namespace pktpath::bpf {

void PacketSet::add(const uint8_t* p, uint32_t caplen, uint32_t wirelen) {
  offs_.push_back(buf_.size());
  buf_.insert(buf_.end(), p, p + caplen);
  lens_.push_back(caplen);
  wire_.push_back(wirelen < caplen ? caplen : wirelen);
  views_ok_ = false;
}

const std::vector<PacketView>& PacketSet::views() const {
  if (!views_ok_) {
    views_.clear();
    views_.reserve(lens_.size());
    for (size_t i = 0; i < lens_.size(); ++i) {
      PacketView v = PacketView::linear(buf_.data() + offs_[i], lens_[i]);
      v.wire_len = wire_[i];
      // A replayed capture arrives on a device: ifindex 1, ARPHRD_ETHER for Ethernet
      // captures, ARPHRD_NONE otherwise.
      v.meta.has_dev = true;
      v.meta.ifindex = 1;
      v.meta.hatype = linktype == DLT_EN10MB ? 1 : 0xfffe;
      if (linktype == DLT_EN10MB && lens_[i] >= 14)
        v.meta.protocol = static_cast<uint16_t>(buf_[offs_[i] + 12] | (buf_[offs_[i] + 13] << 8));
      else if (linktype != DLT_EN10MB)
        v.net_off = 0;
      views_.push_back(v);
    }
    views_ok_ = true;
  }
  return views_;
}

bool read_pcap(const std::string& path, PacketSet* out, std::string* err) {
  char ebuf[PCAP_ERRBUF_SIZE] = {0};
  pcap_t* p = pcap_open_offline(path.c_str(), ebuf);
  if (!p) {
    *err = fmt::format("{}: {}", path, ebuf);
    return false;
  }
  PacketSet set;
  set.linktype = pcap_datalink(p);
  set.snaplen = pcap_snapshot(p);
  pcap_pkthdr* h;
  const u_char* data;
  int rc;
  size_t bytes = 0;
  while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
    bytes += h->caplen;
    if (bytes > kMaxPcapBytes) {
      *err = fmt::format("{}: more than {} MiB of packets", path, kMaxPcapBytes >> 20);
      pcap_close(p);
      *out = std::move(set);
      return false;
    }
    set.add(data, h->caplen, h->len);
  }
  if (rc == PCAP_ERROR) {
    *err = fmt::format("{}: {}", path, pcap_geterr(p));
    pcap_close(p);
    *out = std::move(set);
    return false;
  }
  pcap_close(p);
  *out = std::move(set);
  return true;
}

namespace {

struct Rng {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 33);
  }
  uint32_t below(uint32_t n) { return next() % n; }
};

void put16(uint8_t* p, uint32_t v) { p[0] = uint8_t(v >> 8); p[1] = uint8_t(v); }
void put32(uint8_t* p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v); }

// An IPv4 address: 192.168.2.x for `inside`, else a spread of other nets.
uint32_t ipv4_addr(Rng& r, bool inside) {
  if (inside) return 0xc0a80200u | r.below(256);
  static const uint32_t nets[] = {0x0a000000u, 0xc0a80100u, 0xc0a80300u, 0xac100000u, 0x08080800u};
  return nets[r.below(5)] | r.below(256);
}

// L4 header at p (room checked by caller): UDP or TCP with varied ports and flags.
void put_l4(Rng& r, uint8_t* p, uint8_t proto, uint32_t l4len) {
  static const uint16_t ports[] = {53, 80, 443, 22, 123, 8080, 5353, 1024};
  uint16_t sport = r.below(4) == 0 ? ports[r.below(8)] : uint16_t(1024 + r.below(60000));
  uint16_t dport = r.below(3) == 0 ? 53 : ports[r.below(8)];
  put16(p, sport);
  put16(p + 2, dport);
  if (proto == 17) {
    put16(p + 4, l4len);
  } else if (proto == 6) {
    put32(p + 4, r.next());
    put32(p + 8, r.next());
    p[12] = 0x50;
    static const uint8_t flags[] = {0x02, 0x12, 0x10, 0x18, 0x11, 0x04, 0x02, 0x10};
    p[13] = flags[r.below(8)];
    put16(p + 14, 65535);
  } else {  // ICMP echo
    p[0] = 8;
    p[1] = 0;
  }
}

}  // namespace

PacketSet make_synthetic(size_t n, uint64_t seed) {
  PacketSet set;
  Rng r{seed * 0x9e3779b97f4a7c15ull + 1};
  uint8_t f[128];
  for (size_t i = 0; i < n; ++i) {
    std::memset(f, 0, sizeof(f));
    uint32_t len = 60 + r.below(69);  // 60..128
    for (int j = 0; j < 6; ++j) f[j] = uint8_t(r.next());
    f[0] &= 0xfe;
    for (int j = 6; j < 12; ++j) f[j] = uint8_t(r.next());
    f[6] &= 0xfe;
    uint32_t kind = r.below(100);
    bool inside = r.below(100) < 30;
    uint32_t l3 = 14;
    if (kind < 10) {  // 802.1Q tag, then IPv4
      put16(f + 12, 0x8100);
      put16(f + 14, r.below(4096));
      l3 = 18;
      put16(f + 16, 0x0800);
    } else if (kind < 25) {
      put16(f + 12, 0x86dd);
    } else if (kind < 35) {
      put16(f + 12, 0x0806);
    } else {
      put16(f + 12, 0x0800);
    }
    uint16_t et = uint16_t(f[l3 - 2] << 8 | f[l3 - 1]);
    uint8_t proto = r.below(10) < 5 ? 17 : r.below(10) < 8 ? 6 : 1;
    if (et == 0x0800) {
      uint8_t* ip = f + l3;
      ip[0] = 0x45;
      put16(ip + 2, len - l3);
      put16(ip + 4, r.next());
      if (r.below(20) == 0) put16(ip + 6, 0x2000 | r.below(100));  // some fragments
      ip[8] = 64;
      ip[9] = proto;
      uint32_t src = ipv4_addr(r, inside && r.below(2) == 0);
      uint32_t dst = ipv4_addr(r, inside && src >> 8 != 0xc0a802u);
      put32(ip + 12, src);
      put32(ip + 16, dst);
      put_l4(r, ip + 20, proto, len - l3 - 20);
    } else if (et == 0x86dd) {
      uint8_t* ip = f + l3;
      ip[0] = 0x60;
      put16(ip + 4, len - l3 - 40);
      ip[6] = proto == 1 ? 58 : proto;
      ip[7] = 64;
      put32(ip + 8, 0x20010db8);
      put32(ip + 20, r.next());
      put32(ip + 24, 0x20010db8);
      put32(ip + 36, r.next());
      if (len >= l3 + 40 + 20) put_l4(r, ip + 40, ip[6] == 58 ? 1 : proto, len - l3 - 40);
      if (ip[6] == 58) ip[40] = 128;
    } else {  // ARP request
      uint8_t* a = f + l3;
      put16(a, 1);
      put16(a + 2, 0x0800);
      a[4] = 6;
      a[5] = 4;
      put16(a + 6, 1 + r.below(2));
      std::memcpy(a + 8, f + 6, 6);
      put32(a + 14, ipv4_addr(r, inside));
      put32(a + 24, ipv4_addr(r, inside));
    }
    set.add(f, len, len);
  }
  return set;
}

}  // namespace pktpath::bpf
