#!/usr/bin/env bash
# One command for ada's benchmarks side by side with peers (issue 5):
#   bench/run.sh [--quick] [--reps N] [--workloads fib,mixed,...] [--tracers ada,uftrace-pg,...]
# Installs the peers from Debian when missing (tools/bootstrap.sh --bench),
# builds ada and the workloads in Release in its own build directory
# ($ADA_BENCH_BUILD, default build-bench/), runs bench/bench.py (all its
# options pass through; --help lists them), prints one table and writes the
# same as JSON under bench/results/. See docs/benchmarks.md.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${ADA_BENCH_BUILD:-$repo/build-bench}

"$repo/tools/bootstrap.sh" --bench
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DADA_SANITIZE= >/dev/null
cmake --build "$build" -j2 --target ada ada_agent bench_workloads >/dev/null
exec python3 "$repo/bench/bench.py" --build "$build" "$@"
