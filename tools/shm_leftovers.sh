#!/usr/bin/env bash
# Arena directories a test stage left in /dev/shm (issue 38), for
# tools/test.sh:
#   shm_leftovers.sh list               the ada-* directories there now
#   shm_leftovers.sh check STAGE BEFORE fails, naming them, when
#                                       directories not in BEFORE (a list)
#                                       are still there
# Not counted: a directory whose owner record names a recorder that still
# runs (a recording going on beside the suite), and an ada-session_*
# directory without an owner record (made by an ada that writes none:
# another tree's suite on a shared machine; every recorder of this tree
# writes one). On a machine of its own (CI) neither exists.
set -u
list() { ls -1d /dev/shm/ada-* 2>/dev/null | sort; }

recorder_alive() { # owner record file: its recorder pid and start time still match
	local pid ticks now
	pid=$(sed -n 's/^recorder_pid //p' "$1")
	ticks=$(sed -n 's/^recorder_start_ticks //p' "$1")
	[ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
	now=$(sed 's/^.*) //' "/proc/$pid/stat" | awk '{print $20}')
	[ "$now" = "$ticks" ]
}

case ${1:-} in
list) list ;;
check)
	stage=$2 before=$3 left=()
	while read -r d; do
		[ -n "$d" ] && [ -d "$d" ] || continue
		if [ -f "$d/recorder" ]; then
			recorder_alive "$d/recorder" && continue
		else
			case ${d##*/} in ada-session_*) continue ;; esac
		fi
		left+=("$d")
	done < <(comm -13 <(printf '%s\n' "$before") <(list))
	[ ${#left[@]} -eq 0 ] && exit 0
	echo "stage $stage left ${#left[@]} arena director$([ ${#left[@]} -eq 1 ] && echo y || echo ies) in /dev/shm:" >&2
	for d in "${left[@]}"; do
		echo "  $d ($(sed -n 's/^session //p' "$d/recorder" 2>/dev/null || true))" >&2
	done
	exit 1
	;;
*)
	echo "usage: shm_leftovers.sh list | check STAGE BEFORE" >&2
	exit 2
	;;
esac
