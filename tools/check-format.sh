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
# Many files to a clang-format, one per core: a process per file spent
# most of the check starting clang-format. Only when some file fails are
# they checked one by one, to name each.
if printf '%s\0' "${files[@]}" |
	xargs -0 -n 64 -P "$(nproc)" clang-format --dry-run --Werror >/dev/null 2>&1; then
	exit 0
fi
bad=0
for f in "${files[@]}"; do
	if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "check-format: $f is not formatted (clang-format -i $f)" >&2
		bad=1
	fi
done
exit $bad
