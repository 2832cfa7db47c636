#!/bin/sh
# One fuzzer as a CTest test (label fuzz, registered by tests/suite.cmake):
#   run_fuzzer.sh FUZZER SEED_DIR WORK_DIR SECONDS
# Runs FUZZER for SECONDS from the committed seeds (read only: new inputs go
# to WORK_DIR/corpus) and fails on any crash, leak, timeout or out-of-memory,
# printing where the reproducer is and how to rerun it. WORK_DIR is kept on
# failure and emptied at the next run.
set -u
fz=$1 seeds=$2 work=$3 secs=$4
name=$(basename "$fz")
if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds" 2>/dev/null)" ]; then
	echo "$name: no seed corpus in $seeds: commit a few small valid inputs there"
	exit 1
fi
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts" || exit 1
# -timeout: one input may take 10 s at most; -rss_limit_mb: 2 GiB.
"$fz" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds" >"$work/log" 2>&1
rc=$?
crashes=$(ls "$work/artifacts" 2>/dev/null)
if [ $rc -ne 0 ] || [ -n "$crashes" ]; then
	grep -m 1 '^INFO: Seed: ' "$work/log"
	tail -n 60 "$work/log"
	echo "FUZZ FAILURE: $name exited $rc after at most $secs s; full log: $work/log"
	for f in $crashes; do
		echo "  reproducer: $work/artifacts/$f  (rerun: $fz $work/artifacts/$f)"
	done
	[ -n "$crashes" ] || echo "  no reproducer written: see the log"
	exit 1
fi
# The seed libFuzzer chose (rerun with -seed=N to repeat the run) and the
# stats: how much was tried; a fuzzer that ran nothing is a failure.
grep -E '^(INFO: Seed: |#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added|Done [0-9]+ runs)' \
	"$work/log"
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
if [ -z "$runs" ] || [ "$runs" -lt 1 ]; then
	tail -n 30 "$work/log"
	echo "FUZZ FAILURE: $name executed no input (log: $work/log)"
	exit 1
fi
echo "$name: $runs inputs in $secs s, no crash ($(ls "$work/corpus" | wc -l) new corpus entries)"
rm -rf "$work"
