/*
 * The agent's detail-lane pieces that are pure code: the stack snapshot's
 * bounds (agent_stack_take), the detail set's O(1) membership
 * (agent_dset_has), and the detail keys of ADA_HOOK_CONFIG.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_internal.h"

/* A thread near its stack top gets a shorter snapshot and the flag says
 * so; one off its stack gets none; whole words only. */
static void test_stack_take_bounds(void **state)
{
	(void)state;
	uint32_t fl;
	const uint64_t lo = 0x10000, hi = 0x20000;
	assert_int_equal(agent_stack_take(lo, hi, hi - 4096, 128, &fl), 128);
	assert_int_equal(fl, 0);
	assert_int_equal(agent_stack_take(lo, hi, hi - 40, 128, &fl), 40);
	assert_int_equal(fl, 0x1);
	assert_int_equal(agent_stack_take(lo, hi, hi - 8, 512, &fl), 8);
	assert_int_equal(agent_stack_take(lo, hi, hi - 128, 128, &fl), 128);
	assert_int_equal(fl, 0);
	/* an rsp that is not 8-aligned: never a partial word past hi */
	assert_int_equal(agent_stack_take(lo, hi, hi - 13, 128, &fl), 8);
	assert_int_equal(fl, 0x1);
	assert_int_equal(agent_stack_take(lo, hi, hi - 5, 128, &fl), 0);
	/* outside the stack, or bounds unknown */
	assert_int_equal(agent_stack_take(lo, hi, hi, 128, &fl), 0);
	assert_int_equal(fl, 0x2);
	assert_int_equal(agent_stack_take(lo, hi, lo - 8, 128, &fl), 0);
	assert_int_equal(fl, 0x2);
	assert_int_equal(agent_stack_take(0, 0, hi - 4096, 128, &fl), 0);
	assert_int_equal(fl, 0x2);
	/* nothing asked, nothing flagged */
	assert_int_equal(agent_stack_take(lo, hi, lo - 8, 0, &fl), 0);
	assert_int_equal(fl, 0);
}

/* The copy the handlers make, on a real mapping whose next page is
 * inaccessible: reading what agent_stack_take allows never faults. */
static void test_stack_take_no_fault(void **state)
{
	(void)state;
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m =
	    mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m + pg, (size_t)pg, PROT_NONE), 0);
	uint64_t hi = (uint64_t)(uintptr_t)(m + pg), lo = (uint64_t)(uintptr_t)m;
	memset(m, 0xab, (size_t)pg);
	for (uint64_t back = 0; back <= 600; back++) {
		uint32_t fl;
		uint64_t rsp = hi - back;
		uint32_t n = agent_stack_take(lo, hi, rsp, 512, &fl);
		uint64_t sum = 0;
		for (uint32_t i = 0; i < (n + 7) / 8; i++) { /* rsp may be odd: no aligned loads */
			uint64_t w;
			memcpy(&w, (const uint8_t *)(uintptr_t)rsp + 8 * i, 8);
			sum += w;
		}
		assert_true(n <= back && n <= 512);
		assert_true(n == 0 || sum != 0);
	}
	munmap(m, (size_t)pg * 2);
}

static void test_dset(void **state)
{
	(void)state;
	static const uint64_t zero[2];
	static const uint64_t m1[2] = {0x5ull, 1ull << 3}; /* symbols 0, 2, 67 */
	static const uint64_t *const bits[3] = {zero, m1, zero};
	struct agent_dset every = {.all = 1};
	struct agent_dset none = {.nbits = 0};
	struct agent_dset some = {.nbits = 128, .max_mod = 2, .bits = bits};
	assert_true(agent_dset_has(&every, (7ull << 32) | 12345));
	assert_false(agent_dset_has(&none, (1ull << 32) | 0));
	assert_true(agent_dset_has(&some, (1ull << 32) | 0));
	assert_true(agent_dset_has(&some, (1ull << 32) | 2));
	assert_true(agent_dset_has(&some, (1ull << 32) | 67));
	assert_false(agent_dset_has(&some, (1ull << 32) | 1));
	assert_false(agent_dset_has(&some, (1ull << 32) | 128)); /* past every bitmap */
	assert_false(agent_dset_has(&some, (0ull << 32) | 0));   /* module without a member */
	assert_false(agent_dset_has(&some, (2ull << 32) | 2));
	assert_false(agent_dset_has(&some, (3ull << 32) | 0)); /* module loaded after */
	assert_false(agent_dset_has(&some, (99ull << 32) | 2));
}

/* The detail lane's out-of-line answer (agent_detail_ask): a module the
 * recorder's blob has no entry for follows the agent's own set; a blob's
 * entry wins over the own set; an own set without rules ("every
 * function") answers "not a member" for such a module. */
static void test_detail_ask_unknown_module(void **state)
{
	(void)state;
	static const uint64_t zero[2];
	static const uint64_t m1[2] = {0x5ull, 1ull << 3}; /* symbols 0, 2, 67 */
	static const uint64_t *const bits[4] = {zero, m1, zero, m1};
	struct agent_dset every = {.all = 1};
	struct agent_dset none = {.nbits = 0};
	struct agent_dset own = {.nbits = 128, .max_mod = 3, .bits = bits};
	/* The blob: module 0 only (n_mods 1), a bitset with symbol 2. */
	struct ada_keysym_builder *b;
	assert_int_equal(ada_keysym_builder_new(&b), 0);
	assert_int_equal(ada_keysym_builder_module(b, 0, 64), 0);
	uint32_t two = 2;
	assert_int_equal(ada_keysym_builder_add(b, 0, &two, 1), 0);
	size_t len = ada_keysym_builder_size(b);
	uint8_t *blob = aligned_alloc(64, len);
	assert_non_null(blob);
	assert_int_equal(ada_keysym_builder_write(b, 1, blob, len, NULL), 0);
	ada_keysym_builder_free(b);
	uint64_t mask = ada_keysym_mask_for(len);
	assert_int_equal(((const struct ada_keysym_header *)blob)->n_mods, 1);
	/* module 1 >= n_mods: the own set's bit */
	assert_true(agent_detail_ask(blob, mask, 0, &own, 1ull << 32 | 67));
	assert_true(agent_detail_ask(blob, mask, 0, &own, 1ull << 32 | 0));
	assert_false(agent_detail_ask(blob, mask, 0, &own, 1ull << 32 | 1));
	assert_true(agent_detail_ask(blob, mask, 0, &own, 3ull << 32 | 2));
	/* own set: a module with no member, one beyond it, past its bitmaps */
	assert_false(agent_detail_ask(blob, mask, 0, &own, 2ull << 32 | 2));
	assert_false(agent_detail_ask(blob, mask, 0, &own, 9ull << 32 | 2));
	assert_false(agent_detail_ask(blob, mask, 0, &own, 1ull << 32 | 200));
	/* no own set: not a member */
	assert_false(agent_detail_ask(blob, mask, 0, &none, 1ull << 32 | 67));
	assert_false(agent_detail_ask(blob, mask, 0, &every, 1ull << 32 | 67));
	/* module 0 has an entry: the blob decides, whatever the own set says */
	assert_true(agent_detail_ask(blob, mask, 0, &none, 0ull << 32 | 2));
	assert_false(agent_detail_ask(blob, mask, 0, &every, 0ull << 32 | 0));
	assert_false(agent_detail_ask(blob, mask, 0, &own, 0ull << 32 | 0));
	free(blob);
}

/* A gap (an ADA_KEYSYM_UNCOVERED entry: the recorder read module 2's
 * .syms but not module 1's) is answered like a module past the
 * directory: by the own set; a declared module without members (NONE)
 * stays "not a member" whatever the own set says. */
static void test_detail_ask_gap_module(void **state)
{
	(void)state;
	static const uint64_t zero[2];
	static const uint64_t m1[2] = {0x5ull, 1ull << 3}; /* symbols 0, 2, 67 */
	static const uint64_t *const bits[4] = {zero, m1, m1, m1};
	struct agent_dset own = {.nbits = 128, .max_mod = 3, .bits = bits};
	struct agent_dset every = {.all = 1};
	/* The blob: module 2 with symbol 5, module 3 declared empty, module 1 not. */
	struct ada_keysym_builder *b;
	assert_int_equal(ada_keysym_builder_new(&b), 0);
	uint32_t five = 5;
	assert_int_equal(ada_keysym_builder_add(b, 2, &five, 1), 0);
	assert_int_equal(ada_keysym_builder_module(b, 3, 64), 0);
	size_t len = ada_keysym_builder_size(b);
	uint8_t *blob = aligned_alloc(64, len);
	assert_non_null(blob);
	assert_int_equal(ada_keysym_builder_write(b, 1, blob, len, NULL), 0);
	ada_keysym_builder_free(b);
	uint64_t mask = ada_keysym_mask_for(len);
	const struct ada_keysym_mod *dir = (const void *)(blob + 64);
	assert_int_equal(dir[1].kind, ADA_KEYSYM_UNCOVERED);
	assert_int_equal(dir[3].kind, ADA_KEYSYM_NONE);
	/* the gap: the own set's bits */
	assert_true(agent_detail_ask(blob, mask, 0, &own, 1ull << 32 | 67));
	assert_true(agent_detail_ask(blob, mask, 0, &own, 1ull << 32 | 2));
	assert_false(agent_detail_ask(blob, mask, 0, &own, 1ull << 32 | 5));
	assert_false(agent_detail_ask(blob, mask, 0, &every, 1ull << 32 | 67));
	/* module 0 (never declared, below): a gap too */
	assert_false(agent_detail_ask(blob, mask, 0, &own, 0ull << 32 | 2));
	/* declared: the blob decides */
	assert_true(agent_detail_ask(blob, mask, 0, &own, 2ull << 32 | 5));
	assert_false(agent_detail_ask(blob, mask, 0, &own, 2ull << 32 | 2));
	assert_false(agent_detail_ask(blob, mask, 0, &own, 3ull << 32 | 2));
	free(blob);
}

/* agent_detail_decide: the own set's answer for a module the blob says
 * nothing about (a gap, or past the directory) carries
 * AGENT_DETAIL_START_RULES when the blob is ADA_KEYSYM_F_LIVE (the agent
 * counts it: handlers.c), never when it is not, and never for a module
 * the blob decides, member or not. */
static void test_detail_decide_live(void **state)
{
	(void)state;
	static const uint64_t zero[2];
	static const uint64_t m1[2] = {0x5ull, 1ull << 3}; /* symbols 0, 2, 67 */
	static const uint64_t *const bits[4] = {zero, m1, m1, m1};
	struct agent_dset own = {.nbits = 128, .max_mod = 3, .bits = bits};
	struct agent_dset every = {.all = 1};
	for (int live = 0; live < 2; live++) {
		/* module 2 with symbol 5, module 1 a gap, module 3 past it */
		struct ada_keysym_builder *b;
		assert_int_equal(ada_keysym_builder_new(&b), 0);
		uint32_t five = 5;
		assert_int_equal(ada_keysym_builder_add(b, 2, &five, 1), 0);
		if (live)
			ada_keysym_builder_set_live(b);
		size_t len = ada_keysym_builder_size(b);
		uint8_t *blob = aligned_alloc(64, len);
		assert_non_null(blob);
		struct ada_keysym_info info;
		assert_int_equal(ada_keysym_builder_write(b, 1, blob, len, &info), 0);
		assert_int_equal(info.live, live);
		ada_keysym_info_fini(&info);
		ada_keysym_builder_free(b);
		assert_int_equal(ada_keysym_validate(blob, len, &info, NULL), 0);
		assert_int_equal(info.live, live);
		ada_keysym_info_fini(&info);
		uint64_t mask = ada_keysym_mask_for(len);
		int sr = live ? AGENT_DETAIL_START_RULES : 0;
		/* the gap and the module past the directory: own set, flagged */
		assert_int_equal(agent_detail_decide(blob, mask, 0, &own, 1ull << 32 | 67), 1 | sr);
		assert_int_equal(agent_detail_decide(blob, mask, 0, &own, 1ull << 32 | 5), sr);
		assert_int_equal(agent_detail_decide(blob, mask, 0, &own, 3ull << 32 | 2), 1 | sr);
		assert_int_equal(agent_detail_decide(blob, mask, 0, &own, 9ull << 32 | 2), sr);
		assert_int_equal(agent_detail_decide(blob, mask, 0, &every, 1ull << 32 | 2), sr);
		/* the blob decides: never flagged */
		assert_int_equal(agent_detail_decide(blob, mask, 0, &own, 2ull << 32 | 5), 1);
		assert_int_equal(agent_detail_decide(blob, mask, 0, &own, 2ull << 32 | 2), 0);
		/* agent_detail_ask: the answer alone */
		assert_true(agent_detail_ask(blob, mask, 0, &own, 1ull << 32 | 67));
		assert_false(agent_detail_ask(blob, mask, 0, &own, 1ull << 32 | 5));
		free(blob);
	}
}

static void test_config_keys(void **state)
{
	(void)state;
	struct ada_hook_config c;
	const char *ok = "detail=1;stack-bytes=512;detail-symbol=dt_*,main";
	assert_int_equal(ada_hook_config_parse(ok, strlen(ok), &c), 0);
	assert_true(c.detail);
	assert_int_equal(c.stack_bytes, 512);
	assert_int_equal(c.n_detail_sym, 2);
	assert_string_equal(c.detail_sym[1], "main");
	ada_hook_config_fini(&c);
	assert_int_equal(ada_hook_config_parse("", 0, &c), 0);
	assert_false(c.detail);
	assert_int_equal(c.stack_bytes, 128);
	ada_hook_config_fini(&c);
	static const char *const bad[] = {"stack-bytes=513", "stack-bytes=-1", "stack-bytes=",
	                                  "stack-bytes=12a", "detail=2",       "stack-bytes=1000"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(ada_hook_config_parse(bad[i], strlen(bad[i]), &c), -EINVAL);
		ada_hook_config_fini(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stack_take_bounds),
	    cmocka_unit_test(test_stack_take_no_fault),
	    cmocka_unit_test(test_dset),
	    cmocka_unit_test(test_detail_ask_unknown_module),
	    cmocka_unit_test(test_detail_ask_gap_module),
	    cmocka_unit_test(test_detail_decide_live),
	    cmocka_unit_test(test_config_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
