#!/usr/bin/env bash
# The front-end pressure behind the scaling table's "hot functions" axis,
# load-independent (issue 13 item 3): callgrind with its cache and branch
# simulators (--cache-sim=yes --branch-sim=yes: a modelled L1i/LL and branch
# predictor, not this CPU's) over scaleN (N = 10, 200, 5000), one thread,
# untraced and under `ada record --include scaleN --detail never`, each at
# two sizes (only inside bw_thread_main); per event: ((traced2 - traced1) - (untraced2 - untraced1)) /
# (events2 - events1), i.e. what ada adds per event, start-up excluded, and
# the same for the program alone per event it makes.
#   bench/scaling_callgrind.sh BUILD_DIR [CALLS1 CALLS2]
# Needs valgrind and the bench workloads built (bench/run.sh builds them).
set -euo pipefail
build=$(cd "${1:?usage: scaling_callgrind.sh BUILD_DIR [CALLS1 CALLS2]}" && pwd)
c1=${2:-100000} c2=${3:-300000}
command -v valgrind >/dev/null || { echo "scaling_callgrind: valgrind not installed" >&2; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ada-scaling-cg.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Collected only inside bw_thread_main (its callees, trampolines and hook
# handlers included): the agent's start-up (hooking, analysis: more of it
# on a cold plan cache) is not counted, whatever the cache state.
cg=(valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes --smc-check=all
	--toggle-collect=bw_thread_main)

# summary FILE: "Ir I1mr ILmr Bc Bcm Bi Bim" of a callgrind output file
# (callgrind leaves trailing zero counts out of its summary line: + 0).
summary() {
	awk '/^events:/ {for (i = 2; i <= NF; i++) col[$i] = i}
	     /^summary:/ {print $col["Ir"] + 0, $col["I1mr"] + 0, $col["ILmr"] + 0, $col["Bc"] + 0,
	                  $col["Bcm"] + 0, $col["Bi"] + 0, $col["Bim"] + 0}' "$1"
}
# events DIR: the CALL+RETURN events of bw_* recorded in an ada session.
recorded() {
	local total=0 syms mod body
	# pid_N/module_*.syms (pid_N/modules/ in sessions of builds before).
	for syms in "$1"/session_*/pid_*/module_*.syms "$1"/session_*/pid_*/modules/module_*.syms; do
		[ -f "$syms" ] || continue
		mod=$(awk '$1 == "module_id" {print $2; exit}' "$syms")
		# A version 2 file's function lines are in the body it names.
		body=$(awk '$1 == "body" {print $2; exit}' "$syms")
		awk -v m="$mod" '$1 == "F" && $6 ~ /^bw_/ {printf "%x%08x\n", m, $2}' "$syms" \
			${body:+"$(dirname "$syms")/$body"}
	done >"$work/ids"
	"$build/bench/atf_count" "$1" | awk 'NR == FNR {id[$1] = 1; next}
		$1 == "F" && ($2 in id) {n += $3 + $4} END {print n + 0}' "$work/ids" -
}

printf '| hot functions | program Ir/event | program I1 misses/1000 events | ada Ir/event | ada I1 misses/event | ada LL i-misses/event | ada mispredicted cond. branches/event | ada mispredicted indirect branches/event |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for n in 10 200 5000; do
	prog=$build/bench/plain/scale$n
	[ -x "$prog" ] || { echo "scaling_callgrind: $prog not built" >&2; exit 1; }
	for c in $c1 $c2; do
		"${cg[@]}" --callgrind-out-file="$work/u$c" "$prog" 1 "$c" 2>"$work/u$c.log"
		rm -rf "$work/out$c"
		"$build/ada" record --include "scale$n" --detail never --max-disk-mb 0 \
			--out "$work/out$c" -- "${cg[@]}" --callgrind-out-file="$work/t$c" "$prog" 1 "$c" \
			>/dev/null 2>"$work/t$c.log"
		ev=$(sed -n 's/.*bench: workload=[^ ]* calls=[0-9]* events=\([0-9]*\).*/\1/p' "$work/t$c.log")
		rec=$(recorded "$work/out$c")
		if [ "$ev" != "$rec" ]; then
			echo "scaling_callgrind: scale$n $c calls: program counted $ev events, the recording has $rec" >&2
			exit 1
		fi
		echo "$ev" >"$work/ev$c"
	done
	e1=$(cat "$work/ev$c1") e2=$(cat "$work/ev$c2")
	paste <(summary "$work/u$c1") <(summary "$work/u$c2") <(summary "$work/t$c1") \
		<(summary "$work/t$c2") | awk -v n="$n" -v e="$((e2 - e1))" '{
		# columns: u1[1..7] u2[8..14] t1[15..21] t2[22..28]
		for (i = 1; i <= 7; i++) { u[i] = ($(i + 7) - $i) / e; t[i] = (($(i + 21) - $(i + 14)) - ($(i + 7) - $i)) / e }
		printf "| %d | %.1f | %.2f | %.1f | %.3f | %.3f | %.3f | %.3f |\n", n, u[1], u[2] * 1000, t[1], t[2], t[3], t[5], t[7]
	}'
done
