#!/usr/bin/env python3
"""An exec'd program with a warm plan cache decodes nothing; a tampered
cache entry is rejected, counted and analysed again (issue 32 item 2).

  execcache_test.py --ada ADA --work DIR -- PROGRAM [ARGS...]

PROGRAM forks and execs a second program (t_fork exec t_exec_child).
With one plan cache (XDG_CACHE_HOME under DIR):
  1. cold: the exec'd image misses the cache for each of its modules and
     writes it; exact call counts (ada_itest.py beside this file);
  2. warm: the exec'd image hits for every module and decodes no function
     (agent.json plan_cache.decoded == 0, rejected == 0, misses == 0);
  3. tampered: one displaced byte of a decoded plan in the exec'd
     program's own cache file is changed (the file's checksum made right
     again, as a hostile writer would): the agent rejects the file
     (plan_cache.rejected == 1), analyses the module in full (a miss)
     and rewrites the file; the same verdicts (module_*.syms) as warm;
  4. tampered again, under ada_itest.py: exact call counts.
With 2, the plans checked against the image's file (plan_cache.file_checked),
and a run with every MADV_POPULATE_* refused (ADA_TEST_NO_POPULATE, as
before Linux 5.14): counted, the same verdicts, exact counts.
Between 2 and 3, the symbol-table cache: the warm exec'd image read every
module that has a .symtab or only .dynsym from it (agent.json symtab_cache "hit"), the
same .syms lines as a run with an empty cache, and a byte changed in the
program's symbol-table file makes it read afresh ("miss"), the same lines.

Exit 0 = pass, 1 = fail (the work directory is kept and printed).
"""
import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from syms_files import syms_lines  # noqa: E402  (beside this file)

M64 = (1 << 64) - 1
P1, P2, P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
P4, P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def xxh_round(acc, lane):
    return (rotl((acc + lane * P2) & M64, 31) * P1) & M64


def xxh64(data, seed=0):
    """XXH64 (the plan cache's checksum), in Python: no module for it."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed, (seed - P1) & M64]
        while i + 32 <= n:
            for k in range(4):
                v[k] = xxh_round(v[k], struct.unpack_from("<Q", data, i + 8 * k)[0])
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M64
        for k in range(4):
            h = ((h ^ xxh_round(0, v[k])) * P1 + P4) & M64
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while i + 8 <= n:
        h ^= xxh_round(0, struct.unpack_from("<Q", data, i)[0])
        h = (rotl(h, 27) * P1 + P4) & M64
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * P1) & M64
        h = (rotl(h, 23) * P2 + P3) & M64
        i += 4
    while i < n:
        h ^= (data[i] * P5) & M64
        h = (rotl(h, 11) * P1) & M64
        i += 1
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    return h ^ (h >> 32)


HDR, SUM_OFF = 128, 112


def file_sum(b):
    return xxh64(bytes(b[HDR:]), xxh64(bytes(b[:SUM_OFF])))


def tamper(path):
    """Flips the first displaced byte of the first decoded plan in the
    file and makes the checksum right again."""
    with open(path, "rb") as f:
        b = bytearray(f.read())
    check(struct.unpack_from("<Q", b, SUM_OFF)[0] == file_sum(b),
          "%s: the test's XXH64 does not match the file's checksum" % path)
    n = struct.unpack_from("<Q", b, 96)[0]
    first = next((i for i in range(n) if b[HDR + 2 * i] == 0 and b[HDR + 2 * i + 1] & 0x40),
                 None)
    check(first is not None, "%s: no decoded plan in the file" % path)
    at = HDR + 2 * n + 1  # the first record's insn_count, then its bytes
    b[at] ^= 0xff
    struct.pack_into("<Q", b, SUM_OFF, file_sum(b))
    with open(path, "wb") as f:
        f.write(b)


def build_id(prog):
    p = subprocess.run(["readelf", "-n", prog], stdout=subprocess.PIPE, timeout=30)
    for line in p.stdout.decode(errors="replace").splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    raise Fail("%s has no build-id" % prog)


def record(ada, work, tag, env, argv):
    out = os.path.join(work, "out-" + tag)
    p = subprocess.run([ada, "record", "--max-disk-mb", "0", "--out", out, "--"] + argv,
                       env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    check(p.returncode == 0, "%s: ada record exit %d\n%s" % (tag, p.returncode,
                                                          p.stderr.decode(errors="replace")))
    exec_name = os.path.basename(argv[-1])
    for d in glob.glob(os.path.join(out, "session_*", "pid_*")):
        with open(os.path.join(d, "agent.json")) as f:
            ag = json.load(f)
        if ag["argv"] and os.path.basename(ag["argv"][0]) == exec_name:
            syms = {}
            for m in ag["modules"]:
                p = os.path.join(d, "module_%d.syms" % m["module_id"])
                syms[m["path"]] = sorted(line.split()[1:6] for line in syms_lines(p)
                                         if line.startswith("F "))
            return ag, syms
    raise Fail("%s: no agent.json of the exec'd %s" % (tag, exec_name))


def itest(ada, work, tag, env, argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, os.path.join(here, "ada_itest.py"), "--ada", ada,
                        "--work", work, "--name", "itest-" + tag, "target", "--expect-pids",
                        "2", "--own-module", os.path.basename(argv[-1]), "--"] + argv,
                       env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=300)
    check(p.returncode == 0, "%s: exact counts failed:\n%s" %
          (tag, p.stdout.decode(errors="replace")[-3000:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("argv", nargs="+")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(a.work, "cache"))
    try:
        itest(a.ada, a.work, "cold", env, a.argv)
        warm, warm_syms = record(a.ada, a.work, "warm", env, a.argv)
        pc = warm["plan_cache"]
        n = len(warm["modules"])
        check(n >= 2 and pc["hits"] == n and pc["misses"] == 0 and pc["decoded"] == 0 and
              pc["rejected"] == 0 and pc["off"] == 0,
              "warm: the exec'd image's plan_cache %r over %d modules" % (pc, n))
        check(pc["file_checked"] > 0,
              "warm: no cached plan was checked against its file (agent_text.c): %r" % pc)
        # A kernel without MADV_POPULATE_* (ADA_TEST_NO_POPULATE): the
        # refusals counted, the same verdicts, exact counts, cold and warm.
        nopop = dict(env, ADA_TEST_NO_POPULATE="1",
                     XDG_CACHE_HOME=os.path.join(a.work, "cache-nopop"))
        cold_np, cold_np_syms = record(a.ada, a.work, "nopop-cold", nopop, a.argv)
        check(cold_np["text_pages"]["populate_refused"] >= 1 and
              cold_np["text_pages"]["prefaulted"] == 0 and cold_np_syms == warm_syms,
              "no populate: text_pages %r (refusals expected), verdicts %s" %
              (cold_np["text_pages"], "the same" if cold_np_syms == warm_syms else "differ"))
        itest(a.ada, a.work, "nopop-warm", nopop, a.argv)
        # Every table but one from a debug file found only by
        # .gnu_debuglink (whose identity the cache does not record).
        own = [m for m in warm["modules"]
               if m["symbol_source"] in ("symtab", "dynsym", "ehframe")]
        check(own and all(m["symtab_cache"] == "hit" for m in own) and
              warm["symtab_cache"]["refused"] == 0,
              "warm: modules with a .symtab not read from the symbol-table cache: %r" %
              [(m["path"], m["symtab_cache"]) for m in warm["modules"]])
        # The same tables read afresh (another, empty cache): the same
        # .syms lines, and a symbol-table file changed on disk is refused.
        fresh_env = dict(env, XDG_CACHE_HOME=os.path.join(a.work, "cache-fresh"))
        _, fresh_syms = record(a.ada, a.work, "fresh", fresh_env, a.argv)
        check(fresh_syms == warm_syms, "the symbol-table cache's tables differ from a fresh read")
        tables = glob.glob(os.path.join(a.work, "cache", "ada", "plans",
                                        build_id(a.argv[-1]) + "-*.symtab"))
        check(len(tables) == 1, "the exec'd program's symbol-table file: %r" % tables)
        with open(tables[0], "r+b") as f:
            f.seek(1)
            c = f.read(1)
            f.seek(1)
            f.write(bytes([c[0] ^ 0x20]))  # a name's byte: the checksum no longer holds
        flipped, flipped_syms = record(a.ada, a.work, "flipped", env, a.argv)
        mine = [m for m in flipped["modules"] if m["path"].endswith(os.path.basename(a.argv[-1]))]
        check(mine and mine[0]["symtab_cache"] == "miss" and flipped_syms == warm_syms,
              "a changed symbol-table file was used: %r" % [(m["path"], m["symtab_cache"])
                                                          for m in flipped["modules"]])
        plans = glob.glob(os.path.join(a.work, "cache", "ada", "plans",
                                       build_id(a.argv[-1]) + "-*.plan"))
        check(len(plans) == 1, "the exec'd program's cache file: %r" % plans)
        tamper(plans[0])
        bad, bad_syms = record(a.ada, a.work, "tampered", env, a.argv)
        pc = bad["plan_cache"]
        check(pc["rejected"] == 1 and pc["misses"] == 1 and pc["hits"] == n - 1 and
              pc["decoded"] == 0,
              "tampered: plan_cache %r, want 1 rejected (then missed), %d hits" % (pc, n - 1))
        check(bad_syms == warm_syms, "tampered: function statuses differ from warm")
        again, _ = record(a.ada, a.work, "rewritten", env, a.argv)
        check(again["plan_cache"]["hits"] == n and again["plan_cache"]["rejected"] == 0,
              "after the rejection the file was not rewritten: %r" % again["plan_cache"])
        tamper(plans[0])
        itest(a.ada, a.work, "tampered", env, a.argv)
        print("exec with a warm plan cache: %d modules hit, nothing decoded; a tampered "
              "entry rejected, counted, analysed again with the same verdicts and exact counts"
              % n)
    except Fail as e:
        print("FAIL: %s\n(work directory kept: %s)" % (e, a.work))
        return 1
    shutil.rmtree(a.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
