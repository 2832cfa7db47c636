/*
 * x86_64 hook planning: decide whether a function can be patched with a
 * 5-byte `jmp rel32` and record how each displaced instruction must be
 * relocated (hook_arch_prepare()).
 *
 * Threads: called at agent init and from dlopen, on any thread, never in
 * hook context; at a cold start on two threads at once (agent_install.c).
 * Capstone handles are not thread-safe: PLAN_DECODERS handles, each with
 * its decode buffer and its own lock, are opened once (pthread_once); a
 * call takes the first one free (plan_acquire), so two analysing threads
 * decode side by side. Which handle decodes changes no result.
 *
 * Soundness rules (a function is skipped, never patched, when unsure):
 *  - the displaced instructions must lie inside [addr, addr+size);
 *  - a linear sweep of the whole body must find no direct jmp/jcc/call/
 *    loop/jrcxz/xbegin whose target is in (addr, addr+patch_len): those
 *    bytes become the middle of our jmp. A target equal to addr is fine;
 *  - bytes the sweep cannot decode are checked as if every one of the next
 *    16 positions could start a rel8/rel32 branch (a superset of what they
 *    could hide); any such candidate into the patch skips the function;
 *  - jump tables: a computed jmp may land on any instruction boundary of
 *    its function; plain hook_arch_prepare() reads no table. Only a
 *    boundary strictly inside the patch can be hurt, so with one
 *    displaced instruction any jmp is fine. Otherwise: `jmp [..+index*scale]` (reads a table) =>
 *    ADA_SKIP_JUMP_TABLE; `jmp reg` (gcc/clang PIC switch dispatch, but
 *    also tail calls through pointers) => skip only if the function
 *    computes an address of its own code somewhere (plan_scan_materialize:
 *    a rip-relative lea into a general register or the stack, a
 *    rip-relative load whose value in memory, read through the image's
 *    memory view, is an address strictly inside the function (or that
 *    the view does not hold), an absolute memory operand, an immediate
 *    inside the function other than a direct jmp/jcc's target, a call
 *    into its own body); in well-formed C/C++ a label's address is only
 *    usable inside its function, so without that the jmp cannot reach our
 *    patch. `jmp [rip+disp]` / `jmp [reg+disp]` (one pointer slot: GOT,
 *    vtable, struct field) are tail calls and allowed. Residual risk we
 *    accept: a label address moved through vector registers, or derived
 *    by arithmetic from a foreign pointer to this function. Where those
 *    rules say ADA_SKIP_JUMP_TABLE, hook_arch_prepare_mem() then reads
 *    the switch tables (x86_switch.c): hooked when every table-shaped
 *    jmp is a recognised dispatch whose entries all avoid the patch.
 *  - speed: capstone costs far too much per instruction for whole
 *    libraries, so the body is first checked at byte level (a superset of
 *    every decoding: any byte position that could start a direct branch
 *    into the patch, or a table-shaped FF /4); only when that finds a
 *    candidate does the exact capstone sweep decide.
 */
#include <capstone/capstone.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "x86_internal.h"

#define PATCH_MIN 5

/* One capstone handle and its decode buffer, used under its lock. */
struct plan_dec {
	csh cs;
	cs_insn *ci;
	bool ok;
	pthread_mutex_t lock;
};

/* Two: the agent analyses on two threads at most (agent_install.c). */
#define PLAN_DECODERS 2
static struct plan_dec plan_decs[PLAN_DECODERS] = {{.lock = PTHREAD_MUTEX_INITIALIZER},
                                                   {.lock = PTHREAD_MUTEX_INITIALIZER}};
static pthread_once_t plan_once = PTHREAD_ONCE_INIT;

static void plan_cs_open(void)
{
	for (size_t i = 0; i < PLAN_DECODERS; i++) {
		struct plan_dec *d = &plan_decs[i];
		if (cs_open(CS_ARCH_X86, CS_MODE_64, &d->cs) != CS_ERR_OK)
			continue;
		/* Default Intel syntax: branch targets print as a bare number. */
		cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
		/* Allocated with detail on, so it serves both kinds of decoding. */
		d->ci = cs_malloc(d->cs);
		if (!d->ci) {
			cs_close(&d->cs);
			continue;
		}
		d->ok = true;
	}
}

/* A decoder for the calling thread, locked: the first free one, else
 * the first that opened (waiting for it). NULL when none opened. The
 * handles are written once under plan_once, read-only afterwards. */
static struct plan_dec *plan_acquire(void)
{
	pthread_once(&plan_once, plan_cs_open);
	struct plan_dec *first = NULL;
	for (size_t i = 0; i < PLAN_DECODERS; i++) {
		struct plan_dec *d = &plan_decs[i];
		if (!d->ok)
			continue;
		if (pthread_mutex_trylock(&d->lock) == 0)
			return d;
		first = first ? first : d;
	}
	if (first)
		pthread_mutex_lock(&first->lock);
	return first;
}

static void plan_release(struct plan_dec *d)
{
	pthread_mutex_unlock(&d->lock);
}

static int plan_is_jcc(unsigned id)
{
	switch (id) {
	case X86_INS_JAE:
	case X86_INS_JA:
	case X86_INS_JBE:
	case X86_INS_JB:
	case X86_INS_JE:
	case X86_INS_JGE:
	case X86_INS_JG:
	case X86_INS_JLE:
	case X86_INS_JL:
	case X86_INS_JNE:
	case X86_INS_JNO:
	case X86_INS_JNP:
	case X86_INS_JNS:
	case X86_INS_JO:
	case X86_INS_JP:
	case X86_INS_JS:
		return 1;
	default:
		return 0;
	}
}

/* Branches whose only encodings are relative and have no rel32 twin. */
static int plan_is_short_only(unsigned id)
{
	return id == X86_INS_LOOP || id == X86_INS_LOOPE || id == X86_INS_LOOPNE ||
	       id == X86_INS_JRCXZ || id == X86_INS_JECXZ || id == X86_INS_JCXZ ||
	       id == X86_INS_XBEGIN;
}

static const cs_x86_op *plan_rip_operand(const cs_x86 *x)
{
	for (unsigned i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base == X86_REG_RIP)
			return &x->operands[i];
	return NULL;
}

/* Condition code of a jcc from its raw bytes (70+cc rel8 or 0F 80+cc rel32). */
static int plan_jcc_cc(const cs_insn *ci, uint8_t *cc)
{
	const uint8_t *b = ci->bytes;
	size_t n = ci->size;

	if (n >= 6 && b[n - 6] == 0x0f && (b[n - 5] & 0xf0) == 0x80) {
		*cc = b[n - 5] & 0x0f;
		return 0;
	}
	if (n >= 2 && (b[n - 2] & 0xf0) == 0x70) {
		*cc = b[n - 2] & 0x0f;
		return 0;
	}
	return -1;
}

static enum ada_hook_skip plan_branch(const cs_insn *ci, const cs_x86 *x, struct hook_arch_insn *in)
{
	const cs_x86_op *op = x->op_count == 1 ? &x->operands[0] : NULL;

	if (!op || op->type != X86_OP_IMM) {
		/* Indirect. jmp reg / jmp [non-rip] is position independent;
		 * call reg / call [non-rip] pushes the original return address
		 * (reloc_call_indirect): a plain FF /2 with a 64-bit operand. */
		if (ci->id != X86_INS_CALL)
			return ADA_HOOK_OK;
		uint8_t m = x->encoding.modrm_offset;
		if (plan_rip_operand(x) || m == 0 || m >= ci->size || ci->bytes[m - 1] != 0xff ||
		    ((ci->bytes[m] >> 3) & 7) != 2 || x->prefix[0] != 0 || x->prefix[2] != 0)
			return ADA_SKIP_UNRELOCATABLE;
		in->kind = X86_RELOC_CALL_IND;
		in->reg = m;
		return ADA_HOOK_OK;
	}
	if (x->prefix[2] == 0x66) /* 16-bit branch truncates rip: never in real code */
		return ADA_SKIP_UNRELOCATABLE;
	in->target = (uint64_t)op->imm;
	if (ci->id == X86_INS_JMP) {
		in->kind = X86_RELOC_JMP;
	} else if (ci->id == X86_INS_CALL) {
		in->kind = X86_RELOC_CALL;
	} else if (plan_is_jcc(ci->id)) {
		in->kind = X86_RELOC_JCC;
		if (plan_jcc_cc(ci, &in->cc))
			return ADA_SKIP_UNRELOCATABLE;
	} else {
		return ADA_SKIP_UNRELOCATABLE;
	}
	return ADA_HOOK_OK;
}

/* Where the disp32 of a [rip+disp] operand sits in the instruction, or
 * 0. Capstone 4 misreports some SSE forms with a 66 prefix (movdqa xmm,
 * [rip+x]; andpd; comisd): the right offset with a displacement size of
 * 2, and no offset at all for others. A rip-relative ModRM (mod 00, r/m
 * 101) has no SIB and always a disp32, right after the ModRM byte; the
 * offset is taken when those 4 bytes are the displacement capstone
 * decoded and end inside the instruction (an immediate may follow). */
static uint8_t plan_rip_disp_offset(const cs_insn *ci, const cs_x86 *x, const cs_x86_op *rip)
{
	uint8_t off = x->encoding.disp_offset, m = x->encoding.modrm_offset;
	if (off == 0 && m != 0 && m < ci->size && (ci->bytes[m] & 0xc7) == 0x05)
		off = (uint8_t)(m + 1);
	int32_t d;
	if (off == 0 || off + 4u > ci->size)
		return 0;
	memcpy(&d, ci->bytes + off, 4);
	return d == rip->mem.disp ? off : 0;
}

/* Classifies one displaced instruction into its relocation case. */
static enum ada_hook_skip plan_insn(const cs_insn *ci, uint64_t fn, struct hook_arch_insn *in)
{
	const cs_x86 *x = &ci->detail->x86;
	const cs_x86_op *rip = plan_rip_operand(x);

	memset(in, 0, sizeof(*in));
	in->offset = (uint8_t)(ci->address - fn);
	in->len = (uint8_t)ci->size;
	in->kind = X86_RELOC_PLAIN;
	if (plan_is_short_only(ci->id))
		return ADA_SKIP_UNRELOCATABLE;
	if (rip) {
		uint8_t doff = plan_rip_disp_offset(ci, x, rip);
		if (doff == 0)
			return ADA_SKIP_UNRELOCATABLE;
		in->disp_off = doff;
		in->target = ci->address + ci->size + (int64_t)rip->mem.disp;
		in->kind = ci->id == X86_INS_CALL ? X86_RELOC_CALL_RIP : X86_RELOC_RIP;
		if (ci->id == X86_INS_LEA && (x->rex & 0x08)) {
			in->kind = X86_RELOC_RIP_LEA;
			in->reg = (uint8_t)((((x->rex >> 2) & 1) << 3) | ((x->modrm >> 3) & 7));
		}
		return ADA_HOOK_OK;
	}
	if (ci->id == X86_INS_JMP || ci->id == X86_INS_CALL || plan_is_jcc(ci->id))
		return plan_branch(ci, x, in);
	return ADA_HOOK_OK;
}

/* Register-register forms of add/or/and/sub/xor/cmp/test/mov (op /r). */
static int plan_is_alu_rr(uint8_t op)
{
	switch (op) {
	case 0x01:
	case 0x03:
	case 0x09:
	case 0x0b:
	case 0x21:
	case 0x23:
	case 0x29:
	case 0x2b:
	case 0x31:
	case 0x33:
	case 0x39:
	case 0x3b:
	case 0x85:
	case 0x89:
	case 0x8b:
		return 1;
	default:
		return 0;
	}
}

/* Length of a common, position-independent prologue instruction at b, or
 * 0 to let capstone decide. An exact whitelist (checked against capstone
 * in test_hook_reloc.c): capstone with detail costs far more per
 * instruction than this, and most prologues are only these:
 * endbr64; push r; mov/alu r,r; alu r,imm8/imm32; mov r32,imm32. */
static size_t plan_fast_len(const uint8_t *b, size_t left)
{
	size_t rex = left > 0 && (b[0] & 0xf0) == 0x40, n = 0;
	const uint8_t *o = b + rex;

	if (left >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
		return 4; /* endbr64 */
	if (left < rex + 1)
		return 0;
	if ((o[0] & 0xf8) == 0x50)
		n = rex + 1; /* push r */
	else if ((o[0] & 0xf8) == 0xb8 && !(rex && (b[0] & 0x08)))
		n = rex + 5; /* mov r32, imm32 (not the REX.W imm64 form) */
	else if (left >= rex + 2 && (o[1] & 0xc0) == 0xc0 && plan_is_alu_rr(o[0]))
		n = rex + 2;
	else if (left >= rex + 2 && (o[1] & 0xc0) == 0xc0 && o[0] == 0x83)
		n = rex + 3; /* alu r, imm8 */
	else if (left >= rex + 2 && (o[1] & 0xc0) == 0xc0 && o[0] == 0x81)
		n = rex + 6; /* alu r, imm32 */
	return n <= left ? n : 0;
}

/* Target of a direct branch of n bytes at pc whose last rel bytes hold
 * its displacement. */
static uint64_t plan_rel_target(const uint8_t *p, size_t n, uint64_t pc, unsigned rel)
{
	int32_t d32;
	int64_t d = (int8_t)p[n - 1];
	if (rel == 4) {
		memcpy(&d32, p + n - 4, 4);
		d = d32;
	}
	return pc + n + (uint64_t)d;
}

/* An opcode byte of the one-byte map: not a legacy prefix, 0F, or VEX/EVEX. */
static int plan_map1_plain(uint8_t op)
{
	return op != 0x0f && op != 0x66 && op != 0x67 && op != 0xf2 && op != 0xf3 && op != 0x26 &&
	       op != 0x2e && op != 0x36 && op != 0x3e && op != 0x64 && op != 0x65 && op != 0xf0 &&
	       op != 0xc4 && op != 0xc5 && op != 0x62;
}

/* The relocation case of a displaced instruction x86_fast_len() knew
 * (n bytes at p, at fn + offset, not an indirect call), from its bytes,
 * as plan_insn() gets it from capstone (test_hook_verdicts.c compares
 * whole plans): a direct branch (never prefixed: the table declines
 * those), a [rip + disp32] operand, or plain (copied as is). Returns 1
 * to leave a rip-relative operand with a legacy prefix or outside the
 * one-byte map to capstone: capstone 4 misreports the disp of some
 * (movdqa xmm, [rip+x]; cmp word [rip+x], imm8), which plan_insn()
 * finds again (plan_rip_disp_offset), and the verdicts stay capstone's. */
static int plan_fast_insn(const uint8_t *p, size_t n, const struct x86_len_info *li, uint64_t fn,
                          uint8_t offset, struct hook_arch_insn *in)
{
	uint64_t pc = fn + offset;
	*in = (struct hook_arch_insn){.offset = offset, .len = (uint8_t)n, .kind = X86_RELOC_PLAIN};
	if (li->rel) {
		in->target = plan_rel_target(p, n, pc, li->rel);
		if (p[0] == 0xe8)
			in->kind = X86_RELOC_CALL;
		else if (p[0] == 0xe9 || p[0] == 0xeb)
			in->kind = X86_RELOC_JMP;
		else /* 70+cc rel8, 0F 80+cc rel32 */
			in->kind = X86_RELOC_JCC, in->cc = p[p[0] == 0x0f] & 0x0f;
		return 0;
	}
	if (!li->riprel)
		return 0;
	size_t k = 0, rex = 0; /* REX, then the opcode */
	if ((p[0] & 0xf0) == 0x40)
		rex = p[k++];
	if (!plan_map1_plain(p[k]))
		return 1;
	int32_t disp;
	memcpy(&disp, li->disp, 4);
	in->disp_off = (uint8_t)(li->disp - p);
	in->target = pc + n + (uint64_t)(int64_t)disp;
	in->kind = X86_RELOC_RIP;
	if (p[k] == 0x8d && (rex & 0x08)) { /* lea r64, [rip + disp32] */
		in->kind = X86_RELOC_RIP_LEA;
		in->reg = (uint8_t)((((rex >> 2) & 1) << 3) | ((li->disp[-1] >> 3) & 7));
	}
	return 0;
}

/* One instruction at p (off bytes from addr, at most left bytes)
 * decoded and classified into *in: the fast whitelist, the byte table,
 * capstone when both decline. Its length, or 0 with *why set. */
static size_t plan_decode_one(struct plan_dec *d, const uint8_t *p, size_t left, uint64_t addr,
                              size_t off, struct hook_arch_insn *in, enum ada_hook_skip *why)
{
	size_t fast = plan_fast_len(p, left);
	if (fast) {
		*in = (struct hook_arch_insn){
		    .offset = (uint8_t)off, .len = (uint8_t)fast, .kind = X86_RELOC_PLAIN};
		return fast;
	}
	if (x86_use_fast_len) {
		/* Classified from the bytes as capstone's plan_insn would
		 * (test_hook_verdicts.c), but for indirect calls. */
		struct x86_len_info li;
		fast = x86_fast_len(p, left, &li);
		if (fast && !li.indirect_call &&
		    !plan_fast_insn(p, fast, &li, addr, (uint8_t)off, in))
			return fast;
	}
	const uint8_t *q = p;
	size_t l = left;
	uint64_t pc = addr + off;
	if (!cs_disasm_iter(d->cs, &q, &l, &pc, d->ci)) {
		/* Fewer than 15 bytes left: the insn may run past the end. */
		*why = left < 15 ? ADA_SKIP_TOO_SHORT : ADA_SKIP_UNDECODABLE;
		return 0;
	}
	*why = plan_insn(d->ci, addr, in);
	return *why == ADA_HOOK_OK ? d->ci->size : 0;
}

static bool plan_is_call(const struct hook_arch_insn *in)
{
	return in->kind == X86_RELOC_CALL || in->kind == X86_RELOC_CALL_RIP ||
	       in->kind == X86_RELOC_CALL_IND;
}

/* Decodes whole instructions until >= min bytes are covered (PATCH_MIN;
 * HOOK_ARCH_PAD_ENTRY for the padding form). */
static enum ada_hook_skip plan_prologue(const uint8_t *code, uint64_t addr, uint64_t size,
                                        size_t min, struct plan_dec *d, struct hook_arch_plan *plan)
{
	while (plan->patch_len < min) {
		if (plan->insn_count == HOOK_ARCH_MAX_INSNS)
			return ADA_SKIP_UNRELOCATABLE;
		struct hook_arch_insn *in = &plan->insns[plan->insn_count];
		enum ada_hook_skip why = ADA_HOOK_OK;
		size_t n = plan_decode_one(d, code + plan->patch_len, size - plan->patch_len, addr,
		                           plan->patch_len, in, &why);
		if (n == 0)
			return why;
		if (plan->patch_len + n > HOOK_ARCH_MAX_PATCH)
			return ADA_SKIP_UNRELOCATABLE;
		/* A call's return address must be the original next insn, which is
		 * only outside the patch when the call is displaced last. */
		plan->patch_len += n;
		plan->insn_count++;
		if (plan_is_call(in) && plan->patch_len < min)
			return ADA_SKIP_UNRELOCATABLE;
	}
	memcpy(plan->original, code, plan->patch_len);
	return ADA_HOOK_OK;
}

size_t x86_decode_span(const uint8_t *code, size_t size, uint64_t addr, struct hook_arch_insn *out,
                       size_t cap, size_t *n)
{
	struct plan_dec *d = plan_acquire();
	size_t at = 0;
	*n = 0;
	if (!d)
		return 0;
	while (*n < cap && at < size && at <= UINT8_MAX) {
		enum ada_hook_skip why = ADA_HOOK_OK;
		size_t len = plan_decode_one(d, code + at, size - at, addr, at, &out[*n], &why);
		if (len == 0 || at + len > size)
			break;
		at += len;
		(*n)++;
	}
	plan_release(d);
	return at;
}

static int plan_in_patch(uint64_t target, uint64_t fn, size_t patch_len)
{
	return target > fn && target < fn + patch_len;
}

/* First bytes of direct branches: 70-7F jcc, E0-E3 loop/jrcxz, EB jmp
 * (rel8); E8 call, E9 jmp (rel32); 0F (80-8F next: jcc rel32); C7 (F8
 * next: xbegin rel32). hook_arch_branch_first16() flags the same set
 * (test_hook_len's test_branch_first16 keeps them equal). */
enum { REL_NONE, REL_8, REL_32, REL_0F, REL_C7 };
static const uint8_t plan_rel_class[256] = {
    [0x70 ... 0x7f] = REL_8, [0xe0 ... 0xe3] = REL_8, [0xeb] = REL_8,  [0xe8] = REL_32,
    [0xe9] = REL_32,         [0x0f] = REL_0F,         [0xc7] = REL_C7,
};

/* Length of the rel field of a direct branch whose opcode starts at
 * code[i], with *at = offset of the field; 0 when the bytes are none. */
static int plan_rel_at(const uint8_t *code, uint64_t size, uint64_t i, uint64_t *at)
{
	uint8_t b1 = i + 1 < size ? code[i + 1] : 0;

	switch (plan_rel_class[code[i]]) {
	case REL_8:
		*at = i + 1;
		return 1;
	case REL_32:
		*at = i + 1;
		return 4;
	case REL_0F:
		*at = i + 2;
		return (b1 & 0xf0) == 0x80 ? 4 : 0;
	case REL_C7:
		*at = i + 2;
		return b1 == 0xf8 ? 4 : 0;
	default:
		return 0;
	}
}

/* Superset check: could a direct branch starting at ANY byte position in
 * [from, to) hit the patch? Every real instruction starts at some
 * position, so no candidate is a proof for those bytes whatever their
 * decoding; a candidate may be a false alarm (random bytes) and is
 * confirmed by the exact sweep. Returns the last candidate position, or -1. */
static int plan_superset_hit(const uint8_t *code, uint64_t addr, uint64_t size, uint64_t i,
                             size_t patch_len)
{
	uint64_t at;
	int n = plan_rel_at(code, size, i, &at);
	if (n == 0 || at + (uint64_t)n > size)
		return 0;
	int64_t rel = (int8_t)code[at];
	if (n == 4) {
		int32_t d;
		memcpy(&d, code + at, 4);
		rel = d;
	}
	return plan_in_patch(addr + at + (uint64_t)n + (uint64_t)rel, addr, patch_len);
}

static int64_t plan_superset_last(const uint8_t *code, uint64_t addr, uint64_t size, uint64_t from,
                                  uint64_t to, size_t patch_len)
{
	int64_t last = -1;
	uint64_t i = from;

	to = to < size ? to : size;
	/* Most bytes start no branch: 16 positions at a time are rejected
	 * together (hook_arch_branch_first16 flags exactly the bytes
	 * plan_rel_class does; hook_arch_branch_near16 also drops 0F and C7
	 * when the next byte makes no branch of them, as plan_rel_at does),
	 * the candidates checked one by one. From `far` on, every position
	 * is too far from the patch for a rel8 and a rel32 into it is
	 * negative above -2^16 (function size below 2^16):
	 * hook_arch_branch_far16 keeps only the rel32 forms whose
	 * displacement's two top bytes are FF, a superset of the hits there.
	 * The masks' loads reach 16 (near) and 20 (far) bytes past the
	 * chunk's start, inside the function. */
	uint64_t far = size <= (1u << 16) ? patch_len + 126 : UINT64_MAX;
	for (; to >= 16 && i <= to - 16; i += 16) {
		unsigned m = i >= far && i + 21 <= size ? hook_arch_branch_far16(code + i)
		             : i + 17 <= size           ? hook_arch_branch_near16(code + i)
		                                        : hook_arch_branch_first16(code + i);
		for (; m; m &= m - 1) {
			uint64_t k = i + (unsigned)__builtin_ctz(m);
			if (plan_superset_hit(code, addr, size, k, patch_len))
				last = (int64_t)k;
		}
	}
	for (; i < to; i++)
		if (plan_rel_class[code[i]] != REL_NONE &&
		    plan_superset_hit(code, addr, size, i, patch_len))
			last = (int64_t)i;
	return last;
}

/* A jump-table-shaped indirect jmp: FF /4 with a register operand (modrm
 * E0-E7) or a memory operand with a SIB byte (modrm 24/64/A4), i.e.
 * `jmp reg` and `jmp [base+index*scale+disp]`. */
static int plan_is_table_jmp_modrm(uint8_t modrm)
{
	return (modrm & 0xf8) == 0xe0 || modrm == 0x24 || modrm == 0x64 || modrm == 0xa4;
}

static int plan_table_jmp_at(const uint8_t *code, uint64_t i)
{
	return code[i] == 0xff && plan_is_table_jmp_modrm(code[i + 1]);
}

/* Superset check for a table-shaped indirect jmp: last candidate or -1.
 * Positions [0, size-1) (each reads the byte after it), from the top:
 * one by one down to a multiple of 16, then 16 at a time
 * (hook_arch_table_jmp16 tests exactly plan_table_jmp_at per lane; the
 * chunk [i-16, i) reads code[i-16 .. i], i <= size-1). Most functions
 * have none, so the whole body was read byte by byte before. */
static int64_t plan_superset_table_last(const uint8_t *code, uint64_t size)
{
	if (size < 2)
		return -1;
	uint64_t i = size - 1; /* positions below i are left */
	for (; i % 16; i--)
		if (plan_table_jmp_at(code, i - 1))
			return (int64_t)(i - 1);
	for (; i >= 16; i -= 16) {
		unsigned m = hook_arch_table_jmp16(code + i - 16);
		if (m)
			return (int64_t)(i - 16 + 31 - (unsigned)__builtin_clz(m));
	}
	return -1;
}

static int plan_is_branch_id(unsigned id)
{
	return id == X86_INS_JMP || id == X86_INS_CALL || plan_is_jcc(id) || plan_is_short_only(id);
}

/* One body instruction (detail off, so read op_str): direct branch target
 * into the patch, or a jump-table-shaped indirect jmp. */
static enum ada_hook_skip plan_scan_insn(const cs_insn *ci, uint64_t addr, size_t patch_len,
                                         int *indirect_jmp)
{
	char *end;
	unsigned long long t;

	if (!plan_is_branch_id(ci->id))
		return ADA_HOOK_OK;
	t = strtoull(ci->op_str, &end, 0);
	if (end != ci->op_str && *end == '\0')
		return plan_in_patch(t, addr, patch_len) ? ADA_SKIP_BRANCH_INTO_PATCH : ADA_HOOK_OK;
	/* Indirect: the opcode is the FF followed by the modrm, after prefixes. */
	if (ci->id == X86_INS_JMP && ci->size >= 2) {
		const uint8_t *ff = memchr(ci->bytes, 0xff, ci->size - 1);
		/* 1: jmp reg; 2: jmp [..+index*scale] (certainly reads a table) */
		if (ff && plan_is_table_jmp_modrm(ff[1])) {
			int kind = (ff[1] & 0xf8) == 0xe0 ? 1 : 2;
			*indirect_jmp = kind > *indirect_jmp ? kind : *indirect_jmp;
		}
	}
	return ADA_HOOK_OK;
}

/* Vector, x87, MMX and mask registers: not where code addresses live. */
static int plan_is_gpr(csh cs, x86_reg r)
{
	const char *n = cs_reg_name(cs, r);

	if (!n || r == X86_REG_EFLAGS || r == X86_REG_RIP)
		return 0;
	if (strstr(n, "mm") || !strncmp(n, "st", 2) || (n[0] == 'k' && n[2] == '\0'))
		return 0;
	return 1;
}

/* The bytes of [at, at+len) when one region of mem holds them all. */
static const uint8_t *plan_mem_bytes(const struct hook_arch_memview *mem, uint64_t at, uint64_t len)
{
	for (size_t i = 0; mem && i < mem->n; i++) {
		const struct hook_arch_region *r = &mem->v[i];
		if (at >= r->addr && len <= r->len && at - r->addr <= r->len - len)
			return r->bytes + (at - r->addr);
	}
	return NULL;
}

/* A [rip+disp] memory operand that is read (not lea's address): does the
 * value in memory, zero- or sign-extended from the operand's size, lie
 * outside (addr, addr+size)? Then what the instruction loads is no label
 * of the function: a label's address reaches memory only as the
 * initialised data of a static table (read here, relocated: the loader
 * relocates an image before the agent analyses it) or through a store by
 * the function itself, which has to compute the address first (a lea,
 * an immediate, a call into itself: caught as before). The function's
 * own entry (a pointer to itself, a GOT slot) is not inside the patch.
 * Unreadable (no mem, outside it): 0, as before. */
static int plan_rip_value_outside(const struct hook_arch_memview *mem, const cs_insn *ci,
                                  const cs_x86_op *op, uint64_t addr, uint64_t size)
{
	unsigned n = op->size;
	if (ci->id == X86_INS_LEA || n == 0 || n > 8)
		return 0;
	const uint8_t *b = plan_mem_bytes(mem, ci->address + ci->size + (uint64_t)op->mem.disp, n);
	if (!b)
		return 0;
	uint64_t z = 0;
	memcpy(&z, b, n);
	uint64_t s = n < 8 && ((z >> (8 * n - 1)) & 1) ? z | (~0ull << (8 * n)) : z;
	return !(z > addr && z - addr < size) && !(s > addr && s - addr < size);
}

/* Does this instruction leave a code address of the function in a
 * general register or on the stack? (See the jump-table rule above.) */
static int plan_insn_materializes(csh cs, const cs_insn *ci, uint64_t addr, uint64_t size,
                                  const struct hook_arch_memview *mem)
{
	const cs_x86 *x = &ci->detail->x86;
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	int rip = 0;

	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];
		/* A direct jmp/jcc's target is no value anywhere: only a
		 * call pushes one (its return address, `call 1f; 1: pop`). */
		if (op->type == X86_OP_IMM && (uint64_t)op->imm >= addr &&
		    (uint64_t)op->imm < addr + size)
			return ci->id == X86_INS_CALL      ? (uint64_t)op->imm != addr
			       : plan_is_branch_id(ci->id) ? 0
			                                   : 1;
		if (op->type != X86_OP_MEM)
			continue;
		if (op->mem.base == X86_REG_RIP)
			rip = rip || !plan_rip_value_outside(mem, ci, op, addr, size);
		else if (op->mem.base == X86_REG_INVALID && op->mem.segment == X86_REG_INVALID)
			return 1; /* absolute address: a non-PIC table or label */
	}
	if (!rip || ci->id == X86_INS_CALL || ci->id == X86_INS_JMP)
		return 0;
	if (cs_regs_access(cs, ci, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return 1;
	for (unsigned i = 0; i < nwr; i++)
		if (plan_is_gpr(cs, wr[i]))
			return 1;
	return 0;
}

/* No immediate of a length-table form without a wide one (an imm8
 * zero- or sign-extended to 16, 32 or 64 bits, or the 1 of D0-D3:
 * below 2^16, in [2^32-128, 2^32) or at or above 2^64-128) can lie in
 * [addr, addr+size). */
static int plan_small_imms_outside(uint64_t addr, uint64_t size)
{
	uint64_t end = addr + size;
	return addr >= 0x10000 && end >= addr && (end <= 0xffffff80u || addr >= 0x100000000u) &&
	       end <= UINT64_MAX - 127;
}

/* plan_insn_materializes for an instruction the length table knows
 * (n bytes at p, at pc), without capstone: 1 or 0 when the bytes
 * decide, -1 to ask capstone. A direct branch has one operand, its
 * target (an immediate). Otherwise an instruction with no [rip+disp]
 * operand, no base-less memory operand, no wide immediate (and, given
 * plan_small_imms_outside, no immediate inside the function) is not
 * the indirect call capstone would answer 0 for either: none of its
 * operands can make it 1. */
static int plan_fast_materializes(const uint8_t *p, size_t n, const struct x86_len_info *li,
                                  uint64_t pc, uint64_t addr, uint64_t size)
{
	if (!x86_len_cs_same(p))
		return -1; /* capstone may reject it: its failure decides */
	if (li->rel) {     /* as plan_insn_materializes: a call only */
		uint64_t t = plan_rel_target(p, n, pc, li->rel);
		return p[0] == 0xe8 && t > addr && t - addr < size;
	}
	return li->riprel || li->indirect_call || li->wide_imm || li->absmem ? -1 : 0;
}

/* A `jmp reg` can only reach an instruction boundary of its own function
 * if the function computes one of its own code addresses: in PIC code
 * through a rip-relative lea/load into a register (a label, or a table
 * of labels or of label offsets), in non-PIC code through an absolute
 * memory operand or an immediate inside the function (or `call next;
 * pop`). No such instruction in the whole body: the jmp is a tail call
 * through a pointer and cannot hit the patch. Undecodable bytes count. */
static enum ada_hook_skip plan_scan_materialize(const uint8_t *code, uint64_t addr, uint64_t size,
                                                const struct hook_arch_memview *mem,
                                                struct plan_dec *d)
{
	cs_insn *ci = d->ci;
	const uint8_t *p = code;
	size_t left = size;
	uint64_t pc = addr;
	enum ada_hook_skip r = ADA_HOOK_OK;
	int fast = x86_use_fast_len && plan_small_imms_outside(addr, size);

	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	while (left > 0 && r == ADA_HOOK_OK) {
		struct x86_len_info li;
		size_t n = fast ? x86_fast_len(p, left, &li) : 0;
		int m = n ? plan_fast_materializes(p, n, &li, pc, addr, size) : -1;
		if (m >= 0) {
			r = m ? ADA_SKIP_JUMP_TABLE : ADA_HOOK_OK;
			p += n;
			left -= n;
			pc += n;
			continue;
		}
		if (!cs_disasm_iter(d->cs, &p, &left, &pc, ci) ||
		    plan_insn_materializes(d->cs, ci, addr, size, mem))
			r = ADA_SKIP_JUMP_TABLE;
	}
	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_OFF);
	return r;
}

int x86_use_fast_len = 1;

/* Length of `jmp r/m` (FF /4, after an optional REX and no other
 * prefix) at p, or 0. The length table declines indirect jmps on
 * purpose (their callers must see them); the length is that of `call
 * r/m` (FF /2) with the same ModRM operand, which the table knows
 * (x86_sw_fast measures it the same way; test_hook_len compares it with
 * capstone over whole libraries). Reads at most `left` bytes. */
static size_t plan_fast_jmp_len(const uint8_t *p, size_t left)
{
	size_t k = left > 0 && (p[0] & 0xf0) == 0x40;
	if (left < k + 2 || p[k] != 0xff || ((p[k + 1] >> 3) & 7) != 4)
		return 0;
	uint8_t t[16];
	size_t m = left < sizeof(t) ? left : sizeof(t);
	memcpy(t, p, m);
	t[k + 1] = (uint8_t)((t[k + 1] & 0xc7) | (2 << 3));
	struct x86_len_info li;
	return x86_fast_len(t, m, &li);
}

/* The body has indirect jumps (indirect_jmp 1: a `jmp reg` among them,
 * 2: memory forms only) and more than one instruction is displaced. Two
 * proofs, either of which hooks the function: the switch dispatches'
 * tables (x86_switch.c, with mem), and for `jmp reg` only, no code
 * address of the function computed anywhere (plan_scan_materialize).
 * Each is a pure function of the bytes, so their order changes no
 * verdict; the table reader goes first because it proves most functions
 * that get here and costs less than the materialize scan's capstone
 * decodes with detail. */
static enum ada_hook_skip plan_scan_indirect(const uint8_t *code, uint64_t addr, uint64_t size,
                                             struct plan_dec *d, const struct hook_arch_plan *plan,
                                             const struct hook_arch_memview *mem, int indirect_jmp)
{
	enum ada_hook_skip r = ADA_SKIP_JUMP_TABLE;
	if (mem) {
		cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
		r = x86_switch_check(d->cs, d->ci, code, addr, size, plan->patch_len, mem);
		cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_OFF);
	}
	if (r == ADA_SKIP_JUMP_TABLE && indirect_jmp == 1)
		r = plan_scan_materialize(code, addr, size, mem, d);
	return r;
}

/* Linear sweep of the body for anything that may enter the patch; it
 * stops behind `limit`, the last superset candidate: no instruction
 * starting later can be one. */
static enum ada_hook_skip plan_scan_body(const uint8_t *code, uint64_t addr, uint64_t size,
                                         uint64_t limit, struct plan_dec *d,
                                         const struct hook_arch_plan *plan,
                                         const struct hook_arch_memview *mem)
{
	cs_insn *ci = d->ci;
	uint64_t off = 0;
	int indirect_jmp = 0;

	while (off < size && off <= limit) {
		const uint8_t *p = code + off;
		size_t left = size - off;
		uint64_t pc = addr + off;
		struct x86_len_info li;
		size_t n = x86_use_fast_len ? x86_fast_len(p, left, &li) : 0;
		if (n) { /* the table knows it: capstone would say the same */
			if (li.rel &&
			    plan_in_patch(plan_rel_target(p, n, pc, li.rel), addr, plan->patch_len))
				return ADA_SKIP_BRANCH_INTO_PATCH;
			off += n;
			continue;
		}
		/* An indirect jmp, as plan_scan_insn classifies capstone's
		 * (its first FF byte is this opcode; no prefix but REX). */
		n = x86_use_fast_len ? plan_fast_jmp_len(p, left) : 0;
		if (n) {
			const uint8_t *ff = p + (p[0] != 0xff);
			if (plan_is_table_jmp_modrm(ff[1])) {
				int kind = (ff[1] & 0xf8) == 0xe0 ? 1 : 2;
				indirect_jmp = kind > indirect_jmp ? kind : indirect_jmp;
			}
			off += n;
			continue;
		}
		if (!cs_disasm_iter(d->cs, &p, &left, &pc, ci)) {
			if (plan_superset_last(code, addr, size, off, off + 16, plan->patch_len) >=
			    0)
				return ADA_SKIP_UNDECODABLE;
			off++;
			continue;
		}
		enum ada_hook_skip r = plan_scan_insn(ci, addr, plan->patch_len, &indirect_jmp);
		if (r != ADA_HOOK_OK)
			return r;
		off += ci->size;
	}
	if (indirect_jmp == 0 || plan->insn_count < 2)
		return ADA_HOOK_OK;
	return plan_scan_indirect(code, addr, size, d, plan, mem, indirect_jmp);
}

int x86_is_stop(const uint8_t *p, size_t n)
{
	size_t k = 0;
	while (k < n && (p[k] == 0xf2 || p[k] == 0xf3 || p[k] == 0x3e || p[k] == 0x2e ||
	                 (p[k] & 0xf0) == 0x40))
		k++;
	if (k >= n)
		return 0;
	uint8_t o = p[k], b1 = k + 1 < n ? p[k + 1] : 0;
	if (o == 0xc3 || o == 0xc2 || o == 0xeb || o == 0xe9 || o == 0xf4 || o == 0xcc)
		return 1;
	if (o == 0xff && k + 1 < n)
		return ((b1 >> 3) & 7) == 4 || ((b1 >> 3) & 7) == 5; /* jmp r/m, jmp far */
	return o == 0x0f && b1 == 0x0b;                              /* ud2 */
}

/* A linear decode of the whole body ends exactly at its end, on an
 * instruction after which execution never goes on: the bytes after the
 * function are not reached by running off its end (the padding form
 * writes there). Undecodable bytes: no. */
static int plan_ends_closed(const uint8_t *code, uint64_t addr, uint64_t size, struct plan_dec *d)
{
	uint64_t off = 0, last = 0;
	size_t lastn = 0;
	while (off < size) {
		const uint8_t *p = code + off;
		size_t left = size - off;
		uint64_t pc = addr + off;
		struct x86_len_info li;
		size_t n = x86_use_fast_len ? x86_fast_len(p, left, &li) : 0;
		if (!n)
			n = plan_fast_jmp_len(p, left);
		if (!n) {
			if (!cs_disasm_iter(d->cs, &p, &left, &pc, d->ci))
				return 0;
			n = d->ci->size;
		}
		last = off;
		lastn = n;
		off += n;
	}
	return off == size && lastn && x86_is_stop(code + last, lastn);
}

/* What every entry point does first: an empty plan for addr, the cheap
 * refusals, and a decoder (locked; *d NULL on a refusal). */
static enum ada_hook_skip plan_start(uint64_t addr, uint64_t size, size_t min,
                                     struct hook_arch_plan *plan, struct plan_dec **d)
{
	memset(plan, 0, sizeof(*plan));
	plan->fn_addr = addr;
	*d = NULL;
	if (size < min)
		return ADA_SKIP_TOO_SHORT;
	*d = plan_acquire();
	return *d ? ADA_HOOK_OK : ADA_SKIP_UNDECODABLE;
}

enum ada_hook_skip hook_arch_prepare(const uint8_t *code, uint64_t addr, uint64_t size,
                                     struct hook_arch_plan *plan)
{
	return hook_arch_prepare_mem(code, addr, size, NULL, plan);
}

/* The whole analysis with a patch of at least min bytes; with `closed`,
 * the function must also end in an instruction after which execution
 * never goes on (plan_ends_closed). */
static enum ada_hook_skip plan_full(const uint8_t *code, uint64_t addr, uint64_t size,
                                    const struct hook_arch_memview *mem, size_t min, bool closed,
                                    struct hook_arch_plan *plan)
{
	struct plan_dec *d;
	enum ada_hook_skip r = plan_start(addr, size, min, plan, &d);
	if (r != ADA_HOOK_OK)
		return r;
	r = plan_prologue(code, addr, size, min, d, plan);
	if (r == ADA_HOOK_OK && closed && !plan_ends_closed(code, addr, size, d))
		r = ADA_SKIP_UNDECODABLE;
	if (r != ADA_HOOK_OK)
		goto unlock;
	/* A capstone sweep is costly per instruction; the byte-level superset
	 * checks cost a small fraction of that per byte and prove most
	 * functions safe alone. */
	int64_t last = plan_superset_last(code, addr, size, 0, size, plan->patch_len);
	if (plan->insn_count > 1) {
		int64_t t = plan_superset_table_last(code, size);
		last = t > last ? t : last;
	}
	if (last < 0)
		goto unlock;
	/* Detail is only needed for relocation; the sweep runs faster without. */
	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_OFF);
	r = plan_scan_body(code, addr, size, (uint64_t)last, d, plan, mem);
	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
unlock:
	plan_release(d);
	if (r != ADA_HOOK_OK)
		plan->patch_len = plan->insn_count = 0;
	return r;
}

enum ada_hook_skip hook_arch_prepare_mem(const uint8_t *code, uint64_t addr, uint64_t size,
                                         const struct hook_arch_memview *mem,
                                         struct hook_arch_plan *plan)
{
	return plan_full(code, addr, size, mem, PATCH_MIN, false, plan);
}

/* A 1-byte function that ends the flow (ret, int3, hlt): the entry jump
 * covers it and the first byte after it, which the caller proves padding
 * and copies into original[1]. The ret is the displaced instruction; the
 * trampoline's jump back behind the patch is never reached. */
static enum ada_hook_skip plan_one_byte(const uint8_t *code, uint64_t addr,
                                        struct hook_arch_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	plan->fn_addr = addr;
	if (code[0] != 0xc3 && code[0] != 0xcc && code[0] != 0xf4)
		return ADA_SKIP_TOO_SHORT;
	plan->insns[0] = (struct hook_arch_insn){.offset = 0, .len = 1, .kind = X86_RELOC_PLAIN};
	plan->insn_count = 1;
	plan->patch_len = HOOK_ARCH_PAD_ENTRY;
	plan->original[0] = code[0];
	return ADA_HOOK_OK;
}

enum ada_hook_skip hook_arch_prepare_short(const uint8_t *code, uint64_t addr, uint64_t size,
                                           const struct hook_arch_memview *mem,
                                           struct hook_arch_plan *plan)
{
	if (size == 1)
		return plan_one_byte(code, addr, plan);
	return plan_full(code, addr, size, mem, HOOK_ARCH_PAD_ENTRY, true, plan);
}

static enum ada_hook_skip plan_prologue_only(const uint8_t *code, uint64_t addr, uint64_t size,
                                             size_t min, bool closed, struct hook_arch_plan *plan)
{
	struct plan_dec *d;
	enum ada_hook_skip r = plan_start(addr, size, min, plan, &d);
	if (r != ADA_HOOK_OK)
		return r;
	r = plan_prologue(code, addr, size, min, d, plan);
	if (r == ADA_HOOK_OK && closed && !plan_ends_closed(code, addr, size, d))
		r = ADA_SKIP_UNDECODABLE;
	plan_release(d);
	if (r != ADA_HOOK_OK)
		plan->patch_len = plan->insn_count = 0;
	return r;
}

enum ada_hook_skip hook_arch_prepare_prologue(const uint8_t *code, uint64_t addr, uint64_t size,
                                              struct hook_arch_plan *plan)
{
	return plan_prologue_only(code, addr, size, PATCH_MIN, false, plan);
}

enum ada_hook_skip hook_arch_prepare_prologue_short(const uint8_t *code, uint64_t addr,
                                                    uint64_t size, struct hook_arch_plan *plan)
{
	if (size == 1)
		return plan_one_byte(code, addr, plan);
	return plan_prologue_only(code, addr, size, HOOK_ARCH_PAD_ENTRY, true, plan);
}

bool hook_arch_ends_closed(const uint8_t *code, uint64_t addr, uint64_t size)
{
	struct plan_dec *d = plan_acquire();
	if (!d)
		return false;
	int closed = size > 0 && plan_ends_closed(code, addr, size, d);
	plan_release(d);
	return closed != 0;
}

size_t x86_fill_insn(const uint8_t *p, size_t left)
{
	if (left >= 1 && (p[0] == 0xcc || p[0] == 0x90))
		return 1;
	size_t k = 0;
	while (k < left && k < 14 && (p[k] == 0x66 || p[k] == 0x2e))
		k++;
	if (k < left && p[k] == 0x90 && p[0] == 0x66 && memchr(p, 0x2e, k) == NULL)
		return k + 1;
	if (k + 3 > left || p[k] != 0x0f || p[k + 1] != 0x1f)
		return 0;
	uint8_t modrm = p[k + 2], mod = modrm >> 6, rm = modrm & 7;
	if (mod == 3 || ((modrm >> 3) & 7) != 0)
		return 0;
	size_t n = k + 3;
	if (rm == 4) {
		if (n >= left)
			return 0;
		if (mod == 0 && (p[n] & 7) == 5)
			n += 4; /* SIB without base: disp32 */
		n++;
	} else if (mod == 0 && rm == 5) {
		n += 4; /* rip + disp32 */
	}
	n += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	return n <= left ? n : 0;
}

size_t hook_arch_fill_len(const uint8_t *code, size_t len)
{
	size_t i = 0, n;
	while (i < len && (n = x86_fill_insn(code + i, len - i)) != 0)
		i += n;
	return i;
}

/* The target of a direct relative branch decoded by capstone, from its
 * encoding: the displacement is the instruction's last 1 or 4 bytes for
 * every form (jmp/jcc/call/loop/jrcxz, rel8 or rel32; prefixes first). */
static int plan_cs_branch_target(const cs_insn *ci, uint64_t *target)
{
	const uint8_t *b = ci->bytes;
	size_t n = ci->size, op = 0;
	while (op < n && (b[op] == 0x66 || b[op] == 0x67 || b[op] == 0xf2 || b[op] == 0xf3 ||
	                  b[op] == 0x2e || b[op] == 0x3e || (b[op] & 0xf0) == 0x40))
		op++; /* legacy, bnd, branch-hint and REX prefixes */
	if (op >= n)
		return 0;
	uint8_t o = b[op];
	if ((o == 0xeb || (o >= 0x70 && o <= 0x7f) || (o >= 0xe0 && o <= 0xe3)) && op + 2 == n) {
		*target = plan_rel_target(b, n, ci->address, 1);
		return 1;
	}
	if (((o == 0xe8 || o == 0xe9) && op + 5 == n) ||
	    (o == 0x0f && op + 6 == n && (b[op + 1] & 0xf0) == 0x80)) {
		*target = plan_rel_target(b, n, ci->address, 4);
		return 1;
	}
	return 0;
}

size_t hook_arch_insn_len(const uint8_t *code, size_t left, uint64_t pc, uint64_t *target,
                          int *has_target)
{
	struct x86_len_info li;
	size_t n = x86_use_fast_len ? x86_fast_len(code, left, &li) : 0;

	*has_target = 0;
	if (n) {
		if (li.rel) {
			*target = plan_rel_target(code, n, pc, li.rel);
			*has_target = 1;
		}
		return n;
	}
	struct plan_dec *d = plan_acquire();
	if (!d)
		return 0;
	/* Detail off: only the bytes are read, and it decodes faster. */
	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_OFF);
	if (cs_disasm_iter(d->cs, &code, &left, &pc, d->ci)) {
		n = d->ci->size;
		*has_target = plan_cs_branch_target(d->ci, target);
	}
	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	plan_release(d);
	/* Neither knew it: a VEX or EVEX instruction capstone 4 cannot
	 * decode is still no branch, and its length keeps a sweep in step
	 * (skipping one byte would decode its middle as a branch). */
	return n ? n : x86_vex_any_len(code, left);
}
