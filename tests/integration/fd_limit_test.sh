#!/bin/sh
# Losses to the recorder's limit of open files (issue 35 item 4): under
# `ulimit -n 16` a program with 50 threads alive at once records some
# threads, and the others get no index file. Their events must be counted
# as fd_limit drops (summary line, manifest, `ada status`), told once,
# never as "not written (disk full)"; and what was written plus what was
# dropped holds at least the threads' known calls.
#   fd_limit_test.sh ADA T_MANYTHREADS
set -u
ADA=$1 PROG=$2
WORK=$(mktemp -d /tmp/ada_fdlimit.XXXXXX)
cleanup() {
	for m in "$WORK"/out/session_*/pid_*/manifest.json; do
		[ -f "$m" ] || continue
		A=$(sed -n 's/.*"arena_dir": "\(.*\)".*/\1/p' "$m" | head -n 1)
		case "$A" in /dev/shm/ada-*) rm -rf "$A" ;; esac
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "fd_limit_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

# 50 threads x 20 calls of mt_work, all 50 alive at once (a barrier).
(ulimit -n 16 && exec timeout -s KILL 120 "$ADA" record --out "$WORK/out" -- "$PROG" barrier 50) \
	>"$WORK/stdout" 2>"$WORK/err"
rc=$?
[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
S=$(tail -n 1 "$WORK/err")
[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
M=$(ls "$S"/pid_*/manifest.json)
[ "$(echo "$M" | wc -l)" -eq 1 ] || fail "expected one process: $M"
read -r DROPS LOST WRITTEN <<EOT
$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
w = m["metrics"]["events_written"]
print(m["drops"]["index"]["fd_limit"], m["lost_events"], w)' "$M")
EOT
[ "$DROPS" -gt 0 ] || fail "no fd_limit drops under ulimit -n 16 with 50 threads"
[ "$LOST" -eq 0 ] || fail "$LOST events counted lost (disk full), expected 0"
[ $((WRITTEN + DROPS)) -ge 2000 ] || fail "$WRITTEN written + $DROPS dropped < the 2000 events of mt_work"
n=$(grep -c "counted as fd_limit drops (raise the limit: ulimit -n)" "$WORK/err")
[ "$n" -eq 1 ] || fail "the limit told $n times, expected once"
grep -q "^ada: recorded .* drops $DROPS (fd_limit $DROPS)" "$WORK/err" || fail "the summary line does not say drops $DROPS (fd_limit $DROPS)"
"$ADA" status "$S" >"$WORK/status" 2>&1 || fail "ada status failed"
grep -q "0 not written (disk full), .*drops $DROPS (fd_limit $DROPS)" "$WORK/status" ||
	{ cat "$WORK/status" >&2; fail "ada status does not say drops $DROPS (fd_limit $DROPS) and nothing lost to a full disk"; }
"$ADA" validate "$S" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }
echo "fd_limit: $WRITTEN events written, $DROPS fd_limit drops"
exit 0
