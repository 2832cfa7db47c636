#!/bin/bash
# The status of children their traced parent reaps reaches each child's
# manifest through the parent's table of reaped children in its arena
# (ring.h "children the process reaped itself"), not through a file.
#  1. 256 fork + _exit children (the table's ADA_REAPED_SLOTS), child i
#     exiting i, each reaped at once: every child's manifest has its
#     exact exit status, no pid_N/reaped_status exists, nothing is
#     counted unknown. No more than the table holds: with 300 the table
#     wrapped whenever the drain fell 256 children behind the program's
#     forks (a loaded machine; it failed about one run in fifteen, before
#     and after the changes of 2026-12-03), and part 2 is the wrap's
#     test, made deterministic.
#  2. 600 such children while the recorder is stopped (the program sends
#     it SIGSTOP before its first fork and SIGCONT after its last reap:
#     the drain reads nothing meanwhile, deterministically): the table of
#     256 slots wraps, so the first 344 notes are overwritten before the
#     drain reads them. Those children's status is unknown -- null, never
#     a wrong one -- and counted: 344 overwritten and 344 unknown in the
#     manifests, on the summary line and in `ada status`; the other 256
#     have their exact status.
#   waitnotes_test.sh ADA T_FORKREAP
set -u
ADA=$1 PROD=$2
W=$(mktemp -d "${TMPDIR:-/tmp}/waitnotes.XXXXXX")
export ADA_NO_RECOVER_ORPHANS=1
trap 'rm -rf "$W"' EXIT
fail() { echo "waitnotes_test: $*" >&2; tail -n 20 "$W/err" >&2 2>/dev/null; exit 1; }
# Small arenas: 600 of them wait at once for the stopped drain.
OPTS="--detail never --max-threads 1 --thread-limit 1 --ring-mb 1 --max-disk-mb 0"

# check.py SESSION PIDS_FILE N UNKNOWN: every child's status exact or, for
# exactly UNKNOWN of them, null; the counts say UNKNOWN. The counts are
# the largest over every manifest of the session, the program's among
# them: each holds the session's counts as when it was written, and the
# last child's is often written before its reaper's note of it is read
# (its status came from its zombie first); the program's is written
# after the last read of its table (drain_end.c drain_finish_proc).
cat >"$W/check.py" <<'PY'
import json, os, sys
s, pids, n, unknown = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = [l.split() for l in open(pids) if l.strip()]
assert len(rows) == n, "%d children printed, expected %d" % (len(rows), n)
nulls, counts = 0, {}
for pid, i in rows:
    d = os.path.join(s, "pid_" + pid)
    assert not os.path.lexists(os.path.join(d, "reaped_status")), d + "/reaped_status exists"
    m = json.load(open(os.path.join(d, "manifest.json")))
    assert m["state"] == "complete", (pid, m["state"])
    e = m["exit"]
    if e["status"] is None:
        assert e["signal"] is None and e["abnormal"], (pid, e)
        nulls += 1
    else:
        assert e["status"] == int(i) % 256 and e["signal"] is None, (pid, i, e)
for e in os.listdir(s):
    f = os.path.join(s, e, "manifest.json")
    if e.startswith("pid_") and os.path.exists(f):
        for k, v in json.load(open(f))["wait_statuses"].items():
            counts[k] = max(counts.get(k, 0), v)
assert nulls == unknown, "%d children with no status, expected %d" % (nulls, unknown)
for k in ("unknown_processes", "overwritten"):
    assert counts[k] == unknown, "wait_statuses.%s %d, expected %d" % (k, counts[k], unknown)
assert counts["refused"] == 0, counts
assert counts["notes_read"] == n - unknown, counts
print("waitnotes: %d children, %d exact, %d unknown and counted" % (n, n - nulls, nulls))
PY

run() { # N MODE UNKNOWN
	rm -rf "$W/out"
	timeout 200 "$ADA" record $OPTS --out "$W/out" -- "$PROD" "$1" "$2" >"$W/pids" 2>"$W/err"
	local rc=$?
	[ $rc -eq 0 ] || fail "$2: exit status $rc, expected 0"
	S=$(tail -n 1 "$W/err")
	[ -d "$S" ] || fail "$2: last stderr line is not the session directory: $S"
	python3 "$W/check.py" "$S" "$W/pids" "$1" "$3" || fail "$2: the manifests are wrong"
	[ -z "$(find "$S" -name reaped_status)" ] || fail "$2: a reaped_status file exists"
}

run 256 status 0
! grep -q "exit status unknown" "$W/err" || fail "status: the summary says a status is unknown"

run 600 stop 344
grep -q "ada: 344 processes' exit status unknown; 344 notes of children reaped" "$W/err" ||
	fail "stop: the summary does not count the 344 overwritten notes"
"$ADA" status "$S" >"$W/status" 2>&1 || fail "stop: ada status failed"
grep -q "344 processes' exit status unknown (344 reaped-child notes overwritten" "$W/status" ||
	{ cat "$W/status" >&2; fail "stop: ada status does not count them"; }
exit 0
