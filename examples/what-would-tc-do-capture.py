#!/usr/bin/env python3
"""Writes examples/what-would-tc-do.pcap: 0.2 s of three UDP flows from 10.0.0.1 to
10.0.0.2 (nanosecond pcap, Ethernet), the input of examples/what-would-tc-do.pp.

  port 5001  bulk, 4 Mbit/s of 500-byte frames, ECN-capable (ECT(0))
  port 5002  bursts, 3 Mbit/s on average: 25 back-to-back 1000-byte frames every 66.7 ms
  port 5003  sparse, 0.5 Mbit/s of 100-byte frames (a VoIP-like flow)

Deterministic: no randomness, so the file is the same wherever it is made."""
import struct
import sys

DUR_NS = 200_000_000


def frame(dport, size, tos, seq):
    ip_len = size - 14
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, tos, ip_len, seq & 0xFFFF, 0x4000, 64, 17, 0,
                               bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])))
    s = sum(struct.unpack("!10H", ip))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    ip[10:12] = struct.pack("!H", ~s & 0xFFFF)
    udp = struct.pack("!HHHH", 40000 + dport % 100, dport, ip_len - 20, 0)
    eth = bytes([0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00])
    payload = bytes((seq + k) & 0xFF for k in range(ip_len - 28))
    return eth + bytes(ip) + udp + payload


def main(path):
    recs = []  # (t_ns, order, bytes)
    n = 0
    # bulk: 4 Mbit/s of 500-byte frames -> one every 1 ms
    for i, t in enumerate(range(0, DUR_NS, 1_000_000)):
        recs.append((t, n, frame(5001, 500, 0x02, i))); n += 1
    # bursts: 25 x 1000 bytes back to back (2 us apart) every 200/3 ms
    for b in range(3):
        t0 = b * DUR_NS // 3
        for i in range(25):
            recs.append((t0 + i * 2_000, n, frame(5002, 1000, 0x00, b * 25 + i))); n += 1
    # sparse: 0.5 Mbit/s of 100-byte frames -> one every 1.6 ms
    for i, t in enumerate(range(300_000, DUR_NS, 1_600_000)):
        recs.append((t, n, frame(5003, 100, 0xB8, i))); n += 1
    recs.sort()
    base = 1_700_000_000 * 1_000_000_000
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))  # ns magic, EN10MB
        for t, _, b in recs:
            ts = base + t
            f.write(struct.pack("<IIII", ts // 1_000_000_000, ts % 1_000_000_000, len(b), len(b)))
            f.write(b)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "examples/what-would-tc-do.pcap")
