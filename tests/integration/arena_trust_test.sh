#!/bin/sh
# The arena is untrusted input (issue 12 item 1): `ada record --no-agent`
# of t_scribble, a program that damages its own arena in one way per
# MODE, on a small tmpfs (when root; a --max-disk-mb budget otherwise),
# under `timeout` (a guard against hangs, not a timing assertion). The
# recorder must exit, write at most what the program validly emitted plus
# one ring per thread, say what was wrong (manifest + stderr), and leave a
# session `ada validate` accepts.
#   arena_trust_test.sh ADA T_SCRIBBLE MODE
set -u
ADA=$1 PROG=$2 MODE=$3
N=20000        # good events before the damage
RING=32768     # index ring events per thread (--ring-mb 1)
WORK=$(mktemp -d /tmp/ada_trust.XXXXXX)
OUT="$WORK/out"
MNT=""
cleanup() {
	[ -n "${PPID_T:-}" ] && kill -KILL "$PPID_T" 2>/dev/null
	for m in "$OUT"/session_*/pid_*/manifest.json; do
		[ -f "$m" ] || continue
		A=$(sed -n 's/.*"arena_dir": "\(.*\)".*/\1/p' "$m" | head -n 1)
		case "$A" in /dev/shm/ada-*) rm -rf "$A" ;; esac
	done
	[ -n "$MNT" ] && umount "$MNT" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "arena_trust_test($MODE): $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

if [ "$(id -u)" -eq 0 ] && mkdir -p "$WORK/fs" && mount -t tmpfs -o size=64m tmpfs "$WORK/fs" 2>/dev/null; then
	MNT="$WORK/fs"
	OUT="$MNT/out"
	BUDGET=""
else
	BUDGET="--max-disk-mb 48"
fi

record() {
	# shellcheck disable=SC2086
	timeout -s KILL 60 "$ADA" record --no-agent --max-threads 8 --thread-limit 8 --ring-mb 1 $BUDGET ${EXTRA:-} --out "$OUT" -- \
		"$PROG" "$MODE" "$1" >"$WORK/stdout" 2>"$WORK/err"
	RC=$?
	[ $RC -eq 137 ] && fail "the recorder did not exit (killed by the 60 s guard)"
	S=$(tail -n 1 "$WORK/err")
	[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
	P=$(ls -d "$S"/pid_* | head -n 1)
}

# Events in the index files: an ATF v2 file's from its size (a 64-byte
# header and footer around 32-byte events), a compact one's (ATC1, the
# default --index-format) from its finished header's event_count.
events_written() {
	python3 - "$1" <<'PY'
import glob, os, sys
n = 0
for p in glob.glob(os.path.join(sys.argv[1], "**", "index*.atf"), recursive=True):
    h = open(p, "rb").read(32)
    if h[:4] == b"ATC1":
        n += int.from_bytes(h[24:32], "little")
    else:
        n += (os.path.getsize(p) - 128) // 32
print(n)
PY
}
drop_of() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['drops']['index'][sys.argv[2]])" "$P/manifest.json" "$1"; }
quarantined() { python3 -c "import json,sys; print(len(json.load(open(sys.argv[1])).get('quarantined', [])))" "$P/manifest.json"; }

validate() {
	"$ADA" validate "$1" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }
}

expect_flagged() {
	grep -q "broke the ring protocol" "$WORK/err" || fail "no 'broke the ring protocol' on stderr"
	[ "$(quarantined)" -ge 1 ] || fail "manifest lists no quarantined slot"
	grep -q '"corrupt"' "$P/manifest.json" || fail "manifest drop table has no corrupt reason"
}

expect_bounded() { # max events on disk
	w=$(events_written "$S")
	[ "$w" -le "$1" ] || fail "$w events on disk, at most $1 expected"
	[ "$w" -ge "$N" ] || fail "$w events on disk, the $N good ones expected"
}

case $MODE in
head_back | head_far | tail_fwd | random)
	record $N
	[ $RC -eq 0 ] || fail "exit status $RC"
	expect_flagged
	expect_bounded $((N + 10 + RING))
	validate "$S"
	;;
garbage)
	record $N
	[ $RC -eq 0 ] || fail "exit status $RC"
	expect_flagged
	grep -q "event .* of its ring has an impossible" "$WORK/err" || fail "no event fault named"
	[ "$(drop_of corrupt)" -eq 64 ] || fail "corrupt drops $(drop_of corrupt), expected the 64 garbage events"
	expect_bounded $N
	validate "$S"
	;;
decided)
	# --detail always: the drain quarantines the slot and marks its
	# detail ring decided for good (the program checks it, exit 9 if not).
	EXTRA="--detail always --detail-mb 1" record $N
	[ $RC -eq 0 ] || fail "exit status $RC (9: the detail ring was never decided)"
	expect_flagged
	validate "$S"
	;;
truncate)
	record $N
	[ $RC -eq 0 ] || fail "exit status $RC"
	grep -q "truncated its arena file" "$WORK/err" || fail "no truncation notice on stderr"
	grep -q "truncated its arena file" "$P/manifest.json" || fail "no truncation warning in the manifest"
	expect_bounded $((N + 6))
	validate "$S"
	;;
fake)
	record $N
	[ $RC -eq 0 ] || fail "exit status $RC"
	grep -q "process 1 is not a descendant\|process 1: that process is not a descendant" "$WORK/err" || fail "fake arena for pid 1 not reported"
	[ -e "$S/pid_1" ] && fail "a pid_1 directory was made for the fake arena"
	validate "$S"
	;;
churn)
	record 5000
	[ $RC -eq 0 ] || fail "exit status $RC"
	dirs=$(ls -d "$P"/thread_* | wc -l)
	[ "$dirs" -lt 5000 ] || fail "$dirs thread directories for 5000 threads: no bound"
	[ "$(drop_of thread_limit)" -gt 0 ] || fail "no thread_limit drops counted"
	grep -q "starts threads faster than" "$WORK/err" || fail "no thread-rate notice on stderr"
	listed=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['threads']))" "$P/manifest.json")
	[ "$listed" -eq "$dirs" ] || fail "manifest lists $listed threads, $dirs directories exist"
	validate "$S"
	;;
recover)
	# The recorder dies (SIGKILL) after the program damaged its ring;
	# `ada recover` must read the arena with the same checks, in bounded
	# memory, and flag the slot.
	T_SCRIBBLE_HOLD=1 "$ADA" record --no-agent --max-threads 8 --thread-limit 8 --ring-mb 1 $BUDGET --out "$OUT" -- \
		"$PROG" head_far $N >"$WORK/stdout" 2>"$WORK/err" &
	APID=$!
	i=0
	until grep -q READY "$WORK/stdout" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 600 ] && fail "the program never got READY"; sleep 0.1
	done
	PPID_T=$(cat /proc/"$APID"/task/*/children 2>/dev/null | awk '{print $1}')
	kill -KILL $APID; wait $APID 2>/dev/null
	[ -n "$PPID_T" ] && kill -KILL "$PPID_T"
	S=$(ls -d "$OUT"/session_* | head -n 1); P=$(ls -d "$S"/pid_* | head -n 1)
	# The kill can land between creating a thread's file and writing its
	# header (segment.c fallocates a first segment; detail_file.c creates it
	# empty): such files must be repaired, not fail the recovery.
	mkdir -m 700 "$P/thread_90" "$P/thread_91"
	dd if=/dev/zero of="$P/thread_90/index.atf" bs=1M count=1 status=none
	: >"$P/thread_90/detail.atf"
	: >"$P/thread_91/index.atf"
	# Bounded memory: 300 MB of address space (a sanitizer build reserves
	# terabytes of shadow, so there the bound is not applied).
	if ldd "$ADA" 2>/dev/null | grep -q 'lib[at]san'; then LIMIT=unlimited; else LIMIT=300000; fi
	(ulimit -v $LIMIT; timeout -s KILL 60 "$ADA" recover "$S") 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || { cat "$WORK/err" >&2; fail "ada recover exit status $rc"; }
	grep -q "had no header" "$WORK/err" || fail "recover did not say it repaired a headerless file"
	expect_flagged
	validate "$S"
	;;
lag)
	# The recorder is SIGKILLed while the program runs; the program then
	# counts drain-lag drops, records exit status 3 and exits. `ada
	# recover` must carry both into the manifest, and `ada status` too.
	"$ADA" record --no-agent --max-threads 8 --thread-limit 8 --ring-mb 1 $BUDGET --out "$OUT" -- \
		"$PROG" lag $N >"$WORK/stdout" 2>"$WORK/err" &
	APID=$!
	i=0
	until grep -q READY "$WORK/stdout" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 600 ] && fail "the program never got READY"; sleep 0.1
	done
	PPID_T=$(cat /proc/"$APID"/task/*/children 2>/dev/null | awk '{print $1}')
	kill -KILL $APID; wait $APID 2>/dev/null
	i=0
	while [ -n "$PPID_T" ] && kill -0 "$PPID_T" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 600 ] && fail "the program did not finish"; sleep 0.1
	done
	PPID_T=""
	S=$(ls -d "$OUT"/session_* | head -n 1); P=$(ls -d "$S"/pid_* | head -n 1)
	"$ADA" recover "$S" 2>"$WORK/err" || fail "ada recover failed"
	[ "$(drop_of drain_lag)" -gt 1000 ] || fail "drain_lag drops $(drop_of drain_lag), expected > 1000"
	st=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['exit']['status'])" "$P/manifest.json")
	[ "$st" = 3 ] || fail "exit status in the manifest is $st, expected 3"
	"$ADA" status "$P" >"$WORK/status" 2>&1
	grep -q "exit status 3" "$WORK/status" || { cat "$WORK/status" >&2; fail "ada status does not say exit status 3"; }
	validate "$S"
	;;
stop)
	# SIGTERM to the recorder while the program runs on: it must exit
	# (guarded by the 60 s timeout), with final manifests.
	T_SCRIBBLE_HOLD=1 "$ADA" record --no-agent --max-threads 8 --thread-limit 8 --ring-mb 1 $BUDGET --out "$OUT" -- \
		"$PROG" head_far $N >"$WORK/stdout" 2>"$WORK/err" &
	APID=$!
	i=0
	until grep -q READY "$WORK/stdout" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 600 ] && fail "the program never got READY"; sleep 0.1
	done
	PPID_T=$(cat /proc/"$APID"/task/*/children 2>/dev/null | awk '{print $1}')
	kill -TERM $APID
	i=0
	while kill -0 $APID 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 600 ] && fail "the recorder ignored SIGTERM"; sleep 0.1
	done
	wait $APID
	S=$(tail -n 1 "$WORK/err"); P=$(ls -d "$S"/pid_* | head -n 1)
	grep -q '"state": "complete"' "$P/manifest.json" || fail "manifest not final after SIGTERM"
	expect_flagged
	validate "$S"
	;;
*)
	fail "unknown mode"
	;;
esac
exit 0
