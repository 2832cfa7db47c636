#!/bin/sh
# A session's owner swaps part of it for a symbolic link while a root
# command reads or recovers it (session_links.cmake). The swap is made at
# a fixed point by an LD_PRELOAD shim (session_links_shim.c): right after
# the command opened the directory it names, which it has listed by then.
# Before ada opened session files relative to the session (fs.h, session
# roots), a link in the middle of a path was followed: the command read,
# or `ada recover` wrote, another directory. Now the command refuses it
# in one sentence and exits 1, and the link's target is left as it was.
# Each command runs under `timeout` (a guard against a hang, not a timing
# assertion).
#   session_links_test.sh ADA PRODUCER SHIM MODE
#   report_thread    `ada report`: thread_1 becomes a link to a copy.
#   dump_pid         `ada dump`: pid_N (the middle of every path below it)
#                    becomes a link to a copy.
#   validate_thread  `ada validate`: thread_1 becomes a link.
#   export_pid       `ada export --format atf`: pid_N becomes a link.
#   report_file      `ada report`: thread_1/index.atf becomes a link.
#   recover_pid      `ada recover` of a killed recording: pid_N becomes a
#                    link to a copy once its manifest was read; the copy
#                    is not written.
set -u
ADA=$1 PROD=$2 SHIM=$3 MODE=$4
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_links.XXXXXX")
APID= P=
cleanup() {
	for p in $APID $P; do kill -KILL "$p" 2>/dev/null; done
	# The killed recording's arena, which the refused recover keeps for a
	# later one: only the directory whose owner record names our session.
	for d in /dev/shm/ada-session_*; do
		[ -f "$d/recorder" ] && [ ! -L "$d" ] || continue
		case $(sed -n 's/^session //p' "$d/recorder") in
		"$WORK"/*) rm -rf "$d" ;;
		esac
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "session_links_test($MODE): $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }
SENTENCE='its path inside the session holds a symbolic link'

record() {
	timeout -s KILL 60 "$ADA" record --no-agent --out "$WORK/rec" -- "$PROD" exact 2000 \
		>/dev/null 2>"$WORK/err" || fail "the recording failed"
}
# A recording whose recorder and program were killed: left for recover.
record_killed() {
	ADA_NO_RECOVER_ORPHANS=1 "$ADA" record --no-agent --out "$WORK/rec" -- "$PROD" kill "$WORK/counts" 2>"$WORK/err" &
	APID=$!
	for _ in $(seq 600); do [ -e "$WORK/counts.ready" ] && break; sleep 0.05; done
	[ -e "$WORK/counts.ready" ] || fail "the producer did not start"
	P=$(pgrep -P $APID | head -n 1)
	kill -KILL $APID
	wait $APID 2>/dev/null
	kill -KILL "$P" 2>/dev/null
	while kill -0 "$P" 2>/dev/null; do sleep 0.05; done
	APID= P=
}
# swap ON PATH: PATH becomes a link to a copy of itself in $WORK/victim
# once the command opened the directory ON.
swap() {
	mkdir -p "$WORK/victim"
	cp -a "$2" "$WORK/victim/"
	V="$WORK/victim/$(basename "$2")"
	export LD_PRELOAD="$SHIM" ADA_TEST_SWAP_ON="$1" ADA_TEST_SWAP_PATH="$2" ADA_TEST_SWAP_TO="$V"
}
run() {
	timeout -s KILL 30 "$ADA" "$@" >"$WORK/out" 2>"$WORK/err"
	RC=$?
	unset LD_PRELOAD
	[ $RC -eq 137 ] && fail "did not end (killed by the 30 s guard)"
	[ -L "$ADA_TEST_SWAP_PATH" ] || fail "the shim made no swap (the test did not run)"
	grep -q "$SENTENCE" "$WORK/err" || fail "the link went unsaid"
	[ $RC -eq 1 ] || fail "exit $RC, not 1"
}

case $MODE in
recover_pid) record_killed ;;
*) record ;;
esac
S=$(ls -d "$WORK"/rec/session_* | head -n 1)
PD=$(ls -d "$S"/pid_* | head -n 1)
case $MODE in
report_thread)
	swap thread_1 "$PD/thread_1"
	run report "$S"
	;;
dump_pid)
	swap "$(basename "$PD")" "$PD"
	run dump "$S"
	grep -q . "$WORK/out" && fail "dump printed events read through the link"
	;;
validate_thread)
	swap thread_1 "$PD/thread_1"
	run validate "$S"
	grep -q INVALID "$WORK/out" || fail "validate did not say INVALID"
	;;
export_pid)
	swap "$(basename "$PD")" "$PD"
	run export --format atf -o "$WORK/out.d" "$S"
	[ -e "$WORK/out.d/$(basename "$PD")/thread_0" ] && fail "exported files read through the link"
	;;
report_file)
	# Once thread_1 is opened, its index.atf becomes a link to a copy.
	mkdir -p "$WORK/victim"
	cp "$PD/thread_1/index.atf" "$WORK/victim/index.atf"
	export LD_PRELOAD="$SHIM" ADA_TEST_SWAP_ON=thread_1 ADA_TEST_SWAP_PATH="$PD/thread_1/index.atf" \
		ADA_TEST_SWAP_TO="$WORK/victim/index.atf"
	run report "$S"
	;;
recover_pid)
	# After recover read the pid's manifest, before it lists its threads.
	swap manifest.json "$PD"
	sum() { find "$1" -type f -exec md5sum {} + | sed "s|$1||" | sort; }
	sum "$V" >"$WORK/before"
	run recover "$S"
	sum "$V" >"$WORK/after"
	cmp -s "$WORK/before" "$WORK/after" || fail "recover wrote through the link: $(diff "$WORK/before" "$WORK/after")"
	;;
*)
	fail "unknown mode"
	;;
esac
exit 0
