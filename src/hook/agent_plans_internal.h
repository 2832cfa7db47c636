/*
 * Where the install finds each function's plan (agent_plans.c), private
 * to src/hook: the array a full analysis fills, indexed by function, or,
 * on a plan-cache hit whose every OK entry carries a plan, the cache
 * file's records, walked in function order where they are needed, with
 * no array (libc's would be ~900 KB of new memory, every page of it
 * touched once by every process that maps libc). docs/hooks.md, "Plan
 * cache".
 *
 * Threads: the agent's init thread or a rescan (agent.lock held).
 */
#ifndef ADA_AGENT_PLANS_INTERNAL_H
#define ADA_AGENT_PLANS_INTERNAL_H

#include <stddef.h>

#include "agent_internal.h"
#include "hook_arch.h"
#include "plancache_internal.h"

struct agent_plans {
	struct hook_arch_plan *v; /* NULL: the file's records */
	size_t n;                 /* v's length (agent_plans_free()) */
	struct plan_cache_file file;
	struct plan_cache_entry *e; /* the file's entries while v is NULL (owned) */
	struct hook_arch_plan tmp;  /* the record read last */
};

/* Function i of m's plan, or NULL when there is none. Without an array,
 * called for every i in increasing order (each walk from the file's
 * first record, plan_cache_file_rewind()): an entry's record is read
 * whether or not its function is still a candidate. The pointer is good
 * until the next call. */
struct hook_arch_plan *agent_plans_step(struct agent_plans *p, const struct agent_module *m,
                                        size_t i);

/* p's array: a zeroed plan for each of m's functions (none: one). 0 or
 * -ENOMEM. */
int agent_plans_array(const struct agent_module *m, struct agent_plans *p);

/* The plans of p's file (entries e, read for key) copied into an array,
 * rebased on m's functions, and the file freed: for a file with OK
 * entries that carry no plan (written by another agent build of the
 * same analysis), whose hit decodes those into the array. 0, -ENOMEM or
 * plan_cache_parse()'s errors. */
int agent_plans_from_file(const struct agent_module *m, const struct plan_cache_key *key,
                          struct plan_cache_entry *e, struct agent_plans *p);

/* Frees what p holds and empties it. */
void agent_plans_free(struct agent_plans *p);

#endif
