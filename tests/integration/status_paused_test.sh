#!/bin/bash
# `ada status` never waits for the drain (issue 35, the soak's status left
# unanswered for 15 s in a load-800 burst): the live view is published in
# one of two buffers while readers copy the other, so a drain descheduled
# in the middle of a publish holds no reader. The test hook
# ADA_TEST_LIVE_PAUSE holds the drain there (once, after a first view was
# published) until its gate file is removed; `ada status` must answer
# while the gate is still there (before, the publish held a mutex that
# every status waited for). The gate goes only after that, so nothing here
# depends on time; the hook's own bound (60 s) and the timeouts only end
# a run that went wrong.
#   status_paused_test.sh ADA
set -u
ADA=$1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_status_paused.XXXXXX")
APID=
cleanup() {
	rm -f "$WORK/gate"
	[ -n "$APID" ] && kill -TERM "$APID" 2>/dev/null && wait "$APID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "status_paused_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

ADA_TEST_LIVE_PAUSE=$WORK/gate timeout -s KILL 120 "$ADA" record --no-agent --out "$WORK/out" \
	-- sleep 100 >"$WORK/stdout" 2>"$WORK/err" &
APID=$!
for _ in $(seq 600); do [ -e "$WORK/gate" ] && break; sleep 0.1; done
[ -e "$WORK/gate" ] || fail "the drain never paused in a publish (ADA_TEST_LIVE_PAUSE)"
timeout 50 "$ADA" status "$APID" --json >"$WORK/status.json" 2>"$WORK/status.err"
rc=$?
[ -e "$WORK/gate" ] || fail "the drain's pause ended before status answered (status waited for it)"
[ $rc -eq 0 ] || { cat "$WORK/status.err" >&2; fail "ada status exited $rc while the drain was paused in a publish"; }
grep -q '"recording": *true' "$WORK/status.json" || fail "status did not describe the recording: $(head -c 300 "$WORK/status.json")"
rm -f "$WORK/gate"
kill -TERM "$APID"
wait "$APID"
APID=
echo "status_paused: answered while the drain was paused in a publish"
