#!/bin/bash
# `ada status` shows the counts of threads still running (issue 32 item
# 6): t_hot's one thread calls its six count-only leaves 2^25, 2^24 ...
# 2^20 times under --overhead-budget 10, then parks until a gate file
# exists. While it is parked, `ada status --json` must show exactly those
# counts (the budget thread's live snapshot in agent.json, at most a
# second old: polled, bounded) and the exclude hint with final false;
# then, the gate created, the manifest's final counts are exact too.
# Before, a running thread's counts reached agent.json only at its exit:
# status showed 0 calls and no hint. Counts, not times: the polls only
# bound a run that went wrong. With a third argument `alone`: the same
# under --count-only without --overhead-budget (the agent's live counts'
# thread, t_hot's second task while it is parked; no budget, so no
# hint); before it, status showed no call. `off`: --count-live 0, no
# thread (one task) and status shows the start-up's 0 calls, as before;
# the manifest is exact all the same.
#   live_counts_test.sh ADA T_HOT [alone|off]
set -u
ADA=$1 HOT=$2 MODE=${3:-budget}
BUDGET=(--overhead-budget 10)
[ "$MODE" = alone ] && BUDGET=()
[ "$MODE" = off ] && BUDGET=(--count-live 0)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_live_counts.XXXXXX")
APID=
cleanup() {
	touch "$WORK/gate" 2>/dev/null
	[ -n "$APID" ] && kill -TERM "$APID" 2>/dev/null && wait "$APID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "live_counts_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

XDG_CACHE_HOME=$WORK/cache timeout -s KILL 50 "$ADA" record --out "$WORK/out" \
	"${BUDGET[@]}" --count-only 'hot_*' --include t_hot_O2 -- "$HOT" "$WORK/gate" \
	>"$WORK/stdout" 2>"$WORK/err" &
APID=$!
for _ in $(seq 400); do grep -q parked "$WORK/stdout" 2>/dev/null && break; sleep 0.05; done
grep -q parked "$WORK/stdout" || fail "t_hot never parked"
TPID=$(awk '/^parked/ {print $2}' "$WORK/stdout")
want='{"hot_a": 33554432, "hot_b": 16777216, "hot_c": 8388608, "hot_d": 4194304, "hot_e": 2097152, "hot_f": 1048576}'
# The agent's thread runs exactly when the live counts are kept: it
# starts before main, so the parked program's tasks are settled.
TASKS=$(ls "/proc/$TPID/task" | wc -l)
[ "$TASKS" -eq "$([ "$MODE" = off ] && echo 1 || echo 2)" ] || fail "$MODE: t_hot has $TASKS tasks"
ok=
for _ in $(seq 100); do
	"$ADA" status "$TPID" --json >"$WORK/st.json" 2>>"$WORK/err" || break # the program gave up
	if python3 - "$WORK/st.json" "$MODE" <<'PY'; then ok=1; break; fi
import json, sys
co = json.load(open(sys.argv[1]))['hooks'].get('count_only', {})
if sys.argv[2] == 'off':  # no thread: agent.json as the start-up wrote it
    sys.exit(0 if co.get('functions') == 6 and co['calls'] == 0 else 1)
sys.exit(0 if co.get('calls') == (1 << 26) - (1 << 20) else 1)
PY
	sleep 0.05
done
[ -n "$ok" ] || fail "ada status never showed the parked thread's counts: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hooks"]["count_only"])' "$WORK/st.json" 2>&1)"
python3 - "$WORK/st.json" "$WORK/out" "$want" "$MODE" <<'PY' || fail "the live counts are not the program's"
import glob, json, sys
co = json.load(open(sys.argv[1]))['hooks']['count_only']
want = json.loads(sys.argv[3])
if sys.argv[4] == 'off':
    want = {n: 0 for n in want}
assert co['functions'] == 6, co
ob = co.get('over_budget')
if sys.argv[4] != 'budget':
    assert ob is None, 'no budget, yet over_budget %r' % co
else:
    assert ob and ob['final'] is False, 'no live over_budget: %r' % co
    assert ob['counted_calls'] == sum(want.values()), ob
    order = sorted(want, key=lambda n: -want[n])
    assert ob['exclude'] and ob['exclude'] == order[:len(ob['exclude'])], ob
(aj,) = glob.glob(sys.argv[2] + '/*/pid_*/agent.json')
c = json.load(open(aj))['count_only']
assert c['final'] is False, c['final']
assert c['overhead_budget_pct'] == (10 if sys.argv[4] == 'budget' else 0), c
got = {f['name']: f['calls'] for f in c['functions']}
# the functions never called are counted, not listed (uncalled)
assert got == {n: v for n, v in want.items() if v}, 'agent.json live %r, not %r' % (got, want)
assert c['uncalled'] == sum(1 for v in want.values() if not v), c
PY
touch "$WORK/gate"
wait "$APID"
rc=$?
APID=
[ $rc -eq 0 ] || fail "ada record exited $rc"
S=$(tail -n 1 "$WORK/err")
python3 - "$S" "$want" <<'PY' || fail "the final counts are not the program's"
import glob, json, sys
(path,) = glob.glob(sys.argv[1] + '/pid_*/manifest.json')
co = json.load(open(path))['count_only']
assert co['final'] is True, co['final']
got = {f['name']: f['calls'] for f in co['functions']}
assert got == json.loads(sys.argv[2]), 'manifest %r' % got
PY
echo "live_counts ($MODE): ada status showed the parked thread's exact counts, then the manifest"
