/*
 * A process's threads as the drain keeps them (issue 32 item 1): the set
 * of their thread numbers, for the check of a new slot's number in O(1),
 * and the threads not finalized yet beside the sums of the finalized
 * ones, so that what is counted over a process's threads (lost events,
 * index bytes, ring waits, detail records) walks only the open ones.
 * A walk of every thread the process ever had, at every new thread and
 * at every 10 ms live view, made a thread-per-request server's recorder
 * slower the longer it ran.
 *
 * Threads: the drain thread only (it owns every wal_proc / wal_thread).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena_internal.h"
#include "detail_internal.h"
#include "drain_internal.h"

/* Where seq's search starts in p's seq set (a power of two long). */
static size_t drain_seq_home(const struct wal_proc *p, uint32_t seq)
{
	return (size_t)(((uint64_t)seq * 0x9e3779b97f4a7c15ull) >> 32) & (p->seq_cap - 1);
}

/* Whether another thread of p already has thread_seq (its thread_K/
 * directory): the producer hands each number out once. A set, not a walk
 * of threads[]: that walk at every new thread cost a session of 20 000
 * short threads 17 % of its drain's CPU. */
bool drain_seq_taken(const struct wal_proc *p, uint32_t seq)
{
	if (!p->seq_cap)
		return false;
	for (size_t i = drain_seq_home(p, seq);; i = (i + 1) & (p->seq_cap - 1)) {
		if (p->seq_set[i] == 0)
			return false; /* the set is at most half full: an empty entry ends it */
		if (p->seq_set[i] == (uint64_t)seq + 1)
			return true;
	}
}

void drain_seq_put(struct wal_proc *p, uint32_t seq)
{
	size_t i = drain_seq_home(p, seq);
	while (p->seq_set[i])
		i = (i + 1) & (p->seq_cap - 1);
	p->seq_set[i] = (uint64_t)seq + 1;
}

/* The set at most half full with one thread more, rebuilt larger when
 * not. */
int drain_seq_room(struct wal_proc *p)
{
	if (2 * (p->nthreads + 1) <= p->seq_cap)
		return 0;
	size_t cap = p->seq_cap ? 2 * p->seq_cap : 64;
	uint64_t *set = calloc(cap, sizeof(*set));
	if (!set)
		return -ENOMEM;
	free(p->seq_set);
	p->seq_set = set;
	p->seq_cap = cap;
	for (size_t j = 0; j < p->nthreads; j++)
		drain_seq_put(p, p->threads[j]->seq);
	return 0;
}

void wal_proc_ring_waits(const struct wal_proc *p, uint64_t *waits, uint64_t *ns)
{
	*waits = p->done_sums.ring_waits;
	*ns = p->done_sums.ring_wait_ns;
	for (size_t j = 0; j < p->nopen; j++) {
		if (p->open[j]->summed)
			continue; /* in done_sums */
		*waits += p->open[j]->ring_waits;
		*ns += p->open[j]->ring_wait_ns;
	}
}

void wal_thread_closed(struct wal_thread *t)
{
	struct wal_proc *p = t->p;
	if (t->summed)
		return;
	t->summed = true;
	/* Left in the list (the walks skip it) until half the list is such:
	 * then one pass keeps the others, in order. A removal each time
	 * moved the rest of the list: the end of 10 000 threads alive at
	 * once, finalized oldest first, moved 400 MB. */
	if (2 * ++p->open_closed > p->nopen) {
		size_t n = 0;
		for (size_t i = 0; i < p->nopen; i++)
			if (!p->open[i]->summed)
				p->open[n++] = p->open[i];
		p->nopen = n;
		p->open_closed = 0;
	}
	struct wal_thread_sums *s = &p->done_sums;
	uint64_t b, e;
	wal_thread_index_bytes(t, &b, &e);
	s->lost += t->lost;
	s->index_bytes += b;
	s->index_events += e;
	s->ring_waits += t->ring_waits;
	s->ring_wait_ns += t->ring_wait_ns;
	uint64_t dr, dw, dns;
	wal_detail_thread_sums(t, &dr, &dw, &dns);
	s->detail_records += dr;
	s->detail_waits += dw;
	s->detail_wait_ns += dns;
}
