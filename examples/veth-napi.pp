# veth a -> b with b's GRO off (veth_xmit is netif_rx onto the sending Cpu's input queue)
# and on (veth's NAPI mode: b's ring of 256 and b's NAPI poll on the sending Cpu), one Cpu,
# alternated: off, on, off, on, off, on. pktgen sends 60-byte frames on a from core 0; b's
# clsact ingress drops every frame (`tc -s qdisc show dev b` counts what b received).
# Short mode: PP_DURATION=0.2 pktpath run examples/veth-napi.pp

ip link add a type veth peer name b
ip link set dev a up
ip link set dev b up
tc qdisc add dev b clsact
tc filter add dev b ingress bpf da bytecode '1,6 0 0 2,'

pktgen -i a -n 0 --pin --duration ${PP_DURATION:-1}
ethtool -K b gro on
pktgen -i a -n 0 --pin --duration ${PP_DURATION:-1}
ethtool -K b gro off
pktgen -i a -n 0 --pin --duration ${PP_DURATION:-1}
ethtool -K b gro on
pktgen -i a -n 0 --pin --duration ${PP_DURATION:-1}
ethtool -K b gro off
pktgen -i a -n 0 --pin --duration ${PP_DURATION:-1}
ethtool -K b gro on
pktgen -i a -n 0 --pin --duration ${PP_DURATION:-1}
tc -s qdisc show dev b
ip -s link show dev a
ip -s link show dev b
