/*
 * A target that breaks the ring protocol on purpose (tests/integration/
 * arena_trust_test.sh): it links the producer API, emits N good events on
 * a worker thread, waits until the recorder consumed them (bounded), then
 * does one kind of damage to its own arena and stops emitting on that
 * thread, so the recorder must notice it at the latest when it finishes.
 *
 * usage: t_scribble MODE N
 *   head_back  the ring's head goes behind what was consumed
 *   decided    head_back under --detail always: then waits (bounded)
 *              until the drain marks the quarantined slot's detail ring
 *              decided for good (UINT64_MAX: a thread waiting for detail
 *              room must not wait out the drain timeout); exit 9 if never
 *   head_far   the ring's head jumps far past one ring's worth
 *   tail_fwd   the ring's tail (the recorder's) moves forward
 *   random     random bytes over the slot descriptors and the control
 *              block's process state, flags and counters
 *   garbage    N good events, then 64 events of random bytes published
 *   truncate   the arena file is cut to its control block
 *   fake       drops a valid-looking arena 1.ring (for pid 1) into the
 *              arena directory
 *   churn      N short-lived threads, each one event, one after another
 *   lag        emits until the drain stops answering (the test SIGKILLs
 *              the recorder after READY), counts its drain_lag drops,
 *              records exit status 3 in the arena and exits with 3
 * Prints "READY" on stdout once the damage is done (lag: once N events
 * were emitted). Exit status 0 (lag: 3). With T_SCRIBBLE_HOLD set it then
 * ignores SIGTERM and sleeps (up to 2 minutes) until the test kills it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring_internal.h"

static uint64_t n_events;
static const char *mode;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill_random(void *p, size_t n)
{
	uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd();
}

/* Waits (bounded: a guard against hangs, not a timing assertion) until the
 * recorder consumed everything this thread published. */
static void wait_consumed(struct ada_index_hdr *h)
{
	for (int i = 0; i < 20000; i++) {
		if (atomic_load(&h->tail) == atomic_load(&h->head))
			return;
		usleep(1000);
	}
	fprintf(stderr, "t_scribble: the recorder never consumed the ring\n");
	exit(5);
}

/* Waits (bounded, as wait_consumed) until the drain, having quarantined
 * the slot, says its detail ring needs no more waiting. */
static void wait_decided_for_good(struct ada_arena *a, uint32_t slot)
{
	struct ada_detail_hdr *dh = ring_detail_hdr(a, slot);
	for (int i = 0; i < 20000; i++) {
		if (atomic_load(&dh->decided) == UINT64_MAX)
			return;
		usleep(1000);
	}
	fprintf(stderr, "t_scribble: the quarantined slot's detail ring was never decided: %llu\n",
	        (unsigned long long)atomic_load(&dh->decided));
	exit(9);
}

static void emit_good(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		ada_emit((1ull << 32) | (i & 0xffffffffu),
		         i & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
}

static void damage(struct ada_arena *a, struct ada_producer *p)
{
	struct ada_index_hdr *h = ring_index_hdr(a, p->slot);
	uint64_t cap = a->cfg.index_events;
	if (!strcmp(mode, "head_back") || !strcmp(mode, "decided")) {
		emit_good(10); /* published, maybe not consumed yet */
		atomic_store(&h->head, atomic_load(&h->tail) - 5);
	} else if (!strcmp(mode, "head_far")) {
		atomic_store(&h->head, atomic_load(&h->head) + cap * 1000 + 7);
	} else if (!strcmp(mode, "tail_fwd")) {
		emit_good(10);
		atomic_store(&h->tail, atomic_load(&h->tail) + 3);
	} else if (!strcmp(mode, "random")) {
		fill_random(a->desc, sizeof(*a->desc) * a->cfg.max_threads);
		fill_random((void *)&a->ctl->process_state, 12);
		fill_random((void *)a->ctl->drops, sizeof(a->ctl->drops));
		fill_random((void *)h->drops, sizeof(h->drops));
	} else if (!strcmp(mode, "garbage")) {
		for (int i = 0; i < 64; i++)
			fill_random(&p->events[(p->head + (uint64_t)i) & p->mask],
			            sizeof(struct atf_index_event));
		p->head += 64;
		atomic_store_explicit(p->head_pub, p->head, memory_order_release);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	emit_good(n_events);
	struct ada_producer *p = &ada_producer_tls;
	struct ada_arena *a = ada_producer_arena();
	if (!p->events || !a)
		exit(6);
	wait_consumed(ring_index_hdr(a, p->slot));
	damage(a, p);
	if (!strcmp(mode, "decided"))
		wait_decided_for_good(a, p->slot);
	return NULL;
}

static void *one_event(void *arg)
{
	(void)arg;
	ada_emit(2ull << 32, ATF_EVENT_CALL, 1);
	return NULL;
}

static int run_truncate(void)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%d.ring", getenv("ADA_ARENA_DIR"), (int)getpid());
	int fd = open(path, O_RDWR);
	struct ada_arena *a = ada_producer_arena();
	if (fd < 0 || ftruncate(fd, (off_t)a->geo.slots_offset) != 0) {
		perror("t_scribble: truncate");
		return 7;
	}
	close(fd);
	return 0;
}

/* A copy of a valid arena that says it belongs to pid 1. */
static int run_fake(void)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/1.ring", getenv("ADA_ARENA_DIR"));
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 1;
	cfg.index_events = 64;
	struct ada_arena *f = NULL;
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s/fake.tmp", getenv("ADA_ARENA_DIR"));
	if (ada_arena_create(tmp, &cfg, &f, NULL) != 0)
		return 8;
	f->ctl->pid = 1;
	ada_arena_close(f);
	return rename(tmp, path) == 0 ? 0 : 8;
}

static int run_lag(void)
{
	ada_producer_set_drain_timeout_ms(50);
	emit_good(n_events);
	printf("READY\n");
	fflush(stdout);
	struct ada_arena *a = ada_producer_arena();
	struct ada_index_hdr *h = ring_index_hdr(a, ada_producer_tls.slot);
	/* The test kills the recorder now: emit until drops show (bounded). */
	for (uint64_t i = 0; i < (1ull << 32); i++) {
		emit_good(1024);
		if (atomic_load(&h->drops[ADA_LANE_INDEX][ADA_DROP_DRAIN_LAG]) > 1000)
			break;
	}
	ada_arena_set_exited(a, 3);
	return 3;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: t_scribble MODE N\n");
		return 2;
	}
	mode = argv[1];
	n_events = strtoull(argv[2], NULL, 10);
	if (ada_producer_init_from_env() != 0)
		return 3;
	if (!strcmp(mode, "lag"))
		return run_lag();
	if (!strcmp(mode, "churn")) {
		for (uint64_t i = 0; i < n_events; i++) {
			pthread_t t;
			if (pthread_create(&t, NULL, one_event, NULL) == 0)
				pthread_join(t, NULL);
		}
	} else {
		pthread_t t;
		pthread_create(&t, NULL, worker, NULL);
		pthread_join(t, NULL);
	}
	int rc = 0;
	if (!strcmp(mode, "truncate")) {
		emit_good(1); /* the main thread: claims a slot, then stops */
		wait_consumed(ring_index_hdr(ada_producer_arena(), ada_producer_tls.slot));
		emit_good(5);
		rc = run_truncate();
	} else if (!strcmp(mode, "fake")) {
		rc = run_fake();
	}
	printf("READY\n");
	fflush(stdout);
	if (getenv("T_SCRIBBLE_HOLD")) {
		/* Stays alive, deaf to SIGTERM, until the test kills it. */
		signal(SIGTERM, SIG_IGN);
		for (int i = 0; i < 120; i++)
			sleep(1);
	}
	return rc;
}
