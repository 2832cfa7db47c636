#!/usr/bin/env python3
"""The core of an aarch64 program that dies of a fault under ada names the
same frames as untraced (docs/arm64.md, issue 37).

  arm64_core.py --ada ADA --qemu QEMU --root ROOT --gdb GDB --work DIR -- PROG ARGS...

PROG (aarch64, run by qemu-user) dies of SIGSEGV. qemu-user writes the
guest's core itself (qemu_<prog>_<time>_<pid>.core in the program's
directory) when RLIMIT_CORE allows; ptrace of the guest is not possible,
so the core is the only way a debugger sees the stack. gdb reads the
untraced run's core: the frames of its `bt` up to main are the reference.
Then `ada record` runs PROG: the agent's crash handler must have put the
program's return addresses back (x30 saved in the frames, x30 in the
context) before the signal killed it, else the frames past the hooked
ones read as trampolines (`??`) and the backtrace stops there.
The cores are deleted; a directory `core` in each directory keeps the
kernel from writing qemu's (and ada's) own host core there when
core_pattern is `core` (other patterns that write into the program's
directory are deleted after; a pattern that pipes to a handler or names
another directory skips the test). qemu dumps every guest mapping, untouched ones
too: the recording takes small rings and few slots, so the core under ada
is ~17 MB rather than ~500 MB.

Exit 0 = pass, 1 = fail, 77 = skip (no gdb-multiarch, or qemu wrote no
guest core).
"""
import argparse
import glob
import os
import re
import resource
import shutil
import struct
import subprocess
import sys


def unlimited_core():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def run_in(d, argv, env):
    os.makedirs(d, exist_ok=True)
    os.makedirs(os.path.join(d, "core"), exist_ok=True)
    p = subprocess.run(argv, cwd=d, env=env, preexec_fn=unlimited_core, capture_output=True,
                       text=True, timeout=120)
    cores = glob.glob(os.path.join(d, "qemu_*.core"))
    return p, cores


def entry_of(prog):
    with open(prog, "rb") as f:
        hdr = f.read(64)
    return struct.unpack_from("<Q", hdr, 24)[0]


def frames(gdb, prog, core):
    """Function names of the core's backtrace, innermost first, up to main."""
    aux = subprocess.run([gdb, "-nx", "-batch", "-ex", "info auxv", "-c", core],
                         capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"AT_ENTRY\s.*?(0x[0-9a-f]+)", aux)
    if not m:
        return None, aux
    off = int(m.group(1), 16) - entry_of(prog)
    out = subprocess.run([gdb, "-nx", "-batch", "-ex", "symbol-file -o %#x %s" % (off, prog),
                          "-ex", "bt 16", "-c", core],
                         capture_output=True, text=True, timeout=60).stdout
    names = []
    for line in out.splitlines():  # the core's load prints its #0 first: bt's restarts
        f = re.match(r"#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(", line)
        if f and f.group(1) == "0":
            names = []
        if not f or int(f.group(1)) != len(names):
            continue
        names.append(f.group(2))
        if f.group(2) == "main":
            break
    return names, out


def main():
    ap = argparse.ArgumentParser()
    for a in ("--ada", "--qemu", "--root", "--gdb", "--work"):
        ap.add_argument(a, required=True)
    ap.add_argument("argv", nargs="+")
    a = ap.parse_args()
    gdb = shutil.which(a.gdb)
    if not gdb:
        print("SKIP: %s is not installed (tools/bootstrap.sh installs it)" % a.gdb)
        return 77
    try:
        with open("/proc/sys/kernel/core_pattern") as f:
            pattern = f.read().strip()
    except OSError:
        pattern = ""
    if pattern.startswith("|") or "/" in pattern:
        # qemu's own (host) core and ada's would go to the system's
        # handler or another directory, not the work directory the test
        # cleans: not on this machine
        print("SKIP: core_pattern %r does not write cores into the program's directory"
              % pattern)
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    env = dict(os.environ)
    try:
        p0, c0 = run_in(os.path.join(a.work, "plain"), [a.qemu, "-L", a.root] + a.argv, env)
        if not c0:
            print("SKIP: qemu-user wrote no guest core (exit %d): %s" % (p0.returncode,
                                                                        p0.stderr[-400:]))
            return 77
        want, out0 = frames(gdb, a.argv[0], c0[0])
        if not want or want[-1] != "main" or "??" in want:
            print("FAIL: the untraced core's backtrace does not reach main:\n" + out0[-2000:])
            return 1
        p1, c1 = run_in(os.path.join(a.work, "ada"),
                        [a.ada, "record", "--out", os.path.join(a.work, "ada", "out"),
                         "--peak-rate", "100000", "--burst-ms", "10", "--detail", "never",
                         "--max-threads", "2", "--thread-limit", "16", "--"] + a.argv, env)
        if not c1:
            print("FAIL: no guest core under ada (exit %d): %s" % (p1.returncode,
                                                                  p1.stderr[-800:]))
            return 1
        got, out1 = frames(gdb, a.argv[0], c1[0])
        if got != want:
            print("FAIL: the core under ada names %r, untraced %r:\n%s" % (got, want,
                                                                          out1[-2000:]))
            return 1
        print("PASS: %s" % " <- ".join(want))
        shutil.rmtree(a.work, ignore_errors=True)
        return 0
    finally:
        # the guest cores, and host cores a core_pattern other than
        # `core` (core.%p) wrote beside them
        for c in glob.glob(os.path.join(a.work, "*", "*core*")):
            if os.path.isfile(c):
                os.unlink(c)


if __name__ == "__main__":
    sys.exit(main())
