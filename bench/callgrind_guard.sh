#!/usr/bin/env bash
# The cycle-exact guard of ada's hot path (issue 5, item 4), a CTest test
# labelled "perf". It counts instructions with valgrind --tool=callgrind
# (exact and repeatable whatever the machine load), never time.
#
#   bench/callgrind_guard.sh BUILD_DIR [--update] [--mode emit|hooked]
#                            [--baseline FILE]
#                            [--detail never|triggered|always] [--record-arg OPT]...
# (hooked mode records with --detail never unless told otherwise: the
# default baseline, bench/callgrind_baseline.txt, is the index lane's.)
# --baseline FILE guards another configuration: the file names its mode,
# `detail` and `record_arg` lines (used when the command line gives none)
# and its own margin (`margin_pct`, default 10). CI guards three:
#   callgrind_baseline.txt                  index lane (--detail never)
#   callgrind_baseline_detail_all.txt       detail capture of every call,
#                                           128-byte stacks
#   callgrind_baseline_detail_excluded.txt  a detail set without bw_fib
#                                           (must stay near the index lane)
#
# Metric: instructions per recorded event on the hot path, "Ir/event":
#   mode emit   -- bench/emit_guard (ada_emit_call/ada_emit_return straight
#                  into a ring, src/ring's producer). Only emit_guard_burst()
#                  is collected (--toggle-collect), and two runs with N1 and N2
#                  CALL/RETURN pairs are differenced:
#                    Ir/event = (Ir(N2) - Ir(N1)) / (events(N2) - events(N1))
#                  so set-up, the first-event slot claim and the drain cancel.
#   mode hooked -- bench/hooked_guard under `ada record` (trampolines + the
#                  agent's enter/exit handlers + the producer), the target
#                  process only, its fib(N1) and fib(N2) phases dumped apart
#                  by callgrind client requests; traced (T) and untraced (U):
#                    Ir/event = ((T(N2) - T(N1)) - (U(N2) - U(N1)))
#                               / (events(N2) - events(N1))
#                  = instructions ada adds per recorded event; hooking,
#                  finalize and the program's own work cancel. It also
#                  checks that the trace holds every bw_fib call.
#   mode count  -- as hooked, with bw_fib count-only (the baseline's
#                  record_arg lines: --count-only bw_fib): "Ir/call", the
#                  instructions ada adds per bw_fib call (no events), and
#                  the check that the trace's bw_fib CALLs plus the
#                  manifest's count are every call
#                  (callgrind_baseline_count_only.txt).
# It fails (exit 1) when Ir/event is more than margin_pct (10 %) above the
# value in the baseline file, which also names the mode. --update rewrites
# the baseline (commit it with a message saying why). Exit 77 (skip) when
# valgrind is missing, the build is not Release, or a sanitizer is on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
baseline=$here/callgrind_baseline.txt
build=${1:?usage: callgrind_guard.sh BUILD_DIR [--update] [--mode emit|hooked]}
shift
update=0
mode=
detail= # default: the baseline file's, else never (the index lane alone)
record_args=() # more `ada record` options (measuring, e.g. --detail-symbols X)
build_type=Release
sanitize=
while [ $# -gt 0 ]; do
	case $1 in
	--update) update=1 ;;
	--mode) mode=$2; shift ;;
	--baseline) baseline=$2; shift ;;
	--detail) detail=$2; shift ;;
	--record-arg) record_args+=("$2"); shift ;;
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
# The configuration the baseline was measured in, unless given here.
if [ -z "$detail" ]; then
	detail=$(awk '$1 == "detail" {print $2}' "$baseline" 2>/dev/null || true)
	detail=${detail:-never}
fi
if [ ${#record_args[@]} -eq 0 ] && [ -f "$baseline" ]; then
	while read -r key val; do
		if [ "$key" = record_arg ]; then record_args+=("$val"); fi
	done <"$baseline"
fi
margin=$(awk '$1 == "margin_pct" {print $2}' "$baseline" 2>/dev/null || true)
margin=${margin:-10}
# floor_pct (optional): fail when Ir/event falls that far below the
# baseline too (the detail-all guard: a capture that silently stopped).
floor=$(awk '$1 == "floor_pct" {print $2}' "$baseline" 2>/dev/null || true)
# wait_keysym_publish yes (optional, hooked mode): the program waits before
# its first phase until the recorder has published a key-symbol set that
# covers hooked_guard's module (`ada status --json`'s keysym_cover: module
# id below `entries` and not among `unknown_ids`), so both phases measure
# the published set's directory entry for it. A version published before
# the recorder read hooked_guard's .syms (it may come first on a loaded
# machine) leaves the module past its directory or "unknown": the agent
# then answers from its own set on the C held path, far more instructions
# per event, until a later version covers it. Waiting only for the first
# publish made the guard flaky under load.
wait_publish=$(awk '$1 == "wait_keysym_publish" {print $2}' "$baseline" 2>/dev/null || true)
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

# mode hooked: bench/hooked_guard runs fib(N1) then fib(N2), each phase
# bracketed by callgrind client requests, so callgrind dumps exactly the
# instructions of each phase (<out>.1, <out>.2). The recorder runs natively;
# only the target is under valgrind: ada record -- valgrind ... hooked_guard.
# --include hooked_guard limits hooking to the program itself (a fast
# install under valgrind; nothing is hooked in valgrind's launcher).
phase_ir() { awk '/^summary:/ {print $2}' "$1"; }

bw_fib_calls() { # session dir: CALL count of hooked_guard's bw_fib
	local syms fid body
	# pid_N/module_*.syms (pid_N/modules/ in sessions of builds before).
	syms=$(grep -l '^path .*/hooked_guard$' "$1"/session_*/pid_*/module_*.syms \
		"$1"/session_*/pid_*/modules/module_*.syms 2>/dev/null | head -1) || true
	[ -n "$syms" ] || { echo 0; return; }
	# A version 2 file's function lines are in the body it names.
	body=$(awk '$1 == "body" {print $2; exit}' "$syms")
	fid=$(awk '$1 == "module_id" {m = $2} $1 == "F" && $6 == "bw_fib" {printf "%x%08x\n", m, $2}' \
		"$syms" ${body:+"$(dirname "$syms")/$body"})
	"$build/bench/atf_count" "$1" | awk -v f="$fid" '$1 == "F" && $2 == f {print $3}'
}

hooked_guard_module() { # session dir: hooked_guard's module id, or nothing
	local syms
	syms=$(grep -l '^path .*/hooked_guard$' "$1"/pid_*/module_*.syms \
		"$1"/pid_*/modules/module_*.syms 2>/dev/null | head -1) || true
	if [ -n "$syms" ]; then awk '$1 == "module_id" {print $2; exit}' "$syms" || true; fi
}

# Whether `ada status --json` (stdin) shows a key-symbol set in force that
# covers module $1: a directory entry for it (id < entries) that is not
# "unknown". unknown_ids lists only the first 16: with more unknown ids
# than listed, an unlisted id is not known to be covered.
keysym_covers() {
	python3 -c '
import json, sys
m = int(sys.argv[1])
c = json.load(sys.stdin).get("keysym_cover") or {}
ids = c.get("unknown_ids", [])
ok = (c.get("entries", 0) > m and m not in ids and c.get("unknown", 0) == len(ids))
sys.exit(0 if ok else 1)' "$1"
}

# Polls the live recording (pid $1 is `ada record`) until the key-symbol
# set in force covers hooked_guard's module: a condition with a generous
# bound (valgrind starts the program slowly on a loaded machine), never a
# fixed sleep.
wait_keysym_publish() {
	local rec=$1 end=$((SECONDS + 600)) session mod st
	while [ $SECONDS -lt $end ]; do
		kill -0 "$rec" 2>/dev/null || {
			echo "callgrind_guard: ada record ended before the key-symbol publish" >&2
			tail -5 "$work/t.log" >&2
			return 1
		}
		session=$(ls -d "$work/out"/session_* 2>/dev/null | head -1)
		mod=
		if [ -n "$session" ]; then mod=$(hooked_guard_module "$session"); fi
		if [ -n "$mod" ] && st=$("$build/ada" status "$session" --json 2>/dev/null) &&
			keysym_covers "$mod" <<<"$st"; then
			echo "callgrind_guard: key-symbol set $(grep -Eo '"keysym_version": ?[0-9]+' <<<"$st" | grep -Eo '[0-9]+$' || true) covers hooked_guard (module $mod); the phases start" >&2
			return 0
		fi
		sleep 0.1
	done
	echo "callgrind_guard: no key-symbol set covering hooked_guard within 600 s" >&2
	"$build/ada" status "$session" --json 2>&1 | tail -20 >&2 || true
	return 1
}

measure_hooked() {
	local n1=14 n2=18 prog=$build/bench/hooked_guard
	[ -x "$build/ada" ] && [ -x "$prog" ] || skip "ada or bench/hooked_guard not built"
	cg "$work/u" "$prog" $n1 $n2
	if [ "$wait_publish" = yes ]; then export HG_GO_FILE=$work/go; fi
	"$build/ada" record --include hooked_guard --detail "$detail" ${record_args[@]+"${record_args[@]}"} \
		--out "$work/out" -- \
		valgrind --tool=callgrind --smc-check=all --callgrind-out-file="$work/t" "$prog" $n1 $n2 \
		>"$work/t.stdout" 2>"$work/t.log" &
	local rec=$!
	if [ "$wait_publish" = yes ]; then
		wait_keysym_publish $rec || { kill $rec 2>/dev/null; wait $rec 2>/dev/null; exit 1; }
		: >"$work/go"
	fi
	wait $rec ||
		{ echo "callgrind_guard: ada record of valgrind failed" >&2; tail -5 "$work/t.log" >&2; exit 1; }
	local c1 c2 rec t1 t2 u1 u2 per=2
	c1=$(sed -n 's/^calls1=\([0-9]*\) .*/\1/p' "$work/t.stdout")
	c2=$(sed -n 's/.*calls2=\([0-9]*\)$/\1/p' "$work/t.stdout")
	rec=$(bw_fib_calls "$work/out")
	if [ "$mode" = count ]; then # events + the agent's count; Ir per call
		per=1
		rec=$((${rec:-0} + $(python3 -c '
import glob, json, sys
n = 0
for p in glob.glob(sys.argv[1] + "/session_*/pid_*/manifest.json"):
    for e in (json.load(open(p)).get("count_only") or {}).get("functions", []):
        n += e["calls"] if e.get("name") == "bw_fib" else 0
print(n)' "$work/out")))
	fi
	if [ "${rec:-0}" != $((c1 + c2)) ]; then
		echo "callgrind_guard: the trace has ${rec:-0} calls of bw_fib, the program made $((c1 + c2))" >&2
		exit 1
	fi
	t1=$(phase_ir "$work/t.1"); t2=$(phase_ir "$work/t.2")
	u1=$(phase_ir "$work/u.1"); u2=$(phase_ir "$work/u.2")
	echo "callgrind_guard: hooked: phase Ir traced $t1 / $t2, untraced $u1 / $u2, bw_fib calls $c1 / $c2" >&2
	awk -v t1="$t1" -v t2="$t2" -v u1="$u1" -v u2="$u2" -v x="$((per * c1))" -v y="$((per * c2))" \
		'BEGIN {printf "%.3f\n", ((t2 - t1) - (u2 - u1)) / (y - x)}'
}

case $mode in
emit) value=$(measure_emit) ;;
hooked | count) value=$(measure_hooked) ;;
*) echo "callgrind_guard: unknown mode $mode" >&2; exit 2 ;;
esac
echo "callgrind_guard: mode $mode: $value instructions per recorded event"

if [ $update = 1 ]; then
	{
		# The baseline's comments (why its value is what it is) stay.
		if grep -q '^#' "$baseline" 2>/dev/null; then
			grep '^#' "$baseline"
		else
			cat <<EOF
# Baseline of bench/callgrind_guard.sh: instructions per recorded event on
# ada's hot path, measured with valgrind --tool=callgrind (see the script for
# the exact definition). CI fails when a change makes it > margin_pct higher.
# Update with: bench/callgrind_guard.sh BUILD_DIR --update --baseline THIS_FILE
EOF
		fi
		cat <<EOF
mode $mode
detail $detail
EOF
		for a in ${record_args[@]+"${record_args[@]}"}; do echo "record_arg $a"; done
		echo "margin_pct $margin"
		if [ -n "$floor" ]; then echo "floor_pct $floor"; fi
		if [ -n "$wait_publish" ]; then echo "wait_keysym_publish $wait_publish"; fi
		echo "ir_per_event $value"
	} >"$baseline.tmp"
	mv "$baseline.tmp" "$baseline"
	echo "callgrind_guard: baseline updated: $baseline"
	exit 0
fi
base_mode=$(awk '$1 == "mode" {print $2}' "$baseline")
base=$(awk '$1 == "ir_per_event" {print $2}' "$baseline")
[ -n "$base" ] || { echo "callgrind_guard: no ir_per_event in $baseline" >&2; exit 1; }
[ "$base_mode" = "$mode" ] || { echo "callgrind_guard: baseline is for mode $base_mode, measured $mode" >&2; exit 1; }
awk -v v="$value" -v b="$base" -v m="$margin" -v f="$floor" 'BEGIN {
	if (f != "" && v < b * (1 - f / 100)) { printf "callgrind_guard: FAIL: %.3f Ir/event is more than %s %% below the baseline %.3f (is the measured work still done?)\n", v, f, b; exit 1 }
	lim = b * (1 + m / 100)
	printf "callgrind_guard: baseline %.3f, limit %.3f (+%s %%)\n", b, lim, m
	if (v > lim) { printf "callgrind_guard: FAIL: %.3f Ir/event is %.1f %% above the baseline\n", v, (v / b - 1) * 100; exit 1 }
	if (v < b * 0.90) printf "callgrind_guard: note: %.1f %% below the baseline; consider --update\n", (1 - v / b) * 100
	print "callgrind_guard: OK"
}'
