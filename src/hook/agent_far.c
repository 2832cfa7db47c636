/*
 * The far patch form in the agent (arm64; docs/hooks.md "arm64"): a
 * module wider than the patch's `b` reaches (HOOK_ARCH_REACH, +-128 MiB)
 * gets its trampoline block within adrp's +-4 GiB instead
 * (HOOK_ARCH_FAR_REACH), and each function the block lies beyond `b`'s
 * reach of is patched with adrp/add/br x16 over its first three
 * instructions (hook_arch_prepare_far, its body swept for branches into
 * them). Nothing here on an architecture without a far form (x86_64).
 *
 * BTI: the far form's trampoline jumps back behind the patch with `br
 * x16`, which in a BTI-guarded page must land on a landing pad; the
 * instruction behind the patch is none. A module whose GNU property note
 * asks for BTI, on a CPU that has it (HWCAP2_BTI: the loader then maps
 * its code guarded), gets no far form: its functions out of reach stay
 * `no_trampoline_memory`.
 *
 * ADA_HOOK_FAR_TEST (for tests): every module that may have the far form
 * gets its block beyond `b`'s reach, so every function takes it
 * (arm64.far_threads).
 *
 * Threads: the install path, under agent.lock; not hook context.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "agent_internal.h"

#define FAR_MARGIN (1ull << 20)          /* as hook_mem's margin */
#define FAR_PT_GNU_PROPERTY 0x6474e553u  /* PT_GNU_PROPERTY */
#define FAR_NT_GNU_PROPERTY 5u           /* NT_GNU_PROPERTY_TYPE_0 */
#define FAR_PROP_AARCH64_AND 0xc0000000u /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
#define FAR_PROP_BTI 1u                  /* ..._FEATURE_1_BTI */
#define FAR_HWCAP2_BTI (1ul << 17)       /* asm/hwcap.h's HWCAP2_BTI */
#define FAR_PATCH_BYTES 12u              /* adrp, add, br */

/* Whether the GNU property note [p, p+len) (in the module's memory, as
 * the loader mapped it) asks for BTI. Bounded by len; any malformed
 * entry ends the walk (then not guarded: the loader would not have
 * guarded it either). */
bool agent_far_note_bti(const uint8_t *p, size_t len)
{
	size_t at = 0;
	while (at + 12 <= len) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, p + at, 4);
		memcpy(&descsz, p + at + 4, 4);
		memcpy(&type, p + at + 8, 4);
		size_t name_end = at + 12 + ((namesz + 3u) & ~3u);
		if (namesz > len || descsz > len || name_end > len || name_end + descsz > len)
			return false;
		if (type == FAR_NT_GNU_PROPERTY && namesz == 4 && !memcmp(p + at + 12, "GNU", 4)) {
			for (size_t q = 0; q + 8 <= descsz;) {
				uint32_t pr_type, pr_sz, v = 0;
				memcpy(&pr_type, p + name_end + q, 4);
				memcpy(&pr_sz, p + name_end + q + 4, 4);
				if (pr_sz > descsz - q - 8)
					return false;
				if (pr_type == FAR_PROP_AARCH64_AND && pr_sz >= 4) {
					memcpy(&v, p + name_end + q + 8, 4);
					return v & FAR_PROP_BTI;
				}
				q += 8 + ((pr_sz + 7u) & ~7u);
			}
		}
		at = name_end + ((descsz + 7u) & ~7u); /* 8-aligned on ELFCLASS64 */
	}
	return false;
}

#if HOOK_ARCH_FAR_REACH

struct far_bti {
	uint64_t base;
	bool found, bti;
};

static int far_bti_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct far_bti *b = arg;
	(void)size;
	if (info->dlpi_addr != b->base)
		return 0;
	b->found = true;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == FAR_PT_GNU_PROPERTY && ph->p_memsz < (1u << 16))
			b->bti = agent_far_note_bti(
			    (const uint8_t *)(uintptr_t)(info->dlpi_addr + ph->p_vaddr),
			    ph->p_memsz);
	}
	return 1;
}

/* Whether the module's code is mapped BTI-guarded (or may be: not found
 * among the loaded images counts as guarded). */
static bool far_guarded(const struct agent_module *m)
{
	if (!(getauxval(AT_HWCAP2) & FAR_HWCAP2_BTI))
		return false;
	struct far_bti b = {.base = m->base};
	dl_iterate_phdr(far_bti_cb, &b);
	return !b.found || b.bti;
}

static int far_test = -1; /* ADA_HOOK_FAR_TEST: -1 not read yet */

static bool agent_far_forced(const struct agent_module *m)
{
	if (far_test < 0)
		far_test = secure_getenv("ADA_HOOK_FAR_TEST") != NULL;
	return far_test && !far_guarded(m);
}

static bool agent_far_alloc(struct hook_mem *mem, struct agent_module *m, size_t cap, uint8_t **blk)
{
	if (far_guarded(m) || m->hi - m->lo >= HOOK_ARCH_FAR_REACH - 2 * FAR_MARGIN)
		return false;
	uint64_t reach = HOOK_ARCH_FAR_REACH - FAR_MARGIN;
	uint64_t wlo = m->hi > reach ? m->hi - reach : 0;
	uint64_t whi = m->lo + reach;
	if (agent_far_forced(m)) {
		/* Below the module by more than `b` reaches from any byte of it. */
		if (m->lo < 2 * HOOK_ARCH_REACH + cap)
			return false;
		whi = m->lo - 2 * HOOK_ARCH_REACH;
	}
	return hook_mem_alloc_in(mem, m->id, wlo, whi, m->lo, cap, blk) == 0;
}

/* The direct branches of one module that leave their function, sorted:
 * a far patch displaces fn+4 and fn+8 too, which another function's
 * branch may target (the cross-function sweep, discover_xref.c, ran
 * with the 4-byte patch). Built once per module that takes the far
 * form; kept until the next one (under agent.lock). */
static struct {
	uint32_t module_id;
	bool built;
	uint64_t *v;
	size_t n, cap;
} far_x;

static int far_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void far_xref_push(uint64_t t)
{
	if (far_x.n == far_x.cap) {
		size_t nc = far_x.cap ? 2 * far_x.cap : 1024;
		uint64_t *nv = realloc(far_x.v, nc * sizeof(*nv));
		if (!nv) { /* no list: every far plan is refused (far_xref_hit) */
			far_x.built = false;
			return;
		}
		far_x.v = nv;
		far_x.cap = nc;
	}
	far_x.v[far_x.n++] = t;
}

static void far_xref_build(const struct agent_module *m)
{
	far_x.module_id = m->id;
	far_x.built = true;
	far_x.n = 0;
	for (size_t i = 0; i < m->st.count && far_x.built; i++) {
		const struct ada_hook_fn *f = &m->st.fns[i];
		uint64_t a = m->base + f->offset;
		if (f->status == ADA_SKIP_OUTSIDE_TEXT || f->status == ADA_SKIP_ALIAS || !f->size ||
		    a < m->lo || a >= m->hi || f->size > m->hi - a)
			continue;
		const uint8_t *code = (const uint8_t *)(uintptr_t)a;
		for (uint64_t off = 0; off + 4 <= f->size && far_x.built; off += 4) {
			uint64_t t = 0;
			int has = 0;
			hook_arch_insn_len(code + off, f->size - off, a + off, &t, &has);
			if (has && (t < a || t >= a + f->size))
				far_xref_push(t);
		}
	}
	if (far_x.built && far_x.n)
		qsort(far_x.v, far_x.n, sizeof(*far_x.v), far_cmp);
}

/* Whether a branch from another function of m lands on fn+4 or fn+8
 * (true when that cannot be known). */
static bool far_xref_hit(const struct agent_module *m, uint64_t fn)
{
	if (!far_x.built || far_x.module_id != m->id)
		far_xref_build(m);
	if (!far_x.built)
		return true;
	for (uint64_t t = fn + 4; t < fn + FAR_PATCH_BYTES; t += 4)
		if (far_x.n && bsearch(&t, far_x.v, far_x.n, sizeof(*far_x.v), far_cmp))
			return true;
	return false;
}

bool agent_far_replan(const struct agent_module *m, size_t i, struct hook_arch_plan *plan)
{
	const struct ada_hook_fn *f = &m->st.fns[i];
	struct hook_arch_plan p;
	if (plan->pad_addr || plan->patch_len != 4 || far_xref_hit(m, plan->fn_addr) ||
	    hook_arch_prepare_far((const uint8_t *)(uintptr_t)plan->fn_addr, plan->fn_addr, f->size,
	                          &p) != ADA_HOOK_OK)
		return false;
	*plan = p;
	return true;
}

#else

static bool agent_far_forced(const struct agent_module *m)
{
	(void)m;
	return false;
}

static bool agent_far_alloc(struct hook_mem *mem, struct agent_module *m, size_t cap, uint8_t **blk)
{
	(void)mem, (void)m, (void)cap, (void)blk;
	return false;
}

bool agent_far_replan(const struct agent_module *m, size_t i, struct hook_arch_plan *plan)
{
	(void)m, (void)i, (void)plan;
	return false;
}

#endif

int agent_far_block(struct hook_mem *mem, struct agent_module *m, size_t cap, uint8_t **blk,
                    bool *far)
{
	int err =
	    agent_far_forced(m) ? -ENOMEM : hook_mem_alloc(mem, m->id, m->lo, m->hi, cap, blk);
	*far = err && agent_far_alloc(mem, m, cap, blk);
	return *far ? 0 : err;
}
