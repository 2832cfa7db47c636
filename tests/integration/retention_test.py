#!/usr/bin/env python3
"""Retention at one disk budget: the compact index against ATF v2.

    retention_test.py --ada ADA --work DIR --budget-mb N --min-ratio R
                      [--record-args "OPTIONS"] -- PROG ARGS...

Records the deterministic PROG twice with `--max-disk-mb N`, once with the
compact index (the default) and once with `--index-format atf`, and counts
the events each session kept on disk, from the files themselves: an ATF v2
index file holds (size - 128) / 32 events; a compact one is exported with
`ada export --format atf` and counted the same way, and its count checked
against its header's. Checks:
  - both recordings wrote the same number of events (summary line), and
    both budgets deleted generations (otherwise the budget kept everything
    and the ratio says nothing);
  - each session's kept events equal what its manifests say (written minus
    retired), and `ada validate` passes on both;
  - each session takes at most N MiB (du), exactly: nothing over, whatever
    the encoding and however short the program (a run shorter than the
    drain's side-file scans ended over it by its symbol files before);
  - the compact session kept at least R times the ATF v2 session's events.
Counts, never times. Exit 0, 1 (a check failed), 77 (skipped).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=240)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def atf_events(tree):
    """Events in the ATF v2 index files under tree, from their sizes."""
    n = 0
    for p in glob.glob(os.path.join(tree, "**", "index*.atf"), recursive=True):
        with open(p, "rb") as f:
            magic = f.read(4)
        if magic != b"ATI2":
            raise SystemExit("retention_test: %s is not ATF v2 (magic %r)" % (p, magic))
        size = os.path.getsize(p)
        if size < 128 or (size - 128) % 32:
            raise SystemExit("retention_test: %s: %d bytes is not 128 + 32k" % (p, size))
        n += (size - 128) // 32
    return n


def compact_header_events(tree):
    n = 0
    for p in glob.glob(os.path.join(tree, "**", "index*.atf"), recursive=True):
        with open(p, "rb") as f:
            h = f.read(32)
        if h[:4] != b"ATC1":
            raise SystemExit("retention_test: %s is not compact (magic %r)" % (p, h[:4]))
        n += int.from_bytes(h[24:32], "little")
    return n


def disk_used(tree):
    """What `du -B1` says of tree: allocated blocks of everything in it,
    a file with several names (a shared symbol body, a forked child's
    link) once."""
    seen = set()
    used = os.lstat(tree).st_blocks * 512
    for root, dirs, names in os.walk(tree):
        for n in dirs + names:
            st = os.lstat(os.path.join(root, n))
            if st.st_nlink > 1 and not os.path.isdir(os.path.join(root, n)):
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
            used += st.st_blocks * 512
    return used


def processes(session):
    """Every process's manifest, and the lines of the processes the budget
    retired (retired.jsonl, docs/manifest.md "Retired processes")."""
    out = []
    for p in glob.glob(os.path.join(session, "pid_*", "manifest.json")):
        with open(p) as f:
            out.append(json.load(f))
    r = os.path.join(session, "retired.jsonl")
    if os.path.exists(r):
        with open(r) as f:
            out += [json.loads(l) for l in f if l.endswith("\n")]
    return out


def manifest_kept(session):
    """(events written, events retired) over the session's manifests."""
    written = retired = 0
    for m in processes(session):
        written += m["metrics"]["events_written"]
        if m.get("retired"):  # every event of it, no thread listed
            retired += m["retention"]["retired_events"]
        else:
            retired += sum(t.get("retired_events", 0) for t in m.get("threads", []))
    return written, retired


def ada_markers(session):
    """ada's own events in the session: two markers per wait for ring
    space (docs/format.md, "Wait markers"), which two runs differ in."""
    return sum(2 * m["metrics"].get("ring_waits", 0) for m in processes(session))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--budget-mb", type=int, required=True)
    ap.add_argument("--min-ratio", type=float, required=True)
    ap.add_argument("--record-args", default="",
                    help="more `ada record` options for both recordings (one string)")
    ap.add_argument("argv", nargs="+")
    a = ap.parse_args()
    if not os.path.exists(a.argv[0]):
        print("retention_test: %s not built: skipped" % a.argv[0])
        return 77
    w = os.path.join(a.work, "retention")
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    bad, kept = [], {}
    try:
        for enc in ("compact", "atf"):
            rc, _, e = run([a.ada, "record", "--index-format", enc, "--max-disk-mb",
                            str(a.budget_mb), "--out", os.path.join(w, enc)] +
                           a.record_args.split() + ["--"] + a.argv)
            session = e.strip().splitlines()[-1] if e.strip() else ""
            if rc != 0 or not os.path.isdir(session):
                print("retention_test: %s: ada record exited %d: %s" % (enc, rc, e[-2000:]))
                return 1
            line = next((l for l in e.splitlines() if l.startswith("ada: recorded ")), "")
            total = int(re.search(r"recorded (\d+) events", line).group(1)) if line else -1
            rc, o, e = run([a.ada, "validate", session])
            if rc != 0:
                bad.append("%s: ada validate exited %d: %s" % (enc, rc, (o + e)[-1500:]))
            if enc == "compact":
                out = os.path.join(w, "compact_as_atf")
                rc, _, e = run([a.ada, "export", "--format", "atf", "-o", out, session])
                if rc != 0:
                    bad.append("compact: ada export --format atf exited %d: %s" % (rc, e[-1500:]))
                    continue
                n = atf_events(out)
                if n != compact_header_events(session):
                    bad.append("compact: the export holds %d events, the compact headers say %d"
                               % (n, compact_header_events(session)))
            else:
                n = atf_events(session)
            used = disk_used(session)
            if used > a.budget_mb * 1048576:
                bad.append("%s: the session takes %d bytes, over its budget of %d MiB by %d"
                           % (enc, used, a.budget_mb, used - a.budget_mb * 1048576))
            written, retired = manifest_kept(session)
            if written != total or written - retired != n:
                bad.append("%s: the summary says %d events, the manifests %d written and %d "
                           "deleted by the budget, the files hold %d" % (
                               enc, total, written, retired, n))
            if retired == 0:
                bad.append("%s: the budget of %d MiB deleted nothing: the program made too "
                           "few events for this test" % (enc, a.budget_mb))
            kept[enc] = (n, total - ada_markers(session))
            print("retention_test: %s: %d events recorded, %d kept on disk (%d bytes) under "
                  "--max-disk-mb %d" % (enc, total, n, used, a.budget_mb))
        if len(kept) == 2:
            if kept["compact"][1] != kept["atf"][1]:
                bad.append("the two recordings made %d and %d events of the program: not the "
                           "same program run"
                           % (kept["compact"][1], kept["atf"][1]))
            ratio = kept["compact"][0] / max(kept["atf"][0], 1)
            print("retention_test: compact kept %.1f times the events ATF v2 kept" % ratio)
            if ratio < a.min_ratio:
                bad.append("compact kept %d events, ATF v2 %d: %.2f times, want at least %.1f" % (
                    kept["compact"][0], kept["atf"][0], ratio, a.min_ratio))
    finally:
        if not bad:
            shutil.rmtree(w, ignore_errors=True)
    for b in bad:
        print("retention_test: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
