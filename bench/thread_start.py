#!/usr/bin/env python3
"""What starting a thread costs a traced program (issue 32 item 1).

Runs bench/workloads/thread_start.c untraced, under `ada record` (default
options and `--trigger crash`) and under `uftrace record -P .` (when
installed), interleaved round by round, and prints medians:

  start  pthread_create -> the new thread's first instruction (a hooked
         function's clock read), threads started one at a time;
  serve  a thread-per-request loop: a request's arrival -> its reply, each
         handled by a new thread (2 000 hooked calls, about 1 ms of work).

Each run's first thread is shown apart (`first`): it may come before the
recorder had a slot prepared. Timed: run it under `flock /work/bench.lock`
on a machine as quiet as you can get, and quote the load average it prints.

  bench/thread_start.py [--build build] [--rounds 3] [--threads 100]
                        [--ada-before PATH]

--ada-before PATH adds a variant `ada-before`: another build of ada (say,
before a change) recording the same program, in the same rotation.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import run_dir, session_fs, session_fs_line  # noqa: E402


def run_variant(variant, prog, mode, n, ada, work, ada_before=None):
    """One run; returns the per-thread ns the workload printed."""
    argv = [prog, mode, str(n)]
    out_dir = tempfile.mkdtemp(dir=work)  # removed with work by main()
    if variant == "untraced":
        cmd = argv
    elif variant == "ada":
        cmd = [ada, "record", "--out", out_dir, "--"] + argv
    elif variant == "ada-before":
        cmd = [ada_before, "record", "--out", out_dir, "--"] + argv
    elif variant == "ada --trigger crash":
        cmd = [ada, "record", "--out", out_dir, "--trigger", "crash", "--"] + argv
    else:  # uftrace
        cmd = ["uftrace", "record", "-P", ".", "-d", os.path.join(out_dir, "u")] + argv
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        sys.exit("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr[-400:]))
    return [int(x) for x in p.stdout.split()]


def ms(ns):
    return "%.3f" % (ns / 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=100)
    ap.add_argument("--work", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("--ada-before", help="another ada build, as a variant of its own")
    a = ap.parse_args()
    ada = os.path.join(a.build, "ada")
    plain = os.path.join(a.build, "bench", "plain", "thread_start")
    pfe = os.path.join(a.build, "bench", "pfe", "thread_start")
    for f in (ada, plain):
        if not os.access(f, os.X_OK):
            sys.exit("%s is missing: cmake --build %s --target ada bw_thread_start_plain "
                     "bw_thread_start_pfe" % (f, a.build))
    variants = ["untraced", "ada", "ada --trigger crash"]
    if a.ada_before:
        variants.insert(2, "ada-before")
    if shutil.which("uftrace") and os.access(pfe, os.X_OK):
        variants.append("uftrace")
    else:
        print("uftrace: not installed (or %s not built): not measured" % pfe)
    a.work = run_dir(a.work, "ada-bench-")  # every session kept until the end
    fs = session_fs(a.work)
    samples = {(v, m): [] for v in variants for m in ("start", "serve")}
    firsts = {(v, m): [] for v in variants for m in ("start", "serve")}
    for _ in range(a.rounds):
        for mode in ("start", "serve"):
            for v in variants:
                prog = pfe if v == "uftrace" else plain
                s = run_variant(v, prog, mode, a.threads, ada, a.work, a.ada_before)
                firsts[(v, mode)].append(s[0])
                samples[(v, mode)].extend(s[1:])
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(session_fs_line(fs))
    print("load average after the run: %s; %d rounds x %d threads, interleaved" % (
        load, a.rounds, a.threads))
    print("%-6s %-20s %9s %9s %9s %9s %7s" % ("what", "variant", "p50 ms", "p90 ms", "max ms",
                                              "first ms", "p50 x"))
    for mode in ("start", "serve"):
        base = statistics.median(samples[("untraced", mode)])
        for v in variants:
            s = sorted(samples[(v, mode)])
            p50 = statistics.median(s)
            print("%-6s %-20s %9s %9s %9s %9s %7.2f" % (
                mode, v, ms(p50), ms(s[int(len(s) * 0.9)]), ms(s[-1]),
                ms(statistics.median(firsts[(v, mode)])), p50 / base))


if __name__ == "__main__":
    main()
