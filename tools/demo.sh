#!/usr/bin/env bash
# The main job on the bundled demo: build ada, record examples/demo.c's
# program, validate the session and show its first events.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
out=$(mktemp -d /tmp/ada-demo.XXXXXX)
build/ada record --out "$out" -- build/ada-demo
session=$(ls -d "$out"/session_* | head -n 1)
build/ada validate "$session"
echo "--- first events of the main thread ---"
build/ada dump "$session" --thread 0 >"$out/thread0.txt"
head -n 20 "$out/thread0.txt"
echo "--- the session: $session"
