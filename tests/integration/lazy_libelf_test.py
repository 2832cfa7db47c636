#!/usr/bin/env python3
"""libelf loaded by the agent only when it reads an ELF (agent_libelf.c).

  lazy_libelf_test.py --ada ADA --work DIR -- PROGRAM LIBRARY

PROGRAM dlopens LIBRARY after start (tests/targets/t_dlopen.c), so the
agent scans again once the program has run. Recorded twice with one plan
cache (XDG_CACHE_HOME under DIR):
  1. cold: the start-up scan misses every symbol table and loads libelf
     (and its libz) to read them; the dlopen's scan finds both and leaves
     them unhooked as the agent's dependencies (agent.json not_hooked:
     "agent dependency"), no module of agent.json is either, and LIBRARY
     is hooked;
  2. warm: every table is cached, libelf is never loaded: the dlopen's
     scan, which lists every image it finds, names neither library, and
     LIBRARY is hooked as before.
The agent itself needs neither at load (no DT_NEEDED for libelf).

Exit 0 = pass, 1 = fail (the work directory is kept and printed).
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# One recording with a plan cache, its agent.json read (beside this file).
from coldstart_test import Fail, check, record  # noqa: E402


def agent_libs(agent):
    """The not-hooked entries that are libelf or libz, by basename."""
    return {os.path.basename(e["path"]).split(".so")[0]: e["why"] for e in agent["not_hooked"]
            if os.path.basename(e["path"]).startswith(("libelf", "libz"))}


def module_named(agent, name):
    return [m for m in agent["modules"] if os.path.basename(m["path"]).startswith(name)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    lib = os.path.basename(argv[1])
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cache = os.path.join(work, "cache")
    os.makedirs(cache)
    try:
        agent_so = os.path.join(os.path.dirname(os.path.abspath(a.ada)), "libada_agent.so")
        d = subprocess.run(["readelf", "-d", agent_so], stdout=subprocess.PIPE,
                           universal_newlines=True)
        check(d.returncode == 0 and "libelf" not in d.stdout,
              "the agent still needs libelf at load:\n%s" % d.stdout)

        cold, _ = record(a.ada, work, "cold", cache, argv, opts=())
        check(all(m.get("symtab_cache") == "miss" for m in cold["modules"]
                  if not m["path"].endswith(lib)),
              "cold: a symbol table was cached already: %r" %
              [(m["path"], m.get("symtab_cache")) for m in cold["modules"]])
        libs = agent_libs(cold)
        check(libs.get("libelf") == "agent dependency" and libs.get("libz") == "agent dependency",
              "cold: libelf and libz should be the agent's unhooked dependencies, got %r in %r" %
              (libs, cold["not_hooked"]))
        check(not module_named(cold, "libelf") and not module_named(cold, "libz"),
              "cold: libelf or libz was hooked: %r" % [m["path"] for m in cold["modules"]])
        dl = module_named(cold, lib)
        check(dl and dl[-1]["installed"] > 0, "cold: %s not hooked: %r" % (lib, dl))

        warm, _ = record(a.ada, work, "warm", cache, argv, opts=())
        check(all(m.get("symtab_cache") == "hit" for m in warm["modules"]),
              "warm: a symbol table missed the cache: %r" %
              [(m["path"], m.get("symtab_cache")) for m in warm["modules"]])
        check(not agent_libs(warm), "warm: libelf was loaded with every table cached: %r" %
              warm["not_hooked"])
        dl = module_named(warm, lib)
        check(dl and dl[-1]["installed"] == module_named(cold, lib)[-1]["installed"],
              "warm: %s hooked differently: %r" % (lib, dl))
    except Fail as e:
        print("FAIL: %s (work kept: %s)" % (e, work))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
