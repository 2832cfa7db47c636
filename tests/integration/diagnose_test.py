#!/usr/bin/env python3
"""ada diagnose (issue 10 item 4) and the refusals ada record shares with it.

  diagnose_test.py --ada ADA --work DIR [--static PATH] [--dynamic PATH] CASE

  static    a statically linked program: check "static" fails, not fixable,
            says LD_PRELOAD and dlopen cannot work; ada record refuses it with
            the same sentence and leaves no session.
  setuid    a setuid copy of a dynamic program: "setuid" fails, fixable;
            ada record refuses it with the same sentence.
  missing   a path that does not exist: "path" fails.
  deadpid   the pid of a process that has exited and been reaped: "process"
            fails, and no program check runs.
  traced    a process already traced (strace): "tracer" fails naming strace.
  otheruser (root) a throwaway user diagnoses root's process: "owner" fails,
            fixable, saying to run as that user or root. Not root: skip.
  nondumpable a process that called prctl(PR_SET_DUMPABLE, 0), diagnosed by
            its own user (as root: both run as a throwaway user): "dumpable"
            fails, and "ptrace" says the checks above explain it.
  live      a running process of ours and a dynamic program: exit 0, every
            check ok or warn, the text and JSON forms agree.

Every case runs both forms: the text (exit status, one "FAIL  <id>" line
carrying the same message as the JSON) and --json (parsed; ok, failed,
the check's status, fixable and remediation steps: never none for a warn
or a fail).
Exit 0 = pass, 1 = fail, 77 = skip.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from second_user import SecondUser

SKIP = 77
TIMEOUT = 60


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(cmd, timeout=TIMEOUT, preexec=None, cwd=None):
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, preexec_fn=preexec, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Fail("timed out after %ds: %s" % (timeout, " ".join(cmd)))
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def diagnose(ada, target, work, preexec=None):
    """Both forms; returns (rc, text, json report)."""
    out = "out"  # in cwd (work): a second user may not reach work's absolute path
    rc_t, text, err_t = run([ada, "diagnose", str(target), "--out", out], preexec=preexec,
                            cwd=work)
    rc_j, js, err_j = run([ada, "diagnose", str(target), "--json", "--out", out],
                          preexec=preexec, cwd=work)
    check(rc_t == rc_j, "text exit %d, json exit %d:\n%s\n%s" % (rc_t, rc_j, text, js[:2000]))
    check(not err_t.strip() and not err_j.strip(), "diagnose wrote on stderr: %r %r" %
          (err_t, err_j))
    try:
        rep = json.loads(js)
    except ValueError as e:
        raise Fail("--json is not JSON (%s): %r" % (e, js[:400]))
    for k in ("target", "pid", "ok", "failed", "warnings", "checks"):
        check(k in rep, "--json has no %r: %r" % (k, sorted(rep)))
    for c in rep["checks"]:
        check(c["status"] in ("ok", "warn", "fail"), "bad status %r" % c)
        tag = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}[c["status"]]
        line = "  %s  %-9s %s" % (tag, c["id"], c["message"])
        if c["id"] in ("disk", "shm"):  # free space moves between the two runs
            line = "  %s  %-9s" % (tag, c["id"])
            check(any(l.startswith(line) for l in text.splitlines()),
                  "text form lacks %r:\n%s" % (line, text))
        else:
            check(line in text.splitlines(), "text form lacks %r:\n%s" % (line, text))
        if c["status"] != "ok":
            check(c["remediation"], "%s is %s with nothing to do: %r" % (c["id"], c["status"], c))
            for i, s in enumerate(c["remediation"]):
                check("%d. %s" % (i + 1, s) in text, "text lacks step %r" % s)
    failed = [c for c in rep["checks"] if c["status"] == "fail"]
    check(rep["failed"] == len(failed) and rep["ok"] == (not failed), "counts wrong: %r" % rep)
    check((rc_t != 0) == bool(failed), "exit %d with %d failed checks" % (rc_t, len(failed)))
    print("$ ada diagnose %s\n%s" % (target, text))
    return rc_t, text, rep


def the_check(rep, cid):
    m = [c for c in rep["checks"] if c["id"] == cid]
    check(m, "no check %r in %r" % (cid, [c["id"] for c in rep["checks"]]))
    return m[0]


def expect_fail(ada, target, work, cid, fixable, words):
    rc, text, rep = diagnose(ada, target, work)
    check(rc == 1, "exit %d, expected 1" % rc)
    c = the_check(rep, cid)
    check(c["status"] == "fail", "%s: %r" % (cid, c))
    check(c["fixable"] == fixable, "%s: fixable should be %s: %r" % (cid, fixable, c))
    check(c["remediation"], "%s: no remediation steps" % cid)
    for w in words:
        check(w.lower() in c["message"].lower(), "%s: %r does not say %r" % (cid, c["message"], w))
    return c


def record_refuses_same(ada, prog, work, c):
    out = os.path.join(work, "rec_out")
    rc, so, se = run([ada, "record", "--out", out, "--", prog], cwd=work)
    lines = [l for l in se.splitlines() if l.strip()]
    check(rc != 0, "ada record %s exited 0" % prog)
    check(len(lines) == 1, "ada record: not one line: %r" % lines)
    check(c["message"] in lines[0] and c["remediation"][0] in lines[0],
          "ada record's sentence is not diagnose's:\n  %s\n  %s" % (lines[0], c["message"]))
    check(not os.path.exists(out) or not os.listdir(out), "ada record left %r" % out)


def case_static(a, work):
    if not a.static or not os.path.exists(a.static):
        print("SKIP: no static test program (cc -static needs libc.a)")
        return SKIP
    c = expect_fail(a.ada, a.static, work, "static", False,
                    ["statically linked", "LD_PRELOAD", "dlopen"])
    check(any("dynamic" in s for s in c["remediation"]), "no rebuild-dynamically step")
    record_refuses_same(a.ada, a.static, work, c)


def case_setuid(a, work):
    prog = os.path.join(work, "setuid-copy")
    shutil.copy(a.dynamic, prog)
    os.chmod(prog, 0o4755)
    c = expect_fail(a.ada, prog, work, "setuid", True, ["setuid", "LD_PRELOAD"])
    record_refuses_same(a.ada, prog, work, c)


def case_missing(a, work):
    expect_fail(a.ada, os.path.join(work, "no-such-program"), work, "path", True,
                ["does not exist"])


def dead_pid():
    for _ in range(20):
        p = subprocess.Popen(["true"])
        p.wait()
        if not os.path.exists("/proc/%d" % p.pid):
            return p.pid
    raise Fail("every exited pid was reused at once")


def case_deadpid(a, work):
    pid = dead_pid()
    rc, text, rep = diagnose(a.ada, pid, work)
    c = the_check(rep, "process")
    check(c["status"] == "fail" and "no process has pid %d" % pid in c["message"], repr(c))
    check(rep["pid"] == pid, "pid %r" % rep["pid"])
    check(not [x for x in rep["checks"] if x["id"] in ("path", "static", "ptrace")],
          "program or ptrace checks ran for a dead pid")


def case_traced(a, work):
    strace = shutil.which("strace")
    if not strace:
        raise Fail("strace is not installed (tools/bootstrap.sh installs it)")
    # strace starts sleep traced; the diagnosis must see its tracer.
    # stdout/stderr not ctest's pipe: a left-over sleep must not hold it.
    p = subprocess.Popen([strace, "-f", "-o", os.devnull, "sleep", "120"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid = None
    try:
        for _ in range(6000):  # run-away guard: until strace has started sleep
            kids = open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()
            if kids:
                st = open("/proc/%s/status" % kids[0]).read()
                # Until sleep has exec'd AND its loader has mapped libc:
                # right after exec the process has no libc yet, and the
                # libc check would (rightly) fail.
                if "TracerPid:\t%d" % p.pid in st and "sleep" in open(
                        "/proc/%s/comm" % kids[0]).read() and "/libc.so" in open(
                        "/proc/%s/maps" % kids[0]).read():
                    pid = int(kids[0])
                    break
            time.sleep(0.01)
        check(pid, "strace did not start sleep")
        expect_fail(a.ada, pid, work, "tracer", True, ["already traced", "strace"])
    finally:
        p.kill()
        p.wait()
        if pid:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


def case_otheruser(a, work):
    if os.geteuid() != 0:
        print("SKIP: needs root to create a throwaway user (running as uid %d)" % os.geteuid())
        return SKIP
    p = subprocess.Popen(["sleep", "120"], stdout=subprocess.DEVNULL)
    # The throwaway user runs a copy of ada it can reach (second_user.py).
    try:
        with SecondUser("adat", [a.ada]) as u:
            os.chmod(work, 0o777)
            rc, text, rep = diagnose(u.path(a.ada), p.pid, work, preexec=u.become)
            check(rc == 1, "exit %d" % rc)
            c = the_check(rep, "owner")
            check(c["status"] == "fail" and c["fixable"], repr(c))
            check(any("root" in s for s in c["remediation"]), "no run-as-root step: %r" % c)
            check(the_check(rep, "ptrace")["status"] == "fail",
                  "the kernel's answer is not fail")
    finally:
        p.kill()
        p.wait()


NONDUMPABLE = ("import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); "  # PR_SET_DUMPABLE
               "print('ready', flush=True); time.sleep(120)")


def nondumpable_as(a, work, ada, preexec):
    # the system's interpreter: sys.executable may sit in a home the second
    # user cannot enter
    py = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if
               os.access(p, os.X_OK)), sys.executable)
    p = subprocess.Popen([py, "-c", NONDUMPABLE], stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, preexec_fn=preexec)
    try:
        check(p.stdout.readline().strip() == b"ready", "the non-dumpable program did not start")
        rc, text, rep = diagnose(ada, p.pid, work, preexec=preexec)
    finally:
        p.kill()
        p.wait()
    check(rc == 1, "exit %d" % rc)
    c = the_check(rep, "dumpable")
    check(c["status"] == "fail" and c["fixable"] and "not dumpable" in c["message"], repr(c))
    pt = the_check(rep, "ptrace")
    check(pt["status"] == "fail" and "SELinux" not in pt["message"] and
          "checks above" in pt["message"], "ptrace blames another cause: %r" % pt)


def case_nondumpable(a, work):
    """A process that made itself non-dumpable (prctl), diagnosed by its own
    user without CAP_SYS_PTRACE: "dumpable" fails (it used to pass: /proc/PID
    itself always shows the process's user), and "ptrace" points at it
    instead of blaming a security module. Root runs both as a throwaway user."""
    if os.geteuid() != 0:
        nondumpable_as(a, work, a.ada, None)
        return
    with SecondUser("adad", [a.ada]) as u:
        os.chmod(work, 0o777)
        nondumpable_as(a, work, u.path(a.ada), u.become)


def case_live(a, work):
    p = subprocess.Popen(["sleep", "120"], stdout=subprocess.DEVNULL)
    try:
        # Popen returns after the fork: until the exec, the child is a copy
        # of this python, which the two runs of diagnose could see apart;
        # after it, ld.so maps libc only a moment later (a loaded machine
        # stretches that moment: the libc check failed once in CI).
        for _ in range(600):
            try:
                if os.readlink("/proc/%d/exe" % p.pid).endswith("/sleep"):
                    with open("/proc/%d/maps" % p.pid) as maps:
                        if "/libc.so" in maps.read():
                            break
            except OSError:
                pass
            time.sleep(0.01)
        rc, text, rep = diagnose(a.ada, p.pid, work)
        check(rc == 0, "a process of ours cannot be attached?\n%s" % text)
        for cid in ("process", "owner", "tracer", "seccomp", "libc", "ptrace", "static"):
            check(the_check(rep, cid)["status"] == "ok", "%s not ok" % cid)
    finally:
        p.kill()
        p.wait()
    rc, text, rep = diagnose(a.ada, a.dynamic, work)
    check(rc == 0 and rep["pid"] is None, "a dynamic program cannot be recorded?\n%s" % text)


def case_functions(a, work):
    """--functions over t_pad: the functions hooked in the padding form
    are not listed, the ones without usable padding are, with their reason;
    the text form says the same; a file that is no ELF is one sentence and
    exit 1."""
    if not a.pad:
        print("SKIP: no t_pad target given")
        return SKIP
    rc, so, se = run([a.ada, "diagnose", a.pad, "--functions", "--json"], cwd=work)
    check(rc == 0, "--functions --json exited %d: %s" % (rc, se))
    rep = json.loads(so)
    why = {e["name"]: e["reason"] for e in rep["not_hooked"]}
    pad = {e["name"]: e.get("padding") for e in rep["not_hooked"]}
    for fn in ("pad_short3", "pad_short4", "pad_one", "pad_loop", "pad_longloop", "jumper",
               "hid_next", "main", "pad_inner", "pad_waive", "nowaive_prev"):
        check(fn not in why, "%s is listed as not hooked (%s)" % (fn, why.get(fn)))
    for fn in ("nopad3", "hostile3"):
        check(why.get(fn) == "too_short", "%s: %r, expected too_short" % (fn, why.get(fn)))
    for fn in ("pad_hinner", "pad_nowaive"):
        check(why.get(fn) == "branch_into_patch",
              "%s: %r, expected branch_into_patch" % (fn, why.get(fn)))
    # why the padding form could not take each (docs/hooks.md)
    for fn, p in (("hostile3", "branched"), ("pad_hinner", "branched"),
                  ("pad_nowaive", "claimed"), ("nopad3", "branched")):
        check(pad.get(fn) == p, "%s: padding %r, expected %r" % (fn, pad.get(fn), p))
    check(all(e.get("why") for e in rep["not_hooked"]
              if e["reason"] in ("too_short", "branch_into_patch")),
          "a too_short or branch_into_patch function without its why: %r" % rep["not_hooked"])
    check(rep["hooked"] + sum(rep["skipped"].values()) == rep["functions"],
          "hooked + skipped != functions: %r" % {k: rep[k] for k in ("hooked", "skipped",
                                                                     "functions")})
    rc, so, se = run([a.ada, "diagnose", a.pad, "--functions"], cwd=work)
    check(rc == 0 and any("too_short" in l and " nopad3: " in l and "branches into" in l
                          for l in so.splitlines()), "text form: %d %r" % (rc, so))
    junk = os.path.join(work, "not-elf")
    with open(junk, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    rc, so, se = run([a.ada, "diagnose", junk, "--functions"], cwd=work)
    lines = [l for l in se.splitlines() if l.strip()]
    check(rc == 1 and len(lines) == 1 and "ELF" in lines[0], "not-elf: %d %r" % (rc, lines))


CASES = {"functions": case_functions, "static": case_static, "setuid": case_setuid, "missing": case_missing,
         "deadpid": case_deadpid, "traced": case_traced, "otheruser": case_otheruser,
         "nondumpable": case_nondumpable, "live": case_live}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--static")
    ap.add_argument("--dynamic", required=True)
    ap.add_argument("--pad", help="the t_pad target (the functions case)")
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    work = os.path.join(os.path.abspath(a.work), a.case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    a.ada = os.path.abspath(a.ada)
    try:
        rc = CASES[a.case](a, work)
    except Fail as e:
        print("FAIL: %s\n(work directory kept: %s)" % (e, work))
        return 1
    if rc == SKIP:
        return SKIP
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
