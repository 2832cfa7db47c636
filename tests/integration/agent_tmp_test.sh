#!/bin/bash
# An agent.json temporary left in pid_N/ (the agent's write cut short by
# an _exit or a fatal signal: "agent.json.tmp.<16 hex>") is removed when
# the recorder finishes the process, and said in its manifest
# (src/recorder/agent_tmp.c). Planted while t_control waits on its stdin:
# one temporary (removed), a link and a directory under the agent's
# pattern and a file not quite of it (not the agent's: left, the link's
# target untouched). The manifest stays whole JSON and its agent.json
# part is there.
# With MODE cap, pid_N/ is also filled with more names than the sweep
# reads (ADA_FS_WALK_MAX_ENTRIES, 100 000): the sweep stops there and says
# so in the manifest (before, it walked whatever the target put there).
#   agent_tmp_test.sh ADA T_CONTROL [cap]
set -u
ADA=$1 TC=$2 MODE=${3:-}
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
if [ "$MODE" = cap ]; then
	# hard links to two files (ext4 takes 65 000 links a file): a name
	# each without an inode each, about a sixth of the time of 100 001 files
	python3 - "$D" "$WORK" <<'PY' || fail "plant the names"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
src = [os.path.join(sys.argv[2], "link%d" % i) for i in range(2)]
for s in src:
    os.close(os.open(s, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
for i in range(100001):
    os.link(src[i & 1], "x%d" % i, dst_dir_fd=fd)
PY
fi
echo quit >&3
exec 3>&-
wait "$REC"
rc=$?
REC=
[ $rc -eq 0 ] || fail "ada record exited $rc"
if [ "$MODE" = cap ]; then
	python3 - "$D/manifest.json" "$P" <<'PY' || fail "the cap went unsaid"
import json, sys
m = json.load(open(sys.argv[1]))
want = 'pid %s: its directory holds more than 100000 entries: the sweep' % sys.argv[2]
assert any(w.startswith(want) for w in m['warnings']), m['warnings']
PY
	exit 0
fi
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
left = 'pid %s: 2 entries of its directory named as the agent\'s agent.json temporaries are no regular file' % sys.argv[2]
assert any(w.startswith(left) for w in m['warnings']), m['warnings']
PY
exit 0
