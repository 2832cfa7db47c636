#!/usr/bin/env python3
"""Private, link-proof files end to end (issue 12 item 2; src/fs/fs.h).

  private_test.py --ada ADA --work DIR CASE

  modes    record (and recover) under umask 000: every directory of the
           session and of the plan cache is 0700, every file 0600.
  planted  symlinks planted at the names ada creates -- the old fixed
           temporary names, manifest.json, the pid_N directories of the
           children to come, the plan-cache files -- are never written
           through: each link's target is unchanged afterwards.
  threads  a threaded child gets a pid_N planted with .ring_slots a link
           (replaced, not followed), thread_0/.ring_base a link (a name the
           drain no longer writes: not followed), thread_1 a link (refused,
           told), thread_2/index.atf a link (refused, told).
  loop     a loop of five links and links to "." inside a session:
           validate, dump, recover and status finish at once and say they skipped
           them; recover writes through none.
  root     (root only) a throwaway user owns or can write an --out
           directory, a session, a HOME with a plan cache: ada refuses each
           with one sentence and a non-zero exit. Not root: exit 77 after
           printing why.

Exit 0 = pass, 1 = fail (the work directory is kept and printed), 77 = skip.
"""
import argparse
import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid

SKIP = 77
TIMEOUT = 60
FAST = 10  # a walk over a loop of links must end well within this


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(cmd, env=None, timeout=TIMEOUT, umask=None):
    def pre():
        if umask is not None:
            os.umask(umask)
    try:
        p = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, preexec_fn=pre)
    except subprocess.TimeoutExpired:
        raise Fail("timed out after %ds: %s" % (timeout, " ".join(cmd)))
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def base_env(work):
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = os.path.join(work, "cache")
    return env


def record(ada, out, argv, env, umask=None, ok=True):
    rc, so, se = run([ada, "record", "--out", out, "--"] + argv, env=env, umask=umask)
    if ok:
        check(rc == 0, "ada record %s: exit %d\n%s" % (argv, rc, se))
    sessions = sorted(glob.glob(os.path.join(out, "session_*")))
    return rc, se, sessions[-1] if sessions else None


def modes_of(root):
    """(path, mode, kind) of everything under root, links not followed."""
    out = []
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out.append((p, stat.S_IMODE(st.st_mode), stat.S_IFMT(st.st_mode)))
    return out


def check_private(root, what):
    bad = []
    for p, m, k in modes_of(root):
        want = 0o700 if k == stat.S_IFDIR else 0o600
        if k in (stat.S_IFDIR, stat.S_IFREG) and m != want:
            bad.append("%s %o (want %o)" % (p, m, want))
    check(not bad, "%s not private:\n  %s" % (what, "\n  ".join(bad[:20])))
    st = os.lstat(root)
    check(stat.S_IMODE(st.st_mode) == 0o700, "%s itself is %o" % (root, stat.S_IMODE(st.st_mode)))


def case_modes(ada, work):
    env = base_env(work)
    out = os.path.join(work, "out")
    # Twice: a plan-cache miss writes the cache, a hit reads it back.
    for _ in range(2):
        _, _, session = record(ada, out, ["/bin/sh", "-c", "/bin/true; echo x >/dev/null"], env,
                               umask=0)
    check(session and glob.glob(os.path.join(session, "pid_*", "*.syms")),
          "no .syms files in %s" % session)
    check_private(session, "the session")
    plans = os.path.join(work, "cache", "ada", "plans")
    check(glob.glob(os.path.join(plans, "*.plan")), "no plan-cache file under %s" % plans)
    check_private(os.path.join(work, "cache"), "the plan cache")
    rc, _, se = run([ada, "recover", session], umask=0)
    check(rc == 0, "ada recover: exit %d\n%s" % (rc, se))
    check_private(session, "the recovered session")
    n = len(modes_of(session))
    print("modes: %d entries of the session and the cache are 0700/0600 under umask 000" % n)


VICTIM_TEXT = "victim: must stay as it is\n"


def victims(work):
    vf = os.path.join(work, "victim.txt")
    vd = os.path.join(work, "victim_dir")
    with open(vf, "w") as f:
        f.write(VICTIM_TEXT)
    os.mkdir(vd)
    return vf, vd


def check_victims(vf, vd):
    with open(vf) as f:
        check(f.read() == VICTIM_TEXT, "ada wrote through a link into %s" % vf)
    check(os.listdir(vd) == [], "ada wrote through a link into %s: %s" % (vd, os.listdir(vd)))


# The recorded program waits on a FIFO while the test plants links in its
# pid_N and at the pid_N names of the children it then starts.
WAIT = 'read x < "$FIFO"; /bin/true; /bin/true; /bin/true'
PLANTED_NAMES = ("manifest.json.tmp", "agent.json.tmp", "manifest.json", ".ring_base.tmp",
                 "module_1.syms", "module_1.body")
PID_LINKS = 2000


def pid_namespace_works():
    """A pid namespace of its own makes the children's pids certain: ada is
    1, the shell 2, its children the next ones. unshare needs root or user
    namespaces; without it the pids are guessed from the kernel's last."""
    if not shutil.which("unshare"):
        return False
    try:
        return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=TIMEOUT).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def child_pids(pid_dir, ns):
    """The pids the shell's children will get (wrapping at pid_max)."""
    if ns:
        first, count = int(os.path.basename(pid_dir)[4:]) + 1, 200
    else:
        print("no pid namespace (unshare): guessing the children's pids after ns_last_pid")
        with open("/proc/sys/kernel/ns_last_pid") as f:
            first, count = int(f.read()) + 1, PID_LINKS
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    return [n if n < pid_max else 300 + n % pid_max for n in range(first, first + count)]


def plant_pid_links(session, pids, vf, vd):
    for n in pids:
        try:
            os.symlink(vd, os.path.join(session, "pid_%d" % n))
        except FileExistsError:
            pass


def plant_while_waiting(ada, out, env, vf, vd, plant=plant_pid_links, wait=WAIT):
    """Records wait; plants links once its pid_N shows (in it, and with
    plant at the children's pids); returns (rc, stderr, session)."""
    fifo = env["FIFO"]
    os.mkfifo(fifo)
    ns = pid_namespace_works()
    prefix = ["unshare", "--pid", "--fork", "--mount-proc"] if ns else []
    p = subprocess.Popen(prefix + [ada, "record", "--out", out, "--", "/bin/sh", "-c", wait], env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + TIMEOUT
        pid_dirs = []
        while not pid_dirs and time.monotonic() < deadline:
            pid_dirs = glob.glob(os.path.join(out, "session_*", "pid_*", "agent.json"))
            time.sleep(0.05)
        check(pid_dirs, "the recorded shell never wrote its agent.json")
        pid_dir = os.path.dirname(pid_dirs[0])
        session = os.path.dirname(pid_dir)
        for n in PLANTED_NAMES:
            if os.path.lexists(os.path.join(pid_dir, n)):
                os.unlink(os.path.join(pid_dir, n))
            os.symlink(vf, os.path.join(pid_dir, n))
        plant(session, child_pids(pid_dir, ns), vf, vd)
        with open(fifo, "w") as f:
            f.write("go\n")
        _, se = p.communicate(timeout=TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, se.decode(errors="replace"), session


def case_planted(ada, work):
    vf, vd = victims(work)
    env = base_env(work)
    env["FIFO"] = os.path.join(work, "fifo")
    out = os.path.join(work, "out")
    rc, se, session = plant_while_waiting(ada, out, env, vf, vd)
    check_victims(vf, vd)
    # At least one child met a planted pid_N: the recorder refuses it and
    # says so (its exit status stays the program's); otherwise the test
    # proved nothing about them.
    check("a symbolic link, not a directory of ada's" in se,
          "no child met a planted pid_N link, or it went untold (exit %d):\n%s" %
          (rc, se[-1500:]))
    check(rc == 0, "ada record exited %d: its status is the program's (0) whatever "
          "happened to the recording" % rc)
    pid_dirs = [p for p in glob.glob(os.path.join(session, "pid_*")) if not os.path.islink(p)]
    check(pid_dirs, "no pid directory of ada's own in %s" % session)
    for p in pid_dirs:
        m = os.path.join(p, "manifest.json")
        if os.path.lexists(m):
            check(not os.path.islink(m), "%s is still the planted link" % m)
    # The plan cache: replace each file with a link to the victim; the next
    # run reads none of them (counted untrusted) and replaces the links.
    plans = glob.glob(os.path.join(work, "cache", "ada", "plans", "*.plan"))
    check(plans, "no plan-cache file was written")
    for f in plans:
        os.unlink(f)
        os.symlink(vf, f)
    _, se, session = record(ada, out, ["/bin/true"], env)
    check_victims(vf, vd)
    agent = glob.glob(os.path.join(session, "pid_*", "agent.json"))
    check(agent, "no agent.json in %s" % session)
    with open(agent[0]) as f:
        pc = json.load(f).get("plan_cache", {})
    check(pc.get("untrusted", 0) >= 1, "planted plan-cache links not counted: %s" % pc)
    # Ignored, not removed: a file that is not ours is not ours to delete.
    print("planted: pid_N links for the children, %d links in pid_N, %d plan-cache links: "
          "no target written; plan_cache.untrusted=%d" % (len(PLANTED_NAMES), len(plans),
                                                          pc["untrusted"]))


# In each pid_N a child may get: a link at .ring_slots (the drain replaces
# it), thread_0 with a link at .ring_base (the name older drains wrote: never
# followed), thread_1 a link to a directory (refused), thread_2 with a link
# at index.atf (refused: O_EXCL).
def plant_thread_dirs(session, pids, vf, vd):
    for n in pids:
        d = os.path.join(session, "pid_%d" % n)
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue
        os.symlink(vf, os.path.join(d, ".ring_slots"))
        os.mkdir(os.path.join(d, "thread_0"), 0o700)
        os.symlink(vf, os.path.join(d, "thread_0", ".ring_base"))
        os.symlink(vd, os.path.join(d, "thread_1"))
        os.mkdir(os.path.join(d, "thread_2"), 0o700)
        os.symlink(vf, os.path.join(d, "thread_2", "index.atf"))


def case_threads(ada, work, threads_prog):
    vf, vd = victims(work)
    env = base_env(work)
    env["FIFO"] = os.path.join(work, "fifo")
    env["PROG"] = threads_prog
    out = os.path.join(work, "out")
    rc, se, session = plant_while_waiting(ada, out, env, vf, vd, plant_thread_dirs,
                                          wait='read x < "$FIFO"; "$PROG" >/dev/null')
    check_victims(vf, vd)
    used = [os.path.dirname(m) for m in glob.glob(os.path.join(session, "pid_*", "manifest.json"))
            if os.path.islink(os.path.join(os.path.dirname(m), "thread_1"))]
    check(used, "the threaded child did not get a planted pid_N (exit %d):\n%s" % (rc, se[-1500:]))
    d = used[0]
    check(not os.path.islink(os.path.join(d, ".ring_slots")),
          "the planted .ring_slots link is still there")
    check(os.path.islink(os.path.join(d, "thread_2", "index.atf")),
          "the planted index.atf link was replaced")
    for what in ("a symbolic link, not a directory of ada's",
                 "index.atf is already there"):
        check(what in se, "the recorder did not say '%s':\n%s" % (what, se[-1500:]))
    check(rc == 0, "ada record exited %d: its status is the program's (0) whatever "
          "happened to the recording (the lost threads are said above)" % rc)
    print("threads: planted .ring_slots replaced, thread_1 link and thread_2/index.atf "
          "link refused and told; no target written")


def case_loop(ada, work):
    vf, vd = victims(work)
    env = base_env(work)
    out = os.path.join(work, "out")
    _, _, session = record(ada, out, ["/bin/true"], env)
    pid = glob.glob(os.path.join(session, "pid_*"))[0]
    loop = [os.path.join(session, "loop%d" % i) for i in range(5)]
    for i in range(5):
        os.symlink(loop[(i + 1) % 5], loop[i])
    os.symlink("loop0", os.path.join(session, "pid_424242"))
    os.symlink(".", os.path.join(pid, "thread_77"))
    # Where a reader looks for module tables: pid_N/ itself, and the
    # modules/ of sessions recorded before the files moved up.
    os.symlink("..", os.path.join(pid, "modules"))
    os.symlink(vf, os.path.join(pid, "module_99.syms"))
    os.symlink(vf, os.path.join(pid, "module_99.body"))
    for cmd in (["validate", session], ["dump", session], ["recover", session],
                ["status", session]):
        rc, so, se = run([ada] + cmd, timeout=FAST)
        check(rc == 0, "ada %s: exit %d\n%s" % (cmd[0], rc, se[-800:]))
        check("skipped" in se and "symbolic link" in se,
              "ada %s did not say it skipped the links:\n%s" % (cmd[0], se[-800:]))
    # Links where recover reads or writes: an index generation, .ring_base
    # and .ring_slots.
    thr = glob.glob(os.path.join(pid, "thread_[0-9]"))[0]
    os.symlink(vf, os.path.join(thr, "index.g9.atf"))
    os.symlink(vd, os.path.join(thr, ".ring_base"))
    os.symlink(vf, os.path.join(pid, ".ring_slots"))
    rc, so, se = run([ada, "recover", session], timeout=FAST)
    check(rc == 0 and "skipped" in se, "ada recover: exit %d\n%s" % (rc, se[-800:]))
    check_victims(vf, vd)
    check(os.path.islink(os.path.join(thr, "index.g9.atf")), "recover replaced a link")
    # validate names the planted index link as an error, without reading it.
    rc, so, se = run([ada, "validate", session], timeout=FAST)
    check(rc != 0 and "index.g9.atf" in so + se and "symbolic links" in so + se,
          "ada validate did not report the planted index link:\n%s%s" % (so, se))
    print("loop: validate, dump, recover and status finished within %ds and said they skipped the "
          "links; no link target written" % FAST)


# ---- root ----

def throwaway_user():
    """A new user (useradd, unique name); (name, uid)."""
    name = "adat" + uuid.uuid4().hex[:10]
    rc, _, se = run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", name])
    check(rc == 0, "useradd %s failed: %s" % (name, se))
    rc, so, _ = run(["id", "-u", name])
    return name, int(so.strip())


def refused(ada, argv, env, what):
    rc, so, se = run([ada] + argv, env=env)
    check(rc != 0, "root was not refused %s: exit 0\n%s" % (what, se))
    lines = [l for l in se.splitlines() if l.strip()]
    check(len(lines) == 1 and "refusing to write" in lines[0] and
          "another user" in lines[0], "%s: not one sentence saying why:\n%s" % (what, se))
    print("root refuses %s: %s" % (what, lines[0]))


def case_root(ada, work):
    if os.geteuid() != 0:
        print("SKIP: the root refusals need root (running as uid %d)" % os.geteuid())
        return SKIP
    name, uid = throwaway_user()
    try:
        env = base_env(work)
        os.chmod(work, 0o755)  # the throwaway user must reach its directories
        # An --out owned by the user, and one writable by everyone.
        owned = os.path.join(work, "user_out")
        os.mkdir(owned)
        os.chown(owned, uid, -1)
        refused(ada, ["record", "--out", os.path.join(owned, "t"), "--", "/bin/true"], env,
                "an --out directory another user owns")
        check(not os.listdir(owned), "a session was created under %s" % owned)
        open_dir = os.path.join(work, "open_out")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        refused(ada, ["record", "--out", open_dir, "--", "/bin/true"], env,
                "an --out directory writable by others")
        # A session the user owns.
        out = os.path.join(work, "out")
        _, _, session = record(ada, out, ["/bin/true"], env)
        for d, dirs, files in os.walk(session):
            for n in [d] + [os.path.join(d, f) for f in files]:
                os.chown(n, uid, -1)
        refused(ada, ["recover", session], env, "a session another user owns")
        # A HOME (as sudo -E passes it) with a plan cache of the user's.
        home = os.path.join(work, "home")
        os.makedirs(os.path.join(home, ".cache", "ada", "plans"))
        for d, _, _ in os.walk(home):
            os.chown(d, uid, -1)
        henv = dict(os.environ)
        henv.pop("XDG_CACHE_HOME", None)
        henv["HOME"] = home
        refused(ada, ["record", "--out", out, "--", "/bin/true"], henv,
                "a HOME another user owns (plan cache)")
    finally:
        rc, _, se = run(["userdel", name])
        if rc != 0:
            print("warning: userdel %s failed: %s" % (name, se))
    return 0


CASES = {"modes": case_modes, "planted": case_planted, "threads": case_threads,
         "loop": case_loop, "root": case_root}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--threads", help="a program that starts several threads (t_threads)")
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    work = tempfile.mkdtemp(prefix="private_%s_" % a.case, dir=os.path.abspath(a.work))
    try:
        if a.case == "threads":
            rc = case_threads(os.path.abspath(a.ada), work, os.path.abspath(a.threads))
        else:
            rc = CASES[a.case](os.path.abspath(a.ada), work) or 0
    except Fail as e:
        print("FAIL private %s: %s\n(work directory kept: %s)" % (a.case, e, work))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
