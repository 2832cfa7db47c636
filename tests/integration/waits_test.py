#!/usr/bin/env python3
"""ada's own waits for ring space are in the trace and out of the program's
durations (issue 32 item 4; docs/format.md, "Wait markers").

  waits_test.py --ada ADA --work DIR --name NAME --calls N -- T_WAITS

Records tests/targets/t_waits (N calls of tick(), each bracketed by the
program's own CLOCK_BOOTTIME reads) with a 64-event index ring, so its
thread waits for the drain over and over, and with a latency trigger on
tick below a wait's usual length. No check depends on how fast anything
ran:

- exact: tick has N frames; every wait marker pair is a BEGIN then its END;
  for every tick frame `ada dump`'s duration_ns + ada_wait_ns is its CALL
  to RETURN, and ada_wait_ns the sum of the marker pairs between them;
  `ada report --json` gives tick the sum of those duration_ns and the
  totals count every marker pair;
- the program's own timing: a tick frame's CALL to RETURN, and so its
  waits, lie inside the program's bracket of that call (compared as
  differences of the same clock, with the clock conversion's tolerance);
- triggers: every window the latency trigger opened is a tick frame whose
  wait-free duration is over the threshold, with that duration; a frame
  that was slow only by ada's wait opened none. At least one tick frame
  must have held a wait, and one must have been over the threshold only
  by its wait, or the run proved nothing: then the test skips (77).

- agent.json's hot_functions: some when the thread waited, none in a
  second recording of 50 calls whose rings it does not fill (no wait
  marker in its trace).

Exit 0 = pass, 1 = fail (every failed check printed), 77 = skip. A failing
run keeps its work directory and prints its path."""
import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

SKIP = 77
TIMEOUT = 240
THRESHOLD_NS = 100000  # the latency trigger: tick>100us (tick's own time: ns)


class Checks:
    def __init__(self):
        self.failures = []

    def check(self, cond, msg):
        if not cond:
            self.failures.append(msg)
            if len(self.failures) <= 20:
                print("FAIL:", msg, flush=True)
        return cond


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout,
                                                   p.stderr))
    return p.stdout


def tick_frames(events):
    """The tick frames of one thread's events in file order: (call, ret,
    waits inside as a list of (begin_ts, end_ts)); and every marker pair."""
    frames, pairs, stack, begin = [], [], [], None
    for ev in events:
        kind = ev.get("kind")
        if kind == "ada_wait_begin":
            begin = ev
            continue
        if kind == "ada_wait_end":
            if begin is None:
                raise AssertionError("index_seq %s: a wait END without its BEGIN" %
                                     ev["index_seq"])
            pair = (begin["ts"], ev["ts"], ev.get("wait_ns"))
            pairs.append(pair)
            for f in stack:
                f["waits"].append(pair)
            begin = None
            continue
        if begin is not None:
            raise AssertionError("index_seq %s: an event inside a wait" % ev["index_seq"])
        if kind == "call":
            stack.append({"call": ev, "waits": []})
        elif kind in ("return", "exception") and stack:
            f = stack.pop()
            if f["call"].get("function") == "tick":
                f["ret"] = ev
                frames.append(f)
    return frames, pairs


def check_exact(c, frames, pairs, report, calls):
    c.check(len(frames) == calls, "tick has %d frames, the program called it %d times" %
            (len(frames), calls))
    for b, e, w in pairs:
        c.check(w == e - b, "a wait from %d to %d says wait_ns %r" % (b, e, w))
    total = 0
    for f in frames:
        call, ret = f["call"], f["ret"]
        raw = ret["ts"] - call["ts"]
        waited = sum(e - b for b, e, _ in f["waits"])
        dur, aw = ret.get("duration_ns"), ret.get("ada_wait_ns", 0)
        c.check(aw == waited, "tick at index_seq %d: ada_wait_ns %r, its markers say %d" %
                (ret["index_seq"], aw, waited))
        c.check(dur == max(raw - waited, 0),
                "tick at index_seq %d: duration_ns %r, CALL to RETURN %d less waits %d" %
                (ret["index_seq"], dur, raw, waited))
        total += dur or 0
    p = report["processes"][0]
    fn = [x for x in p["functions"] if x["function"] == "tick"]
    c.check(len(fn) == 1 and fn[0]["calls"] == calls and fn[0]["total_ns"] == total,
            "report: tick %r, want %d calls and total_ns %d" % (fn, calls, total))
    t = p["totals"]
    c.check(t.get("ada_waits") == len(pairs) and
            t.get("ada_wait_ns") == sum(e - b for b, e, _ in pairs),
            "report totals: ada_waits %r, ada_wait_ns %r; the markers: %d, %d" %
            (t.get("ada_waits"), t.get("ada_wait_ns"), len(pairs),
             sum(e - b for b, e, _ in pairs)))


def check_program_time(c, frames, brackets):
    """The frame and its waits are inside the program's bracket of the call.
    Differences of one clock: only the conversion's rate can differ (the
    drain corrects its slope by a fraction of the error a second)."""
    for i, f in enumerate(frames[:len(brackets)]):
        t0, t1 = brackets[i]
        raw = f["ret"]["ts"] - f["call"]["ts"]
        tol = 2000 + (t1 - t0) // 20
        c.check(raw <= t1 - t0 + tol,
                "call %d of tick: CALL to RETURN %d ns (waits %d ns), the program's own "
                "bracket %d ns" % (i, raw, f["ret"].get("ada_wait_ns", 0), t1 - t0))


def check_windows(c, frames, windows):
    ends = {f["ret"]["ts"]: f for f in frames}
    for w in windows:
        f = ends.get(w.get("fire_ns"))
        if not c.check(f is not None, "window %s fired at %s: no tick RETURN there" %
                       (w.get("id"), w.get("fire_ns"))):
            continue
        dur = f["ret"]["duration_ns"]
        c.check(w.get("duration_ns") == dur and dur > THRESHOLD_NS,
                "window %s: duration_ns %r, the frame's wait-free duration %d (raw %d), "
                "threshold %d" % (w.get("id"), w.get("duration_ns"), dur,
                                  f["ret"]["ts"] - f["call"]["ts"], THRESHOLD_NS))


def hot_lists(session):
    """Every process's agent.json hot_functions (names), by pid directory."""
    out = {}
    for path in glob.glob(os.path.join(session, "pid_*", "agent.json")):
        with open(path) as fh:
            out[path] = [e.get("name") for e in json.load(fh).get("hot_functions", [])]
    return out


def check_hot_functions(c, session, waited):
    """agent.json's hot_functions tallies the rings of threads that waited
    for ring space (what the summary names when the recording waited):
    some when t_waits waited (its 64-event ring holds the exit's last
    calls, not tick's), none when nothing waited."""
    lists = hot_lists(session)
    c.check(lists, "%s: no agent.json" % session)
    for path, names in lists.items():
        if waited:
            c.check(names, "%s: no hot_functions, though its thread waited for ring "
                    "space" % path)
        else:
            c.check(names == [], "%s: hot_functions %s, though no thread waited for ring "
                    "space" % (path, names))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--peak-rate", default="1000")  # with --burst-ms 1: 64-event rings
    ap.add_argument("prog", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    wd = tempfile.mkdtemp(prefix=a.name + ".", dir=a.work)
    c = Checks()
    skip = None
    try:
        out = os.path.join(wd, "brackets.txt")
        run([a.ada, "record", "--out", os.path.join(wd, "traces"), "--peak-rate", a.peak_rate,
             "--burst-ms", "1", "--max-disk-mb", "0", "--trigger",
             "latency=function:tick>%dus" % (THRESHOLD_NS // 1000), "--"] + a.prog +
            [str(a.calls), out])
        session = glob.glob(os.path.join(wd, "traces", "session_*"))[0]
        with open(out, "rb") as fh:
            raw = fh.read()
        v = struct.unpack("=%dQ" % (len(raw) // 8), raw)
        brackets = list(zip(v[0::2], v[1::2]))
        events = [json.loads(l) for l in run([a.ada, "dump", "--format", "jsonl", session])
                  .splitlines() if l.strip()]
        frames, pairs = tick_frames(events)
        report = json.loads(run([a.ada, "report", "--json", session]))
        windows = json.loads(run([a.ada, "windows", "--json", session])).get("windows", [])
        check_exact(c, frames, pairs, report, a.calls)
        check_program_time(c, frames, brackets)
        check_windows(c, frames, windows)
        check_hot_functions(c, session, bool(pairs))
        # The same program with rings it does not fill (and no trigger).
        out2 = os.path.join(wd, "brackets2.txt")
        run([a.ada, "record", "--out", os.path.join(wd, "traces2"), "--"] + a.prog +
            ["50", out2])
        session2 = glob.glob(os.path.join(wd, "traces2", "session_*"))[0]
        events2 = [json.loads(l) for l in run([a.ada, "dump", "--format", "jsonl", session2])
                   .splitlines() if l.strip()]
        check_hot_functions(c, session2, any(e.get("kind") == "ada_wait_begin"
                                             for e in events2))
        held = [f for f in frames if f["waits"]]
        only_wait = [f for f in held if f["ret"]["ts"] - f["call"]["ts"] > THRESHOLD_NS >=
                     f["ret"]["duration_ns"]]
        print("%d waits, %d tick frames held one, %d over %d ns only by it, %d windows" %
              (len(pairs), len(held), len(only_wait), THRESHOLD_NS, len(windows)))
        if not held or not only_wait:
            skip = "no tick frame was slow only by ada's wait: the run proved nothing"
    except (RuntimeError, AssertionError, IndexError, ValueError) as e:
        c.check(False, str(e))
    if c.failures:
        print("%d failures; work directory kept: %s" % (len(c.failures), wd))
        return 1
    shutil.rmtree(wd, ignore_errors=True)
    if skip:
        print("SKIP:", skip)
        return SKIP
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
