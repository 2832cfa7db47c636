#!/bin/bash
# The manifests' warnings in `ada status`, and the count-only functions
# never called (count_only.uncalled) in `ada flame` and `ada report
# --json` (tests/integration/reading.cmake).
# 1. A recording whose mlock is refused (CAP_IPC_LOCK dropped, a small
#    RLIMIT_MEMLOCK: io_uring still fits): the live `ada status PID`
#    (--json: `warnings`; text: "  warning: pid P: ...") says so while
#    t_control waits on its stdin, and the finished session's status, from
#    the manifests, too.
# 2. Sentences planted in the manifest (pid_N/ is the target's to write):
#    16 distinct ones listed, the rest counted, a control character shown
#    as '?', four text lines and "and N more (--json)".
# 3. A planted count_only with 1 function called and 7 never called:
#    report --json's count_only_uncalled and flame's subtitle count 8;
#    without the key (a session written before it) 0 and 1, as before;
#    one past the agent's uint32_t counts as UINT32_MAX in ada status,
#    calls past 2^63 - 1 in all stay there (saturated), and a negative
#    count adds nothing to flame's subtitle.
# No timing: the live status is asked again (up to 20 s) until the
# drain's once-a-second tick has looked at the arena.
#   status_warnings_test.sh ADA T_CONTROL
set -u
ADA=$1 TC=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ada_status_warn.XXXXXX")
REC=
cleanup() {
	exec 3>&-
	[ -n "$REC" ] && kill -TERM "$REC" 2>/dev/null && wait "$REC" 2>/dev/null # timeout passes it on
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "status_warnings_test: $*" >&2; cat "$WORK/err" >&2 2>/dev/null; exit 1; }
command -v capsh >/dev/null || { echo "status_warnings_test: no capsh: skipped"; exit 77; }

mkfifo "$WORK/in" || fail "mkfifo"
capsh --drop=cap_ipc_lock -- -c "ulimit -l 1024 && exec timeout -s KILL 50 '$ADA' record \
	--out '$WORK/out' -- '$TC' <'$WORK/in' >'$WORK/tc.out' 2>'$WORK/err'" &
REC=$!
exec 3>"$WORK/in"
echo pid >&3
for _ in $(seq 200); do
	P=$(sed -n 2p "$WORK/tc.out" 2>/dev/null)
	[ -n "$P" ] && break
	sleep 0.1
done
[ -n "$P" ] || fail "t_control did not say its pid"
MLOCK="mlock refused: ring pages may be swapped"
ok=
for _ in $(seq 200); do
	"$ADA" status "$P" --json >"$WORK/live.json" 2>>"$WORK/err" || fail "ada status PID --json failed"
	if grep -qF "\"warnings\":[{\"pid\":$P,\"text\":\"$MLOCK\",\"processes\":1}]" "$WORK/live.json"; then
		ok=1
		break
	fi
	sleep 0.1
done
[ -n "$ok" ] || fail "the live status never listed the refused mlock: $(cat "$WORK/live.json")"
"$ADA" status "$P" >"$WORK/live.txt" 2>>"$WORK/err" || fail "ada status PID failed"
grep -qxF "  warning: pid $P: $MLOCK" "$WORK/live.txt" || fail "live text lacks the warning: $(cat "$WORK/live.txt")"
echo quit >&3
exec 3>&-
wait "$REC"
rc=$?
REC=
[ $rc -eq 0 ] || fail "ada record exited $rc"
S=$(tail -n 1 "$WORK/err")
[ -d "$S" ] || fail "last stderr line is not the session directory: $S"
"$ADA" status "$S" --json >"$WORK/st.json" 2>>"$WORK/err" || fail "ada status DIR --json failed"
python3 - "$WORK/st.json" "$P" "$MLOCK" <<'PY' || fail "the finished status's warnings"
import json, sys
st = json.load(open(sys.argv[1]))
want = [{'pid': int(sys.argv[2]), 'text': sys.argv[3], 'processes': 1}]
assert st['warnings'] == want and st['warnings_omitted'] == 0, (st['warnings'], st['warnings_omitted'])
PY

# 2 and 3: planted into the manifest
python3 - "$S" <<'PY' || fail "could not plant the manifest"
import glob, json, sys
(path,) = glob.glob(sys.argv[1] + '/pid_*/manifest.json')
m = json.load(open(path))
planted = ['planted %d' % k for k in range(20)]
m['warnings'] += ['bell \x07 title \x1b]0;x\x07 csi \u009b2J'] + planted + ['planted 0']
m['count_only'] = {'final': True, 'capacity': 4096, 'uncalled': 7, 'recalled': 0,
                   'functions': [{'id': 1, 'name': 'busy', 'calls': 5, 'moved': 'start'}]}
json.dump(m, open(path, 'w'))
PY
"$ADA" status "$S" --json >"$WORK/st2.json" 2>>"$WORK/err" || fail "ada status DIR --json failed"
"$ADA" status "$S" >"$WORK/st2.txt" 2>>"$WORK/err" || fail "ada status DIR failed"
python3 - "$WORK/st2.json" "$WORK/st2.txt" "$P" "$MLOCK" <<'PY' || fail "the planted warnings"
import json, sys
st = json.load(open(sys.argv[1]))
txt = open(sys.argv[2]).read()
pid = int(sys.argv[3])
texts = [w['text'] for w in st['warnings']]
want = [sys.argv[4], 'bell ? title ?]0;x? csi ?2J'] + ['planted %d' % k for k in range(14)]
assert texts == want, texts
assert all(w['pid'] == pid and w['processes'] == 1 for w in st['warnings']), st['warnings']
assert st['warnings_omitted'] == 6, st['warnings_omitted']   # planted 14..19
lines = [l for l in txt.splitlines() if l.startswith('  warning: ')]
assert lines == ['  warning: pid %d: %s' % (pid, t) for t in want[:4]] + \
    ['  warning: and 18 more (--json)'], lines
assert not any(c in txt for c in '\x07\x1b\u009b'), 'a control character reached the text'
PY
"$ADA" report "$S" --json >"$WORK/rep.json" 2>>"$WORK/err" || fail "ada report --json failed"
"$ADA" report "$S" >"$WORK/rep.txt" 2>>"$WORK/err" || fail "ada report failed"
"$ADA" flame "$S" -o "$WORK/f.svg" 2>>"$WORK/err" || fail "ada flame failed"
"$ADA" flame "$S" --folded >/dev/null 2>"$WORK/folded.err" || fail "ada flame --folded failed"
python3 - "$WORK/rep.json" "$WORK/rep.txt" "$WORK/f.svg" "$WORK/folded.err" 8 7 <<'PY' || fail "count-only uncalled"
import json, sys
fns, uncalled = int(sys.argv[5]), int(sys.argv[6])
(p,) = json.load(open(sys.argv[1]))['processes']
assert p['count_only_uncalled'] == uncalled and len(p['count_only']) == 1, p['count_only_uncalled']
if uncalled:
    assert '(%d more count-only functions never called)' % uncalled in open(sys.argv[2]).read()
want = '%d count-only functions (5 calls' % fns
assert want in open(sys.argv[3]).read(), 'flame subtitle lacks %r' % want
assert '%d count-only functions (5 calls)' % fns in open(sys.argv[4]).read(), 'folded stderr'
PY
# an uncalled past the agent's uint32_t (a lie): taken as UINT32_MAX, so
# the sums with the one listed function neither wrap nor overflow
python3 - "$S" <<'PY' || fail "could not plant the manifest"
import glob, json, sys
(path,) = glob.glob(sys.argv[1] + '/pid_*/manifest.json')
m = json.load(open(path))
m['count_only']['uncalled'] = 2**63 - 1
json.dump(m, open(path, 'w'))
PY
"$ADA" status "$S" --json >"$WORK/st3.json" 2>>"$WORK/err" || fail "ada status DIR --json failed"
"$ADA" status "$S" >"$WORK/st3.txt" 2>>"$WORK/err" || fail "ada status DIR failed"
python3 - "$WORK/st3.json" "$WORK/st3.txt" <<'PY' || fail "uncalled past uint32"
import json, sys
co = json.load(open(sys.argv[1]))['hooks']['count_only']
assert co['functions'] == 2**32 and co['calls'] == 5, co
assert 'count-only: %d functions, 5 calls' % 2**32 in open(sys.argv[2]).read()
PY
# two functions of 2^63 - 1 calls each (a lie): the sums saturate
python3 - "$S" <<'PY' || fail "could not plant the manifest"
import glob, json, sys
(path,) = glob.glob(sys.argv[1] + '/pid_*/manifest.json')
m = json.load(open(path))
m['count_only']['uncalled'] = 7
m['count_only']['functions'] = [{'id': k, 'name': 'f%d' % k, 'calls': 2**63 - 1, 'moved': 'start'}
                                for k in (1, 2)]
json.dump(m, open(path + '.big', 'w'))
PY
mv "$S"/pid_*/manifest.json "$WORK/manifest.keep" && for m in "$S"/pid_*/manifest.json.big; do mv "$m" "${m%.big}"; done
"$ADA" status "$S" --json >"$WORK/st4.json" 2>>"$WORK/err" || fail "ada status DIR --json failed"
"$ADA" status "$S" >"$WORK/st4.txt" 2>>"$WORK/err" || fail "ada status DIR failed"
python3 - "$WORK/st4.json" "$WORK/st4.txt" <<'PY' || fail "calls past int64"
import json, sys
co = json.load(open(sys.argv[1]))['hooks']['count_only']
assert co['functions'] == 9 and co['calls'] == 2**63 - 1, co
assert 'count-only: 9 functions, %d calls' % (2**63 - 1) in open(sys.argv[2]).read()
PY
# flame's subtitle adds a negative count (a lie) as nothing, not wrapped
python3 - "$S" <<'PY' || fail "could not plant the manifest"
import glob, json, sys
(path,) = glob.glob(sys.argv[1] + '/pid_*/manifest.json')
m = json.load(open(path))
m['count_only']['functions'] = [{'id': 1, 'name': 'busy', 'calls': 5, 'moved': 'start'},
                                {'id': 2, 'name': 'liar', 'calls': -12, 'moved': 'start'}]
json.dump(m, open(path, 'w'))
PY
"$ADA" flame "$S" -o "$WORK/f.svg" 2>>"$WORK/err" || fail "ada flame failed"
"$ADA" flame "$S" --folded >/dev/null 2>"$WORK/folded.err" || fail "ada flame --folded failed"
grep -qF '9 count-only functions (5 calls' "$WORK/f.svg" ||
	fail "flame subtitle: $(grep -o '[0-9]* count-only functions ([0-9]* calls' "$WORK/f.svg")"
grep -qF '9 count-only functions (5 calls)' "$WORK/folded.err" || fail "folded: $(cat "$WORK/folded.err")"
for m in "$S"/pid_*/manifest.json; do mv "$WORK/manifest.keep" "$m"; done
# a session written before count_only.uncalled: read as before
python3 - "$S" <<'PY' || fail "could not plant the manifest"
import glob, json, sys
(path,) = glob.glob(sys.argv[1] + '/pid_*/manifest.json')
m = json.load(open(path))
del m['count_only']['uncalled']
json.dump(m, open(path, 'w'))
PY
"$ADA" report "$S" --json >"$WORK/rep.json" 2>>"$WORK/err" || fail "ada report --json failed"
"$ADA" flame "$S" -o "$WORK/f.svg" 2>>"$WORK/err" || fail "ada flame failed"
"$ADA" flame "$S" --folded >/dev/null 2>"$WORK/folded.err" || fail "ada flame --folded failed"
python3 - "$WORK/rep.json" "$WORK/rep.txt" "$WORK/f.svg" "$WORK/folded.err" 1 0 <<'PY' || fail "count-only without uncalled"
import json, sys
fns, uncalled = int(sys.argv[5]), int(sys.argv[6])
(p,) = json.load(open(sys.argv[1]))['processes']
assert p['count_only_uncalled'] == uncalled and len(p['count_only']) == 1, p['count_only_uncalled']
want = '%d count-only functions (5 calls' % fns
assert want in open(sys.argv[3]).read(), 'flame subtitle lacks %r' % want
assert '%d count-only functions (5 calls)' % fns in open(sys.argv[4]).read(), 'folded stderr'
PY
exit 0
