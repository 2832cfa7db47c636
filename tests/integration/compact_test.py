#!/usr/bin/env python3
"""The compact index (--index-format compact) against ATF v2, end to end.

    compact_test.py --ada ADA --work DIR TARGET...

A TARGET is a program's path, or its path and arguments in one argument
separated by spaces ("t_cxx_O2 dtor"). For each deterministic target program: one recording with each encoding
(and one compact recording with 4 KiB blocks and --detail always, so that
blocks are sealed often and links are given to events of many blocks);
then
  - `ada validate` passes on each;
  - `ada export --format atf` of each compact recording passes atf_check.py
    (the independent ATF v2 checker), links both ways;
  - the export's events, links and detail records equal the compact
    recording's (ada dump of both, every field);
  - the program's own calls (its module's events: kind, function, depth)
    equal the ATF v2 recording's, thread by thread (the C library's own
    paths may differ from one run to the next, so they are left out);
  - the manifests say which encoding each file has.
Exit 0, 1 (a check failed), 77 (skipped).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atf_check  # noqa: E402

CORE = ("kind", "function", "depth")


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=240)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def record(ada, out, opts, argv):
    rc, _, e = run([ada, "record", "--out", out] + opts + ["--"] + argv)
    if rc != 0:
        raise SystemExit("record %s exited %d: %s" % (opts, rc, e[-2000:]))
    return e.strip().splitlines()[-1]


def dump_text(ada, session):
    rc, o, e = run([ada, "dump", "--format", "jsonl", session])
    if rc != 0:
        raise SystemExit("dump %s exited %d: %s" % (session, rc, e[-2000:]))
    return o


def parse(text):
    """A jsonl dump's events: one parse of the whole stream, several times
    faster than one a line."""
    return json.loads("[" + ",".join(text.splitlines()) + "]")


def dump(ada, session):
    return parse(dump_text(ada, session))


def own_calls(evs, module):
    per = {}
    for ev in evs:
        if ev.get("module") == module:
            per.setdefault(ev["thread"], []).append(tuple(ev.get(k) for k in CORE))
    return per


def encodings(session):
    found = set()
    for root, _, names in os.walk(session):
        if "manifest.json" in names:
            with open(os.path.join(root, "manifest.json")) as f:
                for t in json.load(f).get("threads", []):
                    for fe in t.get("files", []):
                        found.add(fe.get("encoding"))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("targets", nargs="+")
    a = ap.parse_args()
    bad = []
    for spec in a.targets:
        argv = spec.split()
        tgt = argv[0]
        if not os.path.exists(tgt):
            print("compact_test: %s not built: skipped" % tgt)
            return 77
        w = os.path.join(a.work, "compact_" + "_".join([os.path.basename(tgt)] + argv[1:]))
        shutil.rmtree(w, ignore_errors=True)
        os.makedirs(w)
        runs = {
            "atf": ["--index-format", "atf", "--detail", "always"],
            "compact": ["--index-format", "compact", "--detail", "always"],
            "compact4k": ["--index-format", "compact", "--index-block-kb", "4", "--detail",
                          "always"],
        }
        sess = {k: record(a.ada, os.path.join(w, k), o, argv) for k, o in runs.items()}
        module = os.path.realpath(tgt)
        ref = own_calls(dump(a.ada, sess["atf"]), module)
        if not ref:
            bad.append("%s: no event of the program's module %s" % (tgt, module))
        for k, s in sess.items():
            rc, o, e = run([a.ada, "validate", s])
            if rc != 0:
                bad.append("%s %s: ada validate exited %d: %s" % (tgt, k, rc, (o + e)[-1500:]))
            if k == "atf":
                continue
            enc = encodings(s)
            if enc != {"compact"}:
                bad.append("%s %s: manifest encodings %s, not compact" % (tgt, k, enc))
            out = os.path.join(w, k + "_as_atf")
            rc, _, e = run([a.ada, "export", "--format", "atf", "-o", out, s])
            if rc != 0:
                bad.append("%s %s: export exited %d: %s" % (tgt, k, rc, e[-1500:]))
                continue
            lines, files = atf_check.check_tree(out)
            if lines or not files:
                bad.append("%s %s: atf_check (%d files): %s" % (tgt, k, files, "\n".join(lines[:10])))
            if encodings(out) != {"atf"}:
                bad.append("%s %s: exported manifest encodings %s" % (tgt, k, encodings(out)))
            # the same text: every field of every event equal, and only one
            # of the two parsed (parsing is most of this test's time)
            text = dump_text(a.ada, s)
            if dump_text(a.ada, out) != text:
                bad.append("%s %s: its ATF v2 export dumps differently" % (tgt, k))
            evs = parse(text)
            got = own_calls(evs, module)
            if got != ref:
                for th in sorted(set(ref) | set(got)):
                    r, g = ref.get(th, []), got.get(th, [])
                    if r != g:
                        i = next((i for i, (x, y) in enumerate(zip(r, g)) if x != y),
                                 min(len(r), len(g)))
                        bad.append("%s %s: thread %s differs from ATF v2 at event %d of %d/%d:"
                                   " %s vs %s" % (tgt, k, th, i, len(r), len(g),
                                                  r[i] if i < len(r) else None,
                                                  g[i] if i < len(g) else None))
                        break
            links = sum(1 for ev in evs if ev.get("detail_seq") is not None)
            print("compact_test: %s %s: %d events, %d linked, the program's %d calls"
                  " as ATF v2's: %s" % (" ".join([os.path.basename(tgt)] + argv[1:]), k, len(evs), links,
                                       sum(len(v) for v in got.values()), got == ref))
    for b in bad:
        print("compact_test: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
