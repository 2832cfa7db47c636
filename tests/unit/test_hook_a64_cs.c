/*
 * The arm64 relocator against an independent decoder: random words of
 * every PC-relative class (random immediates, registers, conditions) at
 * random function and trampoline addresses are planned and relocated,
 * and capstone's AArch64 decoding of the original (its target, value or
 * address, register, condition, bit) is compared with what the emitted
 * body computes: the value its movz/movk leave in a register, the
 * target of each branch as capstone decodes it, the inverted condition
 * of the skip and where it skips to. Deterministic (a fixed xorshift
 * seed); host-independent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <capstone/capstone.h>

#include "a64_internal.h"

#define CASES 4000

static csh cs;
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned checked; /* cases capstone decoded and the checks ran on */

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* One capstone-decoded word at pc (detail on); false when undecodable. */
static bool dis(uint32_t w, uint64_t pc, cs_insn **out)
{
	uint8_t b[4];
	memcpy(b, &w, 4);
	return cs_disasm(cs, b, 4, pc, 1, out) == 1;
}

/* The body as the emitted code computes it: registers set by movz/movk
 * (decoded here: their encodings are the goldens' of test_hook_a64),
 * everything else through capstone. */
struct sim {
	uint64_t x[32];
	uint32_t set; /* bit r: x[r] written by movz/movk */
};

static bool sim_mov(struct sim *s, uint32_t w)
{
	unsigned rd = w & 31, hw = (w >> 21) & 3;
	uint64_t imm = (uint64_t)((w >> 5) & 0xffff) << (16 * hw);
	if ((w & 0xff800000u) == 0xd2800000u) { /* movz */
		s->x[rd] = imm;
	} else if ((w & 0xff800000u) == 0xf2800000u) { /* movk */
		s->x[rd] = (s->x[rd] & ~(0xffffull << (16 * hw))) | imm;
	} else {
		return false;
	}
	s->set |= 1u << rd;
	return true;
}

/* Runs the movz/movk prefix of body from *i; the next word's index. */
static size_t sim_movs(struct sim *s, const uint8_t *body, size_t n, size_t i)
{
	while (i < n && sim_mov(s, a64_word(body + 4 * i)))
		i++;
	return i;
}

/* The absolute branch at body[*i]: `b t` or `br x16` after movz/movk x16.
 * Returns its target and moves *i past it. */
static uint64_t body_branch(struct sim *s, const uint8_t *body, uint64_t at, size_t n, size_t *i)
{
	cs_insn *ci;
	*i = sim_movs(s, body, n, *i);
	assert_true(*i < n);
	uint32_t w = a64_word(body + 4 * *i);
	assert_true(dis(w, at + 4 * *i, &ci));
	uint64_t t = 0;
	if (ci->id == ARM64_INS_B && ci->detail->arm64.cc == ARM64_CC_INVALID) {
		t = (uint64_t)ci->detail->arm64.operands[0].imm;
	} else {
		assert_int_equal(ci->id, ARM64_INS_BR);
		assert_true(ci->detail->arm64.operands[0].reg == ARM64_REG_X16 &&
		            (s->set & (1u << 16)));
		t = s->x[16];
	}
	cs_free(ci, 1);
	(*i)++;
	return t;
}

struct ctx {
	uint64_t fn, tr;
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE];
	const uint8_t *body;
	size_t n; /* words of the body */
	cs_insn *orig;
};

/* Plans w at a random fn, emits at a random tr within b's reach, decodes
 * the original with capstone. False when capstone does not know it. */
static bool ctx_make(struct ctx *c, uint32_t w)
{
	struct hook_arch_plan plan;
	uint8_t code[4];

	c->fn = (0x10000000ull + (rnd() & 0x3ffffffffffull)) & ~3ull;
	c->tr = (c->fn + (rnd() % (200ull << 20)) - (100ull << 20)) & ~15ull;
	if (!dis(w, c->fn, &c->orig))
		return false;
	checked++;
	memcpy(code, &w, 4);
	assert_int_equal(a64_prepare(code, c->fn, 4, &plan), ADA_HOOK_OK);
	size_t len = a64_emit_trampoline(&plan, c->buf, c->tr, 1, 2, c->tr - 64, NULL);
	assert_true(len > A64_BODY_OFF);
	c->body = c->buf + A64_BODY_OFF;
	c->n = (len - A64_BODY_OFF) / 4;
	return true;
}

/* The body's last branch goes back behind the patch. */
static void ctx_back(struct ctx *c, struct sim *s, size_t i)
{
	assert_int_equal(body_branch(s, c->body, c->tr + A64_BODY_OFF, c->n, &i), c->fn + 4);
	assert_int_equal(i, c->n);
	cs_free(c->orig, 1);
}

static const char *reg_name(unsigned r)
{
	return cs_reg_name(cs, r);
}

/* adr/adrp: the destination holds capstone's value. */
static void check_adr(uint32_t w)
{
	struct ctx c;
	struct sim s = {0};
	if (!ctx_make(&c, w))
		return;
	cs_arm64_op *op = c.orig->detail->arm64.operands;
	size_t i = sim_movs(&s, c.body, c.n, 0);
	unsigned rd = w & 31;
	assert_true(s.set & (1u << rd));
	assert_int_equal(s.x[rd], (uint64_t)op[1].imm);
	ctx_back(&c, &s, i);
}

/* ldr (literal): the address capstone gives is materialised in the base
 * of a load into the same register, with the same mnemonic. */
static void check_ldr(uint32_t w)
{
	struct ctx c;
	struct sim s = {0};
	cs_insn *ld;
	if (!ctx_make(&c, w))
		return;
	cs_arm64_op *op = c.orig->detail->arm64.operands;
	size_t i = sim_movs(&s, c.body, c.n, 0);
	assert_true(dis(a64_word(c.body + 4 * i), c.tr + A64_BODY_OFF + 4 * i, &ld));
	cs_arm64_op *lop = ld->detail->arm64.operands;
	assert_string_equal(ld->mnemonic, c.orig->mnemonic);
	assert_string_equal(reg_name(lop[0].reg), reg_name(op[0].reg));
	assert_int_equal(lop[1].type, ARM64_OP_MEM);
	assert_int_equal(lop[1].mem.disp, 0);
	unsigned base = (unsigned)(lop[1].mem.base - ARM64_REG_X0);
	if (lop[1].mem.base == ARM64_REG_X29)
		base = 29;
	else if (lop[1].mem.base == ARM64_REG_X30)
		base = 30;
	assert_true(base < 31 && (s.set & (1u << base)));
	assert_int_equal(s.x[base], (uint64_t)op[1].imm);
	cs_free(ld, 1);
	ctx_back(&c, &s, i + 1);
}

/* b/bl: the branch's target is capstone's; bl sets x30 to fn + 4 first. */
static void check_b(uint32_t w)
{
	struct ctx c;
	struct sim s = {0};
	if (!ctx_make(&c, w))
		return;
	size_t i = 0;
	uint64_t t = body_branch(&s, c.body, c.tr + A64_BODY_OFF, c.n, &i);
	assert_int_equal(t, (uint64_t)c.orig->detail->arm64.operands[0].imm);
	if (w >> 31)
		assert_true((s.set & (1u << 30)) && s.x[30] == c.fn + 4);
	ctx_back(&c, &s, i);
}

static arm64_cc cc_invert(arm64_cc cc)
{
	/* capstone's order: EQ NE HS LO MI PL VS VC HI LS GE LT GT LE AL NV (1..16) */
	return (arm64_cc)(((cc - 1) ^ 1) + 1);
}

/* b.cond/cbz/cbnz/tbz/tbnz: the first word is the inverted test on the
 * same register and bit, skipping exactly the branch to capstone's
 * target that follows it. */
static void check_cond(uint32_t w)
{
	struct ctx c;
	struct sim s = {0};
	cs_insn *sk;
	if (!ctx_make(&c, w))
		return;
	const cs_arm64 *o = &c.orig->detail->arm64;
	uint64_t at = c.tr + A64_BODY_OFF;
	assert_true(dis(a64_word(c.body), at, &sk));
	const cs_arm64 *k = &sk->detail->arm64;
	size_t i = 1;
	uint64_t t = body_branch(&s, c.body, at, c.n, &i);
	unsigned tgt_op = c.orig->id == ARM64_INS_B                                     ? 0
	                  : c.orig->id == ARM64_INS_TBZ || c.orig->id == ARM64_INS_TBNZ ? 2
	                                                                                : 1;
	assert_int_equal(t, (uint64_t)o->operands[tgt_op].imm);
	assert_int_equal((uint64_t)k->operands[tgt_op].imm, at + 4 * i); /* skips the branch */
	if (c.orig->id == ARM64_INS_B) {
		assert_int_equal(k->cc, cc_invert(o->cc));
	} else {
		static const unsigned inv[][2] = {{ARM64_INS_CBZ, ARM64_INS_CBNZ},
		                                  {ARM64_INS_CBNZ, ARM64_INS_CBZ},
		                                  {ARM64_INS_TBZ, ARM64_INS_TBNZ},
		                                  {ARM64_INS_TBNZ, ARM64_INS_TBZ}};
		for (size_t j = 0; j < 4; j++)
			if (c.orig->id == inv[j][0])
				assert_int_equal(sk->id, inv[j][1]);
		assert_int_equal(k->operands[0].reg, o->operands[0].reg);
		if (tgt_op == 2)
			assert_int_equal(k->operands[1].imm, o->operands[1].imm);
	}
	cs_free(sk, 1);
	ctx_back(&c, &s, i);
}

static void test_adr_random(void **state)
{
	(void)state;
	checked = 0;
	for (int n = 0; n < CASES; n++) {
		uint32_t r = (uint32_t)rnd();
		check_adr(0x10000000u | (r & 0x60ffffffu));        /* adr */
		check_adr(0x90000000u | ((r >> 3) & 0x60ffffffu)); /* adrp */
	}
	assert_int_equal(checked, 2 * CASES);
}

static void test_ldr_random(void **state)
{
	static const uint32_t ops[] = {0x18000000u, 0x58000000u, 0x98000000u,
	                               0x1c000000u, 0x5c000000u, 0x9c000000u};
	(void)state;
	checked = 0;
	for (int n = 0; n < CASES; n++) {
		uint32_t r = (uint32_t)rnd();
		check_ldr(ops[r % 6] | ((r >> 3) & 0xffffffu));
	}
	assert_int_equal(checked, CASES);
}

static void test_branch_random(void **state)
{
	(void)state;
	checked = 0;
	for (int n = 0; n < CASES; n++) {
		uint32_t r = (uint32_t)rnd();
		check_b(0x14000000u | (r & 0x3ffffffu));
		check_b(0x94000000u | ((r >> 1) & 0x3ffffffu));
	}
	assert_int_equal(checked, 2 * CASES);
}

static void test_cond_random(void **state)
{
	(void)state;
	checked = 0;
	for (int n = 0; n < CASES; n++) {
		uint32_t r = (uint32_t)rnd();
		uint32_t cc = (r >> 27) % 14; /* b.al/b.nv become plain branches */
		check_cond(0x54000000u | (r & 0x00ffffe0u) | cc);
		check_cond(0x34000000u | (r & 0x81ffffffu)); /* cbz/cbnz, w or x */
		check_cond(0x36000000u | (r & 0x81ffffffu)); /* tbz/tbnz, any bit */
	}
	assert_int_equal(checked, 3 * CASES);
}

static int setup(void **state)
{
	(void)state;
	if (cs_open(CS_ARCH_ARM64, CS_MODE_ARM, &cs) != CS_ERR_OK)
		return -1;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cs_close(&cs);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_adr_random),
	    cmocka_unit_test(test_ldr_random),
	    cmocka_unit_test(test_branch_random),
	    cmocka_unit_test(test_cond_random),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
