#!/usr/bin/env bash
# Fails when a C/C++ source of the project differs from .clang-format.
# Fix with: clang-format -i $(git ls-files '*.c' '*.h' '*.cpp')
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
	echo "check-format: clang-format not installed (Debian package clang-format)" >&2
	exit 1
fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' 2>/dev/null || find src tools tests bench examples -name '*.[ch]' -o -name '*.cpp')
bad=0
for f in "${files[@]}"; do
	if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "check-format: $f is not formatted (clang-format -i $f)" >&2
		bad=1
	fi
done
exit $bad
