#!/usr/bin/env python3
"""What process creation costs under ada (issue 32, item 2): fork + _exit,
fork + exec /bin/true, a bash script of 300 `$(f $i)` subshells, a small
make build and (workload cmake, not in the default set) a cmake configure
and build of the same sources, untraced vs `ada record` vs `uftrace record
-P .` (when uftrace is installed; else the table says so), interleaved run
by run.

  bench/fork_bench.py [--ada build/ada] [--reps 5] [--workload fork,exec,bash,make]
                      [--n-fork 50] [--n-exec 20] [--no-uftrace] [--ada-before PATH]
                      [--split] [--delete-each]

--ada-before PATH adds a column for another build of ada (say, before a
change), in the same rotation. --split adds two more of the same build:
`ada --detail never` and `ada` hooking nothing (`--include-symbol` of a
name no image has: the agent, the arenas, the files and the drain's work
per process, no traced call), and prints what ada adds split three ways
(per process: nothing hooked; the traced calls without the detail lane;
the detail lane), per child for fork/exec, per subshell for bash. Each ada build has a plan cache of its own
(XDG_CACHE_HOME under the work directory: two builds sharing one would
remove each other's files of the same image at each store), filled by one
untimed run of each workload before the timed ones: the table is the warm
case, as a user's second run sees it.

Workload bashloop (not in the default set) is the bash script's 300
subshells each running a 40-turn loop of its own (about 15 times the
traced events a subshell). With --split and both bash and bashloop, the
events a subshell makes are counted (one more untimed `ada` run of each,
its manifests' events_written) and the traced calls' and the detail
lane's parts are each split again, along the line through the two
workloads' points, into a cost per event and a part fixed per subshell
(what a subshell costs before its first event and whatever it does not
make more of as it makes more events: its rings' first pages, the fork's
copy of the patched text, its thread's files in the drain).

Per workload and variant: the median over the runs of the wall time and
of the CPU time of the whole process tree (the recorder's included:
RUSAGE_CHILDREN), and for fork/exec the program's own medians per child
(from fork to the end of wait4; the child's own CPU time from wait4's
rusage). Ratios are to the untraced median of the same run. The load
average before and after is printed and stored: on a shared machine the
wall times mean little without it, the CPU times more.

Run it under `flock /work/bench.lock` (no two measurements at once) and
keep each run under two minutes: one workload at a time when the machine
is busy. Writes bench/results/<date>-fork.json (with bench/provenance.py's
record) and prints a table. Only the standard library (and cc, bash,
make)."""
import argparse
import datetime
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import REPO, provenance, session_fs, session_fs_line  # noqa: E402

SUBSHELLS = 300
BASH_SCRIPT = """f() { echo $(( $1 * 2 )); }
for i in $(seq %d); do x=$(f $i); done
echo "$x"
""" % SUBSHELLS
BASHLOOP_TURNS = 40
BASHLOOP_SCRIPT = """f() { local k=0; while [ $k -lt %d ]; do k=$((k+1)); done; echo $(( $1 * 2 )); }
for i in $(seq %d); do x=$(f $i); done
echo "$x"
""" % (BASHLOOP_TURNS, SUBSHELLS)

# Sessions are removed with the work directory at the end, not after
# each run: on an ext4 without a journal every inode deleted in the last
# 1-6 minutes slows each new one (bench/provenance.py, session_fs), so
# removing one run's session would slow the next runs' process starts by
# the benchmark's own doing. --delete-each restores the removal per run.
DELETE_EACH = False

SPLIT_NODETAIL = 'ada-nodetail'
SPLIT_NOHOOK = 'ada-nohook'
NO_SUCH_SYMBOL = 'ada_fork_bench_no_such_symbol'

MAKE_SOURCES = 6  # a.c ... f.c, one object each, linked into one program


def write_make_tree(d):
    os.makedirs(d)
    names = [chr(ord('a') + i) for i in range(MAKE_SOURCES)]
    for i, n in enumerate(names):
        with open(os.path.join(d, n + '.c'), 'w') as f:
            f.write('int f_%s(int x) { return x * %d + 1; }\n' % (n, i + 2))
    with open(os.path.join(d, 'main.c'), 'w') as f:
        f.write(''.join('int f_%s(int);\n' % n for n in names))
        f.write('int main(void) { int s = 0;\n')
        f.write(''.join('s += f_%s(s);\n' % n for n in names))
        f.write('return s == 0; }\n')
    with open(os.path.join(d, 'CMakeLists.txt'), 'w') as f:
        f.write('cmake_minimum_required(VERSION 3.13)\nproject(fb C)\n')
        f.write('add_executable(prog %s)\n' % ' '.join(n + '.c' for n in names + ['main']))
    objs = ' '.join(n + '.o' for n in names + ['main'])
    with open(os.path.join(d, 'Makefile'), 'w') as f:
        f.write('prog: %s\n\tcc -o prog %s\n' % (objs, objs))
        f.write('%.o: %.c\n\tcc -O0 -c $< -o $@\n')


def clean_make_tree(d):
    for n in os.listdir(d):
        if n.endswith('.o') or n == 'prog':
            os.unlink(os.path.join(d, n))


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_timed(argv, cwd, out_dir, env=None):
    """(wall s, tree CPU s, stdout) of one run; raises on failure."""
    c0, t0 = children_cpu(), time.monotonic()
    p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300, env=env)
    wall, cpu = time.monotonic() - t0, children_cpu() - c0
    if p.returncode != 0:
        raise RuntimeError('%s exited %d: %s' % (' '.join(argv), p.returncode,
                                                 p.stderr.decode(errors='replace')[-400:]))
    if out_dir and DELETE_EACH:
        shutil.rmtree(out_dir, ignore_errors=True)
    return wall, cpu, p.stdout.decode(errors='replace')


def per_child(text):
    m = re.search(r'wall_median_us=([\d.]+) wall_min_us=([\d.]+) child_cpu_median_us=([\d.]+)',
                  text)
    if not m:
        return None
    q = re.search(r'child_runq_median_us=(-?[\d.]+)', text)
    f = re.search(r'child_minflt_median=([\d.]+)', text)
    return tuple(float(x) for x in m.groups()) + (float(q.group(1)) if q else -1.0,
                                                  float(f.group(1)) if f else -1.0)


def variants(args, work):
    """name -> f(argv, tag) -> (argv, output directory, environment)."""
    v = {'untraced': lambda argv, tag: (argv, None, None)}

    def ada_variant(binary, name, opts=()):
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, 'cache-' + name))

        def wrap(argv, tag):
            out = os.path.join(work, name + '-' + tag)
            return [binary, 'record', '--out', out] + list(opts) + ['--'] + argv, out, env
        return wrap
    v['ada'] = ada_variant(args.ada, 'ada')
    if args.ada_before:
        v['ada-before'] = ada_variant(args.ada_before, 'before')
    if args.split:
        v[SPLIT_NODETAIL] = ada_variant(args.ada, 'nodetail', ('--detail', 'never'))
        v[SPLIT_NOHOOK] = ada_variant(args.ada, 'nohook', ('--include-symbol', NO_SUCH_SYMBOL))
    if args.uftrace:
        def uft(argv, tag):
            out = os.path.join(work, 'uftrace-' + tag)
            return [args.uftrace, 'record', '-P', '.', '-d', out, '--'] + argv, out, None
        v['uftrace'] = uft
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--ada', default=os.path.join(REPO, 'build', 'ada'))
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--workload', default='fork,exec,bash,make')
    ap.add_argument('--n-fork', type=int, default=50)
    ap.add_argument('--n-exec', type=int, default=20)
    ap.add_argument('--no-uftrace', action='store_true')
    ap.add_argument('--ada-before', help='another ada build, as a column of its own')
    ap.add_argument('--split', action='store_true',
                    help='add --detail never and nothing-hooked columns and split what ada adds')
    ap.add_argument('--delete-each', action='store_true',
                    help="remove each run's session right after it (default: at the end)")
    args = ap.parse_args()
    global DELETE_EACH
    DELETE_EACH = args.delete_each
    args.uftrace = None if args.no_uftrace else shutil.which('uftrace')
    wanted = args.workload.split(',')
    for w in wanted:
        if w not in ('fork', 'exec', 'bash', 'bashloop', 'make', 'cmake'):
            sys.exit('fork_bench: unknown workload %r: fork, exec, bash, bashloop, make or '
                     'cmake' % w)
    if not os.access(args.ada, os.X_OK):
        sys.exit('fork_bench: %s is not an executable ada; build it or pass --ada' % args.ada)
    work = tempfile.mkdtemp(prefix='ada-forkbench-', dir=os.environ.get('TMPDIR'))
    try:
        prog = os.path.join(work, 'forkexec')
        subprocess.run(['cc', '-O2', '-o', prog,
                        os.path.join(REPO, 'bench', 'workloads', 'forkexec.c')], check=True)
        script = os.path.join(work, 'sub.sh')
        with open(script, 'w') as f:
            f.write(BASH_SCRIPT)
        loop_script = os.path.join(work, 'subloop.sh')
        with open(loop_script, 'w') as f:
            f.write(BASHLOOP_SCRIPT)
        mk = os.path.join(work, 'mk')
        write_make_tree(mk)
        fs = session_fs(work)
        print(session_fs_line(fs))
        loads = {'before': os.getloadavg()}
        argvs = {'fork': [prog, 'fork', str(args.n_fork)],
                 'exec': [prog, 'exec', str(args.n_exec)],
                 'bash': ['bash', script], 'bashloop': ['bash', loop_script],
                 'make': ['make', '-s', '-j1'],
                 'cmake': ['sh', '-c', 'rm -rf cb && cmake -S mk -B cb >/dev/null && '
                           'cmake --build cb >/dev/null']}
        vs = variants(args, work)
        res = {w: {v: [] for v in vs} for w in wanted}
        events = {}
        if args.split and 'bash' in wanted and 'bashloop' in wanted:
            for w in ('bash', 'bashloop'):  # untimed: the events a subshell makes
                argv, out, env = vs['ada'](argvs[w], '%s-count' % w)
                run_timed(argv, work, None, env)
                events[w] = session_events(out) / SUBSHELLS
                shutil.rmtree(out, ignore_errors=True)
        for w in wanted:  # untimed: each ada build's plan cache filled
            for v, wrap in vs.items():
                if v.startswith('ada'):
                    clean_make_tree(mk)
                    argv, out, env = wrap(argvs[w], '%s-warm' % w)
                    run_timed(argv, mk if w == 'make' else work, out, env)
        for rep in range(args.reps):
            for w in wanted:
                for v, wrap in vs.items():
                    if w == 'make':
                        clean_make_tree(mk)
                    argv, out, env = wrap(argvs[w], '%s-%d' % (w, rep))
                    wall, cpu, text = run_timed(argv, mk if w == 'make' else work, out, env)
                    res[w][v].append({'wall_s': wall, 'cpu_s': cpu, 'per_child': per_child(text)})
        loads['after'] = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(args, res, loads, events, fs)


def session_events(out):
    """The events of every process of the one session under out (the sum
    of its manifests' metrics.events_written)."""
    n = 0
    for root, _, files in os.walk(out):
        if 'manifest.json' in files and os.path.basename(root).startswith('pid_'):
            with open(os.path.join(root, 'manifest.json')) as f:
                n += json.load(f).get('metrics', {}).get('events_written', 0)
    return n


def split_per_event(table, events):
    """The bash and bashloop splits' traced calls and detail lane, each as
    ns per event and ms fixed per subshell (the line through the two
    points); None without both."""
    a, b = table.get('bash', {}).get('split'), table.get('bashloop', {}).get('split')
    if not a or not b or len(events) < 2 or events['bashloop'] <= events['bash']:
        return None
    de = events['bashloop'] - events['bash']
    out = {'events_per_subshell': dict(events)}
    for k in ('calls', 'detail'):
        slope = (b[k] - a[k]) / de  # ms per event
        out[k] = {'ns_per_event': slope * 1e6, 'fixed_ms': a[k] - slope * events['bash']}
    return out


def split_added(args, w, rows):
    """What ada adds, split (--split): nothing hooked over untraced (per
    process: agent, arena, files, drain), the traced calls over that (with
    the fork's copy of the patched text), the detail lane over
    --detail never; ms per child (fork, exec: the child's CPU) or per
    subshell (bash: the tree's CPU), None for the other workloads."""
    if any(v not in rows for v in ('untraced', 'ada', SPLIT_NODETAIL, SPLIT_NOHOOK)):
        return None
    if w in ('fork', 'exec'):
        key, scale, unit = 'child_cpu_median_ms', 1.0, 'child CPU per child'
    elif w in ('bash', 'bashloop'):
        key, scale, unit = 'cpu_s', 1000.0 / SUBSHELLS, 'tree CPU per subshell'
    else:
        return None
    val = {v: rows[v].get(key) for v in ('untraced', 'ada', SPLIT_NODETAIL, SPLIT_NOHOOK)}
    if any(x is None for x in val.values()):
        return None
    return {'unit': unit,
            'per_process': (val[SPLIT_NOHOOK] - val['untraced']) * scale,
            'calls': (val[SPLIT_NODETAIL] - val[SPLIT_NOHOOK]) * scale,
            'detail': (val['ada'] - val[SPLIT_NODETAIL]) * scale}


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def report(args, res, loads, events, fs):
    print('load average before %.2f %.2f %.2f, after %.2f %.2f %.2f' %
          (tuple(loads['before']) + tuple(loads['after'])))
    if not args.uftrace:
        print('uftrace: not installed (or --no-uftrace): no uftrace column')
    table = {}
    for w, byv in res.items():
        base = byv['untraced']
        bw, bc = med([r['wall_s'] for r in base]), med([r['cpu_s'] for r in base])
        for v, runs in byv.items():
            wall, cpu = med([r['wall_s'] for r in runs]), med([r['cpu_s'] for r in runs])
            row = {'wall_s': wall, 'cpu_s': cpu, 'wall_x': wall / bw if bw else None,
                   'cpu_x': cpu / bc if bc else None, 'runs': runs}
            pcs = [r['per_child'] for r in runs if r['per_child']]
            if pcs:
                row['child_wall_median_ms'] = med([p[0] for p in pcs]) / 1000
                row['child_wall_min_ms'] = min(p[1] for p in pcs) / 1000
                row['child_cpu_median_ms'] = med([p[2] for p in pcs]) / 1000
                rq = med([p[3] for p in pcs if p[3] >= 0])
                row['child_runq_median_ms'] = rq / 1000 if rq is not None else None
                row['child_minflt_median'] = med([p[4] for p in pcs if p[4] >= 0])
            table.setdefault(w, {})[v] = row
            extra = ''
            if pcs:
                extra = '  per child: wall median %.3f ms (min %.3f), child CPU %.3f ms' % (
                    row['child_wall_median_ms'], row['child_wall_min_ms'],
                    row['child_cpu_median_ms'])
                if row['child_runq_median_ms'] is not None:
                    extra += ', waiting for a CPU %.3f ms' % row['child_runq_median_ms']
                if row['child_minflt_median'] is not None:
                    extra += ', %.0f page faults' % row['child_minflt_median']
            print('%-5s %-12s wall %8.3f s (%5.2fx)  cpu %7.3f s (%5.2fx)%s' % (
                w, v, wall, row['wall_x'] or 0, cpu, row['cpu_x'] or 0, extra))
    if args.split:
        for w, rows in table.items():
            split = split_added(args, w, rows)
            if split:
                rows['split'] = split
                print('%-5s split, %s added: %s' % (w, split['unit'], ', '.join(
                    '%s %.3f ms' % (k, split[k]) for k in ('per_process', 'calls', 'detail'))))
        per_event = split_per_event(table, events)
        if per_event:
            table['bash']['per_event'] = per_event
            print('bash  events a subshell: %.0f (bashloop %.0f); per event and fixed per '
                  'subshell: %s' % (events['bash'], events['bashloop'], ', '.join(
                      '%s %.1f ns + %.3f ms' % (k, per_event[k]['ns_per_event'],
                                                per_event[k]['fixed_ms'])
                      for k in ('calls', 'detail'))))
    os.makedirs(os.path.join(REPO, 'bench', 'results'), exist_ok=True)
    name = datetime.datetime.now().strftime('%Y-%m-%dT%H%M%S') + '-fork.json'
    path = os.path.join(REPO, 'bench', 'results', name)
    with open(path, 'w') as f:
        prov = provenance(os.path.dirname(os.path.abspath(args.ada)))
        json.dump({'provenance': prov, 'session_fs': fs, 'load_average': loads, 'reps': args.reps,
                   'n_fork': args.n_fork, 'n_exec': args.n_exec, 'table': table}, f, indent=1)
    print('wrote %s' % path)


if __name__ == '__main__':
    main()
