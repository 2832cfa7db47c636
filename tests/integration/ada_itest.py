#!/usr/bin/env python3
"""End-to-end checks of `ada record` on real programs (issue 4, Tests and
Bad input). One invocation is one CTest test; exit 0 = pass, 1 = fail,
77 = skip (only when the ada binary itself says a command is not implemented).

  ada_itest.py --ada ADA --work DIR target [options] -- PROG ARGS...
      PROG is a tests/targets program: it writes its own call table
      (tests/targets/tcount.h) to $ADA_TEST_COUNTS. It is run untraced and
      under `ada record`; output, exit status and the table must be the same,
      the session must validate, and the trace must hold exactly the calls the
      program counted, with returns, exceptions and depths that add up.
  ada_itest.py --ada ADA --work DIR debian NAME
      a real Debian program (ls, gzip, python3, sort): same output traced and
      untraced, exit status passed through, validate passes, events recorded.
  ada_itest.py --ada ADA --work DIR bad KIND [--static PATH] [--setuid-src PATH]
      bad input for `ada record`: non-zero exit, one line on stderr, no
      session left behind.

The harness reads only what `ada dump DIR --format jsonl` prints (keys ts,
tid, thread, kind, depth, function_id, function, module, index_seq) and the
files of the session layout in docs/internals.md. A failing run keeps its
work directory and prints its path.
"""
import argparse
import collections
import fnmatch
import glob
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

SKIP = 77
NOT_IMPLEMENTED = re.compile(rb"not implemented", re.I)
RUN_TIMEOUT = 30
MAX_REPORTED = 25

# Functions of a test program's own image that are not in its table and not
# asserted: C runtime start-up, the tcount helpers, C++ library code.
IGNORED_OWN = {"_init", "_fini", "_start", "frame_dummy", "register_tm_clones",
               "deregister_tm_clones", "__do_global_dtors_aux", "atexit",
               "_dl_relocate_static_pie", "__libc_csu_init", "__libc_csu_fini"}


EXEC_NAMES = re.compile(r"^(__)?(f?exec[a-z]*|execveat)$")


class Fail(Exception):
    pass


class Skip(Exception):
    pass


class Report:
    """Collects failures so one run tells everything that is wrong."""

    def __init__(self):
        self.failures = []
        self.notes = []

    def fail(self, msg):
        self.failures.append(msg)

    def note(self, msg):
        self.notes.append(msg)

    def check(self, cond, msg):
        if not cond:
            self.fail(msg)
        return cond


# ---------------------------------------------------------------- processes

def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(cmd, env=None, stdin_path=None, timeout=RUN_TIMEOUT, cwd=None, interrupt=None):
    """Runs cmd in a process group of its own; returns (status, stdout,
    stderr), status 128+N for signal N. On timeout the whole group (the
    recorder and the program it started) is killed. interrupt=(line, sig):
    once stdout shows that line, sig goes to the whole group (a Ctrl-C)."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        p = subprocess.Popen(cmd, env=env, stdin=stdin, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=no_core, cwd=cwd,
                             start_new_session=True)
        try:
            head = b""
            if interrupt:
                head = wait_for_line(p, interrupt[0], timeout)
                os.killpg(p.pid, interrupt[1])
            out, err = p.communicate(timeout=timeout)
            out = head + out
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            raise Fail("timed out after %ds (process group killed): %s\nstderr tail: %r" % (
                timeout, " ".join(cmd), err[-600:]))
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # stragglers it left behind
            except ProcessLookupError:
                pass
    except OSError as e:
        raise Fail("cannot run %s: %s" % (" ".join(cmd), e))
    finally:
        if stdin_path:
            stdin.close()
    rc = p.returncode
    if rc < 0:
        rc = 128 - rc
    return rc, out, err


def wait_for_line(p, line, timeout):
    """Reads p's stdout up to and including `line` (bytes); returns it."""
    import select
    got = b""
    fd = p.stdout.fileno()
    while (line + b"\n") not in got:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise subprocess.TimeoutExpired(p.args, timeout)
        chunk = os.read(fd, 4096)
        if not chunk:
            break  # the program ended first; communicate() tells the rest
        got += chunk
    return got


def skip_if_unimplemented(what, rc, err):
    if rc != 0 and NOT_IMPLEMENTED.search(err):
        raise Skip("%s: the ada binary says it is not implemented yet (%s)" % (
            what, err.decode(errors="replace").strip()))


def shown(b, limit=600):
    s = b.decode(errors="replace")
    return s if len(s) <= limit else s[:limit] + "...(%d bytes)" % len(s)


def first_diff(a, b):
    al, bl = a.splitlines(), b.splitlines()
    for i in range(max(len(al), len(bl))):
        x = al[i] if i < len(al) else b"<end>"
        y = bl[i] if i < len(bl) else b"<end>"
        if x != y:
            return "line %d: untraced %r, traced %r" % (i + 1, x[:200], y[:200])
    return "same lines, different bytes"


# ---------------------------------------------------------------- ada

class Ada:
    def __init__(self, path):
        self.path = path

    def record(self, out, argv, env, opts=(), stdin_path=None, interrupt=None):
        cmd = [self.path, "record", "--out", out] + list(opts) + ["--"] + argv
        try:
            rc, o, e = run(cmd, env=env, stdin_path=stdin_path, interrupt=interrupt)
        except Fail:
            # Killed on timeout: the recorder could not remove its arena.
            for session in glob.glob(os.path.join(out, "session_*")):
                check_arena_gone(Report(), session)
            raise
        skip_if_unimplemented("ada record", rc, e)
        return cmd, rc, o, e

    def validate(self, d, rep):
        rc, o, e = run([self.path, "validate", d])
        skip_if_unimplemented("ada validate", rc, e)
        rep.check(rc == 0, "`ada validate %s` exited %d:\n%s%s" % (
            d, rc, shown(o, 1500), shown(e, 1500)))

    def dump(self, d):
        cmd = [self.path, "dump", d, "--format", "jsonl"]
        rc, o, e = run(cmd, timeout=RUN_TIMEOUT * 2)
        skip_if_unimplemented("ada dump", rc, e)
        if rc != 0:
            raise Fail("`%s` exited %d: %s" % (" ".join(cmd), rc, shown(e)))
        lines = [l for l in o.decode(errors="replace").splitlines() if l.strip()]
        try:
            # One parse of the whole stream is ~5x faster than one per line.
            return json.loads("[" + ",".join(lines) + "]")
        except ValueError:
            pass  # find and report the bad line below
        events = []
        for n, line in enumerate(o.splitlines(), 1):
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
            except ValueError as ex:
                raise Fail("`%s` line %d is not JSON (%s): %r" % (
                    " ".join(cmd), n, ex, line[:200]))
            events.append(ev)
        return events


def find_session(out, err, rep):
    sessions = sorted(d for d in glob.glob(os.path.join(out, "session_*"))
                      if os.path.isdir(d))
    if len(sessions) != 1:
        raise Fail("expected one session directory in %s, found %r" % (out, sessions))
    session = sessions[0]
    lines = [l for l in err.decode(errors="replace").splitlines() if l.strip()]
    last = lines[-1] if lines else ""
    rep.check(os.path.basename(session) in last,
              "the last line ada record printed on stderr should name the session "
              "directory %s; it was %r" % (session, last))
    return session


def check_arena_gone(rep, session):
    """After `ada record` exits, the shared-memory arena directory named in
    the manifests must be gone (it holds mlocked memory). Ours is removed
    if it was left, so a failing test leaks nothing."""
    for m_path in glob.glob(os.path.join(session, "pid_*", "manifest.json")):
        try:
            with open(m_path) as f:
                arena_dir = json.load(f).get("arena_dir")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(arena_dir, str) and os.path.isdir(arena_dir):
            rep.fail("the arena directory %s (from %s) is still there after ada record "
                     "exited: %r" % (arena_dir, m_path, sorted(os.listdir(arena_dir))[:5]))
            shutil.rmtree(arena_dir, ignore_errors=True)


def program_stderr(err, session):
    """The traced program's stderr: ada's own lines ('ada: ...', and the
    last line naming the session) taken out."""
    lines = err.splitlines(keepends=True)
    base = os.path.basename(session).encode()
    while lines and (not lines[-1].strip() or base in lines[-1]):
        lines.pop()
    return b"".join(l for l in lines if not re.match(rb"^ada[\w-]*[:\s]", l))


# ---------------------------------------------------------------- count tables

CountFile = collections.namedtuple("CountFile", "path program pid ppid totals threads")


def parse_counts(path):
    """A tcount table: totals[fn] = [calls, unwound, lost, either];
    threads[(label, tid)][fn] = the same."""
    totals, threads = collections.OrderedDict(), collections.OrderedDict()
    program, pid, ppid = None, None, None
    with open(path) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            if p[0] == "#":
                kv = dict(x.split("=", 1) for x in p if "=" in x)
                program, pid, ppid = kv.get("program"), int(kv["pid"]), int(kv["ppid"])
            elif p[0] == "total" and len(p) == 6:
                totals[p[1]] = [int(x) for x in p[2:]]
            elif p[0] == "thread" and len(p) == 7:
                label, tid = p[1].rsplit(":", 1)
                threads.setdefault((label, int(tid)), collections.OrderedDict())[p[2]] = \
                    [int(x) for x in p[3:]]
            else:
                raise Fail("%s: bad line %r" % (path, line))
    if pid is None:
        raise Fail("%s: no header line" % path)
    return CountFile(path, program, pid, ppid, totals, threads)


def load_counts(d):
    files = [parse_counts(p) for p in sorted(glob.glob(os.path.join(d, "*.counts")))]
    if not files:
        raise Fail("the program wrote no call table in %s (is ADA_TEST_COUNTS passed "
                   "through to it?)" % d)
    return files


def counts_signature(files):
    """What must be equal between an untraced and a traced run."""
    sig = []
    for cf in files:
        threads = sorted((label, sorted(fns.items())) for (label, _), fns in cf.threads.items())
        sig.append((cf.program, sorted(cf.totals.items()), threads))
    return sorted(sig)


# ---------------------------------------------------------------- trace walk

class FnStats:
    __slots__ = ("call", "ret", "exc", "open", "inherited")

    def __init__(self):
        self.call = self.ret = self.exc = self.open = self.inherited = 0

    def add(self, o):
        for k in self.__slots__:
            setattr(self, k, getattr(self, k) + getattr(o, k))


def fn_name(ev):
    name = ev.get("function")
    if name:
        return name
    return "<fid %s>" % ev.get("function_id")


def walk_thread(events, allow_inherited):
    """Replays one thread's events on a stack. Returns (stats per function,
    errors). A CALL must be one deeper than the frame it is called from; a
    RETURN or EXCEPTION must end the innermost open frame (same function id,
    same depth). Frames still open at the end are counted as open. In a
    forked child, leading ends of frames inherited from the parent (called
    before the fork) are allowed and counted apart."""
    stats = collections.defaultdict(FnStats)
    errors = []
    stack = []  # (function_id, name, depth)
    cur = None  # depth of the innermost frame; None until the first event
    for ev in events:
        kind, depth, fid, name = ev.get("kind"), ev.get("depth"), ev.get("function_id"), fn_name(ev)
        where = "index_seq %s" % ev.get("index_seq")
        if kind == "call":
            if cur is None:
                cur = depth - 1
            if depth <= cur and stack and EXEC_NAMES.match(stack[-1][1]):
                # The image was replaced by exec and the same thread goes on:
                # the old image's frames are lost, not wrong.
                while stack:
                    stats[stack.pop()[1]].open += 1
                cur = depth - 1
            if depth != cur + 1:
                errors.append("%s: CALL %s at depth %s, but the innermost open frame is at "
                              "depth %s (%s)" % (where, name, depth, cur,
                                                 stack[-1][1] if stack else "none"))
            stack.append((fid, name, depth))
            cur = depth
            stats[name].call += 1
        elif kind in ("return", "exception"):
            st = stats[name]
            if stack:
                tfid, tname, tdepth = stack[-1]
                if tfid != fid or tdepth != depth:
                    errors.append("%s: %s of %s at depth %s, but the innermost open frame "
                                  "is %s at depth %s" % (where, kind.upper(), name, depth,
                                                         tname, tdepth))
                    # Resynchronise (one error, not a cascade): on the frame
                    # it names if that is open, else drop the deeper frames.
                    hit = [i for i, f in enumerate(stack) if f[0] == fid and f[2] == depth]
                    if not hit:
                        while stack and stack[-1][2] >= depth:
                            stats[stack.pop()[1]].open += 1
                        cur = depth - 1
                        continue
                    for f in stack[hit[-1] + 1:]:
                        stats[f[1]].open += 1
                    del stack[hit[-1] + 1:]
                stack.pop()
                cur = depth - 1
                if kind == "return":
                    st.ret += 1
                else:
                    st.exc += 1
            elif allow_inherited and (cur is None or depth == cur):
                st.inherited += 1
                cur = depth - 1
            else:
                errors.append("%s: %s of %s at depth %s with no open frame" % (
                    where, kind.upper(), name, depth))
        else:
            errors.append("%s: unknown kind %r" % (where, kind))
    for f in stack:
        stats[f[1]].open += 1
    return stats, errors


def group_threads(events):
    by = collections.OrderedDict()
    for ev in events:
        key = ev.get("thread", ev.get("tid"))
        by.setdefault(key, []).append(ev)
    for key, evs in by.items():
        if all(isinstance(e.get("index_seq"), int) for e in evs):
            evs.sort(key=lambda e: e["index_seq"])
    return by


# ---------------------------------------------------------------- target checks

def check_fn_row(rep, ctx, fn, want, got, calls_only=False):
    """want = [calls, unwound, lost, either]; got = FnStats."""
    calls, unw, lost, either = want
    if got.call != calls:
        rep.fail("%s: %s called %d times, the trace has %d CALLs" % (ctx, fn, calls, got.call))
        return
    if calls_only:
        return
    exc_lo, exc_hi = unw, unw + lost + either
    ret_lo, ret_hi = calls - unw - lost - either, calls - unw
    ok = (exc_lo <= got.exc <= exc_hi and ret_lo <= got.ret <= ret_hi and
          got.open <= lost and got.ret + got.exc + got.open == calls)
    if not ok:
        rep.fail("%s: %s: %d CALLs, %d RETURNs, %d EXCEPTIONs, %d left open; expected "
                 "RETURN %s, EXCEPTION %s, open <= %d (frames unwound %d, lost %d, "
                 "tail-called %d)" % (ctx, fn, got.call, got.ret, got.exc, got.open,
                                      rng(ret_lo, ret_hi), rng(exc_lo, exc_hi), lost,
                                      unw, lost, either))


def rng(lo, hi):
    return str(lo) if lo == hi else "%d..%d" % (lo, hi)


def read_syms(pid_dir):
    """name -> status from modules/*.syms (for telling why a function is missing)."""
    status = {}
    for p in glob.glob(os.path.join(pid_dir, "modules", "*.syms")):
        try:
            with open(p, errors="replace") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 6 and parts[0] == "F":
                        status.setdefault(parts[5], (parts[4], os.path.basename(p)))
        except OSError:
            pass
    return status


def is_own_module(module, own):
    if not isinstance(module, str):
        return False
    base = os.path.basename(module)
    return any(base == o or module == o for o in own)


def check_unexpected(rep, ctx, events, table, own):
    seen = collections.Counter()
    for ev in events:
        if not is_own_module(ev.get("module"), own):
            continue
        name = ev.get("function")
        if name in table:
            continue
        if name and name.endswith(".cold"):
            seen["%s (a .cold fragment: entered by a jump from its function, never "
                 "called, so it must not be hooked)" % name] += 1
        elif not name:
            seen["<no name, function_id %s>" % ev.get("function_id")] += 1
        elif not (name in IGNORED_OWN or name.startswith("tc_") or name.startswith("_Z")
                  or "::" in name):
            seen[name] += 1
    for name, n in seen.most_common(MAX_REPORTED):
        rep.fail("%s: %d events for %s, which is in the program's own image but not in "
                 "its call table" % (ctx, n, name))


def sum_rows(rows):
    out = collections.defaultdict(lambda: [0, 0, 0, 0])
    for fns in rows:
        for fn, v in fns.items():
            o = out[fn]
            for i in range(4):
                o[i] += v[i]
    return out


def zero_excluded(files, absent):
    """Excluded functions: the program ran them, the trace must not show them."""
    def fix(fns):
        return {fn: ([0, 0, 0, 0] if any(fnmatch.fnmatch(fn, g) for g in absent) else v)
                for fn, v in fns.items()}
    return [f._replace(totals=fix(f.totals),
                       threads={k: fix(fns) for k, fns in f.threads.items()}) for f in files]


def walk_all(rep, ctx, events, allow_inherited, calls_only):
    """Walks every trace thread; returns ({thread key: stats}, {tid: [keys]})."""
    per_thread, tids = {}, {}
    for key, evs in group_threads(events).items():
        stats, errors = walk_thread(evs, allow_inherited)
        if calls_only:
            errors = []
        for e in errors[:MAX_REPORTED]:
            rep.fail("%s thread_%s: %s" % (ctx, key, e))
        if len(errors) > MAX_REPORTED:
            rep.fail("%s thread_%s: ... %d more depth errors" % (
                ctx, key, len(errors) - MAX_REPORTED))
        per_thread[key] = stats
        tids.setdefault(evs[0].get("tid"), []).append(key)
    return per_thread, tids


def check_totals(rep, ctx, pid_dir, files, per_thread, absent):
    """CALLs per function over the whole process; returns the functions whose
    totals are wrong (so the per-thread check does not repeat them)."""
    total = collections.defaultdict(FnStats)
    for stats in per_thread.values():
        for fn, st in stats.items():
            total[fn].add(st)
    want_total = sum_rows(cf.totals for cf in files)
    syms = None
    for fn, want in want_total.items():
        if want[0] and not total[fn].call:
            syms = syms if syms is not None else read_syms(pid_dir)
            why = syms.get(fn)
            rep.fail("%s: %s ran %d times but has no CALL in the trace (%s)" % (
                ctx, fn, want[0], "modules/%s says %s" % (why[1], why[0]) if why
                else "not listed in any modules/*.syms"))
        elif total[fn].call != want[0]:
            excluded = any(fnmatch.fnmatch(fn, g) for g in absent)
            rep.fail("%s: %s %s, the trace has %d CALLs" % (
                ctx, fn, "was excluded from recording" if excluded else
                "ran %d times" % want[0], total[fn].call))
    return {fn for fn, want in want_total.items() if total[fn].call != want[0]}


def check_threads(rep, ctx, files, per_thread, tids, table, total_bad, calls_only):
    """Program threads and trace threads meet by OS thread id; each pair is
    held to the program's per-thread counts."""
    want_by_tid = collections.defaultdict(list)
    for cf in files:
        for (label, tid), fns in cf.threads.items():
            want_by_tid[tid].append(fns)
    if not set(want_by_tid) & set(tids):
        rep.fail("%s: no trace `tid` is an OS thread id of the program (program: %s, "
                 "trace: %s); matching threads by their call counts instead" % (
                     ctx, sorted(want_by_tid), sorted(tids, key=str)))
        tids = match_by_counts(want_by_tid, tids, per_thread, table)
    missing = []
    for tid, rows in want_by_tid.items():
        keys = tids.get(tid)
        if not keys:
            missing.append("%s (tid %d)" % ("/".join(k[0] for cf in files for k in cf.threads
                                                     if k[1] == tid), tid))
            continue
        got = collections.defaultdict(FnStats)
        for k in keys:
            for fn, st in per_thread[k].items():
                got[fn].add(st)
        for fn, want in sum_rows(rows).items():
            if fn in total_bad and got[fn].call != want[0]:
                continue  # already reported for the whole process
            check_fn_row(rep, "%s tid %d" % (ctx, tid), fn, want, got[fn], calls_only)
    if missing:
        rep.fail("%s: %d of the program's %d threads have no events in the trace (%d trace "
                 "threads): %s%s" % (ctx, len(missing), len(want_by_tid), len(tids),
                                     ", ".join(missing[:8]), ", ..." if len(missing) > 8 else ""))
    for tid, keys in tids.items():
        if tid in want_by_tid:
            continue
        stray = {fn: st.call for k in keys for fn, st in per_thread[k].items()
                 if fn in table and st.call}
        rep.check(not stray, "%s: trace thread(s) %s (tid %s) hold calls of the program's "
                  "functions %s, but the program had no such thread" % (ctx, keys, tid, stray))


def check_pid(ada, rep, session, pid, files, own, allow_inherited, absent=(), absent_mod=(),
              calls_only=False):
    """Everything about one process: its directory, events, names, depths,
    and the counts of each of its program tables."""
    pid_dir = os.path.join(session, "pid_%d" % pid)
    ctx = "pid_%d" % pid
    if not os.path.isdir(pid_dir):
        rep.fail("%s: no directory %s for process %d (%s), which ran under the recorder"
                 % (ctx, pid_dir, pid, "/".join(f.program for f in files)))
        return
    check_manifest_parses(rep, pid_dir)
    events = ada.dump(pid_dir)
    if not rep.check(events, "%s: `ada dump %s --format jsonl` printed no events" % (ctx, pid_dir)):
        return
    missing = [k for k in ("kind", "depth", "function_id", "function", "module", "thread")
               if k not in events[0]]
    rep.check(not missing, "%s: dump events lack the keys %s: %r" % (ctx, missing, events[0]))
    table = set()
    for cf in files:
        table.update(cf.totals)
    check_unexpected(rep, ctx, events, table, own)
    if absent_mod:
        bad = collections.Counter(
            os.path.basename(e["module"]) for e in events if isinstance(e.get("module"), str)
            and any(fnmatch.fnmatch(os.path.basename(e["module"]), g) for g in absent_mod))
        rep.check(not bad, "%s: events from modules that were excluded (%s): %s" % (
            ctx, ",".join(absent_mod), dict(bad)))
    if absent:
        files = zero_excluded(files, absent)
    per_thread, tids = walk_all(rep, ctx, events, allow_inherited, calls_only)
    total_bad = check_totals(rep, ctx, pid_dir, files, per_thread, absent)
    check_threads(rep, ctx, files, per_thread, tids, table, total_bad, calls_only)


def match_by_counts(want_by_tid, tids, per_thread, table):
    """Fallback pairing of program threads and trace threads: equal CALL
    counts of the program's functions. Returns {program tid: [trace keys]}."""
    def vec(calls):
        return tuple(sorted((fn, n) for fn, n in calls.items() if n and fn in table))
    free = {k: vec({fn: st.call for fn, st in per_thread[k].items()})
            for keys in tids.values() for k in keys}
    out = {}
    for tid, rows in want_by_tid.items():
        want = vec({fn: v[0] for fn, v in sum_rows(rows).items()})
        for k, v in list(free.items()):
            if v == want:
                out[tid] = [k]
                del free[k]
                break
    return out


def check_manifest_parses(rep, pid_dir):
    path = os.path.join(pid_dir, "manifest.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        rep.fail("%s: %s" % (path, e))
        return None


def find_key(obj, pred):
    """All (key, value) pairs anywhere in a JSON object whose key matches."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if pred(k):
                out.append((k, v))
            out.extend(find_key(v, pred))
    elif isinstance(obj, list):
        for v in obj:
            out.extend(find_key(v, pred))
    return out


def check_crash_manifest(rep, pid_dir, sig):
    m = check_manifest_parses(rep, pid_dir)
    if m is None:
        return
    ab = find_key(m, lambda k: k == "abnormal")
    rep.check(any(v is True for _, v in ab),
              "%s/manifest.json: expected \"abnormal\": true after signal %d, found %r" % (
                  pid_dir, sig, ab))
    name = signal.Signals(sig).name
    sigs = find_key(m, lambda k: "signal" in k.lower())
    rep.check(any(v in (sig, str(sig), name, name[3:]) for _, v in sigs),
              "%s/manifest.json: expected the signal (%d, %s) under a key naming it, found %r"
              % (pid_dir, sig, name, sigs))


def target_env(counts_dir):
    env = dict(os.environ)
    env["ADA_TEST_COUNTS"] = os.path.join(counts_dir, "%n.%p.counts")
    return env


def elf_functions(paths):
    """Names of the functions defined in the ELF files among paths (nm)."""
    names = set()
    for p in paths:
        try:
            with open(p, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue
        except OSError:
            continue
        rc, out, _ = run(["nm", "--defined-only", p])
        for line in out.decode(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TtWw":
                names.add(parts[2])
    return names


def check_program_built_right(files, argv):
    """A counted function the compiler inlined or folded away would blame
    ada for calls that never were: make sure each one is a real symbol."""
    have = elf_functions(argv)
    if not have:
        return
    missing = sorted({fn for cf in files for fn, v in cf.totals.items() if v[0]} - have)
    if missing:
        raise Fail("test program bug: %s counted but not functions of %s (inlined or "
                   "folded by the compiler?)" % (missing, argv))


def check_same_behaviour(rep, cmd, session, untraced, traced):
    """Exit status, stdout and stderr (ada's own lines taken out) of the
    traced run must be those of the untraced one."""
    (rc0, out0, err0), (rc1, out1, err1) = untraced, traced
    rep.check(rc1 == rc0, "exit status: untraced %d, under `%s` %d; stderr:\n%s" % (
        rc0, " ".join(cmd), rc1, shown(err1)))
    rep.check(out1 == out0, "stdout differs from the untraced run: %s" % first_diff(out0, out1))
    perr = program_stderr(err1, session)
    rep.check(perr == err0, "stderr differs from the untraced run (ada's own 'ada:' lines "
              "removed): %s" % first_diff(err0, perr))


def run_target_twice(args, ada, work, rep):
    """Runs the program untraced, then under `ada record`; returns
    (session, untraced tables, traced tables, untraced status)."""
    argv = args.argv
    plain_counts = os.path.join(work, "counts-untraced")
    os.mkdir(plain_counts)
    interrupt = (b"ready", args.interrupt) if args.interrupt else None
    untraced = run(argv, env=target_env(plain_counts), interrupt=interrupt)
    if args.expect_status is not None and untraced[0] != args.expect_status:
        raise Fail("the untraced program exited %d, the test expects %d: %s" % (
            untraced[0], args.expect_status, shown(untraced[2])))
    plain = load_counts(plain_counts)
    check_program_built_right(plain, argv)

    traced_counts = os.path.join(work, "counts-traced")
    os.mkdir(traced_counts)
    out_dir = os.path.join(work, "out")
    env = target_env(traced_counts)
    cmd, rc1, out1, err1 = ada.record(out_dir, argv, env, args.record_opt or [],
                                      interrupt=interrupt)
    rep.note("repro: ADA_TEST_COUNTS='%s' %s" % (env["ADA_TEST_COUNTS"], " ".join(cmd)))
    session = find_session(out_dir, err1, rep)
    rep.note("session: %s" % session)
    check_arena_gone(rep, session)
    check_same_behaviour(rep, cmd, session, untraced, (rc1, out1, err1))
    traced = load_counts(traced_counts)
    if not args.nondeterministic:
        rep.check(counts_signature(plain) == counts_signature(traced),
                  "the program counted different calls when traced than untraced "
                  "(%s vs %s): its behaviour changed" % (plain_counts, traced_counts))
    ada.validate(session, rep)
    return session, plain, traced, untraced[0]


def first_process(traced):
    """The tables grouped by pid, and the pid ada started (whose parent
    wrote no table)."""
    by_pid = collections.OrderedDict()
    for cf in traced:
        by_pid.setdefault(cf.pid, []).append(cf)
    roots = [p for p, fs in by_pid.items() if all(f.ppid not in by_pid for f in fs)]
    if len(roots) != 1:
        raise Fail("cannot tell the first process among the tables %r" % sorted(by_pid))
    return by_pid, roots[0]


def cmd_target(args, ada, work, rep):
    own = set(args.own_module or []) | {os.path.basename(args.argv[0])}
    session, plain, traced, rc0 = run_target_twice(args, ada, work, rep)
    by_pid, root = first_process(traced)
    pid_dirs = sorted(os.path.basename(d) for d in glob.glob(os.path.join(session, "pid_*")))
    follow = "--no-follow" not in (args.record_opt or [])
    if args.expect_pids is None:
        args.expect_pids = len(by_pid) if follow else 1
    rep.check(len(pid_dirs) == args.expect_pids, "expected %d pid_* directories in %s, "
              "found %r (processes that ran: %r)" % (args.expect_pids, session, pid_dirs,
                                                    sorted(by_pid)))
    for pid, files in by_pid.items():
        if pid != root and not follow:
            rep.check("pid_%d" % pid not in pid_dirs, "--no-follow, yet the child %d was "
                      "recorded" % pid)
            continue
        check_pid(ada, rep, session, pid, files, own, allow_inherited=(pid != root),
                  absent=args.absent, absent_mod=args.absent_module,
                  calls_only=args.calls_only)
    root_dir = os.path.join(session, "pid_%d" % root)
    if args.expect_signal:
        check_crash_manifest(rep, root_dir, args.expect_signal)
    else:
        m = check_manifest_parses(rep, root_dir) or {}
        rep.check(m.get("abnormal") in (None, False), "pid_%d/manifest.json says "
                  "\"abnormal\": %r, but the program exited normally (status %d)" % (
                      root, m.get("abnormal"), rc0))


# ---------------------------------------------------------------- Debian programs

DEBIAN = {
    # name: (argv, stdin file, function names of which at least one must be called)
    "ls": (["/bin/ls", "-la", "/usr/bin"], None,
           {"opendir", "__opendir", "fdopendir", "readdir", "readdir64", "__readdir64",
            "statx", "lstat", "lstat64", "fstatat", "fstatat64", "qsort", "strcoll"}),
    "ls_on_path": (["ls", "/usr/share"], None,  # found through $PATH
                   {"opendir", "__opendir", "fdopendir", "readdir", "readdir64", "__readdir64",
                    "strcoll", "qsort", "write", "__write"}),
    # The target must see no descriptor of the recorder or the agent.
    "ls_fds": (["/bin/ls", "/proc/self/fd"], None,
               {"opendir", "__opendir", "fdopendir", "readdir", "readdir64", "__readdir64"}),
    "ls_missing": (["/bin/ls", "/nonexistent-ada-itest"], None,
                   {"lstat", "lstat64", "statx", "fstatat", "fstatat64", "strerror",
                    "error", "dcgettext"}),
    "gzip": (["/bin/gzip", "-c", "@DATA@"], None,
             {"read", "__read", "write", "__write", "open", "open64", "openat", "openat64"}),
    "sort": (["/usr/bin/sort"], "@DATA@",
             {"read", "__read", "write", "__write", "memcmp", "strcoll", "fwrite",
              "fwrite_unlocked", "qsort", "memchr", "getdelim"}),
    "sh_pipeline": (["/bin/sh", "-c", "ls /usr/share | sort -r | head -n 5; exit 3"], None,
                    {"fork", "_Fork", "__libc_fork", "execve", "pipe", "pipe2", "dup2",
                     "waitpid", "wait4", "__wait4"}),
    # `yes` dies of SIGPIPE while traced (a followed child killed by a signal).
    "yes_head": (["/bin/sh", "-c", "yes | head -n 3"], None,
                 {"write", "__write", "fwrite", "fwrite_unlocked", "fputs", "fputs_unlocked"}),
    # A C++ program: libstdc++ hooked, its start-up and exit paths traced.
    "cmake_version": (["/usr/bin/cmake", "--version"], None, {"module:libstdc++"}),
    "python3": (["/usr/bin/python3", "-c", "pass"], None,
                {"Py_BytesMain", "Py_RunMain", "Py_InitializeFromConfig", "Py_Initialize",
                 "Py_Main", "PyRun_SimpleStringFlags", "Py_FinalizeEx"}),
}


def make_data(path):
    """Deterministic text with repeats (compressible, unsorted)."""
    x = 12345
    with open(path, "w") as f:
        for i in range(5000):
            x = (x * 1103515245 + 12345) % (1 << 31)
            f.write("line %06d %s\n" % (x % 50000, "abcdefghij"[x % 10] * (x % 17)))


def cmd_debian(args, ada, work, rep):
    argv, stdin, wanted = DEBIAN[args.name]
    if not shutil.which(argv[0]):
        raise Fail("%s is not installed" % argv[0])
    data = os.path.join(work, "data.txt")
    make_data(data)
    argv = [data if a == "@DATA@" else a for a in argv]
    stdin = data if stdin == "@DATA@" else stdin
    env = dict(os.environ, LC_ALL="C")
    rc0, out0, err0 = run(argv, env=env, stdin_path=stdin)
    out_dir = os.path.join(work, "out")
    cmd, rc1, out1, err1 = ada.record(out_dir, argv, env, stdin_path=stdin)
    rep.note("repro: LC_ALL=C %s%s" % (" ".join(cmd), " < " + stdin if stdin else ""))
    session = find_session(out_dir, err1, rep)
    rep.note("session: %s" % session)
    check_arena_gone(rep, session)
    check_same_behaviour(rep, cmd, session, (rc0, out0, err0), (rc1, out1, err1))
    ada.validate(session, rep)
    pid_dirs = sorted(glob.glob(os.path.join(session, "pid_*")))
    if not rep.check(pid_dirs, "no pid_* directory in %s" % session):
        return
    if args.name == "sh_pipeline":
        # sh forks ls, sort and head: children are followed by default.
        rep.check(len(pid_dirs) >= 4, "expected the shell and its three children (4 pid_* "
                  "directories), found %r" % [os.path.basename(d) for d in pid_dirs])
    events = []
    for d in pid_dirs:
        check_manifest_parses(rep, d)
        events.extend(ada.dump(d))
    calls = collections.Counter(fn_name(e) for e in events if e.get("kind") == "call")
    seen = set(calls)
    modules = {os.path.basename(e.get("module") or "") for e in events}
    # "module:NAME" in the wanted set: any event of a module whose file name has NAME.
    seen.update(w for w in wanted if w.startswith("module:") and any(w[7:] in m for m in modules))
    rep.check(sum(calls.values()) > 0, "no CALL events recorded for %s" % " ".join(argv))
    named = [n for n in calls if not n.startswith("<fid")]
    rep.check(named, "no recorded function has a name (dump's `function` is always null)")
    rep.check(wanted & seen, "none of %s was recorded as called; most called: %s" % (
        sorted(wanted), calls.most_common(8)))
    rep.note("%d events, %d distinct functions called" % (len(events), len(calls)))


# ---------------------------------------------------------------- bad input

def cmd_bad(args, ada, work, rep):
    kind = args.kind
    d = os.path.join(work, "input")
    os.mkdir(d)
    argv_tail = ["arg"]
    if kind == "nonexistent":
        prog = os.path.join(d, "no-such-program")
    elif kind == "notonpath":
        prog = "ada-itest-no-such-command"  # looked up in $PATH
    elif kind == "noprogram":
        prog, argv_tail = None, []
    elif kind == "directory":
        prog = d
    elif kind == "nonelf":
        prog = os.path.join(d, "notes.txt")
        with open(prog, "w") as f:
            f.write("this is a text file, not a program\n")
        os.chmod(prog, 0o755)
    elif kind == "static":
        prog = args.static
        if not prog or not os.path.exists(prog):
            raise Fail("no static test binary given (--static)")
    elif kind == "setuid":
        prog = os.path.join(d, "setuid-copy")
        shutil.copy(args.setuid_src, prog)
        os.chmod(prog, 0o4755)
        if not os.stat(prog).st_mode & stat.S_ISUID:
            raise Fail("could not set the setuid bit on %s" % prog)
    else:
        raise Fail("unknown bad-input kind %s" % kind)
    out_dir = os.path.join(work, "out")
    cmd, rc, out, err = ada.record(out_dir, ([prog] if prog else []) + argv_tail,
                                   dict(os.environ))
    lines = [l for l in err.decode(errors="replace").splitlines() if l.strip()]
    rep.check(rc != 0, "`%s` exited 0; it must refuse %s" % (" ".join(cmd), kind))
    rep.check(len(lines) == 1, "`%s`: expected exactly one line on stderr, got %d: %r" % (
        " ".join(cmd), len(lines), lines[:6]))
    rep.check(not out.strip(), "`%s` printed on stdout: %r" % (" ".join(cmd), out[:300]))
    if kind == "static":
        rep.check(lines and "static" in lines[0].lower(),
                  "the sentence for a static binary should say it is static (LD_PRELOAD "
                  "cannot work): %r" % lines[:1])
    left = []
    if os.path.isdir(out_dir):
        for root, dirs, files in os.walk(out_dir):
            left.extend(os.path.join(root, x) for x in dirs + files)
    rep.check(not any(os.path.basename(p).startswith("session_") for p in left),
              "a session was left behind in %s: %r" % (out_dir, left[:10]))
    rep.note("stderr: %r" % lines)


# ---------------------------------------------------------------- self-test

def ev(kind, fn, depth, fid=None, seq=[0]):
    seq[0] += 1
    return {"kind": kind, "function": fn, "depth": depth, "index_seq": seq[0],
            "function_id": fid if fid is not None else hash(fn) & 0xffff}


def cmd_selftest(args, ada, work, rep):
    """The checks themselves must fail on wrong traces: feed the walker and
    the per-function rule hand-made event streams, good and bad."""
    def walk(evs, inherited=False):
        return walk_thread(evs, inherited)

    def row_fails(want, evs):
        r = Report()
        stats, _ = walk(evs)
        check_fn_row(r, "self", "f", want, stats["f"])
        return bool(r.failures)

    good = [ev("call", "main", 1), ev("call", "f", 2), ev("call", "g", 3), ev("return", "g", 3),
            ev("return", "f", 2), ev("return", "main", 1)]
    stats, errors = walk(good)
    rep.check(not errors and stats["f"].call == 1 and stats["f"].ret == 1, "balanced: %r" % errors)
    _, errors = walk([ev("call", "main", 1), ev("call", "f", 3), ev("return", "f", 3)])
    rep.check(errors, "a CALL two levels deeper must be an error")
    _, errors = walk([ev("call", "main", 1), ev("call", "f", 2), ev("return", "main", 1)])
    rep.check(errors, "a RETURN of an outer frame while an inner one is open must be an error")
    _, errors = walk([ev("call", "f", 2), ev("return", "f", 2), ev("return", "main", 1)])
    rep.check(errors, "a RETURN with no open frame must be an error in the first process")
    _, errors = walk([ev("return", "fork", 3), ev("call", "f", 3), ev("return", "f", 3),
                      ev("return", "main", 2)], inherited=True)
    rep.check(not errors, "a forked child may end frames it inherited: %r" % errors)
    unwound = [ev("call", "f", 1), ev("call", "g", 2), ev("exception", "g", 2),
               ev("exception", "f", 1)]
    rep.check(not row_fails([1, 1, 0, 0], unwound), "an unwound frame with its EXCEPTION passes")
    rep.check(row_fails([1, 0, 0, 0], unwound), "an EXCEPTION where none was expected must fail")
    rep.check(row_fails([1, 1, 0, 0], [ev("call", "f", 1), ev("return", "f", 1)]),
              "a RETURN where the frame was unwound must fail")
    rep.check(row_fails([1, 1, 0, 0], [ev("call", "f", 1)]), "a missing EXCEPTION must fail")
    rep.check(row_fails([2, 0, 0, 0], [ev("call", "f", 1), ev("return", "f", 1)]),
              "a missing CALL must fail")
    rep.check(not row_fails([1, 0, 1, 0], [ev("call", "f", 1)]), "a lost frame may stay open")
    rep.check(not row_fails([1, 0, 0, 1], [ev("call", "f", 1), ev("exception", "f", 1)]),
              "a tail-calling frame may end in an EXCEPTION")
    rep.check(row_fails([1, 0, 0, 1], [ev("call", "f", 1)]),
              "a tail-calling frame must still end")
    stats, errors = walk([ev("call", "main", 1), ev("call", "execv", 2), ev("call", "main", 1),
                          ev("return", "main", 1)])
    rep.check(not errors and stats["execv"].open == 1, "exec replaces the image: %r" % errors)
    r = Report()
    check_unexpected(r, "self", [{"module": "/x/t_prog", "function": "a.cold"},
                                 {"module": "/x/t_prog", "function": "tc_report"},
                                 {"module": "/lib/libc.so.6", "function": "malloc"}],
                     {"main"}, {"t_prog"})
    rep.check(len(r.failures) == 1 and ".cold" in r.failures[0],
              "a hooked .cold fragment must be reported, helpers and libc not: %r" % r.failures)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True, help="parent of the per-test work directory")
    ap.add_argument("--name", default="itest", help="test name (work directory name)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("target")
    t.add_argument("--own-module", action="append",
                   help="basename of another image of the program (dlopen'ed library, "
                        "exec'ed program)")
    t.add_argument("--record-opt", action="append", help="option for ada record")
    t.add_argument("--expect-pids", type=int)
    t.add_argument("--expect-status", type=int)
    t.add_argument("--expect-signal", type=int)
    t.add_argument("--absent", action="append", default=[], metavar="GLOB",
                   help="the program's functions matching GLOB must have no events "
                        "(excluded from recording)")
    t.add_argument("--absent-module", action="append", default=[], metavar="GLOB",
                   help="no events from modules whose file name matches GLOB")
    t.add_argument("--interrupt", type=int, metavar="SIG",
                   help="when the program prints 'ready', send SIG to the whole process "
                        "group (ada and the program), as a Ctrl-C does")
    t.add_argument("--calls-only", action="store_true",
                   help="assert CALL counts only, not nesting (coroutines switch stacks)")
    t.add_argument("--nondeterministic", action="store_true",
                   help="the call counts differ run to run (asynchronous signals)")
    t.add_argument("argv", nargs=argparse.REMAINDER)
    dbn = sub.add_parser("debian")
    dbn.add_argument("name", choices=sorted(DEBIAN))
    b = sub.add_parser("bad")
    b.add_argument("kind", choices=["nonexistent", "notonpath", "noprogram", "directory",
                                   "nonelf", "static", "setuid"])
    b.add_argument("--static")
    b.add_argument("--setuid-src")
    sub.add_parser("selftest", help="check the checks on hand-made event streams")
    args = ap.parse_args()
    if args.cmd == "target":
        if args.argv and args.argv[0] == "--":
            args.argv = args.argv[1:]
        if not args.argv:
            ap.error("target: PROG missing after --")

    os.makedirs(args.work, exist_ok=True)
    base = os.path.join(args.work, args.name)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    work = tempfile.mkdtemp(dir=base)
    ada = Ada(args.ada)
    rep = Report()
    try:
        {"target": cmd_target, "debian": cmd_debian, "bad": cmd_bad,
         "selftest": cmd_selftest}[args.cmd](args, ada, work, rep)
    except Skip as e:
        print("SKIP: %s" % e)
        shutil.rmtree(base, ignore_errors=True)
        return SKIP
    except Fail as e:
        rep.fail(str(e))
    for n in rep.notes:
        print("note: %s" % n)
    if rep.failures:
        for f in rep.failures[:MAX_REPORTED * 2]:
            print("FAIL: %s" % f)
        if len(rep.failures) > MAX_REPORTED * 2:
            print("FAIL: ... and %d more" % (len(rep.failures) - MAX_REPORTED * 2))
        print("work directory kept: %s" % work)
        return 1
    print("PASS")
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
