#!/usr/bin/env python3
"""ada serve (issue 36 item 4): the per-user control daemon, driven over its
socket as an IDE or an agent would (docs/control.md "ada serve").

One daemon in a private directory of the test's own: spawn a recording and
read its status, arm a trigger through `call`, stop it and find its
session finished with exact counts; diagnose answers what `ada diagnose
--json` says; bad params, unknown ids and the recordings' own methods
(not offered by the daemon itself) get JSON-RPC errors; a second daemon on
the same directory refuses; SIGTERM stops the recordings the daemon
started, and the daemon leaves no socket behind; a socket left by a killed
daemon is replaced. No timed assertions: waits are bounded polls.
"""
import argparse
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

TIMEOUT = 120


class Fail(Exception):
    pass


def poll(what, fn, limit=60):
    """fn() until it returns something true, at most limit seconds."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    raise Fail("timed out waiting for " + what)


class Daemon:
    def __init__(self, ada, d, out):
        self.ada, self.dir = ada, d
        self.p = subprocess.Popen([ada, "serve", "--dir", d, "--out", out],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
        self.sock = self.p.stdout.readline().strip()
        if not self.sock.endswith("/ctl/control.sock"):
            raise Fail("ada serve printed %r, stderr %r" % (self.sock, self.p.stderr.read()))
        self.n = 0

    def call(self, method, params=None):
        self.n += 1
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(TIMEOUT)
            s.connect(self.sock)
            s.sendall((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                   "params": params or {}}) + "\n").encode())
            return json.loads(s.makefile().readline())

    def ok(self, method, params=None):
        r = self.call(method, params)
        if "result" not in r:
            raise Fail("%s %r: %r" % (method, params, r))
        return r["result"]

    def error(self, code, method, params=None):
        r = self.call(method, params)
        if r.get("error", {}).get("code") != code:
            raise Fail("%s %r: want error %d, got %r" % (method, params, code, r))

    def stop(self, sig=signal.SIGTERM):
        self.p.send_signal(sig)
        try:
            return self.p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise Fail("ada serve did not stop on %s" % sig)


def recording_of(d, rid):
    return next(r for r in d.ok("list")["recordings"] if r["id"] == rid)


def ended(d, rid):
    return poll("recording %d to end" % rid,
                lambda: (lambda r: r if not r["running"] else None)(recording_of(d, rid)))


def counts(ada, session, fn):
    out = subprocess.run([ada, "report", "--json", "--function", fn, session],
                         capture_output=True, text=True, timeout=TIMEOUT).stdout
    return sum(f["calls"] for p in json.loads(out)["processes"] for f in p["functions"]
               if f["function"] == fn)


def check_spawn(ada, d, target):
    r = d.ok("spawn", {"program": [target, "100", "--counts"]})
    if not r["session"] or not r["session"].startswith("/"):
        raise Fail("spawn: no session directory in %r" % r)
    done = ended(d, r["id"])
    if done.get("exit_status") != 0:
        raise Fail("spawn: the recording ended %r; log:\n%s" % (done, open(done["log"]).read()))
    v = subprocess.run([ada, "validate", r["session"]], capture_output=True, text=True,
                       timeout=TIMEOUT)
    if v.returncode != 0:
        raise Fail("spawn: ada validate %s: exit %d\n%s" % (r["session"], v.returncode,
                                                          v.stdout[-2000:] + v.stderr[-500:]))
    with open(done["log"]) as f:  # the program's output goes to the log too
        own = {w[1]: int(w[2]) for w in (l.split() for l in f) if len(w) == 6 and w[0] == "total"}
    for fn in ("recurse", "fib", "is_odd"):
        n = counts(ada, r["session"], fn)
        if not own.get(fn) or n != own[fn]:
            raise Fail("spawn: %s called %d times in %s, the program counted %r" %
                       (fn, n, r["session"], own.get(fn)))


def check_live(d):
    """A long-running program: status while it runs, a trigger armed
    through call, then stop, which ends the program and the recording."""
    r = d.ok("spawn", {"program": ["/bin/sleep", "1000"], "options": ["--trigger", "manual"]})
    poll("the program to start under ada",
         lambda: glob.glob(os.path.join(r["session"], "pid_*", "manifest.json")))
    st = d.ok("status", {"id": r["id"]})
    if not st["running"] or "events" not in st.get("status", {}):
        raise Fail("status of a running recording: %r" % st)
    armed = d.ok("call", {"id": r["id"], "method": "arm",
                          "params": {"trigger": "symbol=nanosleep"}})
    if armed.get("trigger") != "symbol=nanosleep":
        raise Fail("call arm: %r" % armed)
    listed = d.ok("call", {"id": r["id"], "method": "list_triggers"})
    if "symbol=nanosleep" not in json.dumps(listed):
        raise Fail("call list_triggers: %r" % listed)
    if d.ok("stop", {"id": r["id"]}) != {"stopping": True}:
        raise Fail("stop did not signal the recording")
    done = ended(d, r["id"])
    if not glob.glob(os.path.join(r["session"], "pid_*", "manifest.json")):
        raise Fail("stop: no manifest in %s (%r)" % (r["session"], done))


def libc_mapped(pid):
    try:
        with open("/proc/%d/maps" % pid) as f:
            return "/libc.so" in f.read()
    except OSError:
        return False


def check_attach(d):
    """attach to a running process, then stop: ada attach detaches and the
    process runs on; its manifest says detached."""
    p = subprocess.Popen(["/bin/sleep", "1000"])
    try:
        # Popen returns after the fork: attach once the loader has mapped
        # libc (before that, ada attach rightly finds no dlopen to use).
        poll("the sleep's libc mapped", lambda: libc_mapped(p.pid))
        r = d.ok("attach", {"pid": p.pid})
        if r["kind"] != "attach" or r["target"] != p.pid or not r["session"]:
            raise Fail("attach: %r" % r)
        man = os.path.join(r["session"], "pid_%d" % p.pid, "manifest.json")
        poll("the attached process's manifest", lambda: os.path.exists(man))
        poll("ada attach to have hooked", lambda: d.ok("status", {"id": r["id"]})
             .get("status", {}).get("hooks", {}).get("installed", 0) > 0)
        d.ok("stop", {"id": r["id"]})
        done = ended(d, r["id"])
        with open(man) as f:
            ex = json.load(f).get("exit", {})
        if done.get("exit_status") != 0 or not ex.get("detached") or p.poll() is not None:
            raise Fail("detach: ada attach ended %r, manifest exit %r, the process %s" %
                       (done, ex, "runs on" if p.poll() is None else "died"))
    finally:
        p.kill()
        p.wait()


def check_other_user(ada, d):
    """Another user cannot use the daemon: its directory is private, and the
    server would refuse the peer too (SO_PEERCRED)."""
    if os.geteuid() != 0:
        return  # no second user can be made
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from second_user import SecondUser  # noqa: E402
    probe = ("import json,socket,sys\n"
             "s=socket.socket(socket.AF_UNIX)\n"
             "try:\n"
             "    s.connect(sys.argv[1])\n"
             "    s.sendall(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"spawn\",'\n"
             "              b'\"params\":{\"program\":[\"/bin/true\"]}}\\n')\n"
             "    print(s.makefile().readline())\n"
             "except OSError as e:\n"
             "    print('refused', e)\n")
    before = len(d.ok("list")["recordings"])
    with SecondUser("adas", [ada]) as u:
        # the system's python: another user may not reach this one's
        py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        p = subprocess.run([py, "-c", probe, d.sock], capture_output=True,
                           text=True, timeout=TIMEOUT, preexec_fn=u.become)
    out = p.stdout.strip()
    if not (out.startswith("refused") or "permission denied" in out) or '"result"' in out:
        raise Fail("another user reached the daemon: %r %r" % (out, p.stderr[-300:]))
    if len(d.ok("list")["recordings"]) != before:
        raise Fail("another user's request started a recording")


def check_diagnose(ada, d, target):
    got = d.ok("diagnose", {"path": target})
    want = json.loads(subprocess.run([ada, "diagnose", target, "--json", "--out", d.dir],
                                     capture_output=True, text=True, timeout=TIMEOUT).stdout)
    strip = lambda doc: [(c["id"], c["status"]) for c in doc["checks"]]
    if strip(got) != strip(want):
        raise Fail("diagnose: %r, ada diagnose --json says %r" % (strip(got), strip(want)))


def check_errors(d):
    d.error(-32602, "spawn", {"program": "/bin/true"})
    d.error(-32602, "spawn", {"program": ["/bin/true"], "options": [1]})
    d.error(-32602, "spawn", {"program": ["/bin/true"], "out": "relative/dir"})
    d.error(-32602, "status", {"id": 999})
    d.error(-32602, "attach", {"pid": -1})
    d.error(-32602, "diagnose", {})
    d.error(-32601, "arm", {"trigger": "manual"})  # a recording's method, not the daemon's
    d.error(-32601, "no_such_method")
    r = d.ok("spawn", {"program": ["/nonexistent/program"]})
    if ended(d, r["id"]).get("exit_status") != 127:
        raise Fail("a missing program: %r" % recording_of(d, r["id"]))


def check_second(ada, d):
    p = subprocess.run([ada, "serve", "--dir", d.dir], capture_output=True, text=True,
                       timeout=TIMEOUT)
    if p.returncode != 1 or "already running" not in p.stderr:
        raise Fail("a second daemon: rc %d, %r" % (p.returncode, p.stderr))


def check_term(ada, d):
    """SIGTERM: the daemon stops what it started, then removes its socket."""
    r = d.ok("spawn", {"program": ["/bin/sleep", "1000"]})
    man = os.path.join(r["session"], "pid_*", "manifest.json")
    poll("the program to start under ada", lambda: glob.glob(man))
    rc = d.stop()
    if rc != 0 or os.path.exists(d.sock):
        raise Fail("SIGTERM: rc %d, socket left: %s" % (rc, os.path.exists(d.sock)))
    if not glob.glob(os.path.join(r["session"], "pid_*", "manifest.json")):
        raise Fail("SIGTERM: the recording it started has no manifest in " + r["session"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target", required=True, help="t_recursion_O0")
    a = ap.parse_args()
    work = os.path.join(a.work, "serve")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work, mode=0o700)
    d = None
    try:
        d = Daemon(a.ada, os.path.join(work, "d"), os.path.join(work, "out"))
        check_spawn(a.ada, d, a.target)
        check_live(d)
        check_attach(d)
        check_other_user(a.ada, d)
        check_diagnose(a.ada, d, a.target)
        check_errors(d)
        check_second(a.ada, d)
        check_term(a.ada, d)
        # A daemon killed outright leaves its socket; the next one replaces it.
        d = Daemon(a.ada, os.path.join(work, "d"), os.path.join(work, "out"))
        d.stop(signal.SIGKILL)
        d = Daemon(a.ada, os.path.join(work, "d"), os.path.join(work, "out"))
        d.ok("list")
        d.stop()
        d = None
    except Fail as e:
        print("serve_test: FAIL: %s" % e, file=sys.stderr)
        return 1
    finally:
        if d and d.p.poll() is None:
            os.killpg(d.p.pid, signal.SIGKILL)
        subprocess.run(["pkill", "-KILL", "-f", "^/bin/sleep 1000$"], check=False)
    shutil.rmtree(work, ignore_errors=True)
    print("serve_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
