#!/bin/sh
# A hostile session under the reading commands (hostile_read.cmake). Each
# command runs under `timeout` (a guard against a hang, not a timing
# assertion).
#   hostile_read_test.sh ADA MODE
#   export_fifo  `ada export --format atf` of a tree whose manifest.json is
#                a FIFO: it ends, says the file was not exported, and
#                exports the rest.
#   export_link  its -o DIR is a link planted to another directory: the
#                export refuses it and leaves the other directory's files
#                as they were.
#   ls_escape    `ada ls` of a session whose program (argv[0], the traced
#                program's choice) carries a terminal escape sequence, and
#                of a session directory named with one: printed with '?'
#                for their control bytes.
#   crash_note   `ada crash` of a process whose manifest's crash note (any
#                string of the manifest) carries one: printed with '?'.
#   ls_json_utf8 `ada ls --json` of a session directory named with a byte
#                that is not UTF-8, and of a program whose name is cut
#                inside a character (ls keeps 127 bytes): one JSON row
#                each, '?' for those bytes.
set -u
ADA=$1 MODE=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_hostile.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "hostile_read_test($MODE): $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

mkdir -p "$WORK/src/thread_0"
echo data >"$WORK/src/thread_0/f"
echo '{"format": "ada-manifest"}' >"$WORK/src/agent.json"

case $MODE in
export_fifo)
	mkfifo "$WORK/src/manifest.json"
	timeout -s KILL 20 "$ADA" export "$WORK/src" --format atf -o "$WORK/out" 2>"$WORK/err"
	RC=$?
	[ $RC -eq 137 ] && fail "hung on the FIFO (killed by the 20 s guard)"
	[ $RC -eq 1 ] || fail "exit $RC, not 1 (a file not exported)"
	grep -q 'manifest.json: not exported' "$WORK/err" || fail "the FIFO went unsaid"
	[ "$(cat "$WORK/out/thread_0/f")" = data ] || fail "the rest was not exported"
	;;
export_link)
	mkdir "$WORK/victim"
	echo precious >"$WORK/victim/agent.json"
	ln -s "$WORK/victim" "$WORK/out"
	timeout -s KILL 20 "$ADA" export "$WORK/src" --format atf -o "$WORK/out" 2>"$WORK/err"
	RC=$?
	[ $RC -eq 137 ] && fail "did not end (killed by the 20 s guard)"
	[ "$(cat "$WORK/victim/agent.json")" = precious ] || fail "wrote through the planted link"
	[ -e "$WORK/victim/thread_0" ] && fail "made a directory through the planted link"
	[ $RC -eq 1 ] || fail "exit $RC, not 1 (refused)"
	;;
ls_escape)
	P="$WORK/out/session_20260101_000000/pid_1"
	mkdir -p "$P"
	printf '{"format": "ada-manifest", "version": 1, "pid": 1, "state": "complete", "program": ["/x/\\u001b]0;pwn\\u0007prog"]}\n' >"$P/manifest.json"
	Q="$WORK/out/session_20260101_000001$(printf '\033]0;dir\007')/pid_2"
	mkdir -p "$Q/thread_0"
	echo '{"format": "ada-manifest", "version": 1, "pid": 2, "state": "complete"}' >"$Q/manifest.json"
	timeout -s KILL 20 "$ADA" ls "$WORK/out" >"$WORK/ls" 2>"$WORK/err" || fail "ada ls failed"
	grep -q 'pwn?prog' "$WORK/ls" || fail "the program is not listed as ?]0;pwn?prog"
	grep -q 'session_20260101_000001?]0;dir?' "$WORK/ls" || fail "the session named with an escape is not listed with '?'"
	tr -d '\n' <"$WORK/ls" | LC_ALL=C grep -q '[[:cntrl:]]' && fail "a control byte reached the output"
	# Its warnings quote the session's paths: masked too.
	"$ADA" report "$WORK/out/session_20260101_000001$(printf '\033]0;dir\007')" >"$WORK/ls" 2>&1
	tr -d '\n' <"$WORK/ls" | LC_ALL=C grep -q '[[:cntrl:]]' && fail "a control byte reached report's output"
	grep -q '000001?]0;dir?' "$WORK/ls" || fail "report said nothing of the session"
	;;
crash_note)
	P="$WORK/s/pid_1"
	mkdir -p "$P/thread_0"
	printf '{"format": "ada-manifest", "version": 1, "pid": 1, "state": "complete", "crash": {"signal": 11, "note": "\\u001b]0;pwn\\u0007note"}}\n' >"$P/manifest.json"
	timeout -s KILL 20 "$ADA" crash "$WORK/s" >"$WORK/out" 2>&1
	grep -q 'unknown: ?]0;pwn?note' "$WORK/out" || fail "the crash note is not printed as ?]0;pwn?note"
	tr -d '\n' <"$WORK/out" | LC_ALL=C grep -q '[[:cntrl:]]' && fail "a control byte reached the output"
	;;
ls_json_utf8)
	P="$WORK/out/session_20260101_000000$(printf '\377')/pid_1"
	mkdir -p "$P/thread_0"
	printf '{"format": "ada-manifest", "version": 1, "pid": 1, "state": "complete", "program": ["/x/prog"]}\n' >"$P/manifest.json"
	Q="$WORK/out/session_20260101_000001/pid_2"
	mkdir -p "$Q/thread_0"
	E=$(printf '\303\251%.0s' $(seq 70)) # 70 e acute: 140 bytes
	printf '{"format": "ada-manifest", "version": 1, "pid": 2, "state": "complete", "program": ["/x/%s"]}\n' "$E" >"$Q/manifest.json"
	timeout -s KILL 20 "$ADA" ls --json "$WORK/out" >"$WORK/ls" 2>"$WORK/err" || fail "ada ls --json failed"
	python3 - "$WORK/ls" <<'PY' || fail "ada ls --json: not one JSON row a session: $(cat -v "$WORK/ls")"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
names = sorted(r["session"] for r in rows)
assert names == ["session_20260101_000000?", "session_20260101_000001"], names
prog = [r["command"] for r in rows if r["session"].endswith("1")][0]
assert prog == "\u00e9" * 63 + "?", prog
PY
	;;
*)
	fail "unknown mode"
	;;
esac
exit 0
