#!/bin/sh
# A file cut short under a reading command (shrink_read.cmake): the
# command must not die of SIGBUS; it says the file in one sentence
# ("... shrank while being read ...") and exits 1, having read the rest.
# The cut is made deterministic by a test hook of the reading library
# (ADA_TEST_SHRINK_MAPPED=N: the first file of N bytes or more is cut to
# 4 KiB between its open and its reading, src/atf/atf_guard.c), as a
# running target, the session's owner or the recorder's own final
# truncation may cut it.
#   shrink_read_test.sh ADA PRODUCER MODE
#   MODE: report, dump, chrome (export --format chrome), atf (export
#   --format atf: the compact index converted), flame, validate (which
#   also calls the session INVALID)
set -u
ADA=$1 PROD=$2 MODE=$3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_shrink.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "shrink_read_test($MODE): $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

# 4 threads of 60 000 events: each compact index file is well over 16 KiB,
# the manifest is under it.
timeout -s KILL 60 "$ADA" record --no-agent --out "$WORK/rec" -- "$PROD" exact 60000 \
	>/dev/null 2>"$WORK/err" || fail "the recording failed"
S=$(ls -d "$WORK"/rec/session_* | head -n 1)
case $MODE in
report) set -- report "$S" ;;
dump) set -- dump "$S" ;;
chrome) set -- export --format chrome -o "$WORK/out.json" "$S" ;;
atf) set -- export --format atf -o "$WORK/out" "$S" ;;
flame) set -- flame --folded -o "$WORK/out.folded" "$S" ;;
validate) set -- validate "$S" ;;
*) fail "unknown mode" ;;
esac
ADA_TEST_SHRINK_MAPPED=16384 timeout -s KILL 30 "$ADA" "$@" >"$WORK/stdout" 2>"$WORK/err"
RC=$?
[ $RC -eq 137 ] && fail "did not end (killed by the 30 s guard)"
[ $RC -gt 128 ] && fail "killed by signal $((RC - 128)) (SIGBUS is 7)"
grep -q 'ADA_TEST_SHRINK_MAPPED: cut a file' "$WORK/err" || fail "no file was cut (the hook did not run)"
grep -q 'shrank while being read' "$WORK/err" || fail "the shrink went unsaid"
[ "$(grep -c 'shrank while being read' "$WORK/err")" -eq 1 ] || fail "said more than once"
[ $RC -eq 1 ] || fail "exit $RC, not 1"
exit 0
