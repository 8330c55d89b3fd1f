# Document 000 (Lukas Wunner, "net: sched: Micro-optimize egress handling"): what the
# egress hooks cost in __dev_queue_xmit. The kernel's reproducer: a dummy device with
# clsact and a one-instruction classic BPF program in direct-action mode on egress,
# pktgen in queue_xmit mode with 60-byte packets, six runs.
#
# Expected shape (kernel, Mb/sec): 1877 1875 1878 1874 1882 1873 before; with a netfilter
# egress hook and no fix 1853..1851 (-1.3%), with the fix 1874..1876. Here:
#   1. the reproducer as written (every packet goes out: the program returns TC_ACT_OK);
#   2. egress_hooks on vs off (A/B): the price of the tc hook as a whole;
#   3. nf_hook_point on vs off (A/B): the document's own comparison — the tc path with the
#      netfilter egress check present (no chain attached) and without it; expect ~1.0;
#   4. the same with an accept-all netfilter egress chain beside it (nf runs first).
# The hook point's own cost with nothing attached (< 1%) is measured by bench/bench_hooks
# (docs/benchmarks.md, "tc and netfilter hooks").
# Short mode: PP_DURATION=0.2 PP_REPEAT=1 pktpath run examples/seed-000-egress.pp
#
# Run:  pktpath run examples/seed-000-egress.pp    (or --json for JSON Lines)

ip link add dev foo type dummy
ip link set dev foo up
tc qdisc add dev foo clsact
tc filter add dev foo egress bpf da bytecode '1,6 0 0 0,'

pktgen -i foo -n 400000000 -m 11:11:11:11:11:11 -d 1.1.1.1 --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-6}
pktgen -i foo -n 0 -m 11:11:11:11:11:11 -d 1.1.1.1 --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3} --ab egress_hooks=on|off
pktgen -i foo -n 0 -m 11:11:11:11:11:11 -d 1.1.1.1 --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3} --ab nf_hook_point=on|off
tc -s filter show dev foo egress

# With a netfilter egress hook as well (accept-all chain).
nft add table netdev t
nft add chain netdev t out '{ type filter hook egress device foo priority 0; }'
nft add rule netdev t out counter accept
pktgen -i foo -n 400000000 -m 11:11:11:11:11:11 -d 1.1.1.1 --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-6}
pktgen -i foo -n 0 -m 11:11:11:11:11:11 -d 1.1.1.1 --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3} --ab egress_hooks=on|off
nft list ruleset
