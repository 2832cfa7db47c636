#!/usr/bin/env python3
"""Whether every trigger window says what it got (issue 32 item 5).

  window_accounting.py ADA SESSION_DIR

For each window of each process in the session (its manifest's
flight_recorder.windows) it counts the index events, CALL and RETURN, whose
time lies in the window's [from_ns, to_ns] (`ada dump PID_DIR --format
jsonl`), the ones among them linked to a detail record, and takes the
window's window_lost, its window_missed.passed_over and its threads' unlinked. Every record a window wanted
is one of those, so index events = linked + window_lost + unlinked, exactly
unless a thread's window_lost is an estimate (window_lost_estimated: shared
out by time across the window's edge). A window short of that without an
estimate lost records silently: it is flagged, and the exit status is 1.

The process's events of every thread in the window's range are what it
wanted (windows are session-wide); overlapping windows (fires merge them,
so there should be none) would count the same records twice. Repro of the silent loss the drain's late windows
had (a window created after another window's look had counted the gap its
pre-roll reached over):
  ada record --out S --pre-roll-sec 0.01 --post-roll-sec 0.01 \
      --trigger-holdoff-ms 0 --trigger symbol=mark_point -- \
      BUILD/tests/targets/t_trigrate_O2 1 30 2000
  window_accounting.py BUILD/ada S
"""
import bisect
import glob
import json
import os
import subprocess
import sys


def index_events(ada, pid_dir):
    """(ts, linked) of every CALL and RETURN of the process, by time."""
    out = subprocess.run([ada, "dump", pid_dir, "--format", "jsonl"],
                         capture_output=True, check=True).stdout
    evs = []
    for line in out.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("kind") in ("call", "return"):
            evs.append((e["ts"], isinstance(e.get("detail"), dict)))
    evs.sort()
    return evs


def check_process(ada, pid_dir):
    """Prints one line per window; returns the windows short unaccounted."""
    with open(os.path.join(pid_dir, "manifest.json")) as f:
        m = json.load(f)
    wins = m.get("flight_recorder", {}).get("windows", [])
    if not wins:
        return 0
    evs = index_events(ada, pid_dir)
    ts = [e[0] for e in evs]
    bad = 0
    for w in wins:
        lo = bisect.bisect_left(ts, w["from_ns"])
        hi = bisect.bisect_right(ts, w["to_ns"])
        linked = sum(1 for e in evs[lo:hi] if e[1])
        lost = w.get("window_lost", 0)
        threads = w.get("threads", [])
        unlinked = sum(t.get("unlinked", 0) for t in threads)
        # passed over before the window existed: their events are in the
        # index file (unread_at_end's and bad_link's have none there)
        lost += (w.get("window_missed") or {}).get("passed_over", 0)
        est = any(t.get("window_lost_estimated") or t.get("window_missed_estimated")
                  for t in threads)
        short = (hi - lo) - linked - lost - unlinked
        flag = ""
        if short:
            flag = "  (estimated)" if est else "  UNACCOUNTED"
            bad += not est
        print("%s window %3d index %7d linked %7d window_lost %7d unlinked %5d short %6d%s" % (
            os.path.basename(pid_dir), w["id"], hi - lo, linked, lost, unlinked, short, flag))
    return bad


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: window_accounting.py ADA SESSION_DIR")
    ada, session = sys.argv[1], sys.argv[2]
    pids = sorted(glob.glob(os.path.join(session, "**", "pid_*", "manifest.json"),
                            recursive=True))
    if not pids:
        sys.exit("%s holds no pid_N/manifest.json: give a session directory" % session)
    bad = sum(check_process(ada, os.path.dirname(p)) for p in pids)
    print("windows short without an estimate: %d" % bad)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
