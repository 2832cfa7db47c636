/*
 * The detail set: which hooked functions write detail records, from
 * --detail-symbols and the key-symbol rules (agent_internal.h), and the
 * key-symbol area the recorder writes (not hook context; agent.lock held).
 *
 * A set is built whole and published with one release store; the old one
 * stays allocated, as a handler on another thread may still read it.
 */
#include <fnmatch.h>
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent_internal.h"
#include "ring.h"

/* key-symbol=MODULE_GLOB:SYMBOL_GLOB: the module glob matches the path or
 * its file name (as src/keysym/spec.c does on the recorder's side). */
static bool install_key_match(const char *rule, const char *path, const char *name)
{
	const char *colon = strchr(rule, ':'), *base = strrchr(path, '/');
	char mod[512];
	if (!colon || (size_t)(colon - rule) >= sizeof(mod))
		return false;
	memcpy(mod, rule, (size_t)(colon - rule));
	mod[colon - rule] = 0;
	if (fnmatch(mod, path, 0) != 0 && !(base && fnmatch(mod, base + 1, 0) == 0))
		return false;
	return fnmatch(colon + 1, name, 0) == 0;
}

static bool install_detail_match(const char *path, const char *name)
{
	for (size_t g = 0; g < agent.cfg.n_detail_sym; g++)
		if (fnmatch(agent.cfg.detail_sym[g], name, 0) == 0)
			return true;
	for (size_t g = 0; g < agent.cfg.n_key_sym; g++)
		if (install_key_match(agent.cfg.key_sym[g], path ? path : "", name))
			return true;
	return false;
}

/* The bitmap of module m (nbits wide): every hooked function whose name,
 * or the name of one of its aliases (listed right after it), matches a
 * glob. NULL when none does (or out of memory: then the module has no
 * member, and the log says so). */
static uint64_t *install_detail_bits(const struct agent_module *m, uint32_t nbits)
{
	uint64_t *b = NULL;
	size_t primary = 0;
	for (size_t i = 0; i < m->st.count && i < nbits; i++) {
		const struct ada_hook_fn *f = &m->st.fns[i];
		if (f->status != ADA_SKIP_ALIAS)
			primary = i;
		if (m->st.fns[primary].status != ADA_HOOK_OK ||
		    !install_detail_match(m->path, ada_hook_fn_name(&m->st, f)))
			continue;
		if (!b && !(b = calloc(nbits / 64 + 1, sizeof(*b)))) {
			agent_log("out of memory for the detail set of %s", m->path);
			return NULL;
		}
		b[primary / 64] |= 1ull << (primary % 64);
	}
	return b;
}

/* The set while the detail lane is on and before a set was built: no
 * function. Every module slot of a built set without a member points at
 * the zero bitmap. */
static const struct agent_dset install_dset_none = {.all = 0, .nbits = 0};
static const struct agent_dset install_dset_every = {.all = 1};

static const _Atomic uint64_t install_ks_local = ADA_KEYSYM_CUR_LOCAL;

/* Registers the process for the recorder's expedited membarrier, once:
 * the registration belongs to the address space, which a forked child
 * inherits with it (only exec clears it, and exec starts this image's
 * statics afresh), so a child of a registered process asks nothing. */
ADA_FORK_PATH static bool install_membarrier_registered(void)
{
	static bool registered;
	if (!registered)
		registered =
		    syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
	return registered;
}

ADA_FORK_PATH void agent_keysym_attach(void)
{
	struct ada_arena *a = ada_producer_arena();
	uint64_t bytes = 0;
	uint8_t *area = a && agent_hot.detail_on ? ada_arena_keysym_area(a, &bytes) : NULL;
	agent_hot.ks_cur = &install_ks_local;
	agent_hot.ks_area = (const uint8_t *)&install_ks_local;
	agent_hot.ks_mask = 0;
	if (!area)
		return;
	/* The recorder writes the area; nothing here may. A refusal (say,
	 * huge pages of another size) is told, not fatal. */
	if (mprotect(area, bytes, PROT_READ) != 0)
		ada_arena_set_flags(a, ADA_ARENA_F_KEYSYM_RW);
	if (install_membarrier_registered())
		ada_arena_set_flags(a, ADA_ARENA_F_MEMBARRIER);
	agent_hot.ks_area = area;
	agent_hot.ks_mask = bytes - 1;
	agent_hot.ks_cur = ada_arena_keysym_cur(a);
}

void agent_detail_set_init(void)
{
	/* Release: pairs with the acquire load in handlers_detail_member(). */
	atomic_store_explicit(&agent_hot.dset,
	                      agent.cfg.n_detail_sym + agent.cfg.n_key_sym ? &install_dset_none
	                                                                   : &install_dset_every,
	                      memory_order_release);
}

void agent_detail_set_update(void)
{
	if (agent.cfg.n_detail_sym + agent.cfg.n_key_sym == 0)
		return; /* every hooked function: agent_detail_set_init() said so */
	uint64_t max_mod = 0;
	size_t most = 0;
	for (size_t i = 0; i < agent.n_mods; i++) {
		max_mod = agent.mods[i].id > max_mod ? agent.mods[i].id : max_mod;
		most = agent.mods[i].st.count > most ? agent.mods[i].st.count : most;
	}
	uint32_t nbits = (uint32_t)((most + 63) & ~(size_t)63);
	struct agent_dset *ds = calloc(1, sizeof(*ds));
	const uint64_t **bits = calloc(max_mod + 1, sizeof(*bits));
	uint64_t *zero = calloc(nbits / 64 + 1, sizeof(*zero));
	if (!ds || !bits || !zero) {
		agent_log("out of memory building the detail set; it stays as it was");
		free(ds);
		free(bits);
		free(zero);
		return;
	}
	for (uint64_t m = 0; m <= max_mod; m++)
		bits[m] = zero;
	for (size_t i = 0; i < agent.n_mods; i++) {
		const struct agent_module *m = &agent.mods[i];
		uint64_t *b = m->gone ? NULL : install_detail_bits(m, nbits);
		if (b)
			bits[m->id] = b;
	}
	ds->nbits = nbits;
	ds->max_mod = max_mod;
	ds->bits = (const uint64_t *const *)bits;
	/* The old set stays reachable (and allocated): a handler on another
	 * thread may still be reading it. */
	ds->prev = atomic_load_explicit(&agent_hot.dset, memory_order_relaxed);
	/* Release: pairs with the acquire load in handlers_detail_member(). */
	atomic_store_explicit(&agent_hot.dset, ds, memory_order_release);
}
