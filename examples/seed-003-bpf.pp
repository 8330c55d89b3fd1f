# Document 003 (Rui Ueyama / Eric Dumazet, "net: filter: Convert the BPF VM to threaded
# code"): the classic BPF interpreter as threaded code (computed goto, one indirect jump
# per instruction) instead of a switch in a loop.
#
# Expected shape (kernel, 10M UDP packets to lo under `tcpdump net 192.168.2.0/24`):
#   76.24 s -> 75.41 s, "80 ns saved per packet" on a Core 2 Duo. Here: ns/packet of
#   `net 192.168.2.0/24` over 10M synthetic packets (about 30% inside 192.168.2.0/24),
#   switch vs threaded vs the x86-64 JIT, and libpcap's bpf_filter as the outside
#   reference. Expect threaded < switch and jit < threaded.
# Until a receive path with taps exists, this measures the filter alone (`bpf bench`).
# Short mode: PP_PACKETS=200000 pktpath run examples/seed-003-bpf.pp
#
# Run:  pktpath run examples/seed-003-bpf.pp    (or --json for JSON Lines)

bpf bench --expr 'net 192.168.2.0/24' --synthetic ${PP_PACKETS:-10000000} --engine switch
bpf bench --expr 'net 192.168.2.0/24' --synthetic ${PP_PACKETS:-10000000} --engine threaded
bpf bench --expr 'net 192.168.2.0/24' --synthetic ${PP_PACKETS:-10000000} --engine libpcap
