#!/usr/bin/env bash
# Arena directories a test stage left in /dev/shm (issue 38), for
# tools/test.sh:
#   shm_leftovers.sh list               the ada-* directories there now
#   shm_leftovers.sh check STAGE BEFORE fails when directories not in
#                                       BEFORE (a list) are still there,
#                                       naming each and what it holds
#   shm_leftovers.sh suite              at the end of the suite: in CI,
#                                       fails naming every ada-* directory
#                                       there; elsewhere says nothing
# In CI (CI=true, or ADA_CI set and not 0: a machine of its own, where
# nothing but the suite runs) every such directory is a failure, whatever
# it holds: one without an owner record too (a recording's end that could
# not empty it leaves one; an ada whose recorder is killed before its
# record leaves one), and one whose recorder still runs (a recorder the
# stage left running).
# Elsewhere (a shared machine, other trees' suites beside this one) only
# those made since BEFORE are looked at, and one whose recorder still runs
# is another recording's; one without an owner record counts once it
# still has none a moment later (a recorder writes it right after making
# the directory).
set -u
list() { ls -1d /dev/shm/ada-* 2>/dev/null | sort; }

in_ci() {
	[ "${CI:-}" = true ] && return 0
	[ -n "${ADA_CI:-}" ] && [ "${ADA_CI:-}" != 0 ]
}

recorder_alive() { # owner record file: its recorder pid and start time still match
	local pid ticks now
	pid=$(sed -n 's/^recorder_pid //p' "$1")
	ticks=$(sed -n 's/^recorder_start_ticks //p' "$1")
	[ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
	now=$(sed 's/^.*) //' "/proc/$pid/stat" | awk '{print $20}')
	[ "$now" = "$ticks" ]
}

# What a left directory holds, for the report: its session and each file.
describe() {
	local d=$1 s
	if [ -f "$d/recorder" ]; then
		s=$(sed -n 's/^session //p' "$d/recorder" 2>/dev/null)
		recorder_alive "$d/recorder" &&
			s="$s; its recorder $(sed -n 's/^recorder_pid //p' "$d/recorder") still runs"
	else
		s="no owner record"
	fi
	echo "  $d ($s):"
	find "$d" -mindepth 1 -maxdepth 1 -printf '    %f %s bytes, %TY-%Tm-%Td %TH:%TM:%TS\n' 2>/dev/null |
		head -n 20
}

case ${1:-} in
list) list ;;
suite | check)
	if [ "$1" = suite ]; then
		in_ci || exit 0
		set -- check "the suite" ""
	fi
	stage=$2 before=$3 left=() unmarked=()
	ci=false
	in_ci && ci=true
	while read -r d; do
		[ -n "$d" ] && [ -d "$d" ] || continue
		if [ $ci = false ]; then
			if [ -f "$d/recorder" ]; then
				recorder_alive "$d/recorder" && continue
			else
				unmarked+=("$d")
				continue
			fi
		fi
		left+=("$d")
	done < <(comm -13 <(printf '%s\n' "$before" | sed '/^$/d') <(list))
	if [ ${#unmarked[@]} -gt 0 ]; then
		sleep 2
		for d in "${unmarked[@]}"; do
			[ -d "$d" ] && [ ! -f "$d/recorder" ] && left+=("$d")
		done
	fi
	[ ${#left[@]} -eq 0 ] && exit 0
	echo "$stage left ${#left[@]} arena director$([ ${#left[@]} -eq 1 ] && echo y || echo ies) in /dev/shm:" >&2
	for d in "${left[@]}"; do
		describe "$d" >&2
	done
	exit 1
	;;
*)
	echo "usage: shm_leftovers.sh list | check STAGE BEFORE | suite" >&2
	exit 2
	;;
esac
