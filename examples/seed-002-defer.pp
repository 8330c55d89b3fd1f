# Document 002 (Jesper Dangaard Brouer, "net: avoid irqsave in skb_defer_free_flush"):
# packets freed on a CPU other than the one that allocated them go back through the
# allocator's per-CPU defer list, which net_rx_action flushes at the top of its loop;
# the flush takes the list with spin_lock_irq instead of spin_lock_irqsave.
#
# Expected shape (kernel, time_bench on an E5-1650 v4): spin_lock_unlock_irq 34 cycles,
# spin_lock_unlock_irqsave 48 cycles: 14 cycles saved per flush, no measurable packet
# rate change ("called infrequently, once per NAPI bulk"). Here:
#  1. The flow the defer list exists for: pktgen sends 60-byte frames on veth a from
#     CPU 0; b, a's peer, steers them by RPS to CPU 1 (rps_cpus 2), whose net_rx_action
#     receives and frees them, remotely: onto CPU 0's defer list (on) or straight into
#     CPU 1's cache and from there to the shared pool (off). A/B of the two, interleaved.
#     CPU 1's softnet_stat row shows what it processed.
#  2. bench micro's lock rows: spin_lock_unlock vs spin_lock_unlock_irqsave (the
#     difference is the cycles saved per flush), and the per-packet remote-free cost.
# Short mode: PP_DURATION=0.2 PP_REPEAT=1 pktpath run examples/seed-002-defer.pp
#
# Run:  pktpath run examples/seed-002-defer.pp    (or --json for JSON Lines)

ip link add a type veth peer name b
ip link set dev a up
ip link set dev b up
ip link set dev b rps_cpus 2
pktgen -i a -n 0 -f 0 --pin --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3} --ab defer_free=on|off
cat /proc/net/softnet_stat
ip -s link show dev b
bench micro --filter spin_lock --runs ${PP_REPEAT:-7}
bench micro --filter remote --runs ${PP_REPEAT:-7}
