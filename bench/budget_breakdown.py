#!/usr/bin/env python3
"""Where the CPU of `ada record --overhead-budget 10` goes on the real
programs of bench/real_programs.py (issue 32 item 6): per workload, a
second run's CPU over the untraced run's, split into

  start-up   the same program doing (almost) nothing (a server: started,
             asked one request, stopped), traced minus untraced,
             less that run's drain CPU: the agent's hooking (plan cache
             warm), the recorder's start and end, the symbol files;
  events     the events still written x the program's cost of one event
             (calibrated in the same run, below);
  drain      the drain thread's CPU (the summary line's "drain CPU"), and
             of it the events x the drain's cost of one event (calibrated):
             the rest is its polling while the program runs (a pass each
             millisecond at most when idle) and its start and end;
  counts     the count-only calls x the cost of one count (calibrated);
  rest       what these do not explain (the program's own code slowed by
             the patches, the budget thread's ticks, ring waits, noise).

Calibration, interleaved with the workloads: bench's own loop calling a
one-line function N times, untraced, traced (default settings: two
events a call, the detail lane included, as in the budget runs) and
`--count-only` (one count a call); per event = (traced - untraced - the
drain's CPU) / 2N, per count = (count-only - untraced) / N, both CPU
time of the whole tree (the least of the runs: the one the machine's load
disturbed least), each less the same run with no call (start-up).

  bench/budget_breakdown.py [--ada build/ada] [--reps 3] [--workload sqlite,perl,...]

(--workload as bench/real_programs.py's: a long form, sqlite-long, or
`long` for all five, splits the steady state's CPU.)

Run it under `flock /work/bench.lock` (one or two workloads a run keeps a
locked run under two minutes). Prints a markdown table and writes
bench/results/<date>-budget-breakdown.json."""
import argparse
import datetime
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
import real_programs as rp  # noqa: E402

LOOP_C = r"""#include <stdlib.h>
volatile int sink;
__attribute__((noinline)) int leaf(int x) { sink = x; return x + 1; }
int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int s = 0;
	for (long i = 0; i < n; i++) s = leaf(s);
	return s == (int)n ? 0 : 1;
}
"""
LOOP_CALLS = 2000000    # traced: 4 M events
COUNT_CALLS = 100000000  # count-only: 0.1 s of counts at 1 ns
SUMMARY = {
    'events': re.compile(r'recorded (\d+) events'),
    'drain_s': re.compile(r'drain CPU ([0-9.]+) s'),
    'counts': re.compile(r'(\d+) calls of \d+ count-only functions counted'),
    'hook_ms': re.compile(r'installed \d+ skipped in ([0-9.]+) ms'),
}


def summary_numbers(err):
    """What the recording's summary lines say (sums over its processes)."""
    out = {}
    for key, rx in SUMMARY.items():
        vals = [float(m) for m in rx.findall(err)]
        out[key] = sum(vals) if vals else 0.0
    return out


class Runner:
    def __init__(self, args, work):
        self.ada = os.path.abspath(args.ada)
        self.work = work
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, 'cache'))
        self.out = os.path.join(work, 'out')
        self.err = os.path.join(work, 'record.err')
        self.last = {}

    def wrap(self, opts):
        """A wrap for real_programs' workloads: `ada record`'s stderr (the
        summary) goes to a file, read by summary() after the run."""
        def w(argv):
            shutil.rmtree(self.out, ignore_errors=True)
            return ['sh', '-c', 'exec "$0" "$@" 2>"%s"' % self.err, self.ada, 'record',
                    '--out', self.out] + opts + ['--'] + argv, self.env
        return w

    def summary(self):
        try:
            with open(self.err) as f:
                self.last = summary_numbers(f.read())
        except OSError:
            self.last = {k: 0.0 for k in SUMMARY}
        return self.last

    def timed(self, argv, env=None, stdin=None):
        c0 = rp.children_cpu()
        with open(stdin or os.devnull) as fin:
            p = subprocess.run(argv, stdin=fin, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=env, cwd=self.work, text=True)
        cpu = rp.children_cpu() - c0
        if p.returncode:
            raise RuntimeError('%s exited %d: %s' % (' '.join(argv), p.returncode,
                                                     p.stderr[-400:]))
        self.summary()
        return cpu


def empty_argv(name, w):
    """The workload's program doing almost nothing (None: not measurable);
    a long form's is its short form's."""
    name = name[:-len('-long')] if name.endswith('-long') else name
    if name == 'sqlite':
        return ['sqlite3', ':memory:'], None
    if name == 'perl':
        return ['perl', '-e', '1'], None
    if name == 'python':
        return [sys.executable, '-c', 'pass'], None
    if name == 'gxx':
        empty = os.path.join(w.files, 'empty.cc')
        open(empty, 'w').close()
        return ['g++', '-O1', '-c', empty, '-o', os.path.join(w.work, 'e.o')], None
    return None, None


def empty_server(name, w, wrap):
    """A server started, asked one request and stopped: its CPU (the client's
    taken out, as real_programs does)."""
    saved = rp.REDIS_REQUESTS, rp.NGINX_REQUESTS
    rp.REDIS_REQUESTS, rp.NGINX_REQUESTS = 1, 1
    try:
        return rp.workload_run(w, name[:-len('-long')] if name.endswith('-long') else name)(
            wrap)[1]
    finally:
        rp.REDIS_REQUESTS, rp.NGINX_REQUESTS = saved


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--ada', default=os.path.join(REPO, 'build', 'ada'))
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--workload', default='sqlite,perl,python,redis,nginx,gxx')
    ap.add_argument('--budget', default='10')
    ap.add_argument('--work', default=None)
    ap.add_argument('--no-write', action='store_true')
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix='ada-breakdown-', dir=args.work)
    loads = {'before': os.getloadavg()}
    try:
        runner = Runner(args, work)
        w = rp.Workloads(work)
        loop_src = os.path.join(work, 'loop.c')
        with open(loop_src, 'w') as f:
            f.write(LOOP_C)
        loop = os.path.join(work, 'loop')
        subprocess.run(['cc', '-O2', '-o', loop, loop_src], check=True)
        budget = ['--overhead-budget', args.budget]
        untraced = lambda argv: (argv, None)  # noqa: E731
        calib = {k: [] for k in ('untraced', 'untraced0', 'traced', 'traced0', 'drain',
                                 'count', 'count0', 'cuntraced', 'cuntraced0')}
        res = {}
        names = [n for n in rp.workload_names(args.workload)
                 if shutil.which(rp.PROGRAMS[n] or 'true')]
        for name in names:
            run = rp.workload_run(w, name)
            run(runner.wrap(budget))  # the plan cache and the moves: a second run next
            run(runner.wrap(budget))
            res[name] = {'untraced': [], 'budget': [], 'wall': [], 'empty_untraced': [],
                         'empty_budget': [], 'empty_drain': [], 'summary': []}
        traced = runner.wrap(['--include', 'loop'])
        counted = runner.wrap(['--include', 'loop', '--count-only', 'leaf'])
        for _ in range(args.reps):
            for key, wrap, n in (('untraced', None, LOOP_CALLS), ('traced', traced, LOOP_CALLS),
                                 ('cuntraced', None, COUNT_CALLS),
                                 ('count', counted, COUNT_CALLS)):
                for suffix, calls in (('', n), ('0', 0)):
                    la = [loop, str(calls)]
                    calib[key + suffix].append(
                        runner.timed(wrap(la)[0], runner.env) if wrap else runner.timed(la))
                    if key == 'traced' and calls:
                        calib['drain'].append(runner.last['drain_s'])
            for name in names:
                run = rp.workload_run(w, name)
                r = res[name]
                r['untraced'].append(run(untraced)[1])
                wall, cpu = run(runner.wrap(budget))
                r['budget'].append(cpu)
                r['wall'].append(wall)
                r['summary'].append(dict(runner.summary()))
                argv, _ = empty_argv(name, w)
                if argv:
                    r['empty_untraced'].append(runner.timed(argv))
                    r['empty_budget'].append(runner.timed(runner.wrap(budget)(argv)[0],
                                                          runner.env))
                elif name in ('redis', 'nginx', 'nginx-long'):
                    r['empty_untraced'].append(empty_server(name, w, untraced))
                    r['empty_budget'].append(empty_server(name, w, runner.wrap(budget)))
                    runner.summary()
                if argv or name in ('redis', 'nginx', 'nginx-long'):
                    r['empty_drain'].append(runner.last['drain_s'])
        loads['after'] = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(calib, res, loads, args)


def med(xs):
    return statistics.median(xs) if xs else None


def report(calib, res, loads, args):
    def added(key, base):  # the least of each: the run the load disturbed least
        return (min(calib[key]) - min(calib[key + '0'])) - (min(calib[base]) -
                                                            min(calib[base + '0']))
    per_event = (added('traced', 'untraced') - med(calib['drain'])) / (2 * LOOP_CALLS)
    per_count = added('count', 'cuntraced') / COUNT_CALLS
    print('load average before %s, after %s' % (
        ' '.join('%.1f' % x for x in loads['before']),
        ' '.join('%.1f' % x for x in loads['after'])))
    print('calibration: an event costs the program %.1f ns (+ the drain %.1f ns), '
          'a count %.2f ns' % (per_event * 1e9,
                               med(calib['drain']) / (2 * LOOP_CALLS) * 1e9, per_count * 1e9))
    drain_per_event = med(calib['drain']) / (2 * LOOP_CALLS)
    print('| program | untraced s | budget s (x) | start-up s | events (M) | events s '
          '| drain s (per event, rest) | counts (M) | counts s | rest s |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    table = {}
    for name, r in res.items():
        base, tot = med(r['untraced']), med(r['budget'])
        ev = med([s['events'] for s in r['summary']])
        drain = med([s['drain_s'] for s in r['summary']])
        counts = med([s['counts'] for s in r['summary']])
        start = (med(r['empty_budget']) - med(r['empty_untraced']) - med(r['empty_drain'])
                 if r['empty_budget'] else None)
        ev_s, cnt_s, drain_ev = ev * per_event, counts * per_count, ev * drain_per_event
        rest = tot - base - ev_s - drain - cnt_s - (start or 0)
        table[name] = {'untraced_s': base, 'budget_s': tot, 'ratio': tot / base,
                       'wall_s': med(r['wall']), 'startup_s': start, 'events': ev,
                       'events_s': ev_s, 'drain_s': drain, 'drain_events_s': drain_ev,
                       'counts': counts, 'counts_s': cnt_s, 'rest_s': rest, 'runs': r}
        print('| %s | %.3f | %.3f (%.2fx) | %s | %.2f | %.3f | %.3f (%.3f, %.3f) | %.1f | %.3f '
              '| %.3f |' % (name, base, tot, tot / base,
                            '%.3f' % start if start is not None else '-', ev / 1e6, ev_s, drain,
                            drain_ev, drain - drain_ev, counts / 1e6, cnt_s, rest))
    if args.no_write:
        return
    stamp = datetime.datetime.now().strftime('%Y-%m-%dT%H%M%S')
    path = os.path.join(REPO, 'bench', 'results', stamp + '-budget-breakdown.json')
    with open(path, 'w') as f:
        json.dump({'loadavg': loads, 'reps': args.reps, 'per_event_s': per_event,
                   'per_count_s': per_count, 'calibration': calib, 'table': table,
                   'provenance': provenance(os.path.dirname(os.path.abspath(args.ada)))},
                  f, indent=1)
    print('written: ' + os.path.relpath(path, REPO))


if __name__ == '__main__':
    main()
