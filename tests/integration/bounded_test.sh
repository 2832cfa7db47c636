#!/bin/bash
# Bounded resources and honest accounting (issue 12, items 3 and 5):
#   bounded_test.sh ADA PRODUCER CHECK FORK MODE
#   budget       the default disk budget holds a 50 M-event recording on a
#                small tmpfs, says so on stderr and in the manifest
#   forks        1 500 short processes (producer_fork): every one recorded,
#                nothing left in /dev/shm
#   forks_pool   20 children one after the other, each started once the
#                recorder has put its predecessor's arena in the arena pool:
#                19 take it (ring.recycled), each with fewer events than the
#                one before, and every process holds exactly its own
#   forks_agent  a shell loop of 100 subshells under the agent: the same;
#                the arena pool's hits and misses add up to the processes
#   forks_budget_agent  a shell loop of 20 programs (FIB) under the agent and
#                --max-disk-mb 2: their symbol files alone are more than the
#                budget; those of processes left with no thread file go too
#   forks_budget 24 processes of 100 000 events under --max-disk-mb 2: the
#                finished ones' files are deleted oldest first, the session
#                stays within its budget, the manifests count what went,
#                report and dump still read it and say what is missing
#   shm_ceiling  --max-shm-mb admits one arena: the other processes run
#                untraced, counted on stderr, in the manifest and by status
#   shm_small    a /dev/shm of 2 GiB (a private mount namespace): the
#                default ceiling (1 GiB) holds the parent's arena of 4 x 129
#                MiB but no child's beside it: each child is recorded with
#                smaller detail rings, its events exact, counted with the
#                reason on stderr, in the manifests and by status (live
#                and after)
#   diskfull     a 4 MiB tmpfs fills: the manifest is final, says so, lists
#                only files that exist; summary, manifest, status agree
#   diskfull_late  the same, and a thread that starts once the disk is full
#                (no file) waits for ring space (the recorder stopped
#                meanwhile): its waits are counted with its lost markers
#   diskfull_detail  a 3 MiB tmpfs fills while --detail always writes
#                detail.atf (FIB: a program under the agent): every file is
#                valid, the detail records cut are counted in the manifest
#                and on the summary line
#   arena_quota  a file system's EDQUOT when a process makes its arena (the
#                test hook ADA_TEST_ARENA_ERRNO=122; this kernel's tmpfs has
#                no quota option): not the shared-memory ceiling, so the
#                agent says it and the recorder counts it as an arena
#                failure with its reason (FIB under the agent)
#   manifest_lost  every final manifest's write fails (the test hook
#                ADA_TEST_FINAL_MANIFEST_FAIL=1, as a full disk past the
#                manifests' reserve): the arena is removed all the same,
#                pid_N/.ring_slots says the process was drained (ARSD), and
#                `ada recover` says its final manifest is missing, not
#                that its arena is gone
#   retire       300 processes of 20 000 events under --max-disk-mb 2: those
#                the budget emptied are retired (pid_N/ replaced by a line
#                of retired.jsonl, their memory freed): the session stays
#                within its budget, the recorder holds a bounded number of
#                processes, and summary, status, ls and the manifests with
#                the lines count every event of every process
#   agree        summary line, `ada status` and the manifests agree on
#                written, not written, drops by reason, untraced
#   dead         `ada status` tells a live recorder from a killed one
# Runaway-capable modes run on a small tmpfs, each command under a timeout,
# and clean up (unmount, remove) even when they fail.
set -u
ADA=$1 PROD=$2 CHECK=$3 FORK=$4 MODE=$5 FIB=${6:-}
HERE=$(cd "$(dirname "$0")" && pwd) # forks leaves for / below
BIN=
# forks: in a pid namespace of its own (root, as its tmpfs; skipped
# otherwise), where no process but the test's takes a pid: its 1 500
# children cannot meet a pid the machine's other processes reused (a
# reuse the recorder tells and counts, pidreuse_test.sh, raceb_test.sh),
# so every child must be recorded, none refused. With its own /tmp (the
# per-user registry) and no orphan recovery: its pids are not the
# machine's.
# producer_check reads ATF v2: a compact session through its export.
# Sourced before forks hides /tmp (a checkout may be under it).
. "$HERE/atf_view.sh"
if [ "$MODE" = forks ]; then
	PIDNS_TAG="bounded_test(forks)"
	. "$HERE/pidns.sh"
	pidns_enter BOUNDED_FORKS_INNER "$0" "$@"
	pidns_private_tmp "$ADA:ada" "$FORK:producer_fork" "$CHECK:producer_check"
	ADA=$BIN/ada FORK=$BIN/producer_fork CHECK=$BIN/producer_check
	export ADA_NO_RECOVER_ORPHANS=1
fi
# shm_small: in a mount namespace of its own (root; skipped otherwise)
# whose /dev/shm is a tmpfs of 2 GiB (sparse arenas: it costs the pages
# written), gone with the namespace whatever happens.
if [ "$MODE" = shm_small ] && [ -z "${BOUNDED_SHM_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "bounded_test($MODE): needs root for a mount namespace: skipped"; exit 77; }
	unshare -m --propagation private true 2>/dev/null ||
		{ echo "bounded_test($MODE): cannot make a mount namespace (unshare): skipped"; exit 77; }
	BOUNDED_SHM_INNER=1 exec timeout -s KILL 60 unshare -m --propagation private \
		bash -c 'mount -t tmpfs -o size=2g,mode=1777 tmpfs /dev/shm || exit 77; exec bash "$@"' \
		bounded_shm "$0" "$@"
fi
WORK=$(mktemp -d /tmp/ada_bounded.XXXXXX)
SMALL=
# Whatever happens to the test, no arena directory of its sessions stays
# in /dev/shm: each one its manifests name is removed (only those: tests
# running at the same time have directories of the same name pattern).
# Every manifest of a session names the same one: one manifest a session
# is read (the forks session has 1 500).
shm_sweep() {
	for s in "$WORK"/out/session_* "$WORK"/small/out/session_*; do
		for m in "$s"/pid_*/manifest.json "$s"/retired.jsonl; do
			[ -f "$m" ] || continue
			a=$(sed -n 's/.*"arena_dir": "\(\/dev\/shm\/ada-[^"/]*\)".*/\1/p' "$m" | head -n 1)
			[ -n "$a" ] && { rm -rf "$a"; break; }
		done
	done
}
REC=
cleanup() {
	# diskfull_late's recorder, stopped or not, when the test failed
	[ -n "$REC" ] && kill -0 "$REC" 2>/dev/null && { kill -CONT "$REC"; kill -KILL "$REC"; wait "$REC"; } 2>/dev/null
	shm_sweep
	[ -n "$SMALL" ] && umount "$SMALL" 2>/dev/null
	rm -rf "$WORK"
	[ -n "$BIN" ] && rm -rf "$BIN"
}
trap cleanup EXIT
fail() { echo "bounded_test($MODE): $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

session_of() { tail -n 1 "$WORK/err"; }

validate() {
	"$ADA" validate "$1" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }
}

# A tmpfs of $1 at $WORK/small (root only: the test is skipped otherwise).
small_fs() {
	[ "$(id -u)" -eq 0 ] || { echo "bounded_test($MODE): needs root to mount a tmpfs: skipped"; exit 77; }
	mkdir -p "$WORK/small"
	mount -t tmpfs -o size="$1" tmpfs "$WORK/small" 2>/dev/null || { echo "bounded_test($MODE): cannot mount a tmpfs: skipped"; exit 77; }
	SMALL=$WORK/small
}

# json FILE EXPR: a Python expression over the parsed file (m) printed.
json() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print($2)" "$1"; }

# The session's arena directory (every manifest names the same one) is
# gone from /dev/shm.
# Arenas the recorder refused for a reason whose sentence holds $2:
# each reason's warning, plus the K of its "(and K more arenas ignored
# for the same reason)"; the largest count among the session's
# manifests (each holds the recording's warnings as they were when it
# was last written, the finished ones rewritten at the end).
refusals() {
	python3 - "$1" "$2" <<'PY'
import glob, json, re, sys
best = 0
for f in glob.glob(sys.argv[1] + "/pid_*/manifest.json"):
    n = 0
    for w in json.load(open(f)).get("warnings", []):
        if sys.argv[2] in w:
            m = re.search(r"\(and (\d+) more arenas ignored for the same reason\)", w)
            n += 1 + (int(m.group(1)) if m else 0)
    best = max(best, n)
print(best)
PY
}

# Every process of SESSION, as python objects: the manifests, and the
# retired processes' lines (retired.jsonl; docs/manifest.md).
export PY_PROCS='
import glob, json, os
def procs(sess):
    out = [json.load(open(f)) for f in glob.glob(sess + "/pid_*/manifest.json")]
    if os.path.exists(sess + "/retired.jsonl"):
        out += [json.loads(l) for l in open(sess + "/retired.jsonl") if l.strip()]
    return out
'

check_shm_clean() {
	n=$(python3 -c "$PY_PROCS
import sys; print(len({m['arena_dir'] for m in procs(sys.argv[1])}))" "$1")
	[ "$n" -eq 1 ] || fail "the manifests name $n arena directories, expected one"
	A=$(python3 -c "$PY_PROCS
import sys; print(procs(sys.argv[1])[0]['arena_dir'])" "$1")
	case $A in /dev/shm/ada-*) ;; *) fail "arena directory $A is not in /dev/shm" ;; esac
	[ -e "$A" ] && fail "arena directory $A left behind"
}

# agree SESSION: the summary line (in $WORK/err), `ada status` and the
# manifests give the same written, not written, drops by reason, untraced,
# waits for ring space and process counts.
agree() {
	"$ADA" status "$1" >"$WORK/status" 2>&1 || { cat "$WORK/status" >&2; fail "ada status failed"; }
	python3 - "$1" "$WORK/err" "$WORK/status" <<'PY' || fail "summary, status and manifests disagree"
import os; exec(os.environ["PY_PROCS"])
import glob, json, re, sys
sess, err, status = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read()
def reasons(text):
    m = re.search(r"drops (\d+)(?: \(([^)]*)\))?", text)
    d = {k: int(v) for k, v in (x.split(" ") for x in m.group(2).split(", "))} if m.group(2) else {}
    assert int(m.group(1)) == sum(d.values()), text
    return d
line = next(l for l in err.splitlines() if l.startswith("ada: recorded "))
num = lambda pat, text, dflt=None: int(re.search(pat, text).group(1)) if re.search(pat, text) else dflt
summ = dict(written=num(r"recorded (\d+) events", line), procs=num(r"from (\d+) process", line),
            lost=num(r"(\d+) events were not written", err, 0),
            waits=num(r"threads waited (\d+) times? \([^)]*\) for ring space", err, 0),
            untraced=num(r"(\d+) process(?:es)? ran untraced", err, 0), drops=reasons(line))
sline = [l for l in status.splitlines() if l.startswith(sess.rstrip("/") + ":")][-1]
stat = dict(written=num(r"(\d+) events written", sline), procs=num(r": (\d+) process", sline),
            lost=num(r"(\d+) not written", sline), untraced=num(r"(\d+) processes untraced", sline),
            waits=num(r"\nsummary: .*waited (\d+) times? \([^)]*\) for ring space", status, 0),
            drops=reasons(sline))
mans = procs(sess)
md = {}
for m in mans:
    for lane in m["drops"].values():
        for k, v in lane.items():
            if v:
                md[k] = md.get(k, 0) + v
man = dict(written=sum(m["metrics"]["events_written"] for m in mans), procs=len(mans),
           lost=sum(m["lost_events"] for m in mans),
           waits=sum(m["metrics"]["ring_waits"] for m in mans),
           untraced=max(m["shm"]["untraced_processes"] for m in mans), drops=md)
print("summary ", summ, "\nstatus  ", stat, "\nmanifest", man)
sys.exit(0 if summ == stat == man else 1)
PY
}

# diskfull_check EVENTS LATE: a recording that filled the disk ($WORK/err)
# made final manifests that say so and list only the files that exist;
# the files and the lost count hold the program's EVENTS and ada's two
# markers per wait for ring space, no more, no less; summary, manifest
# and status agree. LATE 1: a thread with no directory (it came once
# the disk was full) waited, and its waits are in the process's count.
diskfull_check() {
	grep -q "disk filled up" "$WORK/err" || fail "no disk-full message on stderr"
	S=$(session_of)
	M=$(ls "$S"/pid_*/manifest.json)
	[ "$(json "$M" "m['state']")" = complete ] || fail "the manifest is not final: $(json "$M" "m['state']")"
	[ "$(json "$M" "m['disk_full']")" = True ] || fail "the manifest does not say disk_full"
	python3 - "$(dirname "$M")" "$1" "$2" <<'PY' || fail "the manifest lists files that do not exist, or misses some, or counts what the rings held wrong"
import glob, json, os, sys
d, events, late = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
m = json.load(open(d + "/manifest.json"))
listed = {f["path"] for t in m["threads"] for f in t["files"]}
dirs = {"thread_%d" % t["thread"] for t in m["threads"]}
on_disk = {os.path.relpath(p, d) for p in glob.glob(d + "/thread_*/index*.atf")}
ok = listed == on_disk and dirs == {os.path.basename(p) for p in glob.glob(d + "/thread_*")}
# the program's events and ada's two markers per wait for ring space
waits = m["metrics"]["ring_waits"]
ok = ok and m["metrics"]["events_written"] + m["lost_events"] == events + 2 * waits
listed_waits = sum(t["ring_waits"] for t in m["threads"])
if late:
    ok = ok and len(m["threads"]) == 1 and waits > listed_waits
print(sorted(listed), sorted(on_disk), m["metrics"]["events_written"], m["lost_events"],
      "waits", waits, "of listed threads", listed_waits)
sys.exit(0 if ok else 1)
PY
	agree "$S"
	grep -q ": complete, [0-9]* events written, [1-9][0-9]* not written (disk full)" "$WORK/status" || { cat "$WORK/status" >&2; fail "ada status does not say complete with what was not written"; }
	validate "$S"
}

case $MODE in
diskfull)
	# No budget (the default one would keep the disk from filling): 4
	# threads x 1 M events (128 MB) into 4 MiB.
	small_fs 4m
	timeout 120 "$ADA" record --no-agent --max-disk-mb 0 --out "$SMALL/out" -- "$PROD" exact 1000000 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc: the program exited 0, and its status is ada's whatever happened to the recording"
	diskfull_check 4000000 0
	;;
diskfull_late)
	# A thread the drain first sees once the disk is full gets no file:
	# its events, its wait markers among them, are counted lost, and its
	# waits for ring space must be counted too (the drain read no wait of
	# a thread without a file: the markers of 8 waits were in the lost
	# count of a loaded bounded_diskfull and not in ring_waits). Thread 0
	# fills the 4 MiB (4 M events); the recorder is stopped (SIGSTOP)
	# before thread 1 starts and continued once thread 1 has filled its
	# ring (65 536 events, --ring-mb 2): it waits, for certain, and the
	# drain first sees it after the disk filled.
	small_fs 4m
	C=$WORK/counts
	"$ADA" record --no-agent --max-disk-mb 0 --ring-mb 2 --out "$SMALL/out" -- "$PROD" late "$C" 4000000 2>"$WORK/err" &
	REC=$!
	# bounded waits for the program's signs (a hang guard, no timing)
	late_wait() {
		for _ in $(seq 1200); do
			eval "$1" && return 0
			kill -0 $REC 2>/dev/null || return 1
			sleep 0.1
		done
		return 1
	}
	late_wait '[ -e "$C.phase" ]' || fail "thread 0 never ended"
	kill -STOP $REC
	touch "$C.go"
	late_wait '[ "$(od -An -tu8 -j8 -N8 "$C" | tr -d " ")" = 65536 ]' ||
		fail "thread 1 never filled its ring: $(od -An -tu8 -N16 "$C")"
	kill -CONT $REC
	wait $REC
	rc=$?
	REC=
	[ $rc -eq 0 ] || fail "exit status $rc: the program exited 0"
	diskfull_check $((4000000 + 262144)) 1
	;;
arena_quota)
	ADA_TEST_ARENA_ERRNO=122 timeout 60 "$ADA" record --out "$WORK/out" -- "$FIB" 5 >/dev/null 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc: the program exited 0"
	grep -q "ada-agent: cannot open the arena in .* (Disk quota exceeded); nothing is traced" "$WORK/err" || fail "the agent did not say why it traces nothing"
	grep -q "^ada: 1 process ran untraced: it could not make its arena (the first: Disk quota exceeded), not for the shared-memory ceiling" "$WORK/err" || fail "the recorder does not count the arena failure with its reason"
	grep -q "shared-memory ceiling of" "$WORK/err" && fail "taken for the shared-memory ceiling"
	;;
manifest_lost)
	# Long enough (4 x 500 000 events) for the early manifest, which
	# names the arena; every later ("complete") write fails.
	ADA_TEST_FINAL_MANIFEST_FAIL=1 timeout 120 "$ADA" record --no-agent --out "$WORK/out" -- "$PROD" exact 500000 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc: the program exited 0"
	grep -q "manifests of 1 process could not be written" "$WORK/err" || fail "the summary does not say the manifest could not be written"
	S=$(session_of)
	P=$(ls -d "$S"/pid_*)
	[ "$(json "$P/manifest.json" "m['state']")" = recording ] || fail "not the early manifest: $(json "$P/manifest.json" "m['state']")"
	[ "$(head -c 4 "$P/.ring_slots")" = ARSD ] || fail "pid_N/.ring_slots does not say the process was drained"
	check_shm_clean "$S"
	"$ADA" recover "$S" >"$WORK/rec" 2>&1 || { cat "$WORK/rec" >&2; fail "ada recover failed"; }
	grep -q "gone" "$WORK/rec" && { cat "$WORK/rec" >&2; fail "recover says an arena is gone"; }
	[ "$(json "$P/manifest.json" "m['state']")" = recovered ] || fail "recover did not write the manifest"
	json "$P/manifest.json" "m['warnings']" | grep -q "could not write its final manifest" || fail "the recovered manifest does not say the final one is missing"
	json "$P/manifest.json" "m['warnings']" | grep -q "is gone" && fail "the recovered manifest says the arena is gone"
	[ "$(json "$P/manifest.json" "m['metrics']['events_written'] - 2 * sum(t.get('ring_waits', 0) for t in m['threads'])")" -ge 2000000 ] || fail "recover counts fewer events than the program made"
	validate "$S"
	;;
diskfull_detail)
	# The detail file is being written when the disk fills: its last
	# buffer's write fails. It must end whole (cut back to its last
	# record, sealed) with no index event linking past it; the recorder
	# of before left it with a placeholder header and a torn tail that
	# ada validate refused, while the summary said the files were valid.
	small_fs 3m
	timeout 120 "$ADA" record --max-disk-mb 0 --detail always --out "$SMALL/out" -- "$FIB" 26 >/dev/null 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc: the program exited 0"
	grep -q "disk filled up" "$WORK/err" || fail "the disk did not fill: no disk-full message"
	S=$(session_of)
	ls "$S"/pid_*/thread_*/detail*.atf >/dev/null 2>&1 || fail "no detail file at all"
	validate "$S"
	grep -q ": 0 errors, 0 warnings: valid" "$WORK/validate" || { cat "$WORK/validate" >&2; fail "ada validate is not clean"; }
	cut=$(python3 -c "import glob,json,sys; print(sum((t.get('detail') or {}).get('cut', 0) for f in glob.glob(sys.argv[1] + '/pid_*/manifest.json') for t in json.load(open(f))['threads']))" "$S")
	[ "$cut" -gt 0 ] || fail "the manifests count no detail record cut at the full disk"
	grep -q "ada: $cut detail records could not be written and were cut" "$WORK/err" || fail "the summary does not say the $cut detail records cut"
	"$ADA" dump "$S" >/dev/null 2>"$WORK/derr" || { cat "$WORK/derr" >&2; fail "ada dump failed"; }
	;;
agree)
	# Drops (a small ring, --overflow drop) and a full disk in one
	# recording; whatever the counts, the three reports must agree.
	small_fs 8m
	timeout 120 "$ADA" record --no-agent --max-disk-mb 0 --overflow drop --ring-mb 1 --out "$SMALL/out" -- "$PROD" exact 2000000 2>"$WORK/err"
	S=$(session_of)
	[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
	agree "$S"
	validate "$S"
	;;
dead)
	"$ADA" record --no-agent --out "$WORK/out" -- "$PROD" kill "$WORK/counts" 2>"$WORK/err" &
	APID=$!
	i=0
	while [ ! -e "$WORK/counts.ready" ]; do
		i=$((i + 1)); [ $i -gt 1200 ] && { kill -KILL $APID; fail "the producer never got ready"; }
		sleep 0.1
	done
	S=$(ls -d "$WORK"/out/session_* | head -n 1)
	P=$(cat /proc/$APID/task/*/children | awk '{print $1}')
	"$ADA" status "$S" >"$WORK/status" 2>&1
	grep -q ": recording, pid $P, " "$WORK/status" || { cat "$WORK/status" >&2; kill -KILL $APID $P; fail "a live recording is not reported as recording"; }
	kill -KILL $APID
	wait $APID 2>/dev/null
	"$ADA" status "$S" >"$WORK/status" 2>&1
	grep -q "recording stopped: its recorder (pid $APID) is gone" "$WORK/status" || { cat "$WORK/status" >&2; kill -KILL $P; fail "a dead recorder is not reported as gone"; }
	grep -q "1 process left unfinished by a recorder that died" "$WORK/status" || { cat "$WORK/status" >&2; kill -KILL $P; fail "the session line does not count the unfinished process"; }
	kill -KILL "$P"
	while kill -0 "$P" 2>/dev/null; do sleep 0.05; done
	"$ADA" recover "$S" >/dev/null 2>&1 || fail "ada recover failed"
	"$ADA" status "$S" >"$WORK/status" 2>&1
	grep -q ": recovered, " "$WORK/status" || { cat "$WORK/status" >&2; fail "a recovered session is not reported as recovered"; }
	check_shm_clean "$S"
	;;
forks)
	# On a tmpfs: the disk's metadata operations would make the drain
	# slower than the test's time budget on a busy machine.
	# Each child is single-threaded and emits 10 events: one slot of a
	# 1 MiB index ring and no detail ring. What this proves (every
	# process recorded, nothing left in /dev/shm)
	# does not depend on the rings' size, and with the default arena
	# most of the test's time went to clearing the pages of each child's
	# populated slot and of the spare slots the drain prepares.
	small_fs 1g
	timeout 120 "$ADA" record --no-agent --detail never --max-threads 1 --ring-mb 1 \
		--out "$SMALL/out" -- "$FORK" 1500 10 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	S=$(session_of)
	# A process the disk budget emptied is retired: a line of
	# retired.jsonl, not a directory (the budget derived from a 1 GiB
	# tmpfs is reached when many children's files are allocated ahead).
	n=$(($(ls -d "$S"/pid_* | wc -l) + $(cat "$S"/retired.jsonl 2>/dev/null | wc -l)))
	# Every child recorded: none refused (a child whose /proc read raced
	# its parent's wait was once taken for a stranger, 39812c9), none
	# untraced (the shared-memory ceiling, met when the drain fell behind
	# many dead children's arenas, de3c3c8). Refusals are told once per
	# reason, later ones counted in that warning ("and K more arenas
	# ignored for the same reason"): counted from the manifests.
	ignored=$(refusals "$S" "ignored")
	[ "$n" -eq 1500 ] && [ "$ignored" -eq 0 ] || fail "$n processes (directories and retired lines) and $ignored refusals, expected 1500 and none"
	grep -q "ran untraced" "$WORK/err" && fail "children ran untraced"
	grep -q "recorded 15000 events .* from 1500 processes" "$WORK/err" || fail "not 15000 events from 1500 processes"
	check_shm_clean "$S"
	;;
retire)
	# Each child's file is a few percent of the budget: the budget deletes
	# the oldest finished ones' files all along, and each emptied process
	# is retired (docs/manifest.md, "Retired processes").
	small_fs 256m
	ADA_TEST_BUDGET_AUDIT=$WORK/audit timeout 300 "$ADA" record --no-agent --detail never \
		--max-threads 1 --ring-mb 1 --max-disk-mb 2 --out "$SMALL/out" -- "$FORK" 300 20000 \
		2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	S=$(session_of)
	du=$(du -s -B1 "$S" | cut -f1)
	[ "$du" -le $((2 << 20)) ] || fail "the session takes $du bytes, over its budget of 2 MiB"
	[ -s "$S/retired.jsonl" ] || fail "no process was retired (no retired.jsonl)"
	# Counts from the program: 300 children of 20 000 events each (and
	# ada's two markers per wait for ring space), every one accounted for
	# by its manifest or its retired line, a retired one with no pid_N/.
	python3 - "$S" <<'PY' || fail "the manifests and retired lines do not account for every process and event"
import os; exec(os.environ["PY_PROCS"])
import sys
sess = sys.argv[1]
ps = procs(sess)
ret = [m for m in ps if m.get("retired")]
ok = len(ps) == 300 and len({m["pid"] for m in ps}) == 300
for m in ps:
    w = m["metrics"]["events_written"]
    ok &= w == 20000 + 2 * m["metrics"]["ring_waits"] and m["lost_events"] == 0
for m in ret:
    ok &= m["retention"]["retired_events"] == m["metrics"]["events_written"]
    ok &= not os.path.exists("%s/pid_%d" % (sess, m["pid"]))
    ok &= m["state"] == "complete"
print("processes", len(ps), "retired", len(ret))
# Most are retired: only the newest files fit in the budget.
sys.exit(0 if ok and len(ret) >= 200 else 1)
PY
	agree "$S"
	grep -q "processes retired\|process retired" "$WORK/status" || fail "ada status does not say the retired processes"
	read -r _ held _ retired <<<"$(sed -n 2p "$WORK/audit")"
	echo "audit: at most $held processes held at once, $retired retired"
	# A process the budget empties leaves the recorder's memory at once:
	# the recorder holds those whose files fit and a few finishing, never
	# the 300 of them.
	[ "${held:-300}" -le 100 ] || fail "the recorder held $held processes at once, expected at most 100 of 300"
	"$ADA" ls "$SMALL/out" >"$WORK/ls" 2>&1 || { cat "$WORK/ls" >&2; fail "ada ls failed"; }
	grep -q " $((300 * 20000))\| 6[0-9]\{6\} " "$WORK/ls" || { cat "$WORK/ls" >&2; fail "ada ls does not count every event"; }
	"$ADA" report "$S" >"$WORK/report" 2>"$WORK/rerr" || { cat "$WORK/rerr" >&2; fail "ada report failed"; }
	grep -q "every event of [0-9]* more processes, retired" "$WORK/rerr" || fail "ada report does not say the retired processes"
	validate "$S"
	grep -q "processes retired" "$WORK/validate" || fail "ada validate does not count the retired processes"
	check_shm_clean "$S"
	;;
forks_budget)
	# Every child's index file is final when it exits and about a seventh
	# of the budget: only deleting finished processes' files keeps the
	# session within it (the recorder of before deleted only rotated
	# generations of live threads and ended at several times the budget).
	small_fs 256m
	timeout 120 "$ADA" record --no-agent --detail never --max-threads 1 --ring-mb 1 \
		--max-disk-mb 2 --out "$SMALL/out" -- "$FORK" 24 100000 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	S=$(session_of)
	du=$(du -s -B1 "$S" | cut -f1)
	[ "$du" -le $((2 << 20)) ] || fail "the session takes $du bytes, over its budget of 2 MiB"
	# Two ways hold the budget, and timing picks between them: deleting a
	# finished child's final file, or ending a live child's file early to
	# delete it (the files being written filled the budget).
	grep -q "deleted the [0-9]* oldest index generations ([0-9]* events, [0-9]* bytes), \([1-9][0-9]* of them the last file of a finished thread\|.*[1-9][0-9]* of them a live thread's file ended early\)" "$WORK/err" ||
		fail "the summary does not say which finished or ended-early files were deleted"
	# Threads deleted whole: the summary's finished files, when it says any.
	finished=$(grep -o "[0-9]* of them the last file of a finished thread" "$WORK/err" | cut -d' ' -f1)
	python3 - "$S" "${finished:-0}" <<'PY' || fail "the manifests do not account for every event, or list deleted files"
import glob, json, os, sys
whole = kept_total = 0
ok = True
# The processes the budget emptied and retired: every event deleted.
lines = [json.loads(l) for l in open(sys.argv[1] + "/retired.jsonl")] if os.path.exists(sys.argv[1] + "/retired.jsonl") else []
for m in lines:
    w = m["metrics"]["events_written"]
    if w != 100000 + 2 * m["metrics"]["ring_waits"] or m["retention"]["retired_events"] != w:
        print("retired", m["pid"], "written", w, "retired", m["retention"]["retired_events"])
        ok = False
    if os.path.exists("%s/pid_%d" % (sys.argv[1], m["pid"])):
        print("retired", m["pid"], "still has its directory")
        ok = False
    whole += m["retention"]["retired_threads"]
if len(glob.glob(sys.argv[1] + "/pid_*/manifest.json")) + len(lines) != 24:
    print("processes", len(glob.glob(sys.argv[1] + "/pid_*/manifest.json")), "+", len(lines), "retired, expected 24")
    ok = False
for f in glob.glob(sys.argv[1] + "/pid_*/manifest.json"):
    d = os.path.dirname(f)
    m = json.load(open(f))
    kept = sum(x["events"] for t in m["threads"] for x in t["files"])
    gone = sum(t["retired_events"] for t in m["threads"])
    # the child's events and ada's two markers per wait for ring space
    if m["metrics"]["events_written"] != 100000 + 2 * m["metrics"]["ring_waits"]:
        ok = False
    if kept + gone != m["metrics"]["events_written"] or gone != m["retention"]["retired_events"]:
        print(f, "kept", kept, "retired", gone, "written", m["metrics"]["events_written"])
        ok = False
    for t in m["threads"]:
        on_disk = os.path.isdir("%s/thread_%d" % (d, t["thread"]))
        if t["retired_whole"] == on_disk or any(not os.path.exists(d + "/" + x["path"]) for x in t["files"]):
            print(f, "thread", t["thread"], "retired_whole", t["retired_whole"], "dir", on_disk)
            ok = False
        if t["retired_events"] and not t["retired_until_ns"]:
            ok = False
    whole += m["retention"]["retired_threads"]
    kept_total += kept
print("threads deleted whole", whole, "events kept", kept_total)
# Timing picks the way (above): when the budget deleted only live threads'
# files ended early, no thread is deleted whole, and the summary says so.
finished = int(sys.argv[2])
ok &= (whole > 0) == (finished > 0)
sys.exit(0 if ok and kept_total > 0 else 1)
PY
	"$ADA" report "$S" >"$WORK/report" 2>"$WORK/rerr" || { cat "$WORK/rerr" >&2; fail "ada report failed"; }
	grep -q "the disk budget deleted \(the oldest\|every event\)" "$WORK/rerr" || fail "ada report does not say what the budget deleted"
	"$ADA" dump "$S" >/dev/null 2>"$WORK/derr" || { cat "$WORK/derr" >&2; fail "ada dump failed"; }
	grep -q "the disk budget deleted \(the oldest\|every event\)" "$WORK/derr" || fail "ada dump does not say what the budget deleted"
	validate "$S"
	check_shm_clean "$S"
	;;
forks_budget_agent)
	small_fs 256m
	timeout 120 "$ADA" record --max-disk-mb 2 --out "$SMALL/out" -- \
		bash -c "for i in \$(seq 20); do '$FIB' 22 >/dev/null; done" 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	S=$(session_of)
	du=$(du -s -B1 "$S" | cut -f1)
	[ "$du" -le $((2 << 20)) ] || fail "the session takes $du bytes, over its budget of 2 MiB"
	n=$(python3 -c "$PY_PROCS
import sys; print(sum(m['retention']['symbols_deleted'] for m in procs(sys.argv[1])))" "$S")
	[ "$n" -gt 0 ] || fail "no process's symbol files were deleted"
	for d in "$S"/pid_*; do
		if ls -d "$d"/thread_* >/dev/null 2>&1; then
			ls "$d"/module_*.syms >/dev/null 2>&1 || fail "$d has thread files but no symbol files"
			if [ -e "$d/modules" ]; then fail "$d has a modules/ (the module files are in pid_N/)"; fi
		fi
	done
	# The 20 exec'd fibs share their modules' bodies (docs/format.md, "Shared
	# symbol bodies"): the budget deleted some processes' symbol files, and
	# the bodies the others link are still there (validate below warns of a
	# missing one); the store keeps no body no process links.
	python3 - "$S" <<'PY' || fail "shared symbol bodies: see above"
import os, sys
s = sys.argv[1]
inodes, files = set(), 0
for d in os.listdir(s):
    m = os.path.join(s, d)
    if d.startswith("pid_") and os.path.isdir(m):
        for n in os.listdir(m):
            if n.startswith("module_") and n.endswith(".body"):
                inodes.add(os.lstat(os.path.join(m, n)).st_ino)
                files += 1
store = os.path.join(s, "symbodies")
orphans = [n for n in os.listdir(store) if os.lstat(os.path.join(store, n)).st_nlink < 2]
print("bodies: %d files, %d distinct; orphans in symbodies/: %r" % (files, len(inodes), orphans))
sys.exit(0 if files > len(inodes) and not orphans else 1)
PY
	validate "$S"
	grep -q ": 0 errors, 0 warnings: valid" "$WORK/validate" || { cat "$WORK/validate" >&2; fail "ada validate is not clean"; }
	"$ADA" report "$S" >"$WORK/report" 2>"$WORK/rerr" || { cat "$WORK/rerr" >&2; fail "ada report failed"; }
	grep -q "bw_fib" "$WORK/report" || fail "ada report names no function of what is left"
	check_shm_clean "$S"
	;;
forks_pool)
	# Child i emits 5000 - (i - 1) * 10 events: what its predecessor left
	# past its head in the recycled ring must never be read.
	timeout 120 "$ADA" record --no-agent --detail never --out "$WORK/out" -- "$FORK" 20 5000 pool 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	S=$(session_of)
	python3 - "$S" <<'PY' || fail "the children's arenas were not recycled, or their counts are not exact"
import glob, json, sys
ms = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/pid_*/manifest.json")]
got = sorted(m["metrics"]["events_written"] for m in ms)
want = sorted(5000 - i * 10 for i in range(20))
assert got == want, (got, want)
assert all(sum(m["drops"][l][k] for l in m["drops"] for k in m["drops"][l]) == 0 for m in ms)
assert sum(m["ring"]["recycled"] for m in ms) == 19, [m["ring"]["recycled"] for m in ms]
assert max(m["shm"]["pooled_arenas"] for m in ms) >= 19
# each child said in its arena that it exited 0 (as the agent does): the
# recorder read it there instead of waiting a second for a reaper's word
assert all(m["exit"]["status"] == 0 for m in ms), [m["exit"] for m in ms]
PY
	grep -q "recorded 98100 events .* from 20 processes" "$WORK/err" || fail "not 98100 events from 20 processes"
	"$ADA" validate "$S" >"$WORK/validate" 2>&1 || { cat "$WORK/validate" >&2; fail "ada validate failed"; }
	check_shm_clean "$S"
	;;
forks_agent)
	timeout 120 "$ADA" record --out "$WORK/out" -- bash -c 'for i in $(seq 100); do (:); done' 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	S=$(session_of)
	n=$(ls -d "$S"/pid_* | wc -l)
	[ "$n" -eq 102 ] || fail "$n process directories, expected 102 (the loop's 100, bash, seq)"
	# Every process but the first either took a file from the arena pool
	# (a finished one's, or one the recorder made once bash forked) or
	# made its own, counted as a miss: the counts add up, and the hits
	# are the processes that say ring.recycled.
	python3 - "$S" <<'PY' || fail "the arena pool's hits and misses do not add up"
import glob, json, sys
ms = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/pid_*/manifest.json")]
last = max((m["shm"] for m in ms), key=lambda s: s["pool_hits"] + s["pool_misses"])
assert last["pool_hits"] + last["pool_misses"] == 101, last
assert last["pool_hits"] == sum(m["ring"]["recycled"] for m in ms), last
assert last["pool_make_failed"] == 0, last
PY
	check_shm_clean "$S"
	;;
shm_ceiling)
	# Arenas of 4 threads x 1 MiB (no detail ring): a 5 MiB ceiling admits the parent's
	# arena only; each of the 4 children (run one at a time while the
	# parent holds its arena) waits 1 s for room, is refused and runs
	# untraced.
	timeout 120 "$ADA" record --no-agent --detail never --max-threads 4 --ring-mb 1 --max-shm-mb 5 --out "$WORK/out" -- "$FORK" 4 10 parent 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	S=$(session_of)
	n=$(ls -d "$S"/pid_* | wc -l)
	[ "$n" -eq 1 ] || fail "$n process directories, expected the parent's only"
	[ "$(grep -c 'reached its shared-memory ceiling of 5.0 MiB' "$WORK/err")" -eq 1 ] || fail "no single notice of the ceiling"
	grep -q '^ada: 4 processes ran untraced: the shared-memory ceiling of 5.0 MiB (--max-shm-mb) was reached (peak [0-9.]* MiB): an arena needs [0-9.]* MiB even with the smallest detail rings, [0-9.]* MiB was free; raise --max-shm-mb, or lower --ring-mb or --max-threads$' "$WORK/err" || fail "the end does not count 4 untraced processes and why"
	M=$(ls "$S"/pid_*/manifest.json)
	[ "$(json "$M" "m['shm']['untraced_processes']")" -eq 4 ] || fail "the manifest does not count 4 untraced processes"
	json "$M" "m['shm']['untraced_why']" | grep -q '^4 processes ran untraced: the shared-memory ceiling of 5.0 MiB' || fail "the manifest does not say why 4 processes ran untraced"
	[ "$(json "$M" "m['shm']['ceiling_bytes']")" -eq $((5 * 1048576)) ] || fail "the manifest's ceiling is not 5 MiB"
	"$ADA" status "$S" >"$WORK/status" 2>&1 || fail "ada status failed"
	grep -q "4 processes untraced" "$WORK/status" || { cat "$WORK/status" >&2; fail "ada status does not count 4 untraced processes"; }
	grep -q "^  shared memory: 4 processes ran untraced: " "$WORK/status" || { cat "$WORK/status" >&2; fail "ada status does not say why"; }
	check_shm_clean "$S"
	;;
shm_small)
	# 4 slots x (1 MiB index + 128 MiB detail): 516 MiB. The parent holds
	# its arena while its 4 children run one after the other: a child's
	# whole arena (516 MiB more) is over the ceiling of 1 GiB (half of the
	# 2 GiB free), one with 64 MiB detail rings (260 MiB) is not; a later
	# child may find the arena of the one before still there (the drain
	# removes it after the child ended) and get smaller rings still.
	# The program (a shell, untraced: --no-agent) waits on a fifo once
	# they are done, so that the live `ada status` is asked meanwhile.
	mkfifo "$WORK/go"
	timeout 30 "$ADA" record --no-agent --detail-mb 128 --max-threads 4 --ring-mb 1 --out "$WORK/out" -- \
		sh -c '"$0" 4 10 parent; echo $$ >"$1.pid"; read x <"$1"' "$FORK" "$WORK/go" 2>"$WORK/err" &
	rec=$!
	for _ in $(seq 300); do [ -s "$WORK/go.pid" ] && break; sleep 0.1; done
	[ -s "$WORK/go.pid" ] || { kill $rec; fail "the program did not get through its children"; }
	timeout 10 "$ADA" status "$(cat "$WORK/go.pid")" >"$WORK/live" 2>&1
	timeout 10 "$ADA" status "$(cat "$WORK/go.pid")" --json >"$WORK/live.json" 2>&1
	echo go >"$WORK/go"
	wait $rec
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	grep -q "^  shared memory: 4 processes were recorded with smaller detail rings" "$WORK/live" ||
		{ cat "$WORK/live" >&2; fail "the live ada status does not say why 4 processes got smaller detail rings"; }
	python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["shm"]
assert s["reduced_processes"] == 4 and s["untraced_processes"] == 0 and s["untraced_why"] is None, s
assert s["reduced_why"].startswith("4 processes were recorded with smaller detail rings"), s' "$WORK/live.json" ||
		fail "the live ada status --json does not count 4 processes with smaller detail rings"
	S=$(session_of)
	grep -q "recorded 50 events .* from 5 processes" "$WORK/err" || fail "not 50 events from 5 processes"
	grep -q "ran untraced" "$WORK/err" && fail "processes ran untraced"
	grep -q '^ada: 4 processes were recorded with smaller detail rings (down to [0-9]* KiB a thread): the whole arena needs 51[67].[0-9] MiB, [0-9.]* MiB was free under the shared-memory ceiling of 1024.0 MiB (half of the free space of /dev/shm); .* give /dev/shm more room or lower --detail-mb$' "$WORK/err" ||
		fail "the summary does not count 4 processes with smaller detail rings and why"
	python3 - "$S" <<'PY' || fail "the manifests do not count the children's smaller detail rings"
import glob, json, sys
ms = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/pid_*/manifest.json")]
assert len(ms) == 5, len(ms)
# each process holds exactly its own 10 events
assert all(m["metrics"]["events_written"] == 10 for m in ms), [m["metrics"] for m in ms]
cut = [m for m in ms if m["ring"]["detail_reduced"]]
assert len(cut) == 4 and all(4096 <= m["ring"]["detail_bytes"] <= 64 << 20 for m in cut), [m["ring"] for m in ms]
whole = [m for m in ms if not m["ring"]["detail_reduced"]]
assert len(whole) == 1 and whole[0]["ring"]["detail_bytes"] == 128 << 20, [m["ring"] for m in ms]
last = max(ms, key=lambda m: m["shm"]["reduced_processes"])["shm"]
assert last["reduced_processes"] == 4 and last["untraced_processes"] == 0, last
assert last["reduced_detail_bytes_min"] == min(m["ring"]["detail_bytes"] for m in cut), last
assert last["reduced_why"].startswith("4 processes were recorded with smaller detail rings"), last
assert last["untraced_why"] is None, last
PY
	"$ADA" status "$S" >"$WORK/status" 2>&1 || fail "ada status failed"
	grep -q "^  shared memory: 4 processes were recorded with smaller detail rings" "$WORK/status" ||
		{ cat "$WORK/status" >&2; fail "ada status does not say why 4 processes got smaller detail rings"; }
	grep -q "0 processes untraced and 4 with smaller detail rings" "$WORK/status" ||
		{ cat "$WORK/status" >&2; fail "ada status does not count them"; }
	check_shm_clean "$S"
	;;
budget)
	# 64 MiB free: the default budget is 10 % of it, 6.4 MiB; the program
	# emits 50 M events (1.6 GB of index files) without --max-disk-mb.
	small_fs 64m
	timeout 300 "$ADA" record --no-agent --out "$SMALL/out" -- "$PROD" exact 12500000 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
	S=$(session_of)
	[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
	M=$(ls "$S"/pid_*/manifest.json)
	budget=$(json "$M" "m['retention']['budget_bytes']")
	[ -n "$budget" ] || fail "the manifest has no max_disk_bytes"
	[ "$budget" -gt $((6 * 1048576)) ] && [ "$budget" -le $((6710886)) ] ||
		fail "default budget $budget bytes, expected 10 % of the 64 MiB free"
	[ "$(json "$M" "m['retention']['budget']")" = default ] || fail "the manifest does not say the budget is the default"
	used=$(du -sB1 "$S" | cut -f1)
	[ "$used" -le "$budget" ] || fail "the session takes $used bytes, over its budget of $budget"
	# stderr: told once when it started deleting, and how much at the end.
	[ "$(grep -c 'reached its disk budget' "$WORK/err")" -eq 1 ] || fail "no single notice that the budget deletes data"
	line=$(grep 'deleted the .* oldest index generation' "$WORK/err") || fail "no end-of-run count of what the budget deleted"
	gens=$(echo "$line" | sed -n 's/.*deleted the \([0-9]*\) oldest.*/\1/p')
	evs=$(echo "$line" | sed -n 's/.*(\([0-9]*\) events, \([0-9]*\) bytes).*/\1/p')
	disk=$(sed -n 's/.*disk \([0-9]*\) bytes.*/\1/p' "$WORK/err")
	[ "$disk" = "$used" ] || fail "the summary says disk $disk bytes, the session takes $used"
	mg=$(json "$M" "m['retention']['retired_generations']")
	me=$(json "$M" "sum(t['retired_events'] for t in m['threads'])")
	[ "$mg" = "$gens" ] || fail "manifest retired_generations $mg, stderr $gens"
	[ "$me" -eq "$evs" ] || fail "manifest retired_events $me, stderr $evs"
	[ "$evs" -gt 40000000 ] || fail "only $evs events retired of 50 M in a 6.4 MiB budget"
	# What is kept is each thread's most recent events, in order.
	check_atf "$ADA" "$CHECK" "$S" "$WORK/atf" tail 12500000 || fail "check failed"
	validate "$S"
	;;
*)
	fail "unknown mode"
	;;
esac
exit 0
