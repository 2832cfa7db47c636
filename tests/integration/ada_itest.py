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
import gc
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
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from syms_files import syms_lines  # noqa: E402  (beside this file)
import atf_check  # noqa: E402  (the independent ATF checker beside this file)

SKIP = 77
NOT_IMPLEMENTED = re.compile(rb"not implemented", re.I)
RUN_TIMEOUT = 30
MAX_REPORTED = 25

# Functions of a test program's own image that are not in its table and not
# asserted: C runtime start-up, the tcount helpers, C++ library code.
IGNORED_OWN = {"_init", "_fini", "_start", "frame_dummy", "register_tm_clones",
               "deregister_tm_clones", "__do_global_dtors_aux", "atexit",
               "_dl_relocate_static_pie", "__libc_csu_init", "__libc_csu_fini",
               # aarch64: gcc's outline atomics (libgcc, linked into the
               # program: every atomic is a call to __aarch64_<op><size>_<order>)
               "init_have_lse_atomics"}
OUTLINE_ATOMICS = re.compile(r"^__aarch64_(cas|swp|ldadd|ldclr|ldeor|ldset)\d+_(relax|acq|rel|acq_rel)$")


EXEC_NAMES = re.compile(r"^(__)?(f?exec[a-z]*|execveat)$")

# The fatal-signal marker the drain appends for a crashed thread
# (docs/format.md: an EXCEPTION whose depth has bit 31), not a frame:
# `ada dump --format jsonl` prints it as kind "signal" with a null depth
# and the signal in "signal" (docs/dump.md).
def is_signal_marker(ev):
    return ev.get("kind") == "signal"


# ada's wait for ring space (docs/format.md, "Wait markers"): two
# EXCEPTION events that are not frames, kinds "ada_wait_begin" and
# "ada_wait_end" in `ada dump --format jsonl` (docs/dump.md).
def is_wait_marker(ev):
    return ev.get("kind") in ("ada_wait_begin", "ada_wait_end")


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


def core_preexec():
    """no_core for a child, or None when this process has no core limit
    to give (main sets its own): a preexec_fn makes Popen fork and run
    Python in the child, where without one it can vfork, ~40 ms less CPU
    per command once the harness holds a parsed dump."""
    return None if resource.getrlimit(resource.RLIMIT_CORE) == (0, 0) else no_core


def run(cmd, env=None, stdin_path=None, timeout=RUN_TIMEOUT, cwd=None, interrupt=None):
    """Runs cmd in a process group of its own; returns (status, stdout,
    stderr), status 128+N for signal N. On timeout the whole group (the
    recorder and the program it started) is killed. interrupt=(line, sig):
    once stdout shows that line, sig goes to the whole group (a Ctrl-C)."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        p = subprocess.Popen(cmd, env=env, stdin=stdin, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=core_preexec(), cwd=cwd,
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

# ADA_TEST_INDEX_FORMAT=atf|compact: every recording is made with that
# --index-format (unset: ada's default, compact). The independent checker
# reads ATF v2 files as they are and a compact session's `ada export
# --format atf` copy (check_independent).
INDEX_FORMAT = os.environ.get("ADA_TEST_INDEX_FORMAT", "")
ADA_PATH = [None]


def tree_state(d):
    """(path, size, mtime) of every file under d: what a dump of d reads."""
    out = []
    for root, _, files in os.walk(d):
        for f in files:
            try:
                st = os.stat(os.path.join(root, f))
            except OSError:
                continue
            out.append((os.path.join(root, f), st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


class Ada:
    def __init__(self, path):
        self.path = path
        self.last_dump = None  # (directory, tree_state, events)
        ADA_PATH[0] = path

    def record(self, out, argv, env, opts=(), stdin_path=None, interrupt=None):
        fmt = ["--index-format", INDEX_FORMAT] if INDEX_FORMAT else []
        cmd = [self.path, "record", "--out", out] + fmt + list(opts) + ["--"] + argv
        try:
            rc, o, e = run(cmd, env=env, stdin_path=stdin_path, interrupt=interrupt)
        except Fail:
            # Killed on timeout: the recorder could not remove its arena.
            for session in glob.glob(os.path.join(out, "session_*")):
                check_arena_gone(Report(), session)
            raise
        skip_if_unimplemented("ada record", rc, e)
        return cmd, rc, o, e

    def validate(self, d, rep, independent=True):
        rc, o, e = run([self.path, "validate", d])
        skip_if_unimplemented("ada validate", rc, e)
        rep.check(rc == 0, "`ada validate %s` exited %d:\n%s%s" % (
            d, rc, shown(o, 1500), shown(e, 1500)))
        if independent:
            check_independent(rep, d)

    def dump(self, d):
        """The events of `ada dump d --format jsonl`, parsed. One dump per
        session state: a test that asks again for the same directory, its
        files unchanged, gets the same list, parsed the first time (the
        flight checks ask several times for one recording). Shared: read
        it, do not change it (OffsetAda, which renames, copies)."""
        state = (os.path.abspath(d), tree_state(d))
        if not self.last_dump or self.last_dump[:2] != state:
            self.last_dump = state + (self.dump_now(d),)
        return self.last_dump[2]

    def dump_linked(self, d):
        """The events of `ada dump d --format jsonl` for counting: each
        line's keys before "detail" parsed (all but "detail" and what
        follows it, duration_ns), and "linked" True when the event links
        a detail record ("detail", an object, is there only then:
        docs/dump.md). Parsing every record's registers and stack is most
        of a full dump's (ada.dump) time over a big recording; a line cut
        anywhere but at its own top-level key, which would not parse as
        one object, has the whole dump parsed instead."""
        cmd = [self.path, "dump", d, "--format", "jsonl"]
        rc, o, e = run(cmd, timeout=RUN_TIMEOUT * 2)
        skip_if_unimplemented("ada dump", rc, e)
        if rc != 0:
            raise Fail("`%s` exited %d: %s" % (" ".join(cmd), rc, shown(e)))
        heads, linked = [], []
        for line in o.splitlines():
            if not line.strip():
                continue
            head, cut, rest = line.partition(b',"detail":')
            heads.append(head + b"}" if cut else head)
            linked.append(rest[:1] == b"{")
        try:
            events = json.loads(b"[" + b",".join(heads) + b"]")
        except ValueError:
            events = None
        if events is None or not all(isinstance(ev, dict) for ev in events):
            events = [dict(ev) for ev in self.dump(d)]  # the shared list unchanged
            linked = [isinstance(ev.get("detail"), dict) for ev in events]
        for ev, lk in zip(events, linked):
            ev["linked"] = lk
        return events

    def dump_now(self, d):
        cmd = [self.path, "dump", d, "--format", "jsonl"]
        rc, o, e = run(cmd, timeout=RUN_TIMEOUT * 2)
        skip_if_unimplemented("ada dump", rc, e)
        if rc != 0:
            raise Fail("`%s` exited %d: %s" % (" ".join(cmd), rc, shown(e)))
        # One parse of the whole stream is ~5x faster than one per line;
        # its lines made an array by one replace, and no collection of
        # the garbage collector while it builds a million dicts (20% of
        # the parse). Blank lines or bytes that are not UTF-8: as before.
        gc.disable()
        try:
            return json.loads(b"[" + o.strip().replace(b"\n", b",") + b"]")
        except ValueError:
            pass
        finally:
            gc.enable()
        lines = [l for l in o.decode(errors="replace").splitlines() if l.strip()]
        try:
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
    check_ring_waits(rep, session, lines)
    return session


def check_every_thread_waited(rep, pid_dir, tids):
    """--ring-waits: each thread the program started (the tids of its call
    tables' threads but main) waited for ring space: every one took the
    producer's slow path."""
    with open(os.path.join(pid_dir, "manifest.json")) as f:
        m = json.load(f)
    waits = {t.get("tid"): t.get("ring_waits", 0) for t in m.get("threads", [])}
    idle = sorted(tid for tid in tids if not waits.get(tid))
    rep.check(tids and not idle, "--ring-waits: the program's threads %r never waited for "
              "ring space (manifest ring_waits by tid: %r)" % (idle, waits))


def check_ring_waits(rep, session, lines):
    """Every scenario: each manifest's metrics.ring_waits / ring_waited_ns
    are its threads' sums, and the summary says the waits for ring space
    (every process's) exactly when there were some."""
    if not any(l.startswith("ada: recorded ") for l in lines):
        return  # no summary: the recorder was stopped short (killrec, ...)
    waits = ns = 0
    for path in glob.glob(os.path.join(session, "pid_*", "manifest.json")):
        try:
            with open(path) as f:
                m = json.load(f)
        except (OSError, ValueError):
            continue  # check_manifest_parses says so
        mw, mns = m["metrics"].get("ring_waits"), m["metrics"].get("ring_waited_ns")
        tw = sum(t.get("ring_waits", 0) for t in m.get("threads", []))
        tns = sum(t.get("ring_waited_ns", 0) for t in m.get("threads", []))
        rep.check(mw == tw and mns == tns and (mw == 0) == (mns == 0),
                  "%s: metrics.ring_waits %r / ring_waited_ns %r should be its threads' "
                  "sums %d / %d" % (path, mw, mns, tw, tns))
        waits += mw or 0
        ns += mns or 0
    said = [l for l in lines if l.startswith("ada: the program's threads waited ")
            and "for ring space" in l]
    want = "ada: the program's threads waited %d time%s (%.3f s in all) for ring space" % (
        waits, "" if waits == 1 else "s", ns / 1e9)
    rep.check(len(said) == (1 if waits else 0) and all(l.startswith(want) for l in said),
              "with %d waits for ring space (%d ns) the summary should %s %r: %r" % (
                  waits, ns, "say once" if waits else "not say", want, said))


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

CountFile = collections.namedtuple("CountFile", "path program pid ppid totals threads agent")


def parse_counts(path):
    """A tcount table: totals[fn] = [calls, unwound, lost, either];
    threads[(label, tid)][fn] = the same."""
    totals, threads = collections.OrderedDict(), collections.OrderedDict()
    program, pid, ppid, agent = None, None, None, None
    with open(path) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            if p[0] == "#":
                kv = dict(x.split("=", 1) for x in p if "=" in x)
                program, pid, ppid = kv.get("program"), int(kv["pid"]), int(kv["ppid"])
                agent = kv.get("agent")
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
    return CountFile(path, program, pid, ppid, totals, threads, agent)


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
    waiting = False  # between a wait's BEGIN and its END
    for ev in events:
        if is_signal_marker(ev):
            continue  # not a frame: checked by check_crash_manifest
        if is_wait_marker(ev):  # not a frame: a BEGIN, then its END
            begin = ev.get("kind") == "ada_wait_begin"
            if begin == waiting or ev.get("depth") is not None:
                errors.append("index_seq %s: %s out of place" % (ev.get("index_seq"),
                                                                 ev.get("kind")))
            waiting = begin
            continue
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
    """name -> status from module_*.syms (for telling why a function is missing)."""
    status = {}
    for p in glob.glob(os.path.join(pid_dir, "*.syms")):
        try:
            for line in syms_lines(p):
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
    mine = {}  # by module path: a few modules, up to millions of events
    for ev in events:
        module = ev.get("module")
        if module not in mine:
            mine[module] = is_own_module(module, own)
        if not mine[module]:
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
                  or "::" in name or "(" in name  # C++, demangled or not
                  or OUTLINE_ATOMICS.match(name)):
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


def count_only_calls(rep, ctx, pid_dir):
    """The count-only functions' calls the agent counted: {name: calls}."""
    try:
        with open(os.path.join(pid_dir, "manifest.json")) as f:
            co = json.load(f).get("count_only")
    except (OSError, ValueError) as ex:
        rep.fail("%s: cannot read manifest.json for its count_only (%s)" % (ctx, ex))
        return {}
    if not rep.check(isinstance(co, dict) and co.get("final") is True,
                     "%s: manifest.json has no final count_only section: %r" % (ctx, co)):
        return {}
    out = collections.Counter()
    for e in co.get("functions", []):
        out[e.get("name")] += e.get("calls", 0)
    return out


def subtract_counted(rep, ctx, files, counts, globs):
    """Count-only functions: the program's calls minus the agent's counts are
    the CALL events the trace must hold (a thread's calls before it counts);
    how they split over threads is not known, so only totals are held."""
    fns = {fn for cf in files for fn in cf.totals
           if fn in counts or any(fnmatch.fnmatch(fn, g) for g in globs)}
    for fn in sorted(fns):
        want = sum(cf.totals[fn][0] for cf in files if fn in cf.totals)
        # A function named by the test must have been counted; one the
        # budget chose itself may have been moved after its last call
        # (work_b's short burst at the end of each thread): then every call
        # is an event, which the totals below still hold exactly.
        named = any(fnmatch.fnmatch(fn, g) for g in globs)
        rep.check(counts.get(fn, 0) > 0 or want == 0 or not named, "%s: %s ran %d times, "
                  "--count-only counted none of them (counts: %r)" % (ctx, fn, want, dict(counts)))
        rep.check(counts.get(fn, 0) <= want, "%s: %s ran %d times, the agent counted %d" % (
            ctx, fn, want, counts.get(fn, 0)))
    left = dict((fn, counts.get(fn, 0)) for fn in fns)

    def fix(fns_row):
        out = {}
        for fn, v in fns_row.items():
            if fn in left:
                take = min(left[fn], v[0])
                left[fn] -= take
                v = [v[0] - take] + list(v[1:])
            out[fn] = v
        return out
    return [f._replace(totals=fix(f.totals)) for f in files], fns


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
                ctx, fn, want[0], "%s says %s" % (why[1], why[0]) if why
                else "not listed in any module_*.syms"))
        elif total[fn].call != want[0]:
            excluded = any(fnmatch.fnmatch(fn, g) for g in absent)
            rep.fail("%s: %s %s, the trace has %d CALLs" % (
                ctx, fn, "was excluded from recording" if excluded else
                "ran %d times" % want[0], total[fn].call))
    return {fn for fn, want in want_total.items() if total[fn].call != want[0]}


def check_threads(rep, ctx, files, per_thread, tids, table, total_bad, calls_only, skip=()):
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
            if fn in skip:
                continue  # count-only: the totals hold it
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
              calls_only=False, detail_set=None, detail_exact=True, count_only=()):
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
    counted = set()
    if count_only:
        files, counted = subtract_counted(rep, ctx, files, count_only_calls(rep, ctx, pid_dir),
                                          count_only)
    per_thread, tids = walk_all(rep, ctx, events, allow_inherited, calls_only)
    total_bad = check_totals(rep, ctx, pid_dir, files, per_thread, absent)
    check_threads(rep, ctx, files, per_thread, tids, table, total_bad, calls_only, counted)
    if detail_set:
        check_detail_set(rep, ctx, pid_dir, events, detail_set, detail_exact)


def check_detail_set(rep, ctx, pid_dir, events, globs, exact):
    """--detail-set: the detail lane on (--detail always) with a
    --detail-symbols set that takes some functions and leaves others out.
    Every CALL/RETURN event of a function in the set links exactly one
    detail record of its kind, no event outside the set links one, and the
    detail files hold exactly the linked records -- or, `exact` false (a
    ring too small to keep them all, asynchronous signals whose calls in a
    handler's window take the side path, which writes no detail record),
    every record missing is counted: the links are a subset of the set's
    events, the detail files hold what is linked, and the records the
    manifest counts as dropped or overwritten make up the difference
    (ring too small) or are none (signals)."""
    # A function is in the set when any of its names is (an alias at the
    # same address, module_*.syms: `raise` is in [a-m]* as `gsignal`).
    names = {}
    for p in glob.glob(os.path.join(pid_dir, "*.syms")):
        by_addr = collections.defaultdict(list)
        for line in syms_lines(p):
            parts = line.split()
            if len(parts) >= 6 and parts[0] == "F":
                by_addr[parts[2]].append(parts[5])
        for group in by_addr.values():
            for nm in group:
                names.setdefault(nm, set()).update(group)
    # dlopen, dlmopen and dlclose are special functions (the agent rescans
    # when they return), which get no detail record: outside the set here.
    special = {"dlopen", "dlmopen", "dlclose"}
    membership = {}  # by function name: a few names, hundreds of thousands of events

    def in_set(fn):
        if fn not in membership:
            aliases = names.get(fn, {fn or ""})
            membership[fn] = not any(nm in special for nm in aliases) and any(
                fnmatch.fnmatchcase(nm, g) for nm in aliases for g in globs.split(","))
        return membership[fn]
    # Which set is current changes over the run: the agent's own (built
    # from the same globs) until the recorder publishes one, then the
    # published ones. A published set that says nothing about a module (no
    # directory entry: it was built before the recorder read that module,
    # or the module came later; or an `unknown` entry: a gap below modules
    # it had read) leaves the answer to the agent's own set, so every event
    # of a function in the set links its record, whatever the recorder had
    # read: no exemption.
    m = json.load(open(os.path.join(pid_dir, "manifest.json")))
    versions = (m.get("detail", {}).get("keysym") or {}).get("versions") or []
    rep.check(not (m.get("detail", {}).get("keysym") or {}).get("versions_not_listed"),
              "%s: key-symbol versions not listed in the manifest" % ctx)
    rep.check(all("entries" in v and "unknown" in v for v in versions),
              "%s: key-symbol versions without `entries` or `unknown`" % ctx)
    calls = [e for e in events if e["kind"] in ("call", "return")]
    wanted = [e for e in calls if in_set(e["function"])]
    others = [e for e in calls if not in_set(e["function"])]
    linked = [e for e in events if e.get("detail_seq") is not None]
    n = 0
    for path in glob.glob(os.path.join(pid_dir, "thread_*", "detail*.atf")):
        with open(path, "rb") as f:
            n += int.from_bytes(f.read(64)[28:36], "little")
    rep.check(wanted and others, "%s: --detail-symbols %s took %d "
              "calls/returns and left %d out: the test needs both" % (
                  ctx, globs, len(wanted), len(others)))
    bad = sorted({e["function"] for e in linked if not in_set(e["function"])})
    rep.check(not bad, "%s: functions outside --detail-symbols %s have detail records: %r" % (
        ctx, globs, bad[:5]))
    wrong = [e for e in linked if not e.get("detail") or e["detail"].get("type") != e["kind"]]
    rep.check(not wrong, "%s: %d linked detail records do not match their event, e.g. %r" % (
        ctx, len(wrong), wrong[:1]))
    drops = sum((m.get("drops", {}).get("detail") or {}).values())
    if exact:
        missing = [e for e in wanted if e.get("detail_seq") is None]
        rep.check(not missing and len(linked) == len(wanted) == n and drops == 0,
                  "%s: %d events link a detail record, %d calls/returns of functions in the "
                  "set, %d without a record (e.g. %r), detail files hold %d records, %d "
                  "detail drops: want all equal, no drops" % (ctx, len(linked), len(wanted),
                                                              len(missing), missing[:1], n,
                                                              drops))
    else:
        rep.check(len(linked) == n and len(linked) <= len(wanted),
                  "%s: %d events link a detail record, detail files hold %d, %d calls/returns "
                  "in the set" % (ctx, len(linked), n, len(wanted)))
        rep.check(drops == 0 or len(wanted) - len(linked) <= drops,
                  "%s: %d records missing, only %d counted as dropped or overwritten" % (
                      ctx, len(wanted) - len(linked), drops))
    rep.note("%s: %d of %d calls/returns in the detail set, %d linked, %d detail drops" % (
        ctx, len(wanted), len(calls), len(linked), drops))


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


# ATF's arch byte (atf_format.h, at offset 6 of every file's header) and
# the signal context's register names (atf_reader.c), by architecture.
ATF_ARCH = {"x86_64": 1, "arm64": 2}
SIGNAL_REGS = {"x86_64": {"rax", "rsp", "rip", "rflags"},
               "arm64": {"x0", "sp", "x29", "x30", "pc", "pstate"}}


def check_arch(rep, pid_dir, arch):
    """The recording is of the program's architecture, not the recorder's:
    the manifest's arch, every index and detail file's header, the crash
    context's register names; another architecture's clock came from the
    program's counter (docs/arm64.md, clock.calibration "target")."""
    m = check_manifest_parses(rep, pid_dir) or {}
    rep.check(m.get("arch") == arch, "%s/manifest.json: arch %r, expected %r" % (
        pid_dir, m.get("arch"), arch))
    clock = m.get("clock") or {}
    if arch != {"x86_64": "x86_64", "aarch64": "arm64"}.get(os.uname().machine):
        rep.check(clock.get("calibration") == "target" and clock.get("tsc_hz", 0) > 0,
                  "%s/manifest.json: clock %r, expected the program's counter "
                  "(calibration \"target\", its tsc_hz)" % (pid_dir, clock))
    files = glob.glob(os.path.join(pid_dir, "thread_*", "*.atf"))
    rep.check(len(files) > 0, "%s: no .atf file" % pid_dir)
    for f in files:
        with open(f, "rb") as fh:
            head = fh.read(8)
        rep.check(len(head) == 8 and head[6] == ATF_ARCH[arch],
                  "%s: header arch byte %r, expected %d (%s)" % (
                      f, head[6:7], ATF_ARCH[arch], arch))
    regs = ((m.get("crash") or {}).get("context") or {}).get("registers")
    if regs is not None:
        rep.check(SIGNAL_REGS[arch] <= set(regs),
                  "%s/manifest.json: crash registers %r, expected %s's" % (
                      pid_dir, sorted(regs), arch))
        rep.check(int(regs.get("pc", regs.get("rip", "0x0")), 16) != 0,
                  "%s/manifest.json: the crash context's pc is 0" % pid_dir)


def target_env(counts_dir):
    env = dict(os.environ)
    env["ADA_TEST_COUNTS"] = os.path.join(counts_dir, "%n.%p.counts")
    return env


# Where elf_functions keeps what nm said of each program (main: under
# --work, beside the tests' own directories): the same target program
# serves many tests, and one nm of it costs more CPU than ada's record.
NM_CACHE = [None]


def nm_functions(path, st):
    """The function names `nm --defined-only path` lists (types T t W w).
    Kept in NM_CACHE per file, size, mtime and inode: a rebuilt program
    is a new entry. A failed nm is not kept."""
    key = "%s\0%d\0%d\0%d\0%d" % (os.path.realpath(path), st.st_dev, st.st_ino,
                                    st.st_size, st.st_mtime_ns)
    cached = None
    if NM_CACHE[0]:
        cached = os.path.join(NM_CACHE[0], "%08x-%s.names" % (
            zlib.crc32(key.encode()), os.path.basename(path)))
        try:
            with open(cached) as f:
                head, _, body = f.read().partition("\n")
            if head == key.replace("\0", " "):
                return set(body.split())
        except OSError:
            pass
    rc, out, _ = run(["nm", "--defined-only", path])
    names = set()
    for line in out.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWw":
            names.add(parts[2])
    if cached and rc == 0:
        try:
            os.makedirs(NM_CACHE[0], exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=NM_CACHE[0])
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(key.replace("\0", " ") + "\n" + "\n".join(sorted(names)) + "\n")
                os.replace(tmp, cached)  # whole or not at all for a test reading it
            except OSError:
                os.unlink(tmp)
        except OSError:
            pass
    return names


def elf_functions(paths):
    """Names of the functions defined in the ELF files among paths (nm)."""
    names = set()
    for p in paths:
        try:
            with open(p, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue
                st = os.fstat(f.fileno())
        except OSError:
            continue
        names |= nm_functions(p, st)
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
    emul = args.emulator.split() if args.emulator else []
    untraced = run(emul + argv, env=target_env(plain_counts), interrupt=interrupt)
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


def first_process(traced, session=None):
    """The tables grouped by pid, and the pid ada started (whose parent
    wrote no table; with session, nor was recorded: a traced shell between
    two tables writes none)."""
    by_pid = collections.OrderedDict()
    for cf in traced:
        by_pid.setdefault(cf.pid, []).append(cf)
    roots = [p for p, fs in by_pid.items() if all(f.ppid not in by_pid for f in fs)]
    if len(roots) > 1 and session:
        roots = [p for p in roots if all(not os.path.isdir(os.path.join(
            session, "pid_%d" % f.ppid)) for f in by_pid[p])]
    if len(roots) != 1:
        raise Fail("cannot tell the first process among the tables %r" % sorted(by_pid))
    return by_pid, roots[0]


def check_shared_bodies(rep, session, by_pid):
    """Processes of the same images (exec'd children of one binary, each
    with its own module ids and load bases) share every module's body by
    content (docs/format.md, "Shared symbol bodies"): each .syms file is
    version 2 and names a module_<ID>.body beside it; the bodies with the
    same bytes are one file (one inode, also linked from the session's
    symbodies/); the processes' agent.json count at most one body written
    per distinct body, and the rest linked."""
    by_bytes = collections.defaultdict(set)
    written = shared = 0
    for pid in by_pid:
        d = os.path.join(session, "pid_%d" % pid)
        rep.check(not os.path.lexists(os.path.join(d, "modules")),
                  "pid_%d has a modules/ (the module files are in pid_N/)" % pid)
        lines_of = {}
        for n in sorted(os.listdir(d)):
            if not (n.startswith("module_") and n.endswith(".syms")):
                continue
            with open(os.path.join(d, n), errors="replace") as f:
                lines = f.read().splitlines()
            rep.check(lines[:1] == ["ada-symbols 2"], "pid_%d/%s is not version 2: %r"
                      % (pid, n, lines[:1]))
            body = [l.split(" ", 1)[1] for l in lines if l.startswith("body ")]
            rep.check(len(body) == 1, "pid_%d/%s names no body" % (pid, n))
            if len(body) != 1:
                continue
            st = os.lstat(os.path.join(d, body[0]))
            with open(os.path.join(d, body[0]), "rb") as f:
                content = f.read()
                by_bytes[content].add((st.st_dev, st.st_ino))
                lines_of[n] = content.count(b"\n")
        with open(os.path.join(session, "pid_%d" % pid, "agent.json")) as f:
            aj = json.load(f)
        sf = aj.get("symbol_files") or {}
        # the last image's modules (an exec leaves the earlier ones' files)
        lines_linked = sum(lines_of.get("module_%s.syms" % m.get("module_id"), 0)
                           for m in aj.get("modules") or [])
        # A process that linked every body checked each one's lines in
        # its own code: its libc calls under the guard (agent_work) are
        # not one a line, as they were with a memchr a line (cow9).
        if sf.get("bodies_shared", 0) > 0 and sf.get("bodies_written", 0) == 0:
            work = (aj.get("untraced_calls") or {}).get("agent_work", 0)
            rep.check(work < lines_linked, "pid_%d: %d calls of the agent's own work under the "
                      "guard, not fewer than the %d lines of the bodies it linked"
                      % (pid, work, lines_linked))
        written += sf.get("bodies_written", 0)
        shared += sf.get("bodies_shared", 0)
    for content, inodes in by_bytes.items():
        rep.check(len(inodes) == 1, "one body (%d bytes) is %d files, not one shared file"
                  % (len(content), len(inodes)))
    store = os.path.join(session, "symbodies")
    stored = set()
    for n in os.listdir(store) if os.path.isdir(store) else []:
        st = os.lstat(os.path.join(store, n))
        stored.add((st.st_dev, st.st_ino))
    every = set().union(*by_bytes.values()) if by_bytes else set()
    rep.check(stored == every, "symbodies/ holds %d bodies, the processes link %d"
              % (len(stored), len(every)))
    # <=: after an exec in the same process only the last image's
    # agent.json is left to count.
    rep.check(written <= len(by_bytes), "the agents wrote %d bodies, %d distinct ones exist"
              % (written, len(by_bytes)))
    rep.check(shared > 0, "no agent linked a body another process wrote")
    rep.note("shared bodies: %d distinct, %d written, %d linked from the store" % (
        len(by_bytes), written, shared))


def check_planted_bodies(rep, ada, session, by_pid):
    """The program replaced every body in the session's symbodies/ with a
    file that is no body (tests/integration/hooks.cmake): a later process
    of the same images refuses each (bodies_refused), writes its own and
    stores it; every .syms file's body is whole (ada validate warns of
    none) and the counts were exact (checked by the caller)."""
    refused = rewritten = 0
    for pid in by_pid:
        with open(os.path.join(session, "pid_%d" % pid, "agent.json")) as f:
            a = json.load(f)
        files = a.get("symbol_files") or {}
        refused += files.get("bodies_refused", 0)
        argv = a.get("program") or a.get("argv") or []
        if argv and argv[-1] == "b":  # the exec child run after the plant
            rewritten += files.get("bodies_written", 0)
    # The recorder's budget scan sweeps store bodies no process links (a
    # planted one has one name): when it ran between the plant and the
    # second child, that child found no body to refuse and wrote its own.
    store = os.path.join(session, "symbodies")
    planted_left = [n for n in os.listdir(store)
                    if open(os.path.join(store, n), "rb").read(8) == b"planted\n"]
    rep.check(refused > 0 or (rewritten > 0 and not planted_left),
              "no agent refused a planted body, and the second child did not write its own "
              "(%d written; planted left: %s)" % (rewritten, planted_left))
    rc, o, e = run([ada.path, "validate", session])
    rep.check(rc == 0 and ": 0 errors, 0 warnings: valid" in (o + e).decode(errors="replace"),
              "`ada validate` after planted bodies: %s%s" % (shown(o, 1500), shown(e, 1500)))
    rep.note("planted bodies: %d refused, %d written by the second child" % (refused, rewritten))


def check_shared_modules(rep, session, by_pid, root, replaced, inherited=0):
    """Forked children that load nothing write no symbol file: each one's
    pid_N/ links its parent's module files (docs/internals.md), so the session holds
    exactly one file per module, linked from every process, and each
    agent.json counts what it wrote and what it shared. replaced: names of
    files the first process replaced with a copy before forking (not the
    file its agent wrote): each of its children writes its own, which that
    child's own children link.

    A forked child whose parent's files are all there writes none: the
    recorder makes its pid_N/ from the note in its arena, and folds the
    counts it noted at exit into the agent.json it makes from an
    ancestor's (agent_json_writes 0, inherited_from that ancestor,
    exit_counts "arena"). A child with symbol files of its own writes
    agent.json at the fork and at exit. Exactly `inherited` children
    ended without their exit handlers (_exit): theirs has no exit counts."""
    pids = list(by_pid)
    parent = {p: by_pid[p][0].ppid for p in pids}
    made = 0

    def syms(pid):
        d = os.path.join(session, "pid_%d" % pid)
        rep.check(not os.path.lexists(os.path.join(d, "modules")),
                  "pid_%d has a modules/ (the module files are in pid_N/)" % pid)
        return sorted(n for n in os.listdir(d) if n.startswith("module_") and
                      n.endswith(".syms")) if os.path.isdir(d) else []

    want = syms(root)
    rep.check(len(want) > 0, "pid_%d holds no .syms file" % root)
    inodes = collections.defaultdict(set)
    for pid in pids:
        names = syms(pid)
        rep.check(names == want, "pid_%d holds %r, its parent's %r" % (pid, names, want))
        for n in names:
            st = os.lstat(os.path.join(session, "pid_%d" % pid, n))
            rep.check(stat.S_ISREG(st.st_mode), "pid_%d/%s is not a regular file" % (
                pid, n))
            inodes[n].add((st.st_dev, st.st_ino))
            if n not in replaced:
                rep.check(st.st_nlink == len(pids), "pid_%d/%s has %d links, %d "
                          "processes ran" % (pid, n, st.st_nlink, len(pids)))
        try:
            with open(os.path.join(session, "pid_%d" % pid, "agent.json")) as f:
                aj = json.load(f)
            got = {k: v for k, v in (aj.get("symbol_files") or {}).items()
                   if k in ("written", "shared", "share_failed")}
        except (OSError, ValueError) as e:
            aj, got = {}, "unreadable (%s)" % e
        n, r = len(want), len(replaced) if parent[pid] == root else 0
        writes, src = aj.get("agent_json_writes"), aj.get("inherited_from")
        if pid == root:
            # Its own, written after its scan; its exit left only counts,
            # which it noted in its arena for the recorder to fold in
            # (agent.c agent_exit_note), or it wrote the file again.
            folded = aj.get("exit_counts") == "arena"
            rep.check(src is None and (writes == 1 and folded or writes == 2 and not folded),
                      "pid_%d/agent.json: the root wrote it %r times with exit_counts %r (want "
                      "1 and \"arena\": start-up, counts folded at exit; or 2: start-up, exit), "
                      "inherited_from %r" % (pid, writes, aj.get("exit_counts"), src))
        elif src is not None:
            # A child that left its files to the recorder (a note in its
            # arena) and ended through exit() noted its counts there too:
            # folded in by the recorder ("exit_counts": "arena"); the
            # others ended without (_exit): inherited as they were.
            made += aj.get("exit_counts") != "arena"
            anc, p = set(), parent[pid]
            while p in parent and p not in anc:
                anc.add(p)
                p = parent[p]
            rep.check(writes == 0 and aj.get("pid") == pid and (src in anc or src == root),
                      "pid_%d/agent.json made by the recorder: pid %r, writes %r, from %r "
                      "(not an ancestor %r)" % (pid, aj.get("pid"), writes, src, sorted(anc)))
        else:
            # One with files of its own wrote agent.json at the fork; at
            # exit again, or its counts were folded in (as the root's).
            folded = aj.get("exit_counts") == "arena"
            n_writes = 1 + (r > 0) - (r > 0 and folded)
            rep.check(writes == n_writes and (r > 0 or not folded), "pid_%d/agent.json "
                      "written %r times by the child (exit_counts %r), want %d"
                      % (pid, writes, aj.get("exit_counts"), n_writes))
        exp = ({"written": n, "shared": 0, "share_failed": 0} if pid == root else
               {"written": r, "shared": n - r, "share_failed": r})
        rep.check(got == exp, "pid_%d/agent.json symbol_files: %r, expected %r" % (pid, got, exp))
    rep.check(made == inherited, "%d children's agent.json made by the recorder, want %d"
              % (made, inherited))
    # Every child whose agent.json the recorder made left its files to it
    # (the note in its arena): the manifests count each note made once.
    noted, notes = 0, 0
    for pid in pids:
        try:
            with open(os.path.join(session, "pid_%d" % pid, "manifest.json")) as f:
                man = json.load(f)
        except (OSError, ValueError):
            continue
        notes = max(notes, (man.get("fork_notes") or {}).get("made", 0))
        noted += (man.get("hook") or {}).get("inherited_from") is not None
        rep.check(not any((man.get("fork_notes") or {}).get("refused", {}).values()),
                  "pid_%d: notes refused: %r" % (pid, man.get("fork_notes")))
    rep.check(notes == noted, "the recorder made %d children's files from their notes, "
              "%d children's agent.json are its" % (notes, noted))
    children = sum(1 for p in pids if parent[p] == root)
    for n, s in sorted(inodes.items()):
        exp = 1 + children if n in replaced else 1
        rep.check(len(s) == exp, "%s: %d different files across the processes, expected %d"
                  % (n, len(s), exp))


def cmd_target(args, ada, work, rep):
    if args.moved:
        # The budget remembers its moves beside the plan cache: a cache of
        # the test's own, so that an earlier run leaves nothing recalled.
        os.environ["XDG_CACHE_HOME"] = os.path.join(work, "cache")
    cmd_target_run(args, ada, work, rep, "budget")
    if args.moved and args.recalled:
        again = os.path.join(work, "again")
        os.mkdir(again)
        cmd_target_run(args, ada, again, rep, "recalled")


def cmd_target_run(args, ada, work, rep, moved_how):
    own = set(args.own_module or []) | {os.path.basename(args.argv[0])}
    if args.detail_set and moved_how == "budget":  # the options once
        args.record_opt = ["--detail", "always", "--detail-symbols", args.detail_set] + (
            args.record_opt or [])
        if not any(o == "--detail-mb" for o in args.record_opt):
            args.record_opt += ["--detail-mb", "64"]
    if moved_how == "budget":
        for g in args.count_only:
            args.record_opt = (args.record_opt or []) + ["--count-only", g]
    counted = args.count_only + args.moved
    session, plain, traced, rc0 = run_target_twice(args, ada, work, rep)
    by_pid, root = first_process(traced, session)
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
            # A forked copy of the traced program has it mapped, of course;
            # what the child exec'd must not.
            root_programs = {cf.program for cf in by_pid[root]}
            for cf in files:
                rep.check(cf.program in root_programs or cf.agent == "0",
                          "--no-follow, yet the agent was mapped in the child %d (%s: "
                          "agent=%s)" % (pid, cf.path, cf.agent))
            continue
        check_pid(ada, rep, session, pid, files, own, allow_inherited=(pid != root),
                  absent=args.absent, absent_mod=args.absent_module,
                  calls_only=args.calls_only, detail_set=args.detail_set,
                  detail_exact=not args.detail_loose, count_only=counted)
    if args.ring_waits:
        check_every_thread_waited(rep, os.path.join(session, "pid_%d" % root),
                                  {tid for cf in by_pid[root] for label, tid in cf.threads
                                   if label != "main"})
    if args.syms_status:
        status = read_syms(os.path.join(session, "pid_%d" % root))
        for spec in args.syms_status:
            name, want = spec.split("=", 1)
            got = status.get(name, ("not listed", ""))[0]
            rep.check(got == want, "--syms-status %s: module_*.syms give %s the status %s"
                      % (spec, name, got))
    if args.agent_json_module:
        # the root process's agent.json at its end: written at most so many
        # times (under --overhead-budget a dlopen's rewrite is left to the
        # budget thread or the exit: agent_budget_json_later), listing the
        # modules it loaded all the same
        try:
            with open(os.path.join(session, "pid_%d" % root, "agent.json")) as f:
                aj = json.load(f)
        except (OSError, ValueError) as ex:
            aj = {}
            rep.fail("pid_%d/agent.json: %s" % (root, ex))
        paths = [os.path.basename(m.get("path") or "") for m in aj.get("modules", [])]
        for g in args.agent_json_module:
            rep.check(any(fnmatch.fnmatch(p, g) for p in paths),
                      "pid_%d/agent.json lists no module %s: %r" % (root, g, paths))
        if args.agent_json_writes_max is not None:
            rep.check(aj.get("agent_json_writes", 0) <= args.agent_json_writes_max,
                      "pid_%d/agent.json written %r times, at most %d wanted" % (
                          root, aj.get("agent_json_writes"), args.agent_json_writes_max))
    if args.threads_per_process is not None:
        # --overhead-budget's own thread is no thread of the program: it
        # starts untraced and claims no ring slot (agent_budget.c,
        # budget_spawn), so the recording lists the program's threads only
        for d in pid_dirs:
            m = check_manifest_parses(rep, os.path.join(session, d)) or {}
            tids = sorted(t.get("tid") for t in m.get("threads", []))
            rep.check(len(tids) == args.threads_per_process,
                      "%s (%s): %d threads recorded %r, want %d" % (
                          d, moved_how, len(tids), tids, args.threads_per_process))
    if args.count_only_called:
        # --count-only on a whole program: each process lists only the
        # functions it called and counts the others (a fork child of a
        # `--count-only '*'` program listed its 4 096 slots, nearly all
        # zero: ~450 KB of manifest and 300 KB of agent.json each)
        for d in pid_dirs:
            m = check_manifest_parses(rep, os.path.join(session, d)) or {}
            co = m.get("count_only") or {}
            zero = [e.get("name") for e in co.get("functions", [])
                    if not e.get("calls") and e.get("moved") != "budget"]
            rep.check(not zero, "%s: count_only lists %d functions never called: %r" % (
                d, len(zero), zero[:8]))
            rep.check(isinstance(co.get("uncalled"), int) and co["uncalled"] > 0,
                      "%s: count_only says no count of the functions never called: %r" % (
                          d, {k: v for k, v in co.items() if k != "functions"}))
    memory = {}  # what each process's budget memory did (agent_budget.c)
    for g in args.moved:
        # the process that ran the workload: the root, or (budget_fork)
        # its forked child
        fns = []
        for d in pid_dirs:
            m = check_manifest_parses(rep, os.path.join(session, d)) or {}
            fns += (m.get("count_only") or {}).get("functions", [])
            memory[d] = (m.get("count_only") or {}).get("budget_memory")
        # a second run: started count-only, as the first run moved it;
        # when not, why (the recall's outcome per module: absent, stale,
        # corrupt, untrusted, unreadable with its errno)
        rep.check(any(fnmatch.fnmatch(e.get("name", ""), g) and e.get("moved") == moved_how
                      for e in fns),
                  "%s: no function matching %s count-only as %r: %r; budget memory: %r"
                  % (pid_dirs, g, moved_how, fns, memory))
    if args.moved and args.recalled and moved_how == "budget":
        # the first run's moves remembered at its exit (or the budget
        # thread's write before): a run whose exit passed them by (they
        # were due only after the move's hold of agent.lock) left the
        # second run nothing to recall
        written = sum((v or {}).get("written", 0) for v in memory.values())
        rep.check(written >= 1, "%s: the budget's moves were not remembered (no <build-id>.moved "
                  "written): budget memory %r" % (pid_dirs, memory))
    for g in args.far_form:
        # arm64's far patch form (ADA_HOOK_FAR_TEST): every hooked function
        # of the modules matching g took it
        mods = []
        for d in pid_dirs:
            try:
                with open(os.path.join(session, d, "agent.json")) as f:
                    mods += json.load(f).get("modules", [])
            except (OSError, ValueError) as ex:
                rep.fail("%s/agent.json: %s" % (d, ex))
        hit = [m for m in mods if fnmatch.fnmatch(os.path.basename(m.get("path", "")), g)]
        rep.check(hit and all(m.get("installed", 0) > 0 and m.get("far_form") == m["installed"]
                              for m in hit),
                  "--far-form %s: not every hooked function took the far form: %r"
                  % (g, [(m.get("path"), m.get("installed"), m.get("far_form")) for m in hit]))
    for spec in args.child_exit or []:
        name, what = spec.split("=", 1)
        kind, num = what.split(":")
        pids = [pid for pid, files in by_pid.items() if any(f.program == name for f in files)]
        rep.check(len(pids) == 1, "--child-exit %s: %d processes wrote a table as %s" % (
            spec, len(pids), name))
        for pid in pids:
            m = check_manifest_parses(rep, os.path.join(session, "pid_%d" % pid)) or {}
            e = m.get("exit") or {}
            want = {"status": int(num) if kind == "status" else None,
                    "signal": int(num) if kind == "signal" else None}
            got = {"status": e.get("status"), "signal": e.get("signal")}
            rep.check(got == want, "pid_%d (%s, reaped by its traced parent): the manifest "
                      "says exit %r, the process ended with %r" % (pid, name, got, want))
    if args.shared_modules:
        check_shared_modules(rep, session, by_pid, root, set(args.replaced_module),
                             args.inherited_json)
    if args.shared_bodies:
        check_shared_bodies(rep, session, by_pid)
    if args.planted_bodies:
        check_planted_bodies(rep, ada, session, by_pid)
    root_dir = os.path.join(session, "pid_%d" % root)
    if args.expect_arch:
        for pid in by_pid:
            check_arch(rep, os.path.join(session, "pid_%d" % pid), args.expect_arch)
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
    modules = {os.path.basename(m or "") for m in {e.get("module") for e in events}}
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
        # Binary, not text: a text file without #! runs with /bin/sh.
        prog = os.path.join(d, "data.bin")
        with open(prog, "wb") as f:
            f.write(b"\x01\x00\x02 neither ELF nor a script\n")
        os.chmod(prog, 0o755)
    elif kind == "badinterp":
        prog = os.path.join(d, "x.sh")
        with open(prog, "w") as f:
            f.write("#!/nonexistent/ada-itest-shell\necho hello\n")
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
    if kind == "badinterp":
        rep.check(lines and "interpreter" in lines[0] and
                  "/nonexistent/ada-itest-shell" in lines[0] and "does not exist" in lines[0],
                  "the sentence for a bad #! line should name the interpreter that does not "
                  "exist: %r" % lines[:1])
    rep.check(not os.path.exists(out_dir), "--out %s was created for a program that cannot "
              "start" % out_dir)
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


def has_compact_index(d):
    """Whether an index file under d is compact (ATC1, the default
    --index-format): the checker reads ATF v2 only."""
    for root, _, names in os.walk(d):
        for n in names:
            if n.startswith("index") and n.endswith(".atf"):
                with open(os.path.join(root, n), "rb") as f:
                    if f.read(4) == b"ATC1":
                        return True
    return False


def check_independent(rep, d):
    """The ATF checker written from the schema and errata alone
    (atf_check.py, no code shared with ada validate): every index and
    detail file, their links both ways."""
    if has_compact_index(d):
        if not ADA_PATH[0]:
            raise Fail("%s holds compact index files and no ada to export them" % d)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "atf")
            rc, o, e = run([ADA_PATH[0], "export", "--format", "atf", "-o", out, d])
            rep.check(rc == 0, "`ada export --format atf %s` exited %d: %s" % (d, rc, shown(e)))
            lines, files = atf_check.check_tree(out)
    else:
        lines, files = atf_check.check_tree(d)
    rep.check(not lines, "atf_check.py (independent of src/atf) found %d problem(s) in %s:\n%s"
              % (len(lines), d, "\n".join(lines[:20])))
    rep.note("atf_check.py: %d index file(s), their detail files and links: %s" % (
        files, "no problem" if not lines else "%d problems" % len(lines)))


# ---------------------------------------------------------------- flight recorder (issue 8)

# scenario: (program mode, ada record options, expected exit status)
FLIGHT = {
    "crash_segv": ("segv", ["--pre-roll-sec", "1", "--trigger", "crash"], 139),
    "crash_abort": ("abort", ["--pre-roll-sec", "1", "--trigger", "crash"], 134),
    "crash_overflow": ("overflow", ["--pre-roll-sec", "1", "--trigger", "crash"], 139),
    "crash_recovered": ("recover", ["--pre-roll-sec", "1", "--trigger", "crash"], 0),
    # --detail always with a 1 MiB detail ring and the recorder stopped
    # while the program fills it three times over: the records overwritten
    # before the drain persisted them are counted (manifest, summary line).
    # 16 MiB index ring: never full.
    "always_overwrite": ("stoprec", ["--detail", "always", "--detail-overflow", "overwrite",
                                     "--detail-mb", "1", "--ring-mb", "16"], 0),
    # The same ring: the program waits until the drain has persisted some
    # of its records (detail.atf begun), then laps the ring many times
    # over (some 78 000 records): the records persisted before the ring
    # reused their place are no drop; only those the drain had not
    # persisted yet are (how many depends on the machine: the counts must
    # add up, and the persisted-then-overwritten ones exist).
    "always_lapped": ("lapped", ["--detail", "always", "--detail-overflow", "overwrite",
                                 "--detail-mb", "1", "--ring-mb", "16"], 0),
    # The same run with --detail-overflow wait (the default of --detail
    # always): the program waits for the drain whenever its ring would
    # overwrite records not persisted yet, so every record is persisted
    # (the ring still laps: over records persisted first).
    "always_wait": ("lapped", ["--detail", "always", "--detail-mb", "1", "--ring-mb", "16"], 0),
    # The index lane with the recorder stopped while the program makes
    # three times what its 1 MiB ring holds: the program waits for ring
    # space until the drain timeout (2 s of a heartbeat standing still),
    # then drops (drain_lag); the wait is counted with its duration.
    "index_wait_stopped": ("stopfill", ["--detail", "never", "--ring-mb", "1"], 0),
    # The same fill with only the drain thread stopped (ptrace) for 5 s:
    # the recorder is there, only slow -- as a drain starved of CPU on a
    # loaded machine -- so the program waits past the drain timeout and
    # nothing drops: every call is in the trace (issue 34).
    "index_wait_stalled": ("stallfill", ["--detail", "never", "--ring-mb", "1"], 0),
    # And with the recorder stopped while the program fills the ring: the
    # wait is bounded by the drain's progress (the drain timeout, 2 s), then
    # the ring overwrites and the loss is counted; the program ends.
    "always_wait_stopped": ("stoprec", ["--detail", "always", "--detail-mb", "1",
                                        "--ring-mb", "16"], 0),
    # --detail triggered with a 1 MiB ring that the busy loop before
    # rare_event fills many times over (some 78 000 records): overwriting
    # what no window wanted is the flight recorder working, not a drop. A
    # window of exactly the fire: the calls after rare_event (busy(200),
    # about 0.6 MiB of records) cannot push its record out of the ring
    # however late the drain looks.
    "triggered_overwrite": ("symbol", ["--detail-mb", "1", "--pre-roll-sec", "0",
                                       "--post-roll-sec", "0", "--trigger",
                                       "symbol=rare_event"], 0),
    # The same ring, and a window of the whole run (an hour either side):
    # every record the ring overwrote before the drain could persist it
    # was wanted: window_lost, the window's shortfall (not drops).
    "window_lost": ("symbol", ["--detail-mb", "1", "--pre-roll-sec", "3600",
                               "--post-roll-sec", "3600", "--trigger", "symbol=rare_event"], 0),
    # The drain held (ADA_TEST_WINDOW_PAUSE) between taking the fire and
    # its first copy of the window while the program makes the post-roll's
    # records, and until the window's end and the closing slack are past:
    # the copy finds records whose index events are not taken yet; the
    # window must wait for them, not close without them.
    "window_deferred": ("deferred", ["--pre-roll-sec", "0.5", "--post-roll-sec", "1",
                                     "--detail-mb", "16", "--ring-mb", "16",
                                     "--trigger", "symbol=rare_event"], 0),
    # Two windows on one thread: the first one's records (some 7 MiB with
    # 512-byte stacks, made well within its post-roll however loaded the
    # machine) are more than a window pass may write, so its copy
    # stops at the pass's budget; the second window's first copy comes
    # then (the drain held at its first pass) and must not pass over the
    # first one's records left in the ring.
    "window_spent": ("spent", ["--pre-roll-sec", "0", "--post-roll-sec", "2",
                               "--stack-bytes", "512", "--detail-mb", "32", "--ring-mb", "16",
                               "--trigger-holdoff-ms", "0", "--trigger", "symbol=rare_event"],
                     0),
    # The same, with every live persist held back for the program as on a
    # contended CPU (test hook ADA_TEST_FLIGHT_CONTENDED, flight_yield.c):
    # the thread's end persists what its ring still holds; the rest is
    # window_lost, counted exactly as ever, and the held passes counted.
    "window_lost_yield": ("symbol", ["--detail-mb", "1", "--pre-roll-sec", "3600",
                                     "--post-roll-sec", "3600", "--trigger",
                                     "symbol=rare_event"], 0),
    # The same contended CPU with --persist-share 100: the live persist is
    # never held back (the user chose the windows over the program's speed).
    "window_share_full": ("symbol", ["--detail-mb", "1", "--pre-roll-sec", "3600",
                                     "--post-roll-sec", "3600", "--persist-share", "100",
                                     "--trigger", "symbol=rare_event"], 0),
    # Signals (agent_crash.c): sysv_signal's one-shot handler, bsd_signal,
    # abort() after a SIGABRT handler returned, a handler without SA_ONSTACK.
    "signal_sysv": ("sysv", ["--pre-roll-sec", "1", "--trigger", "crash"], 139),
    "signal_bsd": ("bsd", ["--pre-roll-sec", "1", "--trigger", "crash"], 139),
    "signal_abort_handler": ("aborth", ["--pre-roll-sec", "1", "--trigger", "crash"], 134),
    "signal_nostack": ("nostack", ["--pre-roll-sec", "1", "--trigger", "crash"], 0),
    "signal_overflow_handler": ("overflowh", ["--pre-roll-sec", "1", "--trigger", "crash"],
                                139),
    "latency": ("slow", ["--pre-roll-sec", "0.01", "--post-roll-sec", "0.01",
                         "--trigger", "p99=function:work>50ms"], 0),
    # No threshold: work()'s own running p99 (after 100 calls). The 60 ms
    # call is far past it and must fire; calls barely over it may fire too
    # (that is what a p99 is), within the hold-off and --max-windows.
    "p99_auto": ("slow", ["--pre-roll-sec", "0.01", "--post-roll-sec", "0.01",
                          "--trigger", "p99=function:work"], 0),
    # A detail ring large enough for the drain's lag behind the busy loop
    # that follows the fire (8 MiB: some 40 000 records).
    "symbol": ("symbol", ["--pre-roll-sec", "0.05", "--post-roll-sec", "0.05",
                          "--detail-mb", "8", "--trigger", "symbol=rare_event"], 0),
    # A pre-roll of a whole second before the fire (the busy loop's some
    # 80 000 events were mostly written to index.atf before rare_event
    # ran) and a 64 MiB ring that holds them all: every link to an event
    # already on disk goes through the disk window (docs/internals.md,
    # "Persisting (drain)"); each call/return in the window must link its
    # record exactly, and ada validate checks the links both ways.
    "preroll_disk": ("symbol", ["--pre-roll-sec", "1", "--post-roll-sec", "0.05",
                                "--detail-mb", "64", "--trigger", "symbol=rare_event"], 0),
    # A manual fire's time is when the drain takes the signal, not a call of
    # the program's: 5 s either side holds the busy loop around it however
    # loaded the machine (0.05 s came out empty once under a load of 20).
    "manual": ("manual", ["--pre-roll-sec", "5", "--post-roll-sec", "5",
                          "--detail-mb", "8", "--trigger", "manual"], 0),
    # top() runs 5200 times: a trigger that fires constantly.
    "max_windows": ("symbol", ["--pre-roll-sec", "0", "--post-roll-sec", "0",
                               "--trigger-holdoff-ms", "0", "--max-windows", "3",
                               "--trigger", "symbol=top"], 0),
    "holdoff": ("symbol", ["--pre-roll-sec", "0", "--post-roll-sec", "0",
                           "--trigger-holdoff-ms", "3600000", "--trigger", "symbol=top"], 0),
}

BAD_TRIGGERS = [
    (["--trigger", "crsh"], "crsh"),
    (["--trigger", "p99=handle>50ms"], "function:"),
    (["--trigger", "p99=function:work>50"], "'50'"),
    (["--trigger", "time=25:00-26:00"], "25:00-26:00"),
    (["--trigger", "symbol="], "symbol="),
    (["--pre-roll-sec", "1x"], "--pre-roll-sec"),
    (["--max-windows", "0"], "--max-windows"),
    (["--detail-overflow", "wait"], "--detail-overflow needs --detail always"),
    (["--detail", "always", "--detail-overflow", "keep"], "'keep'"),
]


def base_name(name):
    """A function name without gcc's clone suffix (f.constprop.0 -> f)."""
    return (name or "").split(".")[0]


def flight_manifest(rep, session):
    pids = glob.glob(os.path.join(session, "pid_*"))
    if len(pids) != 1:
        raise Fail("expected one pid directory in %s, found %r" % (session, pids))
    with open(os.path.join(pids[0], "manifest.json")) as f:
        return pids[0], json.load(f)


def flight_windows(m):
    return m.get("flight_recorder", {}).get("windows", [])


def check_status_windows(rep, ada, session, m):
    """`ada status SESSION` counts the windows as the manifest has them:
    closed ones, and those the end of the recording cut short (their
    records are on disk too), then the detail records persisted."""
    wins = flight_windows(m)
    if not wins:
        return
    rc, out, err = run([ada.path, "status", session])
    closed = sum(1 for w in wins if w.get("closed"))
    want = "windows %d (%d closed" % (len(wins), closed)
    if closed < len(wins):
        want += ", %d cut short by the end of the recording" % (len(wins) - closed)
    want += "), %d detail records persisted" % m["detail"]["records"]
    rep.check(rc == 0 and want.encode() in out,
              "ada status %s: exit %d, %r lacks %r (stderr %r)" % (session, rc, out, want, err))


def flight_index_wait(rep, ada, session, m, err):
    """The recorder stopped (SIGSTOP) under a program that overfills its
    index ring: at least one wait for ring space, lasting at least the
    producer's drain timeout (2 s: it gives up only after the heartbeat
    stood still that long and found the recorder stopped), then drain_lag
    drops, every call still traced; `ada status` says the waits, and the
    summary says the calls left untraced meanwhile (the agent's
    untraced_calls.recorder_gone) exactly when there were some."""
    if isinstance(err, bytes):
        err = err.decode(errors="replace")
    gone = ((m.get("hook") or {}).get("untraced_calls") or {}).get("recorder_gone", 0)
    line = ("ada: %d calls were not traced after the program's threads judged the recorder "
            "gone" % gone)
    rep.note("untraced after the recorder was judged gone: %d" % gone)
    rep.check((line in (err or "")) == (gone > 0),
              "summary: %r should %s %r" % ((err or "")[-600:], "carry" if gone > 0
                                            else "not carry", line))
    waits, ns = m["metrics"].get("ring_waits", 0), m["metrics"].get("ring_waited_ns", 0)
    lag = m.get("drops", {}).get("index", {}).get("drain_lag", 0)
    rep.note("ring waits %d (%d ns), drain_lag drops %d" % (waits, ns, lag))
    rep.check(waits >= 1 and ns >= 2000000000 and lag > 0,
              "a full ring under a stopped recorder: %d waits (%d ns: at least the 2 s drain "
              "timeout expected), %d drain_lag drops" % (waits, ns, lag))
    # Stopped by a signal is not gone: the threads stay traced and every
    # event the stop cost is a drain_lag drop (issue 34), none untraced.
    rep.check(gone == 0, "%d calls untraced under a recorder stopped by a signal (want their "
              "events counted as drain_lag drops)" % gone)
    rc, out, err = run([ada.path, "status", session])
    want = ", waited %d time%s (%.3f s) for ring space" % (waits, "" if waits == 1 else "s",
                                                          ns / 1e9)
    rep.check(rc == 0 and want.encode() in out,
              "ada status %s: exit %d, %r lacks %r" % (session, rc, out, want))


def flight_index_stalled(rep, m, events):
    """The drain thread stopped for 5 s under a program that overfills its
    index ring: the program waits it out (a recorder that is there is not
    a dead one), no drop of any reason, no call left untraced, and busy's
    calls are all in the trace: top 10 000 times, each leaf 20 000."""
    drops = {k: v for k, v in (m.get("drops", {}).get("index") or {}).items() if v}
    gone = ((m.get("hook") or {}).get("untraced_calls") or {}).get("recorder_gone", 0)
    waits = m["metrics"].get("ring_waits", 0)
    rep.note("ring waits %d (%d ns), index drops %r" % (waits, m["metrics"].get(
        "ring_waited_ns", 0), drops))
    rep.check(waits >= 1 and not drops and gone == 0,
              "a stalled drain: %d waits, index drops %r, %d calls untraced (want >= 1 wait, "
              "no drop, none untraced)" % (waits, drops, gone))
    want = {"top": 10000, "mid_1": 10000, "leaf_a": 20000, "leaf_b": 20000, "leaf_c": 20000}
    got = {f: [0, 0] for f in want}
    for e in events:
        if e.get("function") in got and e.get("kind") in ("call", "return"):
            got[e["function"]][e["kind"] == "return"] += 1
    rep.check(all(got[f] == [n, n] for f, n in want.items()),
              "calls and returns %r, want %r of each" % (got, want))


def check_status_waits(rep, ada, session, m):
    """`ada status SESSION` of a --detail always session shows the waits
    for detail room as the manifest counts them, in --json and on the
    line (which says them exactly when there were some)."""
    waits, ns = m["detail"].get("waits", -1), m["detail"].get("waited_ns", -1)
    rc, out, err = run([ada.path, "status", session, "--json"])
    st = json.loads(out) if rc == 0 and out.strip() else {}
    rep.check(st.get("detail_waits") == waits and
              abs(st.get("detail_waited_sec", -1) - ns / 1e9) < 1e-6,
              "ada status --json: detail_waits %r, detail_waited_sec %r; the manifest: %d "
              "waits, %d ns (exit %d, stderr %r)" % (st.get("detail_waits"),
                                                     st.get("detail_waited_sec"), waits, ns,
                                                     rc, err))
    rc, out, err = run([ada.path, "status", session])
    want = "(the program waited %d time%s, %.3f s in all, for room)" % (
        waits, "" if waits == 1 else "s", ns / 1e9)
    rep.check(rc == 0 and (want.encode() in out) == (waits > 0),
              "ada status %s: exit %d, %r should %s %r" % (
                  session, rc, out, "carry" if waits > 0 else "not carry", want))


def check_flight_crash(rep, ada, pid_dir, m, sig, top, below=()):
    """The manifest says the process died of sig; the faulting thread's
    stack has `top` innermost (or, when below is given, `below` in order
    somewhere under the libc frames); one crash window ends at the death;
    the faulting thread's last index event is the signal marker."""
    c = m.get("crash")
    if not rep.check(isinstance(c, dict), "no \"crash\" section in %s/manifest.json" % pid_dir):
        return
    rep.check(c.get("signal") == sig and c.get("caught") is True and c.get("abnormal") is True,
              "crash section: expected signal %d, caught, abnormal: %r" % (
                  sig, {k: v for k, v in c.items() if k != "stacks"}))
    rep.check(m.get("exit", {}).get("signal") == sig, "exit.signal is %r, not %d" % (
        m.get("exit"), sig))
    tid = c.get("faulting_tid")
    stacks = [s for s in c.get("stacks", []) if s.get("tid") == tid]
    if not rep.check(len(stacks) == 1, "no stack for the faulting thread %r" % tid):
        return
    names = [base_name(f.get("function")) for f in stacks[0].get("frames", [])]
    if below:
        where = [names.index(b) if b in names else -1 for b in below]
        rep.check(all(w >= 0 for w in where) and where == sorted(where),
                  "the faulting thread's stack should hold %r (innermost first): %r" % (
                      list(below), names[:12]))
    else:
        rep.check(names[:1] == [top], "the faulting thread's innermost frame should be %s: %r"
                  % (top, names[:8]))
    wins = [w for w in flight_windows(m) if w.get("trigger") == "crash"]
    rep.check(len(wins) == 1 and wins[0].get("to_ns") == c.get("time_ns")
              and wins[0].get("fire_ns") == c.get("time_ns")
              and wins[0].get("to_ns") - wins[0].get("from_ns") == 1000000000,
              "expected one crash window of 1 s ending at the death (%r): %r" % (
                  c.get("time_ns"), wins))
    events = [e for e in ada.dump(pid_dir) if e.get("tid") == tid]
    last = events[-1] if events else {}
    rep.check(is_signal_marker(last) and last.get("signal") == sig and last.get("depth") is None,
              "the faulting thread's last index event should be the signal %d marker: %r"
              % (sig, last))
    return stacks[0]


def check_one_window(rep, ada, pid_dir, m, trigger, fn):
    wins = flight_windows(m)
    if not rep.check(len(wins) == 1 and wins[0].get("trigger") == trigger,
                     "expected exactly one window from %s: %r" % (trigger, wins)):
        return None
    w = wins[0]
    if fn:
        ids = {e.get("function_id") for e in ada.dump(pid_dir)
               if base_name(e.get("function")) == fn}
        rep.check(len(ids) == 1 and int(w.get("function_id", "0"), 16) in ids,
                  "the window's function_id %r is not %s's (%r)" % (
                      w.get("function_id"), fn, ids))
    rep.check(w["from_ns"] <= w["fire_ns"] <= w["to_ns"], "window out of order: %r" % w)
    return w


def flight_p99_auto(rep, ada, pid_dir, m, events):
    """p99=function:work (no threshold): a window fires at the return of
    the one slow call (its duration over the threshold the engine had
    estimated, far under the slow call's), with work's arguments; every
    window is that trigger's, on work, judged against a learnt p99."""
    wins = flight_windows(m)
    slow = [w for w in wins if w.get("duration_ns", 0) > 50000000]
    rep.note("%d window(s): %r" % (len(wins), [(w.get("duration_ns"), w.get("threshold_ns"))
                                                for w in wins]))
    if not rep.check(len(slow) == 1, "one window should be the 60 ms call's: %r" % wins):
        return
    w = slow[0]
    rets = [e for e in events if e.get("kind") == "return"
            and base_name(e.get("function")) == "work" and e["ts"] == w["fire_ns"]]
    rep.check(len(rets) == 1, "the window fires at the slow call's return (%d)" % w["fire_ns"])
    rep.check(0 < w.get("threshold_ns", 0) < 50000000,
              "the threshold is work's learnt p99, not the slow call: %r" % w.get("threshold_ns"))
    rep.check(all(x.get("trigger") == "p99=function:work" and
                  x.get("threshold_ns", 0) < x.get("duration_ns", 0) for x in wins),
              "every window is the p99 trigger's, over its threshold: %r" % wins)
    det = check_window_detail(rep, pid_dir, events, m)
    slow_ret = [e for e in det if e.get("kind") == "return" and e["ts"] == w["fire_ns"]]
    rep.check(len(slow_ret) == 1, "the slow call's RETURN should have its detail record")


def flight_constant(rep, ada, pid_dir, m, scenario):
    """symbol=top fires 5200 times: --max-windows 3 keeps 3 windows and
    counts the rest; an hour of hold-off keeps the first fire only."""
    calls = sum(1 for e in ada.dump(pid_dir)
                if e.get("kind") == "call" and base_name(e.get("function")) == "top")
    c = m.get("flight_recorder", {}).get("counts", {})
    wins = flight_windows(m)
    rep.check(calls == 5200 and c.get("fires") == calls, "top ran %d times (5200 expected) "
              "and fired %r times" % (calls, c.get("fires")))
    if scenario == "max_windows":
        rep.check(len(wins) == 3 and c.get("over_max_windows", 0) + c.get("merged", 0) ==
                  calls - 3, "--max-windows 3: %d windows, counts %r" % (len(wins), c))
    else:
        rep.check(len(wins) == 1 and c.get("held_off") == calls - 1,
                  "one hour of hold-off: %d windows, counts %r" % (len(wins), c))


def check_window_detail(rep, pid_dir, events, m, want_min=1):
    """Detail records only inside the windows (nothing before or between
    them), at least want_min of them, every one linked to its index event,
    and the manifest's count of them right. Returns the events that carry
    detail."""
    wins = flight_windows(m)
    det = [e for e in events if isinstance(e.get("detail"), dict)]
    outside = [e for e in det
               if not any(w["from_ns"] <= e["ts"] <= w["to_ns"] for w in wins)]
    rep.check(not outside, "%d detail records outside the windows %r, e.g. %r" % (
        len(outside), [(w["from_ns"], w["to_ns"]) for w in wins], outside[:1]))
    rep.check(len(det) >= want_min, "expected at least %d detail records in the windows, "
              "found %d" % (want_min, len(det)))
    told = sum(w.get("records", 0) for w in wins)
    rep.check(told == len(det), "the manifest's windows say %d detail records, the files "
              "hold %d" % (told, len(det)))
    has = bool(glob.glob(os.path.join(pid_dir, "thread_*", "detail.atf")))
    rep.check(has == bool(det), "detail.atf present: %r, detail records: %d" % (has, len(det)))
    return det


def detail_call(det, fn):
    """The detail of the last CALL of fn among det (None when absent)."""
    calls = [e for e in det if e.get("kind") == "call" and base_name(e.get("function")) == fn]
    return calls[-1]["detail"] if calls else None


def check_args(rep, det, fn, want):
    d = detail_call(det, fn)
    regs = (d or {}).get("regs", {})
    got = {k: regs.get(k) for k in want}
    rep.check(d is not None and got == want, "%s's CALL in detail.atf should carry the "
              "arguments %r: %r" % (fn, want, got if d else "no detail record"))


def flight_summary(err):
    return [l for l in err.decode(errors="replace").splitlines()
            if l.startswith("ada: recorded") or l.startswith("ada: flight recorder:")]


def flight_detail_counts(m):
    """(drops by reason summed over lanes, manifest detail, the threads'
    ring counters of overwritten records, their window_lost)."""
    drops = {}
    for lane in m.get("drops", {}).values():
        for k, v in lane.items():
            drops[k] = drops.get(k, 0) + v
    threads = [t.get("detail", {}) for t in m.get("threads", [])]
    return (drops, m.get("detail", {}), sum(t.get("overwritten", 0) for t in threads),
            sum(t.get("window_lost", 0) for t in threads))


def flight_preroll_disk(rep, ada, pid_dir, m, events):
    """A window whose pre-roll was on disk before the fire: every call and
    return inside it links exactly one detail record of its kind, the
    detail files hold exactly those, nothing was dropped (64 MiB ring)."""
    w = check_one_window(rep, ada, pid_dir, m, "symbol=rare_event", "rare_event")
    det = check_window_detail(rep, pid_dir, events, m, want_min=1000)
    if not w:
        return
    wanted = [e for e in events if e["kind"] in ("call", "return")
              and w["from_ns"] <= e["ts"] <= w["to_ns"]]
    missing = [e for e in wanted if not isinstance(e.get("detail"), dict)]
    wrong = [e for e in det if e["detail"].get("type") != e["kind"]]
    nfile = 0
    for path in glob.glob(os.path.join(pid_dir, "thread_*", "detail*.atf")):
        with open(path, "rb") as f:
            nfile += int.from_bytes(f.read(64)[28:36], "little")
    drops, _, _, lost = flight_detail_counts(m)
    unlinked = sum(t.get("detail", {}).get("unlinked", 0) for t in m.get("threads", []))
    rep.check(not missing and not wrong and len(det) == len(wanted) == nfile,
              "%d calls/returns in the window, %d link a record (%d without one, e.g. %r; "
              "%d of the wrong kind), detail files hold %d: want all equal" % (
                  len(wanted), len(det), len(missing), missing[:1], len(wrong), nfile))
    rep.check(sum(drops.values()) == 0 and lost == 0 and unlinked == 0,
              "drops %r, window_lost %d, unlinked %d: want none" % (drops, lost, unlinked))
    rep.note("%d records persisted for a window of %.3f s before the fire" % (
        len(det), (w["fire_ns"] - w["from_ns"]) / 1e9))


# The scenarios that hold the drain in a window pass (flight.c,
# ADA_TEST_WINDOW_PAUSE), and how many times the program saw it hold.
WINDOW_PAUSE = {"window_deferred": 1, "window_spent": 2}


def flight_window_whole(rep, m, events, err, scenario, seen):
    """Windows the drain was behind on (held at a chosen point, see
    WINDOW_PAUSE): every call and return inside a window links its detail
    record, the files and the manifest's windows hold exactly those, and
    nothing was lost or left unlinked: a record a window wanted is
    written (or counted, which here it need not be)."""
    rep.check(seen == WINDOW_PAUSE[scenario], "the program saw the drain held %d times in "
              "a window pass, expected %d (ADA_TEST_WINDOW_PAUSE)" % (
                  seen, WINDOW_PAUSE[scenario]))
    wins = flight_windows(m)
    nwin = 2 if scenario == "window_spent" else 1
    if not rep.check(len(wins) == nwin and all(w.get("fires") == 1 for w in wins),
                     "expected %d windows of one fire each: %r" % (
                         nwin, [{k: v for k, v in w.items() if k != "threads"}
                                for w in wins])):
        return
    wanted = [e for e in events if e["kind"] in ("call", "return")
              and any(w["from_ns"] <= e["ts"] <= w["to_ns"] for w in wins)]
    det = [e for e in events if isinstance(e.get("detail"), dict)]
    missing = [e for e in wanted if not isinstance(e.get("detail"), dict)]
    told = [w.get("records", 0) for w in wins]
    in_win = [sum(1 for e in det if w["from_ns"] <= e["ts"] <= w["to_ns"]) for w in wins]
    drops, _, _, lost = flight_detail_counts(m)
    unlinked = sum(t.get("detail", {}).get("unlinked", 0) for t in m.get("threads", []))
    rep.note("windows' records %r, calls and returns in them %d" % (told, len(wanted)))
    rep.check(not missing and len(det) == len(wanted) and told == in_win,
              "%d calls/returns in the windows, %d without their detail record (e.g. %r); "
              "detail records %d; the windows say %r, the files hold %r" % (
                  len(wanted), len(missing), missing[:1], len(det), told, in_win))
    rep.check(sum(drops.values()) == 0 and lost == 0 and unlinked == 0,
              "drops %r, window_lost %d, unlinked %d: want none" % (drops, lost, unlinked))
    # The summary line says what the manifest and `ada status` say
    # (check_status_windows): every record written, none short.
    want = "ada: flight recorder: %d window%s persisted, %d detail records persisted, 0 older " \
        "detail records overwritten in memory (not drops)" % (nwin, "s" if nwin > 1 else "",
                                                              len(det))
    summary = flight_summary(err)
    rep.check(want in summary and any(l.startswith("ada: recorded") and ", drops 0," in l
                                      for l in summary),
              "the summary should say drops 0 and %r: %r" % (want, summary))
    if scenario == "window_spent":
        # The first window's records were more than one pass writes (4 MiB).
        rep.check(wins[0]["to_ns"] < wins[1]["from_ns"] and
                  sum(w.get("bytes", 0) for w in wins[0].get("threads", [])) > 4 << 20,
                  "the first window should end before the second and hold more than a "
                  "pass's 4 MiB: %r" % [{k: v for k, v in w.items() if k != "threads"}
                                         for w in wins])


def flight_triggered_overwrite(rep, ada, pid_dir, m, events, err):
    """--detail triggered, a ring overfilled before the fire: 0 drops; the
    overwritten records counted apart (manifest, summary line); the
    window of the fire persisted whole."""
    drops, det, ring_over, lost = flight_detail_counts(m)
    rep.check(sum(drops.values()) == 0, "overwriting what no window wanted is no drop: %r"
              % drops)
    rep.check(ring_over > 70000 and det.get("overwritten") == ring_over
              and det.get("window_lost") == 0 and lost == 0,
              "the 1 MiB ring overwrote some 78 000 records, none a window wanted: detail %r, "
              "threads' rings %d, window_lost %d" % (
                  {k: v for k, v in det.items() if k != "keysym"}, ring_over, lost))
    w = check_one_window(rep, ada, pid_dir, m, "symbol=rare_event", "rare_event")
    if not w:
        return
    at_fire = [e for e in events if e.get("kind") in ("call", "return")
               and w["from_ns"] <= e["ts"] <= w["to_ns"]]
    det_ev = check_window_detail(rep, pid_dir, events, m)
    check_args(rep, det_ev, "rare_event", {"rdi": "0x7"})
    rep.check(w.get("records") == len(at_fire) == len(det_ev) == det.get("records")
              and w.get("window_lost") == 0,
              "the window of the fire should hold its %d events' records and lose none: "
              "window %r, %d in detail.atf, manifest %r" % (
                  len(at_fire), {k: v for k, v in w.items() if k != "threads"}, len(det_ev),
                  det.get("records")))
    want = ("ada: flight recorder: 1 window persisted, %d detail records persisted, %d older "
            "detail records overwritten in memory (not drops)" % (len(at_fire), ring_over))
    summary = flight_summary(err)
    rep.check(any(l.startswith("ada: recorded") and ", drops 0," in l for l in summary)
              and want in summary,
              "the summary should say drops 0 and %r: %r" % (want, summary))


def flight_window_lost(rep, m, events, err):
    """A window of the whole run on a ring that held a fraction of it: what
    the ring overwrote before the drain persisted it is window_lost (per
    thread and window, a drop reason, the summary), the pre-roll achieved
    is short, and persisted + lost are every record the program made (the
    run's own index lane says how many: one per call and return)."""
    drops, det, ring_over, lost = flight_detail_counts(m)
    wins = flight_windows(m)
    w = wins[0] if len(wins) == 1 else {}
    rep.check(len(wins) == 1, "expected one window: %r" % wins)
    wt = w.get("threads", [])
    # A window's shortfall is no drop: not in the manifest's drops.
    rep.check(lost > 0 and "window_lost" not in drops and lost == det.get("window_lost")
              == w.get("window_lost") == sum(t.get("window_lost", 0) for t in wt)
              and drops.get("detail_overwritten") == 0
              and sum(drops.values()) == 0,
              "window_lost should be counted alike everywhere: drops %r, detail %r, threads "
              "%d, window %r" % (drops, {k: v for k, v in det.items() if k != "keysym"}, lost,
                                 {k: v for k, v in w.items() if k != "threads"}))
    rep.check(ring_over == lost + det.get("overwritten", -1),
              "the rings' overwritten records (%d) are window_lost (%d) and the rest (%r)" % (
                  ring_over, lost, det.get("overwritten")))
    rep.check(wt and all(t.get("pre_achieved_ns") is not None
                         and t["pre_achieved_ns"] < w.get("pre_roll_ns", 0) for t in wt),
              "the pre-roll achieved should say what the ring still held: %r" % wt)
    summary = flight_summary(err)
    # The summary says what the window got, not drops: "pre-roll achieved
    # X of Y", the records it wanted, the ring that would have held them.
    pre = det.get("pre_roll_achieved_ns")
    rep.check(any(l.startswith("ada: recorded") and "drops 0," in l for l in summary) and
              any(l.startswith("ada: flight recorder:") and
                  "%d records windows wanted were already overwritten" % lost in l
                  and "pre-roll achieved " in l and "not drops)" in l for l in summary) and
              pre is not None and pre == min(t["pre_achieved_ns"] for t in wt)
              and 0 < pre < det.get("pre_roll_asked_ns", 0) <= w.get("pre_roll_ns", 0),
              "the summary should tell window_lost %d as a shortfall, not drops: %r, "
              "detail %r" % (lost, summary, {k: v for k, v in det.items() if k != "keysym"}))
    # Sizing from this run's measured rate: the ring that would have held
    # what each thread's window kept and lost (records are near enough one
    # size), as a power-of-two --detail-mb, in the manifest and the summary.
    ring = det.get("ring_bytes", 0)
    need = max(((ring // t["records"]) * (t["records"] + t["window_lost"]) +
                ((ring % t["records"]) * (t["records"] + t["window_lost"]) +
                 t["records"] - 1) // t["records"])
               for t in wt if t.get("records") and t.get("window_lost")) if wt else 0
    mib = 1
    while mib << 20 < need:
        mib *= 2
    rep.check(need > ring and det.get("ring_suggest_bytes") == need,
              "detail.ring_suggest_bytes %r, expected %d (ring %d)" % (
                  det.get("ring_suggest_bytes"), need, ring))
    rep.check(any("at this run's rate --detail-mb %d would have held them" % mib in l
                  for l in summary), "the summary should suggest --detail-mb %d: %r" % (
                      mib, summary))
    # The reason in numbers: the ring per thread, what it held, the rate.
    held = "a %s MiB ring per thread held " % ("%.3g" % (ring / (1 << 20)))
    rep.check(ring and any(held in l and " MiB/s; not drops)" in l for l in summary),
              "the summary should say the ring (%r) and the rate it filled at: %r" % (
                  held, summary))
    # What filled the ring, ranked (docs/manifest.md): the functions of
    # the records kept, heaviest first, and the fewest of them a detail
    # set could leave out to hold the window, which the summary names.
    fill, hold = w.get("fillers") or [], w.get("hold_without")
    names = {e.get("function") for e in events if isinstance(e.get("detail"), dict)}
    rep.check(fill and all(0 < f.get("share", 0) <= 1 for f in fill)
              and sum(f["share"] for f in fill) <= 1.001
              and [f["bytes"] for f in fill] == sorted((f["bytes"] for f in fill), reverse=True)
              and all(f.get("function") in names for f in fill if f.get("function")),
              "window fillers should rank functions whose records the ring held: %r" % fill)
    if hold:
        named = [f.get("function") or f.get("function_id") for f in fill]
        rep.check(hold[:len(named)] == named[:len(hold)] and
                  any("without %s in the detail set" % ", ".join(hold) in l for l in summary),
                  "hold_without %r should be the heaviest fillers %r, named in the summary %r"
                  % (hold, named, summary))
    # Every record the program made: one per call and return of a
    # function in the detail set (all of them here), so this run's own
    # index lane counts them. Not a second run: the program's calls are
    # not the same from run to run (libc's write() takes the
    # asynchronous-cancellation calls only in a process that has ever had
    # a second thread, such as the agent's start-up analysis helper on a
    # plan-cache miss: 4 records more).
    made = [e for e in events if e.get("kind") in ("call", "return")]
    kept = [e for e in made if isinstance(e.get("detail"), dict)]
    rep.note("persisted %r, window_lost %d (estimated: %r), calls and returns %d" % (
        det.get("records"), lost, any(t.get("window_lost_estimated") for t in wt), len(made)))
    rep.check(len(kept) == det.get("records") == w.get("records"),
              "the index events linked to a detail record (%d) should be the records "
              "persisted (manifest %r, window %r)" % (len(kept), det.get("records"),
                                                      w.get("records")))
    rep.check(det.get("records", 0) + lost == len(made),
              "persisted %r + window_lost %d should be every record the program made: one "
              "per call and return in the index lane, %d" % (det.get("records"), lost,
                                                             len(made)))


def flight_always_counts(rep, m, events, err, must_lose, overflow="overwrite", no_loss=False):
    """--detail always on a ring that lapped: the detail_overwritten drops
    are the records overwritten before the drain persisted them, alike in
    drops, per thread (`lost`) and the summary line; persisted + lost are
    every record the program made (one per call and return in this run's
    index lane: see flight_window_lost); the rest of what the rings
    overwrote (persisted first) is detail.overwritten, information."""
    drops, det, ring_over, wlost = flight_detail_counts(m)
    lost = m.get("drops", {}).get("detail", {}).get("detail_overwritten", -1)
    per_thread = sum(t.get("detail", {}).get("lost", 0) for t in m.get("threads", []))
    made = len([e for e in events if e.get("kind") in ("call", "return")])
    rep.note("persisted %r, lost %d, ring overwrote %d, calls and returns %d" % (
        det.get("records"), lost, ring_over, made))
    rep.check(lost == per_thread and (lost > 0 or not must_lose) and wlost == 0
              and sum(drops.values()) == lost,
              "detail_overwritten drops %d, threads' lost %d, all drops %r" % (
                  lost, per_thread, drops))
    rep.check(ring_over > 70000 and det.get("overwritten", -1) + lost == ring_over
              and (must_lose or det.get("overwritten", 0) > 0),
              "the rings overwrote %d (> 70000 expected): %r of them persisted first "
              "(detail.overwritten), %d lost" % (ring_over, det.get("overwritten"), lost))
    rep.check(det.get("records", 0) + lost == made,
              "persisted %r + lost %d should be every record the program made: one per "
              "call and return in the index lane, %d" % (det.get("records"), lost, made))
    summary = flight_summary(err)
    want = ", drops %d (detail_overwritten %d)," % (lost, lost) if lost else ", drops 0,"
    rep.check(any(l.startswith("ada: recorded") and want in l for l in summary),
              "the summary line should say %r: %r" % (want, summary))
    hint = [l for l in err.decode(errors="replace").splitlines() if l.startswith("ada: --detail always: %d detail records "
                                                "were overwritten" % lost)]
    rep.check(len(hint) == (1 if lost else 0) and all("--detail-mb" in l for l in hint),
              "with %d lost, the summary should %s the --detail-mb hint: %r" % (
                  lost, "carry" if lost else "not carry", summary))
    rep.check(not flight_windows(m), "--detail always makes no windows")
    rep.check(m.get("detail", {}).get("overflow") == overflow,
              "the manifest's detail.overflow should be %r: %r" % (
                  overflow, m.get("detail", {}).get("overflow")))
    # The cost of keeping every record: waits counted per thread and in
    # all, and said on the summary exactly when there were some.
    waits = m.get("detail", {}).get("waits", -1)
    rep.check(waits == sum(t.get("detail", {}).get("waits", 0) for t in m.get("threads", []))
              and (waits > 0 and m["detail"].get("waited_ns", 0) > 0 if overflow == "wait"
                   else waits == 0),
              "detail.waits %r (waited_ns %r) with --detail-overflow %s" % (
                  waits, m.get("detail", {}).get("waited_ns"), overflow))
    said = [l for l in err.decode(errors="replace").splitlines()
            if l.startswith("ada: --detail always: the program's threads waited %d times" % waits)]
    rep.check(len(said) == (1 if waits > 0 else 0),
              "the summary should say the %d waits once: %r" % (waits, said))
    if no_loss:
        rep.check(lost == 0 and det.get("records", -1) == made,
                  "--detail-overflow wait: every record persisted (%d), none lost: %r "
                  "persisted, %d lost" % (made, det.get("records"), lost))


def flight_bad(ada, work, rep, prog):
    """Every bad flight-recorder option: refused before the program starts,
    one sentence naming the bad part, no session left behind."""
    for opts, names in BAD_TRIGGERS:
        out_dir = os.path.join(work, "bad-out")
        cmd, rc, out, err = ada.record(out_dir, [prog, "segv"], dict(os.environ), opts)
        lines = [l for l in err.decode(errors="replace").splitlines() if l.strip()]
        rep.check(rc == 2 and len(lines) == 1 and names in lines[0],
                  "`%s`: expected exit 2 and one line naming %r, got %d: %r" % (
                      " ".join(cmd), names, rc, lines[:4]))
        left = glob.glob(os.path.join(out_dir, "session_*"))
        rep.check(not left, "`%s` left a session behind: %r" % (" ".join(cmd), left))


def flight_recover_killed(ada, work, rep, prog):
    """The recorder is SIGKILLed while it writes detail.atf (--detail
    always) and the program then dies of SIGSEGV: nobody drains the crash.
    `ada recover` must finalize index and detail files (validate passes),
    append the faulting thread's signal marker and write the manifest's
    crash section from the crash record the agent left in the arena."""
    out_dir = os.path.join(work, "out")
    # A ring the run cannot fill (16 MiB: 512 Ki events, the run makes
    # ~120 000): the events after the kill stay in it for recover, however
    # far behind the drain was when it died.
    cmd, rc, out, err = ada.record(out_dir, [prog, "killrec"], dict(os.environ),
                                   ["--detail", "always", "--ring-mb", "16"])
    rep.note("repro: %s" % " ".join(cmd))
    rep.check(rc in (-9, 137), "ada record should have been SIGKILLed by the target: %d" % rc)
    sessions = glob.glob(os.path.join(out_dir, "session_*"))
    if len(sessions) != 1:
        raise Fail("expected one session directory in %s, found %r" % (out_dir, sessions))
    session = sessions[0]
    pids = glob.glob(os.path.join(session, "pid_*"))
    if len(pids) != 1:
        raise Fail("expected one pid directory in %s, found %r" % (session, pids))
    pid = int(os.path.basename(pids[0])[4:])
    # The orphaned target dies right after the kill (its stdout pipe closed
    # before ada record's run returned); a run-away guard only.
    for _ in range(6000):
        if not os.path.exists("/proc/%d" % pid):
            break
        time.sleep(0.01)
    rc, o, e = run([ada.path, "recover", session])
    rep.check(rc == 0, "`ada recover` exited %d: %s" % (rc, shown(e)))
    ada.validate(session, rep)
    pid_dir, m = flight_manifest(rep, session)
    rep.check(m.get("state") == "recovered", "manifest state %r, not recovered" % m.get("state"))
    # The threads' waits for ring space, read from the arena's slots, and
    # their sums, as the live drain writes them.
    mt = m.get("metrics", {})
    tw = [(t.get("ring_waits"), t.get("ring_waited_ns")) for t in m.get("threads", [])]
    rep.check(all(isinstance(w, int) and isinstance(n, int) for w, n in tw) and
              mt.get("ring_waits") == sum(w for w, _ in tw) and
              mt.get("ring_waited_ns") == sum(n for _, n in tw),
              "recovered ring waits: metrics %r / %r, threads %r" % (
                  mt.get("ring_waits"), mt.get("ring_waited_ns"), tw))
    rec = [d for t in m.get("threads", []) for d in t.get("detail_recovered", [])]
    rep.check(any(d.get("records", 0) > 0 for d in rec),
              "no unfinished detail file was recovered with records: %r" % rec)
    c = m.get("crash")
    if not rep.check(isinstance(c, dict), "no crash section after recover: %r" % m.get("exit")):
        return
    rep.check(c.get("signal") == 11 and c.get("address") == "0x0" and c.get("caught") is True
              and c.get("faulting_thread") is not None,
              "crash section: %r" % {k: v for k, v in c.items() if k != "stacks"})
    # The registers at the signal, from the crash record the agent left.
    ctx = c.get("context") or {}
    rep.check(ctx.get("pc", "0x0") != "0x0" and
              (ctx.get("registers") or {}).get("rip") == ctx.get("pc"),
              "recovered crash.context: %r" % ctx)
    events = ada.dump(pid_dir)
    rep.check(any(is_signal_marker(e) and e.get("tid") == c.get("faulting_tid") for e in events),
              "no signal marker for the faulting thread in the recovered index")
    fault_ids = {hexint(e["function_id"]) for e in events if e.get("kind") == "call"
                 and base_name(e.get("function")) == "fault_here" and "function_id" in e}
    stacks = [st for st in c.get("stacks", []) if st.get("tid") == c.get("faulting_tid")]
    top = stacks[0].get("frames", [{}])[0].get("function_id") if stacks and stacks[0].get(
        "frames") else None
    rep.check(top is not None and hexint(top) in fault_ids,
              "the faulting thread's innermost open frame is %r, not fault_here %r" % (
                  top, sorted(fault_ids)))


def hm(minutes):
    minutes %= 1440
    return "%02d:%02d" % (minutes // 60, minutes % 60)


def time_range(scenario):
    """time= ranges built from the local clock now (the recorder reads the
    same clock and time zone): `time_whole` starts 2 minutes ago and ends
    in 10; `time_wrap` is 23 h 50 min long, from 30 minutes ahead round
    midnight to 20 minutes ahead (so it crosses midnight, except when
    midnight falls in that 10-minute gap); `time_never` starts in 3 hours.
    None of it depends on how long the run takes (< 2 minutes)."""
    t = time.localtime()
    now = t.tm_hour * 60 + t.tm_min
    start, end = {"time_whole": (-2, 10), "time_wrap": (30, 20),
                  "time_never": (180, 240)}[scenario]
    return "time=%s-%s" % (hm(now + start), hm(now + end))


def flight_time(ada, work, rep, prog, scenario):
    """time=HH:MM-HH:MM end to end with the real clock: a range that covers
    the whole run persists one window holding every detail record of it
    (the range with the pre/post-roll round it); a range that does not
    occur during the run persists nothing."""
    spec = time_range(scenario)
    out_dir = os.path.join(work, "out")
    cmd, rc, out, err = ada.record(out_dir, [prog, "symbol"], dict(os.environ),
                                   ["--detail-mb", "8", "--trigger", spec])
    rep.note("repro: %s" % " ".join(cmd))
    rep.check(rc == 0, "ada record exited %d: %s" % (rc, shown(err)))
    session = find_session(out_dir, err, rep)
    ada.validate(session, rep)
    pid_dir, m = flight_manifest(rep, session)
    armed = m.get("flight_recorder", {}).get("triggers", [])
    events = ada.dump(pid_dir)
    wins = flight_windows(m)
    if scenario == "time_never":
        rep.check(not wins, "%s does not occur during the run, yet windows: %r" % (spec, wins))
        check_window_detail(rep, pid_dir, events, m, want_min=0)
        return
    if not rep.check(len(wins) == 1 and wins[0].get("trigger") == spec,
                     "expected one window from %s (armed: %r): %r" % (spec, armed, wins)):
        return
    w = wins[0]
    ts = [e["ts"] for e in events if "ts" in e]
    rep.check(ts and w["from_ns"] <= min(ts) and w["to_ns"] >= max(ts),
              "the window [%d, %d] should cover the whole run [%d, %d]" % (
                  w["from_ns"], w["to_ns"], min(ts or [0]), max(ts or [0])))
    det = check_window_detail(rep, pid_dir, events, m, want_min=100)
    check_args(rep, det, "rare_event", {"rdi": "0x7"})


def flight_checker_catches(ada, work, rep, prog):
    """atf_check.py must be able to fail: a --detail always session is
    clean, then copies with one fault each (the footer CRC recomputed, so
    only the fault itself can give it away) must each be reported. The
    program's `slow` run, work() 1 000 times (~2 000 linked events): each
    of the 17 checks reads the whole pair, which for `symbol`'s ~100 000
    took ~1 s of CPU each."""
    out_dir = os.path.join(work, "out")
    # ATF v2 files whatever ADA_TEST_INDEX_FORMAT says: the faults are
    # planted in their bytes (the last --index-format given wins).
    cmd, rc, out, err = ada.record(out_dir, [prog, "slow"], dict(os.environ),
                                   ["--detail", "always", "--detail-mb", "8",
                                    "--index-format", "atf"])
    session = find_session(out_dir, err, rep)
    ada.validate(session, rep)
    tdirs = [t for t in atf_check.thread_dirs(session)
             if os.path.exists(os.path.join(t, "detail.atf"))]
    if not tdirs:
        raise Fail("no thread wrote detail.atf with --detail always")
    src = tdirs[0]
    idx = open(os.path.join(src, "index.atf"), "rb").read()
    det = open(os.path.join(src, "detail.atf"), "rb").read()
    n = (len(idx) - 128) // 32
    dseq = [int.from_bytes(idx[64 + 32 * i + 28:64 + 32 * i + 32], "little") for i in range(n)]
    linked = [i for i in range(n) if dseq[i] != 0xFFFFFFFF]
    rep.check(len(linked) > 100, "only %d linked index events" % len(linked))
    dlen = int.from_bytes(det[36:44], "little")
    first_len = int.from_bytes(det[64:68], "little")

    def put(b, off, width, value):
        b[off:off + width] = value.to_bytes(width, "little")

    def refooter(b, events_end, crc_at):
        put(b, crc_at, 4, zlib.crc32(bytes(b[64:events_end])))

    def fault(name, index_edit=None, detail_edit=None, keep_crc=True):
        d = os.path.join(work, "fault_" + name, "thread_0")
        os.makedirs(d)
        ib, db = bytearray(idx), bytearray(det)
        if index_edit:
            index_edit(ib)
            if keep_crc:
                refooter(ib, len(ib) - 64, len(ib) - 64 + 4)
        if detail_edit:
            detail_edit(db)
            if keep_crc:
                refooter(db, 64 + dlen, 64 + dlen + 4)
        open(os.path.join(d, "index.atf"), "wb").write(ib)
        open(os.path.join(d, "detail.atf"), "wb").write(db)
        lines, _ = atf_check.check_tree(d)
        rep.check(lines, "atf_check.py did not notice: %s" % name)
        rep.note("%s: %s" % (name, lines[0] if lines else "NOT NOTICED"))

    lines, files = atf_check.check_tree(session)
    rep.check(not lines and files > 0, "the intact session: %r" % lines[:5])
    a, b = linked[0], linked[1]
    fault("forward_link_dropped", lambda ib: put(ib, 64 + 32 * b + 28, 4, 0xFFFFFFFF))
    fault("forward_links_swapped", lambda ib: (put(ib, 64 + 32 * a + 28, 4, dseq[b]),
                                               put(ib, 64 + 32 * b + 28, 4, dseq[a])))
    fault("backward_link_moved", detail_edit=lambda db: put(db, 64 + 8, 4,
                                                             linked[0] + 1))
    fault("detail_timestamp", detail_edit=lambda db: put(db, 64 + 16, 8,
                                                          int.from_bytes(db[80:88], "little") + 1))
    fault("detail_function", detail_edit=lambda db: put(db, 64 + 24, 8, 0x12345))
    fault("detail_type", detail_edit=lambda db: put(db, 64 + 4, 2, 9))
    fault("detail_length", detail_edit=lambda db: put(db, 64, 4, first_len + 8))
    fault("detail_count", detail_edit=lambda db: put(db, 28, 8, len(linked) + 1))
    fault("index_kind", lambda ib: put(ib, 64 + 32 * (n // 2) + 20, 4, 7))
    fault("index_time_order", lambda ib: put(ib, 64 + 32 * (n // 2), 8, 1))
    fault("index_footer_count", lambda ib: put(ib, len(ib) - 64 + 8, 8, n + 1))
    fault("index_header_count", lambda ib: put(ib, 28, 4, n - 1))
    fault("has_detail_flag", lambda ib: put(ib, 8, 4, 0))
    fault("index_crc", lambda ib: put(ib, 64 + 32 * (n // 2) + 24, 4, 99), keep_crc=False)
    fault("detail_crc", detail_edit=lambda db: put(db, 64 + 24 + 8, 8, 1), keep_crc=False)


def flight_window_mem(ada, work, rep, prog, scenario):
    """Window memory (issue 32): a window open over a busy program
    (t_trigrate, a 4 MiB detail ring) whose every live persist is held
    back as on a contended CPU (ADA_TEST_FLIGHT_CONTENDED). window_mem:
    the takes carried the window's records out of the ring into memory,
    so the window kept far more than the ring holds (its end persisted
    them; no live persist ran); window_mem_full: with 2 MiB of window
    memory the takes stop at it, counted, and the rest is window_lost.
    Either way the window's every call and return is linked,
    window_lost or unlinked, exactly (the window is the whole run: no
    gap crosses its edges)."""
    full = scenario == "window_mem_full"
    argv = [prog, "0.5", "50", "2000"]
    opts = ["--detail-mb", "4", "--pre-roll-sec", "3600", "--post-roll-sec", "3600",
            "--trigger", "symbol=mark_point", "--window-mem-mb", "2" if full else "512"]
    env = dict(os.environ)
    env["ADA_TEST_FLIGHT_CONTENDED"] = "1"
    out_dir = os.path.join(work, "out")
    cmd, rc, out, err = ada.record(out_dir, argv, env, opts)
    rep.note("repro: ADA_TEST_FLIGHT_CONTENDED=1 %s" % " ".join(cmd))
    if not rep.check(rc == 0, "ada record exited %d: %s" % (rc, err[-2000:])):
        return
    session = find_session(out_dir, err, rep)
    check_arena_gone(rep, session)
    ada.validate(session, rep)
    pid_dir, m = flight_manifest(rep, session)
    c = m.get("flight_recorder", {}).get("counts", {})
    wins = flight_windows(m)
    rep.note("counts %r" % c)
    if not rep.check(len(wins) == 1, "expected one window: %r" % wins):
        return
    w = wins[0]
    # No live persist ran. Whether a pass asked (persist_contended)
    # depends on the index lane having had room for one, which a starved
    # program's half second may never give.
    rep.check(c.get("persist_cpu_ns") == 0,
              "every live persist should have been held back: %r" % c)
    # Counted, not read: the detail records' contents are atf_check's
    # (ada.validate above), their links both ways.
    events = ada.dump_linked(pid_dir)
    made = [e for e in events if e.get("kind") in ("call", "return")
            and w["from_ns"] <= e["ts"] <= w["to_ns"]]
    linked = sum(1 for e in made if e["linked"])
    lost = w.get("window_lost", 0)
    unlinked = sum(t.get("unlinked", 0) for t in w.get("threads", []))
    passed = (w.get("window_missed") or {}).get("passed_over", 0)
    rep.note("window: index %d linked %d window_lost %d unlinked %d passed_over %d" % (
        len(made), linked, lost, unlinked, passed))
    rep.check(linked == w.get("records") and len(made) == linked + lost + unlinked + passed,
              "the window's calls and returns (%d) should be its records (%d, window %r) + "
              "window_lost (%d) + unlinked (%d) + passed_over (%d)" % (
                  len(made), linked, w.get("records"), lost, unlinked, passed))
    # The threads' overwritten counts are their rings' counters, each
    # record once (a take that got no block counts nothing): the arena's
    # count, which the manifest splits into overwritten and window_lost.
    _, det, ring_over, _ = flight_detail_counts(m)
    rep.check(ring_over == det.get("overwritten", -1) + det.get("window_lost", -1),
              "the threads' detail.overwritten (%d) should be the rings' count: "
              "detail.overwritten %r + window_lost %r" % (
                  ring_over, det.get("overwritten"), det.get("window_lost")))
    ring = m.get("detail", {}).get("ring_bytes", 0)
    if full:
        # Takes stop at the limit when any ran; a drain starved beside
        # other tests may have run none before the thread's end.
        took = c.get("take_cpu_ns", 0) > 0
        rep.check(c.get("window_mem_limit") == 2 << 20
                  and (c.get("window_mem_full", 0) > 0 or not took) and lost > 0,
                  "2 MiB of window memory: takes should stop at it (window_mem_full), the "
                  "rest window_lost: %r, window_lost %d" % (c, lost))
    else:
        rep.check(c.get("window_mem_limit") == 512 << 20 and c.get("window_mem_full") == 0
                  and c.get("window_mem_peak", 0) > 0 and c.get("take_cpu_ns", 0) > 0,
                  "window memory should have held the records (512 MiB): %r" % c)
        kept = sum(t.get("bytes", 0) for t in w.get("threads", []))
        # More than one ring kept shows the takes carried records (the
        # end alone keeps at most one). How many more depends on how often
        # a drain starved beside other tests got the CPU, so no more is asked.
        made_bytes = kept * len(made) // linked if linked else 0
        rep.check(ring and kept > ring,
                  "the window kept %r bytes of detail, not more than one ring (%r) of the "
                  "%r its program wrote: the takes did not carry its records while the "
                  "persist was held back" % (kept, ring, made_bytes))


def flight_threads(ada, work, rep, prog, scenario):
    """Threads around a crash (issue 34, tests/targets/t_latethread.c).
    late_thread: a thread started just before the crash, which the
    program crashes right after the thread did its 1 000 late_work calls:
    it is in `ada crash` and in the manifest's stacks, all 1 000 calls are
    in its index and in the crash window's detail. ended_thread: a thread
    that ended 500 ms before the crash, inside the pre-roll (30 s, a
    1 MiB ring that holds all it made): its 1 000 ended_work calls are in
    the crash window's detail, not only in its index."""
    late = scenario == "late_thread"
    argv = [prog, "sync"] if late else [prog, "ended", "500"]
    opts = ["--pre-roll-sec", "1" if late else "30", "--detail-mb", "1", "--trigger", "crash"]
    untraced = run(argv)
    if untraced[0] != 139:
        raise Fail("the untraced program exited %d, the test expects 139" % untraced[0])
    out_dir = os.path.join(work, "out")
    cmd, rc, out, err = ada.record(out_dir, argv, dict(os.environ), opts)
    rep.note("repro: %s" % " ".join(cmd))
    session = find_session(out_dir, err, rep)
    check_arena_gone(rep, session)
    ada.validate(session, rep)
    pid_dir, m = flight_manifest(rep, session)
    c = m.get("crash")
    if not rep.check(isinstance(c, dict) and c.get("signal") == 11,
                     "no SIGSEGV crash section in %s/manifest.json: %r" % (pid_dir, c)):
        return
    fn = "late_work" if late else "ended_work"
    events = ada.dump(pid_dir)
    tids = sorted({e.get("tid") for e in events if e.get("kind") == "call"
                   and base_name(e.get("function")) == fn})
    if not rep.check(len(tids) == 1 and tids[0] != c.get("faulting_tid"),
                     "%s should be called by one thread, not the faulting one: %r" % (fn, tids)):
        return
    tid = tids[0]
    calls = [e for e in events if e.get("tid") == tid and e.get("kind") == "call"
             and base_name(e.get("function")) == fn]
    rep.check(len(calls) == 1000, "%d calls of %s in the index, not 1000" % (len(calls), fn))
    det = check_window_detail(rep, pid_dir, events, m, want_min=1)
    dcalls = [e for e in det if e.get("tid") == tid and e.get("kind") == "call"
              and base_name(e.get("function")) == fn]
    rep.check(len(dcalls) == 1000, "the crash window holds %d detail records of %s's calls, "
              "not 1000" % (len(dcalls), fn))
    if late:
        stacks = [st for st in c.get("stacks", []) if st.get("tid") == tid]
        names = [base_name(f.get("function")) for st in stacks for f in st.get("frames", [])]
        rep.check("late_main" in names, "the late thread's stack at death should hold "
                  "late_main: %r" % names[:8])
        rc2, o, e = run([ada.path, "crash", session])
        text = o.decode(errors="replace")
        rep.check(rc2 == 0 and "(tid %d)" % tid in text and "late_main" in text,
                  "`ada crash` should show the late thread (tid %d) in late_main (exit %d):\n%s"
                  % (tid, rc2, shown(o, 1500)))


def flight_end_memory(ada, work, rep, prog):
    """The ends of threads with a window open (t_threads heavy: four
    threads, 600 000 events, each thread's 16 MiB detail ring turned over
    while the window, opened at spawn_all, stays open to the end): each
    end takes the rest of its ring a slice at a time (PD_END_SLICE, 8 MiB)
    and the live takes share one pass's budget over every thread
    (FLIGHT_PASS_BYTES, 4 MiB), so window memory never holds more than
    12 MiB (it held 20-24 MiB when an end took its whole ring at once and
    each thread had a pass's budget of its own). The window's calls and
    returns are still each linked, window_lost, unlinked or passed over,
    and every thread's work_a calls exact."""
    argv = [prog, "heavy"]
    opts = ["--pre-roll-sec", "5", "--post-roll-sec", "3600", "--trigger", "symbol=spawn_all"]
    untraced = run(argv)
    if untraced[0] != 0:
        raise Fail("the untraced program exited %d" % untraced[0])
    out_dir = os.path.join(work, "out")
    cmd, rc, out, err = ada.record(out_dir, argv, dict(os.environ), opts)
    rep.note("repro: %s" % " ".join(cmd))
    if not rep.check(rc == 0 and out == untraced[1], "exit %d, stdout %r (untraced: 0, %r): %s"
                     % (rc, out[:80], untraced[1][:80], err[-1500:])):
        return
    session = find_session(out_dir, err, rep)
    check_arena_gone(rep, session)
    ada.validate(session, rep)
    pid_dir, m = flight_manifest(rep, session)
    c = m.get("flight_recorder", {}).get("counts", {})
    ring = m.get("detail", {}).get("ring_bytes", 0)
    rep.note("counts %r, ring %d" % (c, ring))
    rep.check(ring == 16 << 20, "the derived detail ring should be 16 MiB: %d" % ring)
    rep.check(0 < c.get("window_mem_peak", 0) <= 12 << 20,
              "window memory should stay within a pass's budget and an end's slice "
              "(12 MiB): window_mem_peak %r" % c.get("window_mem_peak"))
    wins = flight_windows(m)
    if not rep.check(len(wins) == 1, "expected one window: %r" % wins):
        return
    w = wins[0]
    # Counted by `ada report` (a dump of these 470 000 events with their
    # registers and stacks is 240 MB of text); atf_check (validate above)
    # reads every detail record and its link both ways.
    rc, o, e = run([ada.path, "report", session, "--json", "--window", "0"])
    tot = json.loads(o)["processes"][0]["totals"] if rc == 0 else {}
    made = tot.get("calls", 0) + tot.get("returns", 0)
    lost = w.get("window_lost", 0)
    unlinked = sum(t.get("unlinked", 0) for t in w.get("threads", []))
    passed = (w.get("window_missed") or {}).get("passed_over", 0)
    rep.note("window: index %d records %r window_lost %d unlinked %d passed_over %d" % (
        made, w.get("records"), lost, unlinked, passed))
    rep.check(made > 0 and made == w.get("records", 0) + lost + unlinked + passed,
              "the window's calls and returns (%d, `ada report --window 0`, exit %d) should be "
              "its records (%r) + window_lost (%d) + unlinked (%d) + passed_over (%d)" % (
                  made, rc, w.get("records"), lost, unlinked, passed))
    rc, o, e = run([ada.path, "report", session, "--json", "--threads", "--function", "work_a",
                    "--depth", "1"])
    fns = json.loads(o)["processes"][0]["functions"] if rc == 0 else []
    calls = sorted(f.get("calls", 0) for f in fns if f.get("function") == "work_a")
    rep.check(calls == [1, 7500, 15000, 22500, 30000],
              "work_a calls by thread should be main's one and 300 x 25 x (1..4): %r (exit %d)"
              % (calls, rc))


def flight_serial_threads(ada, work, rep, prog):
    """A thread per request (t_manythreads serial: 16 threads one after
    another, 2 500 mt_work calls each) under --detail always, every event
    linked: every call is in its thread's index exactly once and carries
    its own detail record. A thread's index file may open with the recent
    window a finished thread's file left, links set (src/wal/segment_cidx.c;
    how many do depends on the drain's pace, so test_cidx_recent_reused
    proves the hand-over itself): a link of the earlier owner read as this
    thread's would leave its records unlinked."""
    threads, each = 16, 2500
    argv = [prog, "serial", str(threads), str(each)]
    untraced = run(argv)
    if untraced[0] != 0:
        raise Fail("the untraced program exited %d" % untraced[0])
    out_dir = os.path.join(work, "out")
    cmd, rc, out, err = ada.record(out_dir, argv, dict(os.environ), ["--detail", "always"])
    rep.note("repro: %s" % " ".join(cmd))
    rep.check(rc == 0 and out == untraced[1], "exit %d, stdout %r (untraced: 0, %r)" % (
        rc, out[:80], untraced[1][:80]))
    session = find_session(out_dir, err, rep)
    check_arena_gone(rep, session)
    ada.validate(session, rep)
    pid_dir, m = flight_manifest(rep, session)
    events = ada.dump(pid_dir)
    calls = {}
    linked = {}
    for e in events:
        if e.get("kind") == "call" and base_name(e.get("function")) == "mt_work":
            calls[e.get("tid")] = calls.get(e.get("tid"), 0) + 1
            if isinstance(e.get("detail"), dict):
                linked[e.get("tid")] = linked.get(e.get("tid"), 0) + 1
    rep.check(len(calls) == threads and all(n == each for n in calls.values()),
              "mt_work calls by thread should be %d x %d: %r" % (threads, each, calls))
    rep.check(linked == calls, "every mt_work call should carry its detail record: "
              "with detail %r, calls %r" % (linked, calls))


def cmd_flight(args, ada, work, rep):
    prog = args.program
    if args.scenario.startswith("time_"):
        return flight_time(ada, work, rep, prog, args.scenario)
    if args.scenario == "bad_options":
        return flight_bad(ada, work, rep, prog)
    if args.scenario == "recover_killed":
        return flight_recover_killed(ada, work, rep, prog)
    if args.scenario == "checker_catches":
        return flight_checker_catches(ada, work, rep, prog)
    if args.scenario in ("late_thread", "ended_thread"):
        return flight_threads(ada, work, rep, prog, args.scenario)
    if args.scenario in ("window_mem", "window_mem_full"):
        return flight_window_mem(ada, work, rep, prog, args.scenario)
    if args.scenario == "serial_threads":
        return flight_serial_threads(ada, work, rep, prog)
    if args.scenario == "end_memory":
        return flight_end_memory(ada, work, rep, prog)
    mode, opts, status = FLIGHT[args.scenario]
    untraced = run((args.emulator.split() if args.emulator else []) + [prog, mode])
    if untraced[0] != status:
        raise Fail("the untraced program exited %d, the test expects %d" % (untraced[0], status))
    out_dir = os.path.join(work, "out")
    env = dict(os.environ)
    gate = os.path.join(work, "window_gate")
    if args.scenario in WINDOW_PAUSE:
        env["ADA_TEST_WINDOW_PAUSE"] = gate
    if args.scenario in ("window_lost_yield", "window_share_full"):
        env["ADA_TEST_FLIGHT_CONTENDED"] = "1"
    cmd, rc, out, err = ada.record(out_dir, [prog, mode], env, opts)
    rep.note("repro: %s%s" % ("ADA_TEST_FLIGHT_CONTENDED=1 " if "ADA_TEST_FLIGHT_CONTENDED"
                              in env else "", " ".join(cmd)))
    session = find_session(out_dir, err, rep)
    rep.note("session: %s" % session)
    if not glob.glob(os.path.join(session, "pid_*")):  # what ada said about it
        rep.note("ada record exited %d with no process recorded; its stderr: %s" % (
            rc, err.decode(errors="replace")[-3000:]))
    check_arena_gone(rep, session)
    check_same_behaviour(rep, cmd, session, untraced, (rc, out, err))
    ada.validate(session, rep)
    pid_dir, m = flight_manifest(rep, session)
    check_status_windows(rep, ada, session, m)
    events = ada.dump(pid_dir)
    if args.scenario == "crash_segv":
        check_flight_crash(rep, ada, pid_dir, m, 11, "fault_here")
        rep.check(m["crash"].get("address") == "0x0", "fault address %r, not 0x0 (NULL)" % (
            m["crash"].get("address")))
        det = check_window_detail(rep, pid_dir, events, m, want_min=100)
        names = ("x0", "x1", "x2") if m.get("arch") == "arm64" else ("rdi", "rsi", "rdx")
        check_args(rep, det, "fault_here", dict(zip(names, ("0x1111", "0x2222", "0x3333"))))
        rep.check(detail_call(det, "top") is not None, "the calls leading up to the crash "
                  "(top) have no detail record")
    elif args.scenario == "crash_abort":
        check_flight_crash(rep, ada, pid_dir, m, 6, None, below=("abort", "abort_here", "main"))
        det = check_window_detail(rep, pid_dir, events, m, want_min=100)
        check_args(rep, det, "abort_here", {"rdi": "0x4444"})
    elif args.scenario == "crash_overflow":
        st = check_flight_crash(rep, ada, pid_dir, m, 11, "overflow_here")
        if st:
            rep.check(st.get("depth", 0) > 1000 and st.get("frames_omitted", 0) > 0,
                      "a stack overflow should leave > 1000 open frames, most omitted: "
                      "depth %r, omitted %r" % (st.get("depth"), st.get("frames_omitted")))
        det = check_window_detail(rep, pid_dir, events, m, want_min=100)
        rep.check(detail_call(det, "overflow_here") is not None,
                  "no detail record of overflow_here's calls")
    elif args.scenario == "crash_recovered":
        rep.check("crash" not in m and not flight_windows(m)
                  and m.get("exit", {}).get("abnormal") is False,
                  "a program that recovers from its own SIGSEGV did not crash: %r %r" % (
                      m.get("crash"), flight_windows(m)))
        rep.check(not any(is_signal_marker(e) for e in events),
                  "a signal marker was written for a recovered fault")
        check_window_detail(rep, pid_dir, events, m, want_min=0)
    elif args.scenario in ("signal_sysv", "signal_bsd"):
        check_flight_crash(rep, ada, pid_dir, m, 11, "fault_here")
        rep.check(m["crash"].get("address") == "0x0", "fault address %r, not 0x0 (NULL)" % (
            m["crash"].get("address")))
        check_window_detail(rep, pid_dir, events, m, want_min=100)
    elif args.scenario == "signal_abort_handler":
        check_flight_crash(rep, ada, pid_dir, m, 6, None, below=("abort", "abort_here", "main"))
        check_window_detail(rep, pid_dir, events, m, want_min=100)
    elif args.scenario == "signal_overflow_handler":
        check_flight_crash(rep, ada, pid_dir, m, 11, "overflow_here")
    elif args.scenario == "signal_nostack":
        rep.check(untraced[1].strip().endswith(b"handler on an alternate stack: 0"),
                  "untraced, the handler should run on the thread's stack: %r" % untraced[1])
        rep.check("crash" not in m and not flight_windows(m),
                  "a recovered fault is no crash: %r" % m.get("crash"))
    elif args.scenario in ("always_overwrite", "always_lapped"):
        flight_always_counts(rep, m, events, err, args.scenario == "always_overwrite")
    elif args.scenario == "always_wait":
        flight_always_counts(rep, m, events, err, False, "wait", no_loss=True)
        check_status_waits(rep, ada, os.path.dirname(pid_dir), m)
    elif args.scenario == "always_wait_stopped":
        flight_always_counts(rep, m, events, err, True, "wait")
        check_status_waits(rep, ada, os.path.dirname(pid_dir), m)
    elif args.scenario == "index_wait_stopped":
        flight_index_wait(rep, ada, os.path.dirname(pid_dir), m, err)
    elif args.scenario == "index_wait_stalled":
        flight_index_stalled(rep, m, events)
    elif args.scenario == "triggered_overwrite":
        flight_triggered_overwrite(rep, ada, pid_dir, m, events, err)
    elif args.scenario == "window_lost":
        flight_window_lost(rep, m, events, err)
    elif args.scenario in WINDOW_PAUSE:
        try:
            with open(gate + ".seen") as f:
                seen = len(f.read().splitlines())
        except OSError:
            seen = 0
        flight_window_whole(rep, m, events, err, args.scenario, seen)
    elif args.scenario == "window_lost_yield":
        flight_window_lost(rep, m, events, err)
        c = m.get("flight_recorder", {}).get("counts", {})
        w = flight_windows(m)
        # No live persist ran (its CPU is 0); the passes held back are
        # counted when the index lane had room for a persist at all,
        # which a run this short may never have.
        rep.check(c.get("persist_cpu_ns") == 0 and c.get("persist_yielded", -1) >= 0,
                  "every live persist should have been held back for the program: %r" % c)
        y = c.get("persist_yielded", 0)
        rep.check(not y or any("their persist yielded to the program %d times" % y in l
                               for l in flight_summary(err)),
                  "the summary should say the persist yielded %d times: %r" % (
                      y, flight_summary(err)))
        rep.check(len(w) == 1 and w[0].get("records", 0) > 0,
                  "the thread's end should still persist what its ring held: %r" % [
                      {k: v for k, v in x.items() if k != "threads"} for x in w])
    elif args.scenario == "window_share_full":
        flight_window_lost(rep, m, events, err)
        c = m.get("flight_recorder", {}).get("counts", {})
        # Whether a live persist had room at all depends on the index lane
        # (a loaded machine may leave it none): what is certain is that
        # none was held back for the program. A pass that found no room
        # never asks whether it is contended, so persist_contended may be
        # 0 too (the window then ends with the thread).
        rep.check(m.get("flight_recorder", {}).get("persist_share_pct") == 100
                  and c.get("persist_yielded") == 0,
                  "--persist-share 100, yet a live persist was held back: %r" % c)
    elif args.scenario == "latency":
        w = check_one_window(rep, ada, pid_dir, m, "p99=function:work>50ms", "work")
        if w:
            rep.check(w.get("duration_ns", 0) > 50000000 and w.get("fires") == 1
                      and w["to_ns"] - w["fire_ns"] == 10000000
                      and w["fire_ns"] - w["from_ns"] == 10000000,
                      "the slow call's window: %r" % w)
            det = check_window_detail(rep, pid_dir, events, m)
            slow_ret = [e for e in det if e.get("kind") == "return" and e["ts"] == w["fire_ns"]
                        and base_name(e.get("function")) == "work"]
            rep.check(len(slow_ret) == 1, "the slow call's RETURN (at the window's fire time) "
                      "should have its detail record")
            works = sum(1 for e in det if e.get("kind") == "call"
                        and base_name(e.get("function")) == "work")
            rep.check(0 < works < 1000, "only the calls around the slow one should be in "
                      "detail.atf, not all 1000: %d" % works)
    elif args.scenario == "p99_auto":
        flight_p99_auto(rep, ada, pid_dir, m, events)
    elif args.scenario == "symbol":
        check_one_window(rep, ada, pid_dir, m, "symbol=rare_event", "rare_event")
        det = check_window_detail(rep, pid_dir, events, m)
        check_args(rep, det, "rare_event", {"rdi": "0x7"})
    elif args.scenario == "preroll_disk":
        flight_preroll_disk(rep, ada, pid_dir, m, events)
    elif args.scenario == "manual":
        check_one_window(rep, ada, pid_dir, m, "manual", None)
        check_window_detail(rep, pid_dir, events, m)
    elif args.scenario in ("max_windows", "holdoff"):
        flight_constant(rep, ada, pid_dir, m, args.scenario)


# ---------------------------------------------------------------- detail lane

DT_PATTERN = b"ADA-DETAIL-PATTN"


def hexint(v):
    return int(v, 16) if isinstance(v, str) else int(v)


def detail_file_counts(session):
    """(events in every detail*.atf by their headers, has_detail flags of the
    index files, detail files without an index flag)"""
    n, flagged, files = 0, 0, 0
    for path in glob.glob(os.path.join(session, "pid_*", "thread_*", "detail*.atf")):
        with open(path, "rb") as f:
            h = f.read(64)
        files += 1
        if h[:4] != b"ATD2" or h[6] != 1 or h[7] != 4:
            raise Fail("%s: header magic/arch/os %r, expected ATD2, x86_64 (1), Linux (4)" % (
                path, h[:8]))
        n += int.from_bytes(h[28:36], "little")
    for path in glob.glob(os.path.join(session, "pid_*", "thread_*", "index*.atf")):
        with open(path, "rb") as f:
            h = f.read(12)
        flagged += int.from_bytes(h[8:12], "little") & 1
    return n, flagged, files


def detail_check_program(rep, events, counts, in_set, stack_bytes):
    """The registers and stack bytes of the t_detail calls against what the
    program passed and returned (tests/targets/t_detail.c)."""
    seen = collections.Counter()
    call_fp = {}  # (fn, call k) -> fp (rbp) of its call record
    tail = {}  # dt_tail call k -> (sp, lr) of its call record
    siblings = 0
    for i, e in enumerate(events):
        fn, d = e.get("function"), e.get("detail")
        if fn not in ("dt_add6", "dt_pair", "dt_peek", "dt_tail", "dt_leaf") or not d:
            continue
        regs = {k: hexint(v) for k, v in d["regs"].items()}
        if fn in ("dt_tail", "dt_leaf"):
            # A tail chain where dt_tail jumps to dt_leaf (same sp): each
            # frame has its own records, all naming main's return address.
            k = seen[fn] - (e["kind"] != "call")
            sp, lr = hexint(d["sp"]), hexint(d["lr"])
            if e["kind"] == "call":
                seen[fn] += 1
                want = k if fn == "dt_tail" else k + 1
                rep.check(regs["rdi"] == want, "%s call %d: rdi %d, expected %d" % (
                    fn, k, regs["rdi"], want))
                if fn == "dt_tail":
                    tail[k] = (sp, lr)
                elif k in tail and tail[k][0] == sp:
                    siblings += 1
            else:
                rep.check(regs["rax"] == 7 * (k + 1) + 1, "%s return %d: rax %d, expected %d"
                          % (fn, k, regs["rax"], 7 * (k + 1) + 1))
            if k in tail and (fn == "dt_tail" or tail[k][0] == sp - 8 * (e["kind"] != "call")):
                rep.check(lr == tail[k][1], "%s %s %d: lr %#x, dt_tail's call pushed %#x" % (
                    fn, e["kind"], k, lr, tail[k][1]))
            continue
        if e["kind"] == "call":
            k = seen[fn]
            seen[fn] += 1
            call_fp[fn, k] = hexint(d["fp"])
            if fn == "dt_add6":
                want = [k, k + 1, k + 2, k + 3, k + 4, k + 5]
                got = [regs[r] for r in ("rdi", "rsi", "rdx", "rcx", "r8", "r9")]
                rep.check(got == want, "dt_add6 call %d: registers %r, the program passed %r"
                          % (k, got, want))
            elif fn == "dt_pair":
                rep.check(regs["rdi"] == k, "dt_pair call %d: rdi %d" % (k, regs["rdi"]))
            else:
                stack = bytes.fromhex(d["stack_hex"])
                rep.check(d["stack_size"] == stack_bytes and len(stack) == stack_bytes,
                          "dt_peek: stack snapshot of %d bytes, asked %d" % (
                              len(stack), stack_bytes))
                rep.check(DT_PATTERN in stack, "dt_peek call %d: the on-stack pattern %r is "
                          "not in its stack snapshot %s" % (k, DT_PATTERN, d["stack_hex"][:96]))
                rep.check(int.from_bytes(stack[:8], "little") == hexint(d["lr"]),
                          "dt_peek: the snapshot's first word is not the return address")
                rep.check(regs["rdi"] == hexint(d["sp"]) + 8,
                          "dt_peek: its argument (the caller's buffer) should sit right "
                          "above the return address")
        else:
            k = seen[fn] - 1
            # rbp is callee-saved: the function returns with the rbp it
            # was called with, whether or not it uses it as a frame pointer.
            rep.check(hexint(d["fp"]) == call_fp.get((fn, k)), "%s return %d: fp %#x, its call "
                      "had %#x" % (fn, k, hexint(d["fp"]), call_fp.get((fn, k), 0)))
            if fn == "dt_add6":
                rep.check(regs["rax"] == 6 * k + 15, "dt_add6 return %d: rax %d, expected %d"
                          % (k, regs["rax"], 6 * k + 15))
            elif fn == "dt_pair":
                rep.check((regs["rax"], regs["rdx"]) == (3 * k, k ^ 0x5a5a),
                          "dt_pair return %d: rax:rdx %r, expected %r" % (
                              k, (regs["rax"], regs["rdx"]), (3 * k, k ^ 0x5a5a)))
    for fn, n in (("dt_add6", counts["add6"]), ("dt_pair", counts["pair"]),
                  ("dt_peek", counts["stack"]), ("dt_tail", counts["tail"]),
                  ("dt_leaf", counts["tail"])):
        n = n if in_set(fn) else 0
        rep.check(seen[fn] == n, "%s: %d call records, the program made %d calls" % (
            fn, seen[fn], n))
    return siblings


BAD_DETAIL = [
    (["--detail", "sometimes"], "--detail"),
    (["--stack-bytes", "513"], "--stack-bytes"),
    (["--stack-bytes", "-1"], "--stack-bytes"),
    (["--detail-mb", "0"], "--detail-mb"),
    (["--detail-mb", "4096"], "--detail-mb"),
    (["--detail-symbols", "a;b"], "--detail-symbols"),
]


def detail_bad_options(ada, work, rep, prog):
    """Bad values: one sentence naming the option, non-zero exit, no session."""
    for i, (opts, word) in enumerate(BAD_DETAIL):
        out_dir = os.path.join(work, "bad%d" % i)
        cmd, rc, out, err = ada.record(out_dir, [prog], dict(os.environ), opts)
        lines = [l for l in err.decode(errors="replace").splitlines() if l.strip()]
        rep.check(rc != 0 and len(lines) == 1 and word in lines[0],
                  "`%s`: exit %d, stderr %r: want non-zero and one line naming %s" % (
                      " ".join(cmd), rc, lines[:3], word))
        rep.check(not glob.glob(os.path.join(out_dir, "session_*")),
                  "`%s` left a session behind" % " ".join(cmd))


def cmd_detail(args, ada, work, rep):
    prog = args.argv[0]
    if args.mode == "bad":
        return detail_bad_options(ada, work, rep, prog)
    rc0, out0, err0 = run([prog])
    m = re.search(rb"add6 (\d+) pair (\d+) stack (\d+) tail (\d+)", out0)
    if rc0 != 0 or not m:
        raise Fail("the untraced t_detail run failed (%d): %s" % (rc0, shown(out0 + err0)))
    counts = dict(zip(("add6", "pair", "stack", "tail"), (int(x) for x in m.groups())))
    out_dir = os.path.join(work, "out")
    opts = ["--include", os.path.basename(prog), "--detail", args.mode, "--detail-mb", "64",
            "--stack-bytes", str(args.stack_bytes)]
    if args.symbols:
        opts += ["--detail-symbols", args.symbols]
    cmd, rc1, out1, err1 = ada.record(out_dir, [prog], dict(os.environ), opts)
    rep.note("repro: %s" % " ".join(cmd))
    rep.check(rc1 == 0 and out1 == out0, "traced run: exit %d, stdout %r (untraced %r)" % (
        rc1, out1[:200], out0[:200]))
    session = find_session(out_dir, err1, rep)
    check_arena_gone(rep, session)
    ada.validate(session, rep)
    events = ada.dump(session)
    nfile, flagged, files = detail_file_counts(session)
    linked = [e for e in events if e.get("detail_seq") is not None]
    in_set = (lambda fn: True) if not args.symbols else (
        lambda fn: any(fnmatch.fnmatchcase(fn or "", g) for g in args.symbols.split(",")))
    wanted = [e for e in events if e["kind"] in ("call", "return") and in_set(e["function"])]
    manifest = json.load(open(glob.glob(os.path.join(session, "pid_*", "manifest.json"))[0]))
    rep.check(manifest.get("detail", {}).get("mode") == args.mode,
              "manifest detail.mode is %r, not %r" % (manifest.get("detail"), args.mode))
    if args.mode != "never":
        want = {"ring_bytes": 64 << 20, "stack_bytes": args.stack_bytes}
        got = {k: manifest["detail"].get(k) for k in want}
        rep.check(got == want, "manifest detail %r, --detail-mb 64 and --stack-bytes asked %r"
                  % (got, want))
    if args.mode == "never":
        rep.check(files == 0 and not linked and flagged == 0,
                  "--detail never: %d detail files, %d linked events, %d flagged index "
                  "files; expected none" % (files, len(linked), flagged))
        rep.check(manifest["detail"].get("stack_bytes") == 0, "never: stack_bytes not 0")
        return
    drops = manifest.get("drops", {}).get("detail", {})
    rep.check(not any(drops.values()), "detail drops %r with a 64 MiB ring" % drops)
    rep.check(len(linked) == len(wanted) == nfile,
              "%d index events link a detail event, %d calls+returns of functions in the "
              "set, detail files hold %d events: all three must be equal" % (
                  len(linked), len(wanted), nfile))
    rep.check(all(e.get("detail_seq") is not None for e in wanted),
              "a call/return of a function in the set has no detail event")
    rep.check(all(in_set(e["function"]) for e in linked),
              "a function outside --detail-symbols has a detail event: %r" % sorted(
                  {e["function"] for e in linked if not in_set(e["function"])})[:5])
    rep.check(flagged == files == 1, "has_detail_file flags %d, detail files %d" % (
        flagged, files))
    for e in linked:
        d = e.get("detail")
        if not d or d["type"] != e["kind"]:
            rep.fail("event %d (%s %s): linked detail %r does not match" % (
                e["index_seq"], e["kind"], e["function"], d and d.get("type")))
            break
    siblings = detail_check_program(rep, events, counts, in_set, args.stack_bytes)
    if prog.endswith("_O2") and in_set("dt_tail") and in_set("dt_leaf"):
        rep.check(siblings == counts["tail"], "-O2: %d of %d dt_leaf calls were dt_tail's "
                  "sibling call (same return slot); the tail chain was not tested" % (
                      siblings, counts["tail"]))
    rep.note("%d detail events checked" % len(linked))


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
    ap.add_argument("--emulator", help="what the untraced run of a program of another "
                    "architecture starts it with (tests/integration/arm64.cmake: "
                    "'qemu-aarch64 -L ROOT'); ada record runs it under qemu itself")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("target")
    t.add_argument("--own-module", action="append",
                   help="basename of another image of the program (dlopen'ed library, "
                        "exec'ed program)")
    t.add_argument("--record-opt", action="append", help="option for ada record")
    t.add_argument("--expect-pids", type=int)
    t.add_argument("--child-exit", action="append",
                   help="PROGRAM=status:N or PROGRAM=signal:N: the manifest of the child "
                   "whose table names PROGRAM says so")
    t.add_argument("--expect-status", type=int)
    t.add_argument("--expect-signal", type=int)
    t.add_argument("--expect-arch", choices=sorted(ATF_ARCH),
                   help="the recording's architecture (check_arch)")
    t.add_argument("--absent", action="append", default=[], metavar="GLOB",
                   help="the program's functions matching GLOB must have no events "
                        "(excluded from recording)")
    t.add_argument("--syms-status", action="append", default=[], metavar="NAME=STATUS",
                   help="the program's module_*.syms give function NAME this status")
    t.add_argument("--absent-module", action="append", default=[], metavar="GLOB",
                   help="no events from modules whose file name matches GLOB")
    t.add_argument("--interrupt", type=int, metavar="SIG",
                   help="when the program prints 'ready', send SIG to the whole process "
                        "group (ada and the program), as a Ctrl-C does")
    t.add_argument("--count-only", action="append", default=[], metavar="GLOB",
                   help="ada record --count-only GLOB: the trace's CALLs plus the manifest's "
                   "counts must be the program's calls")
    t.add_argument("--count-only-called", action="store_true",
                   help="every process's count_only lists only functions called and "
                   "counts the others in uncalled")
    t.add_argument("--far-form", action="append", default=[], metavar="GLOB",
                   help="modules (file name glob) whose every hooked function agent.json "
                   "says took arm64's far patch form (run with ADA_HOOK_FAR_TEST)")
    t.add_argument("--moved", action="append", default=[], metavar="GLOB",
                   help="functions --overhead-budget must have moved to count-only (the "
                   "manifest says so); their CALLs plus counts are checked as --count-only's")
    t.add_argument("--agent-json-module", action="append", default=[], metavar="GLOB",
                   help="the root process's agent.json lists a module whose file name "
                   "matches GLOB")
    t.add_argument("--agent-json-writes-max", type=int, default=None, metavar="N",
                   help="with --agent-json-module: its agent_json_writes is at most N")
    t.add_argument("--threads-per-process", type=int, default=None, metavar="N",
                   help="every pid_*/manifest.json lists exactly N threads")
    t.add_argument("--recalled", action="store_true",
                   help="with --moved: run the program again under the same plan cache; the "
                   "moved functions must start count-only (\"recalled\") and counts stay exact")
    t.add_argument("--shared-modules", action="store_true",
                   help="forked children link their parent's .syms files, write none")
    t.add_argument("--planted-bodies", action="store_true",
                   help="the program planted files in symbodies/: later processes refuse them")
    t.add_argument("--shared-bodies", action="store_true",
                   help="processes of the same images share each module's body by content")
    t.add_argument("--replaced-module", action="append", default=[], metavar="NAME",
                   help="with --shared-modules: a .syms file the program replaced with a "
                   "copy before forking (its children write their own)")
    t.add_argument("--inherited-json", type=int, default=0, metavar="N",
                   help="with --shared-modules: N forked children end without their exit "
                   "handlers (_exit); their agent.json is the recorder's, from an ancestor's")
    t.add_argument("--calls-only", action="store_true",
                   help="assert CALL counts only, not nesting (coroutines switch stacks)")
    t.add_argument("--nondeterministic", action="store_true",
                   help="the call counts differ run to run (asynchronous signals)")
    t.add_argument("--detail-set", metavar="GLOB[,GLOB]",
                   help="record with --detail always --detail-symbols GLOB[,GLOB]: the "
                        "detail records of the functions in the set are checked too")
    t.add_argument("--detail-loose", action="store_true",
                   help="with --detail-set: records may be missing (a tiny detail ring, "
                        "asynchronous signals), never extra or wrong")
    t.add_argument("--ring-waits", action="store_true",
                   help="every thread of the program waited for ring space (rings small "
                        "enough for the producers' slow path)")
    t.add_argument("argv", nargs=argparse.REMAINDER)
    dbn = sub.add_parser("debian")
    dbn.add_argument("name", choices=sorted(DEBIAN))
    b = sub.add_parser("bad")
    b.add_argument("kind", choices=["nonexistent", "notonpath", "noprogram", "directory", "badinterp",
                                   "nonelf", "static", "setuid"])
    b.add_argument("--static")
    b.add_argument("--setuid-src")
    sub.add_parser("selftest", help="check the checks on hand-made event streams")
    fl = sub.add_parser("flight", help="flight recorder scenarios on tests/targets/t_flight")
    fl.add_argument("scenario", choices=sorted(FLIGHT) + ["bad_options", "recover_killed",
                                                          "checker_catches",
                                                          "late_thread", "ended_thread", "window_mem",
                                                          "window_mem_full", "serial_threads", "end_memory",
                                                          "time_whole", "time_wrap",
                                                          "time_never"])
    fl.add_argument("program")
    dl = sub.add_parser("detail", help="the detail lane on tests/targets/t_detail.c")
    dl.add_argument("mode", choices=["always", "never", "bad"])
    dl.add_argument("--stack-bytes", type=int, default=128)
    dl.add_argument("--symbols", help="--detail-symbols GLOB[,GLOB]")
    dl.add_argument("argv", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.cmd in ("target", "detail"):
        if args.argv and args.argv[0] == "--":
            args.argv = args.argv[1:]
        if not args.argv:
            ap.error("target: PROG missing after --")

    no_core()  # inherited by every command run() starts
    os.makedirs(args.work, exist_ok=True)
    base = os.path.join(args.work, args.name)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    work = tempfile.mkdtemp(dir=base)
    NM_CACHE[0] = os.path.join(args.work, ".nm-cache")
    ada = Ada(args.ada)
    rep = Report()
    try:
        {"target": cmd_target, "debian": cmd_debian, "bad": cmd_bad,
         "selftest": cmd_selftest, "flight": cmd_flight,
         "detail": cmd_detail}[args.cmd](args, ada, work, rep)
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
