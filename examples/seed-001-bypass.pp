# Document 001 (Paolo Abeni, "net: dev: introduce support for sch BYPASS for lockless
# qdisc"): TCQ_F_CAN_BYPASS extended to NOLOCK qdiscs such as pfifo_fast.
#
# Expected shape (kernel, pktgen queue_xmit, kpps):
#   mq device, pfifo_fast per queue, a thread per queue (uncontended):
#     threads 1: 2465 -> 2889 (+17%)   2: 4304 -> 5188   4: 7898 -> 9589
#   single-queue device (contended): no measurable change (2900 -> 2900 at 2 threads).
# Here: each pktgen line alternates bypass on and off (A/B) and prints both medians and
# the ratio on/off; expect > 1 for the uncontended rows and ~1 for the contended ones.
# Short mode: PP_DURATION=0.2 PP_REPEAT=1 pktpath run examples/seed-001-bypass.pp
#
# Run:  pktpath run examples/seed-001-bypass.pp    (or --json for JSON Lines)

# Uncontended: a 2-queue device under mq, one pfifo_fast per tx queue.
ip link add dev mq0 numtxqueues 2 type dummy
ip link set dev mq0 up
tc qdisc add dev mq0 root handle 1: mq
# Contended: one queue, one pfifo_fast, every thread on it.
ip link add dev sq0 type dummy
ip link set dev sq0 up
tc qdisc add dev sq0 root pfifo_fast

pktgen -i mq0 -n 0 -t 1 --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3} --ab bypass=on|off
pktgen -i mq0 -n 0 -t 2 --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3} --ab bypass=on|off
pktgen -i sq0 -n 0 -t 1 --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3} --ab bypass=on|off
pktgen -i sq0 -n 0 -t 2 --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3} --ab bypass=on|off
tc -s qdisc show dev mq0
tc -s qdisc show dev sq0
