/*
 * Cross-thread k-way merge by timestamp_ns.
 *
 * Each source is a run of one index file (non-decreasing timestamps within
 * a thread); a binary min-heap holds one cursor per non-empty source, so a
 * merge of n events over k sources costs O(n log k) and no copy of the
 * events. Order: (timestamp_ns, thread, rank, index_seq), all ascending, so
 * equal timestamps come out in a fixed order whatever the input order.
 * Threads: one thread per merge object.
 */
#include <errno.h>
#include <stdlib.h>

#include "atf_internal.h"

struct merge_src {
	const struct ada_atf_index *ix;
	uint64_t seq, end;
	uint64_t ts; /* timestamp of seq, cached for the heap */
	uint32_t thread, rank;
	void *user;
};

struct ada_atf_merge {
	struct merge_src *src; /* heap order */
	size_t n, cap;
};

int ada_atf_merge_new(struct ada_atf_merge **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void ada_atf_merge_free(struct ada_atf_merge *m)
{
	if (!m)
		return;
	free(m->src);
	free(m);
}

static bool merge_less(const struct merge_src *a, const struct merge_src *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->thread != b->thread)
		return a->thread < b->thread;
	if (a->rank != b->rank)
		return a->rank < b->rank;
	return a->seq < b->seq;
}

static void merge_swap(struct merge_src *a, struct merge_src *b)
{
	struct merge_src t = *a;
	*a = *b;
	*b = t;
}

static void merge_up(struct ada_atf_merge *m, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!merge_less(&m->src[i], &m->src[p]))
			break;
		merge_swap(&m->src[i], &m->src[p]);
		i = p;
	}
}

static void merge_down(struct ada_atf_merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;
		if (l < m->n && merge_less(&m->src[l], &m->src[min]))
			min = l;
		if (r < m->n && merge_less(&m->src[r], &m->src[min]))
			min = r;
		if (min == i)
			return;
		merge_swap(&m->src[i], &m->src[min]);
		i = min;
	}
}

int ada_atf_merge_add(struct ada_atf_merge *m, const struct ada_atf_index *ix, uint64_t begin,
                      uint64_t end, uint32_t thread, uint32_t rank, void *user)
{
	uint64_t count = ada_atf_index_count(ix);

	if (end > count)
		end = count;
	if (begin >= end)
		return 0; /* nothing to merge from this source */
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 16;
		struct merge_src *p = realloc(m->src, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		m->src = p;
		m->cap = ncap;
	}
	m->src[m->n] = (struct merge_src){
	    .ix = ix,
	    .seq = begin,
	    .end = end,
	    .thread = thread,
	    .rank = rank,
	    .user = user,
	    .ts = ada_atf_index_get(ix, begin)->timestamp_ns,
	};
	merge_up(m, m->n++);
	return 0;
}

bool ada_atf_merge_next(struct ada_atf_merge *m, struct ada_atf_merge_item *out)
{
	struct merge_src *top;

	if (m->n == 0)
		return false;
	top = &m->src[0];
	out->ev = ada_atf_index_get(top->ix, top->seq);
	out->index_seq = top->seq;
	out->thread = top->thread;
	out->user = top->user;
	if (++top->seq < top->end) {
		top->ts = ada_atf_index_get(top->ix, top->seq)->timestamp_ns;
	} else {
		m->src[0] = m->src[--m->n];
	}
	if (m->n)
		merge_down(m, 0);
	return true;
}
