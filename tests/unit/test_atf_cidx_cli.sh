#!/bin/sh
# `ada validate`, `ada dump` and `ada report` on a compact copy of the
# golden session (every index file rewritten as ATC1 by atf_to_cidx): the
# same output as on the ATF v2 original, and a damaged compact file named.
# usage: test_atf_cidx_cli.sh ADA ATF_TO_CIDX GOLDEN_DIR WORK_DIR
set -u
ADA=$1 CONV=$2 GOLDEN=$3 WORK=$4
fails=0
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
cp -r "$GOLDEN" "$WORK/v2"
cp -r "$GOLDEN" "$WORK/c"
for f in $(cd "$WORK/c" && find . -name 'index*.atf'); do
	"$CONV" "$WORK/v2/$f" "$WORK/c/$f" 4096 >/dev/null || { echo "FAIL: convert $f"; exit 1; }
	head -c 4 "$WORK/c/$f" | grep -q ATC1 || { echo "FAIL: $f is not ATC1"; exit 1; }
done
for cmd in "validate" "dump" "dump --format jsonl" "dump --merge" "report"; do
	# shellcheck disable=SC2086 # cmd is a command and its options
	"$ADA" $cmd "$WORK/v2" >"$WORK/out.v2" 2>&1
	rc2=$?
	# shellcheck disable=SC2086
	"$ADA" $cmd "$WORK/c" >"$WORK/out.c" 2>&1
	rcc=$?
	sed "s#$WORK/v2#D#g" "$WORK/out.v2" >"$WORK/a"
	sed "s#$WORK/c#D#g" "$WORK/out.c" >"$WORK/b"
	if [ $rc2 -ne $rcc ] || ! cmp -s "$WORK/a" "$WORK/b"; then
		echo "FAIL: ada $cmd differs on the compact copy (rc $rc2 vs $rcc):"
		diff "$WORK/a" "$WORK/b" | head -20
		fails=$((fails + 1))
	fi
done
# A byte changed in the events of the first block of thread_0 (header 64,
# block header 64, no open frames): validate names the block.
f=$WORK/c/pid_4242/thread_0/index.atf
printf '\377' | dd of="$f" bs=1 seek=130 conv=notrunc status=none
rc=0
out=$("$ADA" validate "$WORK/c" 2>&1) || rc=$?
if [ $rc -eq 0 ] || ! printf '%s\n' "$out" | grep -q "block 0 .*does not decode"; then
	echo "FAIL: a damaged compact block is not reported:"
	printf '%s\n' "$out" | head -10
	fails=$((fails + 1))
fi
[ $fails -eq 0 ] && echo "compact copy: validate, dump, report as on ATF v2"
exit $fails
