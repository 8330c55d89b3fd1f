# What would tc do: a capture replayed at its own timing through an htb tree with
# fq_codel leaves, on the virtual clock, so the run takes no wall time for the capture's
# time and gives the same result on every machine.
#
#   pktpath run --trace /tmp/wwtd.jsonl examples/what-would-tc-do.pp
#   pktpath plot /tmp/wwtd.jsonl -o /tmp/wwtd.svg
#
# The capture (examples/what-would-tc-do-capture.py): 0.2 s of three UDP flows offering
# 7.5 Mbit/s: bulk to port 5001 (4 Mbit/s, ECN-capable), bursts to 5002 (3 Mbit/s on
# average), sparse small frames to 5003 (0.5 Mbit/s). The link: 5 Mbit/s, shared by
#   1:10 bulk     rate 3mbit    ceil 5mbit   fq_codel with ECN (marks rather than drops)
#   1:20 bursts   rate 1500kbit ceil 5mbit   fq_codel, a short limit
#   1:30 sparse   rate 500kbit  ceil 5mbit   fq_codel, the default class, prio 0
# in0 replays the capture; tc redirects each frame from its ingress to out0's egress,
# where the tree is; out0 writes what leaves, stamped with its departure time.
# PP_LOOPS=N replays the capture N times back to back (the benchmark in docs/benchmarks.md).
# PP_LEAF="pfifo limit 40" puts that qdisc at every leaf instead, for a second run to
# compare with this one:
#
#   PP_LEAF="pfifo limit 40" pktpath run --trace /tmp/pfifo.jsonl examples/what-would-tc-do.pp
#   pktpath plot /tmp/wwtd.jsonl /tmp/pfifo.jsonl --label fq_codel --label pfifo -o /tmp/cmp.svg
clock virtual

ip link add dev out0 type pcap tx ${PP_OUT:-/tmp/what-would-tc-do-out.pcap}
tc qdisc add dev out0 root handle 1: htb default 30
tc class add dev out0 parent 1: classid 1:1 htb rate 5mbit ceil 5mbit
tc class add dev out0 parent 1:1 classid 1:10 htb rate 3mbit ceil 5mbit prio 1
tc class add dev out0 parent 1:1 classid 1:20 htb rate 1500kbit ceil 5mbit prio 1
tc class add dev out0 parent 1:1 classid 1:30 htb rate 500kbit ceil 5mbit prio 0
tc qdisc add dev out0 parent 1:10 handle 10: ${PP_LEAF:-fq_codel ecn target 2ms interval 20ms}
tc qdisc add dev out0 parent 1:20 handle 20: ${PP_LEAF:-fq_codel limit 40 target 2ms interval 20ms}
tc qdisc add dev out0 parent 1:30 handle 30: ${PP_LEAF:-fq_codel}
tc filter add dev out0 parent 1: protocol ip prio 1 flower ip_proto udp dst_port 5001 flowid 1:10
tc filter add dev out0 parent 1: protocol ip prio 2 flower ip_proto udp dst_port 5002 flowid 1:20
ip link set dev out0 up

ip link add dev in0 type pcap rx ${PP_CAPTURE:-examples/what-would-tc-do.pcap} pace file loop ${PP_LOOPS:-1}
tc qdisc add dev in0 clsact
tc filter add dev in0 ingress matchall action mirred egress redirect dev out0
ip link set dev in0 up

# The replay is over; what the shaper still holds drains in the next second.
sleep 1s
tc -s class show dev out0
