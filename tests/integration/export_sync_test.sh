#!/bin/sh
# `ada export --format atf -o DIR` syncs what it wrote (docs/reading.md):
# each file and directory under DIR, and the directory DIR was made in,
# whose new entry DIR is (without it a crash after the command returned
# could lose the whole export). Seen with strace -y; skipped (77) where
# strace is missing or cannot trace.
#   export_sync_test.sh ADA
set -u
ADA=$1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_export_sync.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "export_sync_test: $*" >&2; cat "$WORK/trace" >&2 2>/dev/null; exit 1; }

command -v strace >/dev/null 2>&1 || { echo "no strace: skipped"; exit 77; }
strace -o "$WORK/probe" true 2>/dev/null || { echo "strace cannot trace here: skipped"; exit 77; }
mkdir -p "$WORK/src/thread_0" "$WORK/in"
echo data >"$WORK/src/thread_0/f"
W=$(cd "$WORK" && pwd -P)
timeout -s KILL 20 strace -f -y -qq -e trace=fsync,fdatasync -o "$WORK/trace" \
	"$ADA" export --format atf -o "$W/in/out" "$W/src" 2>"$WORK/err" || fail "export failed: $(cat "$WORK/err")"
grep -q "fdatasync([0-9]*<$W/in/out/thread_0/f>)" "$WORK/trace" || fail "the file was not synced"
grep -q "fsync([0-9]*<$W/in/out/thread_0>)" "$WORK/trace" || fail "thread_0/ was not synced"
grep -q "fsync([0-9]*<$W/in/out>)" "$WORK/trace" || fail "DIR was not synced"
grep -q "fsync([0-9]*<$W/in>)" "$WORK/trace" || fail "the directory DIR was made in was not synced"
exit 0
