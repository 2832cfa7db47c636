#!/bin/bash
# An agent.json temporary left in pid_N/ (the agent's write cut short by
# an _exit or a fatal signal: "agent.json.tmp.<16 hex>") is removed when
# the recorder finishes the process, and said in its manifest
# (src/recorder/agent_tmp.c). Planted while t_control waits on its stdin:
# one temporary (removed), a link and a directory under the agent's
# pattern and a file not quite of it (not the agent's: left, the link's
# target untouched). The manifest stays whole JSON and its agent.json
# part is there.
#   agent_tmp_test.sh ADA T_CONTROL
set -u
ADA=$1 TC=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_agent_tmp.XXXXXX")
REC=
cleanup() {
	exec 3>&-
	[ -n "$REC" ] && kill -TERM "$REC" 2>/dev/null && wait "$REC" 2>/dev/null # timeout passes it on
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "agent_tmp_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

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
D=$(echo "$WORK"/out/session_*/pid_"$P")
[ -d "$D" ] || fail "no $D"
echo '{"partial": ' >"$D/agent.json.tmp.0123456789abcdef" || fail "plant"
echo keep >"$WORK/target"
ln -s "$WORK/target" "$D/agent.json.tmp.fedcba9876543210" || fail "plant link"
mkdir "$D/agent.json.tmp.00000000000000aa" || fail "plant dir"
echo x >"$D/agent.json.tmp.0123" || fail "plant short"
echo quit >&3
exec 3>&-
wait "$REC"
rc=$?
REC=
[ $rc -eq 0 ] || fail "ada record exited $rc"
[ -e "$D/agent.json.tmp.0123456789abcdef" ] && fail "the agent's temporary is still there"
[ -L "$D/agent.json.tmp.fedcba9876543210" ] || fail "the planted link was removed"
[ "$(cat "$WORK/target")" = keep ] || fail "the link's target changed"
[ -d "$D/agent.json.tmp.00000000000000aa" ] || fail "the planted directory was removed"
[ -f "$D/agent.json.tmp.0123" ] || fail "a name not the agent's was removed"
python3 - "$D/manifest.json" "$P" <<'PY' || fail "the manifest"
import json, sys
m = json.load(open(sys.argv[1]))
assert m['state'] == 'complete' and 'hook' in m and m['modules'], sorted(m)
want = 'pid %s: ended while its agent wrote agent.json: 1 unfinished temporary removed' % sys.argv[2]
assert any(w.startswith(want) for w in m['warnings']), m['warnings']
PY
exit 0
