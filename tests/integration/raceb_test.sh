#!/bin/bash
# Race B, the product side (issue 35): a recorded child ends and a
# stranger takes its pid before the recorder looks at the child's arena.
# The stranger is no descendant, yet the arena got its name before the
# stranger started: its maker is gone, and its events are the recording's.
# The recorder must record them (pid_P/ with exactly the child's events),
# not refuse the arena as a stranger's.
# Forced, not raced: in a pid namespace of its own (root; skipped
# otherwise) the recorder is stopped (SIGSTOP) while the child runs and
# ends, the child's pid is given to a `sleep` through ns_last_pid, then the
# recorder goes on. The namespace has its own /tmp (the per-user registry)
# and no other process: its pids cannot be taken by anyone else, and the
# recorder there prunes or recovers nothing of the machine's.
#   raceb_test.sh ADA PRODUCER_RACEB
set -u
ADA=$1 PROD=$2
PIDNS_TAG=raceb_test
. "$(dirname "$0")/pidns.sh"
pidns_enter RACEB_INNER "$0" "$@"
pidns_private_tmp "$ADA:ada" "$PROD:producer_raceb"
ADA=$BIN/ada PROD=$BIN/producer_raceb
export ADA_NO_RECOVER_ORPHANS=1
W=/tmp/raceb
mkdir -p $W
cleanup() {
	[ -n "${APID:-}" ] && kill -CONT "$APID" 2>/dev/null && kill -KILL "$APID" 2>/dev/null
	[ -n "${X:-}" ] && kill -KILL "$X" 2>/dev/null
	# The program itself is not recorded: no manifest may name it.
	pidns_remove_arenas "$W/out"
}
trap cleanup EXIT
fail() { echo "raceb_test: $*" >&2; cat "$W/err" >&2 2>/dev/null; exit 1; }

"$ADA" record --no-agent --out "$W/out" -- "$PROD" "$W/g1" "$W/g2" 10 >"$W/stdout" 2>"$W/err" &
APID=$!
for _ in $(seq 200); do ls -d "$W"/out/session_* >/dev/null 2>&1 && break; sleep 0.05; done
sleep 0.2 # the program is started (it waits for g1)
kill -STOP $APID
touch "$W/g1"
for _ in $(seq 400); do grep -q "^child " "$W/stdout" && break; sleep 0.05; done
P=$(sed -n 's/^child \([0-9]*\)$/\1/p' "$W/stdout")
[ -n "$P" ] || fail "the target did not say its child's pid"
sleep 0.1 # the arena's name older than the stranger by more than a clock tick
echo $((P - 1)) >/proc/sys/kernel/ns_last_pid
sleep 60 &
X=$!
[ "$X" -eq "$P" ] || fail "the stranger got pid $X, not the child's $P"
kill -CONT $APID
sleep 0.3
touch "$W/g2"
wait $APID
rc=$?
APID=
kill -KILL $X
[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
S=$(tail -n 1 "$W/err")
[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
! grep -q "ignored the arena of process $P" "$W/err" || fail "the child's arena was refused"
[ -f "$S/pid_$P/manifest.json" ] || fail "no pid_$P/manifest.json: the child was not recorded"
n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"]["events_written"])' "$S/pid_$P/manifest.json")
[ "$n" -eq 10 ] || fail "pid_$P holds $n events, not the child's 10"
"$ADA" validate "$S" >"$W/validate" 2>&1 || { cat "$W/validate" >&2; fail "ada validate failed"; }
echo "raceb: the child $P's 10 events recorded though a stranger held its pid"
exit 0
