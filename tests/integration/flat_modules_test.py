#!/usr/bin/env python3
"""The module files in pid_N/ itself, and sessions recorded before (their
files in pid_N/modules/) still read (docs/format.md, "Shared symbol
bodies"; docs/internals.md, "Session layout").

  flat_modules_test.py --ada ADA --work DIR -- FORK EXEC_CHILD

Records `sh -c 'FORK exec EXEC_CHILD; FORK tree'`: a shell, a forked child
that execs, and a tree of forked children. Then:
  1. no directory named modules anywhere in the session;
  2. every pid's manifest modules[].symbols is a bare module_<ID>.syms
     that names a regular file of that pid_N/, with its module_<ID>.body
     beside it; a forked child's .syms is a hard link (the tree's);
  3. `ada report --json --pid P` of the exec'd child names its functions
     (exec_child_work), of a forked child child_work; `ada validate` is
     clean;
  4. the same session made old (a copy, each pid's module files moved into
     pid_N/modules/ and its manifest's symbols paths made modules/...):
     `ada report --json` gives the same functions, `ada validate` is clean,
     `ada dump` names exec_child_work;
  5. `ada export --format atf` of the new session copies the module files
     beside the manifest, and the export reports the same functions.

Exit 0 = pass, 1 = fail (the work directory is kept and printed).
"""
import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(argv, timeout=120):
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def pid_dirs(session):
    return sorted(os.path.join(session, d) for d in os.listdir(session)
                  if d.startswith("pid_") and os.path.isdir(os.path.join(session, d)))


def manifest(pid_dir):
    with open(os.path.join(pid_dir, "manifest.json")) as f:
        return json.load(f)


def functions(ada, session, pid):
    """The function names `ada report --json` gives process pid."""
    rc, so, se = run([ada, "report", "--json", "--pid", str(pid), session])
    check(rc == 0, "ada report --pid %d %s: exit %d\n%s" % (pid, session, rc, se[-800:]))
    names = set()

    def walk(j):
        if isinstance(j, dict):
            f = j.get("function")
            if isinstance(f, str):
                names.add(f)
            for v in j.values():
                walk(v)
        elif isinstance(j, list):
            for v in j:
                walk(v)

    walk(json.loads(so))
    return names


def check_validate(ada, session, what):
    rc, so, se = run([ada, "validate", session])
    check(rc == 0 and re.search(r": 0 errors, 0 warnings", so + se),
          "ada validate of the %s session: exit %d\n%s%s" % (what, rc, so[-1500:], se[-800:]))


def check_flat(session):
    """1 and 2: no modules/, every manifest symbols path a file in pid_N/."""
    for root, dirs, _ in os.walk(session):
        check("modules" not in dirs, "%s/modules exists" % root)
    by_name = {}
    for d in pid_dirs(session):
        mods = manifest(d).get("modules") or []
        check(mods, "%s: its manifest lists no module" % d)
        for m in mods:
            sym = m.get("symbols")
            check(sym == "module_%d.syms" % m["id"],
                  "%s: module %d's symbols is %r, not module_%d.syms" % (d, m["id"], sym, m["id"]))
            st = os.lstat(os.path.join(d, sym))
            check(stat.S_ISREG(st.st_mode), "%s/%s is not a regular file" % (d, sym))
            body = os.path.join(d, sym[:-len(".syms")] + ".body")
            check(stat.S_ISREG(os.lstat(body).st_mode), "%s is not a regular file" % body)
            by_name.setdefault(sym, set()).add(st.st_ino)
    return by_name


def pids_by_program(session):
    """{pid: program name} from each manifest."""
    out = {}
    for d in pid_dirs(session):
        argv = manifest(d).get("program") or [""]
        out[int(os.path.basename(d)[4:])] = os.path.basename(argv[0])
    return out


def make_old(session, old):
    """A copy of session with each pid's module files in pid_N/modules/ and
    its manifest's symbols paths under modules/, as sessions recorded
    before the files moved up."""
    shutil.copytree(session, old, symlinks=True)
    for d in pid_dirs(old):
        os.mkdir(os.path.join(d, "modules"), 0o700)
        for n in os.listdir(d):
            if n.startswith("module_") and (n.endswith(".syms") or n.endswith(".body")):
                os.rename(os.path.join(d, n), os.path.join(d, "modules", n))
        m = manifest(d)
        for mod in m.get("modules") or []:
            if mod.get("symbols"):
                mod["symbols"] = "modules/" + mod["symbols"]
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump(m, f, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("prog", nargs="+")
    a = ap.parse_args()
    fork, exec_child = a.prog[0], a.prog[1]
    work = os.path.join(a.work, "flat_modules")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        out = os.path.join(work, "out")
        script = "'%s' exec '%s'; '%s' tree" % (fork, exec_child, fork)
        rc, so, se = run([a.ada, "record", "--max-disk-mb", "0", "--out", out, "--", "/bin/sh",
                          "-c", script])
        check(rc == 0, "ada record: exit %d\n%s" % (rc, se[-1500:]))
        sessions = [os.path.join(out, s) for s in os.listdir(out) if s.startswith("session_")]
        check(len(sessions) == 1, "sessions under %s: %r" % (out, sessions))
        session = sessions[0]
        by_name = check_flat(session)
        check(any(len(i) < len([d for d in pid_dirs(session)]) for i in by_name.values()),
              "no module file shared by hard link: %r" % by_name)
        progs = pids_by_program(session)
        execd = [p for p, n in progs.items() if n.startswith("t_exec_child")]
        check(execd, "no process ran the exec'd child: %r" % progs)
        names = functions(a.ada, session, execd[0])
        check("exec_child_work" in names,
              "ada report names no exec_child_work in the exec'd child %d: %s" %
              (execd[0], sorted(names)[:40]))
        forked = [p for p in progs if "child_work" in functions(a.ada, session, p)]
        check(len(forked) >= 6, "forked children with child_work named: %r" % forked)
        check_validate(a.ada, session, "new")

        old = os.path.join(work, "old")
        make_old(session, old)
        for p in progs:
            check(functions(a.ada, old, p) == functions(a.ada, session, p),
                  "pid %d: the old layout reports other functions than the new" % p)
        check_validate(a.ada, old, "old")
        rc, so, se = run([a.ada, "dump", "--pid", str(execd[0]), old])
        check(rc == 0 and "exec_child_work" in so,
              "ada dump of the old session names no exec_child_work (exit %d)\n%s" %
              (rc, se[-800:]))

        exp = os.path.join(work, "export")
        rc, so, se = run([a.ada, "export", "--format", "atf", "-o", exp, session])
        check(rc == 0, "ada export --format atf: exit %d\n%s" % (rc, se[-800:]))
        check_flat(exp)
        for p in progs:
            check(functions(a.ada, exp, p) == functions(a.ada, session, p),
                  "pid %d: the export reports other functions than the session" % p)
    except Fail as e:
        print("FAIL: %s\n(work directory kept: %s)" % (e, work))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("flat modules: %d processes, no modules/ directory, every manifest's symbols a "
          "file of pid_N/; the session made old (pid_N/modules/) reads the same" % len(progs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
