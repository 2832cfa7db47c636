#!/usr/bin/env python3
"""The tests that need a second user, run from a checkout under a private
directory (issue 35 item 5): where users clone ada -- root's home, any
`mktemp -d` -- the parent is 0700, and a second user cannot reach anything
inside it. CI's clean clone sits under a reachable directory, so this test
gives CI the private parent without building anything again.

  private_parent_test.py --ada ADA --control-target T --dynamic T --scripts DIR

It makes a 0700 directory (mkdtemp), lays out in it what the second-user
tests use -- build/ada with the agent beside it, the two targets, the test
scripts -- and runs from there control_test.py peer and diagnose_test.py
otheruser and nondumpable. Each must pass (exit 0): a skip or a
PermissionError fails. Root only (making a user needs it); not root: 77.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
SCRIPTS = ("control_test.py", "diagnose_test.py", "second_user.py")


def lay_out(a, root):
    """The checkout's pieces under root; {name: path}."""
    build = os.path.join(root, "build")
    tgt = os.path.join(build, "tests", "targets")
    inte = os.path.join(root, "tests", "integration")
    for d in (tgt, inte):
        os.makedirs(d)
    p = {"ada": os.path.join(build, "ada"), "work": os.path.join(build, "work")}
    shutil.copy2(a.ada, p["ada"])
    agent = os.path.join(os.path.dirname(a.ada), "libada_agent.so")
    shutil.copy2(agent, os.path.join(build, "libada_agent.so"))
    for k in ("control_target", "dynamic"):
        p[k] = os.path.join(tgt, os.path.basename(getattr(a, k)))
        shutil.copy2(getattr(a, k), p[k])
    for s in SCRIPTS:
        p[s] = os.path.join(inte, s)
        shutil.copy2(os.path.join(a.scripts, s), p[s])
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--control-target", required=True)
    ap.add_argument("--dynamic", required=True)
    ap.add_argument("--scripts", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: the second-user tests need root to make a user (running as uid %d)" %
              os.geteuid())
        return SKIP
    parent = tempfile.mkdtemp(prefix="ada-private-parent-")  # 0700
    os.chmod(parent, 0o700)
    p = lay_out(a, os.path.join(parent, "ada"))
    runs = [[p["control_test.py"], "--ada", p["ada"], "--target", p["control_target"],
             "--work", p["work"], "peer"]]
    runs += [[p["diagnose_test.py"], "--ada", p["ada"], "--work", p["work"], "--dynamic",
              p["dynamic"], case] for case in ("otheruser", "nondumpable")]
    bad = 0
    for cmd in runs:
        r = subprocess.run([sys.executable] + cmd, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=300)
        name = "%s %s" % (os.path.basename(cmd[0]), cmd[-1])
        ok = r.returncode == 0
        print("%s: exit %d%s" % (name, r.returncode, "" if ok else
                                 "\n" + (r.stdout + r.stderr)[-2000:]))
        bad += not ok
    if bad:
        print("FAIL: %d of %d second-user tests failed from %s (kept)" % (bad, len(runs),
                                                                          parent))
        return 1
    shutil.rmtree(parent, ignore_errors=True)
    print("CASES: %d" % len(runs))  # tools/test_summary.py counts them
    print("second-user tests pass from a checkout under a 0700 directory")
    return 0


if __name__ == "__main__":
    sys.exit(main())
