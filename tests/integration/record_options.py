#!/usr/bin/env python3
"""End-to-end tests of the options of `ada record` and of `ada status`
(issue 12, item 4): each records a program of tests/targets with the option,
checks that the option's effect is visible (manifest, files, the recorder's
syscalls, exact event counts) and that the session validates.

  record_options.py --ada ADA --targets DIR --work DIR CASE
  record_options.py --ada ADA --work DIR coverage --tests FILE

`coverage` parses `ada record --help` and `ada attach --help` and fails for
any option that the option table (tools/record_table.c, printed by the hidden
`ada record --option-tests`) gives no test, or gives a test CTest does not
have (FILE: the registered test names, one a line). An option listed as
`pending:OWNER` is printed as a PENDING line (tools/test.sh's summary lists
and counts them) until its test lands.
Exit 0 = pass, 1 = fail, 77 = skip (ada says a command is not implemented).
The harness of tests/integration/ada_itest.py does the exact per-function
checks (check_pid) and the process handling.
"""
import argparse
import collections
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from syms_files import syms_lines  # noqa: E402  (beside this file)
import ada_itest as it  # noqa: E402

MIB = 1 << 20
INDEX_EVENT = 32
STRACE = shutil.which("strace")


class Ctx:
    def __init__(self, ada, targets, work, rep):
        self.ada, self.targets, self.work, self.rep = ada, targets, work, rep
        self.n = 0

    def prog(self, name):
        return os.path.join(self.targets, name)


Rec = collections.namedtuple("Rec", "cmd rc out err session traced root manifest strace")


def record(ctx, argv, opts=(), out=True, strace=None, env=None):
    """`ada record [--out W/out] OPTS -- ARGV` in a fresh directory W, with
    the program's call table in W/counts; optionally under strace (syscalls
    in `strace`, a comma list), the log parsed into lines. The session must
    be named last on stderr, leave no arena behind and validate. out: True,
    False (no --out) or a directory to record in."""
    ctx.n += 1
    w = os.path.join(ctx.work, "run%d" % ctx.n)
    counts = os.path.join(w, "counts")
    os.makedirs(counts)
    out_dir = out if isinstance(out, str) else os.path.join(w, "out") if out else \
        os.path.join(w, "ada_traces")
    cmd = [ctx.ada.path, "record"] + (["--out", out_dir] if out else []) + list(opts) + ["--"]
    cmd += argv
    log = None
    if strace:
        if not STRACE:
            raise it.Fail("strace is not installed (tools/bootstrap.sh installs it)")
        log = os.path.join(w, "strace.log")
        cmd = [STRACE, "-f", "-qq", "-y", "-e", "trace=" + strace, "-o", log] + cmd
    run_env = it.target_env(counts)
    run_env.update(env or {})
    rc, o, e = it.run(cmd, env=run_env, cwd=w, timeout=it.RUN_TIMEOUT * 2)
    it.skip_if_unimplemented("ada record", rc, e)
    ctx.rep.note("repro (in %s): %s" % (w, " ".join(cmd)))
    session = it.find_session(out_dir, e, ctx.rep)
    it.check_arena_gone(ctx.rep, session)
    ctx.ada.validate(session, ctx.rep)
    traced = it.load_counts(counts)
    by_pid, root = it.first_process(traced)
    man = it.check_manifest_parses(ctx.rep, os.path.join(session, "pid_%d" % root)) or {}
    lines = []
    if log:
        with open(log, errors="replace") as f:
            lines = f.read().splitlines()
    return Rec(cmd, rc, o, e, session, traced, root, man, lines)


def exact(ctx, rec, argv0, absent=()):
    """Every process's trace holds exactly the calls its program counted."""
    by_pid, root = it.first_process(rec.traced)
    own = {os.path.basename(argv0)}
    for pid, files in by_pid.items():
        it.check_pid(ctx.ada, ctx.rep, rec.session, pid, files, own,
                     allow_inherited=(pid != root), absent=absent)


def want(ctx, cond, msg, *a):
    return ctx.rep.check(cond, msg % a if a else msg)


def get(man, *path):
    for p in path:
        man = man.get(p) if isinstance(man, dict) else None
    return man


def threads(rec):
    """[(thread entry, [index file paths])] of the first process."""
    pid_dir = os.path.join(rec.session, "pid_%d" % rec.root)
    out = []
    for t in rec.manifest.get("threads") or []:
        out.append((t, [os.path.join(pid_dir, f["path"]) for f in t.get("files") or []]))
    return out


def written(rec):
    """The program's events written: the files' events less ada's wait
    markers (two a wait for ring space that ended with room: every wait of
    a run that dropped nothing; docs/format.md, "Wait markers")."""
    ev = sum(f.get("events", 0) for t in rec.manifest.get("threads") or []
             for f in t.get("files") or [])
    if not sum((get(rec.manifest, "drops", "index") or {}).values()):
        ev -= 2 * (get(rec.manifest, "metrics", "ring_waits") or 0)
    return ev


def own_events(rec):
    """Events the program's own functions produce when only its image is
    hooked: a CALL and an end (RETURN or EXCEPTION) per counted call."""
    return 2 * sum(v[0] for cf in rec.traced for v in cf.totals.values())


def drops(rec, lane="index"):
    return get(rec.manifest, "drops", lane) or {}


# The functions t_threads counts (tests/targets/t_threads.c) in its heavy run.
T_THREADS_COUNTED = "main,worker,work_*,leaf,spawn_all,join_all"


def only_own(prog):
    """Options that hook only the counted functions of t_threads' own image
    (not libc, not the tcount helpers): the number of events it produces is
    then known exactly from its call table."""
    return ["--include", os.path.basename(prog), "--include-symbol", T_THREADS_COUNTED]


def wal_counter(rec, key):
    """Sum of a per-thread WAL counter (segments, flushes, syncs)."""
    vals = [t.get(key) for t in rec.manifest.get("threads") or []]
    if any(not isinstance(v, int) for v in vals):
        raise it.Fail("pid_%d/manifest.json: a thread lacks the integer %r (docs/manifest.md): "
                      "%r" % (rec.root, key, vals))
    return sum(vals)


def strace_calls(rec, name):
    """[(args text, result)] of the recorder's `name` syscalls. With -f, a
    call that another thread's call interrupts is printed in two lines,
    `PID name(args <unfinished ...>` and `PID <... name resumed>rest) = N`;
    they are joined here, so a call is never missed for being split."""
    whole = re.compile(r"^(\d+)\s+%s\((.*)\)\s+=\s+(-?\d+)" % re.escape(name))
    start = re.compile(r"^(\d+)\s+%s\((.*?)\s*<unfinished \.\.\.>\s*$" % re.escape(name))
    resumed = re.compile(r"^(\d+)\s+<\.\.\. %s resumed>(.*)\)\s+=\s+(-?\d+)" %
                         re.escape(name))
    calls, pending = [], {}
    for line in rec.strace:
        m = whole.match(line)
        if m:
            calls.append((m.group(2), int(m.group(3))))
            continue
        m = start.match(line)
        if m:
            pending[m.group(1)] = m.group(2)
            continue
        m = resumed.match(line)
        if m:
            calls.append((pending.pop(m.group(1), "") + m.group(2), int(m.group(3))))
    return calls


def index_path_of(args):
    m = re.search(r"<([^>]*/thread_\d+/index[^>]*\.atf)>", args)
    return m.group(1) if m else None


# ---------------------------------------------------------------- cases

CASES = collections.OrderedDict()


def case(fn):
    CASES[fn.__name__[len("case_"):]] = fn
    return fn


@case
def case_out(ctx):
    """--out DIR: the session goes under DIR; without it, under ./ada_traces."""
    p = ctx.prog("t_threads_O2")
    r = record(ctx, [p])
    want(ctx, os.path.dirname(r.session).endswith("/out"), "session %s not under --out",
         r.session)
    exact(ctx, r, p)
    r = record(ctx, [p], out=False)
    want(ctx, os.path.basename(os.path.dirname(r.session)) == "ada_traces",
         "without --out the session %s should be under ./ada_traces", r.session)
    exact(ctx, r, p)


@case
def case_verbose(ctx):
    """-v: the recorder says what happens as it happens, on stderr: the
    process recorded, each module hooked with its counts (the .syms files'
    own), a library dlopen'ed, the process's end with the events written;
    --log FILE: the same lines into FILE; a FILE that is a link is refused."""
    p, lib = ctx.prog("t_dlopen_O2"), ctx.prog("libt_dlib.so")
    r = record(ctx, [p, lib], ["-v"])
    err = r.err.decode(errors="replace") if isinstance(r.err, bytes) else r.err
    log = [l for l in err.splitlines() if l.startswith("ada: +")]
    pid_dir = os.path.join(r.session, "pid_%d" % r.root)
    want(ctx, any(l.endswith("pid %d: recording (%s)" % (r.root, pid_dir)) for l in log),
         "-v: no line saying pid %d is recorded:\n%s", r.root, "\n".join(log))
    for syms in glob.glob(os.path.join(pid_dir, "module_*.syms")):
        rows = [l.split() for l in syms_lines(syms)]
        path = next(w[1] for w in rows if w[:1] == ["path"])
        hooked = sum(1 for w in rows if w[:1] == ["F"] and w[4] == "hooked")
        line = "pid %d: module %s %s: %d functions hooked" % (
            r.root, os.path.basename(syms)[7:-5], path, hooked)
        want(ctx, any(line in l for l in log), "-v: no line %r:\n%s", line, "\n".join(log))
    want(ctx, any(os.path.basename(lib) in l and "functions hooked" in l for l in log),
         "-v: the dlopen'ed %s is not said:\n%s", lib, "\n".join(log))
    events = get(r.manifest, "metrics", "events_written")
    want(ctx, any(l.endswith("pid %d: ended, %s events" % (r.root, events)) for l in log),
         "-v: no end line with the manifest's %s events:\n%s", events, "\n".join(log))
    exact(ctx, r, p)
    path = os.path.join(ctx.work, "verbose.log")
    r = record(ctx, [p, lib], ["--log", path])
    with open(path) as f:
        got = f.read().splitlines()
    err = r.err.decode(errors="replace") if isinstance(r.err, bytes) else r.err
    want(ctx, got and all(l.startswith("ada: +") for l in got) and
         not any(l.startswith("ada: +") for l in err.splitlines()),
         "--log: %d lines in the file, stderr %r", len(got), err[-300:])
    link = os.path.join(ctx.work, "link.log")
    os.symlink(path, link)
    rc, _, err = it.run([ctx.ada.path, "record", "--out", os.path.join(ctx.work, "x"), "--log",
                         link, "--", p, lib], timeout=it.RUN_TIMEOUT)
    err = err.decode(errors="replace") if isinstance(err, bytes) else err
    want(ctx, rc != 0 and "--log" in err, "--log to a link: exit %d, %r", rc, err[-300:])


def ring_case(ctx, opts, events, argv_tail=()):
    p = ctx.prog("t_threads_O2")
    r = record(ctx, [p] + list(argv_tail), opts)
    got = get(r.manifest, "ring", "index_events")
    want(ctx, got == events, "%s: manifest ring.index_events %r, expected %d", opts, got, events)
    want(ctx, get(r.manifest, "ring", "index_bytes") == events * INDEX_EVENT,
         "%s: manifest ring.index_bytes %r, expected %d", opts,
         get(r.manifest, "ring", "index_bytes"), events * INDEX_EVENT)
    # The staging buffers follow the ring (recorder.c rec_buffer_bytes):
    # an eighth of it, 64 KiB to 1 MiB, whole 4 KiB blocks.
    stage = min(max(events * INDEX_EVENT // 8, 64 << 10), 1 << 20)
    want(ctx, get(r.manifest, "wal", "staging_buffer_bytes") == stage,
         "%s: manifest wal.staging_buffer_bytes %r, expected %d", opts,
         get(r.manifest, "wal", "staging_buffer_bytes"), stage)
    want(ctx, sum(drops(r).values()) == 0, "lossless mode dropped events: %r", drops(r))
    exact(ctx, r, p)
    return r


@case
def case_ring_mb(ctx):
    """--ring-mb 5: 5 MiB / 32 B rounded down to a power of two."""
    ring_case(ctx, ["--ring-mb", "5"], 131072)


@case
def case_ring_default(ctx):
    """No ring option: 65 536-event (2 MiB) rings and 256 KiB staging
    buffers, an eighth of a ring."""
    ring_case(ctx, [], 65536)


@case
def case_peak_rate(ctx):
    """--peak-rate R (burst 50 ms): K = R x 50 / 1000, rounded up to 2^n."""
    ring_case(ctx, ["--peak-rate", "100000"], 8192)


@case
def case_burst_ms(ctx):
    """--burst-ms 10 with --peak-rate 100000: 1024-event rings, smaller than
    what each thread emits (~10 000 events), so threads wait for the drain
    and lose nothing (e2e.threads_tinyring.O2 does the same with 600 000)."""
    ring_case(ctx, ["--peak-rate", "100000", "--burst-ms", "10"], 1024)


@case
def case_max_threads(ctx):
    """--max-threads 2: five threads share two ring slots; the default
    lossless mode makes threads wait for a slot, so every call is there."""
    p = ctx.prog("t_threads_O2")
    r = record(ctx, [p], ["--max-threads", "2"])
    want(ctx, get(r.manifest, "ring", "max_threads") == 2, "manifest ring.max_threads %r, "
         "expected 2", get(r.manifest, "ring", "max_threads"))
    want(ctx, len(r.manifest.get("threads") or []) == 5, "expected 5 threads in the manifest, "
         "found %d", len(r.manifest.get("threads") or []))
    want(ctx, sum(drops(r).values()) == 0, "lossless mode dropped events: %r", drops(r))
    exact(ctx, r, p)


@case
def case_thread_limit(ctx):
    """--max-threads 2 --thread-limit 3: one spill slot (512-event ring)
    after the two full ones; five threads share the three, the default
    lossless mode makes a thread wait for a slot, so every call is there.
    The manifest tells the limit and the spill rings' sizes."""
    p = ctx.prog("t_threads_O2")
    r = record(ctx, [p], ["--max-threads", "2", "--thread-limit", "3"])
    for key, val in (("max_threads", 2), ("thread_limit", 3), ("spill_index_events", 512),
                     ("spill_detail_bytes", 8192)):
        want(ctx, get(r.manifest, "ring", key) == val, "manifest ring.%s %r, expected %r",
             key, get(r.manifest, "ring", key), val)
    want(ctx, len(r.manifest.get("threads") or []) == 5, "expected 5 threads in the manifest, "
         "found %d", len(r.manifest.get("threads") or []))
    want(ctx, sum(drops(r, "index").values()) == 0, "lossless mode dropped index events: %r",
         drops(r, "index"))
    exact(ctx, r, p)


@case
def case_overflow_drop(ctx):
    """--overflow drop on 1024-event rings, 600 000 events as fast as four
    threads can: full rings drop and count; written + dropped is exactly
    what the program's functions produced."""
    p = ctx.prog("t_threads_O2")
    r = record(ctx, [p, "heavy"], ["--overflow", "drop", "--peak-rate", "100000",
                                   "--burst-ms", "10"] + only_own(p))
    want(ctx, get(r.manifest, "ring", "overflow") == "drop", "manifest ring.overflow %r",
         get(r.manifest, "ring", "overflow"))
    d = drops(r)
    lost = sum(d.values())
    want(ctx, d.get("ring_full", 0) > 0, "no ring_full drops with 1024-event rings and "
         "--overflow drop: %r", d)
    want(ctx, written(r) + lost == own_events(r), "written %d + dropped %d (%r) != %d events "
         "produced by the program's counted calls", written(r), lost, d, own_events(r))
    want(ctx, r.manifest.get("lost_events", 0) == 0, "lost_events %r (drops are not losses)",
         r.manifest.get("lost_events"))


@case
def case_overflow_wait(ctx):
    """--overflow wait (the default, given explicitly) on the same rings:
    nothing dropped, every event the program produced written."""
    p = ctx.prog("t_threads_O2")
    r = record(ctx, [p, "heavy"], ["--overflow", "wait", "--peak-rate", "100000",
                                   "--burst-ms", "10"] + only_own(p))
    want(ctx, get(r.manifest, "ring", "overflow") == "wait", "manifest ring.overflow %r",
         get(r.manifest, "ring", "overflow"))
    want(ctx, sum(drops(r).values()) == 0, "--overflow wait dropped: %r", drops(r))
    want(ctx, written(r) == own_events(r), "written %d, the program produced %d",
         written(r), own_events(r))


@case
def case_drain_cpu(ctx):
    """--drain-cpu N: the drain thread pins itself to CPU N."""
    cpu = max(os.sched_getaffinity(0))
    p = ctx.prog("t_threads_O2")
    r = record(ctx, [p], ["--drain-cpu", str(cpu)], strace="sched_setaffinity")
    want(ctx, get(r.manifest, "wal", "drain_cpu") == cpu, "manifest wal.drain_cpu %r, "
         "expected %d", get(r.manifest, "wal", "drain_cpu"), cpu)
    pins = strace_calls(r, "sched_setaffinity")
    want(ctx, any(res == 0 and re.search(r"\[%d\]$" % cpu, a) for a, res in pins),
         "no sched_setaffinity(..., [%d]) = 0 by the recorder: %r", cpu, pins[:5])
    exact(ctx, r, p)
    r = record(ctx, [p], strace="sched_setaffinity")
    want(ctx, get(r.manifest, "wal", "drain_cpu") is None, "no --drain-cpu, yet "
         "wal.drain_cpu is %r", get(r.manifest, "wal", "drain_cpu"))
    want(ctx, not strace_calls(r, "sched_setaffinity"), "no --drain-cpu, yet the recorder "
         "pinned a thread: %r", strace_calls(r, "sched_setaffinity")[:3])


def heavy_own(ctx, opts, strace=None, env=None, out=True):
    """t_threads heavy with only its counted functions hooked: four files of
    ~120 000 events (3.6 MiB) each; every event the program produced is
    written (the per-function walk of e2e.opt.burst_ms is not repeated)."""
    p = ctx.prog("t_threads_O2")
    r = record(ctx, [p, "heavy"], list(opts) + only_own(p), strace=strace, env=env, out=out)
    want(ctx, written(r) == own_events(r), "%s: written %d, the program produced %d",
         opts, written(r), own_events(r))
    ctx.rep.note("%s: per thread (segments, flushes, syncs, bytes): %s" % (" ".join(opts), [
        (t.get("segments"), t.get("flushes"), t.get("syncs"),
         sum(os.path.getsize(p) for p in paths)) for t, paths in threads(r)]))
    return r


def on_tmpfs(path):
    """Whether path lies on tmpfs, where the drain writes the files itself
    and a file's steps from 64 KiB to 1 MiB double (src/wal/grow.c)."""
    p = subprocess.run(["stat", "-f", "-c", "%T", path], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return p.returncode == 0 and p.stdout.strip() == "tmpfs"


def index_steps(size, tmpfs, more=0):
    """[(offset, bytes)] of the fallocate steps a file of size takes
    (src/wal/grow.c): 4 KiB blocks to 64 KiB, to 1 MiB, then 1 MiB steps
    (--segment-mb 1); on tmpfs 64 KiB doubling to 1 MiB, then the same.
    more: steps past those (the last one taken for events' room at their
    longest, which the events, shorter, never entered)."""
    steps, alloc = [], 0
    while alloc < size or more > 0:
        if alloc >= size:
            more -= 1
        if alloc < 64 << 10:
            step = 4 << 10
        elif tmpfs and alloc < MIB:
            step = min(alloc, MIB - alloc)
        else:
            step = MIB - alloc if alloc < MIB else MIB
        steps.append((alloc, step))
        alloc += step
    return steps


def index_segments(steps):
    """The segments counted for those steps: the first, and each one
    starting past 64 KiB (the blocks below it are one segment)."""
    return sum(1 for at, _ in steps if at == 0 or at >= 64 << 10)


@case
def case_segment_mb(ctx):
    """--segment-mb 1: index files grow by 4 KiB blocks to 64 KiB (one
    segment), then to 1 MiB, then in steps of exactly 1 MiB, so a 4.6 MiB
    file took sixteen blocks, 960 KiB and four steps of 1 MiB. The steps
    past 1 MiB are allocated ahead through io_uring (segment.c
    wal_grow_ahead), which strace does not see: it sees the ones below,
    and the manifest counts every segment the events entered. A file may
    hold one step more than its size needs (taken for room at the events'
    longest, cut at its end)."""
    r = heavy_own(ctx, ["--segment-mb", "1"], strace="fallocate")
    want(ctx, get(r.manifest, "wal", "segment_bytes") == MIB, "manifest wal.segment_bytes "
         "%r, expected %d", get(r.manifest, "wal", "segment_bytes"), MIB)
    per_file = collections.defaultdict(list)
    for args, res in strace_calls(r, "fallocate"):
        path = index_path_of(args)
        if path and res == 0:
            per_file[os.path.realpath(path)].append(int(args.rsplit(",", 1)[1]))
    want(ctx, per_file, "no fallocate of an index file seen by strace")
    entered = 0
    for t, paths in threads(r):
        for path in paths:
            steps = per_file.get(os.path.realpath(path), [])
            size = os.path.getsize(path)
            tmpfs = on_tmpfs(path)
            fits = [e for e in (index_steps(size, tmpfs), index_steps(size, tmpfs, 1))
                    if steps == [n for at, n in e if at < MIB]]  # the drain's own calls
            want(ctx, fits, "%s (%d bytes): fallocate steps %r, expected %r", path, size,
                 steps[:20], [n for at, n in index_steps(size, tmpfs) if at < MIB])
            expect = fits[0] if fits else index_steps(size, tmpfs)
            entered += index_segments(expect if expect[-1][0] < MIB else
                                      index_steps(size, tmpfs))
    segs = wal_counter(r, "segments")
    want(ctx, segs == entered, "manifest segments %d, expected %d (4 KiB blocks to 64 KiB, "
         "to 1 MiB, then 1 MiB steps, over the files' sizes)", segs, entered)


@case
def case_wal_direct(ctx):
    """Index files written with O_DIRECT (the default where the file system
    takes it) and buffered (ADA_WAL_DIRECT=0): the same events, every call
    the program counted, valid files; the manifest says which way and why
    not (tmpfs is never written direct)."""
    p = ctx.prog("t_threads_O2")
    runs = {}
    for label, env in (("direct", {"ADA_WAL_DIRECT": "1"}), ("buffered", {"ADA_WAL_DIRECT": "0"})):
        r = heavy_own(ctx, [], env=env)
        exact(ctx, r, p)
        nfiles = sum(len(paths) for _, paths in threads(r))
        w = r.manifest.get("wal") or {}
        fs = it.fs_type(r.session) if hasattr(it, "fs_type") else None
        if label == "buffered":
            want(ctx, w.get("direct") is False and w.get("direct_files") == 0 and
                 w.get("direct_fallback") == 0, "ADA_WAL_DIRECT=0: manifest wal %r", w)
        elif w.get("direct_files") == nfiles:
            want(ctx, w.get("direct") is True and w.get("direct_fallback") == 0,
                 "direct: manifest wal %r", w)
        else:  # a file system without O_DIRECT (tmpfs): every file fell back, said why
            want(ctx, w.get("direct_files") == 0 and w.get("direct_fallback") == nfiles and
                 w.get("direct_fallback_reason"), "direct on %s: %d files, manifest wal %r",
                 fs, nfiles, w)
        ctx.rep.note("%s: manifest wal direct %r files %r fallback %r (%r)" % (
            label, w.get("direct"), w.get("direct_files"), w.get("direct_fallback"),
            w.get("direct_fallback_reason")))
        # the program's events: less ada's two markers per wait for room
        runs[label] = sorted(sum(f.get("events", 0) for f in t.get("files") or []) -
                             2 * t.get("ring_waits", 0)
                             for t in r.manifest.get("threads") or [])
    want(ctx, runs["direct"] == runs["buffered"], "events per thread: direct %r, buffered %r",
         runs["direct"], runs["buffered"])


@case
def case_wal_tmpfs(ctx):
    """A session on tmpfs, whose writes the drain makes itself and which
    complete as they are sent (segment.c wal_buf_write_inline): every call
    the program counted, with small rings (--ring-mb 1: each thread's ring
    wraps many times; at a wrap point only a write's release lets the
    drain pass, and at a process's end drain_end.c drain_empty_slot must
    count that release as progress, with no completion left to wait for).
    The tests' other recordings go to the work directory's file system."""
    if not os.path.isdir("/dev/shm"):
        raise it.Skip("no /dev/shm")
    d = tempfile.mkdtemp(prefix="itest-wal-tmpfs-", dir="/dev/shm")  # not ada-*: arenas
    try:
        r = heavy_own(ctx, ["--ring-mb", "1"], out=os.path.join(d, "out"))
        exact(ctx, r, ctx.prog("t_threads_O2"))
        want(ctx, (r.manifest.get("wal") or {}).get("direct_fallback_reason") == "tmpfs",
             "manifest wal %r", r.manifest.get("wal"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case
def case_flush_off(ctx):
    """--flush off: no write-back request at all, and no fdatasync."""
    r = heavy_own(ctx, ["--flush", "off"], strace="fdatasync")
    want(ctx, get(r.manifest, "wal", "flush") == "off", "manifest wal.flush %r",
         get(r.manifest, "wal", "flush"))
    want(ctx, wal_counter(r, "flushes") == 0, "--flush off, yet %d flushes",
         wal_counter(r, "flushes"))
    want(ctx, wal_counter(r, "syncs") == 0, "no --safe, yet %d syncs", wal_counter(r, "syncs"))
    want(ctx, not strace_calls(r, "fdatasync"), "no --safe, yet fdatasync: %r",
         strace_calls(r, "fdatasync")[:3])


@case
def case_flush_interval(ctx):
    """--flush interval:MS: interval:1 asks for write-back during the run;
    an interval of an hour never comes during this run."""
    r = heavy_own(ctx, ["--flush", "interval:1"])
    want(ctx, get(r.manifest, "wal", "flush") == "interval" and
         get(r.manifest, "wal", "flush_value") == 1, "manifest wal %r", r.manifest.get("wal"))
    want(ctx, wal_counter(r, "flushes") >= 1, "interval:1 over a whole run: no flush")
    r = heavy_own(ctx, ["--flush", "interval:3600000"])
    want(ctx, get(r.manifest, "wal", "flush_value") == 3600000, "manifest wal %r",
         r.manifest.get("wal"))
    want(ctx, wal_counter(r, "flushes") == 0, "interval of an hour, yet %d flushes",
         wal_counter(r, "flushes"))


@case
def case_flush_bytes(ctx):
    """--flush bytes:N: one write-back per N bytes written at most, and at
    least one in a file of more than N + one 1 MiB staging buffer."""
    n = 262144
    r = heavy_own(ctx, ["--flush", "bytes:%d" % n])
    want(ctx, get(r.manifest, "wal", "flush") == "bytes" and
         get(r.manifest, "wal", "flush_value") == n, "manifest wal %r", r.manifest.get("wal"))
    for t, paths in threads(r):
        size = sum(os.path.getsize(p) for p in paths)
        fl = t.get("flushes")
        want(ctx, isinstance(fl, int) and fl <= size // n, "thread %s: %r flushes for %d "
             "bytes, at most %d", t.get("thread"), fl, size, size // n)
        if size > n + MIB + 4096:
            want(ctx, isinstance(fl, int) and fl >= 1, "thread %s: %d bytes, no flush",
                 t.get("thread"), size)


@case
def case_flush_rotate(ctx):
    """--flush rotate: one write-back per new segment at most, and some in
    files of several 1 MiB segments (four segments or more)."""
    r = heavy_own(ctx, ["--flush", "rotate", "--segment-mb", "1"])
    want(ctx, get(r.manifest, "wal", "flush") == "rotate", "manifest wal.flush %r",
         get(r.manifest, "wal", "flush"))
    for t, paths in threads(r):
        fl, sg = t.get("flushes"), t.get("segments")
        want(ctx, isinstance(fl, int) and isinstance(sg, int) and fl <= max(sg - 1, 0),
             "thread %s: %r flushes for %r segments", t.get("thread"), fl, sg)
        # The segments to 1 MiB (64 KiB, then to 1 MiB; on tmpfs seven,
        # from 16 KiB) and often the next come before the first 1 MiB
        # staging buffer is written.
        below = len(index_steps(MIB, bool(paths) and on_tmpfs(paths[0])))
        if isinstance(sg, int) and sg >= below + 2:
            want(ctx, fl >= 1, "thread %s: %d segments, no flush at rotation",
                 t.get("thread"), sg)


@case
def case_safe(ctx):
    """--safe: an fdatasync at every new segment (through io_uring) and one
    fdatasync(2) of each index file at close."""
    r = heavy_own(ctx, ["--safe", "--segment-mb", "1"], strace="fdatasync")
    want(ctx, get(r.manifest, "wal", "safe") is True, "manifest wal.safe %r",
         get(r.manifest, "wal", "safe"))
    closes = collections.Counter(os.path.realpath(index_path_of(a)) for a, res in
                                 strace_calls(r, "fdatasync") if res == 0 and index_path_of(a))
    for t, paths in threads(r):
        for path in paths:
            want(ctx, closes.get(os.path.realpath(path)) == 1, "%s: %r fdatasync(2) at close, "
                 "expected 1", path, closes.get(os.path.realpath(path)))
        sg, sy = t.get("segments"), t.get("syncs")
        want(ctx, isinstance(sg, int) and sy == sg, "thread %s: %r syncs, expected one per new "
             "segment after the first and one at close = %r", t.get("thread"), sy, sg)


@case
def case_max_disk_mb(ctx):
    """--max-disk-mb: the session stays within the budget, the oldest
    generations go first, and written + retired is what the program made."""
    r = heavy_own_budget(ctx)
    del r


def heavy_own_budget(ctx):
    p = ctx.prog("t_threads_O2")
    budget = 8
    # ATF v2 written directly: its 32 bytes an event make the program's
    # 19 MiB overflow the budget; the compact index (the default) keeps all
    # of it in 8 MiB (its own retention: pipeline_maxdisk, e2e.compact_retention).
    r = record(ctx, [p, "heavy"], ["--max-disk-mb", str(budget), "--segment-mb", "1",
                                   "--index-format", "atf"] + only_own(p))
    want(ctx, get(r.manifest, "wal", "max_disk_bytes") == budget * MIB,
         "manifest wal.max_disk_bytes %r", get(r.manifest, "wal", "max_disk_bytes"))
    total = 0
    for root, _, files in os.walk(r.session):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    want(ctx, total <= budget * MIB, "the session holds %d bytes, budget %d MiB", total, budget)
    retired = sum(t.get("retired_events", 0) for t in r.manifest.get("threads") or [])
    want(ctx, retired > 0, "19 MiB of events in an %d MiB budget, nothing retired", budget)
    want(ctx, written(r) + retired == own_events(r), "written %d + retired %d != %d produced",
         written(r), retired, own_events(r))
    return r


@case
def case_include_symbol(ctx):
    """--include-symbol work_*: only work_a and work_b are hooked, in every
    module; their counts are exact and nothing else has events."""
    p = ctx.prog("t_threads_O2")
    r = record(ctx, [p], ["--include-symbol", "work_*"])
    table = {fn for cf in r.traced for fn in cf.totals}
    others = sorted(fn for fn in table if not fn.startswith("work_"))
    exact(ctx, r, p, absent=others)
    events = ctx.ada.dump(os.path.join(r.session, "pid_%d" % r.root))
    names = collections.Counter(it.fn_name(e) for e in events)
    want(ctx, events and all(n.startswith("work_") for n in names),
         "events of functions --include-symbol work_* left out: %r", names.most_common(6))


def record_plain(ctx, argv, w, opts=()):
    """`ada record --out W/out -- ARGV` as a plain child of Python (no
    process group of its own, no status folding): the CompletedProcess,
    whose returncode is -N when a signal killed ada."""
    os.makedirs(w, exist_ok=True)
    cmd = [ctx.ada.path, "record", "--out", os.path.join(w, "out")] + list(opts) + ["--"] + argv
    ctx.rep.note("repro (in %s): %s" % (w, " ".join(cmd)))
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, cwd=w,
                          timeout=it.RUN_TIMEOUT * 2, preexec_fn=it.core_preexec())


@case
def case_exit_status(ctx):
    """ada record ends as its program ended (issue 34): killed by the same
    signal once the recording is finalized and summarized (its parent sees
    WIFSIGNALED, Python -11), with the program's exit code, 127 for a
    program that does not exist and 126 for one that cannot be executed,
    as a shell."""
    w = os.path.join(ctx.work, "exit_segv")
    p = record_plain(ctx, [ctx.prog("t_crash_O2")], w)
    err = p.stderr.decode(errors="replace")
    want(ctx, p.returncode == -signal.SIGSEGV,
         "ada record of a SIGSEGV program: returncode %r, expected -11; stderr:\n%s",
         p.returncode, err[-600:])
    session = it.find_session(os.path.join(w, "out"), p.stderr, ctx.rep)
    ctx.ada.validate(session, ctx.rep)
    want(ctx, not glob.glob(os.path.join(w, "core*")), "ada left a core in %s", w)
    p = record_plain(ctx, ["sh", "-c", "exit 7"], os.path.join(ctx.work, "exit_7"))
    want(ctx, p.returncode == 7, "exit 7 came back as %r", p.returncode)
    w = os.path.join(ctx.work, "exit_missing")
    p = record_plain(ctx, ["ada-no-such-program-34"], w)
    err = p.stderr.decode(errors="replace")
    want(ctx, p.returncode == 127 and "no such program" in err,
         "a missing program: returncode %r (a shell's is 127), stderr %r", p.returncode, err)
    want(ctx, not os.path.exists(os.path.join(w, "out")), "a missing program left a session")
    w = os.path.join(ctx.work, "exit_noexec")
    os.makedirs(w, exist_ok=True)
    plain = os.path.join(w, "plain.txt")
    with open(plain, "w") as f:
        f.write("echo not executable\n")
    os.chmod(plain, 0o644)
    for argv in ([plain], [w]):
        p = record_plain(ctx, argv, w)
        err = p.stderr.decode(errors="replace")
        want(ctx, p.returncode == 126, "%s (not executable): returncode %r (a shell's is "
             "126), stderr %r", argv[0], p.returncode, err)


@case
def case_unmatched_names(ctx):
    """--trigger symbol=/p99= and --detail-symbols globs are checked at the
    end of the recording (issue 34): one that matched no hooked function is
    said in the summary with the closest names; one that matched is not."""
    w = os.path.join(ctx.work, "unmatched")
    opts = ["--trigger", "symbol=rare_evnt", "--trigger", "p99=function:busy>1s",
            "--trigger", "symbol=rare_event", "--detail-symbols", "nosuch*,leaf"]
    p = record_plain(ctx, [ctx.prog("t_control_O2")], w, opts)
    err = p.stderr.decode(errors="replace")
    want(ctx, p.returncode == 0, "ada record exited %r: %s", p.returncode, err[-600:])
    it.find_session(os.path.join(w, "out"), p.stderr, ctx.rep)
    want(ctx, "--trigger symbol=rare_evnt never fired: it matches no hooked function; "
         "near: rare_event" in err, "no warning for symbol=rare_evnt: %s", err[-900:])
    want(ctx, "--detail-symbols nosuch* put nothing in the detail lane: it matches no "
         "hooked function" in err, "no warning for --detail-symbols nosuch*: %s", err[-900:])
    for ok in ("symbol=rare_event never", "p99=function:busy>1s", "--detail-symbols leaf"):
        want(ctx, ok not in err, "a warning for %s, which matched: %s", ok, err[-900:])


@case
def case_status(ctx):
    """`ada status`: live while the program runs (the arena's metrics),
    then the manifest's numbers once it is done; bad input is one line."""
    p = ctx.prog("t_crash_O2")
    w = os.path.join(ctx.work, "status")
    counts = os.path.join(w, "counts")
    os.makedirs(counts)
    out_dir = os.path.join(w, "out")
    cmd = [ctx.ada.path, "record", "--out", out_dir, "--", p, "wait"]
    ctx.rep.note("repro: %s" % " ".join(cmd))
    proc = subprocess.Popen(cmd, env=it.target_env(counts), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        it.wait_for_line(proc, b"ready", it.RUN_TIMEOUT)
        sessions = glob.glob(os.path.join(out_dir, "session_*"))
        if len(sessions) != 1:
            raise it.Fail("expected one session in %s while recording: %r" % (out_dir, sessions))
        session = sessions[0]
        pid_dirs = glob.glob(os.path.join(session, "pid_*"))
        if len(pid_dirs) != 1:
            raise it.Fail("expected one pid_* while recording: %r" % pid_dirs)
        pid = int(os.path.basename(pid_dirs[0])[4:])
        # Until its first manifest (20 ms after admission) a process is
        # "started moments ago"; then the live line names the arena's
        # numbers. A poll, not a timed wait.
        rc, o, e = it.run([ctx.ada.path, "status", pid_dirs[0]])
        young = o.decode(errors="replace")
        want(ctx, rc == 0 and ("recording, pid %d," % pid in young or
                               "recording, started moments ago" in young),
             "live `ada status %s` at the start exited %d: %r %r", pid_dirs[0], rc, young,
             e[-300:])
        man_path = os.path.join(pid_dirs[0], "manifest.json")
        for _ in range(600):
            if os.path.exists(man_path):
                break
            time.sleep(0.05)
        for target in (session, pid_dirs[0]):
            rc, o, e = it.run([ctx.ada.path, "status", target])
            it.skip_if_unimplemented("ada status", rc, e)
            text = o.decode(errors="replace")
            want(ctx, rc == 0 and ("recording, pid %d," % pid) in text,
                 "live `ada status %s` exited %d: %r %r", target, rc, text, e[-300:])
        os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=it.RUN_TIMEOUT)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    want(ctx, proc.returncode == -signal.SIGKILL, "ada record ended with %r after SIGKILL of "
         "the program, expected to be killed by SIGKILL too (-9)", proc.returncode)
    it.check_arena_gone(ctx.rep, session)
    ctx.ada.validate(session, ctx.rep)
    man = it.check_manifest_parses(ctx.rep, pid_dirs[0]) or {}
    rc, o, e = it.run([ctx.ada.path, "status", session])
    text = o.decode(errors="replace").strip()
    n = get(man, "metrics", "events_written")
    # One line for the process, then the session's totals, then its summary
    # (the one-line formatter of `ada status PID`, from the manifests) and
    # the drain's line under it, in the manifest's words.
    d = man.get("drain") or {}
    want(ctx, rc == 0 and len(text.splitlines()) == 4 and
         text.splitlines()[2].startswith("summary: ended, 1 process, %s events" % n) and
         text.splitlines()[3].startswith("  drain: %s passes, %s sleeps (%s rung, " %
                                         (d.get("passes"), d.get("sleeps"), d.get("rung"))),
         "`ada status %s` exited %d: %r %r", session, rc, text, e)
    want(ctx, ("%s: %s, %s events written," % (pid_dirs[0], man.get("state"), n)) in text and
         "signal 9" in text and "abnormal" in text, "`ada status` after the run says %r; the "
         "manifest: state %r, %r events, exit %r", text, man.get("state"), n, man.get("exit"))
    want(ctx, man.get("state") == "complete", "manifest state %r", man.get("state"))
    by_pid, root = it.first_process(it.load_counts(counts))
    it.check_pid(ctx.ada, ctx.rep, session, root, by_pid[root], {os.path.basename(p)}, False)
    for bad in (os.path.join(w, "nonexistent"), counts):
        rc, o, e = it.run([ctx.ada.path, "status", bad])
        lines = [l for l in e.decode(errors="replace").splitlines() if l.strip()]
        want(ctx, rc != 0 and len(lines) == 1 and not o.strip(), "`ada status %s`: exit %d, "
             "stderr %r, stdout %r; expected non-zero and one line", bad, rc, lines, o[:200])


# ---------------------------------------------------------------- coverage

def help_options(ada, cmd="record"):
    rc, o, e = it.run([ada.path, cmd, "--help"])
    if rc != 0 or e.strip():
        raise it.Fail("`ada %s --help` exited %d with stderr %r (want 0 and usage on "
                      "stdout)" % (cmd, rc, e[:300]))
    opts = set()
    for line in o.decode(errors="replace").splitlines():
        # An option line starts with it: "  --ring-mb N   ..." (the text may
        # mention other options further right).
        m = re.match(r"^\s+(--[a-z][a-z0-9-]*)", line)
        if m:
            opts.add(m.group(1))
    return opts


def read_table(ada):
    """The option table's test rows: `ada record --option-tests` prints
    "--option test [test...]" a line (tools/record_table.c)."""
    rc, o, e = it.run([ada.path, "record", "--option-tests"])
    if rc != 0 or e.strip():
        raise it.Fail("`ada record --option-tests` exited %d with stderr %r (want 0 and the "
                      "table on stdout)" % (rc, e[:300]))
    table = collections.OrderedDict()
    for n, line in enumerate(o.decode(errors="replace").splitlines(), 1):
        parts = line.split()
        if len(parts) < 2 or not parts[0].startswith("--"):
            raise it.Fail("`ada record --option-tests` line %d: want '--option test "
                          "[test...]' or '--option pending:OWNER': %r" % (n, line))
        table[parts[0]] = parts[1:]
    return table


def cmd_coverage(args, ada, rep):
    opts = help_options(ada)
    rep.check(len(opts) >= 10, "only %d options parsed from `ada record --help`: %r" % (
        len(opts), sorted(opts)))
    # ada attach's own options (its usage lists only those; record's apply).
    opts |= help_options(ada, "attach")
    table, where = read_table(ada), "the option table (tools/record_table.c)"
    with open(args.tests) as f:
        tests = {l.strip() for l in f if l.strip()}
    for o in sorted(opts - set(table)):
        rep.fail("`ada record/attach %s` has no end-to-end test: add one (tests/integration/) "
                 "and name it in %s" % (o, where))
    for o in sorted(set(table) - opts):
        rep.fail("%s lists %s, which neither `ada record --help` nor `ada attach --help` shows"
                 % (where, o))
    pending = []
    for o, names in table.items():
        for t in names:
            if t.startswith("pending:"):
                pending.append((o, t[len("pending:"):]))
                continue
            rep.check(t in tests, "%s: the test %s for %s is not registered with CTest" % (
                where, t, o))
    # An option whose helper is still writing its test: told, counted (the
    # summary of tools/test.sh lists PENDING lines), not failed.
    for o, owner in pending:
        print("PENDING: ada record %s has no end-to-end test yet (owner: %s)" % (o, owner))
    if not rep.failures:
        rep.note("%d options of `ada record --help` and `ada attach --help`, each with a test"
                 % len(opts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ada", required=True)
    ap.add_argument("--targets", help="directory of the tests/targets programs")
    ap.add_argument("--work", required=True)
    ap.add_argument("--tests")
    ap.add_argument("case", choices=list(CASES) + ["coverage"])
    args = ap.parse_args()
    it.no_core()  # as ada_itest's main: its run() starts commands without a preexec_fn
    base = os.path.join(args.work, "opt." + args.case)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    work = tempfile.mkdtemp(dir=base)
    ada, rep = it.Ada(args.ada), it.Report()
    try:
        if args.case == "coverage":
            cmd_coverage(args, ada, rep)
        else:
            CASES[args.case](Ctx(ada, args.targets, work, rep))
    except it.Skip as e:
        print("SKIP: %s" % e)
        shutil.rmtree(base, ignore_errors=True)
        return it.SKIP
    except it.Fail as e:
        rep.fail(str(e))
    for n in rep.notes:
        print("note: %s" % n)
    if rep.failures:
        for f in rep.failures[:it.MAX_REPORTED * 2]:
            print("FAIL: %s" % f)
        print("work directory kept: %s" % work)
        return 1
    print("PASS")
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
