#!/usr/bin/env bash
# The whole test suite: a warnings-as-errors build with every test, then the
# sanitizer builds on the parts they fit (address/undefined: the format
# library and its CLI, rings, drain and recorder pipeline, the hook arch
# layer and the agent's unit tests; thread: the rings, drain and pipeline).
# The e2e tests preload the agent into other programs, which the sanitizer
# runtimes do not allow, so they run in the plain build only.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh
jobs=$(nproc)

echo "=== format (.clang-format) ==="
tools/check-format.sh

run_suite() { # build-dir sanitizer test-regex
	local dir=$1 san=$2 regex=$3
	echo "=== build $dir (sanitizer: ${san:-none}) ==="
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DADA_WERROR=ON -DADA_SANITIZE="$san" >/dev/null
	cmake --build "$dir" -j"$jobs" >/dev/null
	if [ -n "$regex" ]; then
		ctest --test-dir "$dir" --output-on-failure -j"$jobs" -R "$regex" -LE bench
	else
		ctest --test-dir "$dir" --output-on-failure -j"$jobs" -LE bench
	fi
}

echo "=== build build (Release, all tests) ==="
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DADA_WERROR=ON >/dev/null
cmake --build build -j"$jobs" >/dev/null
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "${ADA_TEST_SANITIZERS:-1}" = 1 ]; then
	run_suite build-asan address '^(atf_|ring_|test_wal_|pipeline_|hook_arch_|agent_)'
	run_suite build-ubsan undefined '^(atf_|ring_|test_wal_|pipeline_|hook_arch_|agent_)'
	run_suite build-tsan thread '^(ring_|test_wal_|pipeline_)'
fi
echo "=== all tests passed ==="
