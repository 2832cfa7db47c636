#!/usr/bin/env python3
"""ada's benchmark runner: the bench workloads, untraced and under each tracer.

Called by bench/run.sh after it has built everything; see docs/benchmarks.md.
For every workload, and every tracer that applies to it:
  1. one check run (also the warm-up): counts the events the tracer recorded
     for the workload's own functions (bw_*), the bytes it wrote, and for ada
     the hook counts/timings (agent.json) and drain latency (manifest.json);
  2. REPS timed runs, interleaved (rep 1: every tracer, rep 2: every tracer,
     ... in a rotating order), wall clock of the whole command, start-up and
     finalize included; the output directory is removed after each run,
     outside the timed region.
Prints one table and writes the same as JSON under bench/results/.

Only the standard library: runs on a fresh Debian 12 python3.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import provenance  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (program, full-size args, --quick args, tracers that apply, base args).
# Base args: the same program doing (almost) no work; traced minus untraced
# on it is the tracer's fixed cost (start-up + finish), and the difference
# between the full and the base run gives the marginal ns per event.
ALL_TRACERS = ['untraced', 'ada', 'ada-cold', 'ada-exe', 'ada-detail', 'uftrace-pg',
               'uftrace-P-pfe', 'uftrace-P-plain', 'ltrace']
# The detail lane (issue 8), applies to fib only: ada-detail-exe (every
# function of the executable enters the detail lane, 128-byte stacks, the
# ring kept in memory: the capture cost), ada-detail-always (the same,
# every record written to detail.atf), ada-detail-none (the detail lane on
# but a --detail-symbols set that excludes every function: the cost of the
# membership test), uftrace-args (uftrace -pg with -A fib@arg1 -R
# fib@retval: one argument and the return value). ada-detail-preroll: the
# command users run (`--pre-roll-sec 5 --trigger crash`, no crash): the
# detail ring is then derived from the pre-roll (16 MiB per thread, past
# this CPU's L2) where ada-detail-exe keeps the 1 MiB default.
DETAIL_TRACERS = ['ada-detail-exe', 'ada-detail-always', 'ada-detail-none',
                  'ada-detail-preroll', 'uftrace-args']
# What a run without --tracers times: the default set plus the detail lane's
# comparison on fib and the opt-in start-up helper thread on startup (the
# README's tables come from one run: issue 13 item 5). ada-detail-always is left out: it writes every record of every
# repetition to disk (~2 GB per run of fib 32), a test of --detail always,
# not a figure the README cites.
# ada-atf (fib and mixed): ada writing ATF v2 directly (--index-format
# atf, 32 bytes an event) beside its default compact index (the `ada`
# rows): the encodings' cost and bytes per event side by side.
INDEX_TRACERS = ['ada-atf']
DEFAULT_TRACERS = ALL_TRACERS + ['ada-detail-exe', 'ada-detail-none', 'ada-detail-preroll',
                                 'uftrace-args', 'ada-cold-2t'] + INDEX_TRACERS
# ada-cold: ada with an empty hook-plan cache on every run (its first run on
# a machine); only where start-up matters. ada-cold-2t (startup only): the
# same with --analysis-threads 2 (the analysis shared with a
# helper thread, docs/hooks.md).
COLD_ONLY = ('fib', 'startup')
COLD_TRACERS = ('ada-cold', 'ada-cold-2t')
WORKLOADS = {
    'fib': ('fib', ['32'], ['28'], ALL_TRACERS[:-1] + DETAIL_TRACERS + INDEX_TRACERS, ['1']),
    'fib-small': ('fib', ['18'], ['18'], ALL_TRACERS, ['1']),
    'fib-threads': ('fibthreads', ['2', '31'], ['2', '27'], ALL_TRACERS[:-1], ['2', '1']),
    'mixed': ('mixed', ['10000'], ['2000'], ALL_TRACERS[:-1] + INDEX_TRACERS, ['0']),
    'threads': ('threads', ['2', '10000'], ['2', '2000'], ALL_TRACERS[:-1], ['2', '0']),
    'startup': ('startup', [], [], ALL_TRACERS + ['ada-cold-2t'], None),
    'latency': ('latency', ['30', '10000000'], ['5', '10000000'],
                ['untraced', 'ada', 'ada-detail'], None),
}
DEFAULT_ORDER = ['fib', 'fib-small', 'fib-threads', 'mixed', 'threads', 'startup', 'latency']
# startup's runs last 2-50 ms, and its cold/warm ratio (issue 13 item 4)
# moved 1.31-1.60 between runs of 5 (by hand, 5 runs each: warm 22-40 ms,
# cold 31-40): it takes this many times --reps, which costs seconds.
REPS_SCALE = {'startup': 5}
NOT_APPLICABLE = {
    'lttng-ust': 'needs tracepoints compiled into the program (tracepoint() calls or '
                 '-finstrument-functions + liblttng-ust-cyg-profile): does not apply to '
                 'unmodified binaries',
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Runner:
    def __init__(self, args):
        self.a = args
        self.build = os.path.abspath(args.build)
        self.ada = os.path.join(self.build, 'ada')
        self.out = os.path.abspath(args.out_dir or os.path.join(self.build, 'bench_out'))
        self.atf_count = os.path.join(self.build, 'bench', 'atf_count')
        self.detail_args = self.find_detail_args()
        os.makedirs(self.out, exist_ok=True)

    # ---------- commands ----------
    def find_detail_args(self):
        """ada's option that arms the detail lane for every function, if built."""
        if self.a.ada_detail_args is not None:
            return self.a.ada_detail_args.split()
        try:
            h = subprocess.run([self.ada, 'record', '--help'], capture_output=True,
                               text=True, timeout=10)
            text = h.stdout + h.stderr
        except (OSError, subprocess.TimeoutExpired):
            return None
        if re.search(r'--detail MODE', text):
            return ['--detail', 'triggered', '--stack-bytes', '128']
        return None

    def prog(self, variant, name):
        return os.path.join(self.build, 'bench', variant, name)

    def command(self, tracer, prog, args, outdir, check=False):
        plain = [self.prog('plain', prog)] + args
        # -v (check run only, never timed): uftrace prints its patch counts.
        uft = ['uftrace', 'record'] + (['-v'] if check else []) + \
            ['--no-libcall', '--no-event', '-d', outdir]
        if tracer == 'untraced':
            return plain
        # The index lane alone: --detail never (when this ada has it).
        # --max-disk-mb 0: the bench measures recording, not the retention
        # policy (latency's 300 M events are 9.6 GB, past the default budget,
        # which would delete the oldest generations as designed).
        never = (['--detail', 'never'] if self.detail_args else []) + ['--max-disk-mb', '0']
        if tracer in ('ada', 'ada-cold'):
            return [self.ada, 'record', '--out', outdir] + never + ['--'] + plain
        if tracer == 'ada-atf':
            return [self.ada, 'record', '--out', outdir, '--index-format', 'atf'] + never + \
                ['--'] + plain
        if tracer == 'ada-cold-2t':
            return [self.ada, 'record', '--out', outdir] + never + \
                ['--analysis-threads', '2', '--'] + plain
        if tracer == 'ada-exe':  # the executable only, like uftrace
            return [self.ada, 'record', '--out', outdir, '--include', prog] + never + \
                ['--'] + plain
        if tracer.startswith('ada-detail-'):
            if self.detail_args is None:
                return None
            mode = {'ada-detail-exe': ['--detail', 'triggered'],
                    'ada-detail-always': ['--detail', 'always', '--detail-mb', '64'],
                    'ada-detail-none': ['--detail', 'triggered', '--detail-symbols',
                                        'no_function_has_this_name'],
                    'ada-detail-preroll': ['--detail', 'triggered', '--pre-roll-sec', '5',
                                           '--trigger', 'crash']}[tracer]
            return [self.ada, 'record', '--out', outdir, '--include', prog] + mode + \
                ['--stack-bytes', '128', '--'] + plain
        if tracer == 'uftrace-args':
            return uft + ['-A', 'bw_fib@arg1', '-R', 'bw_fib@retval',
                          self.prog('pg', prog)] + args
        if tracer == 'ada-detail':
            if self.detail_args is None:
                return None
            return [self.ada, 'record', '--out', outdir, '--max-disk-mb', '0'] + \
                self.detail_args + ['--'] + plain
        if tracer == 'uftrace-pg':
            return uft + [self.prog('pg', prog)] + args
        if tracer == 'uftrace-P-pfe':
            return uft + ['-P', '.', self.prog('pfe', prog)] + args
        if tracer == 'uftrace-P-plain':
            return uft + ['-P', '.'] + plain
        if tracer == 'ltrace':
            # -x '*': a breakpoint on every function of the main binary.
            return ['ltrace', '-x', '*', '-o', os.path.join(outdir, 'ltrace.txt')] + plain
        raise ValueError(tracer)

    def run_once(self, cmd, outdir, timeout):
        shutil.rmtree(outdir, ignore_errors=True)
        # uftrace renames an existing -d directory to *.old: let it create
        # its own; ada creates --out itself; ltrace needs the directory.
        if cmd[0] == 'ltrace':
            os.makedirs(outdir, exist_ok=True)
        cnt = os.path.join(self.out, 'count.txt')
        if os.path.exists(cnt):
            os.unlink(cnt)
        env = dict(os.environ, BW_COUNT_FILE=cnt)
        if cmd[0] == self.ada:
            # The agent caches hook plans per build-id under $XDG_CACHE_HOME:
            # a bench-owned cache, kept warm between runs (the check run
            # fills it), or an empty one for every ada-cold run.
            cache = os.path.join(self.out, 'plan-cache')
            if os.path.basename(outdir) in COLD_TRACERS:
                cache = os.path.join(self.out, 'plan-cache-cold')
                shutil.rmtree(cache, ignore_errors=True)
            env['XDG_CACHE_HOME'] = cache
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=env, timeout=timeout, cwd=self.out)
        except subprocess.TimeoutExpired:
            return None, None, 'timeout'
        dt = time.perf_counter() - t0
        err = p.stderr.decode(errors='replace')
        if p.returncode != 0:
            return dt, err, f'exit {p.returncode}: {err.strip().splitlines()[-1:] }'
        try:
            with open(cnt) as f:
                err += '\n' + f.read()
        except OSError:
            pass
        return dt, err, None

    # ---------- what a run recorded ----------
    @staticmethod
    def workload_calls(stderr):
        m = re.findall(r'bench: workload=\S+ calls=(\d+) events=(\d+)', stderr or '')
        return int(m[-1][1]) if m else None

    @staticmethod
    def dir_bytes(d):
        total = 0
        for root, _, files in os.walk(d):
            for f in files:
                try:
                    total += os.lstat(os.path.join(root, f)).st_size
                except OSError:
                    pass
        return total

    def inspect(self, tracer, outdir, stderr):
        """Returns dict: bw_events, all_events, bytes, plus ada extras."""
        r = {'bytes': self.dir_bytes(outdir)}
        if tracer.startswith('ada'):
            r.update(self.inspect_ada(outdir))
        elif tracer.startswith('uftrace'):
            r.update(self.inspect_uftrace(outdir))
        elif tracer == 'ltrace':
            r.update(self.inspect_ltrace(outdir))
        return r

    def syms_names(self, piddir):
        """function_id -> name, from the session's pid_N/module_<ID>.syms."""
        names = {}
        # pid_N/module_*.syms (pid_N/modules/ in sessions of builds before)
        for path in (glob.glob(os.path.join(piddir, 'module_*.syms')) +
                     glob.glob(os.path.join(piddir, 'modules', 'module_*.syms'))):
            mod = None
            with open(path, errors='replace') as f:
                lines = f.readlines()
            body = [l.split(' ', 1)[1].strip() for l in lines if l.startswith('body ')]
            if body:  # version 2: the function lines are in the body file
                with open(os.path.join(os.path.dirname(path), body[0]), errors='replace') as f:
                    lines += f.readlines()
            for line in lines:
                if line.startswith('module_id '):
                    mod = int(line.split()[1])
                elif line.startswith('F ') and mod is not None:
                    parts = line.split(None, 5)
                    if len(parts) == 6:
                        names[(mod << 32) | int(parts[1])] = parts[5].strip()
        return names

    def inspect_ada(self, outdir):
        r = {'bw_events': 0, 'all_events': 0, 'exceptions': 0}
        piddirs = glob.glob(os.path.join(outdir, 'session_*', 'pid_*'))
        names = {}
        for pd in piddirs:
            names.update(self.syms_names(pd))
            r.update(self.ada_manifest(pd))
        p = subprocess.run([self.atf_count, outdir], capture_output=True, text=True)
        for line in p.stdout.splitlines():
            f = line.split()
            if f[0] == 'T':
                r['all_events'] = int(f[2])
            elif f[0] == 'F':
                name = names.get(int(f[1], 16), '')
                if name.startswith('bw_'):
                    r['bw_events'] += int(f[2]) + int(f[3])
                    r['exceptions'] += int(f[4])
        if not names and r['all_events']:
            r['bw_events'] = self.count_by_dump(piddirs)
        return r

    def count_by_dump(self, piddirs):
        """Slow fallback when the session has no symbol files: ada dump."""
        n = 0
        for pd in piddirs:
            p = subprocess.Popen([self.ada, 'dump', '--format', 'jsonl', pd],
                                 stdout=subprocess.PIPE, text=True)
            for line in p.stdout:
                if '"function":"bw_' in line.replace(' ', ''):
                    n += 1
            p.wait()
        return n

    def ada_manifest(self, piddir):
        """Hook counts and time (agent.json), drops and drain latency (manifest.json);
        key names as docs/internals.md and the agent write them."""
        r = {}
        agent = load_json(os.path.join(piddir, 'agent.json'))
        if agent:
            r['hooks'] = agent.get('installed')
            r['hooks_skipped'] = sum((agent.get('skipped') or {}).values())
            total_us = (agent.get('hook_time_us') or {}).get('total')
            if total_us is not None:
                r['hook_ms'] = total_us / 1e3
            r['hook_time_us'] = agent.get('hook_time_us')
        man = load_json(os.path.join(piddir, 'manifest.json'))
        if man:
            m = man.get('metrics') or {}
            # A negative value is what the recorder wrote (no valid sample).
            for q in ('p50', 'p99'):
                v = m.get(f'batch_latency_ns_{q}')
                if v is not None:
                    r[f'latency_{q}_ms'] = v / 1e6 if v >= 0 else None
            r['ada_lost_events'] = man.get('lost_events')
            r['ada_drops'] = man.get('drops')
        return r

    def inspect_uftrace(self, outdir):
        p = subprocess.run(['uftrace', 'report', '-d', outdir, '-f', 'call', '--no-pager'],
                           capture_output=True, text=True)
        bw = alln = 0
        for line in p.stdout.splitlines():
            f = line.split()
            if len(f) == 2 and f[0].isdigit():
                alln += 2 * int(f[0])
                if f[1].startswith('bw_'):
                    bw += 2 * int(f[0])
        return {'bw_events': bw, 'all_events': alln}

    def inspect_ltrace(self, outdir):
        bw = alln = 0
        try:
            with open(os.path.join(outdir, 'ltrace.txt'), errors='replace') as f:
                for line in f:
                    if re.match(r'[\w.@]+\(', line):  # one line per call entered
                        alln += 2
                        if line.startswith('bw_'):
                            bw += 2
        except OSError:
            pass
        return {'bw_events': bw, 'all_events': alln}

    # ---------- one workload ----------
    def bench_workload(self, wname):
        prog, full, quick, applies, base = WORKLOADS[wname]
        args = quick if self.a.quick else full
        tracers = [t for t in self.a.tracers if t in applies and
                   (t not in COLD_TRACERS or wname in COLD_ONLY)]
        if 'untraced' not in tracers:
            tracers.insert(0, 'untraced')
        reps = 1 if wname == 'latency' else self.a.reps * REPS_SCALE.get(wname, 1)
        rows = {}
        for t in tracers:
            rows[t] = self.check_run(wname, prog, args, t)
            rows[t]['base_times'] = []
        live = [t for t in tracers if rows[t].get('error') is None]
        for rep in range(reps):
            order = live[rep % len(live):] + live[:rep % len(live)]
            for t in order:
                if wname == 'latency':
                    rows[t]['times'].append(rows[t]['check_time'])
                    continue
                self.timed_run(rows[t], prog, args, 'times')
                if base is not None and rows[t].get('error') is None:
                    self.timed_run(rows[t], prog, base, 'base_times')
            live = [t for t in live if rows[t].get('error') is None]
            log(f'  {wname}: rep {rep + 1}/{reps} done')
        return [self.finish_row(wname, args, rows[t], rows['untraced']) for t in tracers]

    @staticmethod
    def workload_elapsed(stderr):
        """The program's own elapsed seconds (bw_common.h's elapsed_ns)."""
        m = re.findall(r'bench: workload=\S+ .*elapsed_ns=(\d+)', stderr or '')
        return int(m[-1]) / 1e9 if m else None

    @staticmethod
    def ada_ring_waited(outdir):
        """Seconds ada's producer waited for ring space (the manifests'
        threads[].ring_waited_ns). None when there is no manifest, or when
        a program of several threads waited: their waits may overlap in
        time, or another thread ran meanwhile, so no sum of them is the
        program's elapsed time lost (a multi-threaded workload's hot path
        is measured this way only when no thread waited)."""
        total, found, waiters, threads = 0, False, 0, 0
        for path in glob.glob(os.path.join(outdir, 'session_*', 'pid_*', 'manifest.json')):
            try:
                with open(path) as f:
                    m = json.load(f)
            except (OSError, ValueError):
                continue
            found = True
            for t in m.get('threads', []):
                threads += 1
                if t.get('ring_waits', 0) > 0:
                    waiters += 1
                    total += t.get('ring_waited_ns', 0)
        return total / 1e9 if found and (waiters == 0 or threads == 1) else None

    @staticmethod
    def ada_drain_ns(stderr):
        """The drain thread's CPU per event recorded, from ada's summary
        line ("drain CPU 0.141 s (10.0 ns/event)"); None without one."""
        m = re.findall(r'drain CPU [\d.]+ s \(([\d.]+) ns/event\)', stderr or '')
        return float(m[-1]) if m else None

    def timed_run(self, row, prog, args, key):
        t = row['tracer']
        outdir = os.path.join(self.out, t)
        cmd = self.command(t, prog, args, outdir)
        dt, err_text, err = self.run_once(cmd, outdir, self.timeout(t))
        # The hot path (outside the timed region): the program's own
        # elapsed time, less ada's waits for ring space (the drain's
        # share, which the end-to-end time already shows).
        hot = self.workload_elapsed(err_text) if not err else None
        if hot is not None and t.startswith('ada'):
            waited = self.ada_ring_waited(outdir)
            hot = hot - waited if waited is not None else None
        drain = self.ada_drain_ns(err_text) if not err and t.startswith('ada') else None
        shutil.rmtree(outdir, ignore_errors=True)
        if err:
            row['error'] = err
        else:
            row[key].append(dt)
            if key == 'times' and hot is not None:
                row.setdefault('hot_times', []).append(hot)
            if key == 'times' and drain is not None:
                row.setdefault('drain_ns', []).append(drain)
            if key == 'base_times':
                row['base_events'] = self.workload_calls(err_text)

    def timeout(self, tracer):
        return self.a.ltrace_timeout if tracer == 'ltrace' else self.a.timeout

    def check_run(self, wname, prog, args, tracer):
        row = {'tracer': tracer, 'times': []}
        outdir = os.path.join(self.out, tracer)
        cmd = self.command(tracer, prog, args, outdir, check=True)
        if cmd is None:
            row['error'] = 'n/a - not built yet'
            return row
        log(f'  {wname}: check run {tracer}: {" ".join(cmd)}')
        dt, err_text, err = self.run_once(cmd, outdir, self.timeout(tracer))
        if err:
            row['error'] = err if err != 'timeout' else f'> {self.timeout(tracer)} s (timeout)'
            shutil.rmtree(outdir, ignore_errors=True)
            return row
        row['check_time'] = dt
        row['events_expected'] = self.workload_calls(err_text)
        row['stderr_tail'] = (err_text or '').strip().splitlines()[-3:]
        m = re.search(r'latency: (\d+) events/s achieved over ([\d.]+) s, '
                      r'worst batch ([\d.]+) us late', err_text or '')
        patched = re.findall(r'dynamic:\s+patched:\s+(\d+)', err_text or '') + \
            re.findall(r'dynamic: patched all \((\d+)\) functions', err_text or '')
        if patched:  # uftrace -P: functions it patched / failed to patch
            row['hooks'] = sum(int(x) for x in patched)
            row['hooks_skipped'] = sum(int(x) for x in re.findall(
                r'dynamic:\s+failed:\s+(\d+)', err_text or ''))
        if m:  # the latency workload: did the tracer keep the pace?
            row['achieved_events_per_s'] = int(m.group(1))
            row['worst_batch_late_ms'] = float(m.group(3)) / 1e3
        if tracer != 'untraced':
            row.update(self.inspect(tracer, outdir, err_text))
        shutil.rmtree(outdir, ignore_errors=True)
        return row

    def finish_row(self, wname, args, row, base):
        out = {'workload': wname, 'args': args, 'tracer': row['tracer']}
        for k in ('base_times', 'base_events', 'events_expected', 'bw_events', 'all_events', 'exceptions', 'bytes', 'hooks',
                  'hooks_skipped', 'hook_ms', 'hook_time_us', 'latency_p50_ms',
                  'latency_p99_ms', 'achieved_events_per_s', 'worst_batch_late_ms',
                  'ada_lost_events', 'ada_drops', 'error', 'times', 'hot_times', 'drain_ns',
                  'stderr_tail'):
            if k in row:
                out[k] = row[k]
        if not row['times']:
            return out
        med = statistics.median(row['times'])
        out['median_s'] = med
        bmed = statistics.median(base['times']) if base.get('times') else None
        exp = row.get('events_expected')
        if bmed and row['tracer'] != 'untraced':
            out['slowdown'] = med / bmed
            out['added_ms'] = (med - bmed) * 1e3
            if exp:
                out['ns_per_event'] = (med - bmed) * 1e9 / exp
        # The hot path: the program's own time net of ada's ring waits,
        # against the untraced program's own time (bw_common.h).
        if row.get('hot_times') and base.get('hot_times'):
            hmed = statistics.median(row['hot_times'])
            out['hot_median_s'] = hmed
            if exp and row['tracer'] != 'untraced':
                out['hot_ns_per_event'] = \
                    (hmed - statistics.median(base['hot_times'])) * 1e9 / exp
        if row.get('drain_ns'):
            out['drain_ns_per_event'] = statistics.median(row['drain_ns'])
        if row['base_times'] and base.get('base_times') and row['tracer'] != 'untraced':
            bb = statistics.median(base['base_times'])
            tb = statistics.median(row['base_times'])
            out['base_median_s'] = tb
            out['fixed_ms'] = (tb - bb) * 1e3
            dev = (exp or 0) - (row.get('base_events') or 0)
            if bmed and dev > 0:
                out['marginal_ns_per_event'] = ((med - tb) - (bmed - bb)) * 1e9 / dev
        if 'bw_events' in row:
            out['events_lost'] = (exp or 0) - row['bw_events']
            out['mev_per_s'] = row['bw_events'] / med / 1e6
            if row.get('all_events') and exp:
                out['bytes_per_event'] = row['bytes'] / row['all_events']
        elif row['tracer'] == 'untraced' and exp:
            out['mev_per_s'] = exp / med / 1e6  # the rate the workload makes events
        return out


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def machine():
    cpu = 'unknown'
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    return {'cpu': cpu, 'cores': os.cpu_count(), 'kernel': platform.release(),
            'uftrace': first_line(['uftrace', '--version']),
            'ltrace': first_line(['ltrace', '--version'])}


def first_line(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return None


def fmt(v, spec, none='-'):
    return none if v is None else format(v, spec)


def table(rows):
    head = ['workload', 'tracer', 'time (median)', 'slowdown', 'ns added/event',
            'fixed cost ms', 'marginal ns/event', 'hot path ns/event', 'M events/s rec.',
            'drain CPU ns/event', 'events lost',
            'B/event on disk', 'hooks', 'hook time ms', 'drain latency p50/p99 ms']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for r in rows:
        if r.get('error') and not r.get('median_s'):
            cells = [r['workload'], r['tracer'], r['error']] + [''] * (len(head) - 3)
        else:
            fixed = r.get('fixed_ms', r.get('added_ms') if r['workload'] == 'startup' else None)
            lost = r.get('events_lost')
            lat = None
            if r.get('latency_p50_ms') is not None:
                lat = f"{fmt(r['latency_p50_ms'], '.2f')} / {fmt(r.get('latency_p99_ms'), '.2f')}"
            cells = [r['workload'], r['tracer'], fmt(r.get('median_s'), '.4f') + ' s',
                     fmt(r.get('slowdown'), '.2f') + ('x' if r.get('slowdown') else ''),
                     fmt(r.get('ns_per_event'), '.1f'), fmt(fixed, '.1f'),
                     fmt(r.get('marginal_ns_per_event'), '.1f'),
                     fmt(r.get('hot_ns_per_event'), '.1f'),
                     fmt(r.get('mev_per_s'), '.3g'),
                     fmt(r.get('drain_ns_per_event'), '.1f'),
                     fmt(lost, 'd') + (f' of {r["events_expected"]}'
                                       if lost and r.get('events_expected') else ''),
                     fmt(r.get('bytes_per_event'), '.1f'), fmt(r.get('hooks'), 'd'),
                     fmt(r.get('hook_ms'), '.1f'), fmt(lat, 's')]
            if r.get('achieved_events_per_s') is not None:
                cells[-1] += (f" (pace: {r['achieved_events_per_s'] / 1e6:.2f} M events/s "
                              f"achieved, worst batch {r['worst_batch_late_ms']:.1f} ms late)")
            if r.get('error'):
                cells[-1] += ' ERROR: ' + r['error']
        lines.append('| ' + ' | '.join(cells) + ' |')
    for name, why in NOT_APPLICABLE.items():
        lines.append(f'| all | {name} | n/a: {why} |' + ' |' * (len(head) - 3))
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--build', default=os.path.join(REPO, 'build-bench'))
    ap.add_argument('--reps', type=int, default=5, help='timed runs per tracer (median)')
    ap.add_argument('--quick', action='store_true', help='small sizes, for CI-sized runs')
    ap.add_argument('--workloads', default=','.join(DEFAULT_ORDER))
    ap.add_argument('--tracers', default=','.join(DEFAULT_TRACERS))
    ap.add_argument('--out-dir', help='where traces go (default BUILD/bench_out)')
    ap.add_argument('--json', help='default bench/results/<date>.json')
    ap.add_argument('--timeout', type=float, default=300)
    ap.add_argument('--ltrace-timeout', type=float, default=60)
    ap.add_argument('--ada-detail-args', help='ada record options that arm the detail '
                    'lane for all functions (default: found in ada record --help)')
    a = ap.parse_args()
    a.tracers = a.tracers.split(',')
    if a.quick and a.reps == 5 and '--reps' not in sys.argv:
        a.reps = 3
    runner = Runner(a)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()
    rows = []
    for w in a.workloads.split(','):
        log(f'bench: {w}')
        rows += runner.bench_workload(w)
    mach = machine()
    load_after = os.getloadavg()
    print(f"{started.strftime('%Y-%m-%d %H:%M UTC')}; {mach['cpu']}, {mach['cores']} cores, "
          f"Linux {mach['kernel']}; {mach['uftrace']}; median of {a.reps}"
          f"{''.join(f' ({w}: {a.reps * k})' for w, k in REPS_SCALE.items())}"
          f"{' (--quick sizes)' if a.quick else ''}; load average "
          f"{load_before[0]:.1f} before, {load_after[0]:.1f} after\n")
    print(table(rows))
    prov = provenance(a.build)
    print(f"ada at {prov['commit']}{' (uncommitted changes)' if prov['dirty'] else ''}, "
          f"{prov['compiler']['version']}\n")
    result = {'date': started.isoformat(timespec='seconds'), 'machine': mach,
              'provenance': prov,
              'load_average': {'before': load_before, 'after': load_after},
              'config': {'reps': a.reps, 'quick': a.quick, 'out_dir': runner.out,
                         'out_fs': fs_of(runner.out), 'ada_detail_args': runner.detail_args},
              'not_applicable': NOT_APPLICABLE, 'results': rows}
    path = a.json or os.path.join(REPO, 'bench', 'results',
                                  started.strftime('%Y-%m-%dT%H%M%S') + '.json')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(result, f, indent=1)
    log(f'bench: results written to {path}')


def fs_of(path):
    try:
        p = subprocess.run(['df', '-T', path], capture_output=True, text=True)
        f = p.stdout.splitlines()[1].split()
        return f'{f[0]} ({f[1]})'
    except (OSError, IndexError):
        return None


if __name__ == '__main__':
    main()
