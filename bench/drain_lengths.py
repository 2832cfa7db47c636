#!/usr/bin/env python3
"""The drain's CPU per event split into a marginal cost and a cost per run.

  drain_lengths.py [--build DIR] [--out DIR] [--reps N] WORKLOAD ARGS... -- LAST...

Runs bench.py's `ada` row (`ada record --out DIR --detail never
--max-disk-mb 0 -- PROGRAM ARGS`) of one workload at several lengths: the
arguments before each `--` are one run's, the last word of each set is the
length that varies (e.g. `mixed 10000 -- 30000 -- 100000`, `fibthreads 2
29 -- 31 -- 33`). The lengths are interleaved, N rounds. Per run: the
summary line's events and drain CPU ("drain CPU 0.141 s (10.0 ns/event)"),
the manifests' ring waits. Then a least-squares line of drain CPU against
events over every run: its slope is the marginal ns/event, its intercept
the drain CPU a run pays whatever its length (start-up, spare slots,
teardown, the end). Take timings under `flock /work/bench.lock`.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

SUMMARY = re.compile(r'recorded (\d+) events \(([\d.]+) M/s\).*drain CPU ([\d.]+) s '
                     r'\(([\d.]+) ns/event\)')


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', default=os.path.join(os.path.dirname(__file__), '..', 'build'))
    ap.add_argument('--out', help='recording directory (default: BUILD/bench_out/lengths)')
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('args', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    sets, cur = [], []
    for w in a.args:
        if w == '--':
            sets.append(cur)
            cur = []
        else:
            cur.append(w)
    sets.append(cur)
    if not sets[0]:
        ap.error('no workload')
    # "mixed 10000 -- 30000": a later set is the first with its last word replaced
    a.runs = [sets[0]] + [sets[0][:-1] + s for s in sets[1:]]
    return a


def ring_waits(outdir):
    """The program's waits for ring space: count and seconds, every thread."""
    n, ns = 0, 0
    for path in glob.glob(os.path.join(outdir, 'session_*', 'pid_*', 'manifest.json')):
        with open(path) as f:
            for t in json.load(f).get('threads', []):
                n += t.get('ring_waits', 0)
                ns += t.get('ring_waited_ns', 0)
    return n, ns / 1e9


def run_once(a, outdir, argv):
    shutil.rmtree(outdir, ignore_errors=True)
    prog = os.path.join(a.build, 'bench', 'plain', argv[0])
    cmd = [os.path.join(a.build, 'ada'), 'record', '--out', outdir, '--detail', 'never',
           '--max-disk-mb', '0', '--', prog] + argv[1:]
    err = subprocess.run(cmd, capture_output=True, text=True).stderr
    m = SUMMARY.search(err)
    if not m:
        sys.exit('no summary line from %s:\n%s' % (' '.join(cmd), err[-2000:]))
    ev, mps, cpu_s, ns_ev = int(m[1]), float(m[2]), float(m[3]), float(m[4])
    # The finer of the two roundings: 0.5 ms, or 0.05 ns times the events.
    cpu = ns_ev * ev / 1e9 if 0.05e-9 * ev < 0.0005 else cpu_s
    waits = ring_waits(outdir)
    shutil.rmtree(outdir, ignore_errors=True)
    return {'events': ev, 'mps': mps, 'cpu': cpu, 'ns': ns_ev, 'waits': waits}


def fit(runs):
    """Least squares of drain CPU (s) on events: (ns/event, ms a run)."""
    xs = [r['events'] for r in runs]
    ys = [r['cpu'] for r in runs]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None, None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return b * 1e9, (my - b * mx) * 1e3


def main():
    a = parse_args()
    outdir = a.out or os.path.join(a.build, 'bench_out', 'lengths')
    res = {i: [] for i in range(len(a.runs))}
    for rep in range(a.reps):
        order = range(len(a.runs)) if rep % 2 == 0 else reversed(range(len(a.runs)))
        for i in order:
            r = run_once(a, outdir, a.runs[i])
            res[i].append(r)
            print('%-22s %10d events %6.1f M/s drain %.4f s %5.1f ns/event waits %d (%.3f s)' %
                  (' '.join(a.runs[i]), r['events'], r['mps'], r['cpu'], r['ns'], *r['waits']),
                  flush=True)
    print('load', open('/proc/loadavg').read().split()[:3])
    for i, runs in res.items():
        print('%-22s median %5.2f ns/event, %.4f s drain CPU, %.1f M events/s' %
              (' '.join(a.runs[i]), statistics.median(r['ns'] for r in runs),
               statistics.median(r['cpu'] for r in runs),
               statistics.median(r['mps'] for r in runs)))
    marg, fixed = fit([r for runs in res.values() for r in runs])
    if marg is not None:
        print('marginal %.2f ns/event, %.2f ms a run (least squares over %d runs)' %
              (marg, fixed, sum(len(v) for v in res.values())))


if __name__ == '__main__':
    main()
