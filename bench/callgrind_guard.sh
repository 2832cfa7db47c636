#!/usr/bin/env bash
# The cycle-exact guard of ada's hot path (issue 5, item 4), a CTest test
# labelled "perf". It counts instructions with valgrind --tool=callgrind
# (exact and repeatable whatever the machine load), never time.
#
#   bench/callgrind_guard.sh BUILD_DIR [--update] [--mode emit|hooked]
#
# Metric: instructions per recorded event on the hot path, "Ir/event":
#   mode emit   -- bench/emit_guard (ada_emit_call/ada_emit_return straight
#                  into a ring, src/ring's producer). Only emit_guard_burst()
#                  is collected (--toggle-collect), and two runs with N1 and N2
#                  CALL/RETURN pairs are differenced:
#                    Ir/event = (Ir(N2) - Ir(N1)) / (events(N2) - events(N1))
#                  so set-up, the first-event slot claim and the drain cancel.
#   mode hooked -- bench/plain/fib under `ada record` (trampolines + the
#                  agent's enter/exit handlers + the producer), the target
#                  process only. Two sizes N1 < N2, traced (T) and untraced
#                  (U), all differenced:
#                    Ir/event = ((T(N2) - T(N1)) - (U(N2) - U(N1)))
#                               / (events(N2) - events(N1))
#                  = instructions ada adds per recorded event; start-up,
#                  hooking, finalize and the program's own work cancel.
# It fails (exit 1) when Ir/event is more than 10 % above the value in
# bench/callgrind_baseline.txt, which also names the mode. --update rewrites
# the baseline (commit it with a message saying why). Exit 77 (skip) when
# valgrind is missing, the build is not Release, or a sanitizer is on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
baseline=$here/callgrind_baseline.txt
build=${1:?usage: callgrind_guard.sh BUILD_DIR [--update] [--mode emit|hooked]}
shift
update=0
mode=
build_type=Release
sanitize=
while [ $# -gt 0 ]; do
	case $1 in
	--update) update=1 ;;
	--mode) mode=$2; shift ;;
	--build-type) build_type=$2; shift ;;
	--sanitize) sanitize=$2; shift ;;
	*) echo "callgrind_guard: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
skip() { echo "callgrind_guard: SKIP: $*"; exit 77; }
command -v valgrind >/dev/null || skip "valgrind not installed"
[ -z "$sanitize" ] || skip "sanitizer build ($sanitize): valgrind cannot run it"
[ "$build_type" = Release ] || skip "build type $build_type: the baseline is for Release"
if [ -z "$mode" ]; then
	mode=$(awk '$1 == "mode" {print $2}' "$baseline" 2>/dev/null || true)
	mode=${mode:-emit}
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ada-cg-guard.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Total Ir of a callgrind output file (the "summary:" line, else "totals:").
cg_ir() { awk '/^summary:/ {print $2; f=1} END {if (!f) exit 1}' "$1" 2>/dev/null ||
	awk '/^totals:/ {print $2}' "$1"; }

cg() { # out-file program args...
	local out=$1; shift
	valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >"$out.stdout" 2>"$out.log" ||
		{ echo "callgrind_guard: valgrind failed: $*" >&2; tail -5 "$out.log" >&2; exit 1; }
}

measure_emit() {
	local prog=$build/bench/emit_guard n1=20000 n2=100000
	[ -x "$prog" ] || skip "$prog not built (src/ring's producer missing?)"
	cg "$work/e1" --toggle-collect=emit_guard_burst "$prog" $n1
	cg "$work/e2" --toggle-collect=emit_guard_burst "$prog" $n2
	local i1 i2 e1 e2
	i1=$(cg_ir "$work/e1"); i2=$(cg_ir "$work/e2")
	e1=$(sed -n 's/^events=//p' "$work/e1.stdout"); e2=$(sed -n 's/^events=//p' "$work/e2.stdout")
	echo "callgrind_guard: emit: Ir $i1 for $e1 events, $i2 for $e2 events" >&2
	awk -v a="$i1" -v b="$i2" -v x="$e1" -v y="$e2" 'BEGIN {printf "%.3f\n", (b - a) / (y - x)}'
}

# Ir of the traced target process: callgrind follows `ada record` into the
# program it spawns; the target's file is the one whose cmd: line runs fib.
hooked_run() { # tag n
	local tag=$1 n=$2 f
	mkdir -p "$work/$tag"
	valgrind --tool=callgrind --trace-children=yes --smc-check=all \
		--callgrind-out-file="$work/$tag/cg.%p" \
		"$build/ada" record --out "$work/$tag/out" -- "$build/bench/plain/fib" "$n" \
		>/dev/null 2>"$work/$tag/log" ||
		{ echo "callgrind_guard: ada record under valgrind failed" >&2; tail -5 "$work/$tag/log" >&2; exit 1; }
	f=$(grep -l '^cmd:.*bench/plain/fib' "$work/$tag"/cg.* | head -1)
	[ -n "$f" ] || { echo "callgrind_guard: no callgrind output for the target" >&2; exit 1; }
	cg_ir "$f"
}

hooked_events() { # tag: events recorded (all functions; footer counts)
	"$build/bench/atf_count" "$work/$1/out" | awk '$1 == "T" {print $3}'
}

measure_hooked() {
	local n1=14 n2=18 t1 t2 u1 u2 e1 e2
	[ -x "$build/ada" ] && [ -x "$build/bench/plain/fib" ] || skip "ada or bench/plain/fib not built"
	t1=$(hooked_run t1 $n1); t2=$(hooked_run t2 $n2)
	e1=$(hooked_events t1); e2=$(hooked_events t2)
	cg "$work/u1" "$build/bench/plain/fib" $n1
	cg "$work/u2" "$build/bench/plain/fib" $n2
	u1=$(cg_ir "$work/u1"); u2=$(cg_ir "$work/u2")
	echo "callgrind_guard: hooked: traced Ir $t1 / $t2, untraced $u1 / $u2, events $e1 / $e2" >&2
	awk -v t1="$t1" -v t2="$t2" -v u1="$u1" -v u2="$u2" -v x="$e1" -v y="$e2" \
		'BEGIN {printf "%.3f\n", ((t2 - t1) - (u2 - u1)) / (y - x)}'
}

case $mode in
emit) value=$(measure_emit) ;;
hooked) value=$(measure_hooked) ;;
*) echo "callgrind_guard: unknown mode $mode" >&2; exit 2 ;;
esac
echo "callgrind_guard: mode $mode: $value instructions per recorded event"

if [ $update = 1 ]; then
	cat >"$baseline" <<EOF
# Baseline of bench/callgrind_guard.sh: instructions per recorded event on
# ada's hot path, measured with valgrind --tool=callgrind (see the script for
# the exact definition). CI fails when a change makes it > 10 % higher.
# Update with: bench/callgrind_guard.sh BUILD_DIR --update [--mode M]
mode $mode
ir_per_event $value
EOF
	echo "callgrind_guard: baseline updated: $baseline"
	exit 0
fi
base_mode=$(awk '$1 == "mode" {print $2}' "$baseline")
base=$(awk '$1 == "ir_per_event" {print $2}' "$baseline")
[ -n "$base" ] || { echo "callgrind_guard: no ir_per_event in $baseline" >&2; exit 1; }
[ "$base_mode" = "$mode" ] || { echo "callgrind_guard: baseline is for mode $base_mode, measured $mode" >&2; exit 1; }
awk -v v="$value" -v b="$base" 'BEGIN {
	lim = b * 1.10
	printf "callgrind_guard: baseline %.3f, limit %.3f (+10 %%)\n", b, lim
	if (v > lim) { printf "callgrind_guard: FAIL: %.3f Ir/event is %.1f %% above the baseline\n", v, (v / b - 1) * 100; exit 1 }
	if (v < b * 0.90) printf "callgrind_guard: note: %.1f %% below the baseline; consider --update\n", (1 - v / b) * 100
	print "callgrind_guard: OK"
}'
