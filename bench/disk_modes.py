#!/usr/bin/env python3
"""This disk's write speed in each way `ada export --format atf` could
write, the bytes durable at the end (fdatasync included in every figure):
O_DIRECT through io_uring at several buffer sizes and queue depths,
buffered with RWF_DONTCACHE (through io_uring, and pwritev2 from the
thread), plain buffered, and buffered with sync_file_range write-behind.
Runs bench/disk_bench once per mode and round, the modes interleaved round
by round, and prints the median MB/s of each (with fdatasync) and its
CPU per 32 bytes.

  bench/disk_modes.py --build BUILD --dir DIR_ON_THE_DISK [--mib 3072] [--reps 3]

DIR must be on the disk measured (not tmpfs) with room for one file of
--mib MiB; each run's file is removed at its end. A benchmark, not a test:
run it under the bench lock on an idle machine (docs/benchmarks.md).
"""
import argparse
import os
import re
import subprocess
import sys

MODES = (
    # (label, disk_bench arguments after FILE: MODE BLOCK_KIB IN_FLIGHT, options)
    ("direct 2 MiB x 4 (the export today)", "direct 2048 4", "--keep-size"),
    ("direct 2 MiB x 8", "direct 2048 8", "--keep-size"),
    ("direct 2 MiB x 16", "direct 2048 16", "--keep-size"),
    ("direct 4 MiB x 4", "direct 4096 4", "--keep-size"),
    ("direct 4 MiB x 8", "direct 4096 8", "--keep-size"),
    ("direct 4 MiB x 16", "direct 4096 16", "--keep-size"),
    ("direct 8 MiB x 4", "direct 8192 4", "--keep-size"),
    ("direct 8 MiB x 8", "direct 8192 8", "--keep-size"),
    ("direct 8 MiB x 16", "direct 8192 16", "--keep-size"),
    ("direct 2 MiB x 4, no fallocate", "direct 2048 4", "--no-prealloc"),
    ("dontcache io_uring 2 MiB x 4", "dontcache 2048 4", "--no-prealloc"),
    ("dontcache io_uring 2 MiB x 4, fallocate", "dontcache 2048 4", "--keep-size"),
    ("dontcache pwritev2 2 MiB", "dontcache 2048 1", "--no-prealloc --sync"),
    ("dontcache pwritev2 8 MiB", "dontcache 8192 1", "--no-prealloc --sync"),
    ("buffered pwritev2 2 MiB", "buffered 2048 1", "--no-prealloc --sync"),
    ("write-behind 2 MiB, 8 behind", "writebehind 2048 8", "--no-prealloc"),
    ("write-behind 8 MiB, 4 behind", "writebehind 8192 4", "--no-prealloc"),
)

LINE = re.compile(r"(\d+) MB/s to the last completion, +(\d+) MB/s with fdatasync; "
                  r"CPU ([\d.]+) s = ([\d.]+) ns")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--mib", type=int, default=3072)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default=None, help="a regex of the labels to run")
    a = ap.parse_args()
    exe = os.path.join(a.build, "bench", "disk_bench")
    path = os.path.join(a.dir, "disk_modes.tmp")
    modes = [m for m in MODES if not a.only or re.search(a.only, m[0])]
    runs = {m[0]: [] for m in modes}
    print("load before:", os.getloadavg())
    for _ in range(a.reps):
        for label, mode, opts in modes:
            subprocess.run(["sync"], check=False)
            mode, block, infl = mode.split()
            r = subprocess.run([exe, path, mode, block, infl, str(a.mib)] + opts.split(),
                               capture_output=True, text=True)
            m = LINE.search(r.stdout)
            if r.returncode or not m:
                sys.exit(f"{label}: {r.stdout}{r.stderr}")
            runs[label].append((int(m.group(2)), int(m.group(1)), float(m.group(4))))
    print("load after:", os.getloadavg())
    print(f"{'mode':<42} {'MB/s durable (median, runs)':<36} {'CPU ns/32 B':>11}")
    for label, _, _ in modes:
        xs = sorted(runs[label])
        med = xs[len(xs) // 2]
        print(f"{label:<42} {med[0]:>5} ({' / '.join(str(x[0]) for x in runs[label])})"
              f"{'':<4} {med[2]:>11.2f}")


if __name__ == "__main__":
    main()
