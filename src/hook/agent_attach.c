/*
 * ada attach's entry points in the agent (issue 10; not hook context).
 *
 * `ada attach` loads libada_agent.so into a running process with dlopen
 * (src/inject), whose constructor does nothing there (no ADA_ARENA_DIR in
 * that process's environment), then calls ada_agent_attach() with a text
 * it wrote into the process's memory, and at the end ada_agent_detach().
 * Both run on one thread of the target while ptrace holds every other
 * thread stopped, so patching code here races with no one.
 *
 * The text is the configuration `ada record` passes in the environment,
 * one "key=value" per line (nothing is taken from the target's own
 * environment):
 *   session=DIR   arena=DIR   ring=RING_CONFIG   hook=HOOK_CONFIG
 *   cache=DIR     (the plan cache; empty: none)
 *   busy=HEX,...  where the stopped threads are
 *   restart=HEX,... where threads inside a system call resume (the
 *                 syscall instruction: the kernel restarts it there)
 *   tls=HEX,...   the thread pointers of the stopped threads (fs_base),
 *                 whose producer state a second attach resets
 *
 * A stopped thread strictly inside the bytes a patch displaces (at the
 * start of one of its instructions) is moved to the relocated copy of
 * that instruction in the function's trampoline, after the enter
 * handler's call (hook_arch_moved_pc()): the agent computes the new pc,
 * ada attach sets it (ptrace) before the thread runs; its call is not
 * recorded, like any frame open at attach. A function whose patch would
 * overwrite bytes a thread cannot be moved out of (the middle of an
 * instruction, a system call that restarts inside it) is left unpatched
 * (ADA_SKIP_BUSY_AT_ATTACH, counted).
 *
 * Detach restores every patched entry and stops recording; trampolines,
 * the return trampoline and the shadow stacks stay, so a frame whose
 * return address was replaced still returns where it should. The arena's
 * shared memory is given back at the detach (ada_producer_retire_arena:
 * private zero pages at its addresses, since a stopped thread may be in
 * the middle of an event), the range itself unmapped by a later attach
 * that finds no thread inside a hook. A later attach applies the kept
 * patches again (minus busy ones) into a new arena (agent_uninstall and
 * agent_reinstall, at the end of this file: an attached process keeps
 * its patches and their original bytes, agent_install.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "plancache_internal.h"
#include "ring.h"

#define ATTACH_TEXT_MAX (1u << 20)
#define ATTACH_LIST_MAX 65536

#define ADA_AGENT_EXPORT __attribute__((visibility("default")))

static bool attach_restarts_in(uint64_t addr, size_t len)
{
	for (size_t i = 0; i < agent.n_restart; i++)
		if (agent.restart[i] >= addr && agent.restart[i] < addr + len)
			return true;
	return false;
}

bool agent_attach_busy(uint64_t addr, size_t len)
{
	for (size_t i = 0; i < agent.n_busy; i++)
		if (agent.busy[i] > addr && agent.busy[i] < addr + len)
			return true;
	return attach_restarts_in(addr, len);
}

/* Two passes, so that a function is either patched with every thread
 * inside it moved, or left alone with none moved. A thread already moved
 * by another patch (overlapping symbols) refuses this one. */
bool agent_attach_place(const struct hook_arch_plan *plan, uint64_t tramp)
{
	uint64_t addr = plan->fn_addr;
	size_t len = plan->patch_len;
	if (!agent.moved || attach_restarts_in(addr, len))
		return false;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < agent.n_busy; i++) {
			if (agent.busy[i] <= addr || agent.busy[i] >= addr + len)
				continue;
			/* A thread inside a system call (its restart one syscall
			 * instruction back) is never moved: the kernel may rewind
			 * its pc. */
			uint64_t to =
			    attach_restarts_in(agent.busy[i] - HOOK_ARCH_SYSCALL_INSN_LEN, 1)
			        ? 0
			        : hook_arch_moved_pc(plan, (const uint8_t *)(uintptr_t)tramp, tramp,
			                             agent.busy[i]);
			if (!to || agent.moved[i])
				return false; /* only in pass 0: pass 1 sees the same */
			if (pass == 1)
				agent.moved[i] = to;
		}
	for (size_t i = 0; i < agent.n_busy; i++)
		agent.moved_at_attach += agent.busy[i] > addr && agent.busy[i] < addr + len;
	return true;
}

void agent_attach_unplace(uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; agent.moved && i < agent.n_busy; i++)
		if (agent.moved[i] && agent.busy[i] >= lo && agent.busy[i] < hi) {
			agent.moved[i] = 0;
			agent.moved_at_attach--;
		}
}

/* "HEX,HEX,..." of (v, len) into a new array; -errno. */
static int attach_list(const char *v, size_t len, uint64_t **out, size_t *n)
{
	size_t cap = 1;
	for (size_t i = 0; i < len; i++)
		cap += v[i] == ',';
	if (cap > ATTACH_LIST_MAX)
		return -E2BIG;
	uint64_t *a = calloc(cap, sizeof(*a));
	if (!a)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < len;) {
		uint64_t x = 0;
		size_t j = i;
		for (; j < len && v[j] != ','; j++) {
			char c = v[j];
			int d = c >= '0' && c <= '9'   ? c - '0'
			        : c >= 'a' && c <= 'f' ? c - 'a' + 10
			                               : -1;
			if (d < 0 || j - i >= 16) {
				free(a);
				return -EINVAL;
			}
			x = x << 4 | (uint64_t)d;
		}
		if (j > i)
			a[k++] = x;
		i = j + 1;
	}
	free(*out);
	*out = a;
	*n = k;
	return 0;
}

static int attach_str(const char *v, size_t len, char **out)
{
	char *s = strndup(v, len);
	if (!s)
		return -ENOMEM;
	free(*out);
	*out = s;
	return 0;
}

struct attach_cfg {
	uint64_t *tls;
	size_t n_tls;
};

static int attach_key(const char *k, size_t kl, const char *v, size_t vl, struct attach_cfg *c)
{
#define ATTACH_KEY(name) (kl == sizeof(name) - 1 && !memcmp(k, name, kl))
	struct agent_env *e = &agent.env;
	if (ATTACH_KEY("session"))
		return vl < sizeof(agent.session_dir) ? attach_str(v, vl, &e->session_dir) : -E2BIG;
	if (ATTACH_KEY("arena"))
		return attach_str(v, vl, &e->arena_dir);
	if (ATTACH_KEY("ring"))
		return attach_str(v, vl, &e->ring_config);
	if (ATTACH_KEY("hook"))
		return attach_str(v, vl, &e->hook_config);
	if (ATTACH_KEY("cache")) {
		/* Also kept for the children it follows (agent_exec.c). */
		int err = vl < sizeof(agent.cache_dir) ? attach_str(v, vl, &e->plan_cache) : -E2BIG;
		if (!err && plan_cache_dir(e->plan_cache, agent.cache_dir, sizeof(agent.cache_dir)))
			agent.cache_dir[0] = '\0'; /* none, or not absolute */
		return err;
	}
	if (ATTACH_KEY("busy"))
		return attach_list(v, vl, &agent.busy, &agent.n_busy);
	if (ATTACH_KEY("restart"))
		return attach_list(v, vl, &agent.restart, &agent.n_restart);
	if (ATTACH_KEY("tls"))
		return attach_list(v, vl, &c->tls, &c->n_tls);
	return -EINVAL;
#undef ATTACH_KEY
}

static int attach_parse(const char *t, size_t len, struct attach_cfg *c)
{
	for (size_t i = 0; i < len;) {
		size_t j = i, eq = SIZE_MAX;
		for (; j < len && t[j] != '\n'; j++)
			if (t[j] == '=' && eq == SIZE_MAX)
				eq = j;
		if (j > i) {
			if (eq == SIZE_MAX)
				return -EINVAL;
			int err = attach_key(t + i, eq - i, t + eq + 1, j - eq - 1, c);
			if (err)
				return err;
		}
		i = j + 1;
	}
	return agent.env.arena_dir && agent.env.session_dir ? 0 : -EINVAL;
}

static void attach_forget_busy(void)
{
	free(agent.busy);
	free(agent.restart);
	free(agent.moved);
	agent.busy = agent.restart = agent.moved = NULL;
	agent.n_busy = agent.n_restart = 0;
}

/* Where ada attach finds the moves: out[i] for busy[i] (n slots). */
static void attach_report_moves(uint64_t *out, uint64_t n)
{
	for (size_t i = 0; out && agent.moved && i < agent.n_busy && i < n; i++)
		out[i] = agent.moved[i];
}

/* A second attach: every thread forgets the slot it held in the first
 * recording's arena (each thread's ada_producer_tls is at the same offset
 * from its thread pointer), so its next event claims one in the new arena. */
static void attach_reset_producers(const struct attach_cfg *c)
{
	uintptr_t self = hook_arch_thread_pointer();
	intptr_t off = (intptr_t)(uintptr_t)&ada_producer_tls - (intptr_t)self;
	for (size_t i = 0; i < c->n_tls; i++)
		if (c->tls[i]) {
			memset((void *)(uintptr_t)((intptr_t)c->tls[i] + off), 0,
			       sizeof(ada_producer_tls));
			/* A thread that found the first recorder gone (a frame
			 * returning after the detach) would stay untraced. */
			agent_shadow_attach_reset(self, (uintptr_t)c->tls[i]);
		}
}

/* Whether a stopped thread is inside a hook handler (its in_hook, where
 * the emitted code finds it: agent_fast_layout): it may hold an address
 * in a retired arena, which then stays mapped until a later attach. The
 * thread this runs on is among them (ada attach lists every thread). */
static bool attach_any_in_hook(const struct attach_cfg *c)
{
	struct hook_arch_fast f;
	agent_fast_layout(&f);
	for (size_t i = 0; i < c->n_tls; i++)
		if (c->tls[i] && *(const uint32_t *)(uintptr_t)((intptr_t)c->tls[i] + f.s_in_hook))
			return true;
	return false;
}

/* A second attach after a detach: a new arena, the kept patches again. */
static int attach_again(const struct attach_cfg *c)
{
	const char *sess = agent.env.session_dir;
	strcpy(agent.session_dir, sess);
	struct ada_hook_config cfg;
	const char *txt = agent.env.hook_config ? agent.env.hook_config : "";
	int err = ada_hook_config_parse(txt, strlen(txt), &cfg);
	if (err)
		return err;
	ada_hook_config_fini(&agent.cfg);
	agent.cfg = cfg;
	/* The detach retired the old arena (private zero pages at its
	 * addresses: ada_agent_detach). */
	ada_producer_set_arena(NULL);
	err = ada_producer_init(agent.env.arena_dir, agent.env.ring_config);
	if (err)
		return err;
	attach_reset_producers(c);
	ada_producer_reset_thread();
	agent_keysym_attach(); /* the new arena's key-symbol area */
	/* Every thread's producer state is reset: the retired ranges can be
	 * unmapped unless a thread is stopped inside a hook (then at a later
	 * attach). */
	if (!attach_any_in_hook(c))
		ada_producer_reap_retired();
	err = agent_reinstall();
	if (!err)
		agent_write_files(true, 0);
	return err;
}

/* Configures and starts the agent in a running process; 0 or -errno
 * (-EALREADY: it records already, preloaded or attached; -EBUSY: a
 * stopped thread is inside the agent, holding its lock). moved (n
 * slots, may be NULL): for the i-th busy= address, the pc that thread
 * must resume at (inside a trampoline), or 0 where it stays; ada attach
 * sets them before any thread runs. */
ADA_AGENT_EXPORT int ada_agent_attach(const char *text, uint64_t len, uint64_t *moved, uint64_t n)
{
	if (!text || len > ATTACH_TEXT_MAX || n > ATTACH_LIST_MAX)
		return -EINVAL;
	if (agent_hot.active)
		return -EALREADY;
	struct attach_cfg c = {0};
	agent_guard_enter();
	/* Held by a thread ptrace stopped (a fork or dlopen inside the
	 * agent): it would never be released while we wait. */
	if (pthread_mutex_trylock(&agent.lock)) {
		agent_guard_leave();
		return -EBUSY;
	}
	bool again = agent.attached && agent.mem;
	agent.attached = true;
	agent.moved_at_attach = 0;
	int err = attach_parse(text, (size_t)len, &c);
	if (!err && !(agent.moved = calloc(agent.n_busy ? agent.n_busy : 1, sizeof(uint64_t))))
		err = -ENOMEM;
	if (!err && again) {
		err = attach_again(&c);
		if (!err)
			agent_hot.active = 1;
	}
	pthread_mutex_unlock(&agent.lock);
	agent_guard_leave();
	if (!err && again)
		agent_budget_start(false);
	if (!err && !again)
		err = agent_boot();
	pthread_mutex_lock(&agent.lock);
	/* Even after a failure: what was patched stays patched. */
	attach_report_moves(moved, n);
	attach_forget_busy();
	pthread_mutex_unlock(&agent.lock);
	free(c.tls);
	return err;
}

/* Restores every patched entry and stops recording; 0 or -errno
 * (-EBUSY: a stopped thread holds the agent's lock). */
ADA_AGENT_EXPORT int ada_agent_detach(void)
{
	if (!agent.attached || !agent_hot.active)
		return -EINVAL;
	agent_guard_enter();
	if (pthread_mutex_trylock(&agent.lock)) { /* as in ada_agent_attach() */
		agent_guard_leave();
		return -EBUSY;
	}
	agent_budget_stop(); /* before the patches go: no move after */
	int err = agent_uninstall();
	agent_hot.active = 0;
	agent_count_exiting(); /* the count-only functions' final sum */
	agent_budget_exit();
	agent_write_files(false, agent.n_mods); /* agent.json, final */
	/* The recording's shared memory goes back now (RssShmem as before
	 * the attach; issue 34): its range becomes private zero pages, which
	 * a thread stopped in the middle of an event, or a frame open now
	 * that returns later, may still write harmlessly; a later attach
	 * unmaps it once no thread can (attach_again). */
	ada_producer_retire_arena();
	agent_keysym_attach(); /* no arena: the agent's own key-symbol set */
	pthread_mutex_unlock(&agent.lock);
	agent_guard_leave();
	return err;
}

/* ---- the kept patches written back (detach) and again (re-attach) ---- */

int agent_uninstall(void)
{
	int err = 0;
	for (size_t i = 0; i < agent.n_mods; i++) {
		struct agent_module *m = &agent.mods[i];
		int e = m->gone || !m->n_patch ? 0 : hook_patch_apply(m->undo, m->n_patch);
		if (e && !err)
			err = e;
	}
	return err;
}

/* The function of m at address addr becomes ADA_SKIP_BUSY_AT_ATTACH. */
static void attach_mark_busy(struct agent_module *m, uint64_t addr)
{
	for (size_t i = 0; i < m->st.count; i++)
		if (m->base + m->st.fns[i].offset == addr && m->st.fns[i].status == ADA_HOOK_OK)
			m->st.fns[i].status = ADA_SKIP_BUSY_AT_ATTACH;
}

/* A kept patch a stopped thread is inside of: may it be applied again
 * with the thread moved into its trampoline? The plan is decoded again
 * from the original bytes (the prologue decode the trampoline was made
 * from; hook_arch_moved_pc() checks the trampoline's bytes against it). */
static bool attach_replace(const struct hook_patch *p, const struct hook_patch *u)
{
	struct hook_arch_plan plan;
	if (hook_arch_prepare_prologue(u->bytes, u->addr, u->len, &plan) != ADA_HOOK_OK ||
	    plan.patch_len != u->len)
		return false;
	uint64_t tramp = hook_arch_patch_target(&plan, p->bytes);
	return tramp && agent_attach_place(&plan, tramp);
}

/* Keeps the patches that no stopped thread is inside of, or whose
 * threads inside can be moved (in place: a busy function stays unhooked
 * for good, as at the first attach). */
static size_t attach_drop_busy(struct agent_module *m)
{
	size_t k = 0;
	for (size_t i = 0; i < m->n_patch; i++) {
		if (agent_attach_busy(m->patch[i].addr, m->patch[i].len) &&
		    !attach_replace(&m->patch[i], &m->undo[i])) {
			attach_mark_busy(m, m->patch[i].addr);
			continue;
		}
		m->patch[k] = m->patch[i];
		m->undo[k++] = m->undo[i]; /* index for index (install_apply()) */
	}
	return k;
}

int agent_reinstall(void)
{
	int err = 0;
	for (size_t i = 0; i < agent.n_mods; i++) {
		struct agent_module *m = &agent.mods[i];
		if (m->gone || !m->n_patch)
			continue;
		m->n_patch = attach_drop_busy(m);
		/* The padding's jumps are still there unless the image was
		 * written meanwhile: applied first again, as at the install. */
		int e = hook_patch_apply_pair(NULL, m->pad, m->n_pad, m->patch, m->n_patch);
		if (e)
			agent_attach_unplace(m->lo, m->hi);
		if (e && !err)
			err = e;
		agent_install_count(m);
	}
	return err;
}
