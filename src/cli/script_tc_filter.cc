// `tc qdisc add|replace|del dev D clsact`, `tc filter add|replace|change|del dev D
// egress|ingress ... bpf ...` and `tc [-s] [-j] filter show dev D egress|ingress`.
// Words are checked at parse time (programs compiled, files read); devices are looked up
// when the line runs. Mirrors iproute2's tc/f_bpf.c, m_gact.c, m_mirred.c, m_skbedit.c
// for the words it accepts.
#include <arpa/inet.h>

#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bpf/parse.h"
#include "cli/script.h"
#include "cli/script_exec.h"
#include "sched/clsact.h"

namespace pktpath::cli {

namespace {


const std::string& word_at(const std::vector<std::string>& w, size_t i) {
  static const std::string kEnd;
  return i < w.size() ? w[i] : kEnd;
}

// Decimal or 0x hex, as tc's get_u32(…, 0).
bool parse_num(const std::string& s, uint32_t& v) {
  if (s.empty()) return false;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char* b = s.data() + (hex ? 2 : 0);
  auto [p, ec] = std::from_chars(b, s.data() + s.size(), v, hex ? 16 : 10);
  return ec == std::errc() && p == s.data() + s.size();
}

// --- clsact.

struct ClsactLine final : ExtLine {
  bool del = false;
  std::string dev;
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = r.table().find(dev);
    if (!d) return fail(err, dev, "cannot find device \"" + dev + "\"");
    std::string msg;
    const bool ok = del ? tc::clsact_del(*d, &msg) : tc::clsact_add(*d, &msg);
    return ok || fail(err, "clsact", msg);
  }
};

// `tc qdisc add|replace|del dev D clsact` (also `ingress`, which tc treats as the ingress
// half; pktpath has one object for both).
std::optional<bool> parse_clsact(const std::vector<std::string>& w, size_t i, ExtCommand& out, ScriptError& err) {
  bool has_clsact = false;
  for (size_t k = i; k < w.size(); ++k)
    if (w[k] == "clsact" || w[k] == "ingress") has_clsact = true;
  if (!has_clsact) return std::nullopt;
  auto line = std::make_shared<ClsactLine>();
  const std::string& verb = word_at(w, i);
  if (verb == "del" || verb == "delete") line->del = true;
  else if (verb != "add" && verb != "replace")
    return fail(err, verb, "tc qdisc " + verb + ": clsact supports add, replace, del");
  for (++i; i < w.size(); ++i) {
    const std::string& k = w[i];
    if (k == "dev") {
      if (i + 1 >= w.size()) return fail(err, k, "\"dev\" needs a device name");
      line->dev = w[++i];
    } else if (k == "clsact" || k == "ingress") {
      if (i + 1 < w.size()) return fail(err, w[i + 1], "qdisc clsact takes no options");
    } else if (k == "handle" || k == "parent") {
      if (i + 1 >= w.size()) return fail(err, k, "\"" + k + "\" needs a value");
      ++i;  // ffff: / ffff:fff1 — clsact's fixed handle and parent; accepted and ignored
    } else {
      return fail(err, k, "unexpected word \"" + k + "\" for qdisc clsact");
    }
  }
  if (line->dev.empty()) return fail(err, "clsact", "tc qdisc needs \"dev DEV\"");
  out.line = std::move(line);
  return true;
}

// --- actions.

struct ActionSpec {
  enum class Kind { Gact, Mirred, Skbedit } kind = Kind::Gact;
  int verdict = tc::TC_ACT_OK;
  tc::MirredAction::Dir mdir = tc::MirredAction::Dir::Egress;
  tc::MirredAction::Kind mkind = tc::MirredAction::Kind::Redirect;
  std::string mdev;
  tc::SkbeditAction::Params skb;
};

std::optional<int> gact_verdict(const std::string& s) {
  if (s == "ok" || s == "pass") return tc::TC_ACT_OK;
  if (s == "drop" || s == "shot") return tc::TC_ACT_SHOT;
  if (s == "pipe") return tc::TC_ACT_PIPE;
  if (s == "continue") return tc::TC_ACT_UNSPEC;
  if (s == "reclassify") return tc::TC_ACT_RECLASSIFY;
  if (s == "stolen") return tc::TC_ACT_STOLEN;
  if (s == "trap") return tc::TC_ACT_TRAP;
  return std::nullopt;
}

// Parses one action starting at w[i] (the word after "action"); leaves i at the next
// unparsed word.
bool parse_action(const std::vector<std::string>& w, size_t& i, ActionSpec& a, ScriptError& err) {
  const std::string& kind = word_at(w, i);
  if (kind.empty()) return fail(err, "action", "\"action\" needs an action (gact, mirred, skbedit)");
  if (auto v = gact_verdict(kind)) {  // `action drop` is gact's short form
    a.kind = ActionSpec::Kind::Gact;
    a.verdict = *v;
    ++i;
    return true;
  }
  if (kind == "gact") {
    ++i;
    auto v = gact_verdict(word_at(w, i));
    if (!v) return fail(err, word_at(w, i), "gact: expected ok, pass, drop, shot, pipe, continue or reclassify");
    a.kind = ActionSpec::Kind::Gact;
    a.verdict = *v;
    ++i;
    return true;
  }
  if (kind == "mirred") {
    a.kind = ActionSpec::Kind::Mirred;
    ++i;
    const std::string& dir = word_at(w, i);
    if (dir == "egress") a.mdir = tc::MirredAction::Dir::Egress;
    else if (dir == "ingress") a.mdir = tc::MirredAction::Dir::Ingress;
    else return fail(err, dir, "mirred: expected egress or ingress");
    const std::string& what = word_at(w, ++i);
    if (what == "redirect") a.mkind = tc::MirredAction::Kind::Redirect;
    else if (what == "mirror") a.mkind = tc::MirredAction::Kind::Mirror;
    else return fail(err, what, "mirred: expected redirect or mirror");
    if (word_at(w, ++i) != "dev") return fail(err, word_at(w, i), "mirred: expected \"dev DEV\"");
    a.mdev = word_at(w, ++i);
    if (a.mdev.empty()) return fail(err, "dev", "mirred: \"dev\" needs a device name");
    ++i;
    return true;
  }
  if (kind == "skbedit") {
    a.kind = ActionSpec::Kind::Skbedit;
    bool any = false;
    for (++i; i < w.size(); ++i) {
      const std::string& k = w[i];
      if (k == "queue_mapping" || k == "priority" || k == "mark") {
        const std::string& v = word_at(w, i + 1);
        if (v.empty()) return fail(err, k, "skbedit: \"" + k + "\" needs a value");
        ++i;
        uint32_t n;
        if (k == "priority") {
          // tc writes priorities as MAJ:MIN (hex) or a plain number.
          const size_t colon = v.find(':');
          uint32_t maj = 0, min = 0;
          if (colon == std::string::npos) {
            if (!parse_num(v, n)) return fail(err, v, "skbedit: bad priority \"" + v + "\"");
          } else {
            auto hex = [](const std::string& s, uint32_t& x) {
              if (s.empty()) { x = 0; return true; }
              auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x, 16);
              return ec == std::errc() && p == s.data() + s.size() && x <= 0xffff;
            };
            if (!hex(v.substr(0, colon), maj) || !hex(v.substr(colon + 1), min))
              return fail(err, v, "skbedit: bad priority \"" + v + "\" (want MAJ:MIN)");
            n = maj << 16 | min;
          }
          a.skb.priority = n;
        } else if (!parse_num(v, n)) {
          return fail(err, v, "skbedit: bad " + k + " \"" + v + "\"");
        } else if (k == "queue_mapping") {
          if (n > 0xffff) return fail(err, v, "skbedit: queue_mapping out of range");
          a.skb.queue_mapping = static_cast<uint16_t>(n);
        } else {
          a.skb.mark = n;
        }
        any = true;
      } else if (auto v = gact_verdict(k)) {
        a.skb.verdict = *v;
        ++i;
        break;
      } else {
        break;
      }
    }
    if (!any) return fail(err, "skbedit", "skbedit: needs queue_mapping, priority or mark");
    return true;
  }
  return fail(err, kind, "unknown action \"" + kind + "\" (supported: gact, mirred, skbedit)");
}

// --- filters.

struct FilterLine final : ExtLine {
  enum class Op { Add, Replace, Del } op = Op::Add;
  std::string dev;
  tc::Dir dir = tc::Dir::Egress;
  tc::BpfFilterSpec spec;  // insns/source/da/classid/protocol/pref/handle
  std::vector<ActionSpec> actions;

  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = r.table().find(dev);
    if (!d) return fail(err, dev, "cannot find device \"" + dev + "\"");
    std::string msg;
    if (op == Op::Del) {
      if (!tc::filter_del(*d, dir, spec.pref, spec.handle, &msg)) return fail(err, dev, msg);
      return true;
    }
    tc::BpfFilterSpec s = spec;
    uint32_t index = 1;
    for (const ActionSpec& a : actions) {
      std::shared_ptr<tc::TcAction> act;
      switch (a.kind) {
        case ActionSpec::Kind::Gact: act = std::make_shared<tc::GactAction>(a.verdict); break;
        case ActionSpec::Kind::Skbedit: act = std::make_shared<tc::SkbeditAction>(a.skb); break;
        case ActionSpec::Kind::Mirred: {
          NetDevice* t = r.table().find(a.mdev);
          if (!t) return fail(err, a.mdev, "mirred: cannot find device \"" + a.mdev + "\"");
          act = std::make_shared<tc::MirredAction>(a.mdir, a.mkind, t, a.mdev);
          break;
        }
      }
      act->index = index++;
      s.actions.push_back(std::move(act));
    }
    if (!tc::filter_add(*d, dir, std::move(s), op == Op::Replace, &msg)) return fail(err, "bpf", msg);
    return true;
  }
};

std::optional<bool> parse_filter(const std::vector<std::string>& w, size_t i, ExtCommand& out, ScriptError& err);
std::optional<bool> parse_filter_show(const std::vector<std::string>& w, size_t i, bool stats, bool json,
                                      ExtCommand& out, ScriptError& err);

bool parse_dir(const std::string& s, tc::Dir& d) {
  if (s == "egress") d = tc::Dir::Egress;
  else if (s == "ingress") d = tc::Dir::Ingress;
  else return false;
  return true;
}

std::optional<bool> parse_filter(const std::vector<std::string>& w, size_t i, ExtCommand& out, ScriptError& err) {
  auto line = std::make_shared<FilterLine>();
  const std::string& verb = word_at(w, i);
  if (verb == "add") line->op = FilterLine::Op::Add;
  else if (verb == "replace" || verb == "change") line->op = FilterLine::Op::Replace;
  else if (verb == "del" || verb == "delete") line->op = FilterLine::Op::Del;
  else if (verb.empty()) return fail(err, "filter", "tc filter needs add, replace, change, del or show");
  else return fail(err, verb, "unknown tc filter command \"" + verb + "\"");
  bool have_dir = false, have_kind = false, have_prog = false;
  for (++i; i < w.size();) {
    const std::string& k = w[i];
    auto value = [&](std::string& v) {
      if (i + 1 >= w.size()) return fail(err, k, "\"" + k + "\" needs a value");
      v = w[i + 1];
      i += 2;
      return true;
    };
    std::string v;
    if (!have_kind) {
      if (k == "dev") {
        if (!value(line->dev)) return false;
      } else if (k == "egress" || k == "ingress") {
        parse_dir(k, line->dir);
        have_dir = true;
        ++i;
      } else if (k == "parent") {
        if (!value(v)) return false;
        // clsact's parents: ffff:fff2 (egress), ffff:fff3 (ingress), ffff: (ingress qdisc).
        if (v == "ffff:fff2") line->dir = tc::Dir::Egress;
        else if (v == "ffff:fff3" || v == "ffff:" || v == "ffff:0") line->dir = tc::Dir::Ingress;
        else return fail(err, v, "parent must be egress/ingress of clsact (ffff:fff2, ffff:fff3)");
        have_dir = true;
      } else if (k == "pref" || k == "prio" || k == "priority") {
        if (!value(v)) return false;
        if (!parse_num(v, line->spec.pref) || line->spec.pref == 0 || line->spec.pref > 0xffff)
          return fail(err, v, "bad pref \"" + v + "\" (1..65535)");
      } else if (k == "handle") {
        if (!value(v)) return false;
        if (!parse_num(v, line->spec.handle) || line->spec.handle == 0)
          return fail(err, v, "bad handle \"" + v + "\"");
      } else if (k == "protocol") {
        if (!value(v)) return false;
        uint32_t n;
        if (v == "all") line->spec.protocol = tc::kEthPAll;
        else if (v == "ip") line->spec.protocol = 0x0800;
        else if (v == "ipv6") line->spec.protocol = 0x86dd;
        else if (v == "arp") line->spec.protocol = 0x0806;
        else if (v == "802.1q" || v == "802.1Q") line->spec.protocol = 0x8100;
        else if (parse_num(v, n) && n <= 0xffff) line->spec.protocol = static_cast<uint16_t>(n);
        else return fail(err, v, "unknown protocol \"" + v + "\"");
      } else if (k == "chain") {
        if (!value(v)) return false;
        if (v != "0") return fail(err, v, "only chain 0 is supported");
      } else if (k == "bpf") {
        have_kind = true;
        ++i;
      } else if (line->op == FilterLine::Op::Del) {
        return fail(err, k, "unexpected word \"" + k + "\"");
      } else {
        return fail(err, k, "unknown filter kind \"" + k + "\" (supported: bpf)");
      }
      continue;
    }
    // Options of bpf.
    if (line->op == FilterLine::Op::Del) return fail(err, k, "tc filter del takes no bpf options");
    if (k == "da" || k == "direct-action") {
      line->spec.da = true;
      ++i;
    } else if (k == "bytecode" || k == "bytecode-file" || k == "bpf-bytecode" || k == "expr") {
      if (have_prog) return fail(err, k, "only one program per filter");
      if (!value(v)) return false;
      std::string perr;
      bool ok;
      if (k == "bytecode" || k == "bpf-bytecode") {
        ok = bpf::parse_bytecode(v, &line->spec.insns, &perr);
        line->spec.source = "bytecode '" + v + "'";
      } else if (k == "bytecode-file") {
        ok = bpf::read_bytecode_file(v, &line->spec.insns, &perr);
        line->spec.source = "bytecode-file " + v;
      } else {
        ok = bpf::compile_expression(v, bpf::CompileOptions{}, &line->spec.insns, &perr);
        line->spec.source = "expr '" + v + "'";
      }
      if (!ok) return fail(err, v, k + ": " + perr);
      have_prog = true;
    } else if (k == "classid" || k == "flowid") {
      if (!value(v)) return false;
      if (!parse_tc_handle(v, line->spec.classid) || v == "root")
        return fail(err, v, "bad classid \"" + v + "\" (want MAJ:MIN)");
      line->spec.classid_set = true;
    } else if (k == "action" || k == "act") {
      ++i;
      ActionSpec a;
      if (!parse_action(w, i, a, err)) return false;
      line->actions.push_back(std::move(a));
    } else if (k == "skip_hw" || k == "skip_sw" || k == "verbose") {
      if (k == "skip_sw") return fail(err, k, "skip_sw: pktpath has no hardware offload");
      ++i;
    } else {
      return fail(err, k, "unexpected word \"" + k + "\" for bpf");
    }
  }
  if (line->dev.empty()) return fail(err, "filter", "tc filter needs \"dev DEV\"");
  if (!have_dir) return fail(err, line->dev, "tc filter needs egress or ingress (clsact's side)");
  if (line->op != FilterLine::Op::Del) {
    if (!have_kind) return fail(err, word_at(w, i), "tc filter needs a filter kind (bpf)");
    if (!have_prog) return fail(err, "bpf", "bpf needs bytecode '…', bytecode-file F or expr '…'");
    if (line->spec.da && !line->actions.empty())
      return fail(err, "action", "actions are not run with da (direct-action): the program's return is the verdict");
  } else if (line->spec.handle && !line->spec.pref) {
    return fail(err, "handle", "tc filter del with a handle needs pref");
  }
  out.line = std::move(line);
  return true;
}

// --- show.

struct FilterShowLine final : ExtLine {
  std::string dev;
  tc::Dir dir = tc::Dir::Egress;
  bool stats = false, json = false;

  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = r.table().find(dev);
    if (!d) return fail(err, dev, "cannot find device \"" + dev + "\"");
    r.drain_pending();
    const bool as_json = json || r.json();
    nlohmann::json arr = nlohmann::json::array();
    std::string text;
    char b[512];
    tc::filter_walk(*d, dir, [&](const tc::BpfFilter& f) {
      const tc::BpfFilterSpec& s = f.spec();
      char proto[16];
      if (s.protocol == tc::kEthPAll) std::snprintf(proto, sizeof proto, "all");
      else if (s.protocol == 0x0800) std::snprintf(proto, sizeof proto, "ip");
      else if (s.protocol == 0x86dd) std::snprintf(proto, sizeof proto, "ipv6");
      else std::snprintf(proto, sizeof proto, "0x%04x", s.protocol);
      const auto fs = f.stats.sum();
      if (as_json) {
        nlohmann::json o = {{"protocol", proto}, {"pref", f.pref()}, {"kind", "bpf"}, {"chain", 0}};
        nlohmann::json opt = {{"handle", f.handle()}, {"bytecode", s.source}, {"direct-action", s.da},
                              {"engine", bpf::engine_name(f.engine())}};
        if (s.classid_set) {
          std::snprintf(b, sizeof b, "%x:%x", s.classid >> 16, s.classid & 0xffff);
          opt["flowid"] = b;
        }
        nlohmann::json acts = nlohmann::json::array();
        unsigned order = 1;
        for (const auto& a : s.actions) {
          const auto as = a->stats.sum();
          acts.push_back({{"order", order++}, {"kind", a->kind()}, {"description", a->describe()},
                          {"index", a->index},
                          {"stats", {{"bytes", as.bytes}, {"packets", as.packets}, {"drops", as.drops},
                                     {"overlimits", as.overlimits}}}});
        }
        opt["actions"] = acts;
        o["options"] = opt;
        if (stats)
          o["stats"] = {{"bytes", fs.bytes}, {"packets", fs.packets}, {"matched", fs.matched}, {"drops", fs.drops}};
        arr.push_back(o);
        return;
      }
      // tc's layout: the pref line, then the filter with its options and actions.
      std::snprintf(b, sizeof b, "filter protocol %s pref %u bpf chain 0 \n", proto, f.pref());
      text += b;
      std::snprintf(b, sizeof b, "filter protocol %s pref %u bpf chain 0 handle 0x%x ", proto, f.pref(), f.handle());
      text += b;
      if (s.classid_set) {
        std::snprintf(b, sizeof b, "flowid %x:%x ", s.classid >> 16, s.classid & 0xffff);
        text += b;
      }
      text += s.source + " ";
      if (s.da) text += "direct-action ";
      text += "not_in_hw \n";
      if (stats) {
        // pktpath's per-filter counters (tc has none for cls_bpf): packets the program
        // ran on, how many it matched, and direct-action drops.
        std::snprintf(b, sizeof b, "\t Sent %llu bytes %llu pkt (matched %llu, dropped %llu) engine %s\n",
                      static_cast<unsigned long long>(fs.bytes), static_cast<unsigned long long>(fs.packets),
                      static_cast<unsigned long long>(fs.matched), static_cast<unsigned long long>(fs.drops),
                      bpf::engine_name(f.engine()));
        text += b;
      }
      unsigned order = 1;
      for (const auto& a : s.actions) {
        std::snprintf(b, sizeof b, "\taction order %u: %s\n\t index %u ref 1 bind 1\n", order++,
                      a->describe().c_str(), a->index);
        text += b;
        if (stats) {
          const auto as = a->stats.sum();
          std::snprintf(b, sizeof b,
                        "\tAction statistics:\n\tSent %llu bytes %llu pkt (dropped %llu, overlimits %llu requeues 0) "
                        "\n\tbacklog 0b 0p requeues 0\n",
                        static_cast<unsigned long long>(as.bytes), static_cast<unsigned long long>(as.packets),
                        static_cast<unsigned long long>(as.drops), static_cast<unsigned long long>(as.overlimits));
          text += b;
        }
      }
      text += "\n";
    });
    if (as_json) {
      std::fprintf(r.out(), "%s\n", arr.dump().c_str());
    } else {
      std::fputs(text.c_str(), r.out());
    }
    return true;
  }
};

std::optional<bool> parse_filter_show(const std::vector<std::string>& w, size_t i, bool stats, bool json,
                                      ExtCommand& out, ScriptError& err) {
  auto line = std::make_shared<FilterShowLine>();
  line->stats = stats;
  line->json = json;
  bool have_dir = false;
  for (++i; i < w.size(); ++i) {
    const std::string& k = w[i];
    if (k == "dev") {
      if (i + 1 >= w.size()) return fail(err, k, "\"dev\" needs a device name");
      line->dev = w[++i];
    } else if (parse_dir(k, line->dir)) {
      have_dir = true;
    } else {
      return fail(err, k, "unexpected word \"" + k + "\" for tc filter show");
    }
  }
  if (line->dev.empty()) return fail(err, "show", "tc filter show needs \"dev DEV\"");
  if (!have_dir) return fail(err, line->dev, "tc filter show needs egress or ingress");
  out.line = std::move(line);
  return true;
}

}  // namespace

std::optional<bool> parse_tc_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  size_t i = 1;
  bool stats = false, json = false;
  while (i < w.size() && w[i].size() > 1 && w[i][0] == '-') {
    if (w[i] == "-s" || w[i] == "-stats" || w[i] == "-statistics") stats = true;
    else if (w[i] == "-j" || w[i] == "-json") json = true;
    else if (w[i] != "-d" && w[i] != "-details" && w[i] != "-p" && w[i] != "-pretty") return std::nullopt;
    ++i;
  }
  const std::string& obj = word_at(w, i);
  if (obj == "qdisc") return parse_clsact(w, i + 1, out, err);
  if (obj != "filter") return std::nullopt;
  const std::string& verb = word_at(w, i + 1);
  if (verb == "show" || verb == "list" || verb == "ls") return parse_filter_show(w, i + 1, stats, json, out, err);
  return parse_filter(w, i + 1, out, err);
}

std::optional<bool> parse_ext_command(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  if (w.empty()) return std::nullopt;
  if (auto r = parse_netns_ext(w, out, err)) return r;
  if (w[0] == "sysctl") return parse_sysctl_ext(w, out, err);
  if (w[0] == "tc") return parse_tc_ext(w, out, err);
  if (w[0] == "nft") return parse_nft_ext(w, out, err);
  if (w[0] == "capture") return parse_capture_ext(w, out, err);
  if (w[0] == "ip") return parse_link_del_ext(w, out);
  return std::nullopt;
}

}  // namespace pktpath::cli
