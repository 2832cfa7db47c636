#!/usr/bin/env python3
"""The hooks' own cost, measured tighter than bench/bench.py can on a noisy
2-core VM: many interleaved runs of one workload, the program pinned to one
CPU and ada's drain to the other, a ring large enough that the program
never waits for it (and its waits taken out anyway), sessions on
/dev/shm. What it is for: differences of 1-3 ns per event that a median
of 5 end-to-end runs cannot resolve (issue 8's "a detail set that
excludes the function: within 2 ns/event of --detail never").

  bench/hot_ab.py [--build build-bench] [--reps 15] [--workload fib] [--arg 30]
                  [--variants never,excluded,detail] [--ada PATH ...]
                  [--uftrace uftrace-pg,uftrace-args]

Each run times the workload itself (bench/workloads/bw_common.h:
elapsed_ns, from its first constructor to its report), less the
manifest's metrics.ring_waited_ns; the untraced program is timed the same
way, pinned the same way, in the same rotation. Per variant: minimum,
first quartile and median of (traced - untraced median) / events, in ns
per event, and the same for the gap of each variant to the first one.
--ada PATH (repeatable) compares builds instead: every variant for every
build. uftrace (when installed) runs beside, pinned the same way: its
recorder on CPU 1 (`taskset -c 1 uftrace record ... taskset -c 0 PROG`),
the workload's -pg build on CPU 0; `-pg` alone and, on fib, `-A
bw_fib@arg1 -R bw_fib@retval`. Writes bench/results/<date>-hotab.json (with bench/provenance.py's
record) and prints a table. Only the standard library."""
import argparse
import datetime
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import REPO, provenance  # noqa: E402

# uftrace beside, pinned the same way: its recorder (and writer threads) on
# CPU 1, the -pg build of the workload on CPU 0; it never waits (libmcount
# maps a new buffer when its writer lags), so its figure is its own time.
UFTRACE = {
    'uftrace-pg': [],
    'uftrace-args': ['-A', 'bw_fib@arg1', '-R', 'bw_fib@retval'],
}
VARIANTS = {
    'never': ['--detail', 'never'],
    'excluded': ['--detail', 'triggered', '--stack-bytes', '128', '--detail-symbols',
                 'no_function_has_this_name'],
    'detail': ['--detail', 'triggered', '--stack-bytes', '128'],
}


def elapsed_of(text):
    m = re.findall(r'bench: workload=\S+ calls=\d+ events=(\d+) \S+ elapsed_ns=(\d+)', text)
    return (int(m[-1][0]), int(m[-1][1])) if m else (None, None)


def waited_of(out):
    total = 0
    for path in glob.glob(os.path.join(out, 'session_*', 'pid_*', 'manifest.json')):
        with open(path) as f:
            total += json.load(f).get('metrics', {}).get('ring_waited_ns', 0)
    return total


def one_uftrace(variant, pgprog, arg, shm):
    out = tempfile.mkdtemp(prefix='hotab.', dir=shm)
    try:
        cmd = ['taskset', '-c', '1', 'uftrace', 'record', '--force', '--no-libcall', '--no-event', '-d',
               os.path.join(out, 'd')] + UFTRACE[variant] + ['taskset', '-c', '0', pgprog, arg]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise SystemExit('hot_ab: %s exited %d:\n%s' % (' '.join(cmd), p.returncode,
                                                           p.stderr[-1500:]))
        return elapsed_of(p.stderr)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def one_run(ada, prog, arg, opts, shm):
    """(events, the program's own ns less ada's waits) of one run."""
    pin = ['taskset', '-c', '0']
    if ada is None:
        p = subprocess.run(pin + [prog, arg], capture_output=True, text=True, timeout=600)
        return elapsed_of(p.stderr)
    if ada == 'uftrace':
        return one_uftrace(opts, prog.replace('/plain/', '/pg/'), arg, shm)
    out = tempfile.mkdtemp(prefix='hotab.', dir=shm)
    try:
        cmd = [ada, 'record', '--out', out, '--max-disk-mb', '0', '--ring-mb', '512',
               '--max-threads', '2', '--drain-cpu', '1', '--include', prog] + opts + \
              ['--'] + pin + [prog, arg]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise SystemExit('hot_ab: %s exited %d:\n%s' % (' '.join(cmd), p.returncode,
                                                           p.stderr[-1500:]))
        events, ns = elapsed_of(p.stderr)
        return events, (ns - waited_of(out)) if ns is not None else None
    finally:
        shutil.rmtree(out, ignore_errors=True)


def quartiles(v):
    v = sorted(v)
    return {'min': v[0], 'q1': v[(len(v) - 1) // 4], 'median': statistics.median(v)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--build', default=os.path.join(REPO, 'build-bench'))
    ap.add_argument('--reps', type=int, default=15)
    ap.add_argument('--workload', default='fib')
    ap.add_argument('--arg', default='30')
    ap.add_argument('--variants', default='never,excluded,detail')
    ap.add_argument('--uftrace', default='uftrace-pg,uftrace-args',
                    help='uftrace variants beside (uftrace-pg, uftrace-args; "" for none; '
                         'uftrace-args applies to fib only)')
    ap.add_argument('--ada', action='append', help='ada binaries to compare (default: BUILD/ada)')
    ap.add_argument('--json')
    a = ap.parse_args()
    # Absolute: --include matches the module's path as loaded (a relative
    # one would hook nothing and measure nothing).
    a.build = os.path.abspath(a.build)
    prog = os.path.join(a.build, 'bench', 'plain', a.workload)
    adas = [os.path.abspath(x) for x in a.ada] if a.ada else [os.path.join(a.build, 'ada')]
    names = a.variants.split(',')
    shm = '/dev/shm' if os.path.isdir('/dev/shm') else None
    runs = [(ada, v) for ada in adas for v in names]
    if shutil.which('uftrace'):
        runs += [('uftrace', u) for u in a.uftrace.split(',') if u in UFTRACE
                 and (u != 'uftrace-args' or a.workload == 'fib')]
    base, times, events = [], {r: [] for r in runs}, None
    started = datetime.datetime.now(datetime.timezone.utc)
    for rep in range(a.reps):
        order = runs[rep % len(runs):] + runs[:rep % len(runs)]  # rotate who goes first
        ev, ns = one_run(None, prog, a.arg, [], shm)
        base.append(ns)
        events = ev
        for ada, v in order:
            ev, ns = one_run(ada, prog, a.arg, v if ada == 'uftrace' else VARIANTS[v], shm)
            if ev != events or ns is None:
                raise SystemExit('hot_ab: %s %s: %r events, %r ns' % (ada, v, ev, ns))
            if ns <= base[-1]:  # nothing hooked: a wrong --include, say
                raise SystemExit('hot_ab: %s %s: the traced program (%d ns) was not slower '
                                 'than the untraced one (%d ns): were its functions hooked?'
                                 % (ada, v, ns, base[-1]))
            times[(ada, v)].append(ns)
        print('hot_ab: rep %d/%d done' % (rep + 1, a.reps), file=sys.stderr)
    b = statistics.median(base)
    first = runs[0]
    rows = []
    for r in runs:
        per = [(t - b) / events for t in times[r]]
        gap = [(t - f) / events for t, f in zip(times[r], times[first])]
        rows.append({'ada': r[0], 'variant': r[1], 'ns_per_event': quartiles(per),
                     'gap_to_first_ns_per_event': quartiles(gap), 'elapsed_ns': times[r]})
    result = {'date': started.isoformat(timespec='seconds'), 'provenance': provenance(a.build),
              'workload': a.workload, 'arg': a.arg, 'events': events, 'reps': a.reps,
              'untraced_elapsed_ns': base, 'first': {'ada': first[0], 'variant': first[1]},
              'rows': rows, 'load_average': os.getloadavg()}
    path = a.json or os.path.join(REPO, 'bench', 'results',
                                  started.strftime('%Y-%m-%dT%H%M%S') + '-hotab.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=1)
    print('| ada | variant | ns/event min / q1 / median | gap to %s, same rep: min / q1 / median |'
          % first[1])
    print('|---|---|---|---|')
    for r in rows:
        q, g = r['ns_per_event'], r['gap_to_first_ns_per_event']
        who = r['ada'] if r['ada'] == 'uftrace' else os.path.relpath(r['ada'], REPO)
        print('| %s | %s | %.1f / %.1f / %.1f | %+.1f / %+.1f / %+.1f |' % (
            who, r['variant'], q['min'], q['q1'], q['median'], g['min'], g['q1'], g['median']))
    print('hot_ab: %s %s, %d events, untraced median %.1f ms, %d reps; written %s' % (
        a.workload, a.arg, events, b / 1e6, a.reps, path))


if __name__ == '__main__':
    main()
