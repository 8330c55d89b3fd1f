# The receive path alone, on 1 and 2 Cpus, beside the kernel's (scripts/kernel-rx-baseline
# runs the same shape on a kernel veth pair: an AF_PACKET sender on va, vb's tc ingress
# dropping every frame).
#  1. veth a -> b: pktgen sends 60-byte frames on a from core 0; veth_xmit is netif_rx
#     on b; b's clsact ingress drops each frame (bpf da '1,6 0 0 2,' = TC_ACT_SHOT), so the
#     path is netif_rx, the backlog's NAPI poll and __netif_receive_skb_core up to tc
#     ingress. 1 Cpu: no RPS, the sender's Cpu runs the backlog after each batch. 2 Cpus:
#     `rps_cpus 2` on b, datapath CPU 1 receives. Interleaved 1 2 1 2 1 2.
#  2. pktgen's netif_receive mode into b directly (no veth transmit), 1 Cpu and --rps.
# What b received is its tc ingress drop count (`tc -s qdisc show dev b`); on 2 Cpus the
# frames CPU 1's backlog refused are b's rx_dropped (softnet_stat column 2).
# Short mode: PP_DURATION=0.2 PP_REPEAT=1 pktpath run examples/receive-alone.pp

ip link add a type veth peer name b
ip link set dev a up
ip link set dev b up
tc qdisc add dev b clsact
tc filter add dev b ingress bpf da bytecode '1,6 0 0 2,'

pktgen -i a -n 0 --pin --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3}
ip link set dev b rps_cpus 2
pktgen -i a -n 0 --pin --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3}
ip link set dev b rps_cpus 0
pktgen -i a -n 0 --pin --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3}
ip link set dev b rps_cpus 2
pktgen -i a -n 0 --pin --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3}
tc -s qdisc show dev b
ip -s link show dev b
cat /proc/net/softnet_stat

ip link set dev b rps_cpus 0
pktgen -i b --mode netif_receive -n 0 --pin --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3}
pktgen -i b --mode netif_receive --rps -n 0 --pin --duration ${PP_DURATION:-2} --repeat ${PP_REPEAT:-3}
tc -s qdisc show dev b
