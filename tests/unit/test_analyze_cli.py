#!/usr/bin/env python3
"""The reading commands on the golden session (tests/data/golden), whose
every number is known by hand:

  thread 0 (tid 4242): main 1000..1600 { foo 1100..1400 { bar 1200..1300 }
                       2:7 1500..1500 (a function of a module without symbols) }
  thread 1 (tid 4243): worker 1100..1700 { foo 1200..1250 left by EXCEPTION }

and on damaged copies of it. Usage: test_analyze_cli.py ADA GOLDEN WORKDIR.
Exit 0 = pass, 1 = fail (every failed check is printed)."""
import json
import os
import shutil
import subprocess
import sys

ADA, GOLDEN, WORK = sys.argv[1:4]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def ada(*args):
    p = subprocess.run([ADA, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def fns_by_name(doc, thread=None):
    out = {}
    for proc in doc["processes"]:
        for f in proc["functions"]:
            if thread is None or f.get("thread") == thread:
                out[f["function"]] = f
    return out


def test_report():
    rc, out, err = ada("report", "--json", GOLDEN)
    check(rc == 0, f"report --json exit {rc}: {err}")
    doc = json.loads(out)
    f = fns_by_name(doc)
    want = {"main": (1, 600, 300, 0), "foo": (2, 350, 250, 1), "bar": (1, 100, 100, 0),
            "worker": (1, 600, 550, 0), "2:7": (1, 0, 0, 0)}
    for name, (calls, total, self_, exc) in want.items():
        got = f.get(name)
        check(got is not None, f"report has no row for {name}")
        if got:
            check((got["calls"], got["total_ns"], got["self_ns"], got["exceptions"]) ==
                  (calls, total, self_, exc), f"report {name}: {got}")
    check(f["foo"]["min_ns"] == 50 and f["foo"]["max_ns"] == 300, f"foo min/max {f['foo']}")
    tot = doc["processes"][0]["totals"]
    check(tot["roots_total_ns"] == 1200, f"roots total {tot}")
    check(sum(x["self_ns"] for x in f.values()) == tot["roots_total_ns"] + tot["under_open_ns"],
          "self times do not add up to the roots' total")
    check(tot["open"] == 0 and tot["unmatched_ends"] == 0, f"totals {tot}")

    rc, out, _ = ada("report", "--json", "--sort", "calls", GOLDEN)
    check(json.loads(out)["processes"][0]["functions"][0]["function"] == "foo", "--sort calls")
    rc, out, _ = ada("report", "--json", "--threads", GOLDEN)
    doc = json.loads(out)
    t0, t1 = fns_by_name(doc, 0), fns_by_name(doc, 1)
    check(t0["foo"]["total_ns"] == 300 and t1["foo"]["total_ns"] == 50, "--threads split foo")
    check("worker" in t1 and "worker" not in t0, "--threads: worker is thread 1's")
    rc, out, _ = ada("report", GOLDEN)
    check(rc == 0 and any(l.split()[-1:] == ["main"] for l in out.splitlines()), "text report")
    rc, _, err = ada("report", "--sort", "bogus", GOLDEN)
    check(rc == 2 and "sort" in err, f"bad --sort: exit {rc}")


def damaged_copy(name, threads=(1,)):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(GOLDEN, d)
    for t in threads:
        with open(os.path.join(d, "pid_4242", "thread_%d" % t, "index.atf"), "r+b") as f:
            f.write(b"XXXX")  # the magic: not an index file any more
    return d


def test_damaged():
    d = damaged_copy("damaged_report")
    rc, out, err = ada("report", "--json", d)
    check(rc == 1, f"report of a damaged session: exit {rc}, want 1")
    check("thread_1" in err, f"report does not name the damaged file: {err!r}")
    f = fns_by_name(json.loads(out))
    check("main" in f and "worker" not in f, "report of a damaged session: thread 0 missing")


def test_unreadable():
    """No index file of the process readable: no functions, each file named,
    and nothing undefined on the way (UBSan: qsort of no array)."""
    d = damaged_copy("unreadable_report", threads=(0, 1))
    for args in (["report", "--json", d], ["report", d], ["report", "--threads", d]):
        rc, out, err = ada(*args)
        check(rc == 1 and "thread_0" in err and "thread_1" in err and
              "runtime error" not in err, f"{' '.join(args[:-1])} of unreadable indexes: exit "
              f"{rc}: {err!r}")
        if "--json" in args and rc == 1:
            procs = json.loads(out)["processes"]
            check(all(not p["functions"] for p in procs), f"functions from nowhere: {procs}")


def event_lines(text):
    return [l for l in text.splitlines() if " | " not in l]


def test_dump():
    rc, out, _ = ada("dump", GOLDEN)
    lines = out.splitlines()
    check(any(l.endswith("<- bar (golden-demo)  100 ns") for l in lines), "dump: bar's duration")
    check(any(l.endswith("!! foo (golden-demo)  50 ns") for l in lines), "dump: exception exit")
    i = next((k for k, l in enumerate(lines) if "-> bar" in l), None)
    check(i is not None and "| rdi=0x3000 rsi=0x3001" in lines[i + 1] and
          "| sp+0x000: a0 a1" in lines[i + 2], "dump: bar's detail record is not under its call")
    check(lines[i + 1].index("|") == lines[i].index("bar"), "dump: detail not indented to its call")
    rc, out, _ = ada("dump", "--function", "foo", GOLDEN)
    ev = event_lines(out)
    check(rc == 0 and len(ev) == 6 and all("main" not in l and "worker" not in l for l in ev),
          f"dump --function foo: {ev}")
    check(ev and ev[0].split("#1")[1].startswith("      -> foo"), "dump --function: indentation")
    rc, out, _ = ada("dump", "--function", "w*", "--depth", "1", GOLDEN)
    ev = event_lines(out)
    check(len(ev) == 2 and ev[0].endswith("-> worker (golden-demo)") and
          ev[1].endswith("<- worker (golden-demo)  600 ns"), f"dump --function 'w*' --depth 1: {out}")
    rc, out, _ = ada("dump", "--merge", "--from", "+0.3us", "--to", "+400ns", GOLDEN)
    ts = [int(l.split()[0]) for l in event_lines(out)]
    check(ts == [1200, 1200, 1250, 1300], f"dump --from +0.3us --to +400ns (start 900): {ts}")
    rc, out, _ = ada("dump", "--depth", "1", "--format", "jsonl", GOLDEN)
    evs = [json.loads(l) for l in out.splitlines()]
    check(len(evs) == 4 and all(e["depth"] == 1 for e in evs), "dump --depth 1")
    check([e.get("duration_ns") for e in evs] == [None, 600, None, 600], "jsonl duration_ns")
    rc, _, err = ada("dump", "--window", "0", GOLDEN)
    check(rc == 2 and "no window 0" in err, f"dump --window on a session without: {rc} {err}")
    rc, _, err = ada("dump", "--from", "+1.5parsec", GOLDEN)
    check(rc == 2 and "--from" in err, "dump --from with a bad unit")


def test_export_flame():
    out = os.path.join(WORK, "g.json")
    rc, _, err = ada("export", GOLDEN, "--format", "chrome", "-o", out)
    check(rc == 0, f"export: {rc} {err}")
    doc = json.load(open(out))
    xs = sorted((e["tid"], e["name"], e["ts"], e["dur"]) for e in doc["traceEvents"]
                if e["ph"] == "X")
    check(xs == [(4242, "2:7", 1.5, 0.0), (4242, "bar", 1.2, 0.1), (4242, "foo", 1.1, 0.3),
                 (4242, "main", 1.0, 0.6), (4243, "foo", 1.2, 0.05), (4243, "worker", 1.1, 0.6)],
          f"export: {xs}")
    bar = [e for e in doc["traceEvents"] if e.get("name") == "bar"][0]
    check(bar["args"]["rdi"] == "0x3000", "export: bar's rdi")
    rc, _, _ = ada("export", GOLDEN, "--format", "perfetto", "-o", out)
    check(rc == 2, "export --format perfetto is refused with a reason")
    rc, out, _ = ada("flame", "--folded", GOLDEN)
    check(sorted(out.splitlines()) == ["main 300", "main;foo 200", "main;foo;bar 100",
                                       "worker 550", "worker;foo 50"], f"flame --folded: {out}")


def test_damaged_export():
    d = damaged_copy("damaged_export")
    out = os.path.join(WORK, "d.json")
    rc, _, err = ada("export", d, "--format", "chrome", "-o", out)
    check(rc == 1 and "thread_1" in err, f"export of a damaged session: exit {rc}: {err!r}")
    names = {e["name"] for e in json.load(open(out))["traceEvents"] if e["ph"] == "X"}
    check(names == {"main", "foo", "bar", "2:7"}, f"export of a damaged session: {names}")
    rc, out, err = ada("flame", "--folded", d)
    check(rc == 1 and "main;foo;bar 100" in out, "flame of a damaged session")
    rc, out, err = ada("dump", d)
    check(rc == 1 and "-> main" in out, "dump of a damaged session")


def test_ls():
    out_dir = os.path.join(WORK, "traces")
    shutil.rmtree(out_dir, ignore_errors=True)
    for name in ("session_20260101_000000", "session_20260102_093000"):
        shutil.copytree(GOLDEN, os.path.join(out_dir, name))
    os.makedirs(os.path.join(out_dir, "not_a_session"))
    rc, out, err = ada("ls", "--json", out_dir)
    rows = [json.loads(l) for l in out.splitlines()]
    check(rc == 0 and [r["session"] for r in rows] ==
          ["session_20260102_093000", "session_20260101_000000"], f"ls order: {out} {err}")
    r = rows[0] if rows else {}
    check((r.get("start"), r.get("pid_list"), r.get("command"), r.get("events"), r.get("end"),
           r.get("duration_ns")) == ("2026-01-02 09:30:00", "4242", "golden-demo", 12, "exit 0",
                                     900), f"ls row: {r}")
    check(r.get("bytes", 0) > 0, "ls: no size")
    rc, out, _ = ada("ls", out_dir)
    check(rc == 0 and out.splitlines()[1].startswith("session_20260102_093000 "), "ls text")
    rc, _, err = ada("ls", os.path.join(WORK, "nowhere"))
    check(rc == 2 and "no such directory" in err, "ls of a missing directory")


def test_dump_units():
    """--from/--to offsets use the one duration grammar (src/trigger/parse.c):
    a unit is required, every unit and spelling with one is read alike."""
    rc, out, err = ada("dump", "--from", "+50", GOLDEN)
    lines = [l for l in err.splitlines() if l.strip()]
    check(rc == 2 and not out.strip() and len(lines) == 1 and "unit" in lines[0] and
          "+50ms" in lines[0], f"dump --from +50 (no unit): exit {rc}, stderr {lines}")
    rc, _, err = ada("dump", "--to", "+1.5", GOLDEN)
    check(rc == 2 and "--to" in err and "unit" in err, f"dump --to +1.5 (no unit): {rc} {err}")
    # The recording starts at 900 ns; its events run to 1500 ns.
    for frm in ("+300ns", "+0.3us", "+.0003ms", "+0.0000003s", "+3e2ns", "+0.3E+3ns"):
        rc, out, err = ada("dump", "--merge", "--from", frm, "--to", "+400ns", GOLDEN)
        ts = [int(l.split()[0]) for l in event_lines(out)]
        check(rc == 0 and ts == [1200, 1200, 1250, 1300], f"dump --from {frm}: {rc} {ts} {err}")
    for bad in ("+-5ms", "+5 ms", "+5m", "+ms", "+99999999999999999999s", "+18446744073709551615ns"):
        rc, _, err = ada("dump", "--from", bad, GOLDEN)
        check(rc == 2 and "--from" in err, f"dump --from {bad}: {rc} {err}")
    rc, out, _ = ada("dump", "--merge", "--from", "1200", "--to", "1250", GOLDEN)
    ts = [int(l.split()[0]) for l in event_lines(out)]
    check(ts == [1200, 1200, 1250], f"dump --from 1200 --to 1250 (absolute ns): {ts}")


def test_graph():
    """ada graph: the function's own numbers are ada report's; callers by
    call path, callees as a tree, aggregated over the calls."""
    rep = fns_by_name(json.loads(ada("report", "--json", GOLDEN)[1]))
    for name in ("main", "foo", "bar", "worker"):
        rc, out, err = ada("graph", "--json", GOLDEN, name)
        check(rc == 0, f"graph {name}: exit {rc}: {err}")
        p = json.loads(out)["processes"][0]
        r = rep[name]
        check(all(p[k] == r[k] for k in ("calls", "returns", "exceptions", "open", "total_ns",
                                           "self_ns")), f"graph {name}: {p} is not report's {r}")
    rc, out, _ = ada("graph", "--json", GOLDEN, "foo")
    p = json.loads(out)["processes"][0]
    callers = sorted((c["path"], c["calls"], c["total_ns"], c["self_ns"]) for c in p["callers"])
    check(callers == [(["main"], 1, 300, 200), (["worker"], 1, 50, 50)],
          f"graph foo: callers {callers}")
    tree = [(n["function"], n["depth"], n["parent"], n["calls"], n["total_ns"], n["self_ns"])
            for n in p["callees"]]
    check(tree == [("foo", 0, None, 2, 350, 250), ("bar", 1, 0, 1, 100, 100)],
          f"graph foo: callees {tree}")
    rc, out, _ = ada("graph", "--json", "--thread", "1", GOLDEN, "foo")
    p = json.loads(out)["processes"][0]
    check((p["calls"], p["total_ns"], p["exceptions"]) == (1, 50, 1), f"graph --thread 1: {p}")
    rc, out, _ = ada("graph", GOLDEN, "main")
    lines = out.splitlines()
    want = ["         1     300 ns     200 ns  +- foo", "         1     100 ns     100 ns  |  +- bar",
            "         1       0 ns       0 ns  +- 2:7"]
    i = lines.index(want[0]) if want[0] in lines else -1
    check(i > 0 and lines[i:i + 3] == want, "graph main, text tree:\n" + out)
    check(any(l.endswith("  main  (at the bottom of a stack)") for l in lines),
          "graph main: the caller line of a root call:\n" + out)
    rc, out, _ = ada("graph", "--json", "--depth", "1", GOLDEN, "main")
    check([n["function"] for n in json.loads(out)["processes"][0]["callees"]] ==
          ["main", "foo", "2:7"], "graph --depth 1")
    rc, out, _ = ada("graph", "--json", GOLDEN, "[fb]*")
    p = json.loads(out)["processes"][0]
    check(p["calls"] == 3 and p["total_ns"] == 450 and len(p["matched"]) == 2,
          f"graph with a glob taking foo and bar: {p['calls']} calls, {p['total_ns']} ns")
    rc, _, err = ada("graph", GOLDEN, "nosuch")
    check(rc == 1 and "no call of 'nosuch'" in err, f"graph of a function never called: {rc} {err}")
    rc, _, err = ada("graph", GOLDEN)
    check(rc == 2, f"graph without a function: exit {rc}")


def windows_copy():
    """The golden session as two processes, with two windows in their
    manifests (docs/manifest.md: every manifest lists every window, with
    that process's records, losses and per-thread reach)."""
    d = os.path.join(WORK, "windows")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(GOLDEN, d)
    shutil.copytree(os.path.join(d, "pid_4242"), os.path.join(d, "pid_4243"))
    th = lambda n, pre, post: {"thread": n, "tid": 4242 + n, "records": 1, "bytes": 64,
                               "unlinked": 0, "window_lost": 0, "errors": 0, "copies": 1,
                               "copies_skipped": 0, "pre_achieved_ns": pre,
                               "post_achieved_ns": post}
    w0 = {"id": 0, "trigger": "manual", "fire_ns": 1200, "from_ns": 1000, "to_ns": 1500,
          "fires": 2, "note": "deploy 42", "pre_roll_ns": 200, "post_roll_ns": 300}
    w1 = {"id": 1, "trigger": "latency=function:bar>50ns", "fire_ns": 1300, "from_ns": 1250,
          "to_ns": 1350, "fires": 1, "tid": 4242, "function_id": "0x100000002",
          "duration_ns": 80, "threshold_ns": 50}
    parts = {4242: [dict(w0, records=5, window_lost=1, closed=True,
                         threads=[th(0, 150, 300), th(1, 200, 100)]),
                    dict(w1, records=3, window_lost=0, closed=True, threads=[th(0, 40, None)])],
             4243: [dict(w0, records=7, window_lost=0, closed=True, threads=[th(0, 180, None)]),
                    dict(w1, records=0, window_lost=2, closed=False, threads=[])]}
    for pid, ws in parts.items():
        path = os.path.join(d, f"pid_{pid}", "manifest.json")
        with open(path) as f:
            m = json.load(f)
        m["pid"] = pid
        m["flight_recorder"] = {"windows": ws, "triggers": ["manual", "symbol=bar"]}
        with open(path, "w") as f:
            json.dump(m, f)
    return d


def test_windows():
    d = windows_copy()
    rc, out, err = ada("windows", "--json", d)
    check(rc == 0, f"windows --json: exit {rc}: {err}")
    doc = json.loads(out)
    ws = doc["windows"]
    check(not doc["live"] and doc["total"] == 2 and [w["id"] for w in ws] == [0, 1],
          f"windows: {out[:600]}")
    if len(ws) != 2:
        return
    keys = ("trigger", "fire_ns", "pre_roll_ns", "pre_achieved_ns", "post_roll_ns",
            "post_achieved_ns", "records", "window_lost", "fires", "note", "closed")
    got = [tuple(w[k] for k in keys) for w in ws]
    want = [("manual", 1200, 200, 200, 300, 300, 12, 1, 2, "deploy 42", True),
            ("latency=function:bar>50ns", 1300, 50, 40, 50, None, 3, 2, 1, None, False)]
    check(got == want, f"windows: {got}, want {want}")
    check([p["pid"] for p in ws[0]["processes"]] == [4242, 4243] and
          ws[1]["tid"] == 4242 and ws[1]["function_id"] == "0x100000002" and
          ws[1]["function"] == "bar" and ws[0]["function"] is None and
          (ws[1]["duration_ns"], ws[1]["threshold_ns"]) == (80, 50),
          f"windows: per process, tid, function {ws[1]}")
    rc, out, _ = ada("windows", d)
    lines = out.splitlines()
    check(rc == 0 and lines[0] == f"{d}: 2 windows" and lines[1].split()[:3] == ["ID", "FIRED", "PRE"],
          "windows text header:\n" + out)
    check(len(lines) == 4 and lines[2].split()[:10] ==
          ["0", "+300", "ns", "200", "ns", "200", "ns", "300", "ns", "300"] and
          lines[2].endswith("manual (2 fires merged)  note: \"deploy 42\"") and
          lines[3].split()[10:] ==
          ["3", "2", "latency=function:bar>50ns", "[bar]", "took", "80", "ns,", "over", "50", "ns",
           "(cut", "short", "by", "the", "end", "of", "the", "recording)"],
          "windows text rows:\n" + out)
    rc, out, _ = ada("windows", GOLDEN)
    check(rc == 0 and out == f"{GOLDEN}: 0 windows\n", f"windows of a session without: {out!r}")
    rc, _, err = ada("windows", os.path.join(WORK, "nowhere"))
    check(rc != 0 and "neither a pid nor a directory" in err, f"windows nowhere: {rc} {err}")


def test_ls_finds():
    """ada ls: sessions under any name, one level of --out directories
    down, a long pid list cut short, and one sentence when there is
    nothing to list."""
    top = os.path.join(WORK, "ls_parent")
    shutil.rmtree(top, ignore_errors=True)
    for sub in ("run_a", "run_b", os.path.join("out1", "session_20260103_101010")):
        shutil.copytree(GOLDEN, os.path.join(top, sub))
    many = os.path.join(top, "many")
    shutil.copytree(GOLDEN, many)
    for k in range(1, 10):
        shutil.copytree(os.path.join(GOLDEN, "pid_4242"), os.path.join(many, f"pid_{5000 + k}"))
    rc, out, err = ada("ls", "--json", top)
    rows = {r["session"]: r for r in map(json.loads, out.splitlines())}
    check(rc == 0 and sorted(rows) == ["many", "out1/session_20260103_101010", "run_a", "run_b"],
          f"ls PARENT: {sorted(rows)} (exit {rc}, {err})")
    want_pids = "4242," + ",".join(str(5000 + k) for k in range(1, 10))
    check(rows.get("many", {}).get("pid_list") == want_pids and rows["many"]["pids"] == 10,
          f"ls --json: the whole pid list: {rows.get('many')}")
    check(rows.get("out1/session_20260103_101010", {}).get("start") == "2026-01-03 10:10:10",
          "ls: the start of a session one level down")
    rc, out, _ = ada("ls", top)
    lines = out.splitlines()
    check(lines[0].split()[:3] == ["SESSION", "START", "PIDS"] and
          lines[1].startswith("out1/session_20260103_101010 "), "ls text order:\n" + out)
    row = [l for l in lines if l.startswith("many ")]
    check(len(row) == 1 and row[0].split()[2:6] == ["4242,5001,5002", "+7", "more", "golden-demo"],
          "ls: the PIDS column is not cut to the first pids and '+7 more':\n" + out)
    empty = os.path.join(WORK, "ls_empty")
    os.makedirs(empty, exist_ok=True)
    rc, out, err = ada("ls", empty)
    check(rc == 2 and out == "" and "no sessions here" in err and len(err.splitlines()) == 1,
          f"ls of a directory without sessions: exit {rc}, {out!r}, {err!r}")
    p = subprocess.run([ADA, "ls"], capture_output=True, text=True, cwd=empty, timeout=60)
    check(p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1 and
          "no ./ada_traces here" in p.stderr and "ada ls DIR" in p.stderr,
          f"ls without ./ada_traces: exit {p.returncode}, {p.stderr!r}")


CASES = [test_ls, test_ls_finds, test_report, test_graph, test_windows, test_damaged,
         test_unreadable, test_dump, test_dump_units, test_export_flame, test_damaged_export]
for t in CASES:
    t()
print(f"CASES: {len(CASES)}")  # tools/test_summary.py counts them
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
