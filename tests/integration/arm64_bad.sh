#!/bin/sh
# ada record of an aarch64 program without what runs it (docs/arm64.md):
# no aarch64 agent, or an agent of another machine, or no qemu:
# exit 2, one sentence on stderr naming what to set, no session left.
# And ada attach to a process qemu-user runs (QEMU BUSY_AARCH64_PROGRAM:
# one that runs for seconds): refused in one sentence, qemu-user cannot
# ptrace its guests.
#   arm64_bad.sh ADA NATIVE_AGENT AARCH64_PROGRAM WORK_DIR [QEMU BUSY_PROGRAM ARGS...]
set -u
ada=$1 native_agent=$2 prog=$3 work=$4
shift 4
rm -rf "$work" && mkdir -p "$work" || exit 1
fail=0
opts= # more ada record options for the next check
check() { # check <what> <want in stderr> <env...>
	what=$1 want=$2
	shift 2
	# shellcheck disable=SC2086 # opts: words on purpose
	env "$@" "$ada" record $opts --out "$work/out" -- "$prog" >"$work/out.txt" 2>"$work/err.txt"
	rc=$?
	lines=$(wc -l <"$work/err.txt")
	if [ "$rc" != 2 ] || [ "$lines" != 1 ] || ! grep -q -- "$want" "$work/err.txt" ||
		[ -n "$(ls -A "$work/out" 2>/dev/null)" ]; then
		echo "FAIL: $what: exit $rc (want 2), stderr ($lines lines, want 1 naming '$want'):"
		cat "$work/err.txt"
		ls -A "$work/out" 2>/dev/null
		fail=1
	fi
	rm -rf "$work/out"
}
check "no aarch64 agent" ADA_AGENT_ARM64 ADA_AGENT_ARM64=/nonexistent/libada_agent.so
check "an x86_64 agent" "not the aarch64 build" ADA_AGENT_ARM64="$native_agent"
check "no qemu" qemu-user ADA_QEMU_AARCH64=/nonexistent/qemu-aarch64
if [ $# -ge 2 ]; then
	qemu=$1
	shift
	"$qemu" -L "${ADA_QEMU_SYSROOT:-/}" "$@" >/dev/null 2>&1 &
	guest=$!
	sleep 0.3
	"$ada" attach "$guest" --out "$work/out" >"$work/out.txt" 2>"$work/err.txt"
	rc=$?
	kill "$guest" 2>/dev/null
	wait "$guest" 2>/dev/null
	if [ "$rc" != 2 ] || [ "$(grep -c 'cannot attach' "$work/err.txt")" != 1 ] ||
		! grep -q "qemu-user does not implement ptrace" "$work/err.txt" ||
		[ -n "$(ls -A "$work/out" 2>/dev/null)" ]; then
		echo "FAIL: ada attach to a qemu-user guest: exit $rc (want 2), stderr:"
		cat "$work/err.txt"
		fail=1
	fi
fi
[ $fail = 0 ] && rm -rf "$work"
exit $fail
