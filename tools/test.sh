#!/usr/bin/env bash
# The whole test suite (CI runs it through .ci/run): a warnings-as-errors
# Release build with every test, then the sanitizer builds on the parts they
# fit, each running the tests labelled asan, ubsan or tsan where they are
# registered (ada_sanitize_tests() in tests/*/*.cmake; asan and ubsan in one
# build with both sanitizers, stage asan_ubsan; address/undefined: the
# format library and its CLI, rings, drain and recorder pipeline, the
# hook arch layer, the injector and the agent's unit tests; thread: the
# rings, drain and pipeline), then every fuzzer in a clang build for
# ADA_FUZZ_SECONDS (10) each from its committed corpus (grown in the
# repository: docs/testing.md, "Fuzzers"). The e2e tests preload
# the agent into other programs, which the sanitizer runtimes do not allow,
# so they run in the Release build only.
#
# Every build is configured with -DADA_CI=ON: a missing test tool fails the
# configure instead of dropping tests. Failing tests do not stop the later
# stages; the summary at the end (tools/test_summary.py) lists failures and
# every skip with its reason, and fails on a skip that tests/allowed_skips.txt
# does not allow here. ADA_TEST_SANITIZERS=0 / ADA_TEST_FUZZ=0 /
# ADA_TEST_ARM64=0 switch stages off for a quick local run (listed as
# skips; refused under CI, ADA_CI=1). The arm64 stage builds the aarch64
# cross build's agent and targets and records them under qemu-user.
# The arm64, sanitizer and fuzz builds run in the background at the lowest
# CPU priority while the stages before theirs run their tests (bg_build).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh
jobs=$(nproc)
fuzz_secs=${ADA_FUZZ_SECONDS:-10}
ci_opts=(-DADA_WERROR=ON -DADA_CI=ON)
# new_build <dir>: the generator options for a first configure of dir:
# Ninja where it is installed (tools/bootstrap.sh installs it), about a
# sixth less CPU than make's for the Release build; a directory already
# configured keeps its generator (CMake refuses to change it).
new_build() {
	[ ! -f "$1/CMakeCache.txt" ] && command -v ninja >/dev/null && echo "-G Ninja"
	return 0
}
stages=()   # name=seconds=junit, for the summary
disabled=() # name=why
shm_left=() # stages that left arena directories in /dev/shm (shm_leftovers.sh)

echo "=== format (.clang-format) ==="
tools/check-format.sh
tools/check-comments.py # comments: no dates or figures, doc comments on their code
echo "=== code size (tools/code_stats.py --check) ==="
python3 tools/code_stats.py --check --top 0 # function and file lengths (issue 30 targets)

# run_ctest <stage> <build dir> <ctest options>...: failures are summed up at
# the end, not fatal here. The stage's time counts from its build (t0).
t0=$SECONDS
run_ctest() {
	local stage=$1 dir=$2
	shift 2
	local shm_before
	shm_before=$(tools/shm_leftovers.sh list)
	# whole outputs in the junit file (ctest keeps 1 KiB of a passing
	# test's by default): the summary reads skips and case counts there
	ctest --test-dir "$dir" --output-on-failure -j"$jobs" --no-tests=error \
		--test-output-size-passed 4194304 --test-output-size-failed 4194304 \
		--output-junit "$PWD/$dir/junit_$stage.xml" "$@" || true
	tools/shm_leftovers.sh check "stage $stage" "$shm_before" || shm_left+=("$stage")
	# one junit file a stage: the arm64 stage runs in build/ too
	stages+=("$stage=$((SECONDS - t0))=$PWD/$dir/junit_$stage.xml")
	t0=$SECONDS
}

# Every build but the Release one runs in the background, one after
# another at the lowest CPU priority (SCHED_IDLE, else nice 19), while the
# stages before it run their tests: a test that waits (a sleep, a timeout,
# a child's exit) leaves a core the build takes, and a test that wants it
# back gets it at once (SCHED_IDLE: a weight of 3 against a test's 1024).
# Each stage then waits for its own build (bg_wait), so a stage's seconds
# count from the end of the stage before it, its build's rest included.
# bg_build <dir> <function> <arguments>...: one build of the chain, its
# output in <dir>/ci_build.log; bg_start starts the chain; bg_wait <dir>
# shows that log and fails the run when the build failed, as a build in
# the foreground would.
bg_chain=() # "<dir> <function> <arguments>..." (words without spaces)
bg_pid=
bg_build() {
	mkdir -p "$1"
	rm -f "$1/ci_build.rc" "$1/ci_build.log"
	bg_chain+=("$*")
}
bg_start() {
	[ ${#bg_chain[@]} -gt 0 ] || return 0
	set -m # a process group of its own, which an early exit kills
	(
		# nice 19 too: where SCHED_IDLE is refused, and the builds' CPU
		# shows apart as "nice" in /proc/stat, top or vmstat
		renice -n 19 -p "$BASHPID" >/dev/null || true
		chrt -i -p 0 "$BASHPID" 2>/dev/null || true
		for job in "${bg_chain[@]}"; do
			# shellcheck disable=SC2086 # one word an argument
			set -- $job
			# its own job, not a condition: set -e holds inside it
			"${@:2}" >"$1/ci_build.log" 2>&1 &
			rc=0
			wait $! || rc=$?
			echo "$rc" >"$1/ci_build.rc.tmp" && mv "$1/ci_build.rc.tmp" "$1/ci_build.rc"
		done
	) &
	bg_pid=$!
	set +m
	trap '[ -z "$bg_pid" ] || kill -- -"$bg_pid" 2>/dev/null || true' EXIT
}
bg_wait() {
	local dir=$1 rc
	while [ ! -e "$dir/ci_build.rc" ]; do
		kill -0 "$bg_pid" 2>/dev/null || { echo "the background builds died before $dir" >&2; exit 1; }
		sleep 1
	done
	rc=$(cat "$dir/ci_build.rc")
	echo "=== build $dir (in the background: $dir/ci_build.log) ==="
	grep -v '^\[' "$dir/ci_build.log" || true # all but make's progress lines
	[ "$rc" = 0 ] || { echo "build $dir failed ($rc)" >&2; exit 1; }
}

# suite_build <build dir> <sanitizer> <label>...: configures a sanitizer
# build and builds only the targets the tests labelled any <label> run
# (tools/stage_targets.py reads them from CMake's file API, asked for by
# the query file): the Release build compiles everything with -Werror
# already. run_suite <stage> <build dir> <label>...: those tests (labelled
# where they are registered: ada_sanitize_tests() in tests/*/*.cmake).
suite_build() {
	local dir=$1 san=$2
	shift 2
	local label targets="" t
	mkdir -p "$dir/.cmake/api/v1/query" && touch "$dir/.cmake/api/v1/query/codemodel-v2"
	# shellcheck disable=SC2046 # the generator's options, words
	cmake $(new_build "$dir") -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug "${ci_opts[@]}" \
		-DADA_SANITIZE="$san" >/dev/null
	for label in "$@"; do
		t=$(tools/stage_targets.py "$dir" "$label") || {
			echo "tools/stage_targets.py failed: building every target of $dir"
			t=all
		}
		targets+=" $t"
	done
	case " $targets " in *" all "*) targets=all ;; esac
	echo "=== build $dir (sanitizer: $san) ==="
	# shellcheck disable=SC2046,SC2086 # one target a word
	cmake --build "$dir" -j"$jobs" --target $(printf '%s\n' $targets | sort -u) >/dev/null
}
run_suite() {
	local stage=$1 dir=$2 label re=""
	shift 2
	for label in "$@"; do re+="${re:+|}$label"; done
	bg_wait "$dir"
	run_ctest "$stage" "$dir" -L "^($re)\$" -LE 'bench|fuzz'
}
arm64_build() {
	# shellcheck disable=SC2046 # the generator's options, words
	cmake $(new_build build-arm64) -S . -B build-arm64 --toolchain cmake/aarch64-linux-gnu.cmake \
		-DCMAKE_BUILD_TYPE=Release -DADA_WERROR=ON >/dev/null
	cmake --build build-arm64 -j"$jobs" --target ada_agent adat_threads_O2 adat_fork_O2 \
		adat_dlopen_O2 adat_dlib adat_setjmp_O2 adat_signal_O2 adat_crash_O2 adat_cxx_O2 adat_flight_O2 \
		test_clock_counter test_inject_arch test_hook_a64_run >/dev/null
}
fuzz_build() {
	# shellcheck disable=SC2046 # the generator's options, words
	CC=clang CXX=clang++ cmake $(new_build build-fuzz) -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug \
		"${ci_opts[@]}" -DADA_SANITIZE=address -DADA_FUZZ_SECONDS="$fuzz_secs" >/dev/null
	cmake --build build-fuzz -j"$jobs" --target ada_fuzzers >/dev/null
}
# The chain, in the order the stages need them.
[ "${ADA_TEST_ARM64:-1}" != 1 ] || bg_build build-arm64 arm64_build
if [ "${ADA_TEST_SANITIZERS:-1}" = 1 ]; then
	bg_build build-asan suite_build build-asan address,undefined asan ubsan
	bg_build build-tsan suite_build build-tsan thread tsan
fi
[ "${ADA_TEST_FUZZ:-1}" != 1 ] || bg_build build-fuzz fuzz_build

echo "=== build build (Release, all tests) ==="
# ADA_ARM64_BUILD empty: the arm64 tests are the arm64 stage's, not release's.
# shellcheck disable=SC2046 # the generator's options, words
cmake $(new_build build) -S . -B build -DCMAKE_BUILD_TYPE=Release "${ci_opts[@]}" \
	-DADA_ARM64_BUILD= >/dev/null
bg_start
cmake --build build -j"$jobs" >/dev/null
run_ctest release build -LE 'bench|fuzz'

if [ "${ADA_TEST_ARM64:-1}" = 1 ]; then
	# The aarch64 cross build's agent and end-to-end targets, recorded by
	# the native ada under qemu-user (tests/integration/arm64.cmake,
	# docs/arm64.md): exact counts, emulated, not timed. The stage's time
	# includes the cross build.
	bg_wait build-arm64
	cmake -S . -B build -DADA_ARM64_BUILD="$PWD/build-arm64" >/dev/null
	run_ctest arm64 build -L '^arm64$'
	cmake -S . -B build -DADA_ARM64_BUILD= >/dev/null
	# The unit tests labelled qemu, run emulated by the cross build's
	# CTest (CMAKE_CROSSCOMPILING_EMULATOR): the counter, attach's frame.
	run_ctest arm64_unit build-arm64 -L '^qemu$'
else
	disabled+=("arm64,arm64_unit=ADA_TEST_ARM64=0")
fi

if [ "${ADA_TEST_SANITIZERS:-1}" = 1 ]; then
	# AddressSanitizer and UndefinedBehaviorSanitizer in one build, on the
	# tests labelled either (today the same set): one Debug build and one
	# run instead of two of each.
	run_suite asan_ubsan build-asan asan ubsan
	run_suite tsan build-tsan tsan
else
	disabled+=("asan_ubsan,tsan=ADA_TEST_SANITIZERS=0")
fi

if [ "${ADA_TEST_FUZZ:-1}" = 1 ]; then
	# libFuzzer is clang's: a clang + ASan build of the fuzz targets only
	# (the target ada_fuzzers); each fuzzer is the CTest test fuzz.<name>.
	bg_wait build-fuzz
	run_ctest fuzz build-fuzz -L fuzz
else
	disabled+=("fuzz=ADA_TEST_FUZZ=0")
fi

# In CI the machine is the suite's: any arena directory still in /dev/shm
# now, whichever stage made it, is a leftover.
[ ${#shm_left[@]} -gt 0 ] || tools/shm_leftovers.sh suite || shm_left+=("the suite")

args=(--allowed tests/allowed_skips.txt --min tests/min_tests.txt)
for d in ${disabled[@]+"${disabled[@]}"}; do args+=(--disabled "$d"); done
echo "(total $SECONDS s)"
python3 tools/test_summary.py "${args[@]}" "${stages[@]}" && [ ${#shm_left[@]} -eq 0 ] ||
	{ echo "FAILED${shm_left[*]:+ (arena directories left in /dev/shm by: ${shm_left[*]})}" >&2; exit 1; }
