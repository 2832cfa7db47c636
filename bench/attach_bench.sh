#!/usr/bin/env bash
# ada attach's benchmark (bench/attach_bench.py --help): builds ada and the
# workloads in Release in $ADA_BENCH_BUILD (default build-bench/), then runs
# it. Timed: run it on an idle machine.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${ADA_BENCH_BUILD:-$repo/build-bench}
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DADA_SANITIZE= >/dev/null
cmake --build "$build" -j2 --target ada ada_agent bench_workloads >/dev/null
exec python3 "$repo/bench/attach_bench.py" --build "$build" "$@"
