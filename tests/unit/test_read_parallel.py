#!/usr/bin/env python3
"""The reading commands on several threads give what they give on one
(tools/read_par.h): a session of four threads, made here with every shape
a walk meets (nested calls, exceptions, depth jumps that orphan frames,
ends of calls never seen, wrong functions, ada's wait markers, signal
markers, two generations of one thread), as ATF v2 files and as compact
files of small blocks; `ada report` (text, --json, --threads, --sort) with
ADA_READ_THREADS=1 against 2 and 3, cut in pieces of a few hundred events
(ADA_READ_PIECE) so that almost every frame is stitched across pieces;
`ada export --format atf`: every file's bytes the same.

Usage: test_read_parallel.py ADA ATF_TO_CIDX WORKDIR. Exit 0 = pass."""
import hashlib
import os
import random
import shutil
import struct
import subprocess
import sys
import zlib

ADA, TO_CIDX, WORK = sys.argv[1:4]
CALL, RET, EXC = 1, 2, 3
SIG = 0x80000000
WAIT_BEGIN, WAIT_END = SIG | 0x40000000, SIG | 0x40000001
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def events(seed, n, tid):
    """n events of one thread: a random walk of calls and ends."""
    rnd = random.Random(seed)
    out, fids, d, ts = [], {}, 2, 1000
    for _ in range(n):
        r = rnd.randrange(100)
        ts += rnd.randrange(40)
        if r < 47:
            d = rnd.randrange(1, 8) if r < 2 else min(d + 1, 40)  # a jump orphans
            fids[d] = (1 << 32) | rnd.randrange(1, 6)
            out.append((ts, fids[d], tid, CALL, d))
        elif r < 92:
            fid = (1 << 32) | 9 if r == 60 else fids.get(d, (1 << 32) | 1)
            out.append((ts, fid, tid, RET if r < 88 else EXC, d))
            d = d - 1 if d else rnd.randrange(3)  # below the first: unmatched
        elif r < 97:
            out.append((ts, 0, tid, EXC, WAIT_BEGIN if r < 95 else WAIT_END))
        else:
            out.append((ts, 0xdead, tid, EXC, SIG | 11))
    return out


def write_atf(path, evs, tid):
    body = b"".join(struct.pack("<QQIIII", t, f, th, k, d, 0xFFFFFFFF)
                    for t, f, th, k, d in evs)
    t0, t1 = evs[0][0], evs[-1][0]
    hdr = struct.pack("<4sBBBBIIB3sIIIQQQQ", b"ATI2", 1, 1, 1, 4, 0, tid, 3, b"\0" * 3, 0,
                      32, len(evs) & 0xFFFFFFFF, 64, 64 + len(body), t0, t1)
    ftr = struct.pack("<4sIQQQQ24s", b"2ITA", zlib.crc32(body), len(evs), t0, t1,
                      128 + len(body), b"\0" * 24)
    with open(path, "wb") as f:
        f.write(hdr + body + ftr)


def make_session(root, compact):
    pid = os.path.join(root, "pid_77")
    os.makedirs(os.path.join(pid, "modules"))
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "../data/golden/pid_4242/modules/module_1.syms"),
                os.path.join(pid, "modules"))
    files = {0: ["index.atf"], 1: ["index.g0.atf", "index.atf"], 2: ["index.atf"],
             3: ["index.atf"]}
    last = 0
    for th, names in files.items():
        os.makedirs(os.path.join(pid, f"thread_{th}"))
        for gi, name in enumerate(names):
            evs = events(th * 10 + gi, 6000 if th != 2 else 300, 77 + th)
            if name == "index.atf" and len(names) > 1:  # later than the older generation
                evs = [(t + last, f, tid, k, d) for t, f, tid, k, d in evs]
            last = evs[-1][0]
            path = os.path.join(pid, f"thread_{th}", name)
            write_atf(path, evs, 77 + th)
            if compact:
                subprocess.run([TO_CIDX, path, path + ".c", "4096"], check=True,
                               capture_output=True)
                os.replace(path + ".c", path)


def run(args, threads, piece):
    env = dict(os.environ, ADA_READ_THREADS=str(threads), ADA_READ_PIECE=str(piece))
    p = subprocess.run([ADA, *args], capture_output=True, env=env, timeout=120)
    return p.returncode, p.stdout, p.stderr


def tree_sums(d):
    out = {}
    for dp, _, fs in os.walk(d):
        for f in fs:
            with open(os.path.join(dp, f), "rb") as fh:
                out[os.path.relpath(os.path.join(dp, f), d)] = hashlib.sha256(
                    fh.read()).hexdigest()
    return out


def test(kind):
    root = os.path.join(WORK, kind)
    make_session(root, kind == "compact")
    for args in (["report", root], ["report", "--json", root],
                 ["report", "--threads", "--json", root], ["report", "--threads", "--sort", "p99", root]):
        want = run(args, 1, 1 << 20)
        check(want[0] == 0 and want[1], f"{kind} {args[:-1]}: one thread: exit {want[0]}")
        for threads, piece in ((2, 1 << 20), (2, 300), (3, 41)):
            got = run(args, threads, piece)
            check(got[:2] == want[:2],
                  f"{kind} {args[:-1]}: ADA_READ_THREADS={threads} ADA_READ_PIECE={piece} "
                  f"differs from one thread")
    if kind == "compact":
        sums = []
        for threads in (1, 2):
            out = os.path.join(WORK, f"export{threads}")
            rc, _, err = run(["export", "--format", "atf", "-o", out, root], threads, 1 << 20)
            check(rc == 0, f"export ADA_READ_THREADS={threads}: exit {rc}: {err}")
            sums.append(tree_sums(out))
        check(sums[0] == sums[1] and len(sums[0]) >= 6, "export: the files differ")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    try:
        test("atf")
        test("compact")
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    print("FAILED" if failures else "ok", len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
