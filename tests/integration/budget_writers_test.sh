#!/bin/bash
# The disk budget at every instant when the files being written fill it
# (issue 35, the soak's disk samples over --max-disk-mb): four t_trigrate
# processes at once, each a busy thread, under a budget of 8 MiB. Each
# thread's current file rotates at a quarter of the budget, so four of
# them together, with the processes' symbol files, are more than the
# budget with no older file left to delete: the drain must end the
# largest early, so that it has generations to delete, before the room
# runs out (docs/format.md, "Bounded disk").
# A watcher samples the session's own tmpfs (statvfs: one atomic count,
# what du would say at that instant) as often as it can while the
# recording runs; the largest sample must be within the budget. The test
# hook ADA_TEST_BUDGET_AUDIT checks the same where the drain must hold it
# (over 0, overrun 0), and the summary must say that files being written
# were ended early (else the test proved nothing). Counts, not times:
# the watcher's samples are as many as the machine gives it, each one
# must be within the bound.
# MODE windows (e2e.budget_windows): the same with trigger windows open
# all along (each thread fires mark_point every 100 ms, --detail-mb 1,
# shorter runs): a file ended early then writes its windows' part of its
# detail ring at once, before it is a generation to delete, so that room
# must be kept ahead and the end must write no more than what is left
# (anything it could not keep counted as the window's disk_budget); the
# summary must say windows were persisted (else the test proved nothing).
# MODE windows_big (e2e.budget_windows_big): the same with 16 MiB detail
# rings under a 16 MiB budget: a file ended early takes its ring's rest in
# slices (detail_persist.c PD_END_SLICE, 8 MiB) while its thread goes on;
# a later slice must take only the records the end found, not those the
# thread made meanwhile (their index events are the next file's): those
# were decided as bad links (no event of theirs), tens of thousands a run.
# No window's record may be counted bad_link. And a process's end takes
# its rings' rest within the budget's room, as a thread's end does: taken
# without a budget it went 4-8 MiB past 16 MiB in 2 runs of 5.
#   budget_writers_test.sh ADA T_TRIGRATE [windows|windows_big]
set -u
ADA=$1 TRIG=$2 MODE=${3:-}
BUDGET_MB=8
SECS=2.5 EVERY=0 REC_ARGS=
if [ "$MODE" = windows ]; then
	SECS=2 EVERY=100 REC_ARGS="--detail-mb 1 --trigger symbol=mark_point"
elif [ "$MODE" = windows_big ]; then
	BUDGET_MB=16 SECS=2 EVERY=100 REC_ARGS="--detail-mb 16 --trigger symbol=mark_point"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_budget_writers.XXXXXX")
SMALL=
cleanup() {
	touch "$WORK/stop" 2>/dev/null
	[ -n "${WATCH:-}" ] && wait "$WATCH" 2>/dev/null
	[ -n "$SMALL" ] && umount "$SMALL" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "budget_writers_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

# A 64 MiB tmpfs when root can mount one (a runaway session stops at it);
# else the work directory, which the budget and the timeout bound.
OUT=$WORK/out
if [ "$(id -u)" -eq 0 ] && mkdir -p "$WORK/small" &&
	mount -t tmpfs -o size=64m tmpfs "$WORK/small" 2>/dev/null; then
	SMALL=$WORK/small
	OUT=$SMALL/out
fi
mkdir -p "$OUT"

# The watcher: the session's allocated bytes in a loop until the stop
# file; writes the largest sample and the number of samples. On the
# test's own tmpfs the file system's used blocks (statvfs: one atomic
# count, what du would say of the session at that instant); elsewhere a
# walk (st_blocks, each inode once, as du counts them), which is not
# atomic (a file counted, deleted, then another one's growth counted), so
# its peak is told, not asserted on (the audit still holds the bound).
# It says when it is ready (a python start is slow on a loaded machine).
python3 - "$OUT" "$WORK/stop" "$WORK/watch" "${SMALL:+statvfs}" <<'PY' &
import os, sys
out, stop, res, how = sys.argv[1:5]
open(res + ".ready", "w").close()
def walk(path, seen):
    total = 0
    try:
        entries = list(os.scandir(path))
    except OSError:
        return 0
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_ino not in seen:
            seen.add(st.st_ino)
            total += st.st_blocks * 512
            if e.is_dir(follow_symlinks=False):
                total += walk(e.path, seen)
    return total
best, n = 0, 0
while not os.path.exists(stop):
    if how:
        v = os.statvfs(out)
        used = (v.f_blocks - v.f_bfree) * v.f_frsize
    else:
        used = walk(out, set())
    n += 1
    best = used if used > best else best
with open(res, "w") as f:
    f.write("%d %d %s\n" % (best, n, how or "walk"))
PY
WATCH=$!
for _ in $(seq 600); do [ -e "$WORK/watch.ready" ] && break; sleep 0.1; done
[ -e "$WORK/watch.ready" ] || fail "the watcher did not start"

cmd=
for _ in 1 2 3 4; do cmd="$cmd '$TRIG' $SECS $EVERY >/dev/null &"; done
# shellcheck disable=SC2086 # REC_ARGS: words
ADA_TEST_BUDGET_AUDIT=$WORK/audit timeout -s KILL 120 "$ADA" record --out "$OUT" \
	--max-disk-mb $BUDGET_MB $REC_ARGS -- sh -c "$cmd wait" >"$WORK/stdout" 2>"$WORK/err"
rc=$?
touch "$WORK/stop"
wait "$WATCH"
WATCH=
[ $rc -eq 0 ] || fail "ada record exited $rc"
S=$(tail -n 1 "$WORK/err")
[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
[ -s "$WORK/watch" ] || fail "the watcher wrote nothing"
read -r peak samples how <"$WORK/watch"
echo "watch: peak $peak bytes in $samples samples ($how)"
[ "$samples" -gt 0 ] || fail "the watcher took no sample of the session"
[ -s "$WORK/audit" ] || fail "the drain wrote no audit (ADA_TEST_BUDGET_AUDIT)"
read -r _ audits _ short _ over _ overrun <"$WORK/audit"
echo "audit: $(head -n 1 "$WORK/audit")"
if [ "$how" = statvfs ]; then
	[ "$peak" -le $((BUDGET_MB << 20)) ] ||
		fail "the session took $peak bytes at its peak, over its budget of $BUDGET_MB MiB"
else
	echo "budget_writers_test: not root, no tmpfs of its own: the peak of a walk is told, not asserted on"
fi
[ "$short" -le 65536 ] || fail "the drain counted $short bytes less than its files hold on disk"
[ "$over" -eq 0 ] || fail "the session was $over bytes over its budget where it must hold"
[ "$overrun" -eq 0 ] || fail "the budget found nothing left to delete"
grep -q "the disk budget of $BUDGET_MB.0 MiB deleted" "$WORK/err" ||
	fail "retention deleted nothing: the budget was never reached, the test proves nothing"
grep -q "of them a live thread's file ended early" "$WORK/err" ||
	fail "no file being written was ended early: the files being written never filled the budget, the test proves nothing"
if [ -n "$MODE" ]; then
	grep -Eq "flight recorder: [1-9][0-9]* windows? persisted" "$WORK/err" ||
		fail "no trigger window was persisted: the test proves nothing"
	grep -o "flight recorder: .*" "$WORK/err"
	! grep -q "bad_link" "$WORK/err" || fail "window records were decided as bad links"
fi
"$ADA" validate "$S" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate refused the session"; }
used=$(du -sB1 "$S" | cut -f1)
[ "$used" -le $((BUDGET_MB << 20)) ] || fail "the session takes $used bytes at the end, over $BUDGET_MB MiB"
echo "budget_writers: peak $peak bytes in $samples samples, $audits audits none over; $used bytes at the end"
