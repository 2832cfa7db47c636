#!/usr/bin/env python3
"""tools/test_summary.py's floors (tests/min_tests.txt): a stage is failed
when it runs fewer tests or fewer test cases than its floor. The cases come
from each test's output in the junit file: cmocka's "[==========] N test(s)
run." (every group), a harness's "CASES: N", else 1 -- so a cmocka case
taken out of its array fails the floor although every registration is
still there. Usage: test_summary_floors.py TOOLS_DIR WORK_DIR."""
import os
import subprocess
import sys
from xml.sax.saxutils import escape

TOOLS, WORK = sys.argv[1:3]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def junit(path, outputs):
    cases = "".join('<testcase name="%s" status="run"><system-out>%s</system-out></testcase>'
                    % (n, escape(o)) for n, o in outputs.items())
    with open(path, "w") as f:
        f.write('<?xml version="1.0"?><testsuite>%s</testsuite>' % cases)


def summary(floor_line, outputs):
    os.makedirs(WORK, exist_ok=True)
    j, m, a = (os.path.join(WORK, n) for n in ("junit.xml", "min.txt", "allowed.txt"))
    junit(j, outputs)
    with open(m, "w") as f:
        f.write("# floors\n%s\n" % floor_line)
    with open(a, "w") as f:
        f.write("# none\n")
    p = subprocess.run([sys.executable, os.path.join(TOOLS, "test_summary.py"), "--allowed", a,
                        "--min", m, "s=1=" + j], capture_output=True, text=True,
                       env=dict(os.environ, ADA_CI=""))
    return p.returncode, p.stdout + p.stderr


CMOCKA = "[==========] Running 3 test(s).\n[ RUN      ] a\n[       OK ] a\n" \
         "[==========] 3 test(s) run.\n[  PASSED  ] 3 test(s).\n"
OUT = {"unit_a": CMOCKA, "unit_b": CMOCKA + "[==========] 2 test(s) run.\n",
       "harness": "CASES: 4\n0 failed\n", "plain": "PASS\n"}

rc, out = summary("s 4 13", OUT)  # 3 + 5 + 4 + 1
check(rc == 0 and "4 tests (13 cases)" in out, "13 cases at a floor of 13: %d\n%s" % (rc, out))
rc, out = summary("s 4 14", OUT)
check(rc == 1 and "(case count): ran 13 test cases, fewer than the 14" in out,
      "13 cases under a floor of 14 passed: %d\n%s" % (rc, out))
rc, out = summary("s 5 1", OUT)
check(rc == 1 and "(test count): ran 4 tests, fewer than the 5" in out,
      "4 tests under a floor of 5 passed: %d\n%s" % (rc, out))
lost = dict(OUT, unit_a=CMOCKA.replace("3 test(s) run", "2 test(s) run"))
rc, out = summary("s 4 13", lost)
check(rc == 1 and "(case count)" in out, "a lost cmocka case passed: %d\n%s" % (rc, out))
rc, out = summary("s 4", OUT)
check(rc != 0 and "STAGE TESTS CASES" in out, "a floor without cases accepted: %s" % out)
print("CASES: 5")
print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
