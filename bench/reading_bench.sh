#!/usr/bin/env bash
# The reading commands' benchmark (bench/reading_bench.py --help): builds ada
# and the workloads in Release in $ADA_BENCH_BUILD (default build-bench/),
# installs uftrace when missing (tools/bootstrap.sh --bench), then runs it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${ADA_BENCH_BUILD:-$repo/build-bench}
"$repo/tools/bootstrap.sh" --bench
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DADA_SANITIZE= >/dev/null
cmake --build "$build" -j2 --target ada ada_agent bench_workloads >/dev/null
exec python3 "$repo/bench/reading_bench.py" --build "$build" "$@"
