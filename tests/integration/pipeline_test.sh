#!/bin/sh
# Pipeline integration tests: `ada record --no-agent` of producer_kill (a
# program linking the producer API), then producer_check (an independent
# reader) and `ada validate` on the session.
#   pipeline_test.sh ADA PRODUCER CHECK MODE (the cases below)
set -u
ADA=$1 PROD=$2 CHECK=$3 MODE=$4
WORK=$(mktemp -d /tmp/ada_pipeline.XXXXXX)
APID= P=
# Whatever happens to the test, no arena directory of its sessions stays
# in /dev/shm (only those its manifests name: tests running at the same
# time have directories of the same name pattern); a failure first kills
# the recorder and the producer it left running.
cleanup() {
	for m in "$WORK"/out/session_*/pid_*/manifest.json; do
		[ -f "$m" ] || continue
		a=$(sed -n 's/.*"arena_dir": "\(\/dev\/shm\/ada-[^"/]*\)".*/\1/p' "$m" | head -n 1)
		[ -n "$a" ] && rm -rf "$a"
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
	echo "pipeline_test($MODE): $*" >&2
	cat "$WORK/err" >&2 2>/dev/null
	for p in $APID $P; do kill -KILL "$p" 2>/dev/null; done
	exit 1
}

session_of() { tail -n 1 "$WORK/err"; }

# ADA_TEST_INDEX_FORMAT=atf (pipeline_atf_*): the recordings are ATF v2,
# written directly; unset: ada's default, the compact index, which
# producer_check, an ATF v2 reader, reads through its `ada export --format
# atf` copy (atf_view.sh).
IDX=${ADA_TEST_INDEX_FORMAT:-}
IDXOPT=${IDX:+--index-format $IDX}
. "$(dirname "$0")/atf_view.sh"
check() {
	if [ "$IDX" = atf ]; then
		has_compact_index "$1" && fail "--index-format atf wrote a compact index file"
	else
		grep -q '"encoding": "compact"' "$1"/pid_*/manifest.json || fail "manifest names no compact file"
	fi
	C=$1
	shift
	check_atf "$ADA" "$CHECK" "$C" "$WORK/atf" "$@"
}

validate() {
	"$ADA" validate "$1" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }
}

# Waits (bounded: a guard against hangs, not a timing assertion) for a file.
wait_for() {
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -gt 1200 ] && fail "timed out waiting for $1"
		sleep 0.1
	done
}

child_of() { cat /proc/"$1"/task/*/children 2>/dev/null | awk '{print $1}'; }

case $MODE in
exact)
	"$ADA" record --no-agent $IDXOPT --out "$WORK/out" -- "$PROD" exact 250000 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	S=$(session_of)
	[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
	check "$S" exact 250000 || fail "check failed"
	grep -q '"state": "complete"' "$S"/pid_*/manifest.json || fail "manifest not complete"
	grep -q '"abnormal": false' "$S"/pid_*/manifest.json || fail "manifest says abnormal"
	A=$(sed -n 's/.*"arena_dir": "\(.*\)".*/\1/p' "$S"/pid_*/manifest.json | head -n 1)
	[ -n "$A" ] || fail "manifest names no arena directory"
	[ -e "$A" ] && fail "arena directory $A left behind"
	validate "$S"
	;;
kill)
	"$ADA" record --no-agent $IDXOPT --out "$WORK/out" -- "$PROD" kill "$WORK/counts" 2>"$WORK/err" &
	APID=$!
	wait_for "$WORK/counts.ready"
	P=$(child_of $APID)
	[ -n "$P" ] || fail "no producer process under ada"
	kill -KILL "$P"
	wait $APID
	rc=$?
	[ $rc -eq 137 ] || fail "exit status $rc, expected 137 (128 + SIGKILL)"
	S=$(session_of)
	check "$S" counts "$WORK/counts" || fail "check failed"
	grep -q '"abnormal": true' "$S"/pid_*/manifest.json || fail "manifest not abnormal"
	grep -q '"signal": 9' "$S"/pid_*/manifest.json || fail "manifest lacks signal 9"
	validate "$S"
	;;
maxdisk)
	# 8 MiB: each thread's file rotates at 2 MiB, past the first 1 MiB
	# where segments are allocated ahead. The compact index takes about 3
	# bytes an event: 750 000 events of each thread fill 9 MB, so every
	# thread rotates and the budget deletes generations, as 1 500 000 did
	# in 16 MiB with twice the events to produce and drain.
	"$ADA" record --no-agent $IDXOPT --max-disk-mb 8 --out "$WORK/out" -- "$PROD" exact 750000 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc"
	S=$(session_of)
	check "$S" tail 750000 || fail "check failed"
	bytes=$(find "$S" -name '*.atf' -printf '%s\n' | awk '{s+=$1} END {print s+0}')
	[ "$bytes" -le $((8 * 1048576)) ] || fail "$bytes bytes of index files, budget 8 MiB"
	# Not "some older generation kept": four threads' current files may
	# hold the whole 8 MiB when the drain is slow (TSan's was, and kept
	# none); the tail check above says the most recent data is what
	# stayed. The small growth steps near the budget (wal_room_step) are
	# test_wal_segment's test_grow_near_budget.
	grep -q '"retired_events": [1-9]' "$S"/pid_*/manifest.json || fail "no retired events in manifest"
	ls "$S"/pid_*/.retention >/dev/null 2>&1 && fail "pid_N/.retention left after the final manifest"
	validate "$S"
	;;
recover)
	# The recorder itself dies: SIGKILL ada while the producer runs, then
	# kill the producer, and `ada recover` the session.
	"$ADA" record --no-agent $IDXOPT --out "$WORK/out" -- "$PROD" kill "$WORK/counts" 2>"$WORK/err" &
	APID=$!
	wait_for "$WORK/counts.ready"
	P=$(child_of $APID)
	[ -n "$P" ] || fail "no producer process under ada"
	# The producer is stopped while the refusals below are tried: they
	# need its recorder running, not its events, which would otherwise
	# grow by tens of millions for the recovery and the checks to read.
	# It runs again before the recorder dies.
	kill -STOP "$P"
	S=$(ls -d "$WORK"/out/session_* | head -n 1)
	# While its recorder runs, a session is not recovered (two drains of
	# one ring would corrupt it).
	"$ADA" recover "$S" 2>"$WORK/rec" && fail "ada recover ran on a live recording"
	grep -q "still being recorded" "$WORK/rec" || fail "no 'still being recorded' message"
	# Nor from a pid namespace of its own, where /proc shows no recorder
	# (a soak's live session was sealed by such a recovery): the
	# recorder's lock on its session says it runs. Root only.
	if [ "$(id -u)" -eq 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
		unshare --pid --fork --mount-proc "$ADA" recover "$S" 2>"$WORK/rec" &&
			fail "ada recover in another pid namespace ran on a live recording"
		grep -q "still being recorded" "$WORK/rec" || fail "no 'still being recorded' message from another pid namespace"
		grep -q '"state": "recording"' "$S"/pid_*/manifest.json ||
			fail "ada recover in another pid namespace took a live recording"
	fi
	# Not `ada recover --all` here: it would take the killed recordings
	# of the tests running beside this one (the other kill tests' manual
	# ones; orphan_optout's --all, in a /dev/shm of its own, takes none).
	# Killed once every thread emitted another 200 000 events (as many as
	# before counts.ready): the rings in full flow again.
	c0=$(od -An -v -w32 -tu8 -N32 "$WORK/counts")
	kill -CONT "$P"
	i=0
	until od -An -v -w32 -tu8 -N32 "$WORK/counts" | awk -v c0="$c0" \
		'{ n = split(c0, a, " "); for (k = 1; k <= n; k++) if ($k < a[k] + 200000) exit 1 }'; do
		i=$((i + 1))
		[ $i -gt 12000 ] && fail "the producer did not run on after SIGCONT"
		sleep 0.01
	done
	kill -KILL $APID
	wait $APID 2>/dev/null
	kill -KILL "$P" 2>/dev/null
	while kill -0 "$P" 2>/dev/null; do sleep 0.05; done
	"$ADA" recover "$S" 2>"$WORK/rec" || { cat "$WORK/rec" >&2; fail "ada recover failed"; }
	check "$S" counts "$WORK/counts" >"$WORK/chk" 2>&1
	chk=$?
	cat "$WORK/chk"
	# Events staged but not written when the recorder died are lost (at
	# most the writes in flight): every file must be valid, each thread's
	# events in order; a gap is only allowed at the very end, so check
	# with the generous "tail"-free rule: no disorder inside the files.
	grep -q "disorder\|CRC\|counts disagree\|bad magic\|time goes back" "$WORK/chk" && { cat "$WORK/chk" >&2; fail "recovered files are inconsistent"; }
	grep -q '"state": "recovered"' "$S"/pid_*/manifest.json || fail "manifest not recovered"
	A=$(sed -n 's/.*"arena_dir": "\(.*\)".*/\1/p' "$S"/pid_*/manifest.json | head -n 1)
	[ -e "$A" ] && fail "arena directory $A left behind after recover"
	# Nothing is lost: the ring kept what was not durable yet (the same
	# check's status: it ran once, above).
	[ $chk -eq 0 ] || {
		cat "$WORK/rec" "$S"/pid_*/manifest.json >&2
		ls -la "$S"/pid_*/thread_* >&2
		fail "recovered session incomplete"
	}
	validate "$S"
	;;
serial_kill | serial_kill_old | serial_kill_lie)
	# A thread per request: short threads one after another, their slots
	# freed and taken again, and the recorder killed (by itself, at its
	# 20th ring release: the events before it written, not released, so
	# recover must tell them from the ring's by pid_N/.ring_slots). The
	# program starts no thread once the recorder is gone. Every thread's
	# events, exactly, in its own thread_K (none in another's, none twice).
	# serial_kill_old: the table turned into what recorders before it
	# left, a thread_K/.ring_base line per thread, for recover to read.
	# serial_kill_lie: every record's base made one that wraps (as pid_N/
	# is writable by the target's user, or a stale one): recover must not
	# use it (said) and find the file's end by its last event's time.
	ADA_THREAD_SPARES=1 ADA_TEST_KILL_AT=ring_release@20 "$ADA" record --no-agent $IDXOPT \
		--out "$WORK/out" -- "$PROD" serial "$WORK/counts" 2>"$WORK/err" &
	APID=$!
	wait $APID 2>/dev/null
	wait_for "$WORK/counts.done"
	P=$(pgrep -f "$PROD serial $WORK/counts")
	[ -n "$P" ] || fail "the program is gone"
	kill -KILL $P
	while kill -0 $P 2>/dev/null; do sleep 0.05; done
	S=$(ls -d "$WORK"/out/session_* | head -n 1)
	ls "$S"/pid_*/.ring_slots >/dev/null 2>&1 || fail "no pid_N/.ring_slots after the kill"
	if [ "$MODE" = serial_kill_old ]; then
		python3 - "$S"/pid_* <<'PY' || fail "could not turn .ring_slots into .ring_base files"
import os, struct, sys
d = sys.argv[1]
raw = open(os.path.join(d, ".ring_slots"), "rb").read()
for off in range(0, len(raw) - 31, 32):
    magic, slot, seq, gen, base = struct.unpack_from("<IIIIQ", raw, off)
    t = os.path.join(d, "thread_%d" % seq)
    if magic in (0x31535241, 0x32535241) and os.path.isdir(t) and os.path.exists(os.path.join(t, "index.atf")):
        with open(os.path.join(t, ".ring_base"), "w") as f:
            f.write("slot %d generation %d base %d\n" % (slot, gen, base))
os.unlink(os.path.join(d, ".ring_slots"))
PY
	fi
	if [ "$MODE" = serial_kill_lie ]; then
		python3 - "$S"/pid_*/.ring_slots <<'PY' || fail "could not rewrite .ring_slots"
import struct, sys, zlib
p = sys.argv[1]
raw = bytearray(open(p, "rb").read())
for off in range(0, len(raw) - 31, 32):
    magic = struct.unpack_from("<I", raw, off)[0]
    if magic in (0x31535241, 0x32535241):  # ARS1, ARS2
        struct.pack_into("<Q", raw, off + 16, 2**64 - 3)
        crc = zlib.crc32(bytes(raw[off:off + 24]))
        if magic == 0x32535241:  # ARS2's CRC goes on over its file generation
            crc = zlib.crc32(bytes(raw[off + 28:off + 32]), crc)
        struct.pack_into("<I", raw, off + 24, crc)
open(p, "wb").write(raw)
PY
	fi
	"$ADA" recover "$S" 2>"$WORK/rec" || { cat "$WORK/rec" >&2; fail "ada recover failed"; }
	if [ "$MODE" = serial_kill_lie ]; then
		grep -q "does not fit the ring" "$WORK/rec" || { cat "$WORK/rec" >&2; fail "recover did not say the record was not used"; }
	fi
	ls "$S"/pid_*/.ring_slots "$S"/pid_*/thread_*/.ring_base >/dev/null 2>&1 &&
		fail "recover left pid_N/.ring_slots or a thread_K/.ring_base"
	# The spare thread directories the killed recorder's maker held
	# (src/recorder/spares.c) go with the recovery.
	[ -e "$S/.thread_spares" ] && { ls -laR "$S/.thread_spares" >&2; fail "recover left .thread_spares"; }
	check "$S" serial "$WORK/counts" || { cat "$WORK/rec" >&2; fail "recovered threads wrong"; }
	validate "$S"
	;;
rotate_kill)
	# The recorder is killed as it rotates generations: the old index.atf
	# is renamed to a generation and the new one not made yet, while the
	# ring holds what came after. `ada recover` must keep those events.
	# A 8 MiB budget rotates every 2 MiB (65 536 ATF v2 events of a thread,
	# about 700 000 compact ones).
	ADA_TEST_KILL_AT=rotate_renamed "$ADA" record --no-agent $IDXOPT --max-disk-mb 8 \
		--out "$WORK/out" -- "$PROD" kill "$WORK/counts" 2>"$WORK/err" &
	APID=$!
	wait $APID 2>/dev/null
	# The program runs on (its rings fill up and wait): stop it.
	P=$(pgrep -f "$PROD kill $WORK/counts")
	[ -n "$P" ] || fail "the program is gone"
	kill -KILL $P
	while kill -0 $P 2>/dev/null; do sleep 0.05; done
	S=$(ls -d "$WORK"/out/session_* | head -n 1)
	ls "$S"/pid_*/thread_*/index.g0.atf >/dev/null 2>&1 || fail "no generation was rotated"
	"$ADA" recover "$S" 2>"$WORK/rec" || { cat "$WORK/rec" >&2; fail "ada recover failed"; }
	grep -q "had no current index.atf" "$WORK/rec" || { cat "$WORK/rec" >&2; fail "recover did not say it made the missing index.atf"; }
	check "$S" counts "$WORK/counts" || { cat "$WORK/rec" >&2; fail "recovered session incomplete"; }
	validate "$S"
	;;
retention_recover)
	# The recorder dies once the disk budget deleted generations of a
	# process still running (killed by itself right after it appended what
	# it deleted to pid_N/.retention, the second deletion). The recovered manifest says what went as
	# a live one does: the keys of a live manifest's retention object and
	# thread entries (a live run of the same program under the same
	# budget), a generation retired, and every event the threads emitted
	# either in a kept file or counted retired.
	"$ADA" record --no-agent $IDXOPT --max-disk-mb 4 --out "$WORK/live" -- "$PROD" exact 100000 \
		2>"$WORK/err" || fail "the live recording failed"
	LIVE=$(ls "$WORK"/live/session_*/pid_*/manifest.json)
	ADA_TEST_KILL_AT=retention_appended "$ADA" record --no-agent $IDXOPT --max-disk-mb 4 \
		--out "$WORK/out" -- "$PROD" kill "$WORK/counts" 2>"$WORK/err" &
	APID=$!
	wait $APID 2>/dev/null
	P=$(pgrep -f "$PROD kill $WORK/counts")
	[ -n "$P" ] || fail "the program is gone"
	kill -KILL $P
	while kill -0 $P 2>/dev/null; do sleep 0.05; done
	S=$(ls -d "$WORK"/out/session_* | head -n 1)
	ls "$S"/pid_*/.retention >/dev/null 2>&1 || fail "the recorder died before the budget deleted anything"
	"$ADA" recover "$S" 2>"$WORK/rec" || { cat "$WORK/rec" >&2; fail "ada recover failed"; }
	ls "$S"/pid_*/.retention >/dev/null 2>&1 && fail "recover left pid_N/.retention"
	python3 - "$LIVE" "$S"/pid_*/manifest.json "$WORK/counts" <<'PY' || fail "the recovered retention facts are wrong"
import json, struct, sys
live, rec = (json.load(open(p)) for p in sys.argv[1:3])
counts = struct.unpack("<4Q", open(sys.argv[3], "rb").read(32))
errs = []
r = rec["retention"]
missing = set(live["retention"]) - set(r)
if missing:
    errs.append("retention lacks %s" % sorted(missing))
if r.get("retired_generations", 0) < 2 or r.get("retired_events", 0) <= 0:
    errs.append("nothing counted retired: %s" % r)
keys = {k for k in live["threads"][0] if k.startswith("retired")}
kept = retired = until = waits = 0
for t in rec["threads"]:
    waits += t.get("ring_waits", 0)
    if keys - set(t):
        errs.append("thread %s lacks %s" % (t.get("thread"), sorted(keys - set(t))))
        continue
    kept += sum(f["events"] for f in t["files"])
    retired += t["retired_events"]
    starts = [f["time_start_ns"] for f in t["files"]]
    if t["retired_events"] and not 0 < t["retired_until_ns"] <= min(starts or [1 << 63]):
        errs.append("thread %s: retired until %d, its kept files start at %s"
                    % (t["thread"], t["retired_until_ns"], starts))
    until = max(until, t["retired_until_ns"])
if retired != r.get("retired_events") or until != r.get("retired_until_ns"):
    errs.append("the sums %s are not the threads' (%d events, until %d)" % (r, retired, until))
# each thread stored its count after publishing the event (count or count
# + 1), and the files hold ada's two marks of each wait for ring space
if not sum(counts) <= kept + retired <= sum(counts) + len(counts) + 2 * waits:
    errs.append("%d events kept + %d retired, the threads emitted %d and waited %d times"
                % (kept, retired, sum(counts), waits))
for e in errs:
    print(e, file=sys.stderr)
sys.exit(1 if errs else 0)
PY
	validate "$S"
	;;
enospc)
	# A 6 MiB tmpfs fills up after ~190 000 of the 4 000 000 events.
	[ "$(id -u)" -eq 0 ] || { echo "pipeline_test(enospc): needs root to mount a tmpfs: skipped"; exit 77; }
	mkdir -p "$WORK/small"
	mount -t tmpfs -o size=6m tmpfs "$WORK/small" 2>/dev/null || { echo "pipeline_test(enospc): cannot mount a tmpfs: skipped"; exit 77; }
	trap 'umount "$WORK/small" 2>/dev/null; rm -rf "$WORK"' EXIT
	# No budget (the default one, 10 % of the 6 MiB, would keep the disk from filling).
	"$ADA" record --no-agent $IDXOPT --max-disk-mb 0 --out "$WORK/small/out" -- "$PROD" exact 1000000 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc: the program exited 0, and its status is ada's whatever happened to the recording"
	grep -q "disk filled up" "$WORK/err" || fail "no disk-full message on stderr"
	S=$(session_of)
	check "$S" prefix 1000000 || fail "check failed"
	grep -q '"disk_full": true' "$S"/pid_*/manifest.json || fail "manifest lacks disk_full"
	validate "$S"
	# Nothing of ada's holds the file system once `ada record` returned:
	# unmounted at once (the recorder's io_uring lets go of the session
	# it registered at its end, not in the kernel's teardown after it).
	rm -rf "$WORK/small/out"
	"$ADA" record --no-agent $IDXOPT --out "$WORK/small/out2" -- "$PROD" exact 1000 2>"$WORK/err" ||
		fail "a short recording failed"
	umount "$WORK/small" || fail "the session's file system is busy after ada record returned"
	;;
badinput)
	# One sentence, a non-zero exit, and no session directory left behind.
	O="$WORK/out"
	printf '\001\000\002hello\n' >"$WORK/notelf"; chmod +x "$WORK/notelf"
	cp /bin/true "$WORK/suid"; chmod u+s "$WORK/suid"
	printf 'int main(void){return 0;}\n' >"$WORK/st.c"
	for prog in /nonexistent/program "$WORK" "$WORK/notelf" "$WORK/suid" static; do
		if [ "$prog" = static ]; then
			cc -static -o "$WORK/st" "$WORK/st.c" 2>/dev/null || continue
			prog="$WORK/st"
		fi
		"$ADA" record --out "$O" -- "$prog" 2>"$WORK/err"
		rc=$?
		[ $rc -ne 0 ] || fail "$prog: exit status 0"
		[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "$prog: not one line"
		[ -e "$O" ] && fail "$prog: a session directory was left behind"
	done
	grep -q "statically linked" "$WORK/err" || [ ! -e "$WORK/st" ] || fail "static binary not named as such"
	"$ADA" record --flush sometimes --out "$O" -- true 2>"$WORK/err" && fail "bad --flush accepted"
	[ -e "$O" ] && fail "bad option left a session directory"
	# exit status passes through: plain, and 128 + signal
	"$ADA" record --no-agent $IDXOPT --out "$O" -- sh -c 'exit 7' 2>"$WORK/err"
	[ $? -eq 7 ] || fail "exit status 7 not passed through"
	[ -d "$(session_of)" ] || fail "last stderr line is not the session directory"
	"$ADA" record --no-agent $IDXOPT --out "$O" -- sh -c 'kill -TERM $$' 2>"$WORK/err"
	[ $? -eq 143 ] || fail "128 + SIGTERM not passed through"
	;;
*)
	fail "unknown mode"
	;;
esac
exit 0
