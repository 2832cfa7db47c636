#!/bin/bash
# The disk budget at every instant, not only after each retention pass
# (issue 35, the soak's disk sample over --max-disk-mb): two processes in
# turn fire a symbol trigger every 100 ms, so trigger windows write detail
# files all along, and each ending thread's open windows take their part
# of its detail ring at once. The test hook ADA_TEST_BUDGET_AUDIT makes the
# drain measure the session's index and detail files where the budget
# must hold (after each pass, after the windows' persist, after a thread's
# file ends) and write the worst it saw: its count of them never below
# what is on disk (a block at most), never over the budget with the side
# files it scanned (over 0), and never with nothing left to delete
# (overrun 0).
# Retention must have deleted data (the budget was reached), and the
# session must validate and end within the budget. Counts, not times.
#   budget_instant_test.sh ADA T_TRIGRATE
set -u
ADA=$1 TRIG=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_budget_instant.XXXXXX")
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "budget_instant_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

ADA_TEST_BUDGET_AUDIT=$WORK/audit timeout -s KILL 120 "$ADA" record --out "$WORK/out" \
	--max-disk-mb 24 --detail-mb 2 --trigger symbol=mark_point \
	-- sh -c "'$TRIG' 1.5 100 && '$TRIG' 1.5 100 && '$TRIG' 1.5 100" >"$WORK/stdout" 2>"$WORK/err"
rc=$?
[ $rc -eq 0 ] || fail "ada record exited $rc"
S=$(tail -n 1 "$WORK/err")
[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
[ -s "$WORK/audit" ] || fail "the drain wrote no audit (ADA_TEST_BUDGET_AUDIT)"
read -r _ audits _ short _ over _ overrun <"$WORK/audit"
echo "audit: $(cat "$WORK/audit")"
[ "${audits:-0}" -gt 0 ] || fail "no audit was made"
# A block of a file being opened or closed at the moment of a walk is
# allowed: what the budget missed before was megabytes of detail files.
[ "$short" -le 65536 ] || fail "the drain counted $short bytes less than its files hold on disk"
[ "$over" -eq 0 ] || fail "the session was $over bytes over its budget where it must hold"
[ "$overrun" -eq 0 ] || fail "the budget found nothing left to delete"
grep -q "the disk budget of 24.0 MiB deleted" "$WORK/err" ||
	fail "retention deleted nothing: the budget was never reached, the test proves nothing"
"$ADA" validate "$S" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate refused the session"; }
used=$(du -sk "$S" | cut -f1)
[ "$used" -le $((24 * 1024)) ] || fail "the session takes $used KiB, over 24 MiB"
echo "budget_instant: $audits audits, none short or over; $used KiB at the end"
