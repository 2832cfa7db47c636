#!/usr/bin/env python3
"""The moment of a crash (issue 33 items 1 and 4) and float registers
(item 5), end to end.

  crash_test.py --ada ADA --work DIR frame0 -- PROG ARGS...
  crash_test.py --ada ADA --work DIR gdb -- PROG ARGS...
  crash_test.py --ada ADA --work DIR fp -- PROG ARGS...
  crash_test.py --ada ADA --work DIR threads -- PROG

frame0: PROG (tests/targets/t_crash0) faults in a 3-byte function that
nothing hooks (too short, no padding), or in a hooked function's first
or second instruction, which runs as a relocated copy in its trampoline
(4: a 4-byte function hooked by the padding form; l, m: the ordinary form),
or in the seventh instruction of a count-only leaf, which runs as the copy
in its count block (c: --count-only load9);
`ada crash` must name it as frame #0 from the signal context (at the
function's own pc, not the trampoline's), with its registers (rdi 0, rsi
0x2a2a, rdx 0x3b3b, rcx 0x4c4c), above the frames on record (or as the
innermost of them, when hooked); the manifest's crash.context, the
signal context record under the fatal-signal marker in `ada dump --window`
and `ada validate` must agree.

gdb: PROG dies of SIGSEGV. gdb runs it untraced and stops at the fault:
the frames of its `bt` are the reference. Then `ada record` runs gdb
(hooking only PROG's own module: --include) which runs PROG traced: at the
first stop (before the agent's handler) the hijacked return addresses show
as `??` frames; gdb passes the signal on, the agent's handler records the
crash, puts the return addresses back and lets the fault happen again, and
at that second stop `bt` must name the same frames as untraced. This is
what a core dumped at that moment holds, without depending on the machine's
core_pattern.

threads: PROG (tests/targets/t_crashmt) parks three threads in known
system calls (two in its own functions, one of them inside the
trampoline's copy of its first instructions; one in libc's read) and
one in a running loop, and faults in the main thread: the manifest's crash.other_threads and `ada
crash` (text and --json) must give each parked thread's function and
offset at the crash and its system call.

fp: PROG (tests/targets/t_fparg) passes doubles and a float and returns
them; recorded with --detail always --detail-fp, the CALL and RETURN
records in `ada dump` (jsonl and text) hold them in xmm0..7 as doubles and
raw bits, `ada validate` and atf_check.py accept the files; without
--detail-fp the records carry no xmm.

Exit 0 = pass, 1 = fail (every failed check printed), 77 = skip (gdb
missing, or the kernel refuses it ptrace: the reason is printed)."""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ada_itest import parse_counts  # noqa: E402

SKIP = 77
TIMEOUT = 120


class Checks:
    def __init__(self):
        self.failures = []

    def check(self, cond, msg):
        if not cond:
            self.failures.append(msg)
            print("FAIL:", msg, flush=True)
        return cond


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, env=env, timeout=TIMEOUT, text=True)
    return p.returncode, p.stdout, p.stderr


def record(ada, work, argv, *opts):
    rec = os.path.join(work, "rec")
    shutil.rmtree(rec, ignore_errors=True)
    os.makedirs(rec)
    env = dict(os.environ, ADA_TEST_COUNTS=os.path.join(rec, "%p.counts"))
    rc, out, err = run([ada, "record", "--out", rec, *opts, "--", *argv], env=env)
    sessions = glob.glob(os.path.join(rec, "session_*"))
    if len(sessions) != 1:
        raise SystemExit("FAIL: ada record left %r (exit %d): %s" % (sessions, rc, err[-2000:]))
    return rc, out, err, sessions[0], rec


# t_crash0's modes: the function that faults, the offset of the faulting
# instruction in it, and whether the agent hooks it (then the fault is in
# its trampoline's relocated copy, and the call is on record).
LEAVES = {"3": ("store3", 0, False), "4": ("store4", 0, True),
          "l": ("load0", 0, True), "m": ("load3", 3, True), "c": ("load9", 18, False)}
# Modes whose leaf is count-only: no event, its count block's copy of its
# instructions is where it faults (the copy form, docs/hooks.md).
COUNT_ONLY = {"c": "load9"}


def check_frame0(a, argv, c):
    mode = argv[1] if len(argv) > 1 else "4"
    leaf, off, hooked = LEAVES[mode]
    opts = ["--count-only", COUNT_ONLY[mode]] if mode in COUNT_ONLY else []
    rc, _, err, sdir, rec = record(a.ada, a.work, argv, "--trigger", "crash", *opts)
    c.check(rc in (139, -11), f"ada record exited {rc}, want SIGSEGV passed through: {err[-800:]}")
    pid_dir = sorted(glob.glob(os.path.join(sdir, "pid_*")))[0]
    with open(os.path.join(pid_dir, "manifest.json")) as f:
        man = json.load(f)
    ctx = man.get("crash", {}).get("context") or {}
    regs = ctx.get("registers") or {}
    c.check((regs.get("rdi"), regs.get("rsi"), regs.get("rdx"), regs.get("rcx")) ==
            ("0x0", "0x2a2a", "0x3b3b", "0x4c4c") and regs.get("rip") == ctx.get("pc"),
            f"manifest crash.context: {ctx}")

    doc = json.loads(subprocess.run([a.ada, "crash", "--json", sdir], capture_output=True,
                                    text=True, timeout=TIMEOUT).stdout)
    th = [t for t in doc["processes"][0]["threads"] if t["faulting"]]
    if not c.check(len(th) == 1, "crash --json: no faulting thread"):
        return
    frames = th[0]["frames"]
    f0 = frames[0] if frames else {}
    c.check(f0.get("function") == leaf and f0.get("offset") == off and
            f0.get("pc") == ctx.get("pc"),
            f"crash --json: frame #0 is {f0}, want {leaf}+{off} at the pc")
    # A hooked leaf must really have been entered through its trampoline
    # (else the fault was never inside one and the test proves nothing).
    c.check(bool(f0.get("on_record")) == hooked,
            f"crash --json: {leaf} on record {f0.get('on_record')}, want {hooked}")
    args = f0.get("args") or {}
    c.check((args.get("rdi"), args.get("rsi"), args.get("rdx"), args.get("rcx")) ==
            ("0x0", "0x2a2a", "0x3b3b", "0x4c4c"), f"crash --json: {leaf}'s registers {args}")
    c.check((f0.get("registers") or {}).get("rsp") == regs.get("rsp"),
            "crash --json: frame #0's registers are not the context's")
    # Too short to hook: no frame on record, the open frames follow it. (A
    # mechanism that hooks it makes it the innermost open frame instead.)
    want = ["crash_mid", "crash_outer", "main"]
    names = [f["function"] for f in frames]
    if f0.get("on_record"):
        c.check(names[:4] == [leaf] + want, f"crash --json: stack {names}")
    else:
        c.check(names[1:4] == want and f0.get("depth") is None,
                f"crash --json: stack {names}, want {leaf} then {want}")
    counts = [parse_counts(p) for p in sorted(glob.glob(os.path.join(rec, "*.counts")))]
    lost = sorted(fn for fn, v in counts[0].totals.items() if v[2]) if counts else []
    c.check(lost == sorted(want), f"the program's lost frames {lost}, want {want}")

    text = subprocess.run([a.ada, "crash", sdir], capture_output=True, text=True,
                          timeout=TIMEOUT).stdout
    head = f"  #0   {leaf}+0x{off:x} (rdi=0x0, rsi=0x2a2a, rdx=0x3b3b, rcx=0x4c4c, "
    c.check(head in text or (f0.get("on_record") and f"  #0   {leaf} " in text),
            "crash text: frame #0 is not %s with its registers:\n%s" % (leaf, text[:2000]))
    c.check(f"pc {ctx.get('pc')} ({leaf}+0x{off:x}), registers at the signal:" in text,
            "crash text: no pc and registers under frame #0:\n" + text[:2000])
    c.check(f"  #1   crash_mid " in text or f0.get("on_record"),
            "crash text: crash_mid is not #1:\n" + text[:2000])

    # The signal context record under the marker, in the crash window.
    wins = man["flight_recorder"]["windows"]
    crash_w = [w for w in wins if "crash" in json.dumps(w.get("trigger", w))]
    wid = str((crash_w or wins)[0]["id"]) if wins else None
    if c.check(wid is not None, "no crash window in the manifest"):
        out = subprocess.run([a.ada, "dump", "--format", "jsonl", "--window", wid, pid_dir],
                             capture_output=True, text=True, timeout=TIMEOUT).stdout
        marks = [json.loads(l) for l in out.splitlines() if '"kind":"signal"' in l]
        d = marks[0].get("detail") if len(marks) == 1 else None
        c.check(d is not None and d.get("type") == "signal_context" and d.get("signal") == 11 and
                d.get("si_code") == 1 and d.get("pc") == ctx.get("pc") and
                d.get("regs", {}).get("rdi") == "0x0" and d["regs"].get("rsi") == "0x2a2a",
                f"dump --window {wid}: the marker's signal context record: {marks}")
        txt = subprocess.run([a.ada, "dump", "--window", wid, pid_dir], capture_output=True,
                             text=True, timeout=TIMEOUT).stdout
        c.check(f"| signal context: pc={ctx.get('pc')}" in txt and " rdi=0x0" in txt,
                "dump text: no signal context under the marker")
    rc, out, err = run([a.ada, "validate", sdir])
    c.check(rc == 0, f"ada validate: exit {rc}: {out[-1500:]}{err[-500:]}")


def check_fp(a, argv, c):
    rc, _, err, sdir, _ = record(a.ada, a.work, argv, "--detail", "always", "--detail-fp")
    c.check(rc == 0, f"ada record --detail-fp exited {rc}: {err[-800:]}")
    out = subprocess.run([a.ada, "dump", "--format", "jsonl", sdir], capture_output=True,
                         text=True, timeout=TIMEOUT).stdout
    evs = [json.loads(l) for l in out.splitlines() if l.strip()]

    def xmm(fn, kind):
        got = [e for e in evs if e["function"] == fn and e["kind"] == kind]
        if not c.check(len(got) == 1 and got[0].get("detail"),
                       f"{fn} {kind}: {len(got)} events, want 1 with a detail record"):
            return {}
        return got[0]["detail"].get("xmm") or {}

    def dbl(x, i):
        return (x.get(f"xmm{i}") or {}).get("double")

    x = xmm("fp_scale", "call")
    c.check((dbl(x, 0), dbl(x, 1)) == (1.5, -2.25) and
            x.get("xmm0", {}).get("raw") == "0x3ff8000000000000",
            f"fp_scale's call: xmm {x}")
    x = xmm("fp_scale", "return")
    c.check(dbl(x, 0) == -13.5 and len(x) == 2, f"fp_scale's return: xmm {x}")
    x = xmm("fp_eight", "call")
    c.check([dbl(x, i) for i in range(8)] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
            f"fp_eight's call: xmm {x}")
    c.check(dbl(xmm("fp_eight", "return"), 0) == 36.0, "fp_eight's return: not 36")
    # A float is xmm0's low 32 bits: 3.0f = 0x40400000, 1.5f = 0x3fc00000.
    raw = int(xmm("fp_half", "call").get("xmm0", {}).get("raw", "0x0"), 16)
    c.check(raw & 0xffffffff == 0x40400000, f"fp_half's call: xmm0 0x{raw:x}")
    raw = int(xmm("fp_half", "return").get("xmm0", {}).get("raw", "0x0"), 16)
    c.check(raw & 0xffffffff == 0x3fc00000, f"fp_half's return: xmm0 0x{raw:x}")
    text = subprocess.run([a.ada, "dump", "--function", "fp_eight", sdir], capture_output=True,
                          text=True, timeout=TIMEOUT).stdout
    c.check("| xmm0=1 (0x3ff0000000000000) xmm1=2 (0x4000000000000000)" in text and
            "xmm7=8 (0x4020000000000000)" in text and "| xmm0=36 (0x4042000000000000)" in text,
            "dump text: fp_eight's xmm registers:\n" + text[:2000])
    rc, out, err = run([a.ada, "validate", sdir])
    c.check(rc == 0, f"ada validate: exit {rc}: {out[-1500:]}{err[-500:]}")
    # The independent checker reads ATF v2: the compact index (the
    # default) is exported first, the detail files as they are.
    atf = os.path.join(a.work, "fp_atf")
    shutil.rmtree(atf, ignore_errors=True)
    rc, out, err = run([a.ada, "export", "--format", "atf", "-o", atf, sdir])
    c.check(rc == 0, f"ada export --format atf: exit {rc}: {err[-500:]}")
    rc, out, err = run([sys.executable, os.path.join(os.path.dirname(__file__), "atf_check.py"),
                        atf])
    c.check(rc == 0, f"atf_check.py: exit {rc}: {out[-1500:]}{err[-500:]}")
    # Without --detail-fp: the same records, no vector registers.
    _, _, _, sdir, _ = record(a.ada, a.work, argv, "--detail", "always")
    out = subprocess.run([a.ada, "dump", "--format", "jsonl", sdir], capture_output=True,
                         text=True, timeout=TIMEOUT).stdout
    evs = [json.loads(l) for l in out.splitlines() if l.strip()]
    det = [e["detail"] for e in evs if e.get("detail")]
    c.check(det and not any("xmm" in d for d in det), "without --detail-fp: xmm in a record")


def check_threads(a, argv, c):
    rc, _, err, sdir, _ = record(a.ada, a.work, argv, "--trigger", "crash")
    c.check(rc in (139, -11), f"ada record exited {rc}, want SIGSEGV passed through: {err[-800:]}")
    pid_dir = sorted(glob.glob(os.path.join(sdir, "pid_*")))[0]
    with open(os.path.join(pid_dir, "manifest.json")) as f:
        man = json.load(f)
    others = man.get("crash", {}).get("other_threads") or {}
    c.check(others.get("read") == "proc" and len(others.get("threads", [])) == 4 and
            others.get("omitted") == 0, f"manifest crash.other_threads: {others}")
    doc = json.loads(subprocess.run([a.ada, "crash", "--json", sdir], capture_output=True,
                                    text=True, timeout=TIMEOUT).stdout)
    at, running = {}, []
    for t in doc["processes"][0]["threads"]:
        if t["faulting"]:
            c.check(t["frames"][0]["function"] == "crash_here", f"faulting thread: {t}")
        elif (t.get("at_crash") or {}).get("state") == "running":
            # No pc: its innermost open frame is what is known.
            c.check(t["at_crash"].get("pc") is None and
                    [f["function"] for f in t["frames"]][:2] == ["park_spin", "parker"],
                    f"crash --json: the running thread: {t}")
            running.append(t)
        elif t.get("at_crash"):
            names = [f["function"] for f in t["frames"]]
            at[t["at_crash"].get("function") if t["at_crash"].get("syscall") else None] = \
                (t["at_crash"], names)
    # park_pause blocks at its own +7 (behind the patch), park_pause2 in
    # its trampoline's copy of the syscall, mapped to +6; both hooked, so
    # the innermost open frame holds the pc. park_read blocks in libc's
    # read, under park_read.
    for fn, off in (("park_pause", 7), ("park_pause2", 6)):
        x, names = at.get(fn, ({}, []))
        c.check(x.get("offset") == off and x.get("syscall") == 34 and x.get("state") == "syscall"
                and x.get("on_record") is True and names[:2] == [fn, "parker"],
                f"crash --json: {fn} at the crash: {x} {names}")
    rd = [v for v in at.values() if v[0].get("syscall") == 0]
    c.check(len(rd) == 1 and "park_read" in rd[0][1][:2] and rd[0][0].get("on_record"),
            f"crash --json: the thread in read(2): {rd}")
    c.check(len(running) == 1, f"crash --json: {len(running)} threads running at the crash")
    text = subprocess.run([a.ada, "crash", sdir], capture_output=True, text=True,
                          timeout=TIMEOUT).stdout
    c.check("running at the crash (its pc was not read)" in text,
            "crash text: the running thread is not said to be running:\n" + text[:3000])
    for fn, off in (("park_pause", 7), ("park_pause2", 6)):
        c.check(re.search(r"pc 0x[0-9a-f]+ \(%s\+0x%x\), sp 0x[0-9a-f]+, blocked in system "
                          r"call 34" % (fn, off), text) is not None,
                f"crash text: no pc line for {fn}:\n{text[:3000]}")
    # ada dump: the same threads under the fatal-signal marker.
    out = subprocess.run([a.ada, "dump", "--format", "jsonl", pid_dir], capture_output=True,
                         text=True, timeout=TIMEOUT).stdout
    marks = [json.loads(l) for l in out.splitlines() if '"kind":"signal"' in l]
    got = sorted((o.get("function") or "", o.get("offset") or 0,
                  -1 if o.get("syscall") is None else o["syscall"])
                 for o in (marks[0].get("other_threads") or [] if len(marks) == 1 else []))
    c.check(("park_pause", 7, 34) in got and ("park_pause2", 6, 34) in got and len(got) == 4,
            f"dump jsonl: the marker's other_threads {got}")
    txt = subprocess.run([a.ada, "dump", pid_dir], capture_output=True, text=True,
                         timeout=TIMEOUT).stdout
    c.check(re.search(r"\| thread tid \d+ at the crash: syscall 34, pc 0x[0-9a-f]+ "
                      r"\(park_pause2\+0x6\)", txt) is not None,
            "dump text: no other thread under the marker")
    rc, out, err = run([a.ada, "validate", sdir])
    c.check(rc == 0, f"ada validate: exit {rc}: {out[-1500:]}{err[-500:]}")


BT_LINE = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(")


def bt_names(text):
    return [m.group(2) for m in (BT_LINE.match(l) for l in text.splitlines()) if m]


GDB = ["gdb", "-nx", "-batch", "-ex", "set startup-with-shell off",
       "-ex", "handle SIGSEGV stop print pass"]


def check_gdb(a, argv, c):
    if not shutil.which("gdb"):
        print("SKIP: gdb is not installed (tools/bootstrap.sh installs it)")
        return SKIP
    rc, out, err = run(GDB + ["-ex", "run", "-ex", "echo ==bt==\\n", "-ex", "bt",
                              "--args", *argv])
    if "ptrace" in err and "not permitted" in err:
        print("SKIP: the kernel refuses gdb ptrace here: " + err.strip()[-300:])
        return SKIP
    if "==bt==" not in out:
        c.check(False, f"untraced gdb run did not stop at the fault: {out[-1500:]}{err[-800:]}")
        return None
    ref = bt_names(out.split("==bt==", 1)[1])
    c.check(len(ref) >= 2 and "??" not in ref, f"untraced bt: {ref}")
    cmd = GDB + ["-ex", "run", "-ex", "echo ==bt1==\\n", "-ex", "bt", "-ex", "continue",
                 "-ex", "echo ==bt2==\\n", "-ex", "bt", "--args", *argv]
    rc, out, err, _, _ = record(a.ada, a.work, cmd, "--include", argv[0])
    if not c.check("==bt1==" in out and "==bt2==" in out,
                   f"gdb under ada did not stop twice: {out[-2000:]}{err[-800:]}"):
        return None
    first = bt_names(out.split("==bt1==", 1)[1].split("==bt2==", 1)[0])
    second = bt_names(out.split("==bt2==", 1)[1])
    print("untraced:", ref)
    print("ada, at the fault:", first)
    print("ada, at the fault again after the agent's handler:", second)
    # Proof the test sees the restoration: before the handler ran, the
    # traced frames' return addresses were the agent's.
    c.check(first != ref, "ada, at the first stop: the stack already read as untraced "
            f"({first}): nothing for the handler to restore, the test proves nothing")
    c.check(second == ref, f"bt after the agent's handler: {second}, untraced: {ref}")
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("check", choices=["frame0", "gdb", "fp", "threads"])
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    c = Checks()
    rc = {"frame0": check_frame0, "gdb": check_gdb, "fp": check_fp,
          "threads": check_threads}[a.check](a, argv, c)
    if rc == SKIP:
        shutil.rmtree(a.work, ignore_errors=True)
        return SKIP
    if c.failures:
        print(f"{len(c.failures)} check(s) failed; work directory kept: {a.work}")
        return 1
    shutil.rmtree(a.work, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
