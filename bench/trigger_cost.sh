#!/bin/bash
# What a firing trigger costs the program (issue 32 item 3): the same
# program under `ada record`, with trigger windows being written and
# without, runs interleaved; prints each run's throughput by the
# program's own measure.
#   bench/trigger_cost.sh BUILD_DIR OUT_DIR [REPS=3]
# Two programs:
#   trigrate  tests/targets/t_trigrate_O2 (a busy loop calling mark_point()
#             every 100 ms; --trigger symbol=mark_point; `every 0`: the
#             same run without marks, so without windows; windows+mem:
#             with --window-mem-mb 512)
#   redis     redis-server + redis-benchmark SET (when installed), with
#             --trigger symbol=setCommand (each SET fires; the hold-off
#             merges them into windows written all along) against
#             --trigger symbol=debugCommand (never called: no window)
# Run it under `flock /work/bench.lock` on a shared machine.
set -u
B=$(cd "$1" && pwd); OUT=$2; REPS=${3:-3}
ADA=$B/ada
T=$B/tests/targets/t_trigrate_O2
SPIN=${SPIN:-2000}
mkdir -p "$OUT"
echo "# load: $(uptime)"

# What the windows made the drain do: the detail it persisted (one record
# per call and return inside a window: fires every 100 ms with a 5 s
# pre-roll merge into one window over the whole run, each record written
# once) and the drain's CPU, which the program's cores pay for.
volume() {
	grep -oE "([0-9]+ windows? persisted, [0-9]+ detail records persisted|drain CPU [0-9.]+ s)" \
		"$OUT/err" | tr '\n' ' ' | sed 's/^/  # /'
	echo " $(du -sm "$OUT/s" | cut -f1) MB on disk"
}

trigrate() { # every_ms [ada options] -> the program's rate
	local every=$1
	shift
	rm -rf "$OUT/s"
	"$ADA" record --out "$OUT/s" --trigger symbol=mark_point "$@" -- "$T" 3 "$every" "$SPIN" \
		2>"$OUT/err" | sed -E 's/.*rate=([0-9]+).*/\1/'
	grep -oE "waited [0-9]+ times \([0-9.]+ s" "$OUT/err" | head -1 | sed 's/^/  # /'
	volume
}

redis_run() { # trigger symbol -> SET requests per second
	local port=7391
	rm -rf "$OUT/s"
	"$ADA" record --out "$OUT/s" --max-disk-mb 0 --trigger "symbol=$1" -- redis-server --port $port \
		--save '' --appendonly no >/dev/null 2>"$OUT/err" &
	local rec=$!
	for _ in $(seq 200); do
		redis-cli -p $port ping >/dev/null 2>&1 && break
		sleep 0.05
	done
	redis-benchmark -p $port -t set -n "${REDIS_N:-30000}" -q 2>/dev/null | tr '\r' '\n' |
		grep -oE 'SET: [0-9.]+' | tail -1 | sed 's/SET: //'
	redis-cli -p $port shutdown nosave >/dev/null 2>&1
	wait $rec
	grep -oE "waited [0-9]+ times \([0-9.]+ s" "$OUT/err" | head -1 | sed 's/^/  # /'
	volume
}

for i in $(seq "$REPS"); do
	echo "trigrate untraced $("$T" 3 100 "$SPIN" | sed -E 's/.*rate=([0-9]+).*/\1/')"
	echo "trigrate no-windows $(trigrate 0)"
	echo "trigrate windows $(trigrate 100)"
	# window memory: the records wait in the recorder's memory, not the ring
	echo "trigrate windows+mem $(trigrate 100 --window-mem-mb 512)"
	if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
		echo "redis no-windows $(redis_run debugCommand)"
		echo "redis windows $(redis_run setCommand)"
	fi
done
rm -rf "$OUT/s"
echo "# load after: $(uptime)"
