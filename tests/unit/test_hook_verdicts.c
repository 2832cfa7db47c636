/*
 * The fast length table changes nothing: every function of real
 * libraries (libc with its debug symbols when installed, libstdc++,
 * python3, libcrypto, libm) gets the same verdict and patch length from
 * hook_arch_prepare + discover_xref_check with the table
 * (x86_use_fast_len = 1) as with capstone alone (0). The images are laid
 * out in memory from their PT_LOAD segments, as the loader would (no
 * relocation: the analysis only reads code). Times are printed.
 *
 * The analysis is hook_arch_prepare_mem() with the image's readable
 * segments as the agent passes them, so switch tables are read. Against
 * plain hook_arch_prepare() (no tables) the only verdicts allowed to
 * differ are jump_table -> hooked (or branch_into_patch); how many move
 * is printed. test_prologue_kinds: the same on hand-assembled prologues
 * the table classifies or leaves to capstone; test_switch_tables: on
 * hand-assembled switch dispatches, which the switch reader decodes with
 * its compact decoder (x86_swdec.c) or capstone alone; test_two_threads:
 * two threads analysing halves of libc and libstdc++ side by side, as the
 * agent's cold start-up does, against one thread (also run alone as
 * hook_arch_verdicts_threads, in the thread-sanitizer stage).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "discover_internal.h"
#include "x86_internal.h"

#define MAX_REGIONS 16
static struct hook_arch_region regions[MAX_REGIONS];
static struct hook_arch_memview image_mem = {regions, 0};

/* Lays the image out and records its readable PT_LOAD segments. */
static uint8_t *load_image(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t n = 0, hi = 0;
	GElf_Phdr ph;
	uint8_t *img = NULL;
	image_mem.n = 0;
	if (e && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    ph.p_vaddr + ph.p_memsz > hi)
				hi = ph.p_vaddr + ph.p_memsz;
		img = calloc(hi ? hi : 1, 1);
		for (size_t i = 0; img && i < n; i++) {
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (pread(fd, img + ph.p_vaddr, ph.p_filesz, (off_t)ph.p_offset) !=
			    (ssize_t)ph.p_filesz)
				fail_msg("%s: short read", path);
			if ((ph.p_flags & PF_R) && image_mem.n < MAX_REGIONS)
				regions[image_mem.n++] = (struct hook_arch_region){
				    (uint64_t)(uintptr_t)(img + ph.p_vaddr), ph.p_memsz,
				    img + ph.p_vaddr};
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	*len = hi;
	return img;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Full analysis of every function as the agent does it (mem: the
 * readable segments, or NULL for plain prepare); statuses into st. */
static double analyse(const struct ada_hook_symtab *st0, uint8_t *img, struct ada_hook_symtab *st,
                      struct hook_arch_plan *plans, const struct hook_arch_memview *mem)
{
	double t0 = now_ms();
	for (size_t i = 0; i < st->count; i++) {
		st->fns[i].status = st0->fns[i].status;
		memset(&plans[i], 0, sizeof(plans[i]));
		if (st->fns[i].status != ADA_HOOK_OK)
			continue;
		uint64_t a = (uint64_t)(uintptr_t)img + st->fns[i].offset;
		st->fns[i].status = (uint8_t)hook_arch_prepare_mem((const uint8_t *)a, a,
		                                                   st->fns[i].size, mem, &plans[i]);
	}
	assert_int_equal(discover_xref_check((uint64_t)(uintptr_t)img, st, plans, NULL), 0);
	return now_ms() - t0;
}

/* The displaced instructions and how each is relocated. */
static int same_insns(const struct hook_arch_plan *a, const struct hook_arch_plan *b)
{
	if (a->insn_count != b->insn_count || memcmp(a->original, b->original, a->patch_len))
		return 0;
	for (size_t i = 0; i < a->insn_count; i++) {
		const struct hook_arch_insn *x = &a->insns[i], *y = &b->insns[i];
		if (x->offset != y->offset || x->len != y->len || x->kind != y->kind ||
		    x->disp_off != y->disp_off || x->cc != y->cc || x->reg != y->reg ||
		    x->target != y->target)
			return 0;
	}
	return 1;
}

/* Plain prepare (no switch tables) against the verdicts with tables
 * (status): only jump_table -> hooked (or -> branch_into_patch, from the
 * cross-function check that only hookable functions face) may differ. */
static void check_tables(const char *path, const struct ada_hook_symtab *st0, uint8_t *img,
                         struct ada_hook_symtab *st, struct hook_arch_plan *plans,
                         const uint8_t *status)
{
	size_t jt_plain = 0, jt_mem = 0, moved = 0, bad = 0;
	double plain_ms = analyse(st0, img, st, plans, NULL);
	for (size_t i = 0; i < st->count; i++) {
		uint8_t plain = st->fns[i].status;
		jt_plain += plain == ADA_SKIP_JUMP_TABLE;
		jt_mem += status[i] == ADA_SKIP_JUMP_TABLE;
		if (plain == status[i])
			continue;
		/* Newly hookable functions face discover_xref's check too. */
		if (plain == ADA_SKIP_JUMP_TABLE && status[i] == ADA_HOOK_OK)
			moved++;
		else if (plain == ADA_SKIP_JUMP_TABLE && status[i] == ADA_SKIP_BRANCH_INTO_PATCH)
			continue;
		else if (bad++ < 20)
			printf("# BAD %s %s: plain %s, with tables %s\n", path,
			       ada_hook_fn_name(st0, &st0->fns[i]), hook_skip_name(plain),
			       hook_skip_name(status[i]));
	}
	printf("# %s: jump_table %zu without reading switch tables, %zu with; %zu moved to "
	       "hooked (analysis without tables %.1f ms)\n",
	       path, jt_plain, jt_mem, moved, plain_ms);
	assert_int_equal(bad, 0);
}

static int check_file(const char *path)
{
	struct ada_hook_symtab st0, st;
	size_t len;
	if (access(path, R_OK) || ada_hook_symtab_read(path, NULL, &st0))
		return 0;
	uint8_t *img = load_image(path, &len);
	assert_non_null(img);
	st = st0;
	st.fns = malloc(st0.count * sizeof(*st.fns) + 1);
	uint8_t *status = malloc(st0.count + 1);
	struct hook_arch_plan *plans = calloc(st0.count + 1, sizeof(*plans));
	size_t *plen = calloc(st0.count + 1, sizeof(*plen));
	struct hook_arch_plan *slow_plans = calloc(st0.count + 1, sizeof(*slow_plans));
	assert_non_null(slow_plans);
	assert_true(st.fns && status && plans && plen);
	memcpy(st.fns, st0.fns, st0.count * sizeof(*st.fns));
	x86_use_fast_len = 0;
	double slow = analyse(&st0, img, &st, plans, &image_mem);
	size_t ok = 0;
	for (size_t i = 0; i < st.count; i++) {
		status[i] = st.fns[i].status;
		plen[i] = plans[i].patch_len;
		slow_plans[i] = plans[i];
		ok += status[i] == ADA_HOOK_OK;
	}
	x86_use_fast_len = 1;
	double fast = 1e9;
	for (int rep = 0; rep < 3; rep++) { /* the minimum: the machine may be busy */
		double t = analyse(&st0, img, &st, plans, &image_mem);
		fast = t < fast ? t : fast;
	}
	size_t diff = 0;
	for (size_t i = 0; i < st.count; i++) {
		if (st.fns[i].status == status[i] && plans[i].patch_len == plen[i] &&
		    same_insns(&plans[i], &slow_plans[i]))
			continue;
		if (diff++ < 20)
			printf("# DIFF %s %s: capstone %s/%zu, table %s/%zu\n", path,
			       ada_hook_fn_name(&st0, &st0.fns[i]), hook_skip_name(status[i]),
			       plen[i], hook_skip_name(st.fns[i].status), plans[i].patch_len);
	}
	printf("# %s: %zu functions, %zu hookable; capstone only %.1f ms, with the table %.1f ms\n",
	       path, st.count, ok, slow, fast);
	assert_int_equal(diff, 0);
	check_tables(path, &st0, img, &st, plans, status);
	free(plen);
	free(slow_plans);
	free(plans);
	free(status);
	free(st.fns);
	free(img);
	ada_hook_symtab_fini(&st0);
	return 1;
}

static void test_same_verdicts(void **state)
{
	(void)state;
	static const char *const files[] = {
	    "/lib/x86_64-linux-gnu/libc.so.6",
	    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	    "/usr/bin/python3.11",
	    "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
	    "/lib/x86_64-linux-gnu/libm.so.6",
	};
	int n = 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		n += check_file(files[i]);
	if (n == 0) {
		print_message("skip: none of the listed system libraries could be read\n");
		skip();
	}
}

/* Hand-assembled prologues the prologue classifies from the length table
 * (direct branches, [rip + disp32] operands, lea r64) or leaves to
 * capstone (prefixed or 0F-map rip operands, whose disp32 capstone 4
 * misreports: found after the ModRM byte and checked against the
 * decoded displacement): the same verdict and plan either way, and the
 * expected relocation kind of the first instruction (for a rip operand
 * also where its disp32 sits and where it points). */
static void test_prologue_kinds(void **state)
{
	(void)state;
	static const struct {
		uint8_t code[16];
		int status, kind;
	} cases[] = {
	    {{0xe8, 0x10, 0, 0, 0, 0x90}, ADA_HOOK_OK, X86_RELOC_CALL},
	    {{0xe9, 0x10, 0, 0, 0, 0x90}, ADA_HOOK_OK, X86_RELOC_JMP},
	    {{0x74, 0x10, 0x90, 0x90, 0x90, 0x90}, ADA_HOOK_OK, X86_RELOC_JCC},
	    {{0x0f, 0x85, 0x10, 0, 0, 0, 0x90}, ADA_HOOK_OK, X86_RELOC_JCC},
	    {{0x48, 0x8b, 0x05, 0x10, 0, 0, 0}, ADA_HOOK_OK, X86_RELOC_RIP},     /* mov rax,[rip] */
	    {{0x4c, 0x8d, 0x3d, 0x10, 0, 0, 0}, ADA_HOOK_OK, X86_RELOC_RIP_LEA}, /* lea r15,[rip] */
	    {{0x8d, 0x05, 0x10, 0, 0, 0}, ADA_HOOK_OK, X86_RELOC_RIP},           /* lea eax,[rip] */
	    {{0x83, 0x3d, 0x10, 0, 0, 0, 0x01}, ADA_HOOK_OK, X86_RELOC_RIP},     /* cmp [rip],1 */
	    {{0x66, 0x83, 0x3d, 0x10, 0, 0, 0, 0x00}, ADA_HOOK_OK, X86_RELOC_RIP}, /* cmp word */
	    {{0x66, 0x0f, 0x6f, 0x05, 0x10, 0, 0, 0}, ADA_HOOK_OK, X86_RELOC_RIP}, /* movdqa */
	    {{0x66, 0x0f, 0x54, 0x0d, 0x10, 0, 0, 0}, ADA_HOOK_OK, X86_RELOC_RIP}, /* andpd */
	    {{0x66, 0x0f, 0x2f, 0x05, 0x10, 0, 0, 0}, ADA_HOOK_OK, X86_RELOC_RIP}, /* comisd */
	    {{0xff, 0x15, 0x10, 0, 0, 0, 0x90}, ADA_HOOK_OK, X86_RELOC_CALL_RIP},  /* capstone */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t code[64] = {0};
		memcpy(code, cases[i].code, sizeof(cases[i].code));
		for (size_t k = sizeof(cases[i].code); k < sizeof(code); k++)
			code[k] = 0xc3; /* ret: nothing branches back */
		struct hook_arch_plan fast, slow;
		uint64_t a = (uint64_t)(uintptr_t)code;
		x86_use_fast_len = 0;
		int rs = hook_arch_prepare(code, a, sizeof(code), &slow);
		x86_use_fast_len = 1;
		int rf = hook_arch_prepare(code, a, sizeof(code), &fast);
		assert_int_equal(rs, cases[i].status);
		assert_int_equal(rf, rs);
		assert_int_equal(fast.patch_len, slow.patch_len);
		assert_true(same_insns(&fast, &slow));
		if (cases[i].kind >= 0)
			assert_int_equal(fast.insns[0].kind, cases[i].kind);
		if (cases[i].kind == X86_RELOC_RIP) { /* disp32 0x10 after the ModRM byte */
			const struct hook_arch_insn *in = &fast.insns[0];
			size_t m = cases[i].code[0] == 0x66   ? (cases[i].code[1] == 0x0f ? 3 : 2)
			           : cases[i].code[0] == 0x48 ? 2
			                                      : 1;
			assert_int_equal(in->disp_off, m + 1);
			assert_int_equal(in->target, a + in->len + 0x10);
		}
	}
}

/* Indirect jmps (FF /4) inside swept bodies, which the body sweep
 * measures without capstone (as `call r/m`, FF /2) and classifies as
 * capstone's would be: after a 3-instruction prologue (patch of 5
 * bytes), each form followed by `jmp rel8` back into the patch (the
 * sweep must step over the form exactly to see it) or by `ret`; the
 * same verdict and plan as with capstone alone, and the expected one.
 * Then each form cut short at the end of the function (the body is
 * allocated to its exact size: nothing past it is read). */
static void test_indirect_jmps(void **state)
{
	(void)state;
	static const struct {
		uint8_t b[8];
		size_t n;
		int alone; /* verdict followed by ret */
	} forms[] = {
	    {{0xff, 0xe0}, 2, ADA_HOOK_OK},                              /* jmp rax */
	    {{0x41, 0xff, 0xe3}, 3, ADA_HOOK_OK},                        /* jmp r11 */
	    {{0x48, 0xff, 0xe0}, 3, ADA_HOOK_OK},                        /* rex.w jmp rax */
	    {{0xff, 0x60, 0x08}, 3, ADA_HOOK_OK},                        /* jmp [rax+8] */
	    {{0xff, 0x25, 0x10, 0, 0, 0}, 6, ADA_HOOK_OK},               /* jmp [rip+16] */
	    {{0xff, 0x24, 0xc5, 0, 0x10, 0, 0}, 7, ADA_SKIP_JUMP_TABLE}, /* [rax*8+T] */
	    {{0xff, 0x64, 0x24, 0x08}, 4, ADA_SKIP_JUMP_TABLE},          /* [rsp+8] */
	    {{0xff, 0xa4, 0xc8, 0, 0x01, 0, 0}, 7, ADA_SKIP_JUMP_TABLE}, /* [rax+rcx*8+d] */
	    {{0x41, 0xff, 0x24, 0xc4}, 4, ADA_SKIP_JUMP_TABLE},          /* [r12+rax*8] */
	    {{0x3e, 0xff, 0xe0}, 3, ADA_HOOK_OK},                        /* notrack: capstone */
	    {{0x66, 0xff, 0xe0}, 3, -1},                                 /* capstone decides */
	};
	static const uint8_t pro[] = {0x55, 0x48, 0x89, 0xe5, 0x53}; /* push; mov; push */
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		for (int back = 0; back < 2; back++) {
			uint8_t code[32];
			size_t n = 0;
			memcpy(code, pro, sizeof(pro));
			n = sizeof(pro);
			memcpy(code + n, forms[i].b, forms[i].n);
			n += forms[i].n;
			if (back) {
				code[n] = 0xeb; /* jmp rel8 to offset 2, inside the patch */
				code[n + 1] = (uint8_t)(2 - (int)(n + 2));
				n += 2;
			} else {
				code[n++] = 0xc3;
			}
			struct hook_arch_plan fast, slow;
			uint64_t a = (uint64_t)(uintptr_t)code;
			x86_use_fast_len = 0;
			int rs = hook_arch_prepare(code, a, n, &slow);
			x86_use_fast_len = 1;
			int rf = hook_arch_prepare(code, a, n, &fast);
			if (rf != rs || (back && rs != ADA_SKIP_BRANCH_INTO_PATCH) ||
			    (!back && forms[i].alone >= 0 && rs != forms[i].alone))
				fail_msg("form %zu back %d: capstone %s, table %s", i, back,
				         hook_skip_name(rs), hook_skip_name(rf));
			assert_int_equal(fast.patch_len, slow.patch_len);
			assert_true(same_insns(&fast, &slow));
		}
		/* Cut short: every strict prefix of the form ends the body. */
		for (size_t cut = 1; cut < forms[i].n; cut++) {
			size_t n = sizeof(pro) + cut;
			uint8_t *code = malloc(n);
			assert_non_null(code);
			memcpy(code, pro, sizeof(pro));
			memcpy(code + sizeof(pro), forms[i].b, cut);
			struct hook_arch_plan fast, slow;
			uint64_t a = (uint64_t)(uintptr_t)code;
			x86_use_fast_len = 0;
			int rs = hook_arch_prepare(code, a, n, &slow);
			x86_use_fast_len = 1;
			int rf = hook_arch_prepare(code, a, n, &fast);
			if (rf != rs)
				fail_msg("form %zu cut at %zu: capstone %s, table %s", i, cut,
				         hook_skip_name(rs), hook_skip_name(rf));
			assert_true(same_insns(&fast, &slow));
			free(code);
		}
	}
}

/* A [rip+disp] load is judged by the value in memory (with the image's
 * memory view): a pointer elsewhere cannot be a label of the function,
 * one strictly inside it can; without the view, as before. */
static void test_materialize_rip_value(void **state)
{
	(void)state;
	/* push rbx; mov rax,[rip+disp]; pop rbx; jmp rax: two displaced
	 * instructions, so the `jmp rax` matters */
	uint8_t code[32] = {0x53, 0x48, 0x8b, 0x05, 0, 0, 0, 0, 0x5b, 0xff, 0xe0};
	uint64_t slot[2];
	uint64_t a = (uint64_t)(uintptr_t)code;
	int64_t d = (int64_t)(uintptr_t)&slot[0] - (int64_t)(a + 8);
	int32_t disp = (int32_t)d;
	if (d != disp)
		skip(); /* both on this stack frame: always this close */
	memcpy(code + 4, &disp, 4);
	struct hook_arch_region r = {(uint64_t)(uintptr_t)slot, sizeof(slot),
	                             (const uint8_t *)slot};
	struct hook_arch_memview mv = {&r, 1};
	struct hook_arch_plan plan;
	slot[0] = 0x1234; /* no code of this function */
	assert_int_equal(hook_arch_prepare_mem(code, a, 11, &mv, &plan), ADA_HOOK_OK);
	assert_int_equal(hook_arch_prepare_mem(code, a, 11, NULL, &plan), ADA_SKIP_JUMP_TABLE);
	slot[0] = a + 8; /* a label inside it */
	assert_int_equal(hook_arch_prepare_mem(code, a, 11, &mv, &plan), ADA_SKIP_JUMP_TABLE);
	slot[0] = a; /* its own entry: a tail call to itself */
	assert_int_equal(hook_arch_prepare_mem(code, a, 11, &mv, &plan), ADA_HOOK_OK);
}

/* The materialize scan (a `jmp reg` body computing its own code
 * address?) answers from the length table where it can: after the
 * prologue and `jmp rax`, one instruction that decides (or not), then
 * ret; the same verdict and plan as with capstone alone. */
static void test_materialize(void **state)
{
	(void)state;
	static const struct {
		uint8_t b[12];
		size_t n;
		int want;
	} cases[] = {
	    /* a direct jump inside leaves no address anywhere */
	    {{0x74, 0x00}, 2, ADA_HOOK_OK},                           /* je next: inside */
	    {{0x0f, 0x84, 0, 0, 0, 0}, 6, ADA_HOOK_OK},               /* je rel32 next */
	    {{0xe8, 0xf4, 0xff, 0xff, 0xff}, 5, ADA_HOOK_OK},         /* call self */
	    {{0xe8, 0xfc, 0xff, 0xff, 0xff}, 5, ADA_SKIP_JUMP_TABLE}, /* call self+8 */
	    {{0xe9, 0x00, 0x10, 0, 0}, 5, ADA_HOOK_OK},               /* jmp far outside */
	    {{0x48, 0x8d, 0x05, 0xf0, 0xff, 0xff, 0xff}, 7, ADA_SKIP_JUMP_TABLE}, /* lea rip */
	    {{0x8b, 0x05, 0x00, 0x10, 0, 0}, 6, ADA_SKIP_JUMP_TABLE},    /* mov eax,[rip] */
	    {{0x89, 0x05, 0x00, 0x10, 0, 0}, 6, ADA_HOOK_OK},            /* mov [rip],eax */
	    {{0x8b, 0x04, 0x25, 0, 0x10, 0, 0}, 7, ADA_SKIP_JUMP_TABLE}, /* mov eax,[abs] */
	    {{0x64, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, 8, ADA_HOOK_OK},   /* mov eax,fs:[0x28] */
	    {{0xb8, 0x00, 0x10, 0, 0}, 5, ADA_HOOK_OK},                  /* mov eax,imm32 */
	    {{0x83, 0xc0, 0xff}, 3, ADA_HOOK_OK},                        /* add eax,-1 */
	    {{0x48, 0x83, 0xc4, 0x80}, 4, ADA_HOOK_OK},                  /* add rsp,-128 */
	    {{0xd1, 0xe0}, 2, ADA_HOOK_OK},                              /* shl eax,1 */
	    {{0x6a, 0xff}, 2, ADA_HOOK_OK},                              /* push -1 */
	};
	static const uint8_t pro[] = {0x55, 0x48, 0x89, 0xe5, 0x53, 0xff, 0xe0}; /* ..; jmp rax */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t code[32];
		memcpy(code, pro, sizeof(pro));
		memcpy(code + sizeof(pro), cases[i].b, cases[i].n);
		size_t n = sizeof(pro) + cases[i].n;
		code[n++] = 0xc3;
		struct hook_arch_plan fast, slow;
		uint64_t a = (uint64_t)(uintptr_t)code;
		x86_use_fast_len = 0;
		int rs = hook_arch_prepare(code, a, n, &slow);
		x86_use_fast_len = 1;
		int rf = hook_arch_prepare(code, a, n, &fast);
		if (rf != rs || rs != cases[i].want)
			fail_msg("case %zu: capstone %s, table %s", i, hook_skip_name(rs),
			         hook_skip_name(rf));
		assert_int_equal(fast.patch_len, slow.patch_len);
		assert_true(same_insns(&fast, &slow));
	}
}

/* A PIC switch dispatch (found by fuzz_hook_arch) whose body holds
 * `0F 1F C3`, which the length table measures (nop with a register
 * operand) and capstone 4 rejects: the switch reader, which leaves most
 * instructions undecoded, must decode this one as before and reach
 * capstone's verdict (jump_table: undecodable); the same with the
 * reader on capstone alone. The table is read from the bytes themselves. */
static void test_switch_lenient(void **state)
{
	(void)state;
	static const uint8_t body[] = {
	    0x55, 0x48, 0x89, 0xe5, 0x83, 0x44, 0x43, 0x03, 0x77, 0x36, 0x89, 0x00, 0x57, 0xc3,
	    0xb8, 0x0d, 0x00, 0x20, 0xf3, 0x0f, 0x1f, 0xc3, 0x89, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x00, 0x44, 0x43, 0x03, 0x0d, 0x00, 0xff, 0xff, 0xff, 0x00, 0x00, 0x5d, 0xc3, 0x31,
	    0x31, 0x89, 0xe5, 0x83, 0xff, 0x03, 0x77, 0x2e, 0x89, 0xff, 0x48, 0x8d, 0x15, 0x00,
	    0x5d, 0xc3, 0x31, 0x31, 0x89, 0xe5, 0x83, 0xff, 0x03, 0x77, 0x2e, 0x89, 0xff, 0x48,
	    0x8d, 0x15, 0x2e, 0x00, 0x00, 0x00, 0x48, 0x63, 0x04, 0xba, 0x48, 0x01, 0xd0, 0xff,
	    0xe0, 0xb8, 0x0a, 0x00, 0x00, 0x00, 0x5d, 0xc3, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x89, 0x00, 0x57, 0xc3, 0xb8, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x32, 0xc3, 0xc3, 0x31, 0xe3, 0xc0,
	    0x00, 0x00, 0xb8, 0x00, 0x00, 0x00, 0x48, 0x63, 0x04, 0xba, 0x48, 0x01, 0x00, 0x00,
	    0x5d, 0xc3, 0xb8, 0x5d, 0x0d, 0x00, 0x00, 0x00, 0x5d, 0xc3};
	uint8_t *buf = malloc(sizeof(body));
	assert_non_null(buf);
	memcpy(buf, body, sizeof(body));
	uint64_t a = (uint64_t)(uintptr_t)buf;
	struct hook_arch_region r = {a, sizeof(body), buf};
	struct hook_arch_memview mem = {&r, 1};
	struct hook_arch_plan fast, slow;
	x86_use_sw_fast = 0;
	int rs = hook_arch_prepare_mem(buf, a, sizeof(body), &mem, &slow);
	x86_use_sw_fast = 1;
	int rf = hook_arch_prepare_mem(buf, a, sizeof(body), &mem, &fast);
	assert_int_equal(rs, ADA_SKIP_JUMP_TABLE);
	assert_int_equal(rf, rs);
	free(buf);
}

/* Hand-assembled switch dispatches, PIC (lea + movsxd + add + jmp reg)
 * and absolute (jmp [idx*8 + T]), each with its table in the memory view:
 * the switch reader reaches the same verdict and plan with the compact
 * decoder (x86_use_fast_len = 1: every instruction of these bodies is
 * one it decodes) as with capstone alone, hooked when the table is sound,
 * jump_table when an entry lands in the patch, the bound check is
 * missing or covers more entries than the table's targets. */
static void sw_case(uint8_t *buf, size_t fn_size, size_t buf_size, int want)
{
	struct hook_arch_region r = {(uint64_t)(uintptr_t)buf, buf_size, buf};
	struct hook_arch_memview mem = {&r, 1};
	struct hook_arch_plan fast, slow;
	uint64_t a = (uint64_t)(uintptr_t)buf;

	for (size_t off = 0; off < fn_size;) {
		struct x86_sw_insn in;
		size_t n = x86_sw_fast(buf + off, fn_size - off, a + off, &in);
		if (!n)
			fail_msg("+%zu: not decoded by x86_sw_fast", off);
		off += n;
	}
	x86_use_fast_len = 0;
	int rs = hook_arch_prepare_mem(buf, a, fn_size, &mem, &slow);
	x86_use_fast_len = 1;
	int rf = hook_arch_prepare_mem(buf, a, fn_size, &mem, &fast);
	assert_int_equal(rs, want);
	assert_int_equal(rf, rs);
	assert_int_equal(fast.patch_len, slow.patch_len);
	assert_true(same_insns(&fast, &slow));
	/* Without the memory view no table is read. */
	assert_int_equal(hook_arch_prepare(buf, a, fn_size, &fast), ADA_SKIP_JUMP_TABLE);
}

static void test_switch_tables(void **state)
{
	(void)state;
	/* PIC: table of int32 offsets from T at +64. */
	static const uint8_t pic[] = {
	    0x55,                                  /* 0: push rbp */
	    0x48, 0x89, 0xe5,                      /* 1: mov rbp, rsp */
	    0x83, 0xff, 0x03,                      /* 4: cmp edi, 3 */
	    0x77, 46,                              /* 7: ja 55 */
	    0x89, 0xff,                            /* 9: mov edi, edi */
	    0x48, 0x8d, 0x15, 46,   0, 0,    0,    /* 11: lea rdx, [rip + 46] = T */
	    0x48, 0x63, 0x04, 0xba,                /* 18: movsxd rax, [rdx + rdi*4] */
	    0x48, 0x01, 0xd0,                      /* 22: add rax, rdx */
	    0xff, 0xe0,                            /* 25: jmp rax */
	    0xb8, 10,   0,    0,    0, 0x5d, 0xc3, /* 27: case 0 */
	    0xb8, 11,   0,    0,    0, 0x5d, 0xc3, /* 34: case 1 */
	    0xb8, 12,   0,    0,    0, 0x5d, 0xc3, /* 41: case 2 */
	    0xb8, 13,   0,    0,    0, 0x5d, 0xc3, /* 48: case 3 */
	    0x31, 0xc0, 0x5d, 0xc3,                /* 55: default */
	};
	static const int32_t pic_tab[4] = {27 - 64, 34 - 64, 41 - 64, 48 - 64};
	uint8_t buf[128];
	const size_t fn = sizeof(pic);
	enum { T = 64 };

	memset(buf, 0, sizeof(buf));
	memcpy(buf, pic, sizeof(pic));
	memcpy(buf + T, pic_tab, sizeof(pic_tab));
	sw_case(buf, fn, sizeof(buf), ADA_HOOK_OK);
	int32_t into_patch = 4 - T; /* entry 2 -> +4, inside the 7-byte patch */
	memcpy(buf + T + 8, &into_patch, 4);
	sw_case(buf, fn, sizeof(buf), ADA_SKIP_JUMP_TABLE);
	memcpy(buf + T, pic_tab, sizeof(pic_tab));
	buf[6] = 4; /* cmp edi, 4: a fifth entry (zero: T, outside the function) */
	sw_case(buf, fn, sizeof(buf), ADA_SKIP_JUMP_TABLE);
	static const uint8_t nop5[] = {0x0f, 0x1f, 0x44, 0, 0};
	memcpy(buf + 4, nop5, 5); /* no bound check at all */
	sw_case(buf, fn, sizeof(buf), ADA_SKIP_JUMP_TABLE);

	/* Absolute: jmp [rdi*8 + T], T a 32-bit address, so the function
	 * must sit low: skipped when that address range is taken. */
	static const uint8_t absf[] = {
	    0x55, 0x48, 0x89, 0xe5,                /* 0: push rbp; mov rbp, rsp */
	    0x83, 0xff, 0x03,                      /* 4: cmp edi, 3 */
	    0x77, 37,                              /* 7: ja 46 */
	    0x89, 0xff,                            /* 9: mov edi, edi */
	    0xff, 0x24, 0xfd, 0,    0, 0,    0,    /* 11: jmp [rdi*8 + T] */
	    0xb8, 10,   0,    0,    0, 0x5d, 0xc3, /* 18: case 0 */
	    0xb8, 11,   0,    0,    0, 0x5d, 0xc3, /* 25: case 1 */
	    0xb8, 12,   0,    0,    0, 0x5d, 0xc3, /* 32: case 2 */
	    0xb8, 13,   0,    0,    0, 0x5d, 0xc3, /* 39: case 3 */
	    0x31, 0xc0, 0x5d, 0xc3,                /* 46: default */
	};
	uint8_t *low = mmap((void *)0x30000000, 4096, PROT_READ | PROT_WRITE,
	                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (low == MAP_FAILED || low != (uint8_t *)0x30000000) {
		print_message("skip: absolute switch: 0x30000000 not available\n");
		if (low != MAP_FAILED)
			munmap(low, 4096);
		skip();
	}
	uint64_t base = (uint64_t)(uintptr_t)low, tab = base + 56;
	uint32_t t32 = (uint32_t)tab;
	memcpy(low, absf, sizeof(absf));
	memcpy(low + 14, &t32, 4);
	for (uint64_t i = 0; i < 4; i++) {
		uint64_t e = base + 18 + 7 * i;
		memcpy(low + 56 + 8 * i, &e, 8);
	}
	sw_case(low, sizeof(absf), 4096, ADA_HOOK_OK);
	uint64_t bad = base + 2; /* inside the patch */
	memcpy(low + 56 + 8, &bad, 8);
	sw_case(low, sizeof(absf), 4096, ADA_SKIP_JUMP_TABLE);
	munmap(low, 4096);
}

/* One thread's share of the functions, as the agent's start-up splits a
 * module (agent_install.c): [lo, hi). */
struct share {
	const struct ada_hook_symtab *st0;
	uint8_t *img;
	uint8_t *status;
	struct hook_arch_plan *plans;
	size_t lo, hi;
};

static void *share_run(void *arg)
{
	const struct share *s = arg;
	for (size_t i = s->lo; i < s->hi; i++) {
		memset(&s->plans[i], 0, sizeof(s->plans[i]));
		s->status[i] = s->st0->fns[i].status;
		if (s->status[i] != ADA_HOOK_OK)
			continue;
		uint64_t a = (uint64_t)(uintptr_t)s->img + s->st0->fns[i].offset;
		s->status[i] = (uint8_t)hook_arch_prepare_mem(
		    (const uint8_t *)a, a, s->st0->fns[i].size, &image_mem, &s->plans[i]);
	}
	return NULL;
}

/* Two threads analysing halves of one image side by side (each takes a
 * free capstone handle of prepare's pool) give the verdicts and whole
 * plans of one thread alone; split at the agent's point (half of the
 * candidates' bytes) and at two others. Returns 0 when path is missing. */
static int check_threads(const char *path)
{
	struct ada_hook_symtab st0;
	size_t len;
	if (access(path, R_OK) || ada_hook_symtab_read(path, NULL, &st0))
		return 0;
	uint8_t *img = load_image(path, &len);
	size_t n = st0.count;
	uint8_t *st1 = calloc(n + 1, 1), *st2 = calloc(n + 1, 1);
	struct hook_arch_plan *p1 = calloc(n + 1, sizeof(*p1)), *p2 = calloc(n + 1, sizeof(*p2));
	assert_true(img && st1 && st2 && p1 && p2);
	struct share one = {&st0, img, st1, p1, 0, n};
	share_run(&one);
	uint64_t total = 0, half = 0;
	size_t mid = 0;
	for (size_t i = 0; i < n; i++)
		total += st0.fns[i].status == ADA_HOOK_OK ? st0.fns[i].size : 0;
	for (size_t i = 0; i < n && half < total / 2; i++) {
		half += st0.fns[i].status == ADA_HOOK_OK ? st0.fns[i].size : 0;
		mid = i + 1;
	}
	const size_t splits[] = {mid, n / 3, n - n / 5};
	for (size_t k = 0; k < sizeof(splits) / sizeof(splits[0]); k++) {
		struct share a = {&st0, img, st2, p2, 0, splits[k]};
		struct share b = {&st0, img, st2, p2, splits[k], n};
		pthread_t thr;
		assert_int_equal(pthread_create(&thr, NULL, share_run, &b), 0);
		share_run(&a);
		assert_int_equal(pthread_join(thr, NULL), 0);
		size_t diff = 0, ok = 0;
		for (size_t i = 0; i < n; i++) {
			ok += st1[i] == ADA_HOOK_OK;
			if (st1[i] == st2[i] && p1[i].patch_len == p2[i].patch_len &&
			    p1[i].fn_addr == p2[i].fn_addr && same_insns(&p1[i], &p2[i]))
				continue;
			if (diff++ < 20)
				printf("# DIFF %s %s: one thread %s/%zu, two %s/%zu\n", path,
				       ada_hook_fn_name(&st0, &st0.fns[i]), hook_skip_name(st1[i]),
				       p1[i].patch_len, hook_skip_name(st2[i]), p2[i].patch_len);
		}
		printf("# %s: split at %zu of %zu, %zu hookable: two threads == one\n", path,
		       splits[k], n, ok);
		assert_int_equal(diff, 0);
	}
	free(st1);
	free(st2);
	free(p1);
	free(p2);
	free(img);
	ada_hook_symtab_fini(&st0);
	return 1;
}

static void test_two_threads(void **state)
{
	(void)state;
	static const char *const files[] = {
	    "/lib/x86_64-linux-gnu/libc.so.6",
	    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	};
	int n = 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		n += check_threads(files[i]);
	if (n == 0) {
		print_message("skip: none of the listed system libraries could be read\n");
		skip();
	}
}

/* `threads`: test_two_threads alone (the thread-sanitizer stage runs it). */
int main(int argc, char **argv)
{
	elf_version(EV_CURRENT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prologue_kinds), cmocka_unit_test(test_indirect_jmps),
	    cmocka_unit_test(test_materialize),    cmocka_unit_test(test_materialize_rip_value),
	    cmocka_unit_test(test_switch_lenient), cmocka_unit_test(test_switch_tables),
	    cmocka_unit_test(test_same_verdicts),  cmocka_unit_test(test_two_threads)};
	const struct CMUnitTest threads[] = {cmocka_unit_test(test_two_threads)};
	if (argc > 1 && !strcmp(argv[1], "threads"))
		return cmocka_run_group_tests(threads, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
