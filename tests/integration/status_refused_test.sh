#!/bin/bash
# The live `ada status PID --json` keeps a rewritten warning current: the
# recorder says an ignored arena once and rewrites that sentence with the
# count of later ones of its kind ("... (and N more arenas ignored for the
# same reason)", drain_refuse); the live view took the first text once
# and showed it forever. Two fifos named like arenas are planted in the
# recording's arena directory while t_control waits on its stdin, the
# second once the live status says the first; the status must then say
# "and 1 more". No timing: the status is asked again (up to 20 s each)
# until the drain's tick has looked.
#   status_refused_test.sh ADA T_CONTROL
set -u
ADA=$1 TC=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_status_refused.XXXXXX")
REC= ARENA=
cleanup() {
	exec 3>&-
	[ -n "$REC" ] && kill -TERM "$REC" 2>/dev/null && wait "$REC" 2>/dev/null # timeout passes it on
	[ -n "$ARENA" ] && rm -f "$ARENA/4000001.ring" "$ARENA/4000002.ring"
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "status_refused_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

mkfifo "$WORK/in" || fail "mkfifo"
timeout -s KILL 50 "$ADA" record --out "$WORK/out" -- "$TC" <"$WORK/in" >"$WORK/tc.out" 2>"$WORK/err" &
REC=$!
exec 3>"$WORK/in"
echo pid >&3
for _ in $(seq 200); do
	P=$(sed -n 2p "$WORK/tc.out" 2>/dev/null)
	[ -n "$P" ] && break
	sleep 0.1
done
[ -n "$P" ] || fail "t_control did not say its pid"
for _ in $(seq 200); do
	ARENA=$(sed -n 's/.*"arena_dir": *"\([^"]*\)".*/\1/p' "$WORK"/out/session_*/pid_"$P"/manifest.json 2>/dev/null | head -n 1)
	[ -n "$ARENA" ] && break
	sleep 0.1
done
case "$ARENA" in /dev/shm/ada-*) ;; *) fail "no arena directory in the manifest: '$ARENA'" ;; esac
# wait_status TEXT: the live status's warnings say TEXT (up to 20 s)
wait_status() {
	for _ in $(seq 200); do
		"$ADA" status "$P" --json >"$WORK/live.json" 2>>"$WORK/err" || fail "ada status PID --json failed"
		grep -qF "$1" "$WORK/live.json" && return 0
		sleep 0.1
	done
	fail "the live status never said '$1': $(cat "$WORK/live.json")"
}
mkfifo "$ARENA/4000001.ring" || fail "mkfifo in the arena directory"
wait_status "ignored arena $ARENA/4000001.ring: it is not a regular file"
mkfifo "$ARENA/4000002.ring" || fail "mkfifo in the arena directory"
wait_status "(and 1 more arenas ignored for the same reason)"
echo quit >&3
exec 3>&-
wait "$REC"
rc=$?
REC=
[ $rc -eq 0 ] || fail "ada record exited $rc"
exit 0
