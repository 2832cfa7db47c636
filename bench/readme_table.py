#!/usr/bin/env python3
"""Regenerates the README's performance table from the newest full run in
bench/results/ (issue 13 item 5: one run, not assembled from several).

A full run is a bench/bench.py results file that is not --quick and holds
every default workload (fib, fib-small, fib-threads, mixed, threads,
startup, latency) with ada and uftrace-pg; the newest bench/micro.py file
(not --quick) adds the pipeline-without-hooks lines. The detail lane's
table (issue 8) comes from the same full run's fib rows (ada-detail-exe,
ada-detail-none, ada-exe, uftrace-args, uftrace-pg), with ada attach's
pause from the newest bench/attach_bench.py file (*-attach.json) and the
pinned A/B of the detail modes from the newest bench/hot_ab.py file
(*-hotab.json, 10 runs or more). The text between
<!-- bench-table:begin --> and <!-- bench-table:end --> in README.md is
replaced; nothing else is touched.

  bench/readme_table.py [--results DIR] [--readme FILE] [--check] [--print]

--check: exit 1 when the README is not what the newest run gives (CI-able).
Only the standard library."""
import argparse
import glob
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FULL = ['fib', 'fib-small', 'fib-threads', 'mixed', 'threads', 'startup', 'latency']
UFTRACE = ['uftrace-pg', 'uftrace-P-pfe', 'uftrace-P-plain']
BEGIN, END = '<!-- bench-table:begin -->', '<!-- bench-table:end -->'


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def newest_full(results):
    for path in sorted(glob.glob(os.path.join(results, '*.json')), reverse=True):
        if path.endswith(('-micro.json', '-attach.json', '-scaling.json')):
            continue
        d = load(path)
        if not d or not isinstance(d.get('results'), list) or d.get('config', {}).get('quick'):
            continue
        have = {(r['workload'], r['tracer']) for r in d['results'] if r.get('median_s')}
        if all((w, 'ada') in have for w in FULL) and all(
                (w, 'uftrace-pg') in have for w in FULL if w not in ('fib-small', 'latency')):
            return path, d
    return None, None


def newest_micro(results):
    for path in sorted(glob.glob(os.path.join(results, '*-micro.json')), reverse=True):
        d = load(path)
        if d and not d.get('quick'):
            return path, d
    return None, None


def newest_hotab(results, workload='fib'):
    for path in sorted(glob.glob(os.path.join(results, '*-hotab.json')), reverse=True):
        d = load(path)
        if d and isinstance(d.get('rows'), list) and d.get('reps', 0) >= 10 and \
                d.get('workload') == workload:
            return path, d
    return None, None


def hotab_rows(hpath, h):
    """bench/hot_ab.py's pinned A/B: the excluded set's and the detail
    lane's gap to --detail never, same rep, quartiles; and, when uftrace
    ran beside, the pinned ratios."""
    if not h or h.get('first', {}).get('variant') != 'never':
        return []
    by = {r['variant']: r for r in h['rows'] if r['ada'] == h['first']['ada']}
    hp = h.get('provenance') or {}
    src = (f"`bench/hot_ab.py`, `bench/results/{os.path.basename(hpath)}`, {h.get('date')}, "
           f"commit {(hp.get('commit') or '?')[:12]}; `{h['workload']} {h['arg']}` pinned, "
           f"{h['reps']} interleaved runs each")
    out = []
    n = by.get('never', {}).get('ns_per_event', {})
    for v, label in (('excluded', 'set excluding the function'),
                     ('detail', 'detail lane on every call')):
        r = by.get(v)
        if not r:
            continue
        g, q = r['gap_to_first_ns_per_event'], r['ns_per_event']
        target = ''
        if v == 'excluded':
            target = f'≤ 2 ns — {"met" if g["median"] <= 2 else "missed"}'
        out.append(f'| hooks\' own cost, pinned A/B ({src}): {label} vs `--detail never` | '
                   f'{q["median"]:.1f} vs {n.get("median", 0):.1f} ns/event, gap median '
                   f'{g["median"]:+.1f} (first quartile {g["q1"]:+.1f}) | | | {target} |')
    # uftrace pinned the same way (its recorder on the other CPU), when run.
    uf = {r['variant']: r for r in h['rows'] if r['ada'] == 'uftrace'}
    for v, u, label in (('never', 'uftrace-pg', 'index lane (`--detail never`) vs `-pg`'),
                        ('detail', 'uftrace-args', 'detail lane on every call vs `-A/-R`')):
        if v in by and u in uf:
            av, uv = by[v]['ns_per_event']['median'], uf[u]['ns_per_event']['median']
            out.append(f'| the same, pinned beside uftrace, `{h["workload"]} {h["arg"]}` '
                       f'(executable only, as `-pg`): {label} | {av:.1f} ns/event | '
                       f'{uv:.1f} | {av / uv:.2f}× | ≤ 1/3 — '
                       f'{"met" if av / uv <= 1 / 3 else "missed"} |')
    return out


def newest_attach(results):
    for path in sorted(glob.glob(os.path.join(results, '*-attach.json')), reverse=True):
        d = load(path)
        if d and isinstance(d.get('rows'), list) and d.get('warm_median'):
            return path, d
    return None, None


def row(d, w, t):
    for r in d['results']:
        if r['workload'] == w and r['tracer'] == t and r.get('median_s'):
            return r
    return None


def num(v, spec='.1f'):
    return '-' if v is None else format(v, spec)


def span(vals, spec='.1f', unit=''):
    vals = [v for v in vals if v is not None]
    if not vals:
        return '-'
    lo, hi = format(min(vals), spec), format(max(vals), spec)
    return f'{lo}{unit}' if lo == hi else f'{lo}–{hi}{unit}'


def ratio(a, bs):
    bs = [b for b in bs if b]
    if a is None or not bs:
        return '', None
    rs = [a / b for b in bs]
    return span(rs, '.2f', '×'), min(rs)


def per_event_row(d, w, label):
    a = row(d, w, 'ada')
    us = [row(d, w, t) for t in UFTRACE]
    av = a.get('ns_per_event') if a else None
    uv = [u.get('ns_per_event') for u in us if u]
    rtext, best = ratio(av, uv)
    ok = best is not None and max(av / u for u in uv if u) <= 1 / 3
    # uftrace -pg traces the executable alone: ada-exe is the like-for-like
    # coverage, shown beside; the target is judged on ada's full coverage.
    e = row(d, w, 'ada-exe')
    ev = e.get('ns_per_event') if e else None
    exe = f' (executable only: {num(ev)}, {ratio(ev, uv)[0]})' if ev is not None and uv else ''
    return (f'| ns added per event, {label} | {num(av)}{exe} | {span(uv)} | {rtext} | '
            f'≤ 1/3 — {"met" if ok else "missed"} |')


def startup_reps(d):
    """' (startup: N)' when the startup rows ran more times than --reps
    (bench.py's REPS_SCALE); '' otherwise."""
    r = row(d, 'startup', 'ada')
    n = len(r.get('times') or []) if r else 0
    return f' (`startup`: {n})' if n > (d['config'].get('reps') or 0) else ''


def hot(d, w, t):
    r = row(d, w, t)
    return r.get('hot_ns_per_event') if r else None


def hot_row(d, w, label):
    """The hook's own cost (bench.py's hot path column: the program's own
    time, ada's waits for ring space taken out), judged like
    per_event_row: ada's full coverage against uftrace's; None before the
    runs that have the column."""
    av = hot(d, w, 'ada')
    uv = [hot(d, w, t) for t in UFTRACE if hot(d, w, t)]
    if av is None or not uv:
        return None
    rtext, _ = ratio(av, uv)
    ok = max(av / u for u in uv) <= 1 / 3
    ev = hot(d, w, 'ada-exe')
    exe = f' (executable only: {num(ev)}, {ratio(ev, uv)[0]})' if ev is not None else ''
    return (f'| hot path ns per event (the program\'s own time; ada\'s waits for ring space '
            f'out), {label} | {num(av)}{exe} | {span(uv)} | {rtext} | ≤ 1/3 — '
            f'{"met" if ok else "missed"} |')


def rate_row(d, w, label, target):
    a = row(d, w, 'ada')
    av = a.get('mev_per_s') if a else None
    uv = [u.get('mev_per_s') for u in (row(d, w, t) for t in UFTRACE) if u]
    rtext, _ = ratio(av, uv)
    ok = av is not None and av >= target
    return (f'| events/s end to end, {label} | {num(av)} M | {span(uv)} M | '
            f'{rtext.replace("×", "") + "×" if rtext else ""} | ≥ {target} M — '
            f'{"met" if ok else "missed"} |')


def bytes_row(d, w, label, target):
    """Bytes on disk per event: the whole recording directory (index,
    detail, symbols, manifests) over every event it holds, beside
    uftrace's data directory over its events."""
    a = row(d, w, 'ada')
    av = a.get('bytes_per_event') if a else None
    uv = [u.get('bytes_per_event') for u in (row(d, w, t) for t in UFTRACE) if u]
    if av is None:
        return None
    rtext, _ = ratio(av, uv)
    ok = av <= target
    return (f'| bytes on disk per event, {label} (the whole recording) | {num(av, ".2f")} | '
            f'{span(uv, ".1f")} | {rtext} | ≤ {target} — {"met" if ok else "missed"} |')


def drain_row(d):
    """The drain thread's CPU per event in the recordings themselves
    (bench.py's drain column); None before the runs that have it."""
    cells = []
    for w in ('fib', 'fib-threads', 'mixed'):
        r = row(d, w, 'ada')
        if r and r.get('drain_ns_per_event') is not None:
            cells.append((w, r['drain_ns_per_event'], r.get('mev_per_s')))
    if not cells:
        return None
    text = '; '.join(f'`{w}` {v:.1f} (at {num(m)} M events/s)' for w, v, m in cells)
    ok = all(v <= 5 for _, v, _ in cells)
    return (f'| drain CPU per event (the drain thread\'s own CPU / events recorded) | '
            f'{text} | | | ≤ 5 ns — {"met" if ok else "missed"} |')


def marginal(d, w, t):
    r = row(d, w, t)
    return r.get('marginal_ns_per_event') if r else None


def detail_table(path, d, apath, a, hpath=None, h=None):
    """The detail lane (issue 8) from the full run's fib rows, and ada
    attach (issue 10) from its own file; empty when the run has neither."""
    det, exe = marginal(d, 'fib', 'ada-detail-exe'), marginal(d, 'fib', 'ada-exe')
    none, args = marginal(d, 'fib', 'ada-detail-none'), marginal(d, 'fib', 'uftrace-args')
    pg = marginal(d, 'fib', 'uftrace-pg')
    pre = marginal(d, 'fib', 'ada-detail-preroll')
    rows = []
    if det is not None and args:
        ok = det / args <= 1 / 3
        rows.append(f'| marginal ns per event, detail lane on for every function, 128-byte '
                    f'stacks, `fib` | {num(det)} (index lane alone {num(exe)}) | {num(args)} '
                    f'(`-A bw_fib@arg1 -R bw_fib@retval`; `-pg` alone {num(pg)}) | '
                    f'{det / args:.2f}× | ≤ 1/3 — {"met" if ok else "missed"} |')
    if pre is not None and args:
        rows.append(f'| the same as users run it: `--pre-roll-sec 5 --trigger crash` (detail ring '
                    f'derived: 16 MiB per thread) | {num(pre)} | {num(args)} | '
                    f'{pre / args:.2f}× | ≤ 1/3 — {"met" if pre / args <= 1 / 3 else "missed"} |')
    hdet, hargs = hot(d, 'fib', 'ada-detail-exe'), hot(d, 'fib', 'uftrace-args')
    if hdet is not None and hargs:
        rows.append(f'| hot path ns per event (the program\'s own time; ada\'s waits for ring '
                    f'space out), the same detail lane | {num(hdet)} (index lane alone '
                    f'{num(hot(d, "fib", "ada-exe"))}) | {num(hargs)} | {hdet / hargs:.2f}× | '
                    f'≤ 1/3 — {"met" if hdet / hargs <= 1 / 3 else "missed"} |')
    hnone, hexe = hot(d, 'fib', 'ada-detail-none'), hot(d, 'fib', 'ada-exe')
    if hnone is not None and hexe is not None:
        rows.append(f'| hot path, set excluding the function vs `--detail never` | {num(hnone)} '
                    f'vs {num(hexe)} ns/event ({hnone - hexe:+.1f}) | | | ≤ 2 ns — '
                    f'{"met" if hnone - hexe <= 2 else "missed"} |')
    if none is not None and exe is not None:
        rows.append(f'| detail lane on, set excluding the function, vs `--detail never` (same '
                    f'run) | {num(none)} vs {num(exe)} ns/event ({none - exe:+.1f}) | | | '
                    f'≤ 2 ns — {"met" if none - exe <= 2 else "missed"} |')
    rows.extend(hotab_rows(hpath, h))
    mpath, mh = newest_hotab(os.path.dirname(hpath), 'mixed') if hpath else (None, None)
    rows.extend(r for r in hotab_rows(mpath, mh) if 'pinned beside uftrace' in r)
    if a:
        wm = a['warm_median']
        cold = [r for r in a['rows'] if r.get('cache') == 'cold']
        cp = f', {num(cold[0].get("pause_ms"))} ms cold' if cold else ''
        pause = wm.get('pause_ms')
        ok = pause is not None and pause <= 50
        rows.append(f'| `ada attach` pause, 10 000-function program with 2 busy threads | '
                    f'{num(pause)} ms warm plan cache (median of {len(a["rows"]) - len(cold)})'
                    f'{cp}; detach {num(wm.get("detach_ms"))} ms; first event '
                    f'{num(wm.get("first_event_ms"))} ms after the command starts | uftrace '
                    f'cannot attach | | ≤ 50 ms warm — {"met" if ok else "missed"} |')
    if not rows:
        return ''
    head = "The detail lane, from the same run's `fib` rows"
    if a:
        ap = a.get('provenance') or {}
        head += (f", and `ada attach` (`bench/attach_bench.py`, "
                 f"`bench/results/{os.path.basename(apath)}`, {a.get('date')}, commit "
                 f"{(ap.get('commit') or '?')[:12]})")
    return '\n'.join(['', head + ':', '',
                      '| measure | ada | uftrace | ratio | target |', '|---|---|---|---|---|']
                     + rows)


def table(path, d, mpath, m, apath=None, att=None, hpath=None, hab=None):
    p = d.get('provenance') or {}
    mach = d.get('machine', {})
    lines = []
    commit = (p.get('commit') or '')[:12] or 'not recorded (a run from before bench/provenance.py)'
    dirty = ' plus uncommitted changes' if p.get('dirty') else ''
    cc = (p.get('compiler') or {}).get('version') or 'compiler not recorded'
    load = d.get('load_average', {})
    lb = load.get('before', [None])[0]
    la = load.get('after', [None])[0]
    lines.append(
        f"Generated by `bench/readme_table.py` from `bench/results/{os.path.basename(path)}` "
        f"(`bench/run.sh`, {d['date']}): ada at commit {commit}{dirty}, {cc}; "
        f"{p.get('cpu', mach.get('cpu'))}, {p.get('cores', mach.get('cores'))} cores, "
        f"Linux {p.get('kernel', mach.get('kernel'))}; {mach.get('uftrace')}; median of "
        f"{d['config'].get('reps')}{startup_reps(d)}, tracers interleaved; load average {num(lb)} before, "
        f"{num(la)} after. Every number below is from this one run.")
    lines.append('')
    lines.append('| measure | ada | uftrace (`-pg`, `-P .`) | ratio | target |')
    lines.append('|---|---|---|---|---|')
    lines.append(per_event_row(d, 'fib', '`fib`'))
    lines.append(per_event_row(d, 'mixed', '`mixed` (200 functions)'))
    for w, label in (('fib', '`fib`'), ('mixed', '`mixed`')):
        h = hot_row(d, w, label)
        if h:
            lines.append(h)
    lost = [r.get('events_lost') for r in d['results']
            if r['tracer'].startswith('ada') and r.get('events_lost') is not None]
    total = sum(lost) if lost else None
    lines.append(f'| events lost, every ada run of every workload | {num(total, "d")} | | | '
                 f'0 — {"met" if total == 0 else "missed"} |')
    lines.append(rate_row(d, 'fib', 'one thread (`fib`)', 60))
    lines.append(rate_row(d, 'fib-threads', 'two threads (`fib-threads`)', 80))
    for w, label, target in (('fib', '`fib`', 4), ('mixed', '`mixed`', 6)):
        b = bytes_row(d, w, label, target)
        if b:
            lines.append(b)
    dr = drain_row(d)
    if dr:
        lines.append(dr)
    a = row(d, 'startup', 'ada')
    c = row(d, 'startup', 'ada-cold')
    e = row(d, 'startup', 'ada-exe')
    us = {t: row(d, 'startup', t) for t in UFTRACE}
    ms = lambda r: r.get('fixed_ms', r.get('added_ms')) if r else None  # noqa: E731
    c2 = row(d, 'startup', 'ada-cold-2t')
    cold = f'; cold plan cache {num(ms(c))} ms' if c else ''
    if c and c2:
        cold += f' ({num(ms(c2))} ms with `--analysis-threads 2`)'
    exe = f'; {num(ms(e))} ms hooking the executable only' if e else ''
    ut = ', '.join(f'{num(ms(r))} ms (`{t}`)' for t, r in us.items() if r)
    lines.append(f'| added time, 5 000-function `startup` (warm plan cache) | {num(ms(a))} ms'
                 f'{exe}{cold} | {ut} | {ratio(ms(a), [ms(r) for r in us.values() if r])[0]} '
                 f'| ≤ 1/2 |')
    if c and a and ms(a):
        two = f' ({ms(c2) / ms(a):.2f}× with `--analysis-threads 2`)' if c2 and ms(c2) else ''
        lines.append(f'| start-up, cold plan cache / warm | {ms(c) / ms(a):.2f}×{two} | | | '
                     f'≤ 1.5× — {"met" if ms(c) / ms(a) <= 1.5 else "missed"} |')
    la_ = row(d, 'latency', 'ada')
    if la_:
        lines.append(f'| encode-to-disk latency at 10 M events/s, p50 / p99 | '
                     f'{num(la_.get("latency_p50_ms"), ".2f")} / '
                     f'{num(la_.get("latency_p99_ms"), ".2f")} ms | | | ≤ 25 / 250 ms |')
    if m:
        mp = m.get('provenance') or {}
        lines.append('')
        lines.append(
            f"The pipeline without hooks (`bench/micro.py`, `bench/results/{os.path.basename(mpath)}`, "
            f"{m['date']}, commit {(mp.get('commit') or '?')[:12]}):")
        lines.append('')
        r = m.get('ring_bench', {}).get('parsed', {})
        if r:
            p1, p2 = r.get('producers_1', {}), r.get('producers_2', {})
            lines.append(f"- `ring_bench`: `rdtsc` alone {num(r.get('rdtsc_ns'), '.2f')} ns; "
                         f"one producer {num(p1.get('ns_per_event'), '.2f')} ns/event, "
                         f"{num(p1.get('mev_per_s'))} M events/s; two "
                         f"{num(p2.get('mev_per_s'))} M events/s in total")
            fl = r.get('drain_floor')
            if fl:
                # What reading the events out of a producer's ring costs
                # alone: the drain's floor (docs/benchmarks.md).
                lines.append(f"- the drain's floor (`ring_bench`, `ada record`'s default ring of "
                             f"{fl['ring_events']} events, one producer at "
                             f"{num(fl['mev_per_s'])} M events/s): a consumer that only copies "
                             f"each event out spends {num(fl['consumer_ns_per_event'], '.2f')} "
                             f"ns/event of CPU")
        for s in m.get('wal_bench', {}).get('parsed', []):
            # The drain's own CPU and the page-cache share (runs since the split).
            split = (f" (drain thread {num(s['drain_ns_per_event'])}, page-cache share "
                     f"{num(s.get('pagecache_ns_per_event'))})" if 'drain_ns_per_event' in s else '')
            lines.append(f"- `wal_bench`, {s['scenario']}: {num(s['mev_per_s_to_disk'])} M events/s "
                         f"to disk, {s['drops']} dropped, recorder CPU (drain + io_uring "
                         f"workers) {num(s.get('recorder_ns_per_event'))} ns/event{split}, latency p50 "
                         f"{num(s['latency_p50_ms'], '.2f')} / p99 {num(s['latency_p99_ms'], '.2f')} ms")
    dt = detail_table(path, d, apath, att, hpath, hab)
    if dt:
        lines.append(dt)
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--results', default=os.path.join(REPO, 'bench', 'results'))
    ap.add_argument('--readme', default=os.path.join(REPO, 'README.md'))
    ap.add_argument('--check', action='store_true')
    ap.add_argument('--print', action='store_true')
    a = ap.parse_args()
    path, d = newest_full(a.results)
    if not d:
        sys.exit('readme_table: no full run in ' + a.results)
    mpath, m = newest_micro(a.results)
    apath, at = newest_attach(a.results)
    hpath, hab = newest_hotab(a.results)
    text = table(path, d, mpath, m, apath, at, hpath, hab)
    if a.print:
        print(text)
        return
    with open(a.readme) as f:
        readme = f.read()
    if BEGIN not in readme or END not in readme:
        sys.exit(f'readme_table: {a.readme} has no {BEGIN} ... {END} block')
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f'{head}{BEGIN}\n{text}\n{END}{tail}'
    if a.check:
        if new != readme:
            sys.exit('readme_table: README.md is not the newest full run (bench/readme_table.py)')
        return
    if new != readme:
        with open(a.readme, 'w') as f:
            f.write(new)
    print(f'readme_table: README.md from {os.path.basename(path)}'
          + (f' and {os.path.basename(mpath)}' if mpath else '')
          + (f' and {os.path.basename(apath)}' if apath else '')
          + (f' and {os.path.basename(hpath)}' if hpath else ''), file=sys.stderr)


if __name__ == '__main__':
    main()
