// Helpers for the netfilter tests: packet builders and a device table for the resolver.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/packet_pool.h"
#include "netfilter/nft_command.h"

namespace pktpath::nf::test {

// Ethernet + IPv4 + UDP/TCP header builder (values in host order).
struct Pkt {
  uint16_t ethertype = 0x0800;
  bool set_protocol = true;  // fill Packet::protocol from ethertype
  uint32_t saddr = 0x0a000001, daddr = 0x0a000002;
  uint8_t l4proto = 17;
  uint16_t sport = 1000, dport = 2000;
  uint16_t frag_off = 0;
  uint32_t mark = 0;
  uint32_t payload = 18;
  uint32_t truncate_to = 0;  // cut the linear data to this many bytes (0: no cut)
  bool vlan_tag = false;     // an in-band 802.1Q tag before the ethertype
  uint8_t tos = 0;
  // IPv6 (ethertype 0x86dd): 2001:db8::1 -> 2001:db8:1::2, with a fragment header
  // (offset and M flag: frag_off) before the transport header when ip6_frag.
  bool ip6_frag = false;
};

inline constexpr uint8_t kTestSaddr6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
inline constexpr uint8_t kTestDaddr6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

inline std::vector<uint8_t> build_bytes(const Pkt& d) {
  std::vector<uint8_t> b;
  auto u8 = [&](uint32_t v) { b.push_back(static_cast<uint8_t>(v)); };
  auto u16 = [&](uint32_t v) { u8(v >> 8); u8(v); };
  auto u32 = [&](uint32_t v) { u16(v >> 16); u16(v); };
  for (int i = 0; i < 6; ++i) u8(0x11);
  for (int i = 0; i < 6; ++i) u8(0x22);
  if (d.vlan_tag) { u16(0x8100); u16(10); }
  u16(d.ethertype);
  if (d.ethertype == 0x0800) {
    const uint32_t l4len = (d.l4proto == 6 ? 20 : 8) + d.payload;
    u8(0x45); u8(d.tos); u16(20 + l4len); u16(1); u16(d.frag_off); u8(64); u8(d.l4proto); u16(0);
    u32(d.saddr); u32(d.daddr);
    u16(d.sport); u16(d.dport);
    if (d.l4proto == 6) { u32(0); u32(0); u16(0x5000); u16(0); u16(0); u16(0); }
    else { u16(8 + d.payload); u16(0); }
    for (uint32_t i = 0; i < d.payload; ++i) u8(i);
  } else if (d.ethertype == 0x86dd) {
    const uint32_t l4len = (d.l4proto == 6 ? 20 : 8) + d.payload;
    u32(0x60000000); u16(l4len + (d.ip6_frag ? 8 : 0)); u8(d.ip6_frag ? 44 : d.l4proto); u8(64);
    for (uint8_t x : kTestSaddr6) u8(x);
    for (uint8_t x : kTestDaddr6) u8(x);
    if (d.ip6_frag) { u8(d.l4proto); u8(0); u16(d.frag_off); u32(7); }
    u16(d.sport); u16(d.dport);
    if (d.l4proto == 6) { u32(0); u32(0); u16(0x5000); u16(0); u16(0); u16(0); }
    else { u16(8 + d.payload); u16(0); }
    for (uint32_t i = 0; i < d.payload; ++i) u8(i);
  } else {
    for (uint32_t i = 0; i < 46; ++i) u8(i);
  }
  if (d.truncate_to && d.truncate_to < b.size()) b.resize(d.truncate_to);
  return b;
}

inline Packet* make_packet(Cpu& cpu, const Pkt& d) {
  Packet* p = cpu.alloc();
  if (!p) return nullptr;
  auto b = build_bytes(d);
  p->append(b.data(), static_cast<uint32_t>(b.size()));
  if (d.set_protocol) p->protocol = static_cast<uint16_t>((d.vlan_tag ? 0x8100 : d.ethertype) >> 8 |
                                                          ((d.vlan_tag ? 0x8100 : d.ethertype) & 0xff) << 8);
  p->mark = d.mark;
  return p;
}

// A device table standing in for the NetDevice registry.
class TestResolver : public NftDeviceResolver {
 public:
  NfDeviceHooks& add(const std::string& name) {
    auto& slot = devs_[name];
    if (!slot) slot = std::make_unique<NfDeviceHooks>(nullptr);
    return *slot;
  }
  NfDeviceHooks* find_device(std::string_view name) override {
    auto it = devs_.find(std::string(name));
    return it == devs_.end() ? nullptr : it->second.get();
  }

 private:
  std::map<std::string, std::unique_ptr<NfDeviceHooks>> devs_;
};

// Run one nft line; returns {rc, stdout, stderr}.
struct NftRun {
  int rc;
  std::string out, err;
};
inline NftRun nft(NftRuleset& rs, TestResolver& res, const std::vector<std::string>& words,
                  bool json = false) {
  std::ostringstream o, e;
  int rc = nft_command(words, rs, res, o, e, json);
  return {rc, o.str(), e.str()};
}

}  // namespace pktpath::nf::test
