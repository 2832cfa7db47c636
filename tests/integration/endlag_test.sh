#!/bin/bash
# The end of a recording whose drain is behind (issue 35: bounded_forks
# recorded 14 650 of 15 000 events with "drops 0" at load 66-160). A
# daemon outlives the program, so the recording ends by the 2 s rule for
# descendants still running, which bounds the last drain's time. The test
# hook ADA_TEST_END_PAUSE holds the drain after it decided to end, before
# its last scan, as a loaded machine can deschedule it there; meanwhile a
# child records K events and ends, and the daemon emits K more and waits
# past that bound. The child's events must all be recorded (it ended: its
# rings are read whole, however late), the daemon's last K counted as
# unread_at_end drops (summary line, manifest, `ada status`); written plus
# dropped is everything emitted. Only the daemon is named as running.
# Every event has a detail record and a manual fire's window covers them
# all: the records of events never read are the window's unread_at_end
# (window_missed), the rest written, none silently missing.
#
# With MODE outlive: a program that outlives the recording (issue 35)
# must leave nothing in /dev/shm. The test hook ADA_TEST_SHM_PAUSE holds
# the recorder after it cleared the arena directory and before it removes
# it; a child of the daemon asks for an arena then, and 20 more once the
# recorder is gone. None may make one (the recording ended: they run
# untraced), and the arena directory must be gone once the daemon exited.
#   endlag_test.sh ADA PRODUCER_ENDLAG [outlive]
set -u
ADA=$1 PROD=$2 MODE=${3:-endlag}
K=10
WORK=$(mktemp -d /tmp/ada_endlag.XXXXXX)
cleanup() {
	[ -n "${D:-}" ] && kill -KILL "$D" 2>/dev/null
	for m in "$WORK"/out/session_*/pid_*/manifest.json; do
		[ -f "$m" ] || continue
		A=$(sed -n 's/.*"arena_dir": "\(.*\)".*/\1/p' "$m" | head -n 1)
		case "$A" in /dev/shm/ada-*) rm -rf "$A" ;; esac
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "endlag_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

if [ "$MODE" = outlive ]; then
	ADA_TEST_SHM_PAUSE=$WORK/gate timeout -s KILL 100 "$ADA" record --no-agent --detail never \
		--out "$WORK/out" -- "$PROD" --outlive "$WORK/gate" 20 >"$WORK/stdout" 2>"$WORK/err"
	rc=$?
	D=$(sed -n 's/^daemon \([0-9]*\)$/\1/p' "$WORK/stdout")
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	[ -n "$D" ] || fail "the target did not say its daemon's pid"
	for _ in $(seq 600); do kill -0 "$D" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$D" 2>/dev/null && fail "the daemon $D is still running"
	D=
	S=$(tail -n 1 "$WORK/err")
	[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
	A=$(sed -n 's/.*"arena_dir": "\(.*\)".*/\1/p' "$S"/pid_*/manifest.json | head -n 1)
	[ -n "$A" ] || fail "no arena directory in the manifest"
	during=$(sed -n 's/^during \(.*\)$/\1/p' "$WORK/stdout")
	after=$(sed -n 's/^after \(.*\)$/\1/p' "$WORK/stdout")
	[ -e "$A" ] && fail "the arena directory $A is left: $(ls "$A" | head -n 5)"
	[ "$during" = 3 ] || fail "a process started as the recorder cleared its directory got $during, expected 3 (ESRCH: the recording ended)"
	[ "$after" = 0 ] || fail "$after of 20 processes started after the recording made an arena"
	echo "outlive: nothing left in /dev/shm; a process started at the end got ESRCH"
	exit 0
fi

ADA_TEST_END_PAUSE=$WORK/gate timeout -s KILL 100 "$ADA" record --no-agent --trigger manual \
	--post-roll-sec 60 --detail-mb 1 \
	--out "$WORK/out" -- "$PROD" "$WORK/gate" $K >"$WORK/stdout" 2>"$WORK/err"
rc=$?
D=$(sed -n 's/^daemon \([0-9]*\)$/\1/p' "$WORK/stdout")
C=$(sed -n 's/^child \([0-9]*\)$/\1/p' "$WORK/stdout")
[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
[ -n "$D" ] && [ -n "$C" ] || fail "the target did not say its daemon's and child's pids"
# The daemon exits once the recorder is gone.
for _ in $(seq 600); do kill -0 "$D" 2>/dev/null || break; sleep 0.1; done
kill -0 "$D" 2>/dev/null && fail "the daemon $D is still running"
D_=$D
D=
S=$(tail -n 1 "$WORK/err")
[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
read -r CW DW DU ALL DR DM DL <<EOT
$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1] + "/pid_" + sys.argv[2] + "/manifest.json"))
d = json.load(open(sys.argv[1] + "/pid_" + sys.argv[3] + "/manifest.json"))
w = d["flight_recorder"]["windows"]
print(c["metrics"]["events_written"], d["metrics"]["events_written"],
      d["drops"]["index"]["unread_at_end"], sum(c["drops"]["index"].values()),
      sum(x["records"] for x in w), sum(x["window_missed"]["unread_at_end"] for x in w),
      sum(x["window_lost"] for x in w))' "$S" "$C" "$D_")
EOT
[ "$CW" -eq $K ] || fail "the child $C has $CW events written, expected its $K"
[ "$ALL" -eq 0 ] || fail "the child $C has $ALL drops, expected none"
[ $((DW + DU)) -eq $((2 * K)) ] || fail "the daemon $D_: $DW written + $DU unread_at_end, expected $((2 * K))"
[ "$DU" -gt 0 ] || fail "the daemon's last $K events were read: the hook did not hold the end"
# The window (the manual fire's, over every event): each record of an
# event taken is written, each of an event never read is counted.
[ "$DR" -eq "$DW" ] && [ "$DM" -eq "$DU" ] && [ "$DL" -eq 0 ] ||
	fail "the daemon's window: $DR records written (expected $DW), $DM unread_at_end (expected $DU), $DL window_lost"
grep -q "records windows wanted were not written (unread_at_end $DU:" "$WORK/err" ||
	fail "the summary's flight line does not say unread_at_end $DU"
grep -q "^ada: recorded $((CW + DW)) events .* drops $DU (unread_at_end $DU)" "$WORK/err" ||
	fail "the summary line does not say $((CW + DW)) events, drops $DU (unread_at_end $DU)"
grep -q "1 process was still running 2 s after the program exited: $D_ (" "$WORK/err" ||
	fail "the daemon $D_ alone is not named as still running"
"$ADA" status "$S" >"$WORK/status" 2>&1 || fail "ada status failed"
grep -q "drops $DU (unread_at_end $DU)" "$WORK/status" ||
	{ cat "$WORK/status" >&2; fail "ada status does not say drops $DU (unread_at_end $DU)"; }
grep -q "wanted records not written (unread_at_end $DU;" "$WORK/status" ||
	{ cat "$WORK/status" >&2; fail "ada status does not say the window's unread_at_end $DU"; }
"$ADA" windows "$S" >"$WORK/windows" 2>&1 || { cat "$WORK/windows" >&2; fail "ada windows failed"; }
grep -q "wanted records not written: unread_at_end $DU)" "$WORK/windows" ||
	{ cat "$WORK/windows" >&2; fail "ada windows does not say the window's unread_at_end $DU"; }
"$ADA" validate "$S" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }
A=$(sed -n 's/.*"arena_dir": "\(.*\)".*/\1/p' "$S/pid_$C/manifest.json" | head -n 1)
[ -e "$A" ] && fail "the arena directory $A is left after the daemon exited: $(ls "$A" | head -n 5)"
echo "endlag: child $C's $K events written; daemon $D_ $DW written, $DU counted unread_at_end"
exit 0
