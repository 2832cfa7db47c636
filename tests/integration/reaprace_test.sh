#!/bin/bash
# A child reaped while the recorder reads its /proc/PID/stat (issue 35):
# the kernel answers a read racing the release of the task with ppid 0
# (state Z or X), which the recorder took for a parent, so it refused a
# real child as "not a descendant" (fork-heavy programs lost about one
# child in a thousand, told as if a stranger had taken its pid). The
# program (with the agent) forks N children one after the other, each
# exiting at once and reaped at once: every child must be recorded, none
# refused. In a pid namespace of its own (root; skipped otherwise): no
# other process can take a child's pid there, so any refusal is the
# recorder's mistake and the counts are exact. The race is not forced
# (it lies inside the kernel's read of the stat file): without the fix
# this failed in about one run of six, never with it; test_wal_admit
# pins the logic itself.
#   reaprace_test.sh ADA AGENT_SO T_FORKREAP
set -u
ADA=$1 AGENT=$2 PROD=$3
N=1000
PIDNS_TAG=reaprace_test
. "$(dirname "$0")/pidns.sh"
pidns_enter REAPRACE_INNER "$0" "$@"
pidns_private_tmp "$ADA:ada" "$AGENT:libada_agent.so" "$PROD:t_forkreap"
ADA=$BIN/ada PROD=$BIN/t_forkreap
export ADA_NO_RECOVER_ORPHANS=1
W=/tmp/reaprace
mkdir -p $W
cleanup() { pidns_remove_arenas "$W/out"; }
trap cleanup EXIT
fail() { echo "reaprace_test: $*" >&2; tail -n 20 "$W/err" >&2 2>/dev/null; exit 1; }

timeout 100 "$ADA" record --detail never --max-disk-mb 40 \
	--out "$W/out" -- "$PROD" $N 2>"$W/err"
rc=$?
[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
S=$(tail -n 1 "$W/err")
[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
! grep -q "ignored the arena" "$W/err" || fail "a child's arena was refused"
# The program and its N children.
n=$(ls -d "$S"/pid_*/manifest.json | wc -l)
[ "$n" -eq $((N + 1)) ] || fail "$n processes recorded, expected $((N + 1))"
grep -q "recorded [0-9]* events .* from $((N + 1)) processes" "$W/err" ||
	fail "the summary does not say $((N + 1)) processes"
echo "reaprace: $N children reaped at once, each recorded"
exit 0
