/*
 * The swap: publishing a new key-symbol blob to a running target and
 * reusing the space of an old one only after a grace period (RCU).
 * Recorder side, one struct ada_keysym_region per traced process; called
 * from one thread at a time (the drain's). docs/internals.md, "The
 * key-symbol swap", has the whole argument; in short:
 *
 *   reader (target thread, hook context)      writer (this file)
 *   publish event N (release store of head)    write blob B' in a free range
 *   cur = load_acquire(keysym_cur)             store_release(keysym_cur, B')
 *   contains(cur, fn)                          membarrier(): a full barrier on
 *   ... next handler: publish event N+1          every CPU running the target
 *                                              snapshot every slot's head H
 *                                              B is free once each thread of
 *                                              the snapshot published > H, is
 *                                              gone, or sits in a system call
 *
 * A thread that loaded the old offset did so before its barrier, after
 * publishing the event that came just before; the barrier made that event
 * visible, so the snapshot holds it; the next event it publishes comes
 * after its contains() returned (program order, release), and every load
 * of keysym_cur after the barrier sees B'. The area is never unmapped and
 * every load of the test is masked into it, so even a reader this
 * argument does not cover (see the docs: a signal handler that blocks in
 * a system call while it interrupts contains()) reads bytes of the area,
 * never anything else.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "keysym_internal.h"

#define KS_MAX_BLOBS 64 /* live + retired blobs in one area */

struct ks_blob {
	uint64_t off, len;
	int retired;                    /* 0: current */
	struct ada_keysym_thread *snap; /* retired: threads that may read it */
	size_t nsnap;
};

struct ada_keysym_region {
	uint8_t *area;
	uint64_t bytes;
	_Atomic uint64_t *cur;
	struct ks_blob blobs[KS_MAX_BLOBS]; /* sorted by off */
	size_t n;
	struct ada_keysym_region_stats st;
};

int ada_keysym_region_new(uint8_t *area, uint64_t bytes, _Atomic uint64_t *cur,
                          struct ada_keysym_region **out)
{
	if (!area || !cur || bytes < 4096 || (bytes & (bytes - 1)))
		return -EINVAL;
	struct ada_keysym_region *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->area = area;
	r->bytes = bytes;
	r->cur = cur;
	*out = r;
	return 0;
}

void ada_keysym_region_free(struct ada_keysym_region *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->blobs[i].snap);
	free(r);
}

void ada_keysym_region_stats(const struct ada_keysym_region *r, struct ada_keysym_region_stats *s)
{
	*s = r->st;
	s->retired_now = 0;
	s->bytes_used = 0;
	for (size_t i = 0; i < r->n; i++) {
		s->retired_now += (uint64_t)r->blobs[i].retired;
		s->bytes_used += r->blobs[i].len;
	}
}

/* ---- grace periods ---- */

/* A full memory barrier on every CPU that runs a thread of the target
 * (expedited: the target registered, an IPI to those CPUs; else
 * MEMBARRIER_CMD_GLOBAL, which waits for every CPU to pass through the
 * kernel). 0, or -errno: then nothing may be reclaimed. */
static int ks_barrier(int expedited)
{
	int cmd = expedited ? MEMBARRIER_CMD_GLOBAL_EXPEDITED : MEMBARRIER_CMD_GLOBAL;
	if (syscall(__NR_membarrier, cmd, 0, 0) == 0)
		return 0;
	if (expedited && syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return 0;
	return -errno;
}

/* True when /proc/PID/task/TID/syscall names a system call the thread is
 * blocked in now ("running", or -1 for a thread stopped outside one, is
 * not quiescent; unreadable counts as not). */
bool ada_keysym_thread_in_syscall(int pid, uint32_t tid)
{
	char path[64], buf[32];
	snprintf(path, sizeof(path), "/proc/%d/task/%u/syscall", pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return buf[0] >= '0' && buf[0] <= '9';
}

static const struct ada_keysym_thread *ks_find(const struct ada_keysym_thread *t, size_t n,
                                               uint64_t key)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].key == key)
			return &t[i];
	return NULL;
}

/* A thread that held no slot at the snapshot: moved on once it holds one
 * with an event (published after its test: program order), or is gone
 * (in no list now). */
static bool ks_slotless_moved_on(const struct ada_keysym_thread *s,
                                 const struct ada_keysym_thread *now, size_t n)
{
	bool listed = false;
	for (size_t i = 0; i < n; i++) {
		if (now[i].tid != s->tid)
			continue;
		listed = true;
		if (!(now[i].key & ADA_KEYSYM_NO_SLOT) && now[i].events > 0)
			return true;
	}
	return !listed;
}

/* Every thread of the snapshot has moved on (see the top of the file).
 * *stuck gets the first that has not. */
static bool ks_grace_over(const struct ks_blob *b, const struct ada_keysym_thread *now, size_t n,
                          const struct ada_keysym_target *t, uint32_t *stuck,
                          struct ada_keysym_region_stats *st)
{
	for (size_t i = 0; i < b->nsnap; i++) {
		const struct ada_keysym_thread *s = &b->snap[i], *c = ks_find(now, n, s->key);
		if (s->key & ADA_KEYSYM_NO_SLOT) {
			if (ks_slotless_moved_on(s, now, n))
				continue;
		} else if (!c || c->events > s->events) {
			continue; /* gone (slot freed or reused), or published after */
		}
		if (t->pid > 0 && ada_keysym_thread_in_syscall(t->pid, s->tid)) {
			st->syscall_quiescent++;
			continue;
		}
		*stuck = s->tid;
		return false;
	}
	return true;
}

static int ks_threads(const struct ada_keysym_target *t, struct ada_keysym_thread **out, size_t *n)
{
	size_t cap = t->max_threads ? t->max_threads : 1;
	*out = calloc(cap, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	int got = t->threads(t->ctx, *out, cap);
	if (got < 0) {
		free(*out);
		*out = NULL;
		return got;
	}
	*n = (size_t)got < cap ? (size_t)got : cap;
	return 0;
}

static void ks_drop(struct ada_keysym_region *r, size_t i)
{
	free(r->blobs[i].snap);
	memmove(&r->blobs[i], &r->blobs[i + 1], (r->n - i - 1) * sizeof(r->blobs[0]));
	r->n--;
}

size_t ada_keysym_region_reclaim(struct ada_keysym_region *r, const struct ada_keysym_target *t,
                                 uint32_t *stuck_tid)
{
	struct ada_keysym_thread *now = NULL;
	size_t n = 0, left = 0;
	int have = ks_threads(t, &now, &n) == 0;
	for (size_t i = 0; i < r->n;) {
		struct ks_blob *b = &r->blobs[i];
		uint32_t stuck = 0;
		if (b->retired && have && b->snap && ks_grace_over(b, now, n, t, &stuck, &r->st)) {
			/* Poison: a reader the argument missed sees no set at all. */
			memset(r->area + b->off, 0, b->len);
			ks_drop(r, i);
			r->st.reclaimed++;
			continue;
		}
		if (b->retired) {
			left++;
			if (stuck_tid && stuck)
				*stuck_tid = stuck;
		}
		i++;
	}
	free(now);
	return left;
}

/* ---- publishing ---- */

/* First free range of len bytes (64-aligned), or UINT64_MAX. */
static uint64_t ks_fit(const struct ada_keysym_region *r, uint64_t len)
{
	uint64_t at = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (r->blobs[i].off - at >= len)
			return at;
		at = r->blobs[i].off + r->blobs[i].len;
	}
	return r->bytes - at >= len ? at : UINT64_MAX;
}

static void ks_insert(struct ada_keysym_region *r, uint64_t off, uint64_t len)
{
	size_t i = 0;
	while (i < r->n && r->blobs[i].off < off)
		i++;
	memmove(&r->blobs[i + 1], &r->blobs[i], (r->n - i) * sizeof(r->blobs[0]));
	r->blobs[i] = (struct ks_blob){off, len, 0, NULL, 0};
	r->n++;
}

/* After the swap: the blob that was current is retired, with the threads
 * that may still read it (taken after the barrier). */
static void ks_retire_old(struct ada_keysym_region *r, uint64_t new_off,
                          const struct ada_keysym_target *t, int barrier_ok)
{
	for (size_t i = 0; i < r->n; i++) {
		struct ks_blob *b = &r->blobs[i];
		if (b->retired || b->off == new_off)
			continue;
		b->retired = 1;
		if (!barrier_ok || ks_threads(t, &b->snap, &b->nsnap) != 0) {
			b->snap = NULL; /* never reclaimed: no proof it is unread */
			r->st.unreclaimable++;
		}
	}
}

int ada_keysym_region_publish(struct ada_keysym_region *r, const void *blob, size_t len,
                              const struct ada_keysym_target *t, char *why, size_t cap)
{
	if (len == 0 || len % ADA_KEYSYM_ALIGN || len > r->bytes) {
		snprintf(why, cap, "the set needs %zu bytes and the key-symbol area has %llu", len,
		         (unsigned long long)r->bytes);
		return -ENOSPC;
	}
	uint32_t stuck = 0;
	uint64_t off = ks_fit(r, len);
	if (off == UINT64_MAX || r->n == KS_MAX_BLOBS) {
		ada_keysym_region_reclaim(r, t, &stuck);
		off = ks_fit(r, len);
	}
	if (off == UINT64_MAX || r->n == KS_MAX_BLOBS) {
		snprintf(why, cap,
		         "the key-symbol area is full of sets that thread %u may still be reading "
		         "(it has neither produced an event nor entered a system call since); try "
		         "again",
		         stuck);
		return -EBUSY;
	}
	memcpy(r->area + off, blob, len);
	ks_insert(r, off, len);
	/* Release: pairs with the acquire load of keysym_cur in the agent's
	 * handlers (handlers_key_member()): the blob's bytes are seen whole. */
	atomic_store_explicit(r->cur, off, memory_order_release);
	int berr = ks_barrier(t->expedited);
	if (berr)
		r->st.barrier_failed++;
	ks_retire_old(r, off, t, berr == 0);
	r->st.published++;
	return 0;
}
