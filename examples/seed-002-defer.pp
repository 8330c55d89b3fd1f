# Document 002 (Jesper Dangaard Brouer, "net: avoid irqsave in skb_defer_free_flush"):
# packets freed on a CPU other than the one that allocated them go back through the
# allocator's per-CPU defer list; the flush takes the list with spin_lock_irq instead of
# spin_lock_irqsave, saving the flags save/restore.
#
# Expected shape (kernel, time_bench on an E5-1650 v4): spin_lock_unlock_irq 34 cycles,
# spin_lock_unlock_irqsave 48 cycles: 14 cycles saved per flush, no measurable packet
# rate change ("called infrequently, once per NAPI bulk"). Here:
#  1. pktgen in netif_receive mode with --rps: each generator thread hands its packets to
#     a partner thread's input queue (enqueue_to_backlog); the partner runs the receive
#     path and frees them, remotely, onto the generator's defer list, which the generator
#     flushes in its loop. A/B with the defer list off (remote frees go straight back):
#     expect a ratio near 1, as the patch says, and the rx@ line's counts.
#  2. bench micro's lock rows: spin_lock_unlock vs spin_lock_unlock_irqsave (the
#     difference is the cycles saved per flush), and the per-packet remote-free cost.
# Short mode: PP_DURATION=0.2 PP_REPEAT=1 pktpath run examples/seed-002-defer.pp
#
# Run:  pktpath run examples/seed-002-defer.pp    (or --json for JSON Lines)

ip link add dev foo type dummy
ip link set dev foo up
pktgen -i foo -n 0 --mode netif_receive --rps --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3} --ab defer_free=on|off
pktgen -i foo -n 0 --mode netif_receive --rps --duration ${PP_DURATION:-2}
bench micro --filter spin_lock --runs ${PP_REPEAT:-7}
bench micro --filter remote --runs ${PP_REPEAT:-7}
