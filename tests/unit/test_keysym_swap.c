/*
 * The key-symbol swap (src/keysym/region.c) against threads that use the
 * sets: 8 threads emit events into an arena (as the hook handlers do: an
 * event published, then the current set loaded with acquire and tested)
 * while a writer publishes 1 000 sets into the arena's key-symbol area,
 * reusing ranges only after their grace periods, and a consumer drains
 * every ring. Each set names its version: a reader checks that what it
 * read is one whole set (magic and version before and after, the member
 * of that version in, the next version's out), so a range reused under a
 * reader, or a torn publish, fails the test; every event must arrive once,
 * in order. Built under ThreadSanitizer too: the release/acquire pairs of
 * keysym_cur and of the ring heads are what the reuse relies on.
 * Second case: a thread blocked in a system call (read on a pipe) must not
 * hold reclamation up.
 */
#define _GNU_SOURCE /* gettid */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "keysym.h"
#include "keysym_internal.h"
#include "ring.h"

#define READERS 8
#define SLOTS 12
#define SWAPS 1000
#define AREA_LOG2 16

struct shared {
	struct ada_arena *a;
	uint8_t *area;
	uint64_t mask;
	_Atomic uint64_t *cur;
	_Atomic int stop;         /* writer done: readers finish */
	_Atomic int readers_done; /* consumer stops after them and an empty pass */
	_Atomic uint64_t produced;
	_Atomic uint64_t checked; /* membership checks made on a published set */
	uint64_t got[READERS + 1];
	_Atomic uint32_t tids[READERS + 1]; /* every thread that tests membership */
	char error[200];                    /* first complaint of any thread; checked in main */
	pthread_mutex_t lock;
};

static void complain(struct shared *s, const char *msg, uint64_t a, uint64_t b)
{
	pthread_mutex_lock(&s->lock);
	if (!s->error[0])
		snprintf(s->error, sizeof(s->error), "%s (%llu, %llu)", msg, (unsigned long long)a,
		         (unsigned long long)b);
	pthread_mutex_unlock(&s->lock);
}

static uint32_t member_of(uint64_t version)
{
	return (uint32_t)((version * 7919) % 200000);
}

/* One use of the current set, as handlers_key_member() does. */
static void reader_check(struct shared *s)
{
	/* Acquire: pairs with the release store in ada_keysym_region_publish(). */
	uint64_t cur = atomic_load_explicit(s->cur, memory_order_acquire);
	if (cur == ADA_KEYSYM_CUR_LOCAL)
		return;
	uint64_t vo = offsetof(struct ada_keysym_header, version);
	uint64_t m0 = ks_rd64(s->area, s->mask, cur), v0 = ks_rd64(s->area, s->mask, cur + vo);
	bool in = ada_keysym_contains_at(s->area, s->mask, cur, 1ull << 32 | member_of(v0));
	bool next = ada_keysym_contains_at(s->area, s->mask, cur, 1ull << 32 | member_of(v0 + 1));
	uint64_t m1 = ks_rd64(s->area, s->mask, cur), v1 = ks_rd64(s->area, s->mask, cur + vo);
	if (m0 != ADA_KEYSYM_MAGIC || m1 != m0 || v1 != v0)
		complain(s, "a set changed under its reader (magic, version)", m1, v1);
	else if (!in || next)
		complain(s, "a set answered for another version (version, in)", v0, in);
	atomic_fetch_add_explicit(&s->checked, 1, memory_order_relaxed);
}

static void *reader_main(void *arg)
{
	struct shared *s = arg;
	static _Atomic uint32_t ids;
	uint64_t me = atomic_fetch_add(&ids, 1) % READERS, i = 0;
	atomic_store(&s->tids[me], (uint32_t)gettid());
	/* The handlers' order: the membership test, then the event. */
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed) && !s->error[0]) {
		reader_check(s);
		ada_emit_call(me << 40 | i++);
	}
	atomic_fetch_add(&s->produced, i);
	atomic_fetch_add(&s->readers_done, 1);
	return NULL;
}

static uint64_t consume_slot(struct shared *s, uint32_t slot)
{
	const struct atf_index_event *e;
	size_t n = ada_index_ring_peek(s->a, slot, &e);
	for (size_t i = 0; i < n; i++) {
		uint64_t who = e[i].function_id >> 40, seq = e[i].function_id & ((1ull << 40) - 1);
		/* a producer's wait for room, marked (docs/format.md) */
		if (e[i].call_depth == ADA_WAIT_MARKER_BEGIN ||
		    e[i].call_depth == ADA_WAIT_MARKER_END)
			continue;
		if (who > READERS || seq != s->got[who]) {
			complain(s, "an event lost or twice (thread, seq)", who, seq);
			break;
		}
		s->got[who]++;
	}
	ada_index_ring_release(s->a, slot, n);
	return n;
}

static void *consumer_main(void *arg)
{
	struct shared *s = arg;
	for (;;) {
		int done = atomic_load(&s->readers_done) == READERS;
		uint64_t round = 0;
		ada_arena_drain_heartbeat(s->a);
		for (uint32_t slot = 0; slot < SLOTS; slot++)
			round += consume_slot(s, slot);
		if (done && round == 0)
			return NULL; /* every reader finished before this empty pass */
		if (round == 0)
			sched_yield();
	}
}

/* The target's threads: every slot held now (ring.h slot info). */
static int threads_of(void *ctx, struct ada_keysym_thread *out, size_t cap)
{
	struct shared *s = ctx;
	size_t n = 0;
	for (uint32_t slot = 0; slot < SLOTS && n < cap; slot++) {
		struct ada_slot_info si;
		ada_arena_slot_info(s->a, slot, &si);
		if (si.state == ADA_SLOT_FREE)
			continue;
		out[n++] = (struct ada_keysym_thread){(uint64_t)slot << 32 | si.generation, si.head,
		                                      si.tid, 0};
	}
	/* Threads without a slot yet (as /proc/PID/task gives them in the
	 * recorder): they may test membership before their first event. */
	size_t slots = n;
	for (int i = 0; i <= READERS && n < cap; i++) {
		uint32_t tid = atomic_load(&s->tids[i]);
		bool has = false;
		for (size_t j = 0; j < slots; j++)
			has |= out[j].tid == tid;
		if (tid && !has)
			out[n++] = (struct ada_keysym_thread){ADA_KEYSYM_NO_SLOT | tid, 0, tid, 0};
	}
	return (int)n;
}

static void build_version(uint64_t v, uint8_t **blob, size_t *len)
{
	static const uint32_t kinds[] = {ADA_KEYSYM_BITSET, ADA_KEYSYM_HASH, ADA_KEYSYM_ROARING};
	struct ada_keysym_builder *b;
	assert_int_equal(ada_keysym_builder_new(&b), 0);
	ks_builder_force(b, kinds[v % 3]);
	uint32_t m = member_of(v);
	assert_int_equal(ada_keysym_builder_module(b, 1, 200000), 0);
	assert_int_equal(ada_keysym_builder_add(b, 1, &m, 1), 0);
	*len = ada_keysym_builder_size(b);
	*blob = aligned_alloc(64, *len);
	assert_int_equal(ada_keysym_builder_write(b, v, *blob, *len, NULL), 0);
	assert_int_equal(ada_keysym_validate(*blob, *len, NULL, NULL), 0);
	ada_keysym_builder_free(b);
}

/* Publishes, retrying while the area is full of sets still being read
 * (readers move on as they emit; bounded, no clock). */
static void publish(struct ada_keysym_region *r, uint64_t v, const struct ada_keysym_target *t)
{
	uint8_t *blob;
	size_t len;
	char why[256];
	build_version(v, &blob, &len);
	int err = -EBUSY;
	for (long tries = 0; err == -EBUSY && tries < 100000000; tries++) {
		err = ada_keysym_region_publish(r, blob, len, t, why, sizeof(why));
		if (err == -EBUSY)
			sched_yield();
	}
	if (err)
		fail_msg("publish of version %llu: %s", (unsigned long long)v, why);
	free(blob);
}

static struct shared *setup(void)
{
	static struct shared s;
	memset(&s, 0, sizeof(s));
	pthread_mutex_init(&s.lock, NULL);
	char dir[] = "/dev/shm/ada-ks-swap-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/arena.ring", dir);
	struct ada_arena_config c;
	ada_arena_config_default(&c);
	c.max_threads = SLOTS;
	c.index_events = 1 << 12;
	c.keysym_log2 = AREA_LOG2;
	assert_int_equal(ada_arena_create(path, &c, &s.a, NULL), 0);
	unlink(path); /* the mapping is all we need */
	rmdir(dir);
	uint64_t bytes;
	s.area = ada_arena_keysym_area(s.a, &bytes);
	assert_non_null(s.area);
	assert_int_equal(bytes, 1u << AREA_LOG2);
	s.mask = bytes - 1;
	s.cur = ada_arena_keysym_cur(s.a);
	assert_int_equal(atomic_load(s.cur), ADA_KEYSYM_CUR_LOCAL);
	ada_producer_set_arena(s.a);
	return &s;
}

static void teardown(struct shared *s)
{
	ada_producer_set_arena(NULL);
	ada_arena_close(s->a);
	pthread_mutex_destroy(&s->lock);
}

static void test_swap_under_readers(void **state)
{
	(void)state;
	struct shared *s = setup();
	int expedited =
	    syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
	/* pid 0: only events and slots end a grace period here (a reader in
	 * a system call is the second test's). */
	struct ada_keysym_target t = {0, expedited, SLOTS + READERS + 1, threads_of, s};
	struct ada_keysym_region *r;
	assert_int_equal(ada_keysym_region_new(s->area, s->mask + 1, s->cur, &r), 0);
	pthread_t rd[READERS], cons;
	assert_int_equal(pthread_create(&cons, NULL, consumer_main, s), 0);
	for (int i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&rd[i], NULL, reader_main, s), 0);
	for (uint64_t v = 1; v <= SWAPS && !s->error[0]; v++)
		publish(r, v, &t);
	atomic_store(&s->stop, 1);
	for (int i = 0; i < READERS; i++)
		pthread_join(rd[i], NULL);
	pthread_join(cons, NULL);
	if (s->error[0])
		fail_msg("%s", s->error);
	uint64_t consumed = 0;
	for (int i = 0; i < READERS; i++)
		consumed += s->got[i];
	assert_int_equal(consumed, atomic_load(&s->produced));
	struct ada_keysym_region_stats st;
	ada_keysym_region_stats(r, &st);
	print_message("%llu swaps, %llu ranges reused, %llu checks by readers, %llu events\n",
	              (unsigned long long)st.published, (unsigned long long)st.reclaimed,
	              (unsigned long long)atomic_load(&s->checked), (unsigned long long)consumed);
	assert_int_equal(st.published, SWAPS);
	/* 1 000 sets of at least 128 bytes through 64 KiB: ranges were reused. */
	assert_true(st.reclaimed > 0);
	assert_int_equal(st.barrier_failed, 0);
	ada_keysym_region_free(r);
	teardown(s);
}

struct blocked {
	struct shared *s;
	int ready[2], go[2];
};

/* Emits once and uses the set, says so, then blocks in read() for as long
 * as the test likes. */
static void *blocked_main(void *arg)
{
	struct blocked *b = arg;
	char c = 0;
	atomic_store(&b->s->tids[READERS], (uint32_t)gettid());
	reader_check(b->s);
	ada_emit_call((uint64_t)READERS << 40);
	if (write(b->ready[1], &c, 1) != 1) /* release for TSan: its reads came before */
		return NULL;
	while (read(b->go[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void test_blocked_thread(void **state)
{
	(void)state;
	struct shared *s = setup();
	struct ada_keysym_target t = {getpid(), 0, SLOTS + READERS + 1, threads_of, s};
	struct ada_keysym_region *r;
	assert_int_equal(ada_keysym_region_new(s->area, s->mask + 1, s->cur, &r), 0);
	publish(r, 1, &t);
	struct blocked b = {s, {-1, -1}, {-1, -1}};
	assert_int_equal(pipe(b.ready), 0);
	assert_int_equal(pipe(b.go), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, blocked_main, &b), 0);
	char c;
	assert_int_equal(read(b.ready[0], &c, 1), 1);
	/* Until it sits in read(), it holds every set (no clock: keep going
	 * until /proc says so). */
	struct ada_slot_info si;
	uint32_t tid = 0;
	for (uint32_t slot = 0; slot < SLOTS; slot++) {
		ada_arena_slot_info(s->a, slot, &si);
		if (si.state == ADA_SLOT_ACTIVE)
			tid = si.tid;
	}
	assert_true(tid != 0);
	while (!ada_keysym_thread_in_syscall(getpid(), tid))
		sched_yield();
	for (uint64_t v = 2; v <= 200; v++)
		publish(r, v, &t); /* would stop at a full area if it held them */
	struct ada_keysym_region_stats st;
	ada_keysym_region_stats(r, &st);
	assert_true(st.reclaimed > 0);
	assert_true(st.syscall_quiescent > 0);
	assert_int_equal(write(b.go[1], &c, 1), 1);
	pthread_join(th, NULL);
	if (s->error[0])
		fail_msg("%s", s->error);
	for (int i = 0; i < 2; i++) {
		close(b.ready[i]);
		close(b.go[i]);
	}
	ada_keysym_region_free(r);
	teardown(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_swap_under_readers),
	    cmocka_unit_test(test_blocked_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
