/*
 * x86_64 relocation: one helper per case, each appending the relocated form
 * of a displaced instruction at the writer's current address. Pure byte
 * generation (no memory protection, no allocation): tested byte for byte in
 * tests/unit/test_hook_reloc.c.
 *
 * Threads: any; no shared state.
 * Invariant: a helper either appends an exact equivalent of the original
 * instruction (same architectural effect, same memory accessed, same
 * branch target, same return address pushed) or returns -ERANGE.
 */
#include <errno.h>
#include <string.h>

#include "x86_internal.h"

void x86_put(struct x86_writer *w, const void *bytes, size_t n)
{
	if (!w->ok || n > w->cap - w->len) {
		w->ok = 0;
		return;
	}
	memcpy(w->buf + w->len, bytes, n);
	w->len += n;
}

void x86_put_u8(struct x86_writer *w, uint8_t b)
{
	x86_put(w, &b, 1);
}

void x86_put_u32(struct x86_writer *w, uint32_t v)
{
	x86_put(w, &v, 4); /* x86 is little endian, as is the host */
}

void x86_put_u64(struct x86_writer *w, uint64_t v)
{
	x86_put(w, &v, 8);
}

void x86_put_jmp(struct x86_writer *w, uint64_t target)
{
	int64_t d = (int64_t)(target - (x86_pc(w) + 5));

	if (x86_fits_rel32(d)) {
		x86_put_u8(w, 0xe9); /* jmp rel32 */
		x86_put_u32(w, (uint32_t)d);
		return;
	}
	/* jmp qword [rip+0]; dq target */
	x86_put(w, "\xff\x25\x00\x00\x00\x00", 6);
	x86_put_u64(w, target);
}

int reloc_plain(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in)
{
	x86_put(w, orig, in->len);
	return 0;
}

/* [rip+disp32] operands keep their target: new disp32 when it reaches;
 * lea r64 becomes movabs r64, imm64 (same result, no memory access). */
int reloc_rip_relative(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in)
{
	int64_t d = (int64_t)(in->target - (x86_pc(w) + in->len));
	uint8_t tmp[16];

	if (x86_fits_rel32(d)) {
		int32_t d32 = (int32_t)d;
		memcpy(tmp, orig, in->len);
		memcpy(tmp + in->disp_off, &d32, 4);
		x86_put(w, tmp, in->len);
		return 0;
	}
	if (in->kind != X86_RELOC_RIP_LEA)
		return -ERANGE;
	x86_put_u8(w, (uint8_t)(0x48 | (in->reg >> 3))); /* REX.W (+B) */
	x86_put_u8(w, (uint8_t)(0xb8 | (in->reg & 7)));  /* movabs r64, imm64 */
	x86_put_u64(w, in->target);
	return 0;
}

int reloc_jmp(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in)
{
	(void)orig;
	x86_put_jmp(w, in->target);
	return 0;
}

/* jcc rel8/rel32 -> jcc rel32 (0F 80+cc), or when out of reach the
 * inverted jcc over an absolute jmp: j!cc +14; jmp [rip+0]; dq target. */
int reloc_jcc(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in)
{
	int64_t d = (int64_t)(in->target - (x86_pc(w) + 6));

	(void)orig;
	if (x86_fits_rel32(d)) {
		x86_put_u8(w, 0x0f);
		x86_put_u8(w, (uint8_t)(0x80 | in->cc));
		x86_put_u32(w, (uint32_t)d);
		return 0;
	}
	x86_put_u8(w, (uint8_t)(0x70 | (in->cc ^ 1))); /* inverse condition */
	x86_put_u8(w, 14);
	x86_put(w, "\xff\x25\x00\x00\x00\x00", 6);
	x86_put_u64(w, in->target);
	return 0;
}

/* call -> push the ORIGINAL return address, then jmp to the callee, so the
 * callee returns into the function (unwinders and return-address checks
 * see the real caller). push imm32 sign-extends, so the high half is
 * stored separately: push lo32; mov dword [rsp+4], hi32 (no flags). */
int reloc_call(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in,
               uint64_t ret_addr)
{
	(void)orig;
	x86_put_u8(w, 0x68); /* push imm32 */
	x86_put_u32(w, (uint32_t)ret_addr);
	x86_put(w, "\xc7\x44\x24\x04", 4); /* mov dword [rsp+4], imm32 */
	x86_put_u32(w, (uint32_t)(ret_addr >> 32));
	if (in->kind == X86_RELOC_CALL) {
		x86_put_jmp(w, in->target);
		return 0;
	}
	/* call [rip+disp] -> jmp [rip+disp'] through the same pointer slot */
	int64_t d = (int64_t)(in->target - (x86_pc(w) + 6));
	if (!x86_fits_rel32(d))
		return -ERANGE;
	x86_put(w, "\xff\x25", 2);
	x86_put_u32(w, (uint32_t)d);
	return 0;
}
