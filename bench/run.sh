#!/usr/bin/env bash
# Every benchmark the README and docs/benchmarks.md cite, in one command on
# one build (issues 5 and 13):
#   bench/run.sh [--quick] [--reps N] [--workloads fib,mixed,...] [--tracers ada,uftrace-pg,...]
#   bench/run.sh [--no-scaling]        (the same without step 5)
#   bench/run.sh --scaling-only [bench/scaling.py options]   (step 5 alone)
# Installs the peers from Debian when missing (tools/bootstrap.sh --bench),
# builds ada, the workloads and the micro-benchmarks in Release in its own
# build directory ($ADA_BENCH_BUILD, default build-bench/), then runs:
#   1. bench/bench.py (all options pass through; --help lists them): ada
#      beside uftrace and ltrace, one table, JSON under bench/results/; ada
#      records its default compact index (the `ada` rows) and, on fib and
#      mixed, ATF v2 directly (`ada-atf`); "B/event on disk" is each
#      session's bytes over its events;
#   2. bench/micro.py: ring_bench, wal_bench, disk_bench, keysym_bench (results/*-micro.json);
#      bench/hot_ab.py: the hooks' own cost per detail mode, pinned, 21
#      interleaved runs (results/*-hotab.json);
#   3. bench/reading_bench.py: the reading commands (results/reading_*.json),
#      bench/attach_bench.py: ada attach's pause (results/*-attach.json);
#   4. bench/callgrind_guard.sh with the three committed baselines
#      (instructions per event, printed);
#   5. bench/scaling.py: 1/2/4/8 threads x 10/200/5000 hot functions, ada
#      beside uftrace -pg (results/*-scaling.json, ~5-10 minutes), then
#      bench/scaling_table.py --write: docs/benchmarks.md's scaling table
#      from this run (full runs and --scaling-only; --quick runs tiny sizes
#      and leaves the docs alone);
#   6. bench/readme_table.py: the README's table from this run, when it was
#      a full one (no --quick, every workload and tracer).
# Every results file records the commit, compiler, CPU model and kernel
# (bench/provenance.py). --quick runs small sizes only to check that
# everything works: its numbers are not for citing. See docs/benchmarks.md.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${ADA_BENCH_BUILD:-$repo/build-bench}

quick=() full=1 scaling=1 scaling_only=0 pass=()
for a in "$@"; do
	case $a in
	--quick) quick=(--quick) full=0 ;;
	--workloads | --workloads=* | --tracers | --tracers=* | --help | -h) full=0 ;;
	--no-scaling) scaling=0 && continue ;;
	--scaling-only) scaling_only=1 && continue ;;
	esac
	pass+=("$a")
done

"$repo/tools/bootstrap.sh" --bench
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DADA_SANITIZE= >/dev/null
cmake --build "$build" -j2 --target ada ada_agent bench_workloads ring_bench wal_bench \
	disk_bench keysym_bench hooked_guard atf_count >/dev/null

# bench/scaling.py exits 1 when ada lost events at some point: the table
# is written all the same (it shows the losses), then run.sh fails.
run_scaling() {
	local st=0
	python3 "$repo/bench/scaling.py" --build "$build" "$@" || st=$?
	if [[ " $* " != *" --quick "* && " $* " != *" --help "* && " $* " != *" -h "* ]]; then
		python3 "$repo/bench/scaling_table.py" --write || st=$?
	fi
	return $st
}
if ((scaling_only)); then
	run_scaling "${pass[@]}"
	exit
fi

python3 "$repo/bench/bench.py" --build "$build" "${pass[@]}"
case " $* " in *" --help "* | *" -h "*) exit 0 ;; esac

python3 "$repo/bench/micro.py" --build "$build" "${quick[@]}"
# The hooks' own cost, pinned and interleaved (results/*-hotab.json): the
# excluded set's gap to --detail never is within one run's noise above.
if ((${#quick[@]})); then
	python3 "$repo/bench/hot_ab.py" --build "$build" --reps 2 --arg 20 --json /dev/null
else
	python3 "$repo/bench/hot_ab.py" --build "$build" --reps 21 --arg 32
	python3 "$repo/bench/hot_ab.py" --build "$build" --reps 15 --workload mixed --arg 5000 \
		--variants never
fi
if ((${#quick[@]})); then
	python3 "$repo/bench/reading_bench.py" --build "$build" --fib 24 --small-fib 20 --reps 1
else
	python3 "$repo/bench/reading_bench.py" --build "$build"
	python3 "$repo/bench/attach_bench.py" --build "$build" \
		--out "$repo/bench/results/$(date -u +%Y-%m-%dT%H%M%S)-attach.json"
fi
for b in callgrind_baseline.txt callgrind_baseline_detail_all.txt \
	callgrind_baseline_detail_excluded.txt; do
	if command -v valgrind >/dev/null; then
		"$repo/bench/callgrind_guard.sh" "$build" --baseline "$repo/bench/$b" ||
			echo "run.sh: callgrind guard over $b failed (see above)" >&2
	fi
done
# Scaling before the README table: every results file of the run then
# records a clean tree (the table's rewrite of README.md made the scaling
# run's provenance say "uncommitted changes").
scaling_st=0
if ((scaling)) && ((full || ${#quick[@]})); then
	run_scaling "${quick[@]}" || scaling_st=$?
fi
if ((full)); then
	python3 "$repo/bench/readme_table.py"
else
	echo "run.sh: not a full run (--quick, --workloads or --tracers): README table left alone" >&2
fi
exit $scaling_st
