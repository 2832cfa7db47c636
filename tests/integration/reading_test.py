#!/usr/bin/env python3
"""End-to-end checks of the reading commands (issue 11) on recordings of the
test programs (tests/targets): `ada report`, `ada dump` (names, filters,
tree), `ada export --format chrome`, `ada flame`, `ada crash`, `ada ls`, a
damaged session, and the exports in speedscope inside headless Chromium.

  reading_test.py --ada ADA --work DIR --name NAME CHECK [ARGS...] -- PROG ARGS...

Each CHECK records PROG once with `ada record` (the program writes its own
call table, tests/targets/tcount.h) and holds what the reading commands say
against that table and against the events `ada dump --format jsonl` lists.
Exit 0 = pass, 1 = fail (every failed check printed), 77 = skip (only the
browser check, only when Chromium cannot start: the reason is printed).
A failing run keeps its work directory and prints its path."""
import argparse
import collections
import glob
import json
import re
import os
import shutil
import subprocess
import time
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ada_itest import parse_counts  # noqa: E402  (the tcount table format)

SKIP = 77
TIMEOUT = 120


class Fail(Exception):
    pass


class Checks:
    def __init__(self):
        self.failures = []

    def check(self, cond, msg):
        if not cond:
            self.failures.append(msg)
            print("FAIL:", msg, flush=True)
        return cond


def run(cmd, env=None, timeout=TIMEOUT, text=True):
    p = subprocess.run(cmd, capture_output=True, env=env, timeout=timeout, text=text)
    return p.returncode, p.stdout, p.stderr


def wall_offset():
    """(realtime - boottime in ns, its uncertainty): the narrowest of a few
    brackets, as the recorder takes its anchor (time.time_ns plays `date
    +%s%N`)."""
    best = None
    for _ in range(8):
        b0 = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        w = time.time_ns()
        b1 = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        if best is None or b1 - b0 < best[1] * 2:
            best = (w - (b0 + b1) // 2, (b1 - b0 + 1) // 2)
    return best


class Session:
    """One recording of PROG under ADA's record, in WORK/rec."""

    def __init__(self, ada, work, argv, record_opts=()):
        self.ada = ada
        self.argv = argv
        rec = os.path.join(work, "rec")
        shutil.rmtree(rec, ignore_errors=True)
        os.makedirs(rec)
        env = dict(os.environ, ADA_TEST_COUNTS=os.path.join(rec, "%p.counts"))
        cmd = [ada, "record", "--out", rec, *record_opts, "--", *argv]
        # CLOCK_REALTIME - CLOCK_BOOTTIME as this process sees it, beside
        # the recording: what the manifest's wall anchor must agree with
        self.wall_offsets = [wall_offset()]
        self.rc, self.out, self.err = run(cmd, env=env)
        self.wall_offsets.append(wall_offset())
        sessions = glob.glob(os.path.join(rec, "session_*"))
        if len(sessions) != 1:
            raise Fail("`%s` left %r (exit %d): %s" % (" ".join(cmd), sessions, self.rc,
                                                        self.err[-2000:]))
        self.dir = sessions[0]
        pids = sorted(glob.glob(os.path.join(self.dir, "pid_*")))
        if not pids:
            raise Fail("no pid_N directory in " + self.dir)
        self.pid_dir = pids[0]
        self.counts = [parse_counts(p) for p in sorted(glob.glob(os.path.join(rec, "*.counts")))]

    def run(self, *args, want_rc=0, checks=None):
        rc, out, err = run([self.ada, *args])
        if want_rc is not None and rc != want_rc:
            raise Fail("`ada %s` exited %d, want %d: %s" % (" ".join(args), rc, want_rc,
                                                          err[-2000:]))
        return out if checks is None else (rc, out, err)

    def events(self, *extra):
        out = self.run("dump", "--format", "jsonl", *extra, self.pid_dir)
        return [json.loads(l) for l in out.splitlines() if l.strip()]

    def report(self, *extra):
        return json.loads(self.run("report", "--json", *extra, self.pid_dir))["processes"][0]


def own_totals(counts):
    """calls per function of the program's table (the main process)."""
    return {fn: v[0] for fn, v in counts[0].totals.items()}


def pair_frames(events):
    """Independent of src/analyze: per thread, a stack by depth; yields
    (thread, function, call_ts, end_ts, kind, parent_index or None, the
    CALL event, ada's waits inside the frame in ns: the wait marker pairs
    while it was open, docs/format.md)."""
    frames = []
    by_thread = collections.defaultdict(list)
    for ev in events:
        by_thread[ev["thread"]].append(ev)
    for th, evs in by_thread.items():
        stack = []
        begin = None
        for ev in evs:
            d = ev["depth"]
            if ev["kind"] == "ada_wait_begin":
                begin = ev["ts"]
            elif ev["kind"] == "ada_wait_end" and begin is not None:
                for i, _ in stack:
                    frames[i][7] += ev["ts"] - begin
                begin = None
            elif ev["kind"] == "call":
                while stack and stack[-1][1] >= d:
                    stack.pop()
                frames.append([th, ev["function"], ev["ts"], None, None,
                               stack[-1][0] if stack else None, ev, 0])
                stack.append((len(frames) - 1, d))
            elif ev["kind"] in ("return", "exception"):
                while stack and stack[-1][1] > d:
                    stack.pop()
                if stack and stack[-1][1] == d:
                    f = frames[stack.pop()[0]]
                    f[3], f[4] = ev["ts"], ev["kind"]
    return frames


# ---------------------------------------------------------------- checks

def check_report(s, c):
    """calls equal the program's own counts (all threads, and per thread);
    self times add up to the roots' total, which the dump's events give."""
    want = own_totals(s.counts)
    rep = s.report()
    got = {f["function"]: f for f in rep["functions"]}
    for fn, calls in want.items():
        n = got[fn]["calls"] if fn in got else 0
        c.check(n == calls, f"report: {fn} called {n} times, the program counted {calls}")
    tot = rep["totals"]
    self_sum = sum(f["self_ns"] for f in rep["functions"])
    c.check(self_sum == tot["roots_total_ns"] + tot["under_open_ns"],
            f"report: self times sum to {self_sum}, roots {tot['roots_total_ns']} + "
            f"under open frames {tot['under_open_ns']}")
    frames = pair_frames(s.events())
    roots = sum(f[3] - f[2] - f[7] for f in frames if f[3] is not None and f[5] is None)
    c.check(roots == tot["roots_total_ns"],
            f"report: roots total {tot['roots_total_ns']}, the dump's events give {roots}")
    c.check(tot["calls"] == len(frames), f"report: {tot['calls']} calls, dump {len(frames)}")
    for f in rep["functions"]:
        if f["min_ns"] is not None:
            c.check(f["min_ns"] <= f["p50_ns"] <= f["p99_ns"] <= f["max_ns"],
                    f"report: {f['function']} quantiles out of order: {f}")
    # Per thread: each thread's calls equal that thread's row of the table.
    per = s.report("--threads")
    by_tid = collections.defaultdict(dict)
    for f in per["functions"]:
        by_tid[f["tid"]][f["function"]] = f["calls"]
    for (label, tid), fns in s.counts[0].threads.items():
        for fn, v in fns.items():
            n = by_tid.get(tid, {}).get(fn, 0)
            c.check(n == v[0], f"report --threads: {label} (tid {tid}) {fn}: {n}, want {v[0]}")
    c.check("no process died of a signal" in s.run("crash", s.dir),
            "crash: a session that exited normally is not said to be one")
    rows = [json.loads(l) for l in s.run("ls", "--json", os.path.dirname(s.dir)).splitlines()]
    with open(os.path.join(s.pid_dir, "manifest.json")) as f:
        m = json.load(f)
    c.check(len(rows) == 1 and rows[0]["session"] == os.path.basename(s.dir) and
            rows[0]["events"] == m["metrics"]["events_written"] == tot["events"] and
            rows[0]["command"] == os.path.basename(m["program"][0]) and
            rows[0]["end"] == "exit 0" and not rows[0]["abnormal"], f"ls: {rows}")
    dump = s.run("dump", s.pid_dir)
    for fn, n in want.items():
        c.check(not n or f"-> {fn} (" in dump, f"dump: {fn} not named")
    text = s.run("report", "--sort", "calls", s.pid_dir)
    c.check(any(l.split()[-1:] == [max(want, key=want.get)] for l in text.splitlines()[:4]),
            "report --sort calls: the most called function is not first:\n" + text[:800])


def check_names(s, c):
    """C++ names demangled everywhere a person reads them; mangled kept in
    jsonl; --demangle simple and no."""
    evs = s.events()
    cxx = [e for e in evs if (e.get("mangled") or "").startswith("_ZN5Guard")]
    if not c.check(cxx, "dump: no event of Guard's constructor/destructor (mangled _ZN5Guard...)"):
        return
    c.check(all(e["function"] in ("Guard::Guard(int, bool)", "Guard::~Guard()") for e in cxx),
            "dump jsonl: Guard not demangled: %r" % sorted({e["function"] for e in cxx}))
    text = s.run("dump", s.pid_dir)
    c.check("-> Guard::~Guard()" in text and "_ZN5Guard" not in text, "dump text: not demangled")
    simple = s.run("dump", "--demangle", "simple", s.pid_dir)
    c.check("-> Guard::~Guard (" in simple, "dump --demangle simple: no 'Guard::~Guard'")
    raw = s.run("dump", "--demangle", "no", s.pid_dir)
    c.check("-> _ZN5GuardD" in raw, "dump --demangle no: mangled names not kept")
    rep = s.report()
    names = {f["function"] for f in rep["functions"]}
    c.check("Guard::~Guard()" in names, "report: Guard::~Guard() missing")
    dtor = sum(f["calls"] for f in rep["functions"] if f["function"] == "Guard::~Guard()")
    for args in (("Guard::~Guard()",), ("--demangle", "simple", "Guard::~Guard"),
                 ("--demangle", "no", "_ZN5GuardD*")):
        g = json.loads(s.run("graph", "--json", *args[:-1], s.pid_dir, args[-1]))["processes"]
        c.check(len(g) == 1 and g[0]["calls"] == dtor,
                f"graph {' '.join(args)}: {g[0]['calls'] if g else 'no graph'} calls, "
                f"report says {dtor}")
    for fn, calls in own_totals(s.counts).items():
        c.check(not calls or fn in names, f"report: {fn} missing")


def check_crash(s, c, args=False):
    """The faulting thread's stack, innermost first, as the program counted
    its frames (TC_LOST: the frames that never ended); arguments where the
    crash trigger's detail window holds them."""
    doc = json.loads(s.run("crash", "--json", s.dir))
    procs = doc["processes"]
    if not c.check(len(procs) == 1, f"crash: {len(procs)} crashed processes, want 1"):
        return
    p = procs[0]
    c.check(p["signal"] == 11 and p["signal_name"] == "SIGSEGV", f"crash: signal {p['signal']}")
    c.check(p["fault_address"] == "0x0", f"crash: fault address {p['fault_address']}")
    faulting = [t for t in p["threads"] if t["faulting"]]
    if not c.check(len(faulting) == 1 and p["threads"][0] is faulting[0],
                   "crash: the faulting thread is not the first one listed"):
        return
    frames = [f["function"] for f in faulting[0]["frames"]]
    want = ["crash_inner", "crash_outer", "main"] if not args else ["fault_here", "main"]
    c.check(frames[:len(want)] == want, f"crash: stack {frames}, want {want} first")
    if s.counts:  # t_crash counts the frames that never end (TC_LOST); t_flight does not
        lost = [fn for fn, v in s.counts[0].totals.items() if v[2]]
        c.check(sorted(lost) == sorted(want), f"crash: the program's lost frames {lost}")
    rows = [json.loads(l) for l in s.run("ls", "--json", os.path.dirname(s.dir)).splitlines()]
    c.check(len(rows) == 1 and rows[0]["end"] == "SIGSEGV" and rows[0]["abnormal"], f"ls: {rows}")
    # The fatal-signal marker in jsonl: the signal, not the raw depth flag.
    tid = faulting[0]["tid"]
    marks = [e for e in s.events() if e["kind"] == "signal"]
    c.check(len(marks) == 1 and marks[0]["tid"] == tid and marks[0]["depth"] is None and
            marks[0]["signal"] == 11 and marks[0]["signal_name"] == "SIGSEGV" and
            marks[0]["fault_addr"] == 0, f"dump jsonl: the signal marker {marks}")
    text = s.run("crash", s.dir)
    order = [text.find(f"#{i}   {fn} ") for i, fn in enumerate(want)]
    c.check(all(o >= 0 for o in order) and order == sorted(order),
            "crash text: the frames are not listed in order:\n" + text[:1500])
    if args:
        a = faulting[0]["frames"][0]["args"] or {}
        c.check((a.get("rdi"), a.get("rsi"), a.get("rdx")) == ("0x1111", "0x2222", "0x3333"),
                f"crash: fault_here's arguments {a}")
        c.check("fault_here (rdi=0x1111, rsi=0x2222, rdx=0x3333" in text,
                "crash text: no arguments for fault_here")


def thread_tids(s):
    with open(os.path.join(s.pid_dir, "manifest.json")) as f:
        m = json.load(f)
    return m["pid"], [t["tid"] for t in m["threads"]]


def check_report_exec(s, c):
    """A process that exec'd itself (t_exec_child chain N): one thread,
    N + 1 program images, not N + 1 threads."""
    pid, tids = thread_tids(s)
    n = int(s.argv[-1]) + 1
    c.check(tids == [pid] * n, f"the manifest's threads {tids}: want {n} of tid {pid}")
    rep = s.report()
    c.check((rep["threads"], rep["images"]) == (1, n),
            f"report --json: threads {rep['threads']}, images {rep['images']}; want 1, {n}")
    head = s.run("report", s.pid_dir).splitlines()[0]
    c.check(f": 1 thread, {n} program images (exec), " in head, "report text: " + head)


def check_crash_exec(s, c):
    """A shell that exec'd the crashing program: the stacks are the last
    image's; the shell's thread is named as an earlier image, not listed as
    a thread at the moment of death."""
    pid, tids = thread_tids(s)
    c.check(tids == [pid, pid], f"the manifest's threads {tids}: want the shell's and t_crash's")
    doc = json.loads(s.run("crash", "--json", s.dir))
    p = doc["processes"][0] if doc["processes"] else {}
    c.check(p.get("images") == 2 and p.get("earlier_image_threads") == [0] and
            p.get("faulting_thread") == 1 and [t["thread"] for t in p.get("threads", [])] == [1],
            f"crash --json: {json.dumps(p)[:800]}")
    frames = [f["function"] for f in p["threads"][0]["frames"]] if p.get("threads") else []
    c.check(frames[:3] == ["crash_inner", "crash_outer", "main"], f"crash: stack {frames}")
    text = s.run("crash", s.dir)
    c.check(f"faulting thread: 1 (tid {pid}), the main thread of the program it exec'd last"
            in text and "thread 0 ran the earlier one" in text and "Thread 0 " not in text,
            "crash text:\n" + text)
    rep = s.report()
    c.check((rep["threads"], rep["images"]) == (1, 2), f"report: {rep['threads']} threads")


def check_crash_args(s, c):
    check_crash(s, c, args=True)


def load_chrome(s, c):
    out = os.path.join(os.path.dirname(s.dir), "trace.json")
    s.run("export", s.dir, "--format", "chrome", "-o", out)
    with open(out) as f:
        doc = json.load(f)  # must parse
    return out, doc


def check_chrome(s, c):
    """One complete event per call, durations >= 0, one named track per
    thread, counts per function as the program counted."""
    _, doc = load_chrome(s, c)
    tev = doc["traceEvents"]
    xs = [e for e in tev if e["ph"] == "X"]
    evs = s.events()
    calls = [e for e in evs if e["kind"] == "call"]
    c.check(len(xs) == len(calls), f"chrome: {len(xs)} complete events, {len(calls)} calls")
    c.check(all(e["dur"] >= 0 for e in xs), "chrome: a negative duration")
    pid = int(os.path.basename(s.pid_dir)[4:])
    tids = {e["tid"] for e in evs}
    c.check({(e["pid"], e["tid"]) for e in xs} == {(pid, t) for t in tids},
            "chrome: tracks %r, threads %r" % (sorted({e["tid"] for e in xs}), sorted(tids)))
    named = {e["tid"] for e in tev if e["ph"] == "M" and e["name"] == "thread_name"}
    c.check(named == tids, f"chrome: thread_name metadata for {sorted(named)}, threads {tids}")
    c.check(any(e["ph"] == "M" and e["name"] == "process_name" and e["pid"] == pid for e in tev),
            "chrome: no process_name")
    per_fn = collections.Counter(e["name"] for e in xs)
    for fn, n in own_totals(s.counts).items():
        c.check(per_fn.get(fn, 0) == n, f"chrome: {per_fn.get(fn, 0)} events for {fn}, want {n}")
    # Each call's event spans its CALL to its end, on its thread.
    frames = pair_frames(evs)
    want = collections.Counter((f[6]["tid"], f[1], f[2], f[3]) for f in frames if f[3])
    got = collections.Counter((e["tid"], e["name"], round(e["ts"] * 1000),
                               round((e["ts"] + e["dur"]) * 1000)) for e in xs)
    missing = want - got
    c.check(not missing, f"chrome: {sum(missing.values())} calls without their event, "
            f"e.g. {list(missing)[:3]}")


def check_chrome_flight(s, c):
    """Instants for the trigger, the window edges; registers as arguments."""
    _, doc = load_chrome(s, c)
    tev = doc["traceEvents"]
    inst = [e for e in tev if e["ph"] == "i"]
    names = {e["name"] for e in inst}
    c.check("trigger: symbol=rare_event" in names, f"chrome: no trigger instant in {names}")
    c.check(any(n.startswith("window ") and n.endswith(" opens") for n in names),
            "chrome: no window instant")
    rare = [e for e in tev if e["ph"] == "X" and e["name"] == "rare_event"]
    c.check(len(rare) == 1 and rare[0].get("args", {}).get("rdi") == "0x7",
            f"chrome: rare_event(7) has no rdi=0x7 argument: {rare}")


def folded_total(text):
    total = 0
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            raise Fail("flame --folded: bad line %r" % line)
        total += int(n)
    return total


def check_flame(s, c):
    """The folded stacks add up to the roots' inclusive time; the SVG is XML
    and names every function the program ran."""
    import xml.etree.ElementTree as ET
    rep = s.report()
    roots = rep["totals"]["roots_total_ns"] + rep["totals"]["under_open_ns"]
    folded = s.run("flame", "--folded", s.pid_dir)
    total = folded_total(folded)
    c.check(total == roots, f"flame --folded: total {total}, the roots' time is {roots}")
    # --per-thread where there are threads to split (flame_threads): one
    # thread's stacks under its name are the same total over the same
    # stacks, which a deep recursion makes hundreds of MB of text.
    if rep["threads"] > 1:
        per = s.run("flame", "--folded", "--per-thread", s.pid_dir)
        c.check(folded_total(per) == roots and
                all(l.startswith("thread ") for l in per.splitlines()),
                "flame --folded --per-thread: not the same total, or a line not under a thread")
    leaf_paths = {l.rpartition(" ")[0] for l in folded.splitlines()}
    for fn, n in own_totals(s.counts).items():
        if n:
            c.check(any(p == fn or p.endswith(";" + fn) or (";" + fn + ";") in p
                        or p.startswith(fn + ";") for p in leaf_paths),
                    f"flame --folded: {fn} is on no stack")
    svg = os.path.join(os.path.dirname(s.dir), "flame.svg")
    s.run("flame", "-o", svg, s.dir)
    try:
        root = ET.parse(svg).getroot()
    except ET.ParseError as ex:
        c.check(False, f"flame: the SVG is not XML: {ex}")
        return
    ns = "{http://www.w3.org/2000/svg}"
    frames = [g for g in root.iter(ns + "g") if g.get("class") == "f"]
    names = {g.get("data-n") for g in frames}
    for fn, n in own_totals(s.counts).items():
        c.check(not n or fn in names, f"flame: the SVG does not name {fn}")
    titles = [g.find(ns + "title") for g in frames]
    c.check(all(t is not None and t.text for t in titles), "flame: a frame without a title")
    c.check(root.find(ns + "script") is not None, "flame: no script (zoom, search)")
    allg = [g for g in frames if g.get("data-n") == "all"]
    c.check(len(allg) == 1 and int(allg[0].get("data-w")) == roots,
            f"flame: the root frame is not the roots' time {roots}")


def check_dump_window(s, c):
    """--window N keeps what the window's time range covers; --function
    shows the matched call with its detail record under it."""
    with open(os.path.join(s.pid_dir, "manifest.json")) as f:
        wins = json.load(f)["flight_recorder"]["windows"]
    if not c.check(len(wins) == 1, f"dump: {len(wins)} windows, want 1"):
        return
    w = wins[0]
    evs = s.events("--window", str(w["id"]))
    c.check(evs and all(w["from_ns"] <= e["ts"] <= w["to_ns"] for e in evs),
            "dump --window: events outside the window")
    c.check(any(e["function"] == "rare_event" and e.get("detail") for e in evs),
            "dump --window: the trigger's call with its detail is not in it")
    text = s.run("dump", "--function", "rare_event", s.pid_dir).splitlines()
    ev = [l for l in text if " | " not in l]
    c.check(len(ev) == 2 and ev[0].endswith("-> rare_event (t_flight_O2)") and
            "<- rare_event (t_flight_O2)  " in ev[1] and ev[1].endswith("s"),
            "dump --function rare_event: %r" % ev)
    c.check(len(text) > 1 and "| rdi=0x7 " in text[1], "dump: rare_event's registers not under it")
    rel = s.events("--from", "+0ns", "--to", "+1ms")
    first = min(e["ts"] for e in s.events("--depth", "1"))
    c.check(all(e["ts"] >= first - 10**9 for e in rel), "dump --from +0ns")
    # (ada's wait markers inside the calls have no depth)
    deep = [e for e in s.events("--function", "top", "--depth", "2") if e["depth"] is not None]
    c.check(deep and max(e["depth"] for e in deep) - min(e["depth"] for e in deep) == 1,
            "dump --function top --depth 2: not two levels")


def check_graph(s, c):
    """ada graph FN: its calls, total and self time are ada report's, for
    every function the program counted; the callers' calls add up to the
    tree's root; the root's children are the direct callees the dump's
    events give, with their call counts."""
    rep = s.report()
    by_name = collections.defaultdict(lambda: collections.Counter())
    for f in rep["functions"]:
        for k in ("calls", "total_ns", "self_ns", "exceptions", "open"):
            by_name[f["function"]][k] += f[k]
    frames = pair_frames(s.events())
    for fn, n in own_totals(s.counts).items():
        if not n:
            continue
        doc = json.loads(s.run("graph", "--json", s.pid_dir, fn))
        if not c.check(len(doc["processes"]) == 1, f"graph {fn}: {len(doc['processes'])} graphs"):
            continue
        g = doc["processes"][0]
        want = by_name[fn]
        for k in ("calls", "total_ns", "self_ns", "exceptions", "open"):
            c.check(g[k] == want[k], f"graph {fn}: {k} {g[k]}, report says {want[k]}")
        root = g["callees"][0]
        c.check(sum(x["calls"] for x in g["callers"]) == root["calls"],
                f"graph {fn}: the callers' calls do not add up to the root's {root['calls']}")
        # The outermost frames of fn and their direct callees, from the events.
        inside = set()
        outer = []
        for i, f in enumerate(frames):
            parent = f[5]
            if parent is not None and (parent in inside or frames[parent][1] == fn):
                inside.add(i)
            if f[1] == fn and i not in inside:
                outer.append(i)
        c.check(root["calls"] == len(outer),
                f"graph {fn}: root has {root['calls']} calls, the events {len(outer)} outermost")
        outer_set = set(outer)
        kids = collections.Counter(f[1] for f in frames if f[5] in outer_set)
        got = collections.Counter()
        for x in g["callees"]:
            if x["depth"] == 1:
                got[x["function"]] += x["calls"]
        c.check(got == kids, f"graph {fn}: direct callees {dict(got)}, the events give "
                f"{dict(kids)}")
    text = s.run("graph", s.pid_dir, "main")
    c.check(text.startswith("== ") and "callers (1 call path):" in text and
            "callees (its outermost calls" in text, "graph main, text:\n" + text[:1500])


def check_windows(s, c):
    """ada windows DIR: every window of the manifests, with their numbers
    (one process: its records and losses; the reach the farthest of its
    threads')."""
    mans = []
    for d in sorted(glob.glob(os.path.join(s.dir, "pid_*"))):
        with open(os.path.join(d, "manifest.json")) as f:
            mans.append(json.load(f))
    want = {}
    for m in mans:
        for w in m["flight_recorder"]["windows"]:
            e = want.setdefault(w["id"], dict(w, records=0, window_lost=0, pre=None, post=None))
            e["records"] += w["records"]
            e["window_lost"] += w["window_lost"]
            for t in w["threads"]:
                for k, tk in (("pre", "pre_achieved_ns"), ("post", "post_achieved_ns")):
                    if t.get(tk) is not None:
                        e[k] = max(e[k] or 0, t[tk])
    doc = json.loads(s.run("windows", "--json", s.dir))
    got = {w["id"]: w for w in doc["windows"]}
    c.check(not doc["live"] and len(want) >= 1 and sorted(got) == sorted(want),
            f"windows: ids {sorted(got)}, the manifests have {sorted(want)}")
    for i, w in want.items():
        g = got.get(i, {})
        for k in ("trigger", "fire_ns", "from_ns", "to_ns", "pre_roll_ns", "post_roll_ns",
                  "records", "window_lost", "fires"):
            c.check(g.get(k) == w[k], f"windows: window {i} {k} {g.get(k)}, manifest {w[k]}")
        c.check(g.get("note") == w.get("note") and g.get("closed") == w["closed"] and
                g.get("pre_achieved_ns") == w["pre"] and g.get("post_achieved_ns") == w["post"],
                f"windows: window {i}: {g}, manifest {w}")
    for i, w in want.items():
        if w["trigger"].startswith("symbol="):
            c.check(got.get(i, {}).get("function") == w["trigger"][7:],
                    f"windows: window {i} names {got.get(i, {}).get('function')!r}")
    text = [l for l in s.run("windows", s.dir).splitlines() if not fill_line(l)]
    c.check(len(text) == 2 + len(want) and text[0].endswith(f": {len(want)} window" +
                                                          ("" if len(want) == 1 else "s")),
            "windows text:\n" + "\n".join(text))
    c.check(any(l.split()[0] == str(i) and w["trigger"] in l for l in text[2:] for i, w in
                want.items()), "windows text: no row with the trigger:\n" + "\n".join(text))
    check_wall_time(s, c, mans[0], want, got)


def fill_line(line):
    """ada windows' second line under a window that lost records (what
    filled the rings), not a window's row."""
    return line.startswith("      the detail rings filled with ")


def check_wall_time(s, c, man, want, got):
    """The manifest's wall-clock anchor, and the times the readers derive
    from it: fire_wall_ns, `--time wall`, jsonl's wall_ns; the key-symbol
    version each window names (0: the agent's own start-time set)."""
    a = man["clock"].get("wall_anchor") or {}
    ok = (a.get("realtime_ns", 0) > 10**18 and 0 < a.get("boottime_ns", 0) <= man["start_time_ns"]
          + 10**9 and 0 <= a.get("uncertainty_ns", -1) < 10**8)
    c.check(ok, f"manifest clock.wall_anchor {a}")
    if not ok:
        return
    # The anchor's offset agrees with the one measured beside the recording,
    # within both brackets (and what NTP may slew in a few seconds: 1 ms).
    off = a["realtime_ns"] - a["boottime_ns"]
    for mine, unc in s.wall_offsets:
        c.check(abs(off - mine) <= a["uncertainty_ns"] + unc + 1000000,
                f"wall anchor offset {off} ns, measured beside it {mine} ± {unc} ns")
    wall = lambda t: a["realtime_ns"] + t - a["boottime_ns"]
    for i, w in want.items():
        c.check(got[i].get("fire_wall_ns") == wall(w["fire_ns"]),
                f"windows: window {i} fire_wall_ns {got[i].get('fire_wall_ns')}, "
                f"anchor says {wall(w['fire_ns'])}")
        c.check(w.get("keysym_version") == 0 and got[i].get("keysym_version") == 0,
                f"window {i}: keysym_version {w.get('keysym_version')} / "
                f"{got[i].get('keysym_version')}, want 0 (the agent's own set)")
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}[+-]\d{4} ")
    rows = [l for l in s.run("windows", "--time", "wall", s.dir).splitlines()[2:]
            if not fill_line(l)]
    c.check(rows and all(re.match(r"^\s*\d+ \d{4}-\d\d-\d\dT", r) for r in rows),
            "windows --time wall:\n" + "\n".join(rows))
    lines = s.run("dump", "--time", "wall", s.dir).splitlines()[:50]
    c.check(lines and all(stamp.match(l) for l in lines if not l.startswith("==")),
            "dump --time wall:\n" + "\n".join(lines[:5]))
    for l in s.run("dump", "--format", "jsonl", s.dir).splitlines()[:50]:
        e = json.loads(l)
        if e.get("wall_ns") != wall(e["ts"]):
            c.check(False, f"dump jsonl: wall_ns {e.get('wall_ns')} for ts {e['ts']}")
            break


def check_browser(s, c):
    """The Chrome export and the folded stacks in speedscope, ada's SVG with
    its zoom and search, in headless Chromium (tests/integration/browser_test.js)."""
    here = os.path.dirname(os.path.abspath(__file__))
    speedscope = os.path.join(here, "..", "..", "tools", "browser", "node_modules", "speedscope",
                              "dist", "release")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    node = shutil.which("node")
    for what, ok in (("chromium", chromium), ("node", node),
                     ("speedscope (tools/browser, npm)", os.path.isdir(speedscope))):
        if not c.check(ok, f"browser: {what} is not installed: run tools/bootstrap.sh"):
            return
    d = os.path.dirname(s.dir)
    trace, folded, svg = (os.path.join(d, n) for n in ("trace.json", "folded.txt", "flame.svg"))
    s.run("export", s.dir, "--format", "chrome", "-o", trace)
    s.run("flame", "--folded", "-o", folded, s.dir)
    s.run("flame", "-o", svg, s.dir)
    shots = os.path.join(os.path.dirname(d), "..", "screenshots")
    os.makedirs(shots, exist_ok=True)
    fns = [fn for fn, n in own_totals(s.counts).items() if n]
    rc, out, err = run([node, os.path.join(here, "browser_test.js"), os.path.abspath(speedscope),
                        chromium, shots, trace, folded, svg, *fns], timeout=280)
    print(out, err, sep="")
    if rc == SKIP:
        raise SkipTest(out.strip().splitlines()[-1] if out.strip() else "browser skipped")
    c.check(rc == 0, f"browser: exit {rc} (screenshots in {os.path.abspath(shots)})")


def check_filters(s, c):
    """One filter grammar (tools/filter.c): report, flame, export chrome and
    graph keep what dump keeps under the same --thread, --from/--to,
    --function and --depth; --pid and --window say when nothing matches."""
    evs = s.events()
    calls = lambda es: collections.Counter(e["function"] for e in es if e["kind"] == "call")
    mid = sorted(e["ts"] for e in evs)[len(evs) // 2]
    pid = int(os.path.basename(s.pid_dir)[4:])
    cases = (("--thread", "1"), ("--from", str(mid)), ("--to", str(mid)),
             ("--function", "work_a"), ("--function", "worker", "--depth", "2"),
             ("--thread", "2", "--function", "work_b"), ("--pid", str(pid)))
    for f in cases:
        want = calls(s.events(*f))
        c.check(want or f[0] == "--to", f"dump {f}: no calls kept")
        got = {r["function"]: r["calls"] for r in s.report(*f)["functions"]}
        c.check(got == dict(want), f"report {f}: {got}, dump keeps {dict(want)}")
        doc = json.loads(s.run("export", "--format", "chrome", "-o", "-", *f, s.pid_dir))
        xs = collections.Counter(e["name"] for e in doc["traceEvents"] if e["ph"] == "X")
        c.check(xs == want, f"export chrome {f}: {dict(xs)}, dump keeps {dict(want)}")
    # --thread against the program's own counts of that thread
    tids = {e["thread"]: e["tid"] for e in evs}
    own = {tid: fns for (_, tid), fns in s.counts[0].threads.items()}
    for th in sorted(tids)[:3]:
        got = {r["function"]: r["calls"] for r in s.report("--thread", str(th))["functions"]}
        want = {fn: v[0] for fn, v in own.get(tids[th], {}).items() if v[0]}
        c.check(all(got.get(fn) == n for fn, n in want.items()) and want,
                f"report --thread {th}: {got}, the program counted {want}")
    folded = s.run("flame", "--folded", "--function", "work_a", s.pid_dir).splitlines()
    c.check(folded and all(l.split(";")[0].split(" ")[0] == "work_a" for l in folded),
            "flame --function work_a: stacks not rooted at work_a:\n" + "\n".join(folded[:5]))
    g = json.loads(s.run("graph", "--json", "--thread", "1", s.pid_dir, "work_a"))
    n = sum(p["calls"] for p in g["processes"])
    c.check(n == calls(s.events("--thread", "1"))["work_a"],
            f"graph --thread 1: {n} calls of work_a")
    rc, _, err = s.run("report", "--window", "99", s.pid_dir, want_rc=None, checks=True)
    c.check(rc == 2 and "no window 99" in err, f"report --window 99: rc {rc}, {err!r}")
    for cmd in (("dump",), ("report",), ("flame", "--folded"), ("export", "--format", "chrome",
                                                               "-o", "-")):
        rc, _, err = s.run(*cmd, "--pid", str(pid + 1), s.pid_dir, want_rc=None, checks=True)
        c.check(rc == 1 and "no pid_" in err, f"{cmd[0]} --pid {pid + 1}: rc {rc}, {err!r}")


CHECKS = {"browser": check_browser, "filters": check_filters, "graph": check_graph, "report_exec": check_report_exec, "crash_exec": check_crash_exec, "windows": check_windows, "dump_window": check_dump_window, "flame": check_flame, "chrome": check_chrome, "chrome_flight": check_chrome_flight, "report": check_report, "names": check_names, "crash": check_crash,
          "crash_args": check_crash_args}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--record-opt", action="append", default=[])
    ap.add_argument("check", choices=sorted(CHECKS))
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    work = os.path.join(a.work, a.name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    c = Checks()
    try:
        s = Session(a.ada, work, argv, a.record_opt)
        CHECKS[a.check](s, c)
    except Fail as ex:
        c.check(False, str(ex))
    except SkipTest as ex:
        print("SKIP:", ex)
        return SKIP
    if c.failures:
        print(f"{len(c.failures)} check(s) failed; work directory kept: {work}")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("ok")
    return 0


class SkipTest(Exception):
    pass


if __name__ == "__main__":
    sys.exit(main())
