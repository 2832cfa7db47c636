#!/bin/bash
# A budget run whose counts cost more than its budget names what to
# exclude (src/recorder/exclude_hint.c): t_hot's six leaves, all
# count-only from the start under --overhead-budget 10, are called 2^25,
# 2^24 ... 2^20 times, so their counts (at the documented 1.2 ns each)
# cost far more than 10 % of the program's CPU. The manifest's
# count_only.over_budget must list the most counted functions, most
# calls first (a prefix of hot_a, hot_b ... as many as its estimate
# needs: the number depends on the CPU time, the order does not), its
# exclude_calls their exact sum, and the summary line and `ada status`
# of the finished session the same list.
# Counts, not times.
#   exclude_hint_test.sh ADA T_HOT
set -u
ADA=$1 HOT=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_exclude_hint.XXXXXX")
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "exclude_hint_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }

XDG_CACHE_HOME=$WORK/cache timeout -s KILL 50 "$ADA" record --out "$WORK/out" \
	--overhead-budget 10 --count-only 'hot_*' --include t_hot_O2 -- "$HOT" >"$WORK/stdout" 2>"$WORK/err"
rc=$?
[ $rc -eq 0 ] || fail "ada record exited $rc"
S=$(tail -n 1 "$WORK/err")
[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
"$ADA" status "$S" --json >"$WORK/st.json" 2>>"$WORK/err" || fail "ada status --json failed"
"$ADA" status "$S" >"$WORK/st.txt" 2>>"$WORK/err" || fail "ada status failed"
python3 - "$S" "$WORK/err" "$WORK/st.json" "$WORK/st.txt" <<'PY' || fail "over_budget is not the hottest counted functions in order"
import glob, json, sys
sess, err = sys.argv[1], open(sys.argv[2]).read()
(path,) = glob.glob(sess + '/pid_*/manifest.json')
co = json.load(open(path))['count_only']
calls = {f['name']: f['calls'] for f in co['functions']}
want = {'hot_' + c: 1 << (25 - i) for i, c in enumerate('abcdef')}
assert calls == want, 'counts %r, not the program\'s %r' % (calls, want)
ob = co.get('over_budget')
assert ob, 'no over_budget: %r' % {k: v for k, v in co.items() if k != 'functions'}
names = ob['exclude']
order = sorted(want, key=lambda n: -want[n])
assert names and names == order[:len(names)], 'exclude %r, not a prefix of %r' % (names, order)
assert ob['exclude_calls'] == sum(want[n] for n in names), ob
assert ob['counted_calls'] == sum(want.values()), ob
assert ob['counts_cost_pct'] > 10 and ob['would_cost_pct'] < ob['counts_cost_pct'], ob
line = '--exclude-symbol %s would bring them' % ','.join(names)
assert line in err, 'summary lacks %r' % line
# `ada status` of the finished session: the manifest's, with its pid
st = json.load(open(sys.argv[3]))['hooks']['count_only'].get('over_budget')
assert st == dict(ob, pid=json.load(open(path))['pid'], final=True), 'ada status over_budget %r' % st
assert line in open(sys.argv[4]).read(), 'ada status lacks %r' % line
print('exclude_hint: %s (%.1f %% -> %.1f %%)' % (','.join(names), ob['counts_cost_pct'],
                                                 ob['would_cost_pct']))
PY
# pid_N/ is writable by the target's user: a name in its manifest with
# control characters (a terminal title and a bell) reaches `ada status`'s
# terminal as '?', in the per-process lines and the session's line both.
python3 - "$S" <<'PY' || fail "could not plant a name in the manifest"
import glob, json, sys
(path,) = glob.glob(sys.argv[1] + '/pid_*/manifest.json')
m = json.load(open(path))
m['count_only']['over_budget']['exclude'][0] = 'hot_\x1b]0;pwned\x07\u009b2J'
json.dump(m, open(path, 'w'))
PY
"$ADA" status "$S" >"$WORK/st2.txt" 2>>"$WORK/err" || fail "ada status failed"
grep -q 'hot_?]0;pwned??2J' "$WORK/st2.txt" || fail "ada status did not show the planted name cleaned"
if LC_ALL=C grep -q "$(printf '[\033\007]\|\302\233')" "$WORK/st2.txt"; then
	fail "ada status printed a control character from the manifest"
fi
exit 0
