#!/bin/sh
# Arenas whose recorder was killed (issue 38): the next ada command that
# starts recovers them into their session and removes them.
#   orphan_test.sh ADA PRODUCER CHECK MODE [RACEB]
#   ls          SIGKILL the recorder under a running producer_kill: `ada ls`
#               leaves the arena while the producer still maps it (and says
#               so), then, once it is killed too, recovers every event its
#               arena held (producer_check counts) and removes the directory;
#               `ada recover` by hand afterwards changes nothing
#   optout      ADA_NO_RECOVER_ORPHANS=1 and `ada --no-recover-orphans` leave
#               it; a recording made under the variable is left by a plain
#               `ada status` too, and `ada recover --all` takes it
#   young       the same, the recorder killed before the program's first
#               manifest (ADA_TEST_NO_EARLY_MANIFEST=1): recover finds the
#               arena through its directory's owner record, and every event
#               its arena held is recovered
#   unadmitted  the recorder stopped, a child records 10 events, the
#               recorder killed: recover gives the child the pid_N the
#               recorder never made and reads its arena (RACEB: producer_raceb)
#   other_user  (root) an arena directory another user owns is left alone
# Each runs in a /dev/shm of its own (a tmpfs in a mount namespace of its
# own), so each scan finds only its own recording: in the machine's
# /dev/shm, `ada recover --all` (optout) took the recordings other tests
# kill on purpose and recover themselves, in the middle of those tests
# (pipeline_serial_kill, pipeline_retention_recover ...: the suite runs
# every other test with ADA_NO_RECOVER_ORPHANS=1, which --all overrides).
# Root only (CI's case); otherwise skipped.
set -u
ADA=$1 PROD=$2 CHECK=$3 MODE=$4 RACEB=${5:-}
if [ "${ORPHAN_TEST_SHM:-}" != 1 ]; then
	[ "$(id -u)" -eq 0 ] || { echo "orphan_test($MODE): needs root for a /dev/shm of its own: skipped"; exit 77; }
	unshare -m --propagation private true 2>/dev/null ||
		{ echo "orphan_test($MODE): cannot make a mount namespace (unshare): skipped"; exit 77; }
	export ORPHAN_TEST_SHM=1
	exec unshare -m --propagation private sh -c 'mount -t tmpfs -o size=2g,mode=1777 tmpfs /dev/shm ||
		{ echo "orphan_test: cannot mount a tmpfs on /dev/shm: skipped"; exit 77; }
		exec sh "$0" "$@"' "$0" "$@"
fi
[ -x "$ADA" ] || { echo "orphan_test($MODE): $ADA is not there under a /dev/shm of its own" >&2; exit 1; }
# producer_check reads ATF v2: a compact session through its export.
. "$(dirname "$0")/atf_view.sh"
unset ADA_NO_RECOVER_ORPHANS
WORK=$(mktemp -d /tmp/ada_orphan.XXXXXX)
A=
P=
cleanup() {
	[ -n "$P" ] && kill -KILL "$P" 2>/dev/null
	[ -n "$A" ] && rm -rf "$A"
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "orphan_test($MODE): $*" >&2; cat "$WORK/err" "$WORK/ls" >&2 2>/dev/null; exit 1; }

wait_for() {
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -gt 1200 ] && fail "timed out waiting for $1"
		sleep 0.1
	done
}

# Records producer_kill in kill mode and SIGKILLs the recorder once every
# thread is running; sets S (session), A (its arena directory), P (the
# producer, still running). Extra environment for `ada record`: "$@".
record_and_kill() {
	env "$@" "$ADA" record --no-agent --out "$WORK/out" -- "$PROD" kill "$WORK/counts" 2>"$WORK/err" &
	APID=$!
	wait_for "$WORK/counts.ready"
	P=$(cat /proc/$APID/task/*/children 2>/dev/null | awk '{print $1}')
	[ -n "$P" ] || fail "no producer process under ada"
	S=$(ls -d "$WORK"/out/session_* | head -n 1)
	# The early manifest comes once the process has run 20 ms (docs/manifest.md).
	i=0
	until ls "$S"/pid_*/manifest.json >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -gt 1200 ] && fail "timed out waiting for the early manifest"
		sleep 0.1
	done
	A=$(sed -n 's/.*"arena_dir": "\(\/dev\/shm\/ada-[^"/]*\)".*/\1/p' "$S"/pid_*/manifest.json | head -n 1)
	[ -d "$A" ] || fail "no arena directory named by the manifest: '$A'"
	kill -KILL $APID
	wait $APID 2>/dev/null
}

end_producer() {
	kill -KILL "$P"
	while kill -0 "$P" 2>/dev/null; do sleep 0.05; done
	P=
}

recovered_all() {
	grep -q '"state": "recovered"' "$S"/pid_*/manifest.json || fail "manifest not recovered"
	check_atf "$ADA" "$CHECK" "$S" "$WORK/atf" counts "$WORK/counts" || fail "the recovered session lacks events"
	[ -e "$A" ] && fail "arena directory $A left in /dev/shm"
	"$ADA" validate "$S" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }
}

case $MODE in
ls)
	record_and_kill
	"$ADA" ls "$WORK/out" >/dev/null 2>"$WORK/ls" || fail "ada ls failed"
	grep -q "still maps its shared memory $A: left as it is" "$WORK/ls" || fail "ada ls did not say the running program keeps its arena"
	[ -d "$A" ] || fail "the arena of a running program was removed"
	grep -q '"state": "recording"' "$S"/pid_*/manifest.json || fail "recovered under a running program"
	end_producer
	"$ADA" ls "$WORK/out" >/dev/null 2>"$WORK/ls" || fail "ada ls failed"
	grep -q "recovered the recording of [0-9:]* whose recorder was killed: $S, 1 process, [0-9]* events" "$WORK/ls" ||
		fail "ada ls did not say it recovered $S"
	recovered_all
	# `ada recover` by hand afterwards finds it final: the manifest keeps
	# what the first recovery read from the arena.
	cp "$S"/pid_*/manifest.json "$WORK/manifest.1"
	"$ADA" recover "$S" 2>>"$WORK/ls" || fail "ada recover of a recovered session failed"
	cmp -s "$WORK/manifest.1" "$S"/pid_*/manifest.json || fail "ada recover rewrote a recovered manifest whose arena is gone"
	# Nothing more to do: the next one is silent about it.
	"$ADA" ls "$WORK/out" >/dev/null 2>"$WORK/ls" || fail "ada ls failed"
	grep -q "$S" "$WORK/ls" && fail "a second ada ls spoke of $S again"
	;;
optout)
	record_and_kill
	end_producer
	ADA_NO_RECOVER_ORPHANS=1 "$ADA" ls "$WORK/out" >/dev/null 2>"$WORK/ls" || fail "ada ls failed"
	"$ADA" --no-recover-orphans status "$S" >/dev/null 2>>"$WORK/ls"
	grep -q "recovered the recording" "$WORK/ls" && fail "recovered although told not to"
	[ -d "$A" ] || fail "the arena directory was removed although told not to"
	"$ADA" status "$S" >/dev/null 2>"$WORK/ls"
	grep -q "recovered the recording of [0-9:]* whose recorder was killed: $S" "$WORK/ls" || fail "ada status did not recover it"
	recovered_all
	# Made under the variable: manual, for `ada recover` only.
	rm -rf "$WORK/out" "$WORK/counts" "$WORK/counts.ready"
	record_and_kill ADA_NO_RECOVER_ORPHANS=1
	end_producer
	"$ADA" status "$S" >/dev/null 2>"$WORK/ls"
	grep -q "recovered the recording" "$WORK/ls" && fail "a recording made with ADA_NO_RECOVER_ORPHANS=1 was recovered by ada status"
	[ -d "$A" ] || fail "the arena directory of a manual recording was removed"
	"$ADA" recover --all 2>"$WORK/ls" || fail "ada recover --all failed"
	grep -q "recovered the recording of [0-9:]* whose recorder was killed: $S" "$WORK/ls" || fail "ada recover --all did not recover it"
	recovered_all
	;;
young)
	# The recorder dies before the program's manifest (its first 20 ms,
	# made permanent by the test hook): recover finds its arena in the
	# session's arena directory through the directory's owner record.
	env ADA_TEST_NO_EARLY_MANIFEST=1 "$ADA" record --no-agent --out "$WORK/out" -- \
		"$PROD" kill "$WORK/counts" 2>"$WORK/err" &
	APID=$!
	wait_for "$WORK/counts.ready"
	P=$(cat /proc/$APID/task/*/children 2>/dev/null | awk '{print $1}')
	[ -n "$P" ] || fail "no producer process under ada"
	S=$(ls -d "$WORK"/out/session_* | head -n 1)
	wait_for "$S/pid_$P"
	for d in /dev/shm/ada-"$(basename "$S")"-*; do
		grep -qxF "session $S" "$d/recorder" 2>/dev/null && A=$d
	done
	[ -n "$A" ] && [ -f "$A/$P.ring" ] || fail "no arena directory of $S in /dev/shm"
	kill -KILL $APID
	wait $APID 2>/dev/null
	[ -e "$S/pid_$P/manifest.json" ] && fail "a manifest was written under ADA_TEST_NO_EARLY_MANIFEST=1"
	M=$S/pid_$P/manifest.json
	end_producer
	"$ADA" ls "$WORK/out" >/dev/null 2>"$WORK/ls" || fail "ada ls failed"
	grep -q "recovered the recording of [0-9:]* whose recorder was killed: $S, 1 process" "$WORK/ls" ||
		fail "ada ls did not say it recovered $S"
	grep -q "its arena was found in the session's arena directory and read" "$M" ||
		fail "the recovered manifest does not say where its arena came from"
	recovered_all
	;;
unadmitted)
	# The recorder dies before it saw a child's arena (stopped, then
	# killed): the child has no pid_N; recover makes it one and reads the
	# arena, found through the directory's owner record.
	"$ADA" record --no-agent --out "$WORK/out" -- "$RACEB" "$WORK/g1" "$WORK/g2" 10 \
		>"$WORK/stdout" 2>"$WORK/err" &
	APID=$!
	# Stopped once its owner record names the session and the program runs.
	i=0
	until [ -n "$A" ] && [ -n "$(cat /proc/$APID/task/*/children 2>/dev/null)" ]; do
		i=$((i + 1))
		[ $i -gt 1200 ] && fail "timed out waiting for the program"
		sleep 0.05
		S=$(ls -d "$WORK"/out/session_* 2>/dev/null | head -n 1)
		[ -n "$S" ] || continue
		for d in /dev/shm/ada-"$(basename "$S")"-*; do
			grep -qxF "session $S" "$d/recorder" 2>/dev/null && A=$d
		done
	done
	P=$(cat /proc/$APID/task/*/children 2>/dev/null | awk '{print $1}')
	kill -STOP $APID
	touch "$WORK/g1"
	i=0
	until grep -q "^child " "$WORK/stdout"; do
		i=$((i + 1))
		[ $i -gt 1200 ] && fail "timed out waiting for the child"
		sleep 0.05
	done
	C=$(sed -n 's/^child \([0-9]*\)$/\1/p' "$WORK/stdout")
	[ -f "$A/$C.ring" ] || fail "no arena of the child $C in $A"
	kill -KILL $APID
	kill -CONT $APID 2>/dev/null
	wait $APID 2>/dev/null
	[ -e "$S/pid_$C" ] && fail "the child was admitted before the recorder was stopped"
	touch "$WORK/g2"
	while kill -0 "$P" 2>/dev/null; do sleep 0.05; done
	P=
	"$ADA" ls "$WORK/out" >/dev/null 2>"$WORK/ls" || fail "ada ls failed"
	grep -q "recovered the recording of [0-9:]* whose recorder was killed: $S, 1 process, 10 events" "$WORK/ls" ||
		fail "ada ls did not say it recovered the child's 10 events of $S"
	[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"]["events_written"])' "$S/pid_$C/manifest.json")" = 10 ] ||
		fail "pid_$C does not hold the child's 10 events"
	[ -e "$A" ] && fail "arena directory $A left in /dev/shm"
	"$ADA" validate "$S" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }
	;;
other_user)
	if [ "$(id -u)" -ne 0 ]; then
		echo "orphan_test($MODE): needs root to give an arena to another user: skipped"
		exit 77
	fi
	U=adat$(od -An -N5 -tx1 /dev/urandom | tr -d ' \n')
	useradd -M -N -s /usr/sbin/nologin "$U" || fail "useradd $U failed"
	trap 'userdel "$U" 2>/dev/null; cleanup' EXIT
	record_and_kill
	end_producer
	chown -R "$U" "$A" "$S"
	"$ADA" ls "$WORK/out" >/dev/null 2>"$WORK/ls" || fail "ada ls failed"
	grep -q "$A" "$WORK/ls" && fail "ada ls spoke of another user's arena directory"
	[ -e "$A/recorder" ] && [ -e "$A/shm.budget" ] || fail "another user's arena directory was touched"
	grep -q '"state": "recording"' "$S"/pid_*/manifest.json || fail "another user's session was recovered"
	;;
*)
	fail "unknown mode"
	;;
esac
exit 0
