#!/usr/bin/env python3
"""The scaling table of docs/benchmarks.md from one bench/scaling.py run
(issue 13 item 3).

  bench/scaling_table.py [--results FILE] [--write] [--docs FILE]

Without --results: the newest bench/results/*-scaling.json that is a full
run (every point of 10/200/5000 functions x 1/2/4/8 threads, ada and
uftrace-pg, not --quick, at least 1 M calls a point). Prints the markdown; --write replaces the
text between <!-- scaling-table:begin --> and <!-- scaling-table:end --> in
docs/benchmarks.md (nothing else). Only the standard library."""
import argparse
import glob
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = '<!-- scaling-table:begin -->', '<!-- scaling-table:end -->'
FULL_FUNCS, FULL_THREADS = [10, 200, 5000], [1, 2, 4, 8]
MIN_FULL_CALLS = 1_000_000


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def is_full(d):
    if not d or d.get('kind') != 'scaling':
        return False
    c = d.get('config', {})
    have = {(r['funcs'], r['threads'], r['tracer']) for r in d.get('results', [])
            if r.get('median_s')}
    return not c.get("quick") and c.get("calls", 0) >= MIN_FULL_CALLS and all(
        (n, t, tr) in have for n in FULL_FUNCS for t in FULL_THREADS
        for tr in ('untraced', 'ada', 'uftrace-pg'))


def newest_full(results):
    for path in sorted(glob.glob(os.path.join(results, '*-scaling.json')), reverse=True):
        d = load(path)
        if is_full(d):
            return path, d
    return None, None


def num(v, spec='.1f'):
    return '-' if v is None else format(v, spec)


def markdown(d, path):
    rows = {(r['funcs'], r['threads'], r['tracer']): r for r in d['results']}
    funcs = d['config']['funcs']
    threads = d['config']['threads']
    prov = d.get('provenance', {})
    mach = d.get('machine', {})
    load = d.get('load_average', {})
    rel = os.path.relpath(path, REPO) if path else '?'
    commit = (prov.get('commit') or '?')[:7] + (' (uncommitted changes)' if prov.get('dirty')
                                                else '')
    out = [f"Run of {d['date'].replace('T', ' ')[:16]} UTC (`{rel}`), ada at {commit}, "
           f"{(prov.get('compiler') or {}).get('version') or '?'}; "
           f"{prov.get('cpu') or mach.get('cpu')}, {prov.get('cores') or mach.get('cores')} "
           f"cores, Linux {prov.get('kernel') or mach.get('kernel')}; {mach.get('uftrace')}; "
           f"{d['config']['calls'] / 1e6:g} M calls a point (shared by the threads), median of "
           f"{d['config']['reps']}, tracers interleaved; caches dropped before each point: "
           f"{'yes' if d['config'].get('drop_caches') else 'no'}; load average "
           f"{load.get('before', [0])[0]:.1f} before, {load.get('after', [0])[0]:.1f} after; "
           f"{d.get('elapsed_s', 0):.0f} s in all.", '']
    head = ['hot functions', 'threads', 'untraced', 'ada ns/event', 'uftrace ns/event',
            'ada / uftrace', 'ada M events/s', 'uftrace M events/s', 'ada lost (drops)',
            'uftrace lost']
    out.append('| ' + ' | '.join(head) + ' |')
    out.append('|' + '---|' * len(head))
    for n in funcs:
        for t in threads:
            u = rows.get((n, t, 'untraced'), {})
            a = rows.get((n, t, 'ada'), {})
            f = rows.get((n, t, 'uftrace-pg'), {})
            am, fm = a.get('marginal_ns_per_event'), f.get('marginal_ns_per_event')
            ratio = f'{am / fm:.2f}×' if am is not None and fm else '-'
            lost = '-'
            if a.get('median_s'):
                lost = f"{num(a.get('events_lost'), 'd')} ({num(a.get('ada_drops_total'), 'd')})"
            cells = [str(n), str(t), num(u.get('median_s'), '.3f') + ' s',
                     num(am), num(fm), ratio,
                     num(a.get('mev_per_s')), num(f.get('mev_per_s')), lost,
                     num(f.get('events_lost'), 'd') if f.get('median_s') else '-']
            for r in (a, f):
                if r.get('error'):
                    cells[-1] += f" {r['tracer']}: {r['error']}"
            out.append('| ' + ' | '.join(cells) + ' |')
    out.append('')
    out.append('ns/event: marginal (start-up and finish excluded: each tracer also ran the '
               'same threads with no round). M events/s: `bw_*` events found in the '
               'recording / the whole traced run (start-up included). Lost: the program\'s '
               'own count − the events in the recording; ada\'s drops: every drop counter '
               'of its manifest.')
    return '\n'.join(out)


def write(docs, text):
    with open(docs) as f:
        s = f.read()
    i, j = s.find(BEGIN), s.find(END)
    if i < 0 or j < i:
        sys.exit(f'scaling_table: {docs} has no {BEGIN} ... {END} block')
    new = s[:i + len(BEGIN)] + '\n' + text + '\n' + s[j:]
    if new != s:
        with open(docs, 'w') as f:
            f.write(new)
    return new != s


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--results', help='one *-scaling.json (default: the newest full run)')
    ap.add_argument('--write', action='store_true', help='replace the docs block')
    ap.add_argument('--docs', default=os.path.join(REPO, 'docs', 'benchmarks.md'))
    a = ap.parse_args()
    if a.results:
        path, d = a.results, load(a.results)
        if not d or d.get('kind') != 'scaling':
            sys.exit(f'scaling_table: {a.results} is not a bench/scaling.py results file')
    else:
        path, d = newest_full(os.path.join(REPO, 'bench', 'results'))
        if not d:
            sys.exit('scaling_table: no full scaling run in bench/results/ '
                     '(bench/run.sh --scaling-only)')
    text = markdown(d, path)
    print(text)
    if a.write:
        changed = write(a.docs, text)
        print(f"scaling_table: {a.docs} {'updated' if changed else 'already up to date'}",
              file=sys.stderr)


if __name__ == '__main__':
    main()
