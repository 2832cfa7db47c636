#!/usr/bin/env bash
# A recorded process's pid taken by a later process of the same recording
# (tests/targets/producer_pidreuse.c forces it through ns_last_pid: root
# only, skipped otherwise), in three orders (the target's modes):
#   after   the recorder had finished the earlier process A: B makes a
#           new <A>.ring;
#   during  the recorder was still reading A (stopped meanwhile): B finds
#           A's <A>.ring and must leave it alone (<A>.<ticks>.ring);
#   early   the recorder opens A's arena only after B has pid A, and B
#           lives on until the recorder has finished A.
# (and "orphan" below: A reaped by the recorder, with no arena).
# Each time the later process's arena is not read: the recorder must tell
# it once ("ignored the arena of process A: that pid was reused ..."),
# count it (summary line, manifest, ada status), and pid_A/ must hold
# exactly A's events.
#
# In a pid namespace of its own (tests/integration/pidns.sh, as
# bounded_raceb): writing ns_last_pid there moves that namespace's pid
# counter only, so the tests running beside this one are not handed
# recently used pids (it ran alone, RUN_SERIAL, before), and no process
# outside can take pid A.
#
# usage: pidreuse_test.sh ADA PRODUCER_PIDREUSE PRODUCER_CHECK
set -u
ADA=$1 PROD=$2 CHECK=$3
PIDNS_TAG=pidreuse_test
. "$(dirname "$0")/pidns.sh"
# producer_check reads ATF v2: a compact session through its export.
. "$(dirname "$0")/atf_view.sh"
pidns_enter PIDREUSE_INNER "$0" "$@"
[ -w /proc/sys/kernel/ns_last_pid ] || { echo "pidreuse_test: no /proc/sys/kernel/ns_last_pid: skipped"; exit 77; }
pidns_private_tmp "$ADA:ada" "$PROD:producer_pidreuse" "$CHECK:producer_check"
ADA=$BIN/ada PROD=$BIN/producer_pidreuse CHECK=$BIN/producer_check
WORK=$(mktemp -d /tmp/ada_pidreuse.XXXXXX)
trap 'pidns_remove_arenas "$WORK/out"; rm -rf "$WORK"' EXIT
fail() { echo "pidreuse_test ($MODE): $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

declare -A WHEN=([after]="after the recorded process" [during]="while the recorder was still reading")
WHEN[early]=${WHEN[during]}
for MODE in after during early; do
	rm -rf "$WORK/out"
	# A: 10 events, B (A's pid, later): 7 -- B's in pid_A/ would show.
	timeout 300 "$ADA" record --no-agent --out "$WORK/out" -- "$PROD" 10 7 $MODE >"$WORK/out.txt" 2>"$WORK/err"
	rc=$?
	[ $rc -eq 77 ] && { cat "$WORK/err"; echo "pidreuse_test: could not force the pid: skipped"; exit 77; }
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	A=$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$WORK/out.txt")
	[ -n "$A" ] || fail "the target did not say its first child's pid"
	S=$(tail -n 1 "$WORK/err")
	[ -d "$S" ] || fail "no session directory"

	n=$(grep -c "ignored the arena of process $A: that pid was reused by a later process ${WHEN[$MODE]}" "$WORK/err")
	[ "$n" -eq 1 ] || fail "$n told lines for pid $A, expected 1"
	[ "$(grep -c "ignored the arena" "$WORK/err")" -eq 1 ] || fail "other arenas refused"
	grep -q "ada: 1 process was not recorded: each took the pid of an earlier process" "$WORK/err" ||
		fail "the summary does not count 1 process not recorded"
	grep -q "recorded 10 events .* from 1 process " "$WORK/err" || fail "not 10 events from 1 process"
	grep -q "removed 1 entry of the arena directory" "$WORK/err" || fail "B's arena not removed at the end"

	dirs=$(cd "$S" && ls -d pid_* | tr '\n' ' ')
	[ "$dirs" = "pid_$A " ] || fail "process directories '$dirs', expected pid_$A only"
	# prefix: each producer thread's events in order from seq 0; the total
	# is A's 10 only (B's 7, thread 2, would make it 17).
	check_atf "$ADA" "$CHECK" "$S/pid_$A" "$WORK/atf" prefix 10 >"$WORK/check" 2>&1 && grep -q "^producer_check: 10 events checked, 0 problem" "$WORK/check" ||
		{ cat "$WORK/check" >&2; fail "pid_$A does not hold exactly A's 10 events"; }
	"$ADA" validate "$S" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }

	M=$S/pid_$A/manifest.json
	python3 - "$M" "$A" <<'PY' || fail "the manifest does not tell the reused pid"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["state"] == "complete", m["state"]
assert m["shm"]["pid_reused_arenas"] == 1, m["shm"]
told = [w for w in m["warnings"] if w.startswith("ignored the arena of process %s: that pid was reused" % sys.argv[2])]
assert len(told) == 1, m["warnings"]
PY
	"$ADA" status "$S" >"$WORK/status" 2>&1 || { cat "$WORK/status" >&2; fail "ada status failed"; }
	grep -q "1 process not recorded (a reused pid)" "$WORK/status" || { cat "$WORK/status" >&2; fail "ada status does not count it"; }
	echo "pidreuse_test: $MODE ok (pid $A reused)"
done

# The live view says it too: `ada status --json` of the recording while
# the program lives on after B (ADA_TEST_HOLD_FILE) counts B's refused
# arena in pid_reused_arenas, never in processes_finished (a test that
# waited for every child to finish waited for B for good: control_forkheap
# on a machine whose pids turned over). A poll on the count, bounded.
rm -rf "$WORK/out" "$WORK/hold"
MODE=live
ADA_TEST_HOLD_FILE=$WORK/hold timeout 120 "$ADA" record --no-agent --out "$WORK/out" \
	-- "$PROD" 10 7 after >"$WORK/out.txt" 2>"$WORK/err" &
REC=$!
seen=
for _ in $(seq 300); do
	"$ADA" status "$REC" --json >"$WORK/status.json" 2>/dev/null &&
		python3 - "$WORK/status.json" <<'PY' && { seen=1; break; }
import json, sys
st = json.load(open(sys.argv[1]))
sys.exit(0 if st.get("pid_reused_arenas") == 1 and st.get("processes_finished") == 1 else 1)
PY
	kill -0 "$REC" 2>/dev/null || break
	sleep 0.1
done
touch "$WORK/hold"
wait "$REC"
rc=$?
[ $rc -eq 77 ] && { cat "$WORK/err"; echo "pidreuse_test: could not force the pid: skipped"; exit 77; }
[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
[ -n "$seen" ] || { cat "$WORK/status.json" >&2; fail "ada status --json never counted 1 reused pid beside 1 finished process"; }
echo "pidreuse_test: live ok (ada status --json: 1 finished, 1 reused pid)"

# A process with no arena, reparented to the recorder and reaped by it,
# then its pid given to B (7 events, exit 0): B is itself, not the
# process reaped. The recorder noted A's reap for an arena that could
# show up after it, kept the note for good and gave it to B's arena:
# B taken for reaped at its admission, with A's exit status 3.
rm -rf "$WORK/out"
timeout 120 "$ADA" record --no-agent --out "$WORK/out" -- "$PROD" 10 7 orphan >"$WORK/out.txt" 2>"$WORK/err"
rc=$?
[ $rc -eq 77 ] && { cat "$WORK/err"; echo "pidreuse_test: could not force the pid: skipped"; exit 77; }
MODE=orphan
[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
A=$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$WORK/out.txt")
S=$(tail -n 1 "$WORK/err")
[ -n "$A" ] && [ -d "$S" ] || fail "no pid or no session directory"
grep -q "recorded 7 events .* from 1 process " "$WORK/err" || fail "not B's 7 events from 1 process"
python3 - "$S/pid_$A/manifest.json" <<'PY' || fail "B's manifest has the reaped process's exit"
import json, sys
e = json.load(open(sys.argv[1]))["exit"]
assert e["status"] in (0, None) and not e["signal"], e
PY
echo "pidreuse_test: orphan ok (pid $A reaped, then B's)"

# The later process fills its ring (200 000 events, the ring holds 65 536):
# the recorder that refused its arena removed the name and never drains
# it, so its wait for ring space must end by itself (the drain's heartbeat
# standing still, the name gone: its events drop) rather than last as long
# as the recording (issue 35: a t_trigrate_O2 with a reused pid held the
# soak's last round, and its end, for 12 minutes and more).
rm -rf "$WORK/out"
timeout 120 "$ADA" record --no-agent --out "$WORK/out" -- "$PROD" 10 200000 after >"$WORK/out.txt" 2>"$WORK/err"
rc=$?
[ $rc -eq 77 ] && { cat "$WORK/err"; echo "pidreuse_test: could not force the pid: skipped"; exit 77; }
MODE=full
[ $rc -eq 0 ] || fail "exit status $rc, expected 0 (the refused process waited for ring space until the timeout)"
grep -q "recorded 10 events .* from 1 process " "$WORK/err" || fail "not 10 events from 1 process"
echo "pidreuse_test: full ok (the refused process's wait ended by itself)"

# The later process writes into pid_A/ as its agent would (a 3 MiB symbol
# file in pid_A/): the recorder had finished A, and scanned pid_A/ for
# the last time (issue 35: the soak's session ended 180 MiB over its
# budget, most of it such files). It scans pid_A/ again until the pid is
# free, so the budget counts the file and deletes it with A's symbols:
# the session ends within --max-disk-mb 2.
rm -rf "$WORK/out"
ADA_TEST_B_SIDE_KB=3072 timeout 120 "$ADA" record --no-agent --max-disk-mb 2 --out "$WORK/out" \
	-- "$PROD" 10 7 after >"$WORK/out.txt" 2>"$WORK/err"
rc=$?
[ $rc -eq 77 ] && { cat "$WORK/err"; echo "pidreuse_test: could not force the pid: skipped"; exit 77; }
MODE=side
[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
grep -q "ignored the arena of process .*: that pid was reused" "$WORK/err" || fail "no reused pid"
S=$(tail -n 1 "$WORK/err")
[ -d "$S" ] || fail "no session directory"
used=$(du -sk "$S" | cut -f1)
[ "$used" -le 2048 ] || fail "the session takes $used KiB, over its 2 MiB budget: the later process's symbol file was not counted"
grep -q "over its disk budget" "$WORK/err" && fail "the budget found nothing left to delete"
"$ADA" validate "$S" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }
echo "pidreuse_test: side ok ($used KiB, budget 2 MiB)"
