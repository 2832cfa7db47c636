/*
 * emit_guard: the producer hot path alone, for bench/callgrind_guard.sh
 * (mode "emit"). Creates a private arena under /dev/shm (or $TMPDIR), then
 * emits N CALL/RETURN pairs through ada_emit_call()/ada_emit_return() in
 * bursts of EG_BURST events, draining the ring in between from the same
 * thread so it never fills (the wait path stays out of the measurement).
 * Only emit_guard_burst() is collected by callgrind (--toggle-collect), and
 * the guard differences two values of N, so set-up, the first-event slot
 * claim and the drain cost nothing in the result.
 * Usage: emit_guard PAIRS. Prints `events=E` on stdout.
 * Single-threaded test program; not part of ada.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ring.h"

#define EG_BURST 4096u /* pairs per burst; the ring holds 4x the events */

volatile uint64_t emit_guard_sink;

/* The measured region: exactly 2 * pairs events, nothing else but the loop. */
__attribute__((noinline)) void emit_guard_burst(uint32_t pairs, uint64_t fn)
{
	for (uint32_t i = 0; i < pairs; i++) {
		ada_emit_call(fn + (i & 7));
		ada_emit_return(fn + (i & 7));
	}
}

__attribute__((noinline)) static uint64_t emit_guard_drain(struct ada_arena *a)
{
	const struct atf_index_event *ev;
	uint64_t n = 0;
	size_t k;
	ada_arena_drain_heartbeat(a);
	while ((k = ada_index_ring_peek(a, ada_producer_tls.slot, &ev)) > 0) {
		emit_guard_sink += ev[k - 1].timestamp_ns;
		ada_index_ring_release(a, ada_producer_tls.slot, k);
		n += k;
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	uint64_t pairs = strtoull(argv[1], NULL, 0), drained = 0;
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	char path[256];
	snprintf(path, sizeof(path), "%s/ada-emit-guard-%d.ring", dir, (int)getpid());
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 1;
	cfg.index_events = 4 * 2 * EG_BURST;
	struct ada_arena *a;
	int rc = ada_arena_create(path, &cfg, &a, NULL);
	if (rc != 0) {
		fprintf(stderr, "emit_guard: cannot create arena %s: %d\n", path, rc);
		return 1;
	}
	unlink(path);
	ada_producer_set_arena(a);
	for (uint64_t done = 0; done < pairs; done += EG_BURST) {
		uint32_t n = pairs - done < EG_BURST ? (uint32_t)(pairs - done) : EG_BURST;
		emit_guard_burst(n, (1ull << 32) | 1);
		drained += emit_guard_drain(a);
	}
	printf("events=%llu\n", (unsigned long long)drained);
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
	return drained == 2 * pairs ? 0 : 1;
}
