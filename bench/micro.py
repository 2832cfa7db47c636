#!/usr/bin/env python3
"""The pipeline micro-benchmarks the README and docs/benchmarks.md cite, run
from a built tree (bench/run.sh builds them): bench/ring_bench (producer ns
per event through the ring, rdtsc and store baselines), bench/wal_bench
(events/s through rings, drain and io_uring to disk; the recorder's CPU per
event; encode-to-disk latency at 10 M events/s), bench/disk_bench (the
disk's bandwidth and the page-cache copy's CPU per 32 bytes, without ada:
RWF_DONTCACHE as the drain writes, and O_DIRECT) and bench/keysym_bench
(key-symbol membership tests). Prints their output and writes it, parsed
where the README uses it, with the run's provenance (commit, compiler, CPU
model, kernel: bench/provenance.py) to bench/results/<date>-micro.json.

  bench/micro.py --build build-bench [--quick] [--json FILE]

--quick: small sizes, to check that everything runs (no numbers to cite).
Only the standard library."""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import REPO, provenance  # noqa: E402


def run(cmd, timeout):
    print('micro: ' + ' '.join(cmd), file=sys.stderr, flush=True)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out, status = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out, status = (e.stdout or b'').decode(errors='replace') if isinstance(
            e.stdout, bytes) else (e.stdout or ''), 'timeout'
    sys.stdout.write(out)
    return {'command': cmd, 'status': status, 'output': out.splitlines()}


def parse_wal(lines):
    """Per wal_bench scenario: events, drops, M events/s, recorder ns/event (whole, drain
    thread, page-cache share), p50/p99."""
    rows, cur = [], None
    for line in lines:
        m = re.match(r'(.+?)\s+threads (\d+) events (\d+) drops (\d+)\s+([\d.]+) M ev/s '
                     r'first-event-to-disk .*?([\d.]+) M ev/s whole run .*?latency p50 ([\d.]+) ms '
                     r'p99 ([\d.]+) ms', line)
        if m:
            cur = {'scenario': m.group(1).strip(), 'threads': int(m.group(2)),
                   'events': int(m.group(3)), 'drops': int(m.group(4)),
                   'mev_per_s_to_disk': float(m.group(5)), 'mev_per_s_whole': float(m.group(6)),
                   'latency_p50_ms': float(m.group(7)), 'latency_p99_ms': float(m.group(8))}
            rows.append(cur)
            continue
        m = re.search(r'recorder CPU .* ([\d.]+) s = ([\d.]+) ns/event', line)
        if m and cur:
            cur['recorder_cpu_s'] = float(m.group(1))
            cur['recorder_ns_per_event'] = float(m.group(2))
            continue
        m = re.search(r'drain thread CPU ([\d.]+) s = ([\d.]+) ns/event; page-cache share '
                      r'.*? ([-\d.]+) s = ([-\d.]+) ns/event', line)
        if m and cur:
            cur['drain_cpu_s'] = float(m.group(1))
            cur['drain_ns_per_event'] = float(m.group(2))
            cur['pagecache_cpu_s'] = float(m.group(3))
            cur['pagecache_ns_per_event'] = float(m.group(4))
    return rows


def parse_ring(lines):
    r = {}
    for line in lines:
        m = re.match(r'(\d) producers? ?: median ([\d.]+) ns/event .*?([\d.]+) M events/s', line)
        if m:
            r[f'producers_{m.group(1)}'] = {'ns_per_event': float(m.group(2)),
                                            'mev_per_s': float(m.group(3))}
            c = re.search(r'consumer ([\d.]+) ns/event copying', line)
            if c:
                r[f'producers_{m.group(1)}']['consumer_ns_per_event'] = float(c.group(1))
        m = re.match(r'drain floor: ring of (\d+) events, 1 producer ([\d.]+) ns/event, '
                     r'([\d.]+) M events/s; consumer ([\d.]+) ns/event copying.*drops (\d+)', line)
        if m:
            r['drain_floor'] = {'ring_events': int(m.group(1)), 'producer_ns': float(m.group(2)),
                                'mev_per_s': float(m.group(3)),
                                'consumer_ns_per_event': float(m.group(4)),
                                'drops': int(m.group(5))}
        m = re.match(r'baseline: rdtsc alone ([\d.]+) ns', line)
        if m:
            r['rdtsc_ns'] = float(m.group(1))
        m = re.match(r'baseline: plain 32-byte event store ([\d.]+) ns', line)
        if m:
            r['store_ns'] = float(m.group(1))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--build', default=os.path.join(REPO, 'build-bench'))
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--json', help='default bench/results/<date>-micro.json')
    a = ap.parse_args()
    b = os.path.join(a.build, 'bench')
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()
    wal_out = os.path.join(a.build, 'bench_out', 'wal_bench')
    os.makedirs(wal_out, exist_ok=True)
    ring = run([os.path.join(b, 'ring_bench')] + (['1000000'] if a.quick else []), 600)
    wal = run([os.path.join(b, 'wal_bench'), '--out', wal_out] +
              (['--events', '2000000', '--secs', '1'] if a.quick else []), 900)
    disk = [run([os.path.join(b, 'disk_bench'), os.path.join(wal_out, 'disk_bench.tmp'), mode,
                 '1024', '8', '64' if a.quick else '2048'], 300)
            for mode in ('dontcache', 'direct')]
    keysym = run([os.path.join(b, 'keysym_bench')] + (['--quick'] if a.quick else []), 900)
    shutil.rmtree(wal_out, ignore_errors=True)
    result = {'date': started.isoformat(timespec='seconds'), 'provenance': provenance(a.build),
              'load_average': {'before': load_before, 'after': os.getloadavg()},
              'quick': a.quick,
              'ring_bench': dict(ring, parsed=parse_ring(ring['output'])),
              'wal_bench': dict(wal, parsed=parse_wal(wal['output'])),
              'disk_bench': disk,
              'keysym_bench': keysym}
    path = a.json or os.path.join(REPO, 'bench', 'results',
                                  started.strftime('%Y-%m-%dT%H%M%S') + '-micro.json')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(result, f, indent=1)
    print(f'micro: results written to {path}', file=sys.stderr)
    bad = [n for n, r in (('ring_bench', ring), ('wal_bench', wal), ('disk_bench', disk[0]),
                          ('disk_bench', disk[1]), ('keysym_bench', keysym))
           if r['status'] != 0]
    if bad:
        print('micro: failed: ' + ', '.join(bad), file=sys.stderr)
        sys.exit(1)


if __name__ == '__main__':
    main()
