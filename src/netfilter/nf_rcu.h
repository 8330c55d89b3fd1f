// RCU (liburcu, QSBR flavour) helpers for the netfilter configuration that the datapath
// reads without a lock.
//
// The contract (mirrors the kernel's rcu_read_lock_bh around nf_hook_egress, with QSBR's
// "quiescent state" replacing the explicit unlock):
//  - Reader threads (datapath Cpus that call nf_hook_run / nf_hook_egress / nf_hook_ingress)
//    register once with nf_rcu_register_reader() (or hold an NfRcuReader for their lifetime)
//    and call nf_rcu_quiescent() regularly from their loop, at a point where they hold no
//    pointer obtained from an NfDeviceHooks (between packets or bursts). A reader that
//    blocks or sleeps for long goes offline (nf_rcu_offline / nf_rcu_online) so writers do
//    not wait for it. Everything read from an NfHookEntries or an nft chain stays valid
//    until the reader's next quiescent state.
//  - A thread that is not registered must not read hook pointers while another thread
//    writes configuration (single-threaded use, e.g. tests and scripts, needs no
//    registration because writes and reads never overlap).
//  - Writers (register/unregister/replace, nft commands) publish the new object with a
//    release store and call nf_rcu_synchronize() before freeing the old one. Writers may
//    be registered readers too: liburcu takes a registered caller offline while it waits,
//    so this does not deadlock, provided the caller holds no hook pointer.
#pragma once

namespace pktpath::nf {

void nf_rcu_register_reader();    // rcu_register_thread
void nf_rcu_unregister_reader();  // rcu_unregister_thread
void nf_rcu_quiescent();          // rcu_quiescent_state: "I hold no RCU-protected pointer"
void nf_rcu_offline();            // rcu_thread_offline: about to block
void nf_rcu_online();             // rcu_thread_online
// synchronize_rcu: returns once every registered reader has passed a quiescent state
// (or been offline) since the call started.
void nf_rcu_synchronize();

// Writer-side guard: a registered reader thread that is online goes offline for the scope
// of a configuration change, so that it cannot hold up the grace period another writer is
// waiting for while it waits for that writer's mutex (which would deadlock). Every writer
// entry point of src/netfilter takes one before its mutex.
class NfRcuWriterScope {
 public:
  NfRcuWriterScope();
  ~NfRcuWriterScope();
  NfRcuWriterScope(const NfRcuWriterScope&) = delete;
  NfRcuWriterScope& operator=(const NfRcuWriterScope&) = delete;

 private:
  bool was_online_;
};

// RAII registration for a reader thread's lifetime.
class NfRcuReader {
 public:
  NfRcuReader() { nf_rcu_register_reader(); }
  ~NfRcuReader() { nf_rcu_unregister_reader(); }
  NfRcuReader(const NfRcuReader&) = delete;
  NfRcuReader& operator=(const NfRcuReader&) = delete;
};

}  // namespace pktpath::nf
