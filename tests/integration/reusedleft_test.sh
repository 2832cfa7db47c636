#!/bin/bash
# A pid reused by a stranger is never named as a descendant still running
# (issue 35: "3 processes were still running 2 s after the program
# exited: gmake, sh, cc" in a loaded bounded_forks, pids of its ended
# children held by other sessions' builds). A recorded child ends, reaped
# by its parent (not by the recorder), and its pid goes to a stranger
# while the recorder has not yet finished the child; the recording then
# ends by the 2 s rule (a daemon outlives the program). The summary must
# name the daemon alone, and the child's events must all be recorded.
# Forced, not raced: in a pid namespace of its own (root; skipped
# otherwise) the recorder is stopped (SIGSTOP) once it reaped the program
# and admitted the child; the child ends, its pid is given to a `sleep`
# through ns_last_pid, the 2 s pass, then the recorder goes on: its first
# pass sees the child gone with its status unknown, and the 2 s rule is
# due in the same pass.
#   reusedleft_test.sh ADA PRODUCER_ENDLAG
set -u
ADA=$1 PROD=$2
K=10
PIDNS_TAG=reusedleft_test
. "$(dirname "$0")/pidns.sh"
pidns_enter REUSED_INNER "$0" "$@"
pidns_private_tmp "$ADA:ada" "$PROD:producer_endlag"
ADA=$BIN/ada PROD=$BIN/producer_endlag
export ADA_NO_RECOVER_ORPHANS=1
W=/tmp/reusedleft
mkdir -p $W
cleanup() {
	[ -n "${APID:-}" ] && kill -CONT "$APID" 2>/dev/null && kill -KILL "$APID" 2>/dev/null
	[ -n "${X:-}" ] && { kill -KILL "$X" && wait "$X"; } 2>/dev/null
	[ -n "${D:-}" ] && kill -KILL "$D" 2>/dev/null
	pidns_remove_arenas "$W/out"
}
trap cleanup EXIT
fail() { echo "reusedleft_test: $*" >&2; cat "$W/err" >&2 2>/dev/null; exit 1; }

"$ADA" record --no-agent --detail never --out "$W/out" -- "$PROD" --reused "$W/gate" $K \
	>"$W/stdout" 2>"$W/err" &
APID=$!
for _ in $(seq 600); do grep -q "^child " "$W/stdout" && break; sleep 0.05; done
M=$(sed -n 's/^program \([0-9]*\)$/\1/p' "$W/stdout")
D=$(sed -n 's/^daemon \([0-9]*\)$/\1/p' "$W/stdout")
P=$(sed -n 's/^child \([0-9]*\)$/\1/p' "$W/stdout")
[ -n "$M" ] && [ -n "$D" ] && [ -n "$P" ] || fail "the target did not say its pids"
# The child's arena admitted, the program reaped by the recorder (its
# zombie gone from /proc).
for _ in $(seq 600); do ls "$W"/out/session_*/pid_"$P"/manifest.json >/dev/null 2>&1 && break; sleep 0.05; done
ls "$W"/out/session_*/pid_"$P"/manifest.json >/dev/null 2>&1 || fail "the child $P was not admitted"
for _ in $(seq 600); do [ -e /proc/"$M" ] || break; sleep 0.05; done
[ -e /proc/"$M" ] && fail "the program $M was not reaped"
kill -STOP $APID
touch "$W/gate"
for _ in $(seq 600); do [ -e /proc/"$P" ] || break; sleep 0.05; done
[ -e /proc/"$P" ] && fail "the child $P did not end"
echo $((P - 1)) >/proc/sys/kernel/ns_last_pid
sleep 60 &
X=$!
[ "$X" -eq "$P" ] || fail "the stranger got pid $X, not the child's $P"
sleep 2.5 # the 2 s after the program's reap pass while the recorder is stopped
kill -CONT $APID
wait $APID
rc=$?
APID=
[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
for _ in $(seq 600); do kill -0 "$D" 2>/dev/null || break; sleep 0.05; done
S=$(tail -n 1 "$W/err")
[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
grep -q "$P (sleep)" "$W/err" && fail "the stranger $P (sleep) was named as a process of the recording"
grep -q "^ada: 1 process was still running 2 s after the program exited: $D (" "$W/err" ||
	fail "the daemon $D alone is not named as still running"
read -r CW CD <<EOT
$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
print(m["metrics"]["events_written"], sum(m["drops"]["index"].values()))' "$S/pid_$P/manifest.json")
EOT
[ "$CW" -eq $K ] || fail "pid_$P holds $CW events, not the child's $K"
[ "$CD" -eq 0 ] || fail "pid_$P has $CD drops, expected none"
"$ADA" validate "$S" >"$W/validate" 2>&1 || { cat "$W/validate" >&2; fail "ada validate failed"; }
echo "reusedleft: the child $P's $K events recorded; its pid's stranger not named, the daemon $D alone"
exit 0
