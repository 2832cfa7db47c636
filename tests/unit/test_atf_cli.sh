#!/bin/sh
# `ada validate` and `ada dump` on the golden session and on corrupted
# copies of it: exit codes and the message each problem must produce.
# usage: test_atf_cli.sh ADA GOLDEN_DIR WORK_DIR
set -u
ADA=$1
GOLDEN=$2
WORK=$3
fails=0
case $ADA in /*) ;; *) ADA=$(pwd)/$ADA ;; esac
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

# expect RC PATTERN CMD...: CMD exits RC and its stdout+stderr match PATTERN
expect() {
	want=$1 pat=$2
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -ne "$want" ] || ! printf '%s\n' "$out" | grep -q -- "$pat"; then
		echo "FAIL: $* -> rc $rc (want $want), output lacks '$pat':"
		printf '%s\n' "$out" | head -20
		fails=$((fails + 1))
	fi
}

# fresh copy of the golden session: prints its pid dir
copy() {
	rm -rf "$WORK/s"
	cp -r "$GOLDEN" "$WORK/s"
	echo "$WORK/s/pid_4242"
}

# poke FILE OFFSET OCTAL-BYTES: overwrite bytes in place
poke() {
	printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

P=$(copy)
expect 0 "0 errors, 0 warnings: valid" "$ADA" validate "$WORK/s"
expect 0 "valid" "$ADA" validate "$P/"
expect 0 "valid" sh -c "cd '$P' && '$ADA' validate ."
expect 0 "-> main (golden-demo)" "$ADA" dump "$WORK/s"

# dump: 12 events, every key, merge order, filters
n=$("$ADA" dump --format jsonl "$WORK/s" | grep -c '^{"ts":[0-9]*,"tid":[0-9]*,"thread":[0-9],"kind":"[a-z]*","depth":[0-9]*,"function_id":[0-9]*,"function":.*,"module":.*,"index_seq":[0-9]*,"detail_seq":')
[ "$n" = 12 ] || { echo "FAIL: jsonl has $n well-formed lines, want 12"; fails=$((fails + 1)); }
order=$("$ADA" dump --merge --format jsonl "$WORK/s" | sed 's/^{"ts":\([0-9]*\),"tid":\([0-9]*\).*/\1:\2/' | head -5 | tr '\n' ' ')
[ "$order" = "1000:4242 1100:4242 1100:4243 1200:4242 1200:4243 " ] || {
	echo "FAIL: merge order '$order'"; fails=$((fails + 1)); }
n=$("$ADA" dump --thread 1 --format jsonl "$WORK/s" | wc -l)
[ "$n" = 4 ] || { echo "FAIL: --thread 1 gave $n lines"; fails=$((fails + 1)); }
n=$("$ADA" dump --merge --from 1200 --to 1300 "$WORK/s" | grep -vc " | ") # detail lines apart
[ "$n" = 4 ] || { echo "FAIL: --from 1200 --to 1300 gave $n lines"; fails=$((fails + 1)); }
expect 0 '"stack_hex":"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"' "$ADA" dump --format jsonl "$WORK/s"
expect 0 '"function":null,"module":"/usr/lib/libgolden.so"' "$ADA" dump --format jsonl "$WORK/s"
expect 1 "no thread_9 directory" "$ADA" dump --thread 9 "$WORK/s"
expect 2 "bad value 'xml' for --format" "$ADA" dump --format xml "$WORK/s"

# bad paths
expect 2 "No such file or directory" "$ADA" validate "$WORK/nope"
expect 2 "No such file or directory" "$ADA" dump "$WORK/nope"
mkdir -p "$WORK/empty"
expect 2 "no traces found" "$ADA" validate "$WORK/empty"
expect 2 "no traces found" "$ADA" dump "$WORK/empty"
expect 2 "not a directory" "$ADA" validate "$P/thread_0/index.atf"

# flip a byte in the events -> CRC error at the footer's checksum
P=$(copy)
poke "$P/thread_1/index.atf" 72 '\377'
expect 1 "thread_1/index.atf: offset 196: CRC-32 mismatch" "$ADA" validate "$WORK/s"

# truncate -> count error
P=$(copy)
truncate -s 200 "$P/thread_1/index.atf"
expect 1 "thread_1/index.atf: offset 28: event count: header says 4 events.*truncated" "$ADA" validate "$WORK/s"
expect 1 "damaged; showing its 4 whole events" "$ADA" dump "$WORK/s"

# break a link: index event 2 of thread 0 -> detail 1 (whose index_seq is 4)
P=$(copy)
poke "$P/thread_0/index.atf" 156 '\001'
expect 1 "thread_0/index.atf: offset 156: link: event 2 -> detail_seq 1 whose index_seq is 4" "$ADA" validate "$WORK/s"
expect 1 "thread_0/detail.atf: offset 72: link: detail event 0 -> index_seq 2 whose detail_seq is 1" "$ADA" validate "$WORK/s"

# detail file gone while the flag says it exists
P=$(copy)
rm "$P/thread_0/detail.atf"
expect 1 "thread_0/index.atf: offset 8: has_detail_file flag is set" "$ADA" validate "$WORK/s"

# wrong magic
P=$(copy)
poke "$P/thread_0/index.atf" 0 'X'
expect 1 "thread_0/index.atf: offset 0: wrong magic \"XTI2\"" "$ADA" validate "$WORK/s"
expect 1 "not a readable ATF index file" "$ADA" dump "$WORK/s"

# huge bogus event_count
P=$(copy)
poke "$P/thread_1/index.atf" 28 '\377\377\377\377'
expect 1 "offset 28: event count: header says 4294967295 events" "$ADA" validate "$WORK/s"
expect 1 "damaged; showing its 4 whole events" "$ADA" dump "$WORK/s"

# garbage file, empty file, empty thread dir, bad detail walk
P=$(copy)
head -c 1000 /dev/zero | tr '\0' 'G' > "$P/thread_1/index.atf"
expect 1 "not an ATF index file" "$ADA" validate "$WORK/s"
: > "$P/thread_1/index.atf"
expect 1 "thread_1/index.atf: offset 0: file is 0 bytes, shorter than the 64-byte index header" "$ADA" validate "$WORK/s"
rm "$P/thread_1/index.atf"
expect 1 "thread_1: offset 0: thread directory holds no index.atf" "$ADA" validate "$WORK/s"
P=$(copy)
poke "$P/thread_0/detail.atf" 64 '\377\377'
expect 1 "thread_0/detail.atf: offset 64: detail event 0: total_length 65535 does not fit" "$ADA" validate "$WORK/s"

# retention generations: an older generation before index.atf
P=$(copy)
cp "$P/thread_1/index.atf" "$P/thread_1/index.g0.atf"
expect 1 "first timestamp 1100 is before the last timestamp 1700 of the previous generation" "$ADA" validate "$WORK/s"
n=$("$ADA" dump --thread 1 "$WORK/s" | wc -l)
[ "$n" = 8 ] || { echo "FAIL: two generations dumped $n lines, want 8"; fails=$((fails + 1)); }

# manifest missing or damaged: a warning, still valid; tampered symbols: a warning
P=$(copy)
rm "$P/manifest.json"
expect 0 "manifest.json: offset 0: warning: missing" "$ADA" validate "$WORK/s"
echo '{"format": "ada-manifest", ' > "$P/manifest.json"
expect 0 "warning: damaged" "$ADA" validate "$WORK/s"
sed -i 's/ foo$/ fooX/' "$P/modules/module_1.syms"
expect 0 "module_1.syms: offset 0: warning: table_xxh64" "$ADA" validate "$WORK/s"

# a finalized manifest that disagrees with the files: warnings
P=$(copy)
sed -i 's/"events": 4,/"events": 5,/' "$P/manifest.json"
expect 0 "manifest.json: offset 0: warning: says thread 1 has 5 events, its files hold 4" "$ADA" validate "$WORK/s"
rm -r "$P/thread_1"
expect 0 "warning: lists thread 1, but there is no thread_1 directory" "$ADA" validate "$WORK/s"

# a 70000-byte symbol name: lines are cut short but stay whole JSON objects
P=$(copy)
long=$(head -c 70000 /dev/zero | tr '\0' 'n')
sed -i "s/ hooked foo\$/ hooked $long/" "$P/modules/module_1.syms"
n=$("$ADA" dump --format jsonl "$WORK/s" 2>/dev/null | grep -c '"module":"/usr/bin/golden-demo","index_seq":[0-9]*,"detail_seq":.*}$')
[ "$n" = 10 ] || { echo "FAIL: long names broke $((10 - n)) jsonl lines"; fails=$((fails + 1)); }

# several pid dirs: each dumped with its pid
P=$(copy)
cp -r "$P" "$WORK/s/pid_7"
expect 0 '^{"pid":7,"ts":1000' "$ADA" dump --format jsonl "$WORK/s"
expect 0 "2 processes, 4 threads: 0 errors" "$ADA" validate "$WORK/s"

if [ "$fails" -ne 0 ]; then
	echo "$fails CLI checks failed"
	exit 1
fi
echo "all CLI checks passed"
