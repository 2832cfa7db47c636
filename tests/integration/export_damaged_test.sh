#!/bin/sh
# `ada export --format atf` of a recording whose compact index file has a
# damaged block past its first (compact.cmake): the export says the file
# was not exported and exits 1, and leaves no partial ATF v2 file behind
# for the exported manifest to describe as converted (its entry keeps
# the source's compact encoding, no crc32 of the partial file's last
# bytes).
#   export_damaged_test.sh ADA TARGET
set -u
ADA=$1 TGT=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_export_damaged.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "export_damaged_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

timeout -s KILL 60 "$ADA" record --index-format compact --out "$WORK/rec" -- "$TGT" \
	>/dev/null 2>"$WORK/err" || fail "record failed"
F=$(find "$WORK/rec" -path '*/thread_0/index.atf' | head -1)
[ -n "$F" ] || fail "no thread_0/index.atf"
head -c 4 "$F" | grep -q ATC1 || fail "$F is not a compact index"
SIZE=$(wc -c <"$F")
[ "$SIZE" -gt 16384 ] || fail "$F has $SIZE bytes: too few blocks to damage one past the first"
# Bytes in the middle: a later block's coded events (its CRC-32 fails).
printf '\377\377\377\377' | dd of="$F" bs=1 seek=$((SIZE / 2)) conv=notrunc status=none
S=$(dirname "$(dirname "$(dirname "$F")")")
timeout -s KILL 60 "$ADA" export --format atf -o "$WORK/out" "$S" 2>"$WORK/err"
RC=$?
[ $RC -eq 1 ] || fail "export exited $RC, not 1"
grep -q 'thread_0/index.atf: not exported' "$WORK/err" || fail "the damaged file went unsaid"
O=$(find "$WORK/out" -path '*/thread_0' -type d | head -1)
[ -n "$O" ] || fail "no thread_0 exported"
[ -e "$O/index.atf" ] && fail "a partial index.atf ($(wc -c <"$O/index.atf") bytes) was left in the export"
M=$(dirname "$O")/manifest.json
[ -f "$M" ] || fail "no exported manifest"
python3 - "$M" <<'PY' || fail "the exported manifest describes the file not exported as ATF v2"
import json, sys
def walk(j):
    if isinstance(j, dict):
        if j.get("path") == "thread_0/index.atf" and j.get("encoding") != "compact":
            sys.exit(1)
        for v in j.values():
            walk(v)
    elif isinstance(j, list):
        for v in j:
            walk(v)
walk(json.load(open(sys.argv[1])))
PY
exit 0
