// tc qdisc add|replace|change|del on a device (tc_modify_qdisc / tc_get_qdisc), with
// typed options. Control thread only, no traffic on the device (see NetDevice).
// Either the whole request applies or nothing changes.
#pragma once

#include <cstdint>
#include <string>

#include "core/dev_table.h"
#include "core/result.h"
#include "sched/qdisc.h"

namespace pktpath {

enum class QdiscOp { Add, Replace, Change, Del };

inline constexpr uint32_t TC_H_ROOT = 0xffffffffu;
inline constexpr uint32_t TC_H_INGRESS = 0xfffffff1u;  // = TC_H_CLSACT: clsact's/ingress's parent
inline constexpr uint32_t TC_H_MIN_INGRESS = 0xfff2u;   // clsact's ingress side (ffff:fff2)
inline constexpr uint32_t TC_H_MIN_EGRESS = 0xfff3u;    // clsact's egress side (ffff:fff3)
inline constexpr uint32_t kIngressHandle = 0xffff0000u;  // ffff: the handle of clsact/ingress

struct QdiscRequest {
  QdiscOp op = QdiscOp::Add;
  uint32_t parent = TC_H_ROOT;  // TC_H_ROOT, TC_H_INGRESS or MAJ:MIN of a class
  uint32_t handle = 0;          // MAJ:0; 0 = allocate
  bool handle_set = false;
  std::string kind;  // may be empty for del
  QdiscOptions opts;
};

// mirrors tc_modify_qdisc / tc_get_qdisc(RTM_DELQDISC). The error's word is empty: the
// caller names what it is about.
Status tc_qdisc_modify(DeviceTable& table, NetDevice& dev, const QdiscRequest& req);

using ClassOp = QdiscOp;  // tc class takes the same four verbs

struct ClassRequest {
  ClassOp op = ClassOp::Add;
  uint32_t parent = 0;   // 0: not given; TC_H_ROOT or MAJ:0 (the qdisc itself) for a top class
  uint32_t classid = 0;  // MAJ:MIN
  std::string kind;      // may be empty for del
  KindOptions opts;
};

// mirrors tc_ctl_tclass: the qdisc is the one whose handle major the classid names.
// `warn` gets what the kernel would log (htb's quantum warning). Control thread.
Status tc_class_modify(DeviceTable& table, NetDevice& dev, const ClassRequest& req, std::string* warn);

// Find a qdisc of dev's tree by handle major (nullptr if none).
Qdisc* qdisc_lookup(NetDevice& dev, uint32_t handle);

// "1:" / "8001:" / ":1" / "1:2" formatting like tc.
std::string tc_handle_str(uint32_t h);

}  // namespace pktpath
