# Document 000 (seeds/000_*.txt): the cost of the egress hooks in __dev_queue_xmit.
# The kernel's reproducer: a dummy device with clsact and a one-instruction classic BPF
# program in direct-action mode on egress, pktgen in queue_xmit mode with 60-byte packets.
# Expected shape: every packet goes out (the program returns TC_ACT_OK); adding an
# accept-all netfilter egress chain costs a little per packet; the hook point itself,
# with nothing attached, costs nothing measurable (bench/bench_hooks, docs/benchmarks.md).
ip link add dev foo type dummy
ip link set dev foo up
tc qdisc add dev foo clsact
tc filter add dev foo egress bpf da bytecode '1,6 0 0 0,'

# TODO(pktgen line): replace the interim `send` below with document 000's pktgen run once
# the runner has the `pktgen` script line (branch pktgen):
#   pktgen -i foo -n 400000000 -m 11:11:11:11:11:11 -d 1.1.1.1 --mode queue_xmit --duration 2 --repeat 6
#   pktgen -i foo -n 0 -m 11:11:11:11:11:11 -d 1.1.1.1 --duration 2 --repeat 6 --ab 'egress_hooks=on|off'
send dev foo count 2000000
tc -s filter show dev foo egress

# With a netfilter egress hook as well (accept-all chain): nf egress runs first, then tc.
nft add table netdev t
nft add chain netdev t out '{ type filter hook egress device foo priority 0; }'
nft add rule netdev t out counter accept
send dev foo count 2000000
nft list ruleset
