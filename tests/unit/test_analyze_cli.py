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


def damaged_copy(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(GOLDEN, d)
    with open(os.path.join(d, "pid_4242", "thread_1", "index.atf"), "r+b") as f:
        f.write(b"XXXX")  # the magic: not an index file any more
    return d


def test_damaged():
    d = damaged_copy("damaged_report")
    rc, out, err = ada("report", "--json", d)
    check(rc == 1, f"report of a damaged session: exit {rc}, want 1")
    check("thread_1" in err, f"report does not name the damaged file: {err!r}")
    f = fns_by_name(json.loads(out))
    check("main" in f and "worker" not in f, "report of a damaged session: thread 0 missing")


for t in [test_report, test_damaged]:
    t()
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
