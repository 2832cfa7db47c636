#!/usr/bin/env python3
"""The reading commands on a large recording (issue 11, Performance): how
many events a second `ada report` (on every reader thread, and on one),
`ada export --format chrome` and `ada export --format atf` process, and
their peak RSS, side by side with `uftrace dump --chrome` on the same
program (bench/workloads/fib.c: fib(36) is 48 M calls, ~97 M events).

  bench/reading_bench.sh [--fib N] [--small-fib M] [--reps R] [--no-uftrace]

Steps: record fib(N) with `ada record --detail never --max-disk-mb 0`, and
with `uftrace record` (the -pg build); then R times each, interleaved:
`ada report --json` (ADA_READ_THREADS unset: every online CPU, at most 8),
the same with ADA_READ_THREADS=1, `ada export --format chrome -o FILE`,
`ada export --format atf -o DIR` (the compact index transcoded to strict
ATF v2, 32 bytes an event, written under the scratch directory: put it on
the disk with --work to time the disk), `uftrace dump --chrome > FILE`,
each timed by wall clock and its peak RSS read from wait4(). The
same ada commands on fib(M) (about 7 times fewer events) show whether the
peak RSS depends on the recording's length. Prints a table and writes
bench/results/reading_<time>.json. A benchmark, not a test: run it on an
idle machine (docs/benchmarks.md).
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


def timed(cmd, stdout=subprocess.DEVNULL, env=None):
    """(seconds, peak RSS in MiB) of one run (env: variables added)."""
    full_env = dict(os.environ, **env) if env else None
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, env=full_env)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if p.returncode != 0:
        sys.exit(f"`{' '.join(cmd)}` failed ({p.returncode}): {err[-2000:]}")
    return dt, ru.ru_maxrss / 1024.0


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def record_ada(ada, prog, n, work, opts=(), tag=""):
    """`ada record --detail never --max-disk-mb 0` of prog n (more record
    options: opts) into a directory of its own; the session's path."""
    out = os.path.join(work, f"ada_fib{n}{tag}")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([ada, "record", "--out", out, "--detail", "never", "--max-disk-mb", "0"] +
                   list(opts) + ["--", prog, str(n)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    (session,) = [os.path.join(out, d) for d in os.listdir(out) if d.startswith("session_")]
    return session


def ada_events(ada, session):
    """The program's events in session: ada's two markers per wait for ring
    space left out (docs/format.md, "Wait markers"), which two recordings of
    the same program differ in."""
    r = subprocess.run([ada, "report", "--json", session], check=True, capture_output=True)
    return sum(p["totals"]["events"] - 2 * p["totals"].get("ada_waits", 0)
               for p in json.loads(r.stdout)["processes"])


def ada_commands(ada, session, work):
    """(row name, command, variables added) of each ada reading command."""
    report = [ada, "report", "--json", session]
    return (("ada report", report, None),
            ("ada report, 1 thread", report, {"ADA_READ_THREADS": "1"}),
            ("ada export chrome", [ada, "export", session, "--format", "chrome",
                                   "-o", os.path.join(work, "ada.json")], None),
            ("ada export atf", [ada, "export", "--format", "atf",
                                "-o", os.path.join(work, "ada_atf"), session], None))


def bench_ada(ada, session, reps, work):
    """Each command reps times, the commands interleaved round by round so
    that a slow minute of the host falls on all of them."""
    events = ada_events(ada, session)
    commands = ada_commands(ada, session, work)
    runs = {name: [] for name, _, _ in commands}
    for _ in range(reps):
        for name, cmd, env in commands:
            # export --format atf writes a fresh tree each time: time the
            # writing of every file, not the replacing of an old one.
            shutil.rmtree(os.path.join(work, "ada_atf"), ignore_errors=True)
            subprocess.run(["sync"], check=False)
            runs[name].append(timed(cmd, env=env))
    shutil.rmtree(os.path.join(work, "ada_atf"), ignore_errors=True)
    rows = {}
    for name, _, _ in commands:
        t, rss = median([r[0] for r in runs[name]]), max(r[1] for r in runs[name])
        rows[name] = {"events": events, "seconds": t, "events_per_s": events / t,
                      "peak_rss_mib": rss}
    return rows


def bench_uftrace(pg_prog, n, reps, work):
    d = os.path.join(work, f"uftrace_fib{n}")
    subprocess.run(["uftrace", "record", "-d", d, pg_prog, str(n)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = []
    for _ in range(reps):
        with open(os.path.join(work, "uftrace.json"), "w") as f:
            runs.append(timed(["uftrace", "dump", "--chrome", "-d", d], stdout=f))
    # uftrace records an entry and an exit per call, as ada: 2 events a call.
    calls = None
    r = subprocess.run(["uftrace", "report", "-d", d, "-f", "call", "--no-pager"],
                       capture_output=True, text=True)
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts and parts[-1] == "bw_fib":
            calls = int(parts[0])
    events = 2 * calls if calls else None
    t = median([x[0] for x in runs])
    return {"uftrace dump --chrome": {"events": events, "seconds": t,
                                      "events_per_s": events / t if events else None,
                                      "peak_rss_mib": max(x[1] for x in runs)}}


def fs_kind(path):
    """'tmpfs' or 'disk' for the file system path lies on (the exports'
    times mean different things on each)."""
    r = subprocess.run(["stat", "-f", "-c", "%T", os.path.dirname(path.rstrip("/")) or "/"],
                       capture_output=True, text=True)
    return "tmpfs" if r.stdout.strip() == "tmpfs" else "disk"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", required=True, help="a build with ada and bench_workloads")
    ap.add_argument("--fib", type=int, default=36)
    ap.add_argument("--small-fib", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-uftrace", action="store_true")
    ap.add_argument("--work", default=None,
                    help="scratch directory: the recordings and the exports (default: a "
                         "temporary one under $TMPDIR or /tmp)")
    a = ap.parse_args()
    ada = os.path.join(a.build, "ada")
    plain = os.path.join(a.build, "bench", "plain", "fib")
    pg = os.path.join(a.build, "bench", "pg", "fib")
    work = a.work or tempfile.mkdtemp(prefix="ada-reading-bench-")
    try:
        results = {}
        big = record_ada(ada, plain, a.fib, work)
        results[f"fib({a.fib})"] = bench_ada(ada, big, a.reps, work)
        shutil.rmtree(os.path.dirname(big))
        small = record_ada(ada, plain, a.small_fib, work)
        results[f"fib({a.small_fib})"] = bench_ada(ada, small, a.reps, work)
        shutil.rmtree(os.path.dirname(small))
        if not a.no_uftrace and shutil.which("uftrace"):
            results[f"fib({a.fib})"].update(bench_uftrace(pg, a.fib, a.reps, work))
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"scratch directory {work}: {fs_kind(work)}")
    print(f"{'recording':<10} {'command':<24} {'events':>12} {'seconds':>9} {'M events/s':>11} "
          f"{'peak RSS MiB':>13}")
    for rec, rows in results.items():
        for name, r in rows.items():
            eps = f"{r['events_per_s'] / 1e6:.1f}" if r["events_per_s"] else "-"
            print(f"{rec:<10} {name:<24} {r['events'] or 0:>12} {r['seconds']:>9.2f} {eps:>11} "
                  f"{r['peak_rss_mib']:>13.1f}")
    res = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(res, exist_ok=True)
    path = os.path.join(res, time.strftime("reading_%Y%m%d_%H%M%S.json"))
    with open(path, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
                   "provenance": provenance(a.build), "reps": a.reps,
                   "work_fs": fs_kind(work),
                   "load": os.getloadavg(), "results": results}, f, indent=1)
    print("written:", path)


if __name__ == "__main__":
    main()
