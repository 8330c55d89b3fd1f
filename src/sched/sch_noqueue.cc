// noqueue: no queue at all. dev_queue_xmit sees TCQ_F_NOENQUEUE and hands packets
// straight to the driver (the kernel's noqueue_qdisc_ops has no enqueue).
#include "sched/qdisc.h"

namespace pktpath {

namespace {

class NoqueueQdisc final : public Qdisc {
 public:
  NoqueueQdisc() : Qdisc("noqueue", TCQ_F_NOENQUEUE) {}
  // Never called by the path; a caller that does gets a drop, not a crash.
  int enqueue(Cpu&, Packet* p, PacketList& to_free) override {
    to_free.push_back(p);
    return NET_XMIT_DROP;
  }
  Packet* dequeue(Cpu&) override { return nullptr; }
  Packet* peek(Cpu&) override { return nullptr; }
  void reset(Cpu&) override {}
};

}  // namespace

const QdiscRegistrar kNoqueue{{"noqueue", [] { return std::unique_ptr<Qdisc>(new NoqueueQdisc); }}};  // noqueue_qdisc_ops

}  // namespace pktpath
