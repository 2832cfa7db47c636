#!/bin/sh
# A refused arena gives its shared-memory reservation back once its maker
# has ended (issue 35: in a soak, arenas refused for a reused pid kept
# their reservation to the end, and the ceiling then left 1 114 processes
# untraced). A stranger -- a process outside the program's tree that knows
# the arena directory -- makes an arena there: refused, its name removed.
# Once it has been killed, `ada status` of the session must count the
# program's arena alone.
#   shmheld_test.sh ADA PRODUCER_GATE
set -u
ADA=$1 PROD=$2
WORK=$(mktemp -d /tmp/ada_shmheld.XXXXXX)
APID=
X=
cleanup() {
	[ -n "$X" ] && kill -KILL "$X" 2>/dev/null
	touch "$WORK/g1"
	[ -n "$APID" ] && wait "$APID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "shmheld_test: $*" >&2; cat "$WORK/err" "$WORK/status" >&2 2>/dev/null; exit 1; }
poll() { # poll N CMD...: until CMD succeeds, N tries 0.1 s apart
	n=$1
	shift
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -gt "$n" ] && return 1
		sleep 0.1
	done
}

"$ADA" record --no-agent --detail never --ring-mb 1 --max-threads 4 --out "$WORK/out" -- \
	sh -c 'env >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$WORK/env" "$PROD" "$WORK/g1" 10 \
	>"$WORK/stdout" 2>"$WORK/err" &
APID=$!
poll 1200 grep -q "^ready " "$WORK/stdout" || fail "the program did not start"
P=$(sed -n 's/^ready \([0-9]*\)$/\1/p' "$WORK/stdout")
S=$(ls -d "$WORK"/out/session_* | head -n 1)
poll 1200 test -f "$S/pid_$P/manifest.json" || fail "no early manifest for the program"
status_arenas() {
	"$ADA" status "$S" >"$WORK/status" 2>&1
	grep -q "shared memory: .* in $1 arenas" "$WORK/status"
}
poll 600 status_arenas 1 || fail "the program's arena is not the one arena reserved"
# The stranger: this shell's child, not the program's.
env ADA_ARENA_DIR="$(sed -n 's/^ADA_ARENA_DIR=//p' "$WORK/env")" \
	ADA_RING_CONFIG="$(sed -n 's/^ADA_RING_CONFIG=//p' "$WORK/env")" \
	"$PROD" "$WORK/g2" 10 >"$WORK/stranger" 2>&1 &
X=$!
poll 1200 grep -q "ignored the arena of process $X" "$WORK/err" || fail "the stranger's arena was not refused"
kill -KILL "$X"
wait "$X" 2>/dev/null
X=
poll 600 status_arenas 1 || fail "the refused arena's reservation was not given back after its maker ended"
touch "$WORK/g1"
wait "$APID"
rc=$?
APID=
[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
echo "shmheld: the refused arena's reservation given back once its maker ended"
exit 0
