#!/usr/bin/env bash
# The README's first command: what ada is for, in a screenful. Installs what
# the build needs (tools/bootstrap.sh --build), builds ada and the demo
# server (examples/demo.c) in build/, then runs the server alone (it dies of
# SIGSEGV on a bad request after serving good ones) and the real commands a
# user types first: `ada record --pre-roll-sec 5 --trigger crash` of the
# same server; `ada crash` (the faulting function and its arguments); `ada
# report` (the server's hottest functions); `ada flame` and `ada export`.
# It checks its own story (the same exit status with and without ada, the
# window on disk, frame #0 and its arguments) and exits 1 naming what went
# wrong. No core dumps (ulimit -c 0).
#
#   tools/demo.sh                   install, build, run; the session and
#                                   files stay in a temp dir it names
#   tools/demo.sh --built DIR       use DIR's ada and ada-demo (no install,
#                                   no build)
#   tools/demo.sh --built DIR --clean   ... and remove the temp dir at the
#                                   end, ada's caches (XDG_CACHE_HOME) in it
#                                   too: the CTest test e2e.demo
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

build=
clean=0
while [ $# -gt 0 ]; do
	case $1 in
	--built)
		[ $# -ge 2 ] || { echo "usage: tools/demo.sh [--built BUILD_DIR [--clean]]" >&2; exit 2; }
		build=$(cd "$2" && pwd)
		shift 2
		;;
	--clean)
		clean=1
		shift
		;;
	*)
		echo "usage: tools/demo.sh [--built BUILD_DIR [--clean]]" >&2
		exit 2
		;;
	esac
done

if [ -z "$build" ]; then
	"$repo/tools/bootstrap.sh" --build
	build=$repo/build
	echo "demo: building ada and the demo server in $build (cmake, Release)"
	cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$build" -j"$(nproc)" --target ada ada_agent ada-demo >/dev/null
fi
for f in ada ada-demo libada_agent.so; do
	[ -f "$build/$f" ] || { echo "demo: $build/$f is missing: build ada first" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ada-demo.XXXXXX")
if [ "$clean" = 1 ]; then
	trap 'rm -rf "$work"' EXIT
	export XDG_CACHE_HOME="$work/cache" # ada's hook-plan and clock caches
fi
cd "$work"
cp "$build/ada-demo" ./ada-demo
export PATH="$build:$PATH" # the `ada` of the commands shown is $build/ada

fail() {
	echo "demo: FAILED: $*" >&2
	[ "$clean" = 1 ] || echo "demo: everything is in $work" >&2
	exit 1
}
# show FILE COMMAND...: print the command as typed, run it, keep its output
# (stdout and stderr, in order) in FILE and print it; COMMAND's status.
show() {
	local out=$1
	shift
	echo "\$ $*"
	local rc=0
	# (the braces' 2>/dev/null: bash's own "Segmentation fault" line)
	{ "$@" >"$out" 2>&1; } 2>/dev/null || rc=$?
	cat "$out"
	return $rc
}
signal_of() { # an exit status: the name of the signal it says killed, or ""
	[ "$1" -gt 128 ] && echo "SIG$(kill -l $(($1 - 128)))"
	return 0
}
ulimit -c 0 # no core dumps from the demo's crashes (ada keeps the program's limit)

echo
echo "== 0. The demo server as it is: it dies, and that is all you learn"
bare=0
show bare.txt ./ada-demo || bare=$?
[ "$(signal_of $bare)" = SIGSEGV ] || fail "ada-demo exited $bare; it should die of SIGSEGV (139)"
echo "-> exit status $bare: killed by $(signal_of $bare)"

echo
echo "== 1. The same under ada's flight recorder: every call goes to disk, registers"
echo "      and stack stay in memory for 5 s and are written if it crashes"
rc=0
show record.txt ada record --pre-roll-sec 5 --trigger crash -- ./ada-demo || rc=$?
[ "$rc" = "$bare" ] || fail "ada record exited $rc; ada-demo alone exited $bare"
echo "-> exit status $rc: ada-demo was killed by $(signal_of $rc) as without ada, and so was ada (after writing the recording)"
sessions=(ada_traces/session_*)
session=${sessions[-1]}
[ -d "$session" ] || fail "no session directory under $work/ada_traces"
manifests=("$session"/pid_*/manifest.json)
manifest=${manifests[0]}
[ -f "$manifest" ] || fail "no manifest.json in $session"
grep -q '"trigger": "crash"' "$manifest" || fail "no window of the crash trigger in $manifest"
detail=$(find "$session" -name 'detail*.atf' -size +0 | head -n 1)
[ -n "$detail" ] || fail "no detail.atf was written: the window is not on disk"

echo
echo "== 2. Why did it die? Every thread's stack at the moment of death, the"
echo "      arguments of each call from the window the crash wrote"
show crash.txt ada crash "$session" || fail "ada crash failed"
frame0=$(awk '/the faulting thread:$/ { f = 1; next } f && $1 == "#0" { print; exit }' crash.txt)
[ "$(echo "$frame0" | awk '{ print $2 }')" = render_item ] ||
	fail "frame #0 of the faulting thread is not render_item: $frame0"
case $frame0 in
*"rdi=0x0,"*"rsi=0xbadc0de,"*) ;;
*) fail "render_item's arguments are not the missing item (rdi=0x0) and the bad id (rsi=0xbadc0de): $frame0" ;;
esac
echo "-> #0 render_item(it, id, ...) got rsi = 0xbadc0de, the id of the bad request,"
echo "   and rdi = 0x0: find_item() found no such item and handle_request() did not check"

echo
echo "== 3. Where did the time go? ada-demo's own functions (ada report lists libc's too)"
ada report --json "$session" >report.json || fail "ada report --json failed"
# The functions whose module is ada-demo, then their rows of the table.
awk -F'"' '$2 == "function" { f = $4 } $2 == "module" && $4 ~ /\/ada-demo$/ { print f }' \
	report.json >own.txt
[ -s own.txt ] || fail "ada report lists no function of ada-demo"
echo "\$ ada report $session"
ada report "$session" >report.txt || fail "ada report failed"
awk 'NR == FNR { own[$1] = 1; next }
     $1 == "calls" && $2 == "total" { print; next }
     ($NF in own) && n < 8 { print; n++ }' own.txt report.txt

echo
echo "== 4. See every call: a flame graph and a trace for Perfetto"
show flame.out ada flame "$session" -o flame.svg || fail "ada flame failed"
show export.out ada export "$session" --format chrome -o trace.json || fail "ada export failed"
{ [ -s flame.svg ] && [ -s trace.json ]; } || fail "flame.svg or trace.json is empty"
echo "-> $work/flame.svg: open it in a browser (click to zoom, search)"
echo "-> $work/trace.json: load it in ui.perfetto.dev, chrome://tracing or speedscope"

echo
echo "Next: \`ada attach PID --trigger crash\` records a program already running;"
echo "\`ada arm PID --trigger 'p99=function:handle_*'\` adds a trigger while it records."
if [ "$clean" = 1 ]; then
	echo "demo: ok (its files are removed)"
else
	echo "The session and these files stay in $work; the \`ada\` above is $build/ada"
	echo "(ada --help lists every command)."
fi
