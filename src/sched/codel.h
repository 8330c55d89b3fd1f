// CoDel, the controlled-delay AQM shared by codel and fq_codel (include/net/codel.h,
// codel_impl.h, codel_qdisc.h), with the kernel's arithmetic: time in 1024 ns units in a
// u32 compared by serial-number rules, 1/sqrt(count) kept in Q0.16 and refined by one
// Newton step per drop, next drop at t + interval * rec_inv_sqrt (reciprocal_scale), so
// drop times are the kernel's to the unit.
#pragma once

#include <cstdint>

#include "core/clock.h"
#include "core/flow_dissector.h"
#include "core/inet_ecn.h"
#include "core/packet.h"
#include "sched/qdisc.h"

namespace pktpath {

using codel_time_t = uint32_t;
using codel_tdiff_t = int32_t;
inline constexpr unsigned kCodelShift = 10;
inline constexpr codel_time_t kCodelDisabledThreshold = 0x7fffffff;  // INT_MAX
inline constexpr unsigned kRecInvSqrtShift = 16;                     // 32 - bits of rec_inv_sqrt

inline codel_time_t codel_time_from_ns(uint64_t ns) {
  return static_cast<codel_time_t>(ns >> kCodelShift);
}
inline codel_time_t codel_time_from_us(uint64_t us) {
  return static_cast<codel_time_t>((us * 1000) >> kCodelShift);
}
// mirrors codel_time_to_us
inline uint32_t codel_time_to_us(codel_time_t t) {
  return static_cast<uint32_t>((static_cast<uint64_t>(t) << kCodelShift) / 1000);
}
inline bool codel_time_after(codel_time_t a, codel_time_t b) {
  return static_cast<codel_tdiff_t>(a - b) > 0;
}
inline bool codel_time_after_eq(codel_time_t a, codel_time_t b) {
  return static_cast<codel_tdiff_t>(a - b) >= 0;
}
inline bool codel_time_before(codel_time_t a, codel_time_t b) { return codel_time_after(b, a); }

struct CodelParams {
  codel_time_t target = codel_time_from_us(5000);
  codel_time_t ce_threshold = kCodelDisabledThreshold;
  codel_time_t interval = codel_time_from_us(100000);
  uint32_t mtu = 0;  // below this backlog never drop (psched_mtu)
  bool ecn = false;
};

struct CodelVars {
  uint32_t count = 0;
  uint32_t lastcount = 0;
  bool dropping = false;
  uint16_t rec_inv_sqrt = 0;
  codel_time_t first_above_time = 0;
  codel_time_t drop_next = 0;
  codel_time_t ldelay = 0;
};

struct CodelStats {
  uint32_t maxpacket = 0;
  uint32_t drop_count = 0;  // dropped in this dequeue, not yet told to the parents
  uint32_t drop_len = 0;
  uint32_t ecn_mark = 0;
  uint32_t ce_mark = 0;
};

// codel_skb_cb in Packet::cb[0]: enqueue time in the low half, fq_codel's memory
// charge in the high half.
inline void codel_set_enqueue_time(Packet& p, codel_time_t now) {
  p.cb[0] = (p.cb[0] & 0xffffffff00000000ull) | now;
}
inline codel_time_t codel_get_enqueue_time(const Packet& p) {
  return static_cast<codel_time_t>(p.cb[0]);
}
inline void codel_set_mem_usage(Packet& p, uint32_t m) {
  p.cb[0] = (p.cb[0] & 0xffffffffull) | static_cast<uint64_t>(m) << 32;
}
inline uint32_t codel_get_mem_usage(const Packet& p) {
  return static_cast<uint32_t>(p.cb[0] >> 32);
}

// mirrors codel_Newton_step: rec_inv_sqrt = rec_inv_sqrt/2 * (3 - count * rec_inv_sqrt^2)
inline void codel_newton_step(CodelVars& v) {
  const uint32_t invsqrt = static_cast<uint32_t>(v.rec_inv_sqrt) << kRecInvSqrtShift;
  const uint32_t invsqrt2 = static_cast<uint32_t>((static_cast<uint64_t>(invsqrt) * invsqrt) >> 32);
  uint64_t val = (3ull << 32) - static_cast<uint64_t>(v.count) * invsqrt2;
  val >>= 2;  // avoid overflow in the multiply
  val = (val * invsqrt) >> (32 - 2 + 1);
  v.rec_inv_sqrt = static_cast<uint16_t>(val >> kRecInvSqrtShift);
}

// mirrors codel_control_law: t + interval / sqrt(count)
inline codel_time_t codel_control_law(codel_time_t t, codel_time_t interval,
                                      uint32_t rec_inv_sqrt) {
  return t + reciprocal_scale(interval, rec_inv_sqrt << kRecInvSqrtShift);
}

// mirrors codel_should_drop; `backlog` is the qdisc's after this packet left it.
inline bool codel_should_drop(const Packet* p, CodelVars& v, const CodelParams& prm, CodelStats& st,
                              uint32_t backlog, codel_time_t now) {
  if (!p) {
    v.first_above_time = 0;
    return false;
  }
  v.ldelay = now - codel_get_enqueue_time(*p);
  if (PP_UNLIKELY(p->len > st.maxpacket)) st.maxpacket = p->len;
  if (codel_time_before(v.ldelay, prm.target) || backlog <= prm.mtu) {
    v.first_above_time = 0;  // went below: stay below for at least interval
    return false;
  }
  if (v.first_above_time == 0) {
    v.first_above_time = now + prm.interval;  // just went above
    return false;
  }
  return codel_time_after(now, v.first_above_time);
}

// mirrors codel_dequeue. Q provides `Packet* dequeue(CodelVars&)` (takes the head and
// updates the owner's backlog, read through `backlog`) and `void drop(Packet*)`. The
// clock is read only when there is a packet, as codel_get_time is.
template <class Q>
Packet* codel_dequeue(Q& q, const uint32_t& backlog, const CodelParams& prm, CodelVars& v,
                      CodelStats& st, const Clock& clock) {
  Packet* p = q.dequeue(v);
  if (!p) {
    v.dropping = false;
    return nullptr;
  }
  const codel_time_t now = codel_time_from_ns(clock.now_ns());
  bool drop = codel_should_drop(p, v, prm, st, backlog, now);
  if (v.dropping) {
    if (!drop) {
      v.dropping = false;  // sojourn time below target: leave dropping state
    } else if (codel_time_after_eq(now, v.drop_next)) {
      // Time for the next drop (several when the backlog calls for it).
      while (v.dropping && codel_time_after_eq(now, v.drop_next)) {
        v.count++;
        codel_newton_step(v);
        if (prm.ecn && inet_ecn_set_ce(*p)) {
          st.ecn_mark++;
          v.drop_next = codel_control_law(v.drop_next, prm.interval, v.rec_inv_sqrt);
          goto end;
        }
        st.drop_len += p->len;
        q.drop(p);
        st.drop_count++;
        p = q.dequeue(v);
        if (!codel_should_drop(p, v, prm, st, backlog, now))
          v.dropping = false;
        else
          v.drop_next = codel_control_law(v.drop_next, prm.interval, v.rec_inv_sqrt);
      }
    }
  } else if (drop) {
    if (prm.ecn && inet_ecn_set_ce(*p)) {
      st.ecn_mark++;
    } else {
      st.drop_len += p->len;
      q.drop(p);
      st.drop_count++;
      p = q.dequeue(v);
      drop = codel_should_drop(p, v, prm, st, backlog, now);
    }
    v.dropping = true;
    // Re-entering soon after leaving: start from the drop rate that last controlled
    // the queue.
    const uint32_t delta = v.count - v.lastcount;
    if (delta > 1 && codel_time_before(now - v.drop_next, 16 * prm.interval)) {
      v.count = delta;
      codel_newton_step(v);
    } else {
      v.count = 1;
      v.rec_inv_sqrt = static_cast<uint16_t>(~0u >> kRecInvSqrtShift);
    }
    v.lastcount = v.count;
    v.drop_next = codel_control_law(now, prm.interval, v.rec_inv_sqrt);
  }
end:
  if (p && codel_time_after(v.ldelay, prm.ce_threshold) && inet_ecn_set_ce(*p)) st.ce_mark++;
  return p;
}

// The end of codel_qdisc_dequeue / fq_codel_dequeue: tell the parents what CoDel dropped
// and count `p` as sent. The kernel waits while qlen is 0 (HTB would trip); no parent
// here minds, so they learn at once.
inline void codel_dequeue_done(Qdisc& q, const Cpu& cpu, CodelStats& st, const Packet* p) {
  if (st.drop_count) {
    q.tree_reduce_backlog(cpu, static_cast<int32_t>(st.drop_count),
                          static_cast<int32_t>(st.drop_len));
    st.drop_count = 0;
    st.drop_len = 0;
  }
  if (p) {
    QdiscStatsBlock& s = q.st(cpu);
    s.packets.add(1);
    s.bytes.add(p->len);
  }
}

}  // namespace pktpath
