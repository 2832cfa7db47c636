#!/usr/bin/env python3
"""The build targets a test stage's tests need (tools/test.sh).

    stage_targets.py BUILD_DIR LABEL

A sanitizer stage runs only the tests labelled LABEL, so its build needs
only what they run: prints, one a line, the targets whose outputs those
tests name (their command, arguments and environment) and the targets
those depend on go with them (cmake --build --target builds dependencies).
The outputs are read from CMake's file API (the codemodel reply a
configure writes once BUILD_DIR/.cmake/api/v1/query/codemodel-v2 exists:
tools/test.sh creates it), the tests from BUILD_DIR's CTestTestfile.cmake
files. A path in BUILD_DIR that no target makes (a work directory the
test creates) adds nothing. Without the file API's reply, or when no test
names a target, the script prints `all` and the stage builds everything;
a missed dependency fails its test, it never skips it.
"""

import glob
import json
import os
import re
import shlex
import sys


def artifacts(build):
    """Maps each absolute path a target makes to the target's name."""
    reply = os.path.join(build, ".cmake", "api", "v1", "reply")
    index = sorted(glob.glob(os.path.join(reply, "index-*.json")))
    if not index:
        return None
    idx = json.load(open(index[-1]))
    model = None
    for obj in idx.get("objects", []):
        if obj.get("kind") == "codemodel":
            model = json.load(open(os.path.join(reply, obj["jsonFile"])))
    if model is None:
        return None
    made = {}
    for cfg in model.get("configurations", []):
        for ref in cfg.get("targets", []):
            tgt = json.load(open(os.path.join(reply, ref["jsonFile"])))
            for art in tgt.get("artifacts", []):
                made[os.path.join(build, art["path"])] = tgt["name"]
            # custom targets (the clang-built variants): their generated
            # sources are what they make
            for src in tgt.get("sources", []):
                if src.get("isGenerated"):
                    path = src["path"]
                    if not os.path.isabs(path):
                        path = os.path.join(model["paths"]["source"], path)
                    made.setdefault(path, tgt["name"])
    return made


ADD_TEST = re.compile(r"^add_test\((\S+) (.*)\)$")
PROPS = re.compile(r"^set_tests_properties\((\S+) PROPERTIES (.*)\)$")


def tests_with_label(build, label):
    """Yields the words (command, arguments, environment) of each test
    labelled LABEL."""
    words, labels = {}, {}
    for f in glob.glob(os.path.join(build, "**", "CTestTestfile.cmake"), recursive=True):
        for line in open(f):
            line = line.strip()
            m = ADD_TEST.match(line)
            if m:
                words.setdefault(m.group(1), []).extend(shlex.split(m.group(2)))
                continue
            m = PROPS.match(line)
            if m:
                props = shlex.split(m.group(2))
                for k, v in zip(props[::2], props[1::2]):
                    if k == "LABELS":
                        labels[m.group(1)] = v.split(";")
                    elif k == "ENVIRONMENT":
                        words.setdefault(m.group(1), []).extend(
                            e.split("=", 1)[-1] for e in v.split(";"))
    for name, labs in labels.items():
        if label in labs:
            yield name, words.get(name, [])


def main():
    build, label = os.path.realpath(sys.argv[1]), sys.argv[2]
    made = artifacts(build)
    if made is None:
        print("all")
        return 0
    need, n = set(), 0
    for name, words in tests_with_label(build, label):
        n += 1
        for w in words:
            for p in w.split(":"):
                if not p.startswith(build + "/"):
                    continue
                if p in made:
                    need.add(made[p])
    if n == 0 or not need:
        print("all")
        return 0
    print("\n".join(sorted(need)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
