#!/usr/bin/env python3
"""Shared patched text (agent_sharedtext.c; docs/hooks.md "Shared patched text").

  shared_text_test.py --ada ADA --work DIR -- TEXTSUM FORK EXEC_CHILD

TEXTSUM (tests/targets/t_textsum.c) prints its own text's and libc's
mapping path and a hash of their bytes in memory, patches included.
With one plan cache (XDG_CACHE_HOME under DIR):
  1. cold: each hooked module's text is patched in place and a copy
     written (agent.json modules[].text "written");
  2. warm: every hooked module maps its copy ("shared"; /proc/self/maps
     names the copy in the cache), and the bytes in memory are the cold
     run's, byte for byte (the same hashes);
  3. the warm run checked the cached plans against the files and left a
     note (<plan>.fit); the next run checks none (plan_cache.fit_known)
     and has the same text; the program touched (another identity) has
     its plans checked again and a new copy; notes changed a byte each
     vouch for nothing;
  4. a copy zeroed (as a crash before its blocks reached the disk would
     leave it), one without the patches (the image file's bytes), one
     truncated, one the group may write: each refused (shared_text.refused), the text
     patched in place, the same hashes, the copy written again; the run
     after maps it;
  5. ten runs that each exclude another libc function: a copy of libc
     each (other patches), eight kept, the newest mapped by a run with
     its options;
  6. a fork + exec tree (FORK exec EXEC_CHILD) cold and warm under
     ada_itest.py: exact call counts in both; recorded once more, the
     exec'd child's modules all "shared".

Exit 0 = pass, 1 = fail (the work directory is kept and printed).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Beside this file: one recording that must succeed; a fork + exec tree's
# exact counts and its exec'd child's agent.json.
from coldstart_test import Fail, check, run_record  # noqa: E402
from execcache_test import itest, record as record_exec_child  # noqa: E402


def record(ada, work, tag, env, argv, opts=()):
    """One recording: (agent.json of its one process, its stdout)."""
    out = os.path.join(work, "out-" + tag)
    stdout = run_record(ada, out, tag, env, argv, opts)
    jsons = glob.glob(os.path.join(out, "session_*", "pid_*", "agent.json"))
    check(len(jsons) == 1, "%s: want one process, found %r" % (tag, jsons))
    with open(jsons[0]) as f:
        return json.load(f), stdout


def texts(stdout):
    """{name: (hash, path)} from TEXTSUM's lines."""
    out = {}
    for line in stdout.splitlines():
        w = line.split(None, 3)
        if len(w) == 4 and w[0] == "text":
            out[w[1]] = (w[2], w[3])
    check(set(out) == {"self", "libc"}, "the target printed %r" % stdout)
    return out


def hooked(agent):
    return [m for m in agent["modules"] if m["installed"] > 0]


def module_texts(agent):
    return {os.path.basename(m["path"]): m["text"] for m in hooked(agent)}


def copies(cache):
    return sorted(glob.glob(os.path.join(cache, "ada", "plans", "text", "*", "*")))


def libc_copy(cache):
    c = [p for p in copies(cache) if os.path.basename(p).startswith("libc.so")]
    check(len(c) == 1, "want one copy of libc, found %r" % copies(cache))
    return c[0]


def writable(path):
    os.chmod(path, 0o600)


def zero_text(path):
    """Every byte of the copy zeroed, its size kept."""
    size = os.path.getsize(path)
    writable(path)
    with open(path, "r+b") as f:
        f.write(bytes(size))


def unpatch(path, libc_path):
    """The copy made the image file's bytes again: its size, no patch."""
    writable(path)
    with open(libc_path, "rb") as src, open(path, "r+b") as f:
        f.write(src.read())


def truncate(path):
    writable(path)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 4096)


def group_writable(path):
    os.chmod(path, 0o620)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    tree = argv[1:]
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # A copy of the program of our own, to touch (case 3).
    textsum = [os.path.join(work, os.path.basename(argv[0]))]
    shutil.copy2(argv[0], textsum[0])
    cache = os.path.join(work, "cache")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    cases = 0
    try:
        cold, out = record(a.ada, work, "cold", env, textsum)
        want = texts(out)
        check(set(module_texts(cold).values()) == {"written"},
              "cold: every hooked module should write its copy: %r" % module_texts(cold))
        check(cold["shared_text"]["written"] == len(hooked(cold)),
              "cold: shared_text %r" % cold["shared_text"])
        check("/ada/plans/text/" not in want["libc"][1], "cold: libc mapped from a copy")
        cases += 1

        warm, out = record(a.ada, work, "warm", env, textsum)
        got = texts(out)
        check(set(module_texts(warm).values()) == {"shared"},
              "warm: every hooked module should map its copy: %r" % module_texts(warm))
        check(warm["shared_text"]["mapped"] == len(hooked(warm)) and
              warm["shared_text"]["written"] == 0, "warm: shared_text %r" % warm["shared_text"])
        for name in ("self", "libc"):
            check(got[name][1].startswith(os.path.join(cache, "ada", "plans", "text")),
                  "warm: %s's text is not the copy: %s" % (name, got[name][1]))
            check(got[name][0] == want[name][0],
                  "warm: %s's text differs from the cold run's patched text" % name)
        pc = warm["plan_cache"]
        check(pc["hits"] == len(hooked(warm)) and pc["file_checked"] > 0 and
              pc["fit_known"] == 0, "warm: the plans should be checked: %r" % pc)
        cases += 1

        # The check's note: the next run checks nothing (agent_text.c).
        noted, out = record(a.ada, work, "noted", env, textsum)
        pc = noted["plan_cache"]
        check(pc["fit_known"] == len(hooked(noted)) and pc["file_checked"] == 0,
              "noted: every module's plans should be vouched for: %r" % pc)
        check(texts(out) == got, "noted: the text differs: %r against %r" % (texts(out), got))
        check(set(module_texts(noted).values()) == {"shared"}, "noted: %r" % module_texts(noted))
        # The program touched: another file identity, so neither its note
        # nor its copy match; checked again, a new copy, the same bytes.
        os.utime(textsum[0])
        touched, out = record(a.ada, work, "touched", env, textsum)
        pc, own = touched["plan_cache"], os.path.basename(textsum[0])
        check(pc["fit_known"] == len(hooked(touched)) - 1 and pc["file_checked"] > 0,
              "touched: the program's plans should be checked again: %r" % pc)
        check(module_texts(touched)[own] == "written",
              "touched: the program's copy should be new: %r" % module_texts(touched))
        check(texts(out)["self"][0] == want["self"][0], "touched: the program's text differs")
        # A note with other contents (its size kept) vouches for nothing.
        fits = glob.glob(os.path.join(cache, "ada", "plans", "*.fit"))
        check(len(fits) >= 2, "want the notes of both images, found %r" % fits)
        for f in fits:
            with open(f, "r+b") as fh:
                b = bytearray(fh.read())
                b[-1] ^= 1
                fh.seek(0)
                fh.write(b)
        forged, _ = record(a.ada, work, "forged", env, textsum)
        pc = forged["plan_cache"]
        check(pc["fit_known"] == 0 and pc["file_checked"] > 0 and pc["rejected"] == 0,
              "forged notes: the plans should be checked: %r" % pc)
        cases += 1

        libc_file = [m["path"] for m in cold["modules"]
                     if os.path.basename(m["path"]).startswith("libc.so")][0]
        spoil = [("zeroed", zero_text), ("unpatched", lambda p: unpatch(p, libc_file)),
                 ("truncated", truncate), ("group-writable", group_writable)]
        for i, (what, how) in enumerate(spoil):
            how(libc_copy(cache))
            bad, out = record(a.ada, work, "spoiled%d" % i, env, textsum)
            check(bad["shared_text"]["refused"] == 1,
                  "%s: the copy was not refused: %r" % (what, bad["shared_text"]))
            libc = [m for m in bad["modules"] if m["path"] == libc_file]
            check(libc and libc[0]["text"] == "written",
                  "%s: libc's text should be patched and its copy written again: %r" %
                  (what, libc))
            check(texts(out) == {k: (want[k][0], v[1]) for k, v in texts(out).items()},
                  "%s: the text in memory differs from the cold run's" % what)
            again, out = record(a.ada, work, "again%d" % i, env, textsum)
            check(set(module_texts(again).values()) == {"shared"} and
                  texts(out)["libc"][0] == want["libc"][0],
                  "%s: the copy written again is not mapped: %r" % (what, module_texts(again)))
            cases += 1

        # Other options, other patches: a copy each, at most eight kept
        # (agent_sharedtext.c, STEXT_VARIANTS), the newest among them.
        for k, fn in enumerate(["getppid", "getuid", "geteuid", "getgid", "getegid", "getpgrp",
                                "sched_yield", "getpagesize", "sync", "umask"]):
            ag, _ = record(a.ada, work, "opt%d" % k, env, textsum, opts=("--exclude-symbol", fn))
            libc = [m for m in ag["modules"] if m["path"] == libc_file]
            check(libc and libc[0]["text"] == "written",
                  "without %s: libc's copy should be a new one: %r" % (fn, libc))
        kept = [p for p in copies(cache) if os.path.basename(p).startswith("libc.so")]
        check(len(kept) == 8, "want eight copies of libc kept, found %d" % len(kept))
        again, _ = record(a.ada, work, "opt-last", env, textsum,
                          opts=("--exclude-symbol", "umask"))
        check(module_texts(again).get(os.path.basename(libc_file)) == "shared",
              "the newest copy was removed: %r" % module_texts(again))
        cases += 1

        itest(a.ada, work, "tree-cold", env, tree)
        itest(a.ada, work, "tree-warm", env, tree)
        child, _ = record_exec_child(a.ada, work, "tree", env, tree)
        check(set(module_texts(child).values()) == {"shared"},
              "tree-warm: the exec'd child's modules: %r" % module_texts(child))
        cases += 1
    except (Fail, subprocess.SubprocessError, OSError) as e:
        print("FAIL: %s\n(work directory kept: %s)" % (e, work))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("CASES: %d" % cases)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
