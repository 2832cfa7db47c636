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
if [ "${RACEB_INNER:-}" != 1 ]; then
	[ "$(id -u)" -eq 0 ] || { echo "raceb_test: needs root for a pid namespace: skipped"; exit 77; }
	unshare --pid --fork --mount-proc true 2>/dev/null ||
		{ echo "raceb_test: cannot make a pid namespace (unshare): skipped"; exit 77; }
	RACEB_INNER=1 exec timeout -s KILL 120 unshare --pid --fork --mount-proc bash "$0" "$@"
fi
# The private /tmp hides whatever is under the machine's (a checkout in
# a mktemp -d, as CI makes): the two programs are run from a copy.
BIN=$(mktemp -d /dev/shm/raceb-bin.XXXXXX) || { echo "raceb_test: no room in /dev/shm"; exit 1; }
cp "$ADA" "$BIN/ada" && cp "$PROD" "$BIN/producer_raceb" || { rm -rf "$BIN"; exit 1; }
ADA=$BIN/ada PROD=$BIN/producer_raceb
mount -t tmpfs -o size=64m tmpfs /tmp || { rm -rf "$BIN"; echo "raceb_test: no private /tmp: skipped"; exit 77; }
cd / # the working directory may be under the /tmp just hidden (python's shim needs one)
export ADA_NO_RECOVER_ORPHANS=1
W=/tmp/raceb
mkdir -p $W
cleanup() {
	[ -n "${APID:-}" ] && kill -CONT "$APID" 2>/dev/null && kill -KILL "$APID" 2>/dev/null
	[ -n "${X:-}" ] && kill -KILL "$X" 2>/dev/null
	# The arena directory whose owner record names this session (the
	# program itself is not recorded: there may be no manifest naming
	# it). Not by the session's name alone: a test beside this one may
	# have started a session of the same name in the same second.
	for s in "$W"/out/session_*; do
		[ -d "$s" ] || continue
		for d in /dev/shm/ada-"$(basename "$s")"-*; do
			grep -qxF "session $s" "$d/recorder" 2>/dev/null && rm -rf "$d"
		done
	done
	rm -rf "$BIN"
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
