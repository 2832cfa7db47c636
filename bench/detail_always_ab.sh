#!/usr/bin/env bash
# --detail always: a thread with a full detail ring waits for the drain
# (--detail-overflow wait, the default) or overwrites (overwrite), side by
# side, interleaved, on bench/workloads fib N with 1 MiB and 64 MiB rings:
# wall time, detail records persisted and lost (docs/benchmarks.md,
# "--detail always: waiting for the drain").
#   bench/detail_always_ab.sh [BUILD] [N] [ROUNDS]
# BUILD: a Release build with ada, ada_agent and bench_workloads (default
# build-bench, as bench/run.sh makes it). Sessions go to /var/tmp (a disk,
# not tmpfs) and are removed after each run.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build-bench}
n=${2:-27}
rounds=${3:-3}
out=$(mktemp -d /var/tmp/ada-always-ab.XXXXXX)
trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$rounds"); do
	for mb in 1 64; do
		for ov in wait overwrite; do
			rm -rf "${out:?}"/*
			s=$(date +%s.%N)
			"$build/ada" record --out "$out" --include fib --detail always \
				--detail-overflow "$ov" --detail-mb "$mb" --max-disk-mb 0 -- \
				"$build/bench/plain/fib" "$n" >/dev/null 2>"$out/err"
			e=$(date +%s.%N)
			python3 - "$out"/session_*/pid_*/manifest.json "$ov" "$mb" "$s" "$e" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
d = m.get("detail", {})
lost = m.get("drops", {}).get("detail", {}).get("detail_overwritten", 0)
print("round %-9s %3s MiB  wall %.2f s  persisted %d  lost %d" % (
    sys.argv[2], sys.argv[3], float(sys.argv[5]) - float(sys.argv[4]),
    d.get("records", 0), lost))
PY
		done
	done
done
