#!/bin/sh
# A flood of fake arena names (issue 35 item 1): t_flood makes N empty
# files named like arenas in its own $ADA_ARENA_DIR. The recorder must
# exit (a `timeout` guard, not a timing assertion), keep every manifest
# under 100 kB, tell a refusal once with the count of its kind (taken),
# tell nothing for pids that cannot exist (absent), end on a SIGTERM sent
# while the names are being looked at (hold), end on a SIGTERM that the
# program ignores while it goes on making names (endless: the recording
# is finalized, the program is told as left running), and leave a session
# `ada validate` accepts.
#   arena_flood_test.sh ADA T_FLOOD MODE
set -u
ADA=$1 PROG=$2 MODE=$3
N=20000
WORK=$(mktemp -d /tmp/ada_flood.XXXXXX)
OUT="$WORK/out"
cleanup() {
	[ -n "${APID:-}" ] && kill -KILL "$APID" 2>/dev/null
	[ -n "${PPID_FLOOD:-}" ] && kill -KILL "$PPID_FLOOD" 2>/dev/null
	for m in "$OUT"/session_*/pid_*/manifest.json; do
		[ -f "$m" ] || continue
		A=$(sed -n 's/.*"arena_dir": "\(.*\)".*/\1/p' "$m" | head -n 1)
		case "$A" in /dev/shm/ada-*) rm -rf "$A" ;; esac
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "arena_flood_test($MODE): $*" >&2; tail -n 20 "$WORK/err" >&2 2>/dev/null; exit 1; }

run() {
	timeout -s KILL 240 "$ADA" record --no-agent --out "$OUT" -- "$PROG" "$MODE" $N >"$WORK/stdout" 2>"$WORK/err"
	RC=$?
}

if [ "$MODE" = hold ] || [ "$MODE" = endless ]; then
	# timeout passes the SIGTERM it gets on to ada.
	timeout -s KILL 240 "$ADA" record --no-agent --out "$OUT" -- "$PROG" "$MODE" $N >"$WORK/stdout" 2>"$WORK/err" &
	APID=$!
	i=0
	until grep -q READY "$WORK/stdout" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 1200 ] || fail "the target never said READY"
		sleep 0.1
	done
	PPID_FLOOD=$(sed -n 's/^READY \([0-9][0-9]*\)$/\1/p' "$WORK/stdout")
	kill -TERM $APID
	wait $APID
	RC=$?
	APID=""
	if [ -n "$PPID_FLOOD" ]; then # endless: it ignored the SIGTERM
		kill -KILL "$PPID_FLOOD" 2>/dev/null
		while kill -0 "$PPID_FLOOD" 2>/dev/null; do sleep 0.05; done
	fi
else
	run
fi
[ "${RC:-0}" -ne 137 ] || fail "the recorder did not exit (killed by the guard)"
S=$(tail -n 1 "$WORK/err")
[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
for m in "$S"/pid_*/manifest.json; do
	[ -f "$m" ] || fail "no manifest"
	sz=$(wc -c <"$m")
	[ "$sz" -lt 102400 ] || fail "$m is $sz bytes, at least 100 kB"
done
case $MODE in
taken)
	[ "$RC" -eq 0 ] || fail "exit status $RC"
	n=$(grep -c "ignored the arena of process" "$WORK/err")
	[ "$n" -eq 1 ] || fail "$n lines tell an ignored arena, expected 1"
	grep -q "(and $((N - 1)) more arenas ignored for the same reason)" "$S"/pid_*/manifest.json ||
		fail "the manifest does not count the $((N - 1)) further refusals"
	;;
endless)
	n=$(grep -c "ignored the arena of process" "$WORK/err")
	[ "$n" -eq 1 ] || fail "$n lines tell an ignored arena, expected 1"
	n=$(grep -c "still running when the recording was stopped by a signal: $PPID_FLOOD (t_flood)" "$WORK/err")
	[ "$n" -eq 1 ] || fail "$n lines tell the program left running, expected 1"
	for m in "$S"/pid_*/manifest.json; do
		python3 - "$m" <<'PY' || fail "$m is not the finalized manifest of a stopped recording"
import json, sys
m = json.load(open(sys.argv[1]))
w = m["warnings"]
assert m["state"] == "complete", m["state"]
assert len(w) == 3, w
# Each once, in any order: on a loaded machine the drain may meet the
# flood's names only after the signal stopped the recording.
for want in ("more arenas ignored for the same reason", "stopped by a signal",
             "still running when the recording ended"):
    assert sum(want in x for x in w) == 1, (want, w)
PY
	done
	;;
absent)
	[ "$RC" -eq 0 ] || fail "exit status $RC"
	n=$(grep -c "ignored" "$WORK/err")
	[ "$n" -eq 0 ] || fail "$n lines tell ignored arenas of pids that do not exist"
	;;
esac
"$ADA" validate "$S" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }
exit 0
