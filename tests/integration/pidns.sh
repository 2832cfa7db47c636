# The set-up shared by the tests forced in a pid namespace of their own
# (bounded_raceb, bounded_reusedleft): there, a chosen pid can be handed
# to a stranger through ns_last_pid and no other process can take it.
# Sourced; every function names the test in its messages ($PIDNS_TAG).

# pidns_enter VAR SCRIPT ARGS...: re-run SCRIPT inside a new pid namespace
# (with its own /proc) unless VAR=1 says this already is that run. Root
# only; otherwise the test is skipped (77).
pidns_enter() {
	local var=$1
	shift
	[ "${!var:-}" = 1 ] && return 0
	[ "$(id -u)" -eq 0 ] || { echo "$PIDNS_TAG: needs root for a pid namespace: skipped"; exit 77; }
	unshare --pid --fork --mount-proc true 2>/dev/null ||
		{ echo "$PIDNS_TAG: cannot make a pid namespace (unshare): skipped"; exit 77; }
	export "$var=1"
	exec timeout -s KILL 120 unshare --pid --fork --mount-proc bash "$@"
}

# pidns_private_tmp SRC:NAME...: copy the programs to a directory in
# /dev/shm ($BIN), then hide the machine's /tmp under a private tmpfs (the
# per-user registry lives there). The copy comes first: a checkout in a
# mktemp -d, as CI makes, is under the /tmp about to be hidden.
pidns_private_tmp() {
	BIN=$(mktemp -d /dev/shm/"$PIDNS_TAG"-bin.XXXXXX) || { echo "$PIDNS_TAG: no room in /dev/shm"; exit 1; }
	local pair
	for pair in "$@"; do
		cp "${pair%%:*}" "$BIN/${pair#*:}" || { rm -rf "$BIN"; exit 1; }
	done
	mount -t tmpfs -o size=64m tmpfs /tmp ||
		{ rm -rf "$BIN"; echo "$PIDNS_TAG: no private /tmp: skipped"; exit 77; }
	cd / || exit 1 # the working directory may be under the /tmp just hidden
}

# pidns_remove_arenas OUT: remove the arena directories whose owner
# record names a session under OUT, then $BIN. Not by the session's name
# alone: a test beside this one may have started a session of the same
# name in the same second.
pidns_remove_arenas() {
	local s d
	for s in "$1"/session_*; do
		[ -d "$s" ] || continue
		for d in /dev/shm/ada-"$(basename "$s")"-*; do
			grep -qxF "session $s" "$d/recorder" 2>/dev/null && rm -rf "$d"
		done
	done
	rm -rf "$BIN"
}
