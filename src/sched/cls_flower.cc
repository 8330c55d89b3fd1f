// flower (net/sched/cls_flower.c), a subset.
#include "sched/cls_flower.h"

#include <cstring>

namespace pktpath::tc {

namespace {
inline uint16_t rd16(const uint8_t* d) { return static_cast<uint16_t>(d[0] << 8 | d[1]); }
constexpr uint8_t kIpprotoTcp = 6, kIpprotoUdp = 17, kIpprotoSctp = 132;
bool has_ports(uint8_t proto) { return proto == kIpprotoTcp || proto == kIpprotoUdp || proto == kIpprotoSctp; }
}  // namespace

void flower_dissect(const Packet* p, FlowerKey& k) {
  std::memset(&k, 0, sizeof k);
  const uint8_t* d = p->data();
  const uint32_t n = p->headlen();
  if (n < 14) return;
  std::memcpy(k.dst_mac, d, 6);
  std::memcpy(k.src_mac, d + 6, 6);
  uint16_t et = rd16(d + 12);
  uint32_t nh = 14;
  if (p->vlan_present) {
    k.vlan_id = p->vlan_tci & 0x0fff;
  } else if ((et == 0x8100 || et == 0x88a8) && n >= 18) {
    k.vlan_id = rd16(d + 14) & 0x0fff;
    et = rd16(d + 16);
    nh = 18;
  }
  k.n_proto = htons(et);
  uint32_t l4 = 0;
  if (et == 0x0800 && nh + 20 <= n) {
    const uint8_t* ip = d + nh;
    k.tos = ip[1];
    k.ip_proto = ip[9];
    std::memcpy(k.src_ip, ip + 12, 4);
    std::memcpy(k.dst_ip, ip + 16, 4);
    if ((rd16(ip + 6) & 0x1fff) == 0) l4 = nh + (ip[0] & 0x0f) * 4u;  // not a later fragment
  } else if (et == 0x86dd && nh + 40 <= n) {
    const uint8_t* ip = d + nh;
    k.tos = static_cast<uint8_t>((ip[0] & 0x0f) << 4 | ip[1] >> 4);
    k.ip_proto = ip[6];
    std::memcpy(k.src_ip, ip + 8, 16);
    std::memcpy(k.dst_ip, ip + 24, 16);
    l4 = nh + 40;
  }
  if (l4 && has_ports(k.ip_proto) && l4 + 4 <= n) {
    std::memcpy(&k.src_port, d + l4, 2);
    std::memcpy(&k.dst_port, d + l4 + 2, 2);
  }
}

namespace {

class FlowerFilter final : public FilterOf<FlowerSpec> {
 public:
  using FilterOf::FilterOf;
  // mirrors fl_classify for one filter: dissect, mask, compare (fl_set_masked_key and
  // the mask's lookup), then the port ranges (fl_lookup_range), then the actions.
  int classify(const TcContext& ctx, Packet* p, TcResult& res) const override {
    TcStats::Slot& s = count(ctx, p);
    FlowerKey k;
    flower_dissect(p, k);
    uint64_t w[sizeof(FlowerKey) / 8], m[sizeof(FlowerKey) / 8], f[sizeof(FlowerKey) / 8];
    std::memcpy(w, &k, sizeof k);
    std::memcpy(m, &spec_.mask, sizeof k);
    std::memcpy(f, &spec_.key, sizeof k);
    uint64_t diff = 0;
    for (size_t i = 0; i < sizeof(FlowerKey) / 8; ++i) diff |= (w[i] & m[i]) ^ f[i];
    if (diff) return TC_ACT_UNSPEC;
    if (spec_.src_range) {
      const uint16_t v = ntohs(k.src_port);
      if (v < spec_.src_min || v > spec_.src_max) return TC_ACT_UNSPEC;
    }
    if (spec_.dst_range) {
      const uint16_t v = ntohs(k.dst_port);
      if (v < spec_.dst_min || v > spec_.dst_max) return TC_ACT_UNSPEC;
    }
    s.matched.add();
    return exts_exec(ctx, p, spec_, res);
  }
};

// mirrors fl_change: the key is stored masked (fl_set_masked_key).
std::unique_ptr<TcFilter> fl_create(const FilterSpec& spec, Net&, std::string* err) {
  const auto* s = filter_spec_as<FlowerSpec>(spec, err);
  if (!s) return nullptr;
  FlowerSpec c = *s;
  auto* k = reinterpret_cast<uint8_t*>(&c.key);
  const auto* m = reinterpret_cast<const uint8_t*>(&c.mask);
  for (size_t i = 0; i < sizeof(FlowerKey); ++i) k[i] &= m[i];
  if ((c.src_range && c.src_min > c.src_max) || (c.dst_range && c.dst_min > c.dst_max)) {
    if (err) *err = "flower: a port range's min must not exceed its max";
    return nullptr;
  }
  return std::make_unique<FlowerFilter>(c);
}

const FilterRegistrar kFlower{{FlowerSpec::kKind, fl_create}};  // cls_fl_ops

}  // namespace
}  // namespace pktpath::tc
