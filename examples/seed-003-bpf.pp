# Document 003 (Rui Ueyama / Eric Dumazet, "net: filter: Convert the BPF VM to threaded
# code"): the classic BPF interpreter as threaded code (computed goto, one indirect jump
# per instruction) instead of a switch in a loop.
#
# Expected shape (kernel, 10M UDP packets to lo under `tcpdump net 192.168.2.0/24`):
#   76.24 s -> 75.41 s, "80 ns saved per packet" on a Core 2 Duo. Here, two parts:
#   1. the filter alone (`bpf bench`): ns/packet of `net 192.168.2.0/24` over synthetic
#      packets (about 30% inside 192.168.2.0/24) on switch, threaded and the x86-64 JIT,
#      and libpcap's bpf_filter as the outside reference. Expect threaded < switch and
#      jit < threaded.
#   2. the reproduction through the receive path: pktgen hands 10M UDP packets to a
#      dummy device's netif_receive_skb (destinations 192.168.0.0/22: a quarter inside
#      192.168.2.0/24) with a `capture` tap running the same filter, as tcpdump on lo did.
#      First with no tap (the baseline pps), then the tap's engine A/B'd: switch vs
#      threaded and threaded vs jit (ratio_a_over_b of pps: expect < 1 for both, i.e.
#      the second engine faster), the tap's closing counts (a quarter captured), and
#      the baseline once more (the drift of this noisy machine over the runs).
#      ns/packet = 1e9 / pps; the tap's cost = ns/packet with it - without it.
# Short mode: PP_PACKETS=200000 PP_COUNT=200000 PP_REPEAT=1 pktpath run examples/seed-003-bpf.pp
#
# Run:  pktpath run examples/seed-003-bpf.pp    (or --json for JSON Lines)

bpf bench --expr 'net 192.168.2.0/24' --synthetic ${PP_PACKETS:-10000000} --engine switch
bpf bench --expr 'net 192.168.2.0/24' --synthetic ${PP_PACKETS:-10000000} --engine threaded
bpf bench --expr 'net 192.168.2.0/24' --synthetic ${PP_PACKETS:-10000000} --engine jit
bpf bench --expr 'net 192.168.2.0/24' --synthetic ${PP_PACKETS:-10000000} --engine libpcap

ip link add dev rx0 type dummy
ip link set dev rx0 up
# Baseline: the receive path with no tap.
pktgen -i rx0 -n ${PP_COUNT:-10000000} -d 192.168.0.0/22 --mode netif_receive --repeat ${PP_REPEAT:-3}
# tcpdump net 192.168.2.0/24 on the device.
capture -i rx0 'net 192.168.2.0/24'
pktgen -i rx0 -n ${PP_COUNT:-10000000} -d 192.168.0.0/22 --mode netif_receive --repeat ${PP_REPEAT:-3} --ab bpf_engine=switch|threaded
pktgen -i rx0 -n ${PP_COUNT:-10000000} -d 192.168.0.0/22 --mode netif_receive --repeat ${PP_REPEAT:-3} --ab bpf_engine=threaded|jit
capture stop -i rx0
# The baseline again, the tap gone: how far the machine drifted during the runs above.
pktgen -i rx0 -n ${PP_COUNT:-10000000} -d 192.168.0.0/22 --mode netif_receive --repeat ${PP_REPEAT:-3}
