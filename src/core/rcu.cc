// liburcu QSBR wrappers. The library is not built with ThreadSanitizer, so TSan cannot see
// that a reader's quiescent state orders its earlier reads before the writer's free; under
// TSan we add a release/acquire pair on one atomic that expresses exactly that edge.
#include "core/rcu.h"

#include <urcu/urcu-qsbr.h>

#include <atomic>
#include <cstdint>

namespace pktpath {

#if defined(__SANITIZE_THREAD__)
namespace {
std::atomic<uint64_t> g_tsan_qs{0};
}  // namespace
static void tsan_reader_release() { g_tsan_qs.fetch_add(1, std::memory_order_release); }
static void tsan_writer_acquire() { (void)g_tsan_qs.load(std::memory_order_acquire); }
#else
static void tsan_reader_release() {}
static void tsan_writer_acquire() {}
#endif

void rcu_reader_register() { urcu_qsbr_register_thread(); }
void rcu_reader_unregister() {
  tsan_reader_release();
  urcu_qsbr_unregister_thread();
}
void rcu_quiescent() {
  tsan_reader_release();
  urcu_qsbr_quiescent_state();
}
void rcu_offline() {
  tsan_reader_release();
  urcu_qsbr_thread_offline();
}
void rcu_online() { urcu_qsbr_thread_online(); }
RcuWriterScope::RcuWriterScope() : was_online_(urcu_qsbr_read_ongoing() != 0) {
  if (was_online_) rcu_offline();
}
RcuWriterScope::~RcuWriterScope() {
  if (was_online_) rcu_online();
}

void rcu_synchronize() {
  urcu_qsbr_synchronize_rcu();
  tsan_writer_acquire();
}

}  // namespace pktpath
