#!/usr/bin/env python3
"""The readers on a compact session against an ATF v2 session of the same
program (issue 31): events a second of `ada report --json` and `ada export
--format atf -o DIR`, by wall clock and by CPU (user + system of the
command), and peak RSS.

  bench/compact_reading.py --build BUILD [--fib N] [--reps R] [--work DIR]
                           [--ada ADA ...]

Records bench/workloads/fib.c fib(N) (default 34: ~37 M events) twice,
`ada record --detail never --max-disk-mb 0` with the default compact index
and with `--index-format atf`, then R times, interleaved (every command on
both sessions in one round, the rounds one after another): report of
each, export of each (the export directory removed after each run). With
several --ada binaries (a baseline and a change), each round runs every
binary too, so their numbers come from one run. Medians are printed and
written to bench/results/compact_reading_<time>.json. The ATF v2 session
takes 32 bytes an event and its export as much again: give --work a
directory with room (fib 34: 2.4 GB). A benchmark, not a test: run it
under `flock /work/bench.lock` on a quiet machine and say the load.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import provenance  # noqa: E402
from reading_bench import ada_events, median, record_ada  # noqa: E402


def timed(cmd):
    """(wall seconds, CPU seconds, peak RSS MiB) of one run."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"`{' '.join(cmd)}` failed: {err[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", required=True, help="a build with ada and bench_workloads")
    ap.add_argument("--ada", action="append", default=None,
                    help="an ada binary to time (repeatable; default BUILD/ada)")
    ap.add_argument("--fib", type=int, default=34)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", default=None, help="scratch directory (default: a temporary one)")
    a = ap.parse_args()
    builder = os.path.join(a.build, "ada")
    adas = a.ada or [builder]
    plain = os.path.join(a.build, "bench", "plain", "fib")
    work = a.work or tempfile.mkdtemp(prefix="ada-compact-reading-")
    os.makedirs(work, exist_ok=True)
    runs = {}
    try:
        sessions = {fmt: record_ada(builder, plain, a.fib, work,
                                    ["--index-format", "atf"] if fmt == "atf" else [], "_" + fmt)
                    for fmt in ("compact", "atf")}
        events = ada_events(builder, sessions["compact"])
        if ada_events(builder, sessions["atf"]) != events:
            sys.exit("the two recordings of the same program differ in events")
        xdir = os.path.join(work, "export")
        for _ in range(a.reps):
            for ada in adas:
                for fmt, s in sessions.items():
                    for cmd, args in (("report", ["report", "--json", s]),
                                      ("export atf", ["export", "--format", "atf", "-o",
                                                      xdir, s])):
                        shutil.rmtree(xdir, ignore_errors=True)
                        runs.setdefault((ada, cmd, fmt), []).append(timed([ada] + args))
                        shutil.rmtree(xdir, ignore_errors=True)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
        else:
            for fmt in ("compact", "atf"):
                shutil.rmtree(os.path.join(work, f"ada_fib{a.fib}_{fmt}"), ignore_errors=True)
    rows = []
    print(f"fib({a.fib}): {events} events; load {os.getloadavg()[0]:.2f}")
    print(f"{'binary':<28} {'command':<11} {'session':<8} {'wall s':>7} {'M ev/s':>7} "
          f"{'CPU s':>6} {'M ev/CPU s':>10} {'RSS MiB':>8}")
    for (ada, cmd, fmt), rs in runs.items():
        wall, cpu, rss = median([r[0] for r in rs]), median([r[1] for r in rs]), \
            max(r[2] for r in rs)
        rows.append({"binary": ada, "command": cmd, "session": fmt, "events": events,
                     "wall_s": wall, "cpu_s": cpu, "events_per_s": events / wall,
                     "events_per_cpu_s": events / cpu if cpu else None,
                     "peak_rss_mib": rss})
        print(f"{ada[-28:]:<28} {cmd:<11} {fmt:<8} {wall:>7.2f} {events / wall / 1e6:>7.1f} "
              f"{cpu:>6.2f} {events / cpu / 1e6 if cpu else 0:>10.1f} {rss:>8.1f}")
    res = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(res, exist_ok=True)
    path = os.path.join(res, time.strftime("compact_reading_%Y%m%d_%H%M%S.json"))
    with open(path, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
                   "provenance": provenance(a.build), "reps": a.reps, "fib": a.fib,
                   "load": os.getloadavg(), "results": rows}, f, indent=1)
    print("written:", path)


if __name__ == "__main__":
    main()
