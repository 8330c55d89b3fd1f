// tc qdisc add|replace|change|del on a device (tc_modify_qdisc / tc_get_qdisc), with
// typed options. Control thread only, no traffic on the device (see NetDevice).
// Either the whole request applies or nothing changes.
#pragma once

#include <cstdint>
#include <string>

#include "core/dev_table.h"
#include "sched/qdisc.h"

namespace pktpath {

enum class QdiscOp { Add, Replace, Change, Del };

inline constexpr uint32_t TC_H_ROOT = 0xffffffffu;

struct QdiscRequest {
  QdiscOp op = QdiscOp::Add;
  uint32_t parent = TC_H_ROOT;  // TC_H_ROOT or MAJ:MIN of a class
  uint32_t handle = 0;          // MAJ:0; 0 = allocate
  bool handle_set = false;
  std::string kind;  // may be empty for del
  QdiscOptions opts;
};

bool tc_qdisc_modify(DeviceTable& table, NetDevice& dev, const QdiscRequest& req, std::string& err);

// Find a qdisc of dev's tree by handle major (nullptr if none).
Qdisc* qdisc_lookup(NetDevice& dev, uint32_t handle);

// "1:" / "8001:" / ":1" / "1:2" formatting like tc.
std::string tc_handle_str(uint32_t h);

}  // namespace pktpath
