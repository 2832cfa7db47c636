#!/usr/bin/env python3
"""ada attach end to end (issue 10).

  attach_test.py --ada ADA --work DIR --target T_ATTACH [--static T_STATIC]
                 [--control T_CONTROL] CASE

  threads    tests/targets/t_attach.c (two threads busy in calls, one blocked
             in read() with SIGUSR1 blocked) is attached to, recorded until
             events flow (ada status), detached with SIGINT -- twice; then
             released, it prints its own checks and exits 42. Each session
             validates, says "attached": true with the pauses, has calls of
             the busy threads, and every return matches a call (frames still
             open at the detach are the only unmatched ones). After each
             detach the shared memory of ada's making (/dev/shm, memfd and
             shared anonymous mappings) is what it was before the first
             attach (within a page) and no arena is mapped.
  trigger    tests/targets/t_control.c (runs what its stdin says) attached
             to with --trigger symbol=rare_event (`ada status` reaches the
             recording given ada attach's own pid): "busy", then "rare" after
             the attach; the window is persisted (`ada status`) before the
             detach and in the manifest after it with its detail records; the
             program answers on and exits 0 after the detach.
  move       tests/targets/t_attach_move.c: one thread waits (userfaultfd)
             on a load at move_probe+1, inside the bytes the patch displaces;
             another is blocked in a read() whose restart is at busy_read+2.
             Attached to and detached; a second probe thread then waits at
             move_probe+1 (the first detach restored the bytes); attached to
             again (the kept patch applied again), then released ("go"): it
             finishes with its checks passed (exit 42) and ada attach ends
             with it. In both sessions move_probe is hooked and one thread
             was moved (hook.moved_at_attach 1), busy_read is
             busy_at_attach; the second has move_probe's later calls exactly
             (2 x 1000), the two open at the attach are not recorded.
  spawn      tests/targets/t_attach_spawn.c: threads are created and exit
             all the time (4 at a time, each calling spawn_work 100 times),
             also while ada attach stops the process. Attached to three times
             in a row (each detached with SIGINT once events flow: the second
             and third find the agent of an earlier attach): each session
             validates with no orphan return, no thread has more than 100
             spawn_work calls and some have exactly 100; no thread is left
             traced; on "stop" the program counts every worker's 100 calls
             and exits 42 (a worker left stopped would hang its join).
  loader_lock  tests/targets/t_attach_lock.c: a thread waits in a library
             constructor, holding the dynamic loader's lock; ada attach
             --call-timeout 1: the agent's dlopen cannot take the lock (its
             holder is stopped), so after 1 s ada attach says so in one
             sentence and exits 2, no session, no tracer; the main thread
             the call was made on (in read()) runs on as it was: on "go" the
             program finishes loading, dlopens libm and exits 42.
  duration   ada attach --duration 1.5 with no signal: it detaches on its
             own after 1.5 s (the summary says so, the wall clock agrees),
             exit 0, the session validates (attached, detached); the
             program runs on and exits 42 on "go".
  nopid      a pid that does not exist: exit 2, one sentence, no session.
  traced     a process strace holds: exit 2 naming the tracer; it runs on.
  static     a static program (t_static --wait): exit 2 saying dlopen cannot
             work; it runs on untraced.
  otheruser  (root) a throwaway user's process: exit 2, run as that user; it
             runs on untraced. Not root: skip.

Handshakes only: the target's "ready" line, its reader seen in read() in
/proc, ada's "attached to pid" line, events > 0 in `ada status --json`.
Timeouts are run-away guards. Exit 0 = pass, 1 = fail, 77 = skip.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from syms_files import syms_lines  # noqa: E402  (beside this file)

SKIP = 77
GUARD = 120  # run-away guard (s), never a synchronisation


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(cmd, timeout=GUARD, preexec=None):
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        raise Fail("timed out after %ds: %s" % (timeout, " ".join(cmd)))
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def wait_state(what, pred):
    """Polls a state until pred() holds; the deadline is a run-away guard."""
    end = time.monotonic() + GUARD
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.005)
    raise Fail("never happened: %s" % what)


def tracer_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return -1


def reader_blocked(pid):
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/syscall" % (pid, tid)) as f:
                if f.read().startswith("0 0x0 "):
                    return True
        except OSError:
            pass
    return False


class Target:
    """t_attach: started with pipes; released by "go"."""

    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        line = self.p.stdout.readline().decode()
        check(line == "ready\n", "the target said %r" % line)
        wait_state("the target's reader blocked in read()", lambda: reader_blocked(self.p.pid))

    def finish(self):
        out, err = self.p.communicate(b"go\n", timeout=GUARD)
        return self.p.returncode, out.decode(), err.decode()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def sessions(out):
    return sorted(glob.glob(os.path.join(out, "session_*")))


ATTACH_OPTS = []  # --attach-opt


def attach_until(ada, pid, out, what, until, extra=()):
    """ada attach in the background until until(status) holds for its
    recording's `ada status --json` (a poll, no timed wait), then SIGINT;
    returns (rc, stderr, session)."""
    before = set(sessions(out))
    a = subprocess.Popen([ada, "attach", str(pid), "--out", out] + ATTACH_OPTS + list(extra),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        line = a.stderr.readline().decode()
        check("attached to pid %d" % pid in line, "ada attach said %r (exit %r)" %
              (line, a.poll()))
        session = line.rsplit(" ", 1)[-1].strip()

        def holds():
            rc, so, _ = run([ada, "status", session, "--json"])
            try:
                st = json.loads(so) if rc == 0 else {}
                st["_session"] = session  # the directory, for a look at its files
                return until(st)
            except ValueError:
                return False
        wait_state(what, holds)
        a.send_signal(signal.SIGINT)
        _, err = a.communicate(timeout=GUARD)
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    err = line + err.decode(errors="replace")
    new = [s for s in sessions(out) if s not in before]
    check(len(new) == 1 and new[0] == session, "sessions %r, said %r" % (new, session))
    print(err)
    return a.returncode, err, session


def attach_until_events(ada, pid, out, extra=()):
    """attach_until both busy threads' events are in its recording: both
    have a ring (they emitted) and events flow. Not any two threads: under
    load the main thread's last returns may come before one busy thread
    ran at all."""
    def flowing(st):
        tids = {r.get("tid") for r in st.get("rings", []) if r.get("pid") == pid}
        return st.get("events", 0) > 1000 and len(tids - {pid}) >= 2
    return attach_until(ada, pid, out, "events of both busy threads in the attached recording",
                        flowing, extra)


def attach_until_workers(ada, pid, out):
    """attach_until worker threads have files in the recording and events
    flow. The spawn target's workers live for 100 calls each, so `ada
    status` (live threads' rings) almost never shows one: the long-lived
    spawner is the one ring it lists, and waiting for two took this test
    from seconds to minutes on a loaded machine. A worker's thread_K/
    says its events are being written."""
    def flowing(st):
        pdir = os.path.join(st.get("_session", ""), "pid_%d" % pid)
        try:
            threads = [d for d in os.listdir(pdir) if d.startswith("thread_")]
        except OSError:
            return False
        return st.get("events", 0) > 1000 and len(threads) >= 3
    return attach_until(ada, pid, out, "events of worker threads in the attached recording",
                        flowing)


def check_session(ada, session, pid):
    rc, so, se = run([ada, "validate", session])
    check(rc == 0, "validate %s: exit %d\n%s%s" % (session, rc, so, se))
    with open(os.path.join(session, "pid_%d" % pid, "manifest.json")) as f:
        m = json.load(f)
    check(m.get("attached") is True, "manifest: attached %r" % m.get("attached"))
    at = m.get("attach") or {}
    check(at.get("pause_ns", 0) > 0 and at.get("detach_pause_ns", 0) > 0 and
          at.get("time_realtime_ns", 0) > 0, "manifest attach: %r" % at)
    check(m["exit"].get("detached") is True, "manifest exit: %r" % m["exit"])
    rc, so, se = run([ada, "report", session, "--json", "--threads"])
    check(rc == 0, "report: exit %d %s" % (rc, se))
    rep = json.loads(so)["processes"][0]
    t = rep["totals"]
    # Every return matched a call; frames the detach left open are the
    # only unbalanced ones (a thread is at most a few frames deep here).
    check(t["orphans"] == 0 and t["unmatched_ends"] == 0, "unbalanced: %r" % t)
    check(t["calls"] - t["returns"] == t["open"] and t["open"] <= 3 * rep["threads"],
          "open frames: %r" % t)
    busy = {f["thread"] for f in rep["functions"]
            if f["function"] in ("attach_work", "attach_work_a", "attach_work_b")
            and f["calls"] > 0}
    check(len(busy) >= 2, "calls of the busy threads on %d threads: %r" % (len(busy), busy))
    return m


def rss_shmem_kb(pid):
    """RssShmem of pid (kB), from /proc/PID/status."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("RssShmem:"):
                return int(line.split()[1])
    raise Fail("no RssShmem in /proc/%d/status" % pid)


def recording_shmem_kb(pid):
    """Resident kB of pid's shared memory of ada's making: its mappings of
    /dev/shm files (arenas, the budget page), of memfds and of anonymous
    shared memory. Not RssShmem itself: that counts every tmpfs file page
    mapped, and a program whose build is on tmpfs (a clone there) has more
    of its own text resident after the agent read it."""
    total, ours = 0, False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and not head[0].endswith(":"):
                path = " ".join(head[5:])
                ours = path.startswith(("/dev/shm/", "/memfd:", "memfd:", "/dev/zero",
                                        "/SYSV"))
            elif ours and head and head[0] == "Rss:":
                total += int(head[1])
    return total


def arena_maps(pid):
    """The lines of /proc/PID/maps that map an arena (*.ring)."""
    with open("/proc/%d/maps" % pid) as f:
        return [l.strip() for l in f if ".ring" in l]


def case_threads(a, work):
    out = os.path.join(work, "out")
    t = Target(a.target)
    sessions_ = []
    try:
        shm0 = recording_shmem_kb(t.p.pid)
        for round_ in (1, 2):
            rc, err, session = attach_until_events(a.ada, t.p.pid, out)
            check(rc == 0, "attach %d: exit %d\n%s" % (round_, rc, err))
            check("every thread was stopped" in err and "ms to detach" in err,
                  "no pause in the summary:\n%s" % err)
            sessions_.append(session)
            check(tracer_of(t.p.pid) == 0, "still traced after the detach")
            # The detach gave the recording's shared memory back (issue
            # 34): its shared memory as before the first attach, within a
            # page, and no arena mapped.
            shm = recording_shmem_kb(t.p.pid)
            check(abs(shm - shm0) <= 4 and not arena_maps(t.p.pid),
                  "after detach %d: %d kB of /dev/shm, memfd and shared anonymous memory "
                  "resident, %d kB before the attach (RssShmem %d kB); arena mappings %r"
                  % (round_, shm, shm0, rss_shmem_kb(t.p.pid), arena_maps(t.p.pid)))
        rc, out_, err = t.finish()
    finally:
        t.kill()
    check(rc == 42, "the target exited %d:\n%s%s" % (rc, out_, err))
    for line in ("read go", "mask ok", "busy 0 ok", "busy 1 ok"):
        check(line + "\n" in out_, "the target did not print %r:\n%s" % (line, out_))
    # The sessions are read once the target has ended: its two busy
    # threads would take both CPUs from ada validate and ada report (and
    # its recount at "go" grows with every second it runs).
    for session in sessions_:
        check_session(a.ada, session, t.p.pid)


def case_trigger(a, work):
    if not a.control:
        raise Fail("no --control target")
    out = os.path.join(work, "out")
    t = subprocess.Popen([a.control], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)

    def do(cmd):
        t.stdin.write((cmd + "\n").encode())
        t.stdin.flush()
        got = t.stdout.readline().decode()
        check(got == cmd + "\n", "the target answered %r to %r" % (got, cmd))

    ada = None
    try:
        check(t.stdout.readline() == b"ready\n", "the control target did not start")
        ada = subprocess.Popen([a.ada, "attach", str(t.pid), "--out", out, "--trigger",
                                "symbol=rare_event", "--pre-roll-sec", "30",
                                "--post-roll-sec", "0.1"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        line = ada.stderr.readline().decode()
        check("attached to pid %d" % t.pid in line, "ada attach said %r (exit %r)" %
              (line, ada.poll()))
        session = line.rsplit(" ", 1)[-1].strip()

        def by_attach_pid():
            # `ada status` given ada attach's own pid (the registry entry
            # its control thread makes within a second; issue 34).
            rc, so, _ = run([a.ada, "status", str(ada.pid), "--json"])
            try:
                st = json.loads(so) if rc == 0 else {}
            except ValueError:
                return False
            return ([p.get("pid") for p in st.get("processes", [])] == [t.pid] and
                    st.get("attach_pause_ms", 0) > 0)
        wait_state("ada status by ada attach's pid, with the attach's pause", by_attach_pid)
        do("busy")  # detail in the ring before the trigger
        do("rare")

        def fired():
            rc, so, _ = run([a.ada, "status", session, "--json"])
            try:
                st = json.loads(so) if rc == 0 else {}
            except ValueError:
                return False
            # persisted: written to its end (the 0.1 s post-roll)
            return (st.get("windows") or {}).get("persisted", 0) >= 1
        wait_state("the symbol=rare_event window persisted (ada status)", fired)
        ada.send_signal(signal.SIGINT)
        _, err = ada.communicate(timeout=GUARD)
        err = line + err.decode(errors="replace")
        print(err)
        check(ada.returncode == 0, "ada attach exited %d:\n%s" % (ada.returncode, err))
        check(tracer_of(t.pid) == 0, "still traced after the detach")
        do("busy")  # runs on untraced
        t.stdin.write(b"quit\n")  # no answer: it exits
        t.stdin.close()
        check(t.wait(timeout=GUARD) == 0, "the target exited %r" % t.returncode)
    finally:
        for p in (ada, t):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    rc, so, se = run([a.ada, "validate", session])
    check(rc == 0, "validate %s: exit %d\n%s%s" % (session, rc, so, se))
    with open(os.path.join(session, "pid_%d" % t.pid, "manifest.json")) as f:
        m = json.load(f)
    check(m.get("attached") is True, "manifest: attached %r" % m.get("attached"))
    w = m.get("flight_recorder", {}).get("windows", [])
    check(len(w) == 1 and w[0]["trigger"] == "symbol=rare_event",
          "want one symbol=rare_event window: %s" % json.dumps(w)[:800])
    check(w[0].get("records", 0) > 0 and any(th.get("records", 0) > 0
                                             for th in w[0]["threads"]),
          "the window persisted no detail: %s" % json.dumps(w[0])[:800])
    rc, so, se = run([a.ada, "report", session, "--json"])
    check(rc == 0, "report: exit %d %s" % (rc, se))
    fns = {f["function"]: f["calls"] for f in json.loads(so)["processes"][0]["functions"]}
    check(fns.get("rare_event") == 1, "rare_event calls: %r" % fns.get("rare_event"))
    print("trigger: one window, %d detail records" % w[0]["records"])


def syms_status(session, pid, name):
    """The status of function name in the session's .syms files."""
    found = []
    for path in glob.glob(os.path.join(session, "pid_%d" % pid, "*.syms")):
        for line in syms_lines(path):
            w = line.split()
            if len(w) >= 6 and w[0] == "F" and w[5] == name:
                found.append(w[4])
    return found


def move_session(a, session, pid, calls):
    """A session of case move: the probe thread inside the prologue moved,
    the reader's restart left unpatched, move_probe's calls exact."""
    rc, so, se = run([a.ada, "validate", session])
    check(rc == 0, "validate %s: exit %d\n%s%s" % (session, rc, so, se))
    with open(os.path.join(session, "pid_%d" % pid, "manifest.json")) as f:
        m = json.load(f)
    hook = m.get("hook") or {}
    check(hook.get("moved_at_attach") == 1, "moved_at_attach %r" % hook.get("moved_at_attach"))
    check((hook.get("skipped") or {}).get("busy_at_attach", 0) >= 1,
          "busy_at_attach: %r" % hook.get("skipped"))
    st = syms_status(session, pid, "move_probe")
    check(st == ["hooked"], "move_probe: %r" % st)
    st = syms_status(session, pid, "busy_read")
    check(st == ["busy_at_attach"], "busy_read: %r" % st)
    rc, so, se = run([a.ada, "report", session, "--json"])
    check(rc == 0, "report: exit %d %s" % (rc, se))
    rep = json.loads(so)["processes"][0]
    fns = {f["function"]: f for f in rep["functions"]}
    probe = fns.get("move_probe") or {"calls": 0}
    check(probe.get("calls") == calls, "move_probe: %r, want %d calls" % (probe, calls))
    check("busy_read" not in fns, "busy_read recorded: %r" % fns.get("busy_read"))
    t_ = rep["totals"]
    check(t_["orphans"] == 0 and t_["unmatched_ends"] == 0, "unbalanced: %r" % t_)


def move_attach(a, out, pid):
    ada = subprocess.Popen([a.ada, "attach", str(pid), "--out", out] + ATTACH_OPTS,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    line = ada.stderr.readline().decode()
    check("attached to pid %d" % pid in line, "ada attach said %r (exit %r)" %
          (line, ada.poll()))
    return ada, line, line.rsplit(" ", 1)[-1].strip()


def move_end(ada, line):
    _, err = ada.communicate(timeout=GUARD)
    err = line + err.decode(errors="replace")
    print(err)
    check(ada.returncode == 0, "ada attach exited %d:\n%s" % (ada.returncode, err))


def case_move(a, work):
    if not a.move:
        raise Fail("no --move target")
    out = os.path.join(work, "out")
    t = subprocess.Popen([a.move], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    ada = None
    try:
        line = t.stdout.readline().decode()
        if line.startswith("skip:"):
            print("SKIP: " + line.strip())
            t.wait(timeout=GUARD)
            return SKIP
        check(line == "ready\n", "the target said %r" % line)
        # 1: the probe thread is moved; detached while it still waits.
        ada, line, s1 = move_attach(a, out, t.pid)
        ada.send_signal(signal.SIGINT)
        move_end(ada, line)
        check(tracer_of(t.pid) == 0, "still traced after the detach")
        # 2: a second probe thread inside the restored prologue; the kept
        # patch is applied again and that thread moved; then released.
        t.stdin.write(b"again\n")
        t.stdin.flush()
        line = t.stdout.readline().decode()
        check(line == "ready2\n", "the target said %r" % line)
        ada, line, s2 = move_attach(a, out, t.pid)
        out_, err_ = t.communicate(b"go\n", timeout=GUARD)
        move_end(ada, line)  # ends with the process
        check(t.returncode == 42 and "probe 2014\n" in out_.decode(),
              "the target exited %d:\n%s%s" % (t.returncode, out_.decode(), err_.decode()))
    finally:
        for p in (ada, t):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    move_session(a, s1, t.pid, 0)
    move_session(a, s2, t.pid, 2000)


def spawn_session(a, session, pid):
    rc, so, se = run([a.ada, "validate", session])
    check(rc == 0, "validate %s: exit %d\n%s%s" % (session, rc, so, se))
    rc, so, se = run([a.ada, "report", session, "--json", "--threads"])
    check(rc == 0, "report: exit %d %s" % (rc, se))
    rep = json.loads(so)["processes"][0]
    t = rep["totals"]
    check(t["orphans"] == 0 and t["unmatched_ends"] == 0, "unbalanced: %r" % t)
    per = [f["calls"] for f in rep["functions"] if f["function"] == "spawn_work"]
    check(per and max(per) == 100, "spawn_work calls per thread: %r" % per)
    return len(per)


def case_spawn(a, work):
    if not a.spawn:
        raise Fail("no --spawn target")
    out = os.path.join(work, "out")
    t = subprocess.Popen([a.spawn], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    found = []
    try:
        check(t.stdout.readline() == b"ready\n", "the spawning target did not start")
        for round_ in (1, 2, 3):
            rc, err, session = attach_until_workers(a.ada, t.pid, out)
            check(rc == 0, "attach %d: exit %d\n%s" % (round_, rc, err))
            check(tracer_of(t.pid) == 0, "still traced after the detach")
            found.append(spawn_session(a, session, t.pid))
        out_, err_ = t.communicate(b"stop\n", timeout=GUARD)
    finally:
        if t.poll() is None:
            t.kill()
            t.wait()
    check(t.returncode == 42, "the target exited %d: %r %r" % (t.returncode, out_, err_))
    print("spawn: %r threads with spawn_work calls per session; %s" %
          (found, out_.decode().strip()))


def case_loader_lock(a, work):
    if not a.lock or not a.lock_lib:
        raise Fail("no --lock / --lock-lib target")
    t = subprocess.Popen([a.lock, a.lock_lib], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        check(t.stdout.readline() == b"ready\n", "the loader-lock target did not start")
        refused(a, work, t.pid, ["did not return within 1.0 s", "lock dlopen needs",
                                 "runs on as it was"], ["--call-timeout", "1"])
        check(tracer_of(t.pid) == 0 and t.poll() is None, "the process was left traced")
        out_, err_ = t.communicate(b"go\n", timeout=GUARD)
    finally:
        if t.poll() is None:
            t.kill()
            t.wait()
    check(t.returncode == 42 and out_ == b"loaded ok\n",
          "the target exited %d: %r %r" % (t.returncode, out_, err_))


def refused(a, work, pid, words, extra=()):
    out = os.path.join(work, "out")
    rc, so, se = run([a.ada, "attach", str(pid), "--out", out] + list(extra))
    lines = [l for l in se.splitlines() if l.strip()]
    print("ada attach %d: exit %d: %r" % (pid, rc, lines))
    check(rc == 2, "exit %d, expected 2" % rc)
    check(len(lines) == 1, "not one sentence: %r" % lines)
    for w in words:
        check(w in lines[0], "%r does not say %r" % (lines[0], w))
    check(not sessions(out), "a session was left behind: %r" % sessions(out))


def thread_count(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def case_budget(a, work):
    """--overhead-budget under attach: the busy threads' short functions
    are moved to count-only while attached; the detach ends the budget's
    thread (the target is left with its own threads only) and the
    target runs on to its normal exit."""
    out = os.path.join(work, "out")
    t = Target(a.target)
    try:
        threads0 = thread_count(t.p.pid)
        moved = []

        def some_moved(st):
            moved[:] = st.get("hooks", {}).get("count_only", {}).get("moved_by_budget", [])
            return bool(moved)
        rc, err, session = attach_until(a.ada, t.p.pid, out,
                                        "a function moved to count-only by the budget",
                                        some_moved, ("--overhead-budget", "1"))
        check(rc == 0, "attach: exit %d\n%s" % (rc, err))
        check(tracer_of(t.p.pid) == 0, "still traced after the detach")
        wait_state("the budget thread gone after the detach",
                   lambda: thread_count(t.p.pid) == threads0)
        with open(os.path.join(session, "pid_%d" % t.p.pid, "manifest.json")) as f:
            man = json.load(f)
        fns = (man.get("count_only") or {}).get("functions", [])
        # (its counts after the move may be 0: the detach can come first)
        check(any(e.get("moved") == "budget" for e in fns),
              "manifest count_only after the detach: %r (live: %r)" % (fns, moved))
        rc, out_, err_ = t.finish()
    finally:
        t.kill()
    check(rc == 42, "the target exited %d:\n%s%s" % (rc, out_, err_))


def case_duration(a, work):
    out = os.path.join(work, "out")
    t = Target(a.target)
    try:
        t0 = time.monotonic()
        rc, _, err = run([a.ada, "attach", str(t.p.pid), "--out", out, "--duration", "1.5"])
        took = time.monotonic() - t0
        check(rc == 0, "attach --duration 1.5: exit %d\n%s" % (rc, err))
        m = re.search(r"attached to pid %d for ([0-9.]+) s" % t.p.pid, err)
        check(m and 1.5 <= float(m.group(1)) < GUARD / 2 and took >= 1.5,
              "--duration 1.5: the summary says %r, it took %.2f s:\n%s" % (
                  m and m.group(1), took, err))
        new = sessions(out)
        check(len(new) == 1, "sessions %r" % new)
        check(tracer_of(t.p.pid) == 0, "still traced after the detach")
        rc, out_, err_ = t.finish()
    finally:
        t.kill()
    check(rc == 42, "the target exited %d:\n%s%s" % (rc, out_, err_))
    # The session is read once the target has ended: its two busy threads
    # would take both CPUs from ada validate (and its recount at "go"
    # grows with every second it runs).
    rc, so, se = run([a.ada, "validate", new[0]])
    check(rc == 0, "validate %s: exit %d\n%s%s" % (new[0], rc, so, se))
    with open(os.path.join(new[0], "pid_%d" % t.p.pid, "manifest.json")) as f:
        man = json.load(f)
    check(man.get("attached") is True and man["exit"].get("detached") is True,
          "manifest: attached %r, exit %r" % (man.get("attached"), man.get("exit")))


def case_nopid(a, work):
    p = subprocess.Popen(["true"])
    p.wait()
    wait_state("the pid free", lambda: not os.path.exists("/proc/%d" % p.pid))
    refused(a, work, p.pid, ["no process has pid %d" % p.pid])


def case_traced(a, work):
    strace = shutil.which("strace")
    check(strace, "strace is not installed (tools/bootstrap.sh installs it)")
    s = subprocess.Popen([strace, "-o", os.devnull, a.target], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        check(s.stdout.readline() == b"ready\n", "the target under strace did not start")
        kids = open("/proc/%d/task/%d/children" % (s.pid, s.pid)).read().split()
        pid = int(kids[0])
        check(tracer_of(pid) == s.pid, "strace does not trace %d" % pid)
        refused(a, work, pid, ["already traced", "strace"])
        check(tracer_of(pid) == s.pid, "the target's tracer changed")
        out, _ = s.communicate(b"go\n", timeout=GUARD)
    finally:
        if s.poll() is None:
            s.kill()
            s.wait()
    check(s.returncode == 42, "the traced target exited %d" % s.returncode)


def case_static(a, work):
    if not a.static:
        print("SKIP: no static test program (libc.a missing)")
        return SKIP
    p = subprocess.Popen([a.static, "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        check(p.stdout.readline() == b"static binary ran\n", "static target did not start")
        refused(a, work, p.pid, ["statically linked", "dlopen"])
        check(tracer_of(p.pid) == 0, "left traced")
        p.stdin.close()
        p.wait(timeout=GUARD)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check(p.returncode == 0, "the static target exited %d" % p.returncode)


def case_otheruser(a, work):
    if os.geteuid() != 0:
        print("SKIP: needs root to create a throwaway user (running as uid %d)" % os.geteuid())
        return SKIP
    name = "adat" + uuid.uuid4().hex[:10]
    rc, _, se = run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", name])
    check(rc == 0, "useradd: %s" % se)
    uid = int(run(["id", "-u", name])[1])
    gid = int(run(["id", "-g", name])[1])

    def as_user():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    p = subprocess.Popen(["sleep", "300"], preexec_fn=as_user, stdout=subprocess.DEVNULL)
    try:
        refused(a, work, p.pid, ["runs as %s" % name, "sudo -u %s" % name])
        check(tracer_of(p.pid) == 0 and p.poll() is None, "the process was touched")
    finally:
        p.kill()
        p.wait()
        run(["userdel", name])


CASES = {"threads": case_threads, "trigger": case_trigger, "move": case_move,
         "spawn": case_spawn, "loader_lock": case_loader_lock,
         "nopid": case_nopid,
         "traced": case_traced, "static": case_static, "otheruser": case_otheruser,
         "duration": case_duration, "budget": case_budget}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--static")
    ap.add_argument("--control")
    ap.add_argument("--move")
    ap.add_argument("--spawn")
    ap.add_argument("--lock")
    ap.add_argument("--lock-lib")
    # More `ada attach` options for the threads and move cases (the index
    # lane's variants pass --detail never).
    ap.add_argument("--attach-opt", action="append", default=[])
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    ATTACH_OPTS.extend(a.attach_opt)
    work = os.path.join(os.path.abspath(a.work), a.case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.environ["XDG_CACHE_HOME"] = os.path.join(work, "cache")
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
