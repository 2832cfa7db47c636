#!/usr/bin/env python3
"""Programs run under ada exactly as without it (issue 14).

    transp_test.py --ada ADA --work DIR CASE -- PROGRAM ARGS...

Every case runs the program untraced and under `ada record` and wants the
same exit status and the same stdout; then checks what the case is about
in the session's pid_*/agent.json (the agent's counts) and the summary
line. Cases:
  nocfi      an assembly function without an .eh_frame FDE that moves its
             return address: skipped as no_unwind_info, nothing resynced
  resync     the same function with CFI, so hooked: the unmatched return
             is resynchronised (never an abort), the thread stops being
             traced, and that is counted
  slots_full more live threads than the thread limit (--record-opt
             --thread-limit N): the program runs as without ada (no wait
             for ever) and the loss is counted
  exact      --calls FN=N: the trace has exactly N calls and returns of FN
             and no index-lane drop or lost event, and each manifest's
             sums (index bytes and events, ring waits, lost events) are
             its threads' entries added up (--record-opt passes ada
             record options; --max-shm-mb bounds the shared memory's peak)
  nginx      Debian's nginx, master and one worker from a private prefix on
             a free port, serves 100 requests and stops on SIGQUIT; the
             session validates, ngx_http_process_request 100 times
  greenlet   Debian's python3-greenlet: 2000 switches and a throw into a
             greenlet, the same output; switches counted, nothing unmatched
  gevent     Debian's python3-gevent: a StreamServer and 20 clients
  node       Debian's nodejs: node -e with a caught exception and two
             worker threads, the same output, nothing resynchronised
  sigdisp, sigforward, nohup
             signals as `env` or `time` would pass them
  noshebang  an executable text file without #! runs with /bin/sh
  program_exec  the manifest's program follows exec
  recorder_killed  the recorder SIGKILLed half way: the program runs on to
             the same output; agent.json counts the events dropped and
             the calls untraced; `ada recover` then finds two
             recorder_gone drops for each of those calls (and `ada status`
             says them)
  raw_exec   a raw execve system call with an environment of its own:
             the new image runs untraced and ada says so
  leftover   a background child left running: ada says so and finalizes
             (leftover_interrupt: after two SIGINTs to the group)
  home       HOME and the working directory are a fresh directory each
             (no .cache, as in a git work tree used as HOME): the program
             lists them the same under ada, and both hold after the run
             exactly what they held before (issue 34: the plan cache
             stays where ada says, never in the program's HOME)
A case whose Debian package is missing skips (exit 77) and says which.
Each run is under a generous timeout (a run-away guard, never a
synchronisation); the work directory is removed even on failure.
"""
import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from syms_files import syms_lines  # noqa: E402  (beside this file)

TIMEOUT = 120


class Fail(Exception):
    pass


def run(cmd, env=None, cwd=None):
    """Runs cmd in a session of its own: a run-away is killed with every
    process it started (ada and its program), so nothing is left running."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         cwd=cwd, start_new_session=True)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise Fail("run-away: %s did not finish in %d s" % (" ".join(cmd), TIMEOUT))
    return p.returncode, out, err.decode(errors="replace")


def shm_cleanup(work):
    """The arena directories named by the manifests under work, when a
    failed run left them in /dev/shm (ada removes them itself otherwise)."""
    for m in glob.glob(os.path.join(work, "*", "session_*", "pid_*", "manifest.json")):
        try:
            with open(m) as f:
                d = json.load(f).get("arena_dir") or ""
        except (OSError, ValueError):
            continue
        if os.path.dirname(d) == "/dev/shm" and os.path.basename(d).startswith("ada-"):
            shutil.rmtree(d, ignore_errors=True)


def record(ada, work, argv, opts=()):
    out = os.path.join(work, "out")
    rc, so, se = run([ada, "record", "--out", out] + list(opts) + ["--"] + argv)
    sessions = glob.glob(os.path.join(out, "session_*"))
    if len(sessions) != 1:
        raise Fail("expected one session under %s, found %r; stderr:\n%s" % (out, sessions, se))
    return rc, so, se, sessions[0]


def same_behaviour(ada, work, argv, opts=()):
    rc0, out0, err0 = run(argv)
    rc1, out1, err1, session = record(ada, work, argv, opts)
    if rc1 != rc0:
        raise Fail("exit status: untraced %d, under ada %d; stderr:\n%s" % (rc0, rc1, err1))
    if out1 != out0:
        raise Fail("stdout differs: untraced %r, under ada %r" % (out0[:300], out1[:300]))
    if "ada-agent:" in err1 and "cannot continue" in err1:
        raise Fail("the agent gave up:\n%s" % err1)
    v = subprocess.run([ada, "validate", session], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=TIMEOUT)
    if v.returncode != 0:
        raise Fail("ada validate %s failed:\n%s" % (session, v.stdout.decode(errors="replace")))
    return session, err1


def agent_json(session):
    files = glob.glob(os.path.join(session, "pid_*", "agent.json"))
    if len(files) != 1:
        raise Fail("expected one pid_*/agent.json in %s, found %r" % (session, files))
    with open(files[0]) as f:
        return json.load(f)


def syms_status(session, name):
    for path in glob.glob(os.path.join(session, "pid_*", "*.syms")):
        for line in syms_lines(path):
            w = line.split()
            if len(w) >= 6 and w[0] == "F" and w[5] == name:
                return w[4]
    raise Fail("%s is in no module_*.syms of %s" % (name, session))


def case_linkname(args, work):
    """A program started through a symbolic link (Debian's redis-server is a
    link to redis-check-rdb) is named by the link it was started as, in the
    manifest's modules and agent.json, not by the file the link leads to;
    started by its own name, by its own."""
    link = os.path.join(work, "by-another-name")
    os.symlink(os.path.abspath(args.argv[0]), link)
    for argv0, want in ((link, link), (args.argv[0], os.path.realpath(args.argv[0]))):
        session, _ = same_behaviour(args.ada, os.path.join(work, str(len(want))),
                                    [argv0] + args.argv[1:])
        with open(glob.glob(os.path.join(session, "pid_*", "manifest.json"))[0]) as f:
            mods = json.load(f).get("modules") or [{}]
        if mods[0].get("path") != want:
            raise Fail("started as %s: the manifest names the program %r, want %r" %
                       (argv0, mods[0].get("path"), want))
        agent = agent_json(session)
        paths = [m.get("path") for m in agent.get("modules", [])]
        if want not in paths:
            raise Fail("started as %s: agent.json's modules %r lack %r" % (argv0, paths, want))


def case_nocfi(args, work):
    session, _ = same_behaviour(args.ada, work, args.argv)
    st = syms_status(session, "nonc_shift_nocfi")
    if st != "no_unwind_info":
        raise Fail("nonc_shift_nocfi has no FDE, yet its status is %s" % st)
    if syms_status(session, "c_work") != "hooked":
        raise Fail("c_work (ordinary C, with an FDE) is not hooked")
    a = agent_json(session)
    if a["unmatched_returns"]["returns"] != 0:
        raise Fail("returns were resynchronised although nothing non-C was hooked: %r"
                   % a["unmatched_returns"])
    if a["skipped"].get("no_unwind_info", 0) < 1:
        raise Fail("agent.json counts no no_unwind_info skip: %r" % a["skipped"])


def case_resync(args, work):
    session, err = same_behaviour(args.ada, work, args.argv)
    if "calls were not traced" not in err or "no frame matched" not in err:
        raise Fail("the summary does not tell the calls left untraced:\n%s" % err)
    if syms_status(session, "nonc_shift_cfi") != "hooked":
        raise Fail("nonc_shift_cfi declares CFI and should have been hooked")
    a = agent_json(session)
    u = a["unmatched_returns"]
    if u != {"returns": 1, "threads_stopped": 1}:
        raise Fail("want one unmatched return that stopped one thread, got %r" % u)
    # After the stop, at least the 99 later calls of each of nonc_shift_cfi
    # and c_work went untraced, counted.
    n = a["untraced_calls"]["unmatched_return"]
    if n < 198:
        raise Fail("untraced_calls.unmatched_return is %d, want >= 198" % n)


def case_resync_fork(args, work):
    """The parent stops tracing its thread (one unmatched return), counting
    the calls it no longer records, then forks: the child's agent.json
    counts only the child's own calls left untraced (it inherits the
    stopped thread), none of the parent's, so the summary's sums over
    processes count each call once."""
    session, err = same_behaviour(args.ada, work, args.argv)
    by_pid = {}
    for path in glob.glob(os.path.join(session, "pid_*", "agent.json")):
        with open(path) as f:
            by_pid[int(os.path.basename(os.path.dirname(path))[4:])] = json.load(f)
    if len(by_pid) != 2:
        raise Fail("expected two pid_*/agent.json (parent, child), found %d" % len(by_pid))
    # Not by pid order (pids wrap: pid_max is 32 768 on small machines
    # and the suite makes tens of thousands): the forked child links its
    # parent's symbol files instead of writing them.
    parent, child = sorted(by_pid.values(), key=lambda a: a["symbol_files"]["shared"] > 0)
    if parent["symbol_files"]["shared"] or not child["symbol_files"]["shared"]:
        raise Fail("cannot tell the parent from the child by their symbol files: %r"
                   % [a["symbol_files"] for a in by_pid.values()])
    if parent["unmatched_returns"] != {"returns": 1, "threads_stopped": 1}:
        raise Fail("parent: want one unmatched return that stopped one thread, got %r"
                   % parent["unmatched_returns"])
    if child["unmatched_returns"] != {"returns": 0, "threads_stopped": 0}:
        raise Fail("child: the parent's unmatched return counted again: %r"
                   % child["unmatched_returns"])
    pn, cn = (a["untraced_calls"]["unmatched_return"] for a in (parent, child))
    # The parent: at least 99 later calls each of nonc_shift_cfi and c_work
    # before the fork; the child, whose thread stays stopped, its 10 calls
    # of c_work at least (and every libc call, the agent's own too).
    if pn < 198 or cn < 10:
        raise Fail("untraced_calls.unmatched_return: parent %d (want >= 198), child %d "
                   "(want >= 10)" % (pn, cn))
    # The parent's start-up work (hooking, its files: tens of thousands of
    # libc calls) is its own; the child inherited the count before.
    pw, cw = (a["untraced_calls"]["agent_work"] for a in (parent, child))
    if cw * 2 >= pw:
        raise Fail("untraced_calls.agent_work: child %d, parent %d: the child counts its "
                   "parent's work as its own" % (cw, pw))


def dump_counts(ada, session, fn):
    """Calls and returns of fn over every process of the session (`ada
    report --json`, which reads the traces without printing each event)."""
    calls = rets = 0
    for pid_dir in glob.glob(os.path.join(session, "pid_*")):
        p = subprocess.run([ada, "report", pid_dir, "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        if p.returncode != 0:
            raise Fail("ada report %s failed: %s" % (pid_dir, p.stderr.decode(errors="replace")))
        for proc in json.loads(p.stdout)["processes"]:
            for f in proc["functions"]:
                if f["function"] == fn:
                    calls += f["calls"]
                    rets += f["returns"]
    return calls, rets


def index_drops(session):
    """Index-lane drops by reason, summed over the session's manifests."""
    out = {}
    for m in glob.glob(os.path.join(session, "pid_*", "manifest.json")):
        with open(m) as f:
            for k, v in json.load(f).get("drops", {}).get("index", {}).items():
                out[k] = out.get(k, 0) + v
    return out


def case_slots_full(args, work):
    """More live threads than slots: no wait for ever; the loss is counted
    on the summary line and in the manifests."""
    session, err = same_behaviour(args.ada, work, args.argv, args.record_opt)
    d = index_drops(session)
    if d.get("no_slot", 0) == 0:
        raise Fail("threads without a slot lost nothing? index drops %r" % d)
    if "no_slot" not in err:
        raise Fail("the summary line does not name the no_slot drops:\n%s" % err)


def sums_agree(path, man):
    """The process's sums (metrics: index bytes and events, ring waits;
    lost_events) are its threads' entries added up: the recorder keeps the
    finalized threads' part as running sums (thread_sums.c), which must
    come to what a walk of every thread gives."""
    ths = man.get("threads", [])
    got = {"index_bytes": 0, "index_events": 0, "ring_waits": 0, "ring_waited_ns": 0,
           "lost_events": 0}
    for t in ths:
        got["index_bytes"] += t.get("retired_bytes", 0)
        got["index_events"] += t.get("retired_events", 0)
        for f in t.get("files", []):
            got["index_bytes"] += f.get("bytes", 0)
            got["index_events"] += f.get("events", 0)
        got["ring_waits"] += t.get("ring_waits", 0)
        got["ring_waited_ns"] += t.get("ring_waited_ns", 0)
        got["lost_events"] += t.get("lost_events", 0)
    met = man.get("metrics", {})
    want = {k: met.get(k) for k in ("index_bytes", "index_events", "ring_waits",
                                    "ring_waited_ns")}
    want["lost_events"] = man.get("lost_events")
    if got != want:
        raise Fail("%s: the process's sums %r, its %d threads add up to %r"
                   % (path, want, len(ths), got))


def case_exact(args, work):
    """--calls FN=N: exactly N calls and N returns of FN, no index drop and
    no event lost on the way to disk; with --max-shm-mb, the session's
    shared memory (its peak reservation) stayed within that."""
    fn, n = args.calls.split("=")
    # The spare thread directories on whatever file system the work is
    # (off by default on tmpfs): their counts are checked below.
    os.environ["ADA_THREAD_SPARES"] = "1"
    session, _ = same_behaviour(args.ada, work, args.argv, args.record_opt)
    d = index_drops(session)
    if any(d.values()):
        raise Fail("index-lane drops: %r" % d)
    for m in glob.glob(os.path.join(session, "pid_*", "manifest.json")):
        with open(m) as f:
            man = json.load(f)
        if man.get("lost_events") or man.get("warnings"):
            raise Fail("%s: lost_events %r, warnings %r" % (m, man.get("lost_events"),
                                                             man.get("warnings")))
        sums_agree(m, man)
        peak = man.get("shm", {}).get("peak_bytes", 0)
        print("transp_test: shared memory at peak %.1f MiB" % (peak / 1048576.0))
        if args.max_shm_mb and peak > args.max_shm_mb << 20:
            raise Fail("shared memory peaked at %d bytes, over %d MiB" % (peak, args.max_shm_mb))
    spares_agree(session)
    got = dump_counts(args.ada, session, fn)
    if got != (int(n), int(n)):
        raise Fail("%s: want %s calls and returns, the trace has %r" % (fn, n, got))


def spares_agree(session):
    """The spare thread directories (src/recorder/spares.c): none left at
    the end, and every thread directory counted once, as a spare moved into
    place or as one the drain made (none ready, or the name taken). The
    counts are the session's as the last manifest written saw them."""
    if os.path.lexists(os.path.join(session, ".thread_spares")):
        raise Fail("%s/.thread_spares left after the recording" % session)
    best = None
    for m in glob.glob(os.path.join(session, "pid_*", "manifest.json")):
        with open(m) as f:
            sp = json.load(f)["wal"]["thread_spares"]
        if best is None or sp["used"] + sp["none_ready"] > best["used"] + best["none_ready"]:
            best = sp
    dirs = len(glob.glob(os.path.join(session, "pid_*", "thread_*")))
    print("transp_test: thread_spares %r, %d thread directories" % (best, dirs))
    if not best or not best["enabled"]:
        return
    if best["make_failed"] or best["move_failed"]:
        raise Fail("spare thread directories failed: %r" % best)
    if best["used"] + best["none_ready"] + best["name_taken"] != dirs:
        raise Fail("thread_spares %r do not add up to the %d thread directories" % (best, dirs))


SIGDISP = r"""
import signal
print(signal.getsignal(signal.SIGHUP), signal.getsignal(signal.SIGINT),
      signal.getsignal(signal.SIGQUIT), sorted(int(s) for s in signal.pthread_sigmask(
          signal.SIG_BLOCK, [])))
"""


def ignoring():
    """ada's start as nohup and a background job would give it: SIGHUP,
    SIGINT and SIGQUIT ignored, SIGUSR1 blocked."""
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])


def case_sigdisp(args, work):
    """PROGRAM inherits ada's dispositions and mask."""
    argv = [args.argv[0], "-c", SIGDISP]
    plain = subprocess.run(argv, stdout=subprocess.PIPE, timeout=TIMEOUT, preexec_fn=ignoring)
    out = os.path.join(work, "out")
    traced = subprocess.run([args.ada, "record", "--out", out, "--"] + argv,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT,
                            preexec_fn=ignoring)
    if plain.stdout.split()[:1] not in ([b"1"], [b"Handlers.SIG_IGN"]):
        raise Fail("test bug: the untraced program does not see SIGHUP ignored: %r"
                   % plain.stdout)
    if traced.returncode != 0 or traced.stdout != plain.stdout:
        raise Fail("under ada the program sees %r (status %d), without it %r; stderr:\n%s" % (
            traced.stdout, traced.returncode, plain.stdout, traced.stderr.decode(
                errors="replace")))


SIGWAIT = r"""
import signal, sys
def got(sig, frame):
    print("got", sig, flush=True)
    sys.exit(0)
signal.signal(signal.SIGINT, got)
signal.signal(signal.SIGQUIT, got)
print("ready", flush=True)
while True:
    signal.pause()
"""


def case_sigforward(args, work):
    """SIGINT (then SIGQUIT) sent to ada alone reaches PROGRAM."""
    for sig in (signal.SIGINT, signal.SIGQUIT):
        out = os.path.join(work, "out%d" % sig)
        p = subprocess.Popen([args.ada, "record", "--out", out, "--", args.argv[0], "-c",
                              SIGWAIT], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = p.stdout.readline()  # the handshake: the handler is in place
            if line != b"ready\n":
                raise Fail("the program did not start: %r" % line)
            os.kill(p.pid, sig)  # to ada alone
            rest, err = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise Fail("signal %d to ada alone never reached the program (run-away)" % sig)
        if p.returncode != 0 or rest != b"got %d\n" % sig:
            raise Fail("signal %d: ada exited %d, the program printed %r; stderr:\n%s" % (
                sig, p.returncode, rest, err.decode(errors="replace")))


# ---- real programs (issue 14, Deliver 1-3): Debian's packages, installed
# by tools/bootstrap.sh; a missing one is a skip that says so (exit 77). ----

SKIP = 77


class Skip(Exception):
    pass


def need(path_or_name, package):
    found = shutil.which(path_or_name) or shutil.which(path_or_name, path="/usr/sbin:/usr/bin")
    if not found:
        raise Skip("%s is not installed (Debian package %s; tools/bootstrap.sh installs it)"
                   % (path_or_name, package))
    return found


def function_counts(ada, session, names):
    """{name: (calls, returns)} over every process of the session."""
    out = {n: [0, 0] for n in names}
    for pid_dir in glob.glob(os.path.join(session, "pid_*")):
        p = subprocess.run([ada, "report", pid_dir, "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        if p.returncode != 0:
            raise Fail("ada report %s failed: %s" % (pid_dir, p.stderr.decode(errors="replace")))
        for proc in json.loads(p.stdout)["processes"]:
            for f in proc["functions"]:
                if f["function"] in out:
                    out[f["function"]][0] += f["calls"]
                    out[f["function"]][1] += f["returns"]
    return {n: tuple(v) for n, v in out.items()}


def validate(ada, session):
    v = subprocess.run([ada, "validate", session], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=TIMEOUT)
    if v.returncode != 0:
        raise Fail("ada validate %s failed:\n%s" % (session, v.stdout.decode(errors="replace")))


NGINX_CONF = """daemon off;
master_process on;
worker_processes 1;
user root;
error_log stderr notice;
pid nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path tmp_body;
  proxy_temp_path tmp_proxy;
  fastcgi_temp_path tmp_fcgi;
  uwsgi_temp_path tmp_uwsgi;
  scgi_temp_path tmp_scgi;
  server {
    listen 127.0.0.1:%d;
    root html;
  }
}
"""
NGINX_REQUESTS = 100


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_serve(prefix, argv_prefix):
    """Starts nginx (master + one worker) from a private prefix, waits
    until it answers, makes NGINX_REQUESTS requests, sends SIGQUIT to the
    master and waits for it. Returns (status, bodies, stderr) or None when
    the port was taken meanwhile (the caller picks another)."""
    import http.client
    import time
    port = free_port()
    os.makedirs(os.path.join(prefix, "html"), exist_ok=True)
    os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
    with open(os.path.join(prefix, "html", "index.html"), "w") as f:
        f.write("hello from nginx\n")
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF % port)
    pidfile = os.path.join(prefix, "nginx.pid")
    if os.path.exists(pidfile):
        os.unlink(pidfile)
    cmd = argv_prefix + ["-p", prefix + "/", "-c", "nginx.conf", "-e", "stderr"]
    errf = open(os.path.join(prefix, "stderr"), "w+b")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf)
    try:
        # Ready when the master wrote its pid and the port answers; the
        # deadline only stops a run-away, it never decides the result.
        deadline = time.monotonic() + TIMEOUT
        master = None
        while True:
            if p.poll() is not None:
                errf.seek(0)
                err = errf.read().decode(errors="replace")
                if "Address already in use" in err:
                    return None
                raise Fail("nginx exited %d before serving; stderr:\n%s" % (p.returncode, err))
            if time.monotonic() > deadline:
                raise Fail("nginx never answered (run-away)")
            try:
                with open(pidfile) as f:
                    master = int(f.read().strip() or "0") or None
            except (OSError, ValueError):
                master = None
            if master:
                try:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
                    c.connect()
                    c.close()
                    break
                except OSError:
                    pass
            time.sleep(0.05)
        bodies = []
        for i in range(NGINX_REQUESTS):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
            c.request("GET", "/")
            r = c.getresponse()
            bodies.append((r.status, r.read()))
            c.close()
        os.kill(master, signal.SIGQUIT)
        rc = p.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Fail("nginx did not stop on SIGQUIT (run-away)")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    errf.seek(0)
    return rc, bodies, errf.read().decode(errors="replace")


def case_nginx(args, work):
    """nginx, master and one worker, serves NGINX_REQUESTS requests under
    ada and stops on SIGQUIT as without it; the worker's trace has exactly
    one ngx_http_process_request per request."""
    nginx = need(args.argv[0] if args.argv else "nginx", "nginx")
    runs = []
    for traced in (False, True):
        for attempt in range(5):
            prefix = os.path.join(work, "prefix%d.%d" % (traced, attempt))
            out = os.path.join(work, "out%d" % attempt)
            pre = [args.ada, "record", "--out", out, "--"] if traced else []
            r = nginx_serve(prefix, pre + [nginx])
            if r is not None:
                break
            shutil.rmtree(out, ignore_errors=True)
        else:
            raise Fail("no free port in 5 tries")
        runs.append((r, out))
    (rc0, bodies0, err0), _ = runs[0]
    (rc1, bodies1, err1), out = runs[1]
    if rc1 != rc0 or bodies1 != bodies0:
        raise Fail("untraced: status %d, %d good answers; under ada: status %d, %d good answers;"
                   " stderr:\n%s" % (rc0, bodies0.count(bodies0[0]), rc1,
                                     bodies1.count(bodies0[0]), err1))
    if bodies0 != [(200, b"hello from nginx\n")] * NGINX_REQUESTS:
        raise Fail("test bug: untraced nginx answered %r" % bodies0[:3])
    if "respawn" in err1 or "exited on signal" in err1:
        raise Fail("a worker died under ada:\n%s" % err1)
    sessions = glob.glob(os.path.join(out, "session_*"))
    if len(sessions) != 1:
        raise Fail("expected one session under %s, found %r" % (out, sessions))
    validate(args.ada, sessions[0])
    procs = glob.glob(os.path.join(sessions[0], "pid_*"))
    if len(procs) != 2:
        raise Fail("want the master and one worker recorded, found %r" % procs)
    got = function_counts(args.ada, sessions[0], ["ngx_http_process_request"])
    want = (NGINX_REQUESTS, NGINX_REQUESTS)
    if got["ngx_http_process_request"] != want:
        raise Fail("ngx_http_process_request: want %r calls and returns, got %r"
                   % (want, got["ngx_http_process_request"]))


GREENLET = r"""
import greenlet
def gen(n):
    for i in range(n):
        greenlet.getcurrent().parent.switch(i)
    return "done"
total = 0
g = greenlet.greenlet(gen)
v = g.switch(1000)
while not g.dead:
    total += v
    v = g.switch()
print("sum", total, "last", v)
def inner():
    try:
        greenlet.getcurrent().parent.switch("waiting")
    except ValueError as e:
        return "caught %s" % e
h = greenlet.greenlet(inner)
print(h.switch())
print(h.throw(ValueError("boom")))
"""

# One process: a gevent StreamServer on a free port and 20 client
# greenlets, 5 requests each on their own connection.
GEVENT = r"""
from gevent import monkey
monkey.patch_all()
import gevent
from gevent.server import StreamServer
import socket
def handle(sock, addr):
    f = sock.makefile("rb")
    while True:
        line = f.readline()
        if not line:
            break
        sock.sendall(b"echo " + line)
    sock.close()
server = StreamServer(("127.0.0.1", 0), handle)
server.start()
port = server.server_port
def client(i):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    got = [None]
    for j in range(5):
        s.sendall(b"%d-%d\n" % (i, j))
        got.append(f.readline())
    s.close()
    return len(got) - 1, got[-1]
jobs = [gevent.spawn(client, i) for i in range(20)]
gevent.joinall(jobs)
res = [j.value for j in jobs]
print(sum(r[0] for r in res), res[7][1].decode().strip(), res[19][1].decode().strip())
server.stop()
"""


def python_with(module, package):
    """Debian's python3 (the package is for it), or the one running this."""
    for py in ("/usr/bin/python3", sys.executable):
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import " + module], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, timeout=TIMEOUT).returncode == 0:
            return py
    raise Skip("no python3 here imports %s (Debian package %s; tools/bootstrap.sh installs it)"
               % (module, package))


def stack_switch_checks(session, err, least):
    a = agent_json(session)
    w = a["stack_switches"]
    if w["switches"] < least:
        raise Fail("want at least %d stack switches counted, agent.json has %r" % (least, w))
    if w["frames_cut"] > 0 and "stack switches by copying" not in err:
        raise Fail("the summary does not tell the returns cut by switches:\n%s" % err)
    if a["unmatched_returns"] != {"returns": 0, "threads_stopped": 0}:
        raise Fail("a switch left a return unmatched: %r" % a["unmatched_returns"])


def case_greenlet(args, work):
    """greenlet switches 2000 times between two greenlets and throws into
    a third: same output; every switch counted, no return unmatched."""
    py = python_with("greenlet", "python3-greenlet")
    session, err = same_behaviour(args.ada, work, [py, "-c", GREENLET])
    # 1001 switches into gen, 1000 out of it, and 2 each for h's switch
    # and throw: at least 2004 stack switches.
    stack_switch_checks(session, err, 2004)


def case_gevent(args, work):
    """A gevent server and 20 clients in one process: same output."""
    py = python_with("gevent", "python3-gevent")
    session, err = same_behaviour(args.ada, work, [py, "-c", GEVENT])
    # Each of the 100 requests waits for its answer at least once.
    stack_switch_checks(session, err, 100)


# A JS exception thrown 50 frames deep and caught; two worker threads that
# throw and catch 100 and 200 RangeErrors each.
NODE = r"""
const { Worker } = require("worker_threads");
function f(n) { if (n == 0) throw new Error("deep"); return f(n - 1); }
try { f(50); } catch (e) { console.log("caught", e.message, e.stack.split("\n").length); }
const body = "const {parentPort, workerData} = require('worker_threads'); let s = 0;" +
  "for (let i = 0; i < workerData; i++) { try { if (i % 100 == 0) throw new RangeError('r' + i);" +
  " s += i; } catch (e) { s -= 1; } } parentPort.postMessage(s);";
const ws = [1, 2].map(k => new Promise((res, rej) => {
  const w = new Worker(body, { eval: true, workerData: 10000 * k });
  w.on("message", res); w.on("error", rej);
}));
Promise.all(ws).then(v => console.log("workers", v.join(",")));
"""


def case_node(args, work):
    """node -e with a caught JS exception and worker threads: same output,
    nothing unmatched (V8's C entries are left alone: docs/hooks.md)."""
    node = need(args.argv[0] if args.argv else "node", "nodejs")
    session, err = same_behaviour(args.ada, work, [node, "-e", NODE])
    a = agent_json(session)
    if a["unmatched_returns"] != {"returns": 0, "threads_stopped": 0}:
        raise Fail("returns were resynchronised: %r" % a["unmatched_returns"])
    threads = glob.glob(os.path.join(session, "pid_*", "thread_*"))
    if len(threads) < 3:
        raise Fail("want the main thread and both workers recorded, found %r" % threads)


def wait_for(what, cond, limit=TIMEOUT):
    """Bounded polling (a run-away guard, not a synchronisation)."""
    import time
    for _ in range(int(limit * 20)):
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise Fail("run-away: %s did not happen in %d s" % (what, limit))


def children_of(pid):
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        if int(st[st.rindex(")") + 2:].split()[1]) == pid:
            kids.append(int(d))
    return kids


def finish(p, what):
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise Fail("run-away: %s" % what)
    return out, err.decode(errors="replace")


def ignore_hup():
    os.setsid()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def case_nohup(args, work):
    """`nohup ada record -- sleep 2 &`, then the terminal hangs up (SIGHUP
    to the whole process group): the program, which inherits the ignored
    SIGHUP, and ada live on; the program's status is ada's."""
    out = os.path.join(work, "out")
    p = subprocess.Popen([args.ada, "record", "--out", out, "--", "sleep", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ignore_hup)
    try:
        kid = wait_for("the program's start", lambda: children_of(p.pid))[0]
        os.killpg(p.pid, signal.SIGHUP)
    finally:
        _, err = finish(p, "ada did not end after the program's 2 s")
    if p.returncode != 0:
        raise Fail("after SIGHUP ada exited %d (the program %d was to sleep 2 s and exit "
                   "0); stderr:\n%s" % (p.returncode, kid, err))
    if len(glob.glob(os.path.join(out, "session_*", "pid_*"))) != 1:
        raise Fail("expected one recorded process; stderr:\n%s" % err)


def case_recorder_killed(args, work):
    """The recorder is SIGKILLed while the program's threads are half way
    (t_manythreads busy N K GATE): the program goes on to the end with the
    same output, its threads noticing the recorder gone once (a drain
    timeout, not one per thread), and agent.json counts what was dropped.
    The gate file lets the kill land while every thread still has K/2
    calls to make; the program's end is the end of its stdout (ada, its
    parent, is gone)."""
    gate = os.path.join(work, "gate")
    argv = args.argv + [gate]
    with open(gate, "w"):
        pass
    rc0, out0, _ = run(argv)
    os.unlink(gate)
    out = os.path.join(work, "out")
    p = subprocess.Popen([args.ada, "record", "--out", out, "--"] + argv,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        first = p.stdout.readline()
        if first != b"half\n":
            raise Fail("the program said %r, not half" % first)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=TIMEOUT)
        with open(gate, "w"):
            pass
        # The program (reparented) still writes into the pipe: EOF when it ends.
        rest, _ = finish(p, "the program did not end after the recorder was killed")
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if rc0 != 0 or first + rest != out0:
        raise Fail("untraced: status %d, %r; under a killed recorder: %r" % (rc0, out0,
                                                                            first + rest))
    sessions = glob.glob(os.path.join(out, "session_*"))
    if len(sessions) != 1:
        raise Fail("expected one session under %s, found %r" % (out, sessions))
    a = agent_json(sessions[0])  # written at the program's exit
    g, u = a.get("recorder_gone", {}), a.get("untraced_calls", {})
    if not g.get("noticed") or g.get("drain_lag_drops", 0) <= 0:
        raise Fail("the recorder was killed half way, yet agent.json says %r" % g)
    # Once a thread found the recorder gone its calls are no longer traced
    # (counted): 16 threads had 50 000 calls each to make, more than their
    # rings (32 768 calls) could take.
    if u.get("recorder_gone", 0) <= 0:
        raise Fail("no call counted as untraced for the recorder's death: %r" % u)
    gone_drops = recover_killed(args.ada, sessions[0])
    # Each untraced call is also in drops (BP-003): its CALL and RETURN,
    # counted by the agent into the arena, which `ada recover` reads. The
    # calls the exit makes after agent.json was written are in drops only.
    if not isinstance(gone_drops, int) or gone_drops % 2 or gone_drops < 2 * u["recorder_gone"]:
        raise Fail("drops.index.recorder_gone %r after ada recover, want two for each of the "
                   "%d untraced calls (and those after agent.json)" % (gone_drops,
                                                                      u["recorder_gone"]))
    check_recovered(args, sessions[0], u["recorder_gone"])
    print("transp_test: the program ran on without its recorder: %r, untraced calls %d, "
          "recorder_gone drops %d" % (g, u["recorder_gone"], gone_drops))


def recover_killed(ada, session):
    """`ada recover` of the session whose recorder was killed, once its
    program is gone (a bounded poll): the recorder_gone drops its
    manifest counts, which `ada status` must say as well."""
    pid = int(os.path.basename(glob.glob(os.path.join(session, "pid_*"))[0])[4:])
    for _ in range(6000):  # run-away guard only
        if not os.path.exists("/proc/%d" % pid):
            break
        time.sleep(0.01)
    rc, _, err = run([ada, "recover", session])
    if rc != 0:
        raise Fail("ada recover %s: exit %d %s" % (session, rc, err))
    with open(os.path.join(session, "pid_%d" % pid, "manifest.json")) as f:
        m = json.load(f)
    gone = (m.get("drops") or {}).get("index", {}).get("recorder_gone")
    rc, out, err = run([ada, "status", session])
    if rc != 0 or ("recorder_gone %d" % (gone or 0)).encode() not in out:
        raise Fail("ada status %s: exit %d, %r lacks 'recorder_gone %r' (%s)" % (
            session, rc, out, gone, err))
    return gone


def check_recovered(args, session, untraced):
    """After recover_killed: ada recover kept what the agent said (the hooks,
    the calls left untraced after the recorder died) and the program's clean
    exit; the status line says the session was recovered, not that the
    program ended abnormally; the registry keeps no entry for the dead
    recorder."""
    with open(glob.glob(os.path.join(session, "pid_*", "manifest.json"))[0]) as f:
        man = json.load(f)
    hook = man.get("hook") or {}
    if man.get("state") != "recovered" or hook.get("installed", 0) <= 0 or \
            hook.get("untraced_calls", {}).get("recorder_gone") != untraced:
        raise Fail("recovered manifest: state %r, hook %r (the agent counted %d untraced)" %
                   (man.get("state"), {k: hook.get(k) for k in ("installed", "untraced_calls")},
                    untraced))
    if man.get("exit", {}).get("status") != 0 or man.get("abnormal") is not False:
        raise Fail("recovered manifest: exit %r, abnormal %r for a program that exited 0" %
                   (man.get("exit"), man.get("abnormal")))
    rc, out, err = run([args.ada, "status", session])
    line = out.decode(errors="replace")
    if rc != 0 or "hooks 0 installed" in line or "exit status 0 (recovered" not in line:
        raise Fail("ada status of the recovered session: %r %r" % (line, err))
    reg = "/run/user/%d/ada" % os.geteuid()
    reg = reg if os.path.isdir(reg) else "/tmp/ada-%d" % os.geteuid()
    for e in glob.glob(os.path.join(reg, "*")):
        with open(e, errors="replace") as f:
            if session in f.read():
                raise Fail("the registry keeps %s for the recovered session" % e)


RAW_EXEC = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
# under ada (its session variable set), long enough for the drain's
# once-a-second look at /proc/PID/exe and its second of grace; the
# untraced run, which only gives the status and output to compare, at once
secs = b"5" if os.environ.get("ADA_SESSION_DIR") else b"0"
argv = (ctypes.c_char_p * 3)(b"/bin/sleep", secs, None)
envp = (ctypes.c_char_p * 2)(b"PATH=/usr/bin:/bin", None)
libc.syscall(59, b"/bin/sleep", argv, envp)  # SYS_execve, past every wrapper
raise SystemExit("execve: errno %d" % ctypes.get_errno())
"""


def case_raw_exec(args, work):
    """A raw execve system call with an environment of its own: the new
    image (sleep 5; sleep 0 in the untraced run) runs untraced, as it
    must; ada says so, on stderr and in the manifest's warnings."""
    session, err = same_behaviour(args.ada, work, [args.argv[0], "-c", RAW_EXEC])
    if "without the agent" not in err or "sleep" not in err:
        raise Fail("the exec that left the agent behind was not told:\n%s" % err)
    warned = []
    for m in glob.glob(os.path.join(session, "pid_*", "manifest.json")):
        with open(m) as f:
            warned += [w for w in json.load(f).get("warnings", []) if "without the agent" in w]
    if len(warned) != 1:
        raise Fail("want one manifest warning about it, got %r" % warned)


LEFTOVER = "trap '' INT; sleep 600 </dev/null >/dev/null 2>&1 & echo $!; %s"


def sigint_pending(pid):
    bit = 1 << (signal.SIGINT - 1)
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("ShdPnd:") and int(line.split()[1], 16) & bit:
                    return True
    except OSError:
        pass
    return False


def case_leftover(args, work, interrupt=False):
    """The program exits leaving a background child that ignores SIGINT
    (as a shell's background job does): ada gives it a grace period, says
    what it leaves running, finalizes and exits with the program's status;
    the child goes on. leftover_interrupt: the program waits for the child
    and two SIGINTs go to the whole group (two Ctrl-C): ada finalizes,
    the program and the child go on. Output goes to files: what ada
    leaves running holds them open."""
    script = LEFTOVER % ("echo ready; wait" if interrupt else "echo ready; exit 3")
    out = os.path.join(work, "out")
    so_path, se_path = os.path.join(work, "stdout"), os.path.join(work, "stderr")
    with open(so_path, "wb") as so, open(se_path, "wb") as se:
        p = subprocess.Popen([args.ada, "record", "--out", out, "--", "/bin/sh", "-c", script],
                             stdout=so, stderr=se, start_new_session=True)

    def lines():
        with open(so_path) as f:
            text = f.read()
        return text.split("\n") if text.endswith("ready\n") else None
    try:
        kid = int(wait_for("the program's start", lines)[0])
        if interrupt:
            # Two Ctrl-C, not one: the second only once ada took the first
            # (pending signals of one kind merge).
            os.killpg(p.pid, signal.SIGINT)
            wait_for("ada's taking SIGINT", lambda: not sigint_pending(p.pid))
            os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Fail("run-away: ada waited for ever for the background child %d" % kid)
        alive = os.path.exists("/proc/%d" % kid)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the child, and the shell still waiting
        except ProcessLookupError:
            pass
        p.wait()
    with open(se_path) as f:
        err = f.read()
    if not alive:
        raise Fail("the background child %d did not go on running" % kid)
    if interrupt and p.returncode not in (1, 130, -signal.SIGINT):
        raise Fail("after two SIGINTs ada exited %d; stderr:\n%s" % (p.returncode, err))
    if not interrupt and p.returncode != 3:
        raise Fail("ada exited %d, the program 3; stderr:\n%s" % (p.returncode, err))
    if "still running" not in err or " %d (" % kid not in err:
        raise Fail("ada did not say that it left %d (sleep) running; stderr:\n%s" % (kid, err))
    sessions = glob.glob(os.path.join(out, "session_*"))
    v = subprocess.run([args.ada, "validate"] + sessions, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=TIMEOUT)
    if len(sessions) != 1 or v.returncode != 0:
        raise Fail("ada validate %r failed:\n%s" % (sessions, v.stdout.decode(errors="replace")))


def manifests(session):
    out = {}
    for path in glob.glob(os.path.join(session, "pid_*", "manifest.json")):
        with open(path) as f:
            out[path] = json.load(f)
    return out


def case_noshebang(args, work):
    """An executable text file without #! runs with /bin/sh, as a shell
    would run it: same output and status as `sh FILE`; the manifest's
    program is what ran (sh with the file)."""
    script = os.path.join(work, "plain-script")
    with open(script, "w") as f:
        f.write('echo "hello $1"\nexit 4\n')
    os.chmod(script, 0o755)
    rc0, out0, _ = run(["/bin/sh", script, "arg"])
    rc1, out1, err, session = record(args.ada, work, [script, "arg"])
    if (rc1, out1) != (rc0, out0):
        raise Fail("under ada: status %d, stdout %r; as sh runs it: %d, %r; stderr:\n%s" % (
            rc1, out1, rc0, out0, err))
    progs = [m.get("program") for m in manifests(session).values()]
    if progs != [["/bin/sh", script, "arg"]]:
        raise Fail("the manifests' program: %r, want [['/bin/sh', %r, 'arg']]" % (progs, script))


def case_program_exec(args, work):
    """The manifest's program follows exec: sh -c 'exec cat FILE' is cat."""
    data = os.path.join(work, "data")
    with open(data, "w") as f:
        f.write("some text\n")
    argv = ["/bin/sh", "-c", "exec /bin/cat %s" % data]
    session, err = same_behaviour(args.ada, work, argv)
    progs = [m.get("program") for m in manifests(session).values()]
    if progs != [["/bin/cat", data]]:
        raise Fail("the manifests' program: %r, want [['/bin/cat', %r]]" % (progs, data))


def listing(top):
    """Every path under top (top itself excluded), sorted."""
    out = []
    for d, dirs, files in os.walk(top):
        out += [os.path.relpath(os.path.join(d, n), top) for n in dirs + files]
    return sorted(out)


def case_home(args, work):
    """Nothing appears in the program's HOME or working directory."""
    home, cwd = os.path.join(work, "home"), os.path.join(work, "cwd")
    for d in (home, cwd):
        os.makedirs(d)
        with open(os.path.join(d, "file"), "w") as f:
            f.write("x\n")
    env = dict(os.environ, HOME=home)
    env.pop("XDG_CACHE_HOME", None)
    before = (listing(home), listing(cwd))
    argv = ["/bin/sh", "-c", 'ls -a "$HOME"; ls -a']
    rc0, out0, err0 = run(argv, env=env, cwd=cwd)
    out = os.path.join(work, "out")
    rc1, out1, err1 = run([args.ada, "record", "--out", out, "--"] + argv, env=env, cwd=cwd)
    if (rc1, out1) != (rc0, out0):
        raise Fail("untraced: status %d, stdout %r; under ada: %d, %r; stderr:\n%s" % (
            rc0, out0, rc1, out1, err1))
    if not glob.glob(os.path.join(out, "session_*", "pid_*", "agent.json")):
        raise Fail("nothing was recorded (no agent.json); stderr:\n%s" % err1)
    after = (listing(home), listing(cwd))
    if after != before:
        raise Fail("HOME and the working directory held %r before ada record, %r after" % (
            before, after))


ROOT_CACHE_SCRIPT = r"""
set -e
mount -t tmpfs -o size=256m,mode=0755 tmpfs /var/cache
for i in 1 2; do "$ADA" record --out "$OUT/run$i" -- /bin/sh -c true >/dev/null; done
stat -c '%a %u' /var/cache/ada /var/cache/ada/plans
ls /var/cache/ada/plans | grep -c '[.]plan$'
"""


def case_root_cache(args, work):
    """root whose HOME has no .cache keeps its plan cache in /var/cache/ada
    (0700, root's): the second run of a program hits it, and HOME is left
    as it was. /var/cache is a tmpfs of a mount namespace of the test's own."""
    if os.geteuid() != 0:
        raise Skip("only root uses /var/cache/ada (run the tests as root)")
    if not shutil.which("unshare"):
        raise Skip("unshare is not installed (Debian package util-linux)")
    home = os.path.join(work, "home")
    os.makedirs(home)
    env = dict(os.environ, HOME=home, ADA=args.ada, OUT=os.path.join(work, "out"))
    env.pop("XDG_CACHE_HOME", None)
    rc, out, err = run(["unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
                        ROOT_CACHE_SCRIPT], env=env)
    if rc != 0:
        raise Fail("the two runs in a namespace of their own failed (%d):\n%s" % (rc, err))
    lines = out.decode().split()
    if lines[:5] != ["700", "0", "700", "0", lines[4]] or int(lines[4]) < 1:
        raise Fail("/var/cache/ada and its plans: mode, owner and plan count %r "
                   "(700 0 700 0 and at least 1 expected)" % lines)
    hits = 0
    for f in glob.glob(os.path.join(work, "out", "run2", "session_*", "pid_*", "agent.json")):
        with open(f) as fh:
            hits += json.load(fh)["plan_cache"]["hits"]
    if hits < 1:
        raise Fail("the second run did not use the plan cache of the first (0 hits)")
    if os.listdir(home):
        raise Fail("HOME holds %r after two runs (it was empty)" % os.listdir(home))


CASES = {"root_cache": case_root_cache, "resync_fork": case_resync_fork, "sigdisp": case_sigdisp, "linkname": case_linkname, "home": case_home, "noshebang": case_noshebang,
         "program_exec": case_program_exec, "sigforward": case_sigforward, "nohup": case_nohup,
         "leftover": case_leftover,
         "leftover_interrupt": lambda args, work: case_leftover(args, work, True),
         "nocfi": case_nocfi, "resync": case_resync, "slots_full": case_slots_full,
         "exact": case_exact, "nginx": case_nginx, "recorder_killed": case_recorder_killed,
         "raw_exec": case_raw_exec,
         "greenlet": case_greenlet, "gevent": case_gevent,
         "node": case_node}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--calls", help="exact: FUNCTION=N")
    ap.add_argument("--max-shm-mb", type=int, default=0, help="exact: the shm peak bound")
    ap.add_argument("--record-opt", action="append", default=[],
                    help="an option for ada record (repeat)")
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.argv and args.argv[0] == "--":
        args.argv = args.argv[1:]
    os.makedirs(args.work, exist_ok=True)
    work = tempfile.mkdtemp(prefix=args.case + ".", dir=args.work)
    try:
        CASES[args.case](args, work)
    except Fail as e:
        print("transp_test(%s): FAIL: %s" % (args.case, e), file=sys.stderr)
        return 1
    except Skip as e:
        print("transp_test(%s): SKIP: %s" % (args.case, e))
        return SKIP
    finally:
        shm_cleanup(work)
        shutil.rmtree(work, ignore_errors=True)
    print("transp_test(%s): ok" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
