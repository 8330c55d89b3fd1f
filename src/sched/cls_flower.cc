// flower (net/sched/cls_flower.c), a subset.
#include "sched/cls_flower.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "core/rcu_hash.h"

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
    k.ttl = ip[8];
    k.ip_proto = ip[9];
    std::memcpy(k.src_ip, ip + 12, 4);
    std::memcpy(k.dst_ip, ip + 16, 4);
    if ((rd16(ip + 6) & 0x1fff) == 0) l4 = nh + (ip[0] & 0x0f) * 4u;  // not a later fragment
  } else if (et == 0x86dd && nh + 40 <= n) {
    const uint8_t* ip = d + nh;
    k.tos = static_cast<uint8_t>((ip[0] & 0x0f) << 4 | ip[1] >> 4);
    k.ip_proto = ip[6];
    k.ttl = ip[7];
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

constexpr size_t kWords = sizeof(FlowerKey) / 8;
struct KeyWords {
  uint64_t w[kWords];
  bool operator==(const KeyWords&) const = default;
};
KeyWords words_of(const FlowerKey& k) {
  KeyWords x;
  std::memcpy(x.w, &k, sizeof k);
  return x;
}
KeyWords masked(const KeyWords& k, const KeyWords& m) {
  KeyWords x;
  for (size_t i = 0; i < kWords; ++i) x.w[i] = k.w[i] & m.w[i];
  return x;
}
// The words of the key a mask covers (the kernel hashes the mask's byte range,
// fl_mask_range): a mask on the destination address and the ethertype is two words.
struct MaskWords {
  uint8_t idx[kWords];
  uint8_t n = 0;
  explicit MaskWords(const KeyWords& bits) {
    for (uint8_t i = 0; i < kWords; ++i)
      if (bits.w[i]) idx[n++] = i;
  }
};
// The covered words of a (masked) key, packed, and their hash.
struct Packed {
  uint64_t w[kWords];
  uint8_t n;
  uint64_t hash() const { return rcu_hash_words(w, n); }
  bool same(const KeyWords& key, const MaskWords& m) const {
    for (uint8_t j = 0; j < n; ++j)
      if (key.w[m.idx[j]] != w[j]) return false;
    return true;
  }
};
inline Packed pack(const KeyWords& k, const KeyWords& bits, const MaskWords& m) {
  Packed p;
  p.n = m.n;
  for (uint8_t j = 0; j < m.n; ++j) p.w[j] = k.w[m.idx[j]] & bits.w[m.idx[j]];
  return p;
}

// One flower node (struct cls_fl_filter): its masked key, mask and port ranges.
class FlowerFilter final : public FilterOf<FlowerSpec> {
 public:
  explicit FlowerFilter(const FlowerSpec& s) : FilterOf(s), key_(words_of(s.key)) {}
  const KeyWords& key() const { return key_; }  // masked
  KeyWords mask() const { return words_of(spec_.mask); }
  bool ranged() const { return spec_.src_range || spec_.dst_range; }
  bool same_ranges(const FlowerFilter& o) const {
    const FlowerSpec& a = spec_;
    const FlowerSpec& b = o.spec_;
    return a.src_range == b.src_range && a.dst_range == b.dst_range && a.src_min == b.src_min &&
           a.src_max == b.src_max && a.dst_min == b.dst_min && a.dst_max == b.dst_max;
  }
  // mirrors fl_range_port_src_cmp / fl_range_port_dst_cmp.
  bool in_range(const FlowerKey& k) const {
    if (spec_.src_range) {
      const uint16_t v = ntohs(k.src_port);
      if (v < spec_.src_min || v > spec_.src_max) return false;
    }
    if (spec_.dst_range) {
      const uint16_t v = ntohs(k.dst_port);
      if (v < spec_.dst_min || v > spec_.dst_max) return false;
    }
    return true;
  }
  // A packet matched this node: count it, run the actions (tcf_exts_exec).
  int run(const TcContext& ctx, Packet* p, TcResult& res) const {
    count(ctx, p).matched.add();
    return exts_exec(ctx, p, spec_, res);
  }
  // The node alone (a pref always runs through its FlowerHead; this is the same match).
  int classify(const TcContext& ctx, Packet* p, TcResult& res) const override {
    FlowerKey k;
    flower_dissect(p, k);
    if (masked(words_of(k), mask()) != key() || !in_range(k)) return TC_ACT_UNSPEC;
    return run(ctx, p, res);
  }

 private:
  KeyWords key_;
};

// A mask (struct fl_flow_mask): the bits and range flags its nodes share, a hash table
// over their masked keys, and for a range mask its nodes in the order they came
// (fl_lookup_range walks mask->filters).
struct FlowerMask {
  explicit FlowerMask(const KeyWords& b) : bits(b), words(b) {}
  KeyWords bits;
  MaskWords words;
  bool src_range = false, dst_range = false;
  RcuHashTable<const FlowerFilter*> ht;
  // The mask's node while it has exactly one (compared without hashing: one rule of a
  // mask costs what a plain compare does); nullptr otherwise.
  std::atomic<const FlowerFilter*> only{nullptr};
  using Ranged = std::vector<const FlowerFilter*>;
  std::atomic<const Ranged*> ranged{nullptr};  // range masks only; immutable once published
  size_t refs = 0;
  ~FlowerMask() { delete ranged.load(std::memory_order_relaxed); }
  bool ranges() const { return src_range || dst_range; }
};

// A pref's flower nodes (struct cls_fl_head): its masks in the order they were made,
// each looked up in turn (fl_classify). Readers load `masks_`; the writer changes a
// mask's table in place and republishes the mask list when a mask comes or goes.
class FlowerHead final : public TcFilter {
 public:
  explicit FlowerHead(const TcFilter& first) : TcFilter(first.spec_base(), false), spec_(spec_of(first)) {}
  ~FlowerHead() override { delete masks_.load(std::memory_order_relaxed); }

  // mirrors fl_classify: dissect once, then per mask the masked key's lookup
  // (fl_mask_lookup); the first node found decides.
  int classify(const TcContext& ctx, Packet* p, TcResult& res) const override {
    const MaskList* ml = masks_.load(std::memory_order_acquire);
    FlowerKey k;
    flower_dissect(p, k);
    const KeyWords kw = words_of(k);
    for (const FlowerMask* m : ml->v) {
      const Packed mk = pack(kw, m->bits, m->words);
      const FlowerFilter* f = nullptr;
      if (PP_UNLIKELY(m->ranges())) {
        for (const FlowerFilter* c : *m->ranged.load(std::memory_order_acquire))
          if (mk.same(c->key(), m->words) && c->in_range(k)) {
            f = c;
            break;
          }
      } else if (const FlowerFilter* c = m->only.load(std::memory_order_acquire)) {
        f = mk.same(c->key(), m->words) ? c : nullptr;
      } else {
        f = m->ht.find(mk.hash(), [&](const FlowerFilter* c) { return mk.same(c->key(), m->words); });
      }
      if (f) return f->run(ctx, p, res);
    }
    return TC_ACT_UNSPEC;
  }
  const char* kind() const override { return FlowerSpec::kKind; }
  const FilterSpec& spec_base() const override { return spec_; }

  // mirrors fl_change for a new node: its mask found or made (fl_check_assign_mask),
  // then the key inserted unless the mask holds it already (fl_ht_insert_unique; when
  // overwriting, `unique` false, the kernel lets the key in all the same).
  Status insert(const FlowerFilter& f, RcuRetireList& retired, bool unique = true) {
    FlowerMask* m = find_mask(f);
    const bool fresh = !m;
    if (fresh) {
      owned_.push_back(std::make_unique<FlowerMask>(f.mask()));
      m = owned_.back().get();
      m->src_range = f.spec().src_range;
      m->dst_range = f.spec().dst_range;
      if (m->ranges()) m->ranged.store(new FlowerMask::Ranged, std::memory_order_relaxed);
    }
    if (m->ranges()) {
      const FlowerMask::Ranged& cur = *m->ranged.load(std::memory_order_relaxed);
      for (const FlowerFilter* c : cur)
        if (unique && c->key() == f.key() && c->same_ranges(f)) return exists();
      auto next = std::make_unique<FlowerMask::Ranged>(cur);
      next->push_back(&f);
      retired.retire(std::unique_ptr<const FlowerMask::Ranged>(m->ranged.exchange(next.release(), std::memory_order_acq_rel)));
    } else {
      const uint64_t h = pack(f.key(), m->bits, m->words).hash();
      if (unique && m->ht.find(h, [&](const FlowerFilter* c) { return c->key() == f.key(); })) return exists();
      m->ht.insert(h, &f, retired);
      set_only(*m);
    }
    ++m->refs;
    if (fresh) publish_masks(retired);
    return {};
  }

  // mirrors fl_change with an old node (fold): the new node joins its mask (made last if
  // new), then the old one leaves, so the masks keep their order.
  void replace(const FlowerFilter& old, const FlowerFilter& now, RcuRetireList& retired) {
    (void)insert(now, retired, false);
    erase(old, retired);
  }

  // mirrors __fl_delete: the node leaves its mask's table; an empty mask goes
  // (fl_mask_put).
  void erase(const FlowerFilter& f, RcuRetireList& retired) {
    FlowerMask* m = find_mask(f);
    if (!m) return;
    bool found = false;
    if (m->ranges()) {
      const FlowerMask::Ranged& cur = *m->ranged.load(std::memory_order_relaxed);
      auto next = std::make_unique<FlowerMask::Ranged>();
      for (const FlowerFilter* c : cur)
        if (c != &f) next->push_back(c);
      found = next->size() != cur.size();
      retired.retire(std::unique_ptr<const FlowerMask::Ranged>(m->ranged.exchange(next.release(), std::memory_order_acq_rel)));
    } else {
      found = m->ht.erase(pack(f.key(), m->bits, m->words).hash(), &f, retired);
      set_only(*m);
    }
    if (!found || --m->refs) return;
    for (auto it = owned_.begin(); it != owned_.end(); ++it)
      if (it->get() == m) {
        std::unique_ptr<FlowerMask> gone = std::move(*it);
        owned_.erase(it);
        publish_masks(retired);
        retired.retire(std::move(gone));
        break;
      }
  }

 private:
  struct MaskList {
    std::vector<const FlowerMask*> v;
  };
  static FlowerSpec spec_of(const TcFilter& f) { return static_cast<const FlowerFilter&>(f).spec(); }
  static Status exists() {
    return unexpected("File exists (a flower filter with this key and mask is in the pref)", "flower");
  }
  // After the table changed: its single node, or none (readers then search the table).
  static void set_only(FlowerMask& m) {
    const FlowerFilter* one = nullptr;
    if (m.ht.size() == 1) m.ht.for_each([&](const FlowerFilter* c) { one = c; });
    m.only.store(one, std::memory_order_release);
  }
  FlowerMask* find_mask(const FlowerFilter& f) const {
    for (const auto& m : owned_)
      if (m->bits == f.mask() && m->src_range == f.spec().src_range && m->dst_range == f.spec().dst_range)
        return m.get();
    return nullptr;
  }
  void publish_masks(RcuRetireList& retired) {
    auto next = std::make_unique<MaskList>();
    for (const auto& m : owned_) next->v.push_back(m.get());
    retired.retire(std::unique_ptr<const MaskList>(masks_.exchange(next.release(), std::memory_order_acq_rel)));
  }

  FlowerSpec spec_;
  std::vector<std::unique_ptr<FlowerMask>> owned_;  // in the order they were made
  std::atomic<const MaskList*> masks_{new MaskList};
};

const FlowerFilter& node_of(const TcFilter& f) { return static_cast<const FlowerFilter&>(f); }

// The pref's head rebuilt from its nodes in handle order (a node whose key its mask
// already holds is left out, as the kernel would have refused it).
std::unique_ptr<TcFilter> fl_bind(const std::vector<const TcFilter*>& pref) {
  auto head = std::make_unique<FlowerHead>(*pref.front());
  RcuRetireList unseen = RcuRetireList::staging();  // nothing was published yet
  for (const TcFilter* f : pref) (void)head->insert(node_of(*f), unseen);
  return head;
}

Status fl_bind_add(TcFilter& bound, const TcFilter& node, RcuRetireList& retired) {
  return static_cast<FlowerHead&>(bound).insert(node_of(node), retired);
}

void fl_bind_del(TcFilter& bound, const TcFilter& node, RcuRetireList& retired) {
  static_cast<FlowerHead&>(bound).erase(node_of(node), retired);
}

void fl_bind_replace(TcFilter& bound, const TcFilter& old, const TcFilter& now, RcuRetireList& retired) {
  static_cast<FlowerHead&>(bound).replace(node_of(old), node_of(now), retired);
}

// mirrors fl_change: the key is stored masked (fl_set_masked_key).
Result<std::unique_ptr<TcFilter>> fl_create(const FilterSpec& spec, Net&) {
  auto s = filter_spec_as<FlowerSpec>(spec);
  if (!s) return unexpected(s.error());
  FlowerSpec c = **s;
  auto* k = reinterpret_cast<uint8_t*>(&c.key);
  const auto* m = reinterpret_cast<const uint8_t*>(&c.mask);
  for (size_t i = 0; i < sizeof(FlowerKey); ++i) k[i] &= m[i];
  if ((c.src_range && c.src_min > c.src_max) || (c.dst_range && c.dst_min > c.dst_max))
    return unexpected("flower: a port range's min must not exceed its max");
  return std::unique_ptr<TcFilter>(std::make_unique<FlowerFilter>(c));
}

const PrefOps kFlowerPrefOps{nullptr, [](uint32_t, const std::vector<const TcFilter*>&, std::vector<uint32_t>*) {
                               return Status{};
                             },
                             fl_bind, fl_bind_add, fl_bind_del, fl_bind_replace};
const FilterRegistrar kFlower{{FlowerSpec::kKind, fl_create, nullptr, &kFlowerPrefOps}};  // cls_fl_ops

}  // namespace
}  // namespace pktpath::tc
