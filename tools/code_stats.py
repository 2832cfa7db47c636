#!/usr/bin/env python3
"""Function and file sizes of the C tree (src/ and tools/), from Universal
Ctags' start and end lines: the median and p99 function length, the
functions over a limit, the files over a limit. Issue 30's targets are
checked with --check (p99 <= 60, at most 3 functions over 80 lines, each
with an 'ada-long-function:' comment saying why, no file over 1200 lines,
median <= 13)."""
import argparse
import json
import os
import subprocess
import sys

ROOTS = ("src", "tools")


def c_files(root):
    for top in ROOTS:
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield os.path.join(d, n)


def functions(root, files):
    out = subprocess.run(
        ["ctags", "--output-format=json", "--kinds-C=f", "--fields=+ne", "-f", "-"]
        + files, cwd=root, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or "end" not in tag:
            continue
        yield tag["path"], tag["name"], tag["line"], tag["end"] - tag["line"] + 1


def percentile(sorted_vals, p):
    if not sorted_vals:
        return 0
    k = min(len(sorted_vals) - 1, int(round(p / 100 * (len(sorted_vals) - 1))))
    return sorted_vals[k]


def justified(root, path, line):
    """A long function says why in a comment right above it (or on the
    lines of its signature): 'ada-long-function: <reason>'."""
    with open(os.path.join(root, path), errors="replace") as f:
        lines = f.readlines()
    lo = max(0, line - 8)
    return any("ada-long-function:" in l for l in lines[lo:line + 2])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    files = [os.path.relpath(p, root) for p in c_files(root)]
    fns = list(functions(root, files))
    lens = sorted(n for *_, n in fns)
    file_lines = {}
    for p in files:
        with open(os.path.join(root, p), errors="replace") as f:
            file_lines[p] = sum(1 for _ in f)
    median = percentile(lens, 50)
    p99 = percentile(lens, 99)
    over80 = sorted((n, p, name, l) for p, name, l, n in fns if n > 80)[::-1]
    big = sorted(((n, p) for p, n in file_lines.items() if n > 1200), reverse=True)
    print(f"{len(fns)} functions in {len(files)} files, {sum(file_lines.values())} lines")
    print(f"function length: median {median}, p99 {p99}, longest {lens[-1] if lens else 0}")
    print(f"functions over 80 lines: {len(over80)}")
    for n, p, name, l in over80:
        why = " (justified)" if justified(root, p, l) else ""
        print(f"  {n:5d}  {p}:{l} {name}{why}")
    print("longest functions:")
    for p, name, l, n in sorted(fns, key=lambda t: -t[3])[:a.top]:
        print(f"  {n:5d}  {p}:{l} {name}")
    print(f"files over 1200 lines: {len(big)}")
    for n, p in big:
        print(f"  {n:5d}  {p}")
    if not a.check:
        return 0
    bad = []
    if median > 13:
        bad.append(f"median function length {median} > 13")
    if p99 > 60:
        bad.append(f"p99 function length {p99} > 60")
    if len(over80) > 3:
        bad.append(f"{len(over80)} functions over 80 lines (at most 3)")
    for n, p, name, l in over80:
        if not justified(root, p, l):
            bad.append(f"{p}:{l} {name} is {n} lines with no 'ada-long-function:' reason")
    if big:
        bad.append(f"{len(big)} files over 1200 lines")
    for b in bad:
        print("code_stats: " + b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
