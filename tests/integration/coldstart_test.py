#!/usr/bin/env python3
"""The cold start's two-thread analysis end to end (issue 13 item 4).

  coldstart_test.py --ada ADA --work DIR -- PROGRAM [ARGS...]

Records PROGRAM with --analysis-threads 2 three times with one plan cache
(XDG_CACHE_HOME under DIR):
  1. cold: every module misses the cache and is analysed at start-up; the
     agent shares the analysis of the large ones (libc) with a helper
     thread: agent.json says analysis_threads.two_threads >= 1 and
     helper_failed == 0, and libc's entry says 2;
  2. warm: every module hits the cache, no helper (two_threads == 0);
  3. cold again, in a fresh cache directory: as run 1;
then once more cold in a fresh cache without the option (the default):
  4. one thread: two_threads == 0, every module's entry says 1.
Every module's verdicts (module_*.syms: each function's status) and its
installed and skipped counts are the same in all three runs: the cache
stores what the two-thread analysis found, and a second cold run finds it
again whatever share each thread took.

Exit 0 = pass, 1 = fail (the work directory is kept and printed).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from syms_files import syms_lines  # noqa: E402  (beside this file)


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run_record(ada, out, tag, env, argv, opts=()):
    """`ada record --out OUT OPTS -- ARGV`, which must succeed: its stdout."""
    p = subprocess.run([ada, "record", "--max-disk-mb", "0", "--out", out] + list(opts) +
                       ["--"] + argv,
                       env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    check(p.returncode == 0, "%s: ada record exit %d\n%s" % (tag, p.returncode,
                                                          p.stderr.decode(errors="replace")))
    return p.stdout.decode(errors="replace")


def record(ada, work, tag, cache, argv, opts=("--analysis-threads", "2")):
    out = os.path.join(work, "out-" + tag)
    run_record(ada, out, tag, dict(os.environ, XDG_CACHE_HOME=cache), argv, opts)
    pids = glob.glob(os.path.join(out, "session_*", "pid_*"))
    check(len(pids) == 1, "%s: want one process, found %r" % (tag, pids))
    with open(os.path.join(pids[0], "agent.json")) as f:
        agent = json.load(f)
    syms = {}
    for m in agent["modules"]:
        p = os.path.join(pids[0], "module_%d.syms" % m["module_id"])
        syms[m["path"]] = sorted(tuple(line.split()[1:6]) for line in syms_lines(p)
                                 if line.startswith("F "))
    return agent, syms


def summary(agent):
    return {m["path"]: (m["functions"], m["installed"], m["skipped"]) for m in agent["modules"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("argv", nargs="+")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    try:
        cache = os.path.join(a.work, "cache")
        cold, cold_syms = record(a.ada, a.work, "cold", cache, a.argv)
        warm, warm_syms = record(a.ada, a.work, "warm", cache, a.argv)
        cold2, cold2_syms = record(a.ada, a.work, "cold2", os.path.join(a.work, "cache2"),
                                   a.argv)
        one, one_syms = record(a.ada, a.work, "one", os.path.join(a.work, "cache3"), a.argv,
                               opts=())
        n = len(cold["modules"])
        for tag, ag, want in (("cold", cold, "misses"), ("warm", warm, "hits"),
                              ("cold2", cold2, "misses"), ("one", one, "misses")):
            check(ag["plan_cache"][want] == n,
                  "%s: plan_cache %r, want %d %s" % (tag, ag["plan_cache"], n, want))
            check(ag["analysis_threads"]["helper_failed"] == 0,
                  "%s: analysis_threads %r" % (tag, ag["analysis_threads"]))
        for tag, ag in (("cold", cold), ("cold2", cold2)):
            libc = [m for m in ag["modules"] if os.path.basename(m["path"]).startswith("libc.so")]
            check(libc and libc[0]["analysis_threads"] == 2,
                  "%s: libc not analysed on two threads: %r" % (tag, libc))
            check(ag["analysis_threads"]["two_threads"] >= 1, "%s: %r" % (tag, ag["analysis_threads"]))
        check(warm["analysis_threads"]["two_threads"] == 0,
              "warm: %r" % warm["analysis_threads"])
        check(all(m["analysis_threads"] == 1 for m in warm["modules"]), "warm: a module on two threads")
        check(one["analysis_threads"]["two_threads"] == 0 and
              all(m["analysis_threads"] == 1 for m in one["modules"]),
              "one: a helper thread without --analysis-threads 2: %r" % one["analysis_threads"])
        for tag, ag, sy in (("warm", warm, warm_syms), ("cold2", cold2, cold2_syms),
                            ("one", one, one_syms)):
            check(summary(ag) == summary(cold), "%s: counts differ from cold:\n%r\n%r" %
                  (tag, summary(ag), summary(cold)))
            check(sy == cold_syms, "%s: function statuses differ from cold" % tag)
        bad = subprocess.run([a.ada, "record", "--out", os.path.join(a.work, "out-bad"),
                              "--analysis-threads", "3", "--"] + a.argv,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=60)
        err = bad.stderr.decode(errors="replace")
        check(bad.returncode != 0 and "--analysis-threads takes 1 or 2, not '3'" in err
              and not os.path.exists(os.path.join(a.work, "out-bad")),
              "--analysis-threads 3: exit %d, %r" % (bad.returncode, err))
        nf = sum(len(v) for v in cold_syms.values())
        print("cold start: %d modules, %d functions: the same verdicts cold on two threads "
              "(twice), on one (the default) and warm; %d module(s) shared with the helper" %
              (n, nf, cold["analysis_threads"]["two_threads"]))
    except Fail as e:
        print("FAIL: %s\n(work directory kept: %s)" % (e, a.work))
        return 1
    shutil.rmtree(a.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
