#!/usr/bin/env python3
"""Seed corpus for the `analyze` fuzz target: the frames of a little-endian classic pcap (as
`wirestamp synth --pcap` writes) in the target's layout, cut into inputs of N frames.
Usage: seed_analyze.py CAPTURE.pcap OUT_DIR [FRAMES_PER_INPUT]"""
import os, struct, sys

src, out = sys.argv[1], sys.argv[2]
per = int(sys.argv[3]) if len(sys.argv) > 3 else 64
data = open(src, 'rb').read()
assert data[:4] in (b'\x4d\x3c\xb2\xa1', b'\xd4\xc3\xb2\xa1'), 'little-endian classic pcap expected'
nanos = data[:4] == b'\x4d\x3c\xb2\xa1'
os.makedirs(out, exist_ok=True)
off, frames, prev = 24, [], None
while off + 16 <= len(data):
    sec, frac, cap, _ = struct.unpack_from('<IIII', data, off)
    t = sec * 1_000_000_000 + (frac if nanos else frac * 1000)
    dt = 0 if prev is None else max(-128, min(127, (t - prev) // 100))
    prev = t
    frames.append(struct.pack('<Hb', cap, dt) + data[off + 16:off + 16 + cap])
    off += 16 + cap
for k in range(0, len(frames), per):
    # Token and symbol rule (bit 0), each without and with --unmatched (bit 7).
    for sel in (0, 1, 0x80, 0x81):
        with open(os.path.join(out, f'synth-{k // per:05d}-{sel}'), 'wb') as f:
            f.write(bytes([sel | 4]) + b''.join(frames[k:k + per]))
