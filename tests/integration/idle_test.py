#!/usr/bin/env python3
"""An idle traced program costs the drain (nearly) no passes (the doorbell,
docs/internals.md "The doorbell: an idle drain sleeps").

  idle_test.py --ada ADA --work DIR --name NAME [--secs S] -- T_IDLE

Records tests/targets/t_idle (bursts of calls around S seconds and 1 s of
sleep) and reads the manifest's `drain` counts: the recording had a
doorbell, the drain slept on it, and it made at most 40 passes plus 15 a
second of the recording's length -- a drain polling every millisecond, as
before the doorbell, makes about 1 000 a second. The bound grows with the
time the run took, so a loaded machine (a longer run) cannot fail it; no
check depends on how fast anything ran. That the calls after the idle
time are all recorded is e2e.idle_exact's (ada_itest.py, the same
program). Exit 0 = pass, 1 = fail, 77 = skip. A failing run keeps its
work directory and prints its path."""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
PASSES_BASE = 40
PASSES_PER_SEC = 15


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--name", default="idle")
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = [x for x in a.argv if x != "--"]
    if not prog:
        print("idle_test.py: give the program after --")
        return 1
    os.makedirs(a.work, exist_ok=True)
    work = tempfile.mkdtemp(prefix=a.name + ".", dir=a.work)
    out = os.path.join(work, "out")
    t0 = time.monotonic()
    p = subprocess.run([a.ada, "record", "--out", out, "--"] + prog + [str(a.secs)],
                       capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    fails = []
    if p.returncode != 0:
        fails.append("ada record exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    mans = glob.glob(os.path.join(out, "session_*", "pid_*", "manifest.json"))
    if len(mans) != 1:
        fails.append("expected one process's manifest, found %d" % len(mans))
    for m in mans:
        d = json.load(open(m)).get("drain")
        if not isinstance(d, dict):
            fails.append("%s: no drain object" % m)
            continue
        bound = PASSES_BASE + PASSES_PER_SEC * elapsed
        print("drain: %s over %.2f s (bound %d passes)" % (d, elapsed, bound))
        if d.get("doorbell") is not True:
            fails.append("the recording had no doorbell: %s" % d)
        if not d.get("sleeps", 0) >= 2:
            fails.append("the drain never slept through the idle time: %s" % d)
        if not d.get("passes", 1 << 60) <= bound:
            fails.append("%s drain passes in %.2f s: more than %d, the drain polled "
                         "through the idle time" % (d.get("passes"), elapsed, bound))
    for f in fails:
        print("FAIL:", f)
    if fails:
        print("work directory kept:", work)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
