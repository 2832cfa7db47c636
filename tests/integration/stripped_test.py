#!/usr/bin/env python3
"""Stripped code is traced (issue 33 item 3), end to end, on a stripped copy
of tests/targets/t_threads (objcopy --strip-all: no .symtab, nothing of its
own code in .dynsym), which counts its own calls (tcount.h):

  offsets    no debug file anywhere: the agent finds the program's functions
             from .eh_frame, names them <file>+0x<offset>, and says so on
             stderr naming the file; every call the program counted is in the
             trace under its offset (the unstripped build's symbol table maps
             offsets to names), exactly, per thread; the manifest's module has
             the image's build-id, agent.json its table hash as in the .syms.
  debuglink  a copy with .gnu_debuglink and its debug file beside it
             (objcopy --only-keep-debug + --add-gnu-debuglink): named at
             recording time, no warning, exact counts under the names.
  build_id   the debug file at <ADA_DEBUG_ROOT>/.build-id/xx/yyyy.debug.
  after      recorded with no debug file (offsets), which then appears (by
             build-id, and beside a copy carrying .gnu_debuglink): `ada dump`
             and `ada report --json` name the functions, counts exact.
  cache      the symbol-table cache holds the .dynsym + .eh_frame table
             (issue 32 item 2): a cold run stores it (a miss), a warm run
             reads it (a hit) with the same .syms lines and exact counts; a
             debug file then installed by build-id refuses the file (counted
             in agent.json symtab_cache.refused): named from the debug file,
             exact counts; a planted link as the cache file is refused and
             replaced, its target untouched.

The offsets case also runs on a stripped t_cxx (--arg MODE): exceptions
thrown, rethrown and caught through functions found from .eh_frame, with
gcc's .cold blocks that begin with a landing pad left unhooked.
ADA_DEBUG_ROOT (for /usr/lib/debug) keeps the system's debug files out.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from syms_files import syms_lines  # noqa: E402  (beside this file)
import ada_itest as it  # noqa: E402

WARN = re.compile(r"^ada: (\S+) has no symbol table: (\d+) of its functions, found "
                  r"from \.eh_frame, are named (\S+)\+0xOFFSET")


def elf_names(path):
    """offset -> function name, from the unstripped build's symbol table."""
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    names = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWw":
            names.setdefault(int(parts[0], 16), parts[2])
    return names


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        raise it.Fail("%s has no build-id" % path)
    return m.group(1)


COLD_TAIL = " (a .cold block entered like a tail call)"


class OffsetAda(it.Ada):
    """`ada dump` with <base>+0x<offset> names turned back into the
    program's own names (what the program's counts are keyed by). A gcc
    .cold block whose function had pushed nothing starts in the call state
    and is hooked (docs/hooks.md, "Stripped images"): it runs as a tail
    call of its function, so its calls are allowed, under a name the
    harness does not take for a .cold fragment hooked by mistake."""

    def __init__(self, path, base, names):
        super().__init__(path)
        self.pat = re.compile(re.escape(base) + r"\+0x([0-9a-f]+)$")
        self.names = names
        self.offset_named = 0

    def dump(self, d):
        events = [dict(e) for e in super().dump(d)]  # the parent's list is shared
        for ev in events:
            m = self.pat.match(ev.get("function") or "")
            if m:
                self.offset_named += 1
                name = self.names.get(int(m.group(1), 16), ev["function"])
                if name.endswith(".cold"):
                    name += COLD_TAIL
                    it.IGNORED_OWN.add(name)
                ev["function"] = name
        return events


def record(ada, work, rep, prog, debug_root, tag):
    """The program (with ARGS) untraced, then under ada record; returns
    (session, tables of the first process, its pid, ada record's
    stderr)."""
    os.environ["ADA_DEBUG_ROOT"] = debug_root
    plain_dir = os.path.join(work, tag + "-counts-untraced")
    traced_dir = os.path.join(work, tag + "-counts-traced")
    os.mkdir(plain_dir)
    os.mkdir(traced_dir)
    rc0, _, err0 = it.run([prog] + ARGS, env=it.target_env(plain_dir))
    if rc0 != 0:
        raise it.Fail("%s exited %d untraced: %s" % (prog, rc0, it.shown(err0)))
    cmd, rc, _, err = ada.record(os.path.join(work, tag + "-out"), [prog] + ARGS,
                                 it.target_env(traced_dir))
    rep.note("repro: ADA_DEBUG_ROOT=%s %s" % (debug_root, " ".join(cmd)))
    session = it.find_session(os.path.join(work, tag + "-out"), err, rep)
    rep.check(rc == 0, "%s exited %d under ada record: %s" % (prog, rc, it.shown(err)))
    plain, traced = it.load_counts(plain_dir), it.load_counts(traced_dir)
    rep.check(it.counts_signature(plain) == it.counts_signature(traced),
              "the program counted different calls traced and untraced")
    ada.validate(session, rep)
    by_pid, root = it.first_process(traced)
    return session, by_pid[root], root, err.decode(errors="replace")


def warnings_for(err):
    return [m for m in (WARN.match(l) for l in err.splitlines()) if m]


def own_syms(session, pid, prog):
    """(header dict, function lines) of the program's own .syms file."""
    for p in glob.glob(os.path.join(session, "pid_%d" % pid, "*.syms")):
        head, fns = {}, []
        for line in syms_lines(p):
            if line.startswith("F "):
                fns.append(line)
            elif " " in line and not line.startswith("#"):
                k, v = line.rstrip("\n").split(" ", 1)
                head[k] = v
        if head.get("path") == os.path.realpath(prog):
            return head, fns
    raise it.Fail("no .syms file of %s under %s/pid_%d" % (prog, session, pid))


def check_counts(ada, rep, session, pid, files, prog):
    it.check_pid(ada, rep, session, pid, files, {os.path.basename(prog)},
                 allow_inherited=False)


def check_named(rep, session, pid, prog, source):
    head, fns = own_syms(session, pid, prog)
    rep.check(head.get("symbol_source") == source, "%s: symbol_source %r, want %r" % (
        prog, head.get("symbol_source"), source))
    named = [l.split()[5] for l in fns]
    rep.check("work_a" in named and "worker" in named,
              "%s: the .syms file should name work_a and worker: %s" % (prog, named[:20]))


def case_offsets(args, ada, work, rep):
    prog = args.stripped
    base = os.path.basename(prog)
    session, files, pid, err = record(ada, work, rep, prog, os.path.join(work, "none"), "o")
    ws = [m for m in warnings_for(err) if m.group(1) == os.path.realpath(prog)]
    rep.check(len(ws) == 1 and ws[0].group(3) == base,
              "ada record should print one line 'ada: %s has no symbol table: ...', "
              "naming the module; stderr was:\n%s" % (os.path.realpath(prog), err))
    head, fns = own_syms(session, pid, prog)
    rep.check(head.get("symbol_source") == "ehframe", "symbol_source %r" % head.get(
        "symbol_source"))
    names = elf_names(args.unstripped)
    oada = OffsetAda(ada.path, base, names)
    check_counts(oada, rep, session, pid, files, prog)
    rep.check(oada.offset_named > 0, "no event named %s+0x..." % base)
    for line in fns:  # every function found is one of the program's
        f = line.split()
        if f[5].startswith(base + "+0x"):
            rep.check(int(f[2], 16) in names, "%s: no function of the unstripped build at "
                      "0x%s" % (f[5], f[2]))
    pid_dir = os.path.join(session, "pid_%d" % pid)
    man = json.load(open(os.path.join(pid_dir, "manifest.json")))
    mods = [m for m in man.get("modules", []) if m.get("path") == os.path.realpath(prog)]
    rep.check(mods and mods[0].get("build_id") == build_id(prog),
              "manifest modules[] build_id %r, the image's is %s" % (
                  mods[0].get("build_id") if mods else None, build_id(prog)))
    agent = json.load(open(os.path.join(pid_dir, "agent.json")))
    amods = [m for m in agent["modules"] if m.get("path") == os.path.realpath(prog)]
    rep.check(amods and amods[0].get("table_xxh64") == head.get("table_xxh64") and
              amods[0].get("fde_functions", 0) > 0,
              "agent.json table_xxh64/fde_functions %r, the .syms header says %s" % (
                  amods[:1], head.get("table_xxh64")))
    if mods and "table_xxh64" in mods[0]:
        rep.check(mods[0]["table_xxh64"] == head.get("table_xxh64"),
                  "manifest table_xxh64 %r, .syms %s" % (mods[0]["table_xxh64"],
                                                          head.get("table_xxh64")))


def debuglinked_copy(args, d):
    """A copy of the stripped program in d carrying .gnu_debuglink, and the
    path its debug file goes to."""
    os.makedirs(d)
    prog = os.path.join(d, os.path.basename(args.stripped))
    dbg = prog + ".debug"
    it.run(["objcopy", "--only-keep-debug", args.unstripped, dbg])
    shutil.copy(args.stripped, prog)
    rc, _, err = it.run(["objcopy", "--add-gnu-debuglink=" + dbg, prog])
    if rc != 0:
        raise it.Fail("objcopy --add-gnu-debuglink: %s" % it.shown(err))
    return prog, dbg


def build_id_root(args, root):
    bid = build_id(args.stripped)
    os.makedirs(os.path.join(root, ".build-id", bid[:2]))
    it.run(["objcopy", "--only-keep-debug", args.unstripped,
            os.path.join(root, ".build-id", bid[:2], bid[2:] + ".debug")])


def case_debuglink(args, ada, work, rep):
    prog, _ = debuglinked_copy(args, os.path.join(work, "dl"))
    session, files, pid, err = record(ada, work, rep, prog, os.path.join(work, "none"), "d")
    rep.check(not warnings_for(err), "a named module was warned about: %s" % err)
    check_named(rep, session, pid, prog, "debuglink")
    check_counts(ada, rep, session, pid, files, prog)


def case_build_id(args, ada, work, rep):
    root = os.path.join(work, "root")
    build_id_root(args, root)
    session, files, pid, err = record(ada, work, rep, args.stripped, root, "b")
    rep.check(not warnings_for(err), "a named module was warned about: %s" % err)
    check_named(rep, session, pid, args.stripped, "debuglink")
    check_counts(ada, rep, session, pid, files, args.stripped)


def check_report(ada, rep, session, pid, files):
    rc, out, err = it.run([ada.path, "report", "--json", os.path.join(session, "pid_%d" % pid)])
    if not rep.check(rc == 0, "ada report failed: %s" % it.shown(err)):
        return
    got = {f["function"]: f["calls"] for f in json.loads(out)["processes"][0]["functions"]}
    want = it.sum_rows(cf.totals for cf in files)
    for fn, v in want.items():
        rep.check(got.get(fn, 0) == v[0], "ada report: %s called %d times, the program "
                  "counted %d" % (fn, got.get(fn, 0), v[0]))


def case_after(args, ada, work, rep):
    none = os.path.join(work, "none")
    session, files, pid, _ = record(ada, work, rep, args.stripped, none, "a")
    oada = OffsetAda(ada.path, os.path.basename(args.stripped), {})
    oada.dump(os.path.join(session, "pid_%d" % pid))
    rep.check(oada.offset_named > 0, "without a debug file the trace should show offsets")
    root = os.path.join(work, "root")
    build_id_root(args, root)
    os.environ["ADA_DEBUG_ROOT"] = root  # the debug file appears: names
    check_counts(ada, rep, session, pid, files, args.stripped)
    check_report(ada, rep, session, pid, files)

    # .gnu_debuglink whose file is missing at recording time.
    prog, dbg = debuglinked_copy(args, os.path.join(work, "late"))
    os.rename(dbg, dbg + ".hidden")
    session, files, pid, err = record(ada, work, rep, prog, none, "l")
    rep.check(warnings_for(err), "no warning for %s with its debug file missing" % prog)
    os.rename(dbg + ".hidden", dbg)
    check_counts(ada, rep, session, pid, files, prog)
    check_report(ada, rep, session, pid, files)


def own_module(session, pid, prog):
    """(agent.json, the program's own module in it)."""
    with open(os.path.join(session, "pid_%d" % pid, "agent.json")) as f:
        agent = json.load(f)
    mods = [m for m in agent["modules"] if m.get("path") == os.path.realpath(prog)]
    if not mods:
        raise it.Fail("agent.json of pid %d has no module %s" % (pid, prog))
    return agent, mods[0]


def case_cache(args, ada, work, rep):
    prog, base = args.stripped, os.path.basename(args.stripped)
    os.environ["XDG_CACHE_HOME"] = os.path.join(work, "cache")
    root = os.path.join(work, "root")  # the same debug root throughout
    os.makedirs(root)
    oada = OffsetAda(ada.path, base, elf_names(args.unstripped))
    lines = {}
    for tag, want in (("cold", "miss"), ("warm", "hit")):
        session, files, pid, _ = record(ada, work, rep, prog, root, tag)
        agent, mod = own_module(session, pid, prog)
        rep.check(mod.get("symtab_cache") == want and mod.get("symbol_source") == "ehframe",
                  "%s: the program's symtab_cache %r (source %r), want %r" % (
                      tag, mod.get("symtab_cache"), mod.get("symbol_source"), want))
        rep.check(agent.get("symtab_cache", {}).get("refused") == 0,
                  "%s: symtab_cache %r" % (tag, agent.get("symtab_cache")))
        lines[tag] = own_syms(session, pid, prog)[1]
        check_counts(oada, rep, session, pid, files, prog)
    rep.check(lines["cold"] == lines["warm"],
              "the cached table's .syms lines differ from the table read from the image")
    tables = glob.glob(os.path.join(work, "cache", "ada", "plans",
                                    build_id(prog) + "-*-1.symtab"))
    if not rep.check(len(tables) == 1, "the program's symbol-table file: %r" % tables):
        return
    # A debug file installed since: the cached table is refused, not used.
    build_id_root(args, root)
    session, files, pid, err = record(ada, work, rep, prog, root, "installed")
    agent, mod = own_module(session, pid, prog)
    rep.check(mod.get("symtab_cache") == "miss" and agent["symtab_cache"]["refused"] == 1,
              "a debug file installed: symtab_cache %r, the module's %r" % (
                  agent.get("symtab_cache"), mod.get("symtab_cache")))
    check_named(rep, session, pid, prog, "debuglink")
    check_counts(ada, rep, session, pid, files, prog)
    rep.check(not warnings_for(err), "a named module was warned about: %s" % err)
    # That run stored the debug file's table (its identity recorded): a
    # link planted where the file is, to a copy of it, is refused and
    # replaced, its target untouched; then the file is a hit again.
    target = os.path.join(work, "planted-target")
    shutil.copy(tables[0], target)
    before = open(target, "rb").read()
    os.unlink(tables[0])
    os.symlink(target, tables[0])
    for tag, want, refused in (("planted", "miss", 1), ("replaced", "hit", 0)):
        session, files, pid, _ = record(ada, work, rep, prog, root, tag)
        agent, mod = own_module(session, pid, prog)
        rep.check(mod.get("symtab_cache") == want and
                  agent["symtab_cache"]["refused"] == refused,
                  "%s: symtab_cache %r, the module's %r" % (
                      tag, agent.get("symtab_cache"), mod.get("symtab_cache")))
        check_named(rep, session, pid, prog, "debuglink")
        check_counts(ada, rep, session, pid, files, prog)
    rep.check(not os.path.islink(tables[0]) and open(target, "rb").read() == before,
              "the planted link was followed or kept")


ARGS = []  # the program's arguments (--arg)

CASES = {"offsets": case_offsets, "debuglink": case_debuglink, "build_id": case_build_id,
         "after": case_after, "cache": case_cache}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--stripped", required=True)
    ap.add_argument("--unstripped", required=True)
    ap.add_argument("--arg", action="append", default=[], help="an argument of the program")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    it.no_core()  # as ada_itest's main: its run() starts commands without a preexec_fn
    ARGS.extend(args.arg)
    if not shutil.which("objcopy") or not shutil.which("nm") or not shutil.which("readelf"):
        print("SKIP: objcopy, nm and readelf (binutils) are needed")
        return it.SKIP
    base = os.path.join(args.work, args.case)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    work = tempfile.mkdtemp(dir=base)
    ada = it.Ada(args.ada)
    rep = it.Report()
    try:
        CASES[args.case](args, ada, work, rep)
    except it.Skip as e:
        print("SKIP: %s" % e)
        return it.SKIP
    except it.Fail as e:
        rep.fail(str(e))
    for n in rep.notes:
        print("note: %s" % n)
    if rep.failures:
        for f in rep.failures:
            print("FAIL: %s" % f)
        return 1
    shutil.rmtree(base, ignore_errors=True)
    print("PASS: stripped %s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
