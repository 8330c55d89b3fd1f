// u32 (net/sched/cls_u32.c): nodes and hash tables as entries of the pref's list, bound
// into one walk of the tables for the datapath.
#include "sched/cls_u32.h"

#include <arpa/inet.h>
#include <strings.h>

#include <cstdio>
#include <cstring>
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace pktpath::tc {
namespace {

// A knode or a table as an entry of the pref's list; it never runs by itself (the
// pref's U32Tables does), and keeps the knode's counters (tc_u32_pcnt).
class U32Node final : public FilterOf<U32Spec> {
 public:
  using FilterOf::FilterOf;
  int classify(const TcContext&, Packet*, TcResult&) const override { return TC_ACT_UNSPEC; }
  const U32Spec& spec() const { return spec_; }
  bool is_table() const { return u32_key(handle()) == 0; }
};

const U32Node& node_of(const TcFilter* f) { return static_cast<const U32Node&>(*f); }

std::string ht_str(uint32_t h) {
  char b[16];
  std::snprintf(b, sizeof b, "%x:", u32_htid(h) >> 20);
  return b;
}

// The pref's tables as the datapath walks them: the root first, each bucket's knodes in
// node order (u32_change's insertion), each knode with the index of the table it links to.
class U32Tables final : public TcFilter {
 public:
  explicit U32Tables(const std::vector<const TcFilter*>& pref)
      : TcFilter(pref.front()->spec_base(), false), first_(&node_of(pref.front())) {
    const uint32_t root = first_->spec().root;
    std::vector<uint32_t> handles{root};
    std::vector<uint32_t> divisors{1};
    for (const TcFilter* f : pref)
      if (node_of(f).is_table() && f->handle() != root) {
        handles.push_back(f->handle());
        divisors.push_back(node_of(f).spec().divisor);
      }
    auto table_index = [&](uint32_t h) -> int32_t {
      for (size_t i = 0; i < handles.size(); ++i)
        if (handles[i] == h) return static_cast<int32_t>(i);
      return -1;
    };
    std::vector<std::vector<std::vector<Knode>>> buckets(handles.size());
    for (size_t t = 0; t < handles.size(); ++t) buckets[t].resize(divisors[t]);
    for (const TcFilter* f : pref) {
      const U32Node& n = node_of(f);
      if (n.is_table()) continue;
      const int32_t t = table_index(u32_htid(f->handle()));
      if (t < 0 || u32_hash(f->handle()) >= divisors[t]) continue;  // check_add keeps this from happening
      const uint32_t hmask = ntohl(n.spec().hmask);
      const int32_t down = n.spec().link ? table_index(n.spec().link) : -1;
      buckets[t][u32_hash(f->handle())].push_back(
          {&n, down, static_cast<uint8_t>(hmask ? ffs(static_cast<int>(hmask)) - 1 : 0)});
    }
    for (size_t t = 0; t < handles.size(); ++t) {
      tables_.push_back({divisors[t] - 1, static_cast<uint32_t>(bounds_.size())});
      for (const auto& b : buckets[t]) {
        bounds_.push_back(static_cast<uint32_t>(nodes_.size()));
        nodes_.insert(nodes_.end(), b.begin(), b.end());
      }
      bounds_.push_back(static_cast<uint32_t>(nodes_.size()));
    }
  }

  const char* kind() const override { return U32Spec::kKind; }
  const FilterSpec& spec_base() const override { return first_->spec_base(); }

  // mirrors u32_classify without variable offsets: walk the bucket's knodes; all keys
  // must hold; a key past the packet's end ends the walk ("goto out"); a match with a
  // link continues in the linked table's bucket (PUSH), and when that bucket is done
  // without a verdict the linking node's own terminal verdict applies (POP, then
  // check_terminal); deeper than kU32MaxDepth ends the walk ("dead loop").
  int classify(const TcContext& ctx, Packet* p, TcResult& res) const override {
    const int nh = tc_network_offset(p);
    if (nh < 0) return TC_ACT_UNSPEC;
    const uint8_t* d = p->data();
    const int64_t len = p->headlen();
    auto word = [&](int64_t off, uint32_t* w) {
      if (off < 0 || off + 4 > len) return false;
      std::memcpy(w, d + off, 4);
      return true;
    };
    struct Frame {
      uint32_t i, end;
    };
    Frame stack[kU32MaxDepth];
    uint32_t depth = 0;
    uint32_t i = bounds_[0], end = bounds_[1];
    for (;;) {
      if (i == end) {
        if (depth == 0) return TC_ACT_UNSPEC;
        --depth;
        i = stack[depth].i;
        end = stack[depth].end;
        const int r = check_terminal(ctx, p, nodes_[i], res);
        if (r >= 0) return r;
        ++i;
        continue;
      }
      const Knode& k = nodes_[i];
      const U32Spec& s = k.n->spec();
      TcStats::Slot& st = k.n->stats.at(ctx.cpu);  // rcnt
      st.packets.add();
      st.bytes.add(tc_skb_len(ctx, p));
      bool held = true;
      for (const U32Key& key : s.keys) {
        uint32_t w;
        if (!word(nh + static_cast<int64_t>(key.off), &w)) return TC_ACT_UNSPEC;
        if ((w ^ key.val) & key.mask) {
          held = false;
          break;
        }
      }
      if (!held) {
        ++i;
        continue;
      }
      if (k.down < 0) {
        const int r = check_terminal(ctx, p, k, res);
        if (r >= 0) return r;
        ++i;
        continue;
      }
      if (depth >= kU32MaxDepth) return TC_ACT_UNSPEC;
      stack[depth++] = {i, end};
      const Table& t = tables_[k.down];
      uint32_t sel = 0;
      if (t.mask) {
        uint32_t w;
        if (!word(nh + static_cast<int64_t>(s.hoff), &w)) return TC_ACT_UNSPEC;
        sel = t.mask & (ntohl(w & s.hmask) >> k.fshift);  // u32_hash_fold
      }
      i = bounds_[t.first + sel];
      end = bounds_[t.first + sel + 1];
    }
  }

 private:
  struct Knode {
    const U32Node* n;
    int32_t down;    // the linked table's index, -1: none
    uint8_t fshift;  // n->fshift: the hash mask's lowest set bit
  };
  struct Table {
    uint32_t mask;   // tc_u_hnode.divisor: buckets - 1
    uint32_t first;  // its buckets' bounds start at bounds_[first]
  };

  // check_terminal: a terminal node's classid and actions; rhit counts it.
  static int check_terminal(const TcContext& ctx, Packet* p, const Knode& k, TcResult& res) {
    const U32Spec& s = k.n->spec();
    if (!s.terminal) return TC_ACT_UNSPEC;
    k.n->stats.at(ctx.cpu).matched.add();
    return exts_exec(ctx, p, s, res);
  }

  const U32Node* first_;
  std::vector<Knode> nodes_;
  std::vector<uint32_t> bounds_;  // per bucket of each table: first node; then the end
  std::vector<Table> tables_;     // [0]: the root
};

const U32Spec* entry(const std::vector<const TcFilter*>& pref, uint32_t handle) {
  for (const TcFilter* f : pref)
    if (f->handle() == handle) return &node_of(f).spec();
  return nullptr;
}

// tc_u_common: the hash table ids of one qdisc's u32 prefs, in all its filter lists
// (each pref's root and the tables made with divisor), the pref that holds each (known
// by its root table, unique in the qdisc), the knode count and gen_new_htid's cyclic
// cursor. Without prefs it is as new (the kernel frees it with its last tcf_proto).
class U32Common final : public PrefCommon {
 public:
  struct Table {
    uint32_t owner;  // the root table of the pref holding it
    uint32_t pref;
  };
  void remember(const TcFilter& node) override {
    const U32Spec& s = node_of(&node).spec();
    if (prefs_[s.root]++ == 0) tables_[s.root] = {s.root, s.pref};
    if (!node_of(&node).is_table()) ++knodes_;
    else if (node.handle() != s.root) tables_[node.handle()] = {s.root, s.pref};
  }
  void forget(const TcFilter& node) override {
    const U32Spec& s = node_of(&node).spec();
    if (!node_of(&node).is_table()) --knodes_;
    else if (node.handle() != s.root) tables_.erase(node.handle());
    auto it = prefs_.find(s.root);
    if (it != prefs_.end() && --it->second == 0) {
      prefs_.erase(it);
      tables_.erase(s.root);
      if (prefs_.empty()) cursor_ = 1;  // the qdisc's last u32 pref went
    }
  }
  // mirrors u32_delete's `*last`: the only u32 pref of the qdisc, and no knode left.
  bool pref_goes(const FilterSpec& gone) const override {
    const uint32_t root = static_cast<const U32Spec&>(gone).root;
    return knodes_ == 0 && (prefs_.empty() || (prefs_.size() == 1 && prefs_.count(root)));
  }
  const Table* table(uint32_t ht) const {
    auto it = tables_.find(ht);
    return it == tables_.end() ? nullptr : &it->second;
  }
  bool empty() const { return prefs_.empty(); }
  // mirrors gen_new_htid: the next free id after the last one given (800:|1 .. 800:|7fe),
  // wrapping; `taken` also refuses ids of the pref being built. 0: none left.
  template <class Taken>
  uint32_t new_htid(Taken&& taken) {
    for (uint32_t tries = 0; tries < 0x7fe; ++tries) {
      const uint32_t id = (0x800u | cursor_) << 20;
      cursor_ = cursor_ >= 0x7fe ? 1 : cursor_ + 1;
      if (!tables_.count(id) && !taken(id)) return id;
    }
    return 0;
  }

 private:
  std::unordered_map<uint32_t, Table> tables_;  // table id -> its pref
  std::unordered_map<uint32_t, size_t> prefs_;  // a pref's root -> its nodes (it lives while any does)
  size_t knodes_ = 0;
  uint32_t cursor_ = 1;
};

// mirrors u32_change for a new table (divisor) or knode: the table and bucket it goes in,
// its handle (gen_new_htid for tables, gen_new_kid: the lowest free node id), its link.
// Table ids are the qdisc's (U32Common); knode ids the table's.
Result<PrefOps::Add> u32_check_add(FilterSpec& base, const std::vector<const TcFilter*>& pref, PrefCommon* pc) {
  auto& s = static_cast<U32Spec&>(base);
  auto fail = [](const std::string& m) { return unexpected("cls_u32: " + m); };
  auto& common = static_cast<U32Common&>(*pc);
  // u32_init's root_ht: 800: for the qdisc's first u32 pref, else a new id.
  uint32_t root = kU32RootHt;
  if (!pref.empty())
    root = node_of(pref.front()).spec().root;
  else if (!common.empty())
    root = common.new_htid([](uint32_t) { return false; });
  if (!root) return fail("no free hash table id");
  s.root = root;
  std::unordered_set<uint32_t> handles;  // gen_new_htid/gen_new_kid's idr: one lookup per id tried
  for (const TcFilter* f : pref) handles.insert(f->handle());
  auto used = [&](uint32_t h) { return h == root || handles.count(h) != 0 || common.table(h) != nullptr; };
  // A table this pref may name: its own (the root or one made with divisor).
  auto own_table = [&](uint32_t ht, const char* what) -> Result<uint32_t> {
    if (ht == root) return 1u;
    if (const U32Spec* t = entry(pref, ht)) return t->divisor;
    if (const U32Common::Table* t = common.table(ht))
      return unexpected("cls_u32: hash table " + ht_str(ht) + " belongs to pref " + std::to_string(t->pref) +
                        (t->pref == s.pref ? " of the qdisc's other filter list" : "") +
                        " (pktpath keeps a table with its pref)");
    return unexpected(std::string("cls_u32: ") + what + " (" + ht_str(ht) + ")");
  };
  if (s.keys.empty() && !s.terminal && !s.divisor && !s.htid && !s.link && !s.hmask) {
    // No options: the tcf_proto and its root table only.
    if (s.handle) return fail("a node needs a selector (\"match ...\")");
    if (!pref.empty()) return PrefOps::Add::Nothing;
    s.handle = root;
    return PrefOps::Add::Node;
  }
  if (s.divisor) {
    if (u32_key(s.handle)) return fail("\"divisor\" can only be used on a hash table (handle HT:)");
    if (s.link || s.htid || !s.keys.empty()) return fail("a hash table takes no selector, \"ht\" or \"link\"");
    if (s.handle && used(s.handle)) return fail("hash table " + ht_str(s.handle) + " exists");
    for (const TcFilter* f : pref) s.seq = std::max(s.seq, node_of(f).spec().seq + 1);
    if (!s.handle) s.handle = common.new_htid(used);
    if (!s.handle) return fail("no free hash table id");
    return PrefOps::Add::Node;
  }
  uint32_t ht = s.htid ? u32_htid(s.htid) : root;
  if (ht == 0xfff00000u) ht = root;  // TC_U32_ROOT
  auto buckets = own_table(ht, "Specified hash table not found");
  if (!buckets) return unexpected(buckets.error());
  const uint32_t bucket = u32_hash(s.htid);
  if (bucket >= *buckets) return fail("Specified hash table buckets exceed configured value (bucket " +
                                      std::to_string(bucket) + " of " + std::to_string(*buckets) + ")");
  const uint32_t htb = ht | bucket << 12;
  if (s.handle) {
    if (u32_htid(s.handle) && u32_htid(s.handle) != ht) return fail("Handle specified hash table address mismatch");
    if (u32_node(s.handle) == 0) return fail("a node's handle needs a node id (HT:BKT:NODE)");
    s.handle = htb | u32_node(s.handle);
  } else {
    for (uint32_t node = 0x800; !s.handle && node <= 0xfff; ++node)
      if (!used(htb | node)) s.handle = htb | node;
    if (!s.handle) return fail("no free node id in " + ht_str(ht));
  }
  if (s.link) {
    if (u32_key(s.link)) return fail("Link handle must be a hash table");
    const U32Common::Table* t = common.table(s.link);
    if (s.link == root || (t && t->owner == s.link)) return fail("Not linking to root node");
    auto linked = own_table(s.link, "Link hash table not found");
    if (!linked) return unexpected(linked.error());
  }
  return PrefOps::Add::Node;
}

// mirrors u32_delete: a knode alone; a table with its knodes, unless it is the root or a
// knode links to it.
Status u32_del_set(uint32_t handle, const std::vector<const TcFilter*>& pref, std::vector<uint32_t>* gone) {
  if (u32_key(handle)) return {};
  if (!pref.empty() && handle == node_of(pref.front()).spec().root)
    return unexpected("cls_u32: Not allowed to delete root node");
  for (const TcFilter* f : pref)
    if (node_of(f).spec().link == handle)
      return unexpected("cls_u32: Can not delete in-use filter (" + ht_str(handle) + " is linked to)");
  for (const TcFilter* f : pref)
    if (u32_htid(f->handle()) == handle && u32_key(f->handle())) gone->push_back(f->handle());
  return {};
}

// What stays of a pref whose last node went while the qdisc has other u32 prefs or
// knodes (u32_delete's *last false): its root table, as an empty `u32` line makes it.
std::unique_ptr<TcFilter> u32_husk(const FilterSpec& gone) {
  U32Spec s = static_cast<const U32Spec&>(gone);
  const U32Spec bare;
  s.keys.clear();
  s.terminal = bare.terminal;
  s.divisor = bare.divisor;
  s.htid = bare.htid;
  s.link = bare.link;
  s.hmask = bare.hmask;
  s.hoff = bare.hoff;
  s.seq = bare.seq;
  s.classid = bare.classid;
  s.classid_set = bare.classid_set;
  s.actions = bare.actions;
  s.handle = s.root;
  return std::make_unique<U32Node>(s);
}

std::unique_ptr<TcFilter> u32_bind(const std::vector<const TcFilter*>& pref) {
  return std::make_unique<U32Tables>(pref);
}

Result<std::unique_ptr<TcFilter>> u32_create(const FilterSpec& spec, Net&) {
  auto r = filter_spec_as<U32Spec>(spec);
  if (!r) return unexpected(r.error());
  const U32Spec* s = *r;
  for (const U32Key& k : s->keys)
    if (k.off % 4 != 0) return unexpected("cls_u32: key offsets must be multiples of 4");
  if (s->hoff % 4 != 0) return unexpected("cls_u32: the hash key's offset must be a multiple of 4");
  if (s->divisor > 256 || (s->divisor & (s->divisor - 1)))
    return unexpected("cls_u32: divisor must be a power of 2, 256 at most");
  return std::unique_ptr<TcFilter>(std::make_unique<U32Node>(*s));
}

// mirrors u32_walk: the qdisc's tables newest first (tp_c->hlist), those of this pref
// only, each followed by its buckets' knodes in order.
void u32_dump_order(std::vector<const TcFilter*>& pref) {
  if (pref.empty()) return;
  const uint32_t root = node_of(pref.front()).spec().root;
  std::unordered_map<uint32_t, uint32_t> seq_of{{root, 0}};  // table -> creation order
  for (const TcFilter* f : pref)
    if (node_of(f).is_table() && f->handle() != root) seq_of[f->handle()] = node_of(f).spec().seq;
  auto rank = [&](const TcFilter* f) {
    auto it = seq_of.find(u32_htid(f->handle()));
    return it == seq_of.end() ? 0u : it->second;
  };
  // Handle order already puts a table (HT:0:0) before its knodes.
  std::stable_sort(pref.begin(), pref.end(), [&](const TcFilter* a, const TcFilter* b) { return rank(a) > rank(b); });
}

const PrefOps kU32PrefOps{u32_check_add,
                          u32_del_set,
                          u32_bind,
                          nullptr,
                          nullptr,
                          nullptr,
                          u32_dump_order,
                          [] { return std::unique_ptr<PrefCommon>(std::make_unique<U32Common>()); },
                          u32_husk};
const FilterRegistrar kU32{{U32Spec::kKind, u32_create, nullptr, &kU32PrefOps}};  // cls_u32_ops

}  // namespace
}  // namespace pktpath::tc
