/*
 * Each module's plans between its analysis and its trampolines
 * (agent_plans_internal.h): the array of a full analysis, or the plan
 * cache file's records walked in place.
 *
 * Threads: the agent's init thread or a rescan (agent.lock held). No
 * shared state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent_plans_internal.h"

/* Plans arrays at least this large are mapped populated. */
#define AGENT_PLANS_MAPPED (256u << 10)

struct hook_arch_plan *agent_plans_step(struct agent_plans *p, const struct agent_module *m,
                                        size_t i)
{
	if (p->v)
		return &p->v[i];
	uint64_t addr = m->base + m->st.fns[i].offset;
	if (!p->e || !plan_cache_next_plan(&p->file, &p->e[i], addr, &p->tmp))
		return NULL;
	return &p->tmp;
}

int agent_plans_array(const struct agent_module *m, struct agent_plans *p)
{
	/* A full analysis writes most of it (libc's is near a megabyte of
	 * fresh memory): populated by the mmap in one call rather than by a
	 * page fault per page. */
	size_t n = m->st.count ? m->st.count : 1, bytes = n * sizeof(struct hook_arch_plan);
	void *v = bytes < AGENT_PLANS_MAPPED
	              ? calloc(n, sizeof(struct hook_arch_plan))
	              : mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!v || v == MAP_FAILED)
		return -ENOMEM;
	p->v = v;
	p->n = n;
	return 0;
}

int agent_plans_from_file(const struct agent_module *m, const struct plan_cache_key *key,
                          struct plan_cache_entry *e, struct agent_plans *p)
{
	int err = agent_plans_array(m, p);
	/* The file's plans are rebased on each function's address. */
	for (size_t i = 0; !err && i < m->st.count; i++)
		p->v[i].fn_addr = m->base + m->st.fns[i].offset;
	if (!err)
		err = plan_cache_parse(p->file.buf, p->file.len, key, e, p->v);
	plan_cache_file_free(&p->file);
	return err;
}

void agent_plans_free(struct agent_plans *p)
{
	size_t bytes = p->n * sizeof(struct hook_arch_plan);
	if (p->v && bytes < AGENT_PLANS_MAPPED)
		free(p->v);
	else if (p->v)
		munmap(p->v, bytes);
	plan_cache_file_free(&p->file);
	free(p->e);
	memset(p, 0, sizeof(*p));
}
