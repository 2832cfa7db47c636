#!/bin/sh
# The plan cache on arm64 (docs/hooks.md, "plan cache"): the second
# recording of an aarch64 program under qemu-user takes every module's
# verdicts from the cache its first wrote (agent.json plan_cache "hit"
# for each), as on x86_64. A cache entry's patch length is arm64's 4
# bytes (HOOK_ARCH_MIN_PATCH): with x86_64's minimum every entry was
# refused and every run missed.
#   arm64_cache.sh ADA AARCH64_PROGRAM WORK_DIR
set -u
ada=$1 prog=$2 work=$3
rm -rf "$work" && mkdir -p "$work/cache" || exit 1
for run in 1 2; do
	if ! XDG_CACHE_HOME="$work/cache" "$ada" record --out "$work/out$run" -- "$prog" \
		>"$work/run$run.txt" 2>&1; then
		echo "FAIL: run $run: ada record failed:"
		cat "$work/run$run.txt"
		exit 1
	fi
done
got=$(python3 - "$work/out1" "$work/out2" <<'PY'
import glob, json, sys
for d in sys.argv[1:]:
    f = glob.glob(d + "/session_*/pid_*/agent.json")
    mods = json.load(open(f[0]))["modules"] if f else []
    print(" ".join(sorted({m.get("plan_cache", "?") for m in mods})) or "none")
PY
)
if [ "$got" != "$(printf 'miss\nhit')" ]; then
	echo "FAIL: plan_cache of the two runs' modules: $(echo "$got" | tr '\n' '/') (want miss/hit)"
	exit 1
fi
rm -rf "$work"
echo PASS
