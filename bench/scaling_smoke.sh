#!/usr/bin/env bash
# bench.scaling_smoke (ctest -L bench; never in a CI stage): builds the
# scale10/scale200 workloads, runs bench/scaling.py at tiny sizes (1 and 8
# threads, one repetition) and bench/scaling_table.py over its results.
# Checks that the generator compiles, the runner runs every point and ada
# loses no event (scaling.py exits 1 otherwise); asserts no time.
#   bench/scaling_smoke.sh BUILD_DIR
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$1
tmp=$build/scaling_smoke
rm -rf "$tmp"
mkdir -p "$tmp"
targets=(ada ada_agent atf_count bw_scale10_plain bw_scale200_plain)
tracers=untraced,ada
if command -v uftrace >/dev/null; then
	targets+=(bw_scale10_pg bw_scale200_pg)
	tracers+=,uftrace-pg
fi
cmake --build "$build" -j2 --target "${targets[@]}" >/dev/null
python3 "$repo/bench/scaling.py" --build "$build" --quick --calls 4000 --funcs 10,200 \
	--threads 1,8 --tracers "$tracers" --no-drop-caches --json "$tmp/result.json" \
	--out-dir "$tmp/out" >"$tmp/table.txt"
python3 "$repo/bench/scaling_table.py" --results "$tmp/result.json" >"$tmp/docs_table.md"
# Four points (2 functions x 2 thread counts), one docs row each.
rows=$(grep -c '^| [0-9]' "$tmp/docs_table.md")
if [[ $rows != 4 ]]; then
	echo "scaling_smoke: expected 4 rows in the docs table, got $rows" >&2
	cat "$tmp/docs_table.md" >&2
	exit 1
fi
# Every ada row recorded what the program counted (0 lost, 0 drops).
python3 - "$tmp/result.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ada = [r for r in d['results'] if r['tracer'] == 'ada']
assert len(ada) == 4, ada
for r in ada:
    assert r.get('events_lost') == 0 and r.get('ada_drops_total') == 0, r
    assert r['bw_events'] == r['events_expected'], r
print('scaling_smoke: 4 points, ada recorded every event')
PY
rm -rf "$tmp/out"
