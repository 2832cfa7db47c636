#!/usr/bin/env python3
"""The final summary of tools/test.sh: what ran, what failed, and every skip
with its reason; the exit status says whether the suite passed.

  test_summary.py --allowed tests/allowed_skips.txt [--min tests/min_tests.txt]
                  [--disabled STAGE=WHY ...] STAGE=SECONDS=JUNIT.xml ...

Each JUNIT.xml is a `ctest --output-junit` file. A skip is a CTest test that
did not run (SKIP_RETURN_CODE, SKIP_REGULAR_EXPRESSION) or a cmocka case that
called skip() ("[  SKIPPED ] case" in its output, reported as TEST/case). Its
reason is what the test printed ("SKIP: ..." / "skip: ..." lines, else its
last line). A skip fails the suite unless tests/allowed_skips.txt lists it
for this stage with a condition that holds on this machine: the suite must
not shrink without anyone noticing. A stage that was switched off (--disabled)
is a skip too, allowed only outside CI (ADA_CI unset). A passing test that
prints "SKIP: ..." or "...: skipped" counts as a skip as well. A stage that
ran fewer tests, or fewer test cases, than tests/min_tests.txt says fails:
a test was lost (a registration deleted, a label dropped), or a case inside
one (a cmocka case taken out of its array). The cases of a test are what it
says it ran: cmocka's "[==========] N test(s) run." (every group), or a
harness's "CASES: N" line; a test that says neither (a Python harness of one
case, a test that did not run) is one case. "PENDING: ..." lines
of passing tests (work announced but not done, e.g. an option whose test is
still being written) are listed and counted, not failed.
"""
import argparse
import fnmatch
import os
import re
import sys
import xml.etree.ElementTree as ET

CMOCKA_RUN = re.compile(r"^\[ RUN      \] (\S+)")
CMOCKA_SKIPPED = re.compile(r"^\[  SKIPPED \] (\S+)$")
# How many cases a test ran: cmocka's group summary, or a harness's line.
CASES_RUN = re.compile(r"^(?:\[==========\] (\d+) test\(s\) run\.|CASES: (\d+))$")
REASON_LINE = re.compile(r"\bskip(ped|s|ping)?\b", re.I)
# A test that says it skipped but exits 0 would pass quietly: such a line in
# a passing test's output makes it a skip too.
SAID_SKIP = re.compile(r"^(\S+: )?SKIP\b|: skipped$|^skip: ", re.I)


def load_allowed(path):
    rules = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 3)
            if len(parts) < 4 or parts[2] not in ("always", "not-root"):
                sys.exit("%s:%d: want STAGES TEST WHEN REASON (WHEN: always or not-root): %r"
                         % (path, n, line))
            rules.append((parts[0].split(","), parts[1], parts[2], parts[3]))
    return rules


def load_min(path):
    """{stage: (the fewest tests, the fewest cases) it may run}."""
    floors = {}
    if not path:
        return floors
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 3 or not all(p.isdigit() for p in parts[1:]):
                sys.exit("%s:%d: want STAGE TESTS CASES: %r" % (path, n, line))
            floors[parts[0]] = (int(parts[1]), int(parts[2]))
    return floors


def cases_of(out):
    """The cases a test's output says it ran (1 when it says nothing)."""
    n = 0
    for line in out.splitlines():
        m = CASES_RUN.match(line.strip())
        if m:
            n += int(m.group(1) or m.group(2))
    return n or 1


def allowed(rules, stage, test, is_root):
    """(True, why) when a rule lets this skip pass here, else (False, why not)."""
    for stages, pattern, when, why in rules:
        if not any(fnmatch.fnmatch(stage, s) for s in stages):
            continue
        if not fnmatch.fnmatch(test, pattern):
            continue
        if when == "not-root" and is_root:
            return False, "allowed only when not root, and this run is root: it must run here"
        return True, why
    return False, "not in tests/allowed_skips.txt: it must run on this machine"


def reason_of(lines):
    said = [l.strip() for l in lines if REASON_LINE.search(l) and l.strip()]
    if said:
        return said[-1]
    rest = [l.strip() for l in lines if l.strip() and not l.startswith("[")]
    return rest[-1] if rest else "(the test printed no reason)"


def cmocka_skips(out):
    """[(case, reason)] for each cmocka case that called skip()."""
    skips, block = [], []
    for line in out.splitlines():
        m = CMOCKA_RUN.match(line)
        if m:
            block = []
            continue
        m = CMOCKA_SKIPPED.match(line)
        if m and not line.rstrip().endswith("listed below:"):
            if not any(s[0] == m.group(1) for s in skips):
                skips.append((m.group(1), reason_of(block)))
            continue
        block.append(line)
    return skips


def read_stage(stage, path):
    """Counts and lists of one ctest run."""
    res = {"passed": 0, "failed": [], "skips": [], "tests": 0, "cases": 0, "pending": []}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        res["failed"].append(("(ctest)", "no readable results in %s: %s" % (path, e)))
        return res
    for tc in root.iter("testcase"):
        name, status = tc.get("name"), tc.get("status")
        out = tc.findtext("system-out") or ""
        skipped = tc.find("skipped")
        res["tests"] += 1
        res["cases"] += cases_of(out)
        if status == "fail" or (skipped is not None and
                                "Unable to find executable" in (skipped.get("message") or "")):
            last = [l for l in out.splitlines() if l.strip()][-3:]
            res["failed"].append((name, " | ".join(last)))
        elif status in ("notrun", "disabled") or skipped is not None:
            res["skips"].append((name, reason_of(out.splitlines())))
        else:
            cm = cmocka_skips(out)
            said = [l.strip() for l in out.splitlines() if SAID_SKIP.search(l.strip())]
            if said and not cm:
                res["skips"].append((name, said[-1] + " (and it exited 0)"))
                continue
            res["passed"] += 1
            res["pending"] += [(name, l.strip()[len("PENDING:"):].strip())
                               for l in out.splitlines() if l.startswith("PENDING:")]
            for case, why in cm:
                res["skips"].append(("%s/%s" % (name, case), why))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--allowed", required=True)
    ap.add_argument("--min", help="file of STAGE COUNT lines: the fewest tests a stage may run")
    ap.add_argument("--disabled", action="append", default=[], metavar="STAGE=WHY")
    ap.add_argument("stages", nargs="*", metavar="STAGE=SECONDS=JUNIT")
    args = ap.parse_args()
    rules = load_allowed(args.allowed)
    floors = load_min(args.min)
    is_root = os.geteuid() == 0
    in_ci = os.environ.get("ADA_CI") == "1"

    bad = 0
    skips = []  # (stage, test, reason, ok, why)
    failures = []
    pending = []
    print("=== summary ===")
    for spec in args.stages:
        stage, secs, path = spec.split("=", 2)
        r = read_stage(stage, path)
        print("%-7s %4d tests (%d cases): %d passed, %d failed, %d skipped  (%s s with its "
              "build)" % (stage, r["tests"], r["cases"], r["passed"], len(r["failed"]),
                          len(r["skips"]), secs))
        failures += [(stage, n, w) for n, w in r["failed"]]
        min_tests, min_cases = floors.get(stage, (0, 0))
        if r["tests"] < min_tests:
            failures.append((stage, "(test count)", "ran %d tests, fewer than the %d of %s: a "
                             "test was lost; if on purpose, lower the floor in the same commit"
                             % (r["tests"], min_tests, args.min)))
        if r["cases"] < min_cases:
            failures.append((stage, "(case count)", "ran %d test cases, fewer than the %d of "
                             "%s: a case was lost; if on purpose, lower the floor in the same "
                             "commit" % (r["cases"], min_cases, args.min)))
        pending += [(stage, n, w) for n, w in r["pending"]]
        for test, reason in r["skips"]:
            ok, why = allowed(rules, stage, test, is_root)
            skips.append((stage, test, reason, ok, why))
    for spec in args.disabled:
        stage, why = spec.split("=", 1)
        ok = not in_ci
        skips.append((stage, "(whole stage)", why, ok, "switched off outside CI" if ok else
                      "CI (ADA_CI=1) must run every stage"))
        print("%-7s not run: %s" % (stage, why))

    print("skips: %d" % len(skips))
    for stage, test, reason, ok, why in skips:
        print("  %s %s %s: %s  [%s]" % ("SKIP" if ok else "SKIP-FAIL", stage, test, reason,
                                        "allowed: " + why if ok else why))
        bad += not ok
    if pending:
        print("pending: %d" % len(pending))
        for stage, name, what in pending:
            print("  PENDING %s %s: %s" % (stage, name, what))
    if failures:
        print("failed: %d" % len(failures))
        for stage, name, what in failures:
            print("  FAIL %s %s: %s" % (stage, name, what))
    if failures or bad:
        print("=== the suite FAILED: %d failed test(s), %d skip(s) that must not skip here ===" % (
            len(failures), bad))
        return 1
    print("=== all tests passed (%d allowed skip(s), %d pending, listed above) ===" % (
        len(skips), len(pending)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
