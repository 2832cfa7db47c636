#!/usr/bin/env python3
"""An idle traced program costs the drain (nearly) no passes (the doorbell,
docs/internals.md "The doorbell: an idle drain sleeps").

  idle_test.py --ada ADA --work DIR --name NAME [--secs S] -- T_IDLE
  idle_test.py --ada ADA --work DIR --name NAME --ringer -- PRODUCER_RINGER

Records tests/targets/t_idle (bursts of calls around S seconds and 1 s of
sleep) and reads the manifest's `drain` counts: the recording had a
doorbell, the drain slept on it, and it made at most 40 passes plus 50 a
second of the recording's length -- a drain polling every millisecond, as
before the doorbell, makes about 1 000 a second, one waking on its 10 ms
tick 100. The bound grows with the
time the run took, so a loaded machine (a longer run) cannot fail it; no
check depends on how fast anything ran. That the calls after the idle
time are all recorded is e2e.idle_exact's (ada_itest.py, the same
program).

--ringer records tests/targets/producer_ringer (no agent), which rings the
doorbell as fast as it can for S seconds between two bursts of K events:
the drain must pace itself, not spin -- rings after which it found nothing
are counted (`empty_rings`), and it makes at most RINGER_PER_SEC passes a
second of the run (each empty ring is followed by a 1 ms poll: about two
passes a millisecond, what polling cost before) -- and every event is
recorded.

--refused records T_IDLE with ADA_TEST_BELL_REFUSED=1 (the futex refuses
the drain's first wait, as a kernel or a seccomp filter without it would):
the drain falls back to polling and says so -- the manifest's
drain.polling, the summary line and `ada status SESSION`'s drain line --
and still records the program's calls (at least REFUSED_EVENTS events,
no drop; the exact counts are e2e.idle_exact's).

Exit 0 = pass, 1 = fail, 77 = skip. A failing run keeps its work
directory and prints its path."""
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
# Half what a drain waking on its 10 ms tick would make (100 a second):
# a loaded machine splits the program's bursts into many short passes
# (35 a second seen beside other sessions' recordings), while a drain that
# polls on a timer of 10 ms or less still fails.
PASSES_PER_SEC = 50
RINGER_PER_SEC = 3000
RINGER_EVENTS = 5000
# t_idle's own calls, a call and a return each: main, before, idle_for
# twice, after, late_main, late, again
REFUSED_EVENTS = 2 * (1 + 20000 + 2 + 300 + 1 + 500 + 20000)


def refused_fails(ada, out, man, summary):
    """--refused: the fallback to polling said in the manifest, on the
    summary line and by `ada status SESSION`; the calls recorded."""
    fails = []
    d = man["drain"]
    why = "the doorbell's futex refused to wait (Function not implemented)"
    if d.get("doorbell") is not False or d.get("polling") != why:
        fails.append("the manifest's drain does not say it polled: %s" % d)
    if "ada: the drain polled every 1 ms instead of sleeping while the program was idle: " \
            "%s;" % why not in summary:
        fails.append("the summary does not say the drain polled: %r" % summary[-1500:])
    session = glob.glob(os.path.join(out, "session_*"))[0]
    st = subprocess.run([ada, "status", session], capture_output=True, text=True,
                        timeout=60).stdout
    if "  drain: polling every 1 ms instead of sleeping while idle: %s; " % why not in st:
        fails.append("ada status does not say the drain polled: %r" % st[-1500:])
    written = man.get("metrics", {}).get("events_written", 0)
    drops = sum(sum(v.values()) for v in man.get("drops", {}).values())
    if written < REFUSED_EVENTS or drops:
        fails.append("%d events written (the program's own calls make %d), %d drops" %
                     (written, REFUSED_EVENTS, drops))
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--name", default="idle")
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("--ringer", action="store_true")
    ap.add_argument("--refused", action="store_true")
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
    if a.ringer:
        cmd = [a.ada, "record", "--no-agent", "--detail", "never", "--out", out, "--"] + \
            prog + [str(a.secs), str(RINGER_EVENTS)]
    else:
        cmd = [a.ada, "record", "--out", out, "--"] + prog + [str(a.secs)]
    env = dict(os.environ, ADA_TEST_BELL_REFUSED="1") if a.refused else None
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
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
        rate = RINGER_PER_SEC if a.ringer else PASSES_PER_SEC
        bound = PASSES_BASE + rate * elapsed
        print("drain: %s over %.2f s (bound %d passes)" % (d, elapsed, bound))
        if a.refused:
            fails += refused_fails(a.ada, out, json.load(open(m)), p.stderr)
            continue
        if d.get("doorbell") is not True:
            fails.append("the recording had no doorbell: %s" % d)
        if a.ringer:
            written = json.load(open(m)).get("metrics", {}).get("events_written")
            if written != 2 * RINGER_EVENTS:
                fails.append("%s events written, the program emitted %d" %
                             (written, 2 * RINGER_EVENTS))
            if not d.get("empty_rings", 0) >= 1:
                fails.append("no ring counted as empty under a constant ringer: %s" % d)
        elif not d.get("sleeps", 0) >= 2:
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
