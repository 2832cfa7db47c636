/*
 * ring_bench: the producer's cost per event through the shared-memory index
 * ring, with a consumer thread draining concurrently (as the recorder's
 * drain does: batches, 50 us naps when there was little to do) into a
 * buffer, so the ring rarely fills (the producers wait, never drop).
 *
 * Prints, for one producer thread and for two: the median over RUNS of
 * ns/event (TSC read included; per producer thread, measured in the
 * thread's CPU time so preemption by other load does not count),
 * wall-clock events/s in total, and the consumer's CPU per event copied;
 * plus baselines: rdtsc alone, and a plain 32-byte store. Also the drops and
 * the number of times producers found the ring full (should be 0 / small).
 *
 * The drain's floor: one producer flat out again, the consumer napping as
 * the recorder's drain does at most (500 us) and doing nothing but copy
 * each event out. The drain does that and more (TSC conversion, checks,
 * CRC, the trigger engine, the writes), so its CPU per event cannot go
 * below what this consumer spends reading lines the producer's core just
 * wrote (docs/benchmarks.md, "The drain's floor").
 *
 * Usage: ring_bench [events_per_run_per_thread] (default 20 M)
 * Not a test: timings vary with the machine and its load.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#define RUNS 7
#define SINK_EVENTS (1u << 16)
#define NAP_NS 50000l /* the consumer's nap below 8192 events a pass */

struct bench {
	struct ada_arena *a;
	uint64_t events; /* per producer per run */
	_Atomic int stop;
	_Atomic uint64_t consumed;
	uint32_t fill_max;            /* fullest any ring was seen by the consumer, % */
	struct atf_index_event *sink; /* the consumer's copy target */
	pthread_barrier_t go;
	int producers; /* this run's */
	long nap_ns;   /* this run's consumer nap */
	double ns_per_event[2];
	double consumer_ns_per_event; /* this run's consumer CPU / events copied */
};

static uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Per-thread CPU time: on a shared 2-core machine, time spent preempted by
 * other work must not count as the producer's cost. */
static uint64_t bench_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void bench_pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set); /* best effort */
}

static void *bench_consumer(void *arg)
{
	struct bench *b = arg;
	uint32_t n = ada_arena_max_threads(b->a);
	uint64_t at = 0;
	if (b->producers == 1)
		bench_pin(1); /* one core each; with two producers it shares */
	uint64_t cpu0 = bench_cpu_ns();
	while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
		uint64_t got = 0;
		ada_arena_drain_heartbeat(b->a);
		for (uint32_t s = 0; s < n; s++) {
			const struct atf_index_event *e;
			size_t k;
			uint32_t fill = ada_arena_slot_fill_pct(b->a, s);
			if (fill > b->fill_max)
				b->fill_max = fill;
			while ((k = ada_index_ring_peek(b->a, s, &e)) > 0) {
				if (k > SINK_EVENTS - at % SINK_EVENTS)
					k = SINK_EVENTS - at % SINK_EVENTS;
				memcpy(&b->sink[at % SINK_EVENTS], e, k * sizeof(*e));
				ada_index_ring_release(b->a, s, k);
				at += k;
				got += k;
			}
		}
		/* Like the recorder's drain: work in batches and sleep between
		 * them rather than chase the producer's cache lines event by
		 * event (a 2 Mi-event ring holds 40 ms at 50 M events/s). */
		if (got < 8192) {
			struct timespec nap = {0, b->nap_ns};
			nanosleep(&nap, NULL);
		}
	}
	b->consumer_ns_per_event = at ? (double)(bench_cpu_ns() - cpu0) / (double)at : 0;
	atomic_store(&b->consumed, at);
	return NULL;
}

struct producer_arg {
	struct bench *b;
	int idx;
};

/* The measured loop: a CALL/RETURN pair per iteration, as a traced call. */
__attribute__((noinline)) static void bench_emit_loop(uint64_t pairs, uint64_t fn)
{
	for (uint64_t i = 0; i < pairs; i++) {
		ada_emit_call(fn + (i & 15));
		ada_emit_return(fn + (i & 15));
	}
}

static void *bench_producer(void *arg)
{
	struct producer_arg *p = arg;
	bench_pin(p->idx);
	ada_emit_call(0); /* claim the slot outside the measurement */
	ada_emit_return(0);
	pthread_barrier_wait(&p->b->go);
	uint64_t t0 = bench_cpu_ns();
	bench_emit_loop(p->b->events / 2, (uint64_t)(p->idx + 1) << 32);
	uint64_t t1 = bench_cpu_ns();
	p->b->ns_per_event[p->idx] = (double)(t1 - t0) / (double)p->b->events;
	return NULL;
}

static const char *bench_shm_dir(void)
{
	return access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One run with `producers` threads; returns wall ns, fills per-thread ns/ev. */
static uint64_t bench_run(struct bench *b, int producers)
{
	pthread_t cons, prod[2];
	struct producer_arg args[2];
	atomic_store(&b->stop, 0);
	b->producers = producers;
	pthread_barrier_init(&b->go, NULL, (unsigned)producers + 1);
	pthread_create(&cons, NULL, bench_consumer, b);
	for (int i = 0; i < producers; i++) {
		args[i] = (struct producer_arg){b, i};
		pthread_create(&prod[i], NULL, bench_producer, &args[i]);
	}
	pthread_barrier_wait(&b->go);
	uint64_t t0 = bench_now_ns();
	for (int i = 0; i < producers; i++)
		pthread_join(prod[i], NULL);
	uint64_t wall = bench_now_ns() - t0;
	atomic_store(&b->stop, 1);
	pthread_join(cons, NULL);
	pthread_barrier_destroy(&b->go);
	/* Free the exited slots so the next run's threads find room. */
	for (uint32_t s = 0; s < ada_arena_max_threads(b->a); s++) {
		const struct atf_index_event *e;
		size_t k;
		while ((k = ada_index_ring_peek(b->a, s, &e)) > 0)
			ada_index_ring_release(b->a, s, k);
		ada_arena_slot_free(b->a, s);
	}
	return wall;
}

struct bench_medians {
	double producer_ns, mev_per_s, consumer_ns;
};

static struct bench_medians bench_runs(struct bench *b, int producers)
{
	double per[RUNS * 2], rate[RUNS], cons[RUNS];
	b->fill_max = 0;
	for (int r = 0; r < RUNS; r++) {
		uint64_t wall = bench_run(b, producers);
		for (int i = 0; i < producers; i++)
			per[r * producers + i] = b->ns_per_event[i];
		rate[r] = (double)b->events * producers / ((double)wall / 1e9);
		cons[r] = b->consumer_ns_per_event;
	}
	return (struct bench_medians){median(per, RUNS * producers), median(rate, RUNS) / 1e6,
	                              median(cons, RUNS)};
}

static void bench_report(struct bench *b, int producers)
{
	struct bench_medians m = bench_runs(b, producers);
	printf("%d producer%s: median %.2f ns/event (thread CPU time), %.1f M events/s "
	       "wall-clock in total (%d runs of %llu events per thread; fullest ring %u%%); "
	       "consumer %.2f ns/event copying\n",
	       producers, producers > 1 ? "s" : " ", m.producer_ns, m.mev_per_s, RUNS,
	       (unsigned long long)b->events, b->fill_max, m.consumer_ns);
}

/* The drain's floor (top of file): ada record's default ring (64 Ki
 * events a thread), one producer flat out, the consumer copying. At this
 * rate the drain never naps (a pass takes more than DRAIN_NAP_BELOW
 * events); the consumer's 50 us naps leave it a few thousand events
 * behind, as close as the drain reads. */
static void bench_floor(struct bench *b)
{
	struct ada_arena *big = b->a;
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 3;
	cfg.index_events = 1u << 16;
	char path[256];
	snprintf(path, sizeof(path), "%s/ada-ring-bench-floor-%d.ring", bench_shm_dir(),
	         (int)getpid());
	if (ada_arena_create(path, &cfg, &b->a, NULL) != 0) {
		fprintf(stderr, "ring_bench: cannot create an arena at %s\n", path);
		b->a = big;
		return;
	}
	unlink(path); /* the mapping stays */
	ada_producer_set_arena(b->a);
	struct bench_medians m = bench_runs(b, 1);
	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT], lost = 0;
	ada_arena_drop_totals(b->a, drops);
	for (int why = 0; why < ADA_DROP_REASON_COUNT; why++)
		lost += drops[0][why];
	printf("drain floor: ring of %llu events, 1 producer %.2f ns/event, %.1f M events/s; "
	       "consumer %.2f ns/event copying (fullest ring %u%%, drops %llu)\n",
	       (unsigned long long)cfg.index_events, m.producer_ns, m.mev_per_s, m.consumer_ns,
	       b->fill_max, (unsigned long long)lost);
	ada_producer_set_arena(NULL);
	ada_arena_close(b->a);
	b->a = big;
	ada_producer_set_arena(big);
}

static volatile uint64_t bench_sink;

/* The emit cost alone: one thread, bursts that fit in the ring, drained
 * between bursts outside the timed region (no consumer on another core
 * pulling the producer's cache lines away, never a full ring). */
static void bench_isolated(struct bench *b)
{
	const uint64_t burst = 1u << 20; /* events; the ring holds 2 Mi */
	double v[RUNS];
	ada_emit_call(0); /* claim a slot */
	ada_emit_return(0);
	uint32_t slot = ada_producer_tls.slot;
	for (int r = 0; r < RUNS; r++) {
		uint64_t cpu = 0;
		for (uint64_t done = 0; done < b->events; done += burst) {
			const struct atf_index_event *e;
			size_t k;
			while ((k = ada_index_ring_peek(b->a, slot, &e)) > 0)
				ada_index_ring_release(b->a, slot, k);
			uint64_t t0 = bench_cpu_ns();
			bench_emit_loop(burst / 2, 1ull << 32);
			cpu += bench_cpu_ns() - t0;
		}
		v[r] = (double)cpu / (double)((b->events + burst - 1) / burst * burst);
	}
	printf("1 producer, consumer idle: median %.2f ns/event (thread CPU time)\n",
	       median(v, RUNS));
	const struct atf_index_event *e;
	size_t k;
	while ((k = ada_index_ring_peek(b->a, slot, &e)) > 0)
		ada_index_ring_release(b->a, slot, k);
	ada_producer_reset_thread(); /* the slot stays ACTIVE: main never exits */
}

static void bench_baselines(void)
{
	struct ada_producer fake = {0};
	double v[RUNS];
	const uint64_t n = 20000000;
	for (int r = 0; r < RUNS; r++) {
		uint64_t t0 = bench_cpu_ns(), acc = 0;
		for (uint64_t i = 0; i < n; i++)
			acc += ada_timestamp_raw(&fake);
		bench_sink = acc;
		v[r] = (double)(bench_cpu_ns() - t0) / (double)n;
	}
	printf("baseline: rdtsc alone %.2f ns\n", median(v, RUNS));
	static struct atf_index_event buf[4096];
	for (int r = 0; r < RUNS; r++) {
		uint64_t t0 = bench_cpu_ns();
		for (uint64_t i = 0; i < n; i++) {
			struct atf_index_event *e = &buf[i & 4095];
			e->timestamp_ns = i;
			e->function_id = i;
			e->thread_id = 1;
			e->event_kind = 1;
			e->call_depth = 1;
			e->detail_seq = ATF_NO_DETAIL;
			__asm__ volatile("" ::: "memory"); /* keep each store */
		}
		v[r] = (double)(bench_cpu_ns() - t0) / (double)n;
	}
	printf("baseline: plain 32-byte event store %.2f ns\n", median(v, RUNS));
}

int main(int argc, char **argv)
{
	struct bench b = {.events = argc > 1 ? strtoull(argv[1], NULL, 0) : 20000000ull,
	                  .nap_ns = NAP_NS};
	char path[256];
	snprintf(path, sizeof(path), "%s/ada-ring-bench-%d.ring", bench_shm_dir(), (int)getpid());
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 3;
	cfg.index_events = 1u << 21; /* 64 MiB a thread: room for ~40 ms at 50 M/s */
	bool mlock_failed = false;
	if (ada_arena_create(path, &cfg, &b.a, &mlock_failed) != 0) {
		fprintf(stderr, "ring_bench: cannot create an arena at %s\n", path);
		return 1;
	}
	unlink(path); /* the mapping stays */
	b.sink = calloc(SINK_EVENTS, sizeof(*b.sink));
	ada_producer_set_arena(b.a);
	printf("arena: %u slots x %llu events, mlock %s, flags 0x%x\n", cfg.max_threads,
	       (unsigned long long)cfg.index_events, mlock_failed ? "refused" : "ok",
	       ada_arena_flags(b.a));
	bench_baselines();
	bench_isolated(&b);
	bench_report(&b, 1);
	bench_report(&b, 2);
	bench_floor(&b);
	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(b.a, drops);
	printf("drops: ring_full %llu drain_lag %llu no_slot %llu\n",
	       (unsigned long long)drops[0][ADA_DROP_RING_FULL],
	       (unsigned long long)drops[0][ADA_DROP_DRAIN_LAG],
	       (unsigned long long)drops[0][ADA_DROP_NO_SLOT]);
	ada_producer_set_arena(NULL);
	ada_arena_close(b.a);
	free(b.sink);
	return 0;
}
