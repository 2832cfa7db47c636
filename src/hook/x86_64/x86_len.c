/*
 * x86_64 instruction lengths without capstone (x86_fast_len()).
 *
 * Role: the body sweeps of hook_arch_prepare() and the cross-function
 * branch sweep only need each instruction's length and, for direct
 * branches, the target; the prologue also where a rip-relative disp32
 * sits (li->disp). Capstone costs far more per instruction (it
 * always formats the text) than this table walk. It is a
 * WHITELIST: it answers only for encodings it knows exactly (legacy
 * one- and two-byte maps, 0F38/0F3A, VEX and EVEX with their ModRM/SIB/
 * displacement/immediate rules) and returns 0 for everything else
 * (x87, far/system instructions, 16-bit addressing, moffs, rare prefixes,
 * loop/jrcxz/xbegin, indirect jmp), which the caller then hands to
 * capstone. test_hook_len.c checks it against capstone instruction by
 * instruction over whole real libraries (libc, libstdc++, python3).
 *
 * Threads: any; pure function of its input.
 */
#include "x86_internal.h"

/* One-byte map: what follows the opcode. */
enum {
	L_NO = 0, /* unknown here: capstone decides */
	L_1,      /* opcode only */
	L_M,      /* ModRM */
	L_MI8,    /* ModRM + imm8 */
	L_MIZ,    /* ModRM + imm16/32 (66 prefix: 16) */
	L_I8,     /* imm8 */
	L_IZ,     /* imm16/32 */
	L_IV,     /* B8+r: imm16/32/64 (REX.W: 64) */
	L_I16,    /* imm16 (ret imm16) */
	L_REL8,   /* jcc/jmp rel8 */
	L_REL32,  /* call/jmp rel32 */
	L_GRP3B,  /* F6: /0 /1 test imm8, else ModRM */
	L_GRP3V,  /* F7: /0 /1 test immZ, else ModRM */
	L_GRP5,   /* FF: /0 /1 /2 /6 ModRM, else unknown */
	L_MOV_I8, /* C6 /0 only */
	L_MOV_IZ, /* C7 /0 only */
	L_GRP_M0, /* 8F /0 only (pop r/m; other /r is XOP) */
	L_GRP4,   /* FE /0 /1 */
};

static const uint8_t len_map1[256] = {
    [0x00 ... 0x03] = L_M,
    [0x04] = L_I8,
    [0x05] = L_IZ,
    [0x08 ... 0x0b] = L_M,
    [0x0c] = L_I8,
    [0x0d] = L_IZ,
    [0x10 ... 0x13] = L_M,
    [0x14] = L_I8,
    [0x15] = L_IZ,
    [0x18 ... 0x1b] = L_M,
    [0x1c] = L_I8,
    [0x1d] = L_IZ,
    [0x20 ... 0x23] = L_M,
    [0x24] = L_I8,
    [0x25] = L_IZ,
    [0x28 ... 0x2b] = L_M,
    [0x2c] = L_I8,
    [0x2d] = L_IZ,
    [0x30 ... 0x33] = L_M,
    [0x34] = L_I8,
    [0x35] = L_IZ,
    [0x38 ... 0x3b] = L_M,
    [0x3c] = L_I8,
    [0x3d] = L_IZ,
    [0x50 ... 0x5f] = L_1,
    [0x63] = L_M,
    [0x68] = L_IZ,
    [0x69] = L_MIZ,
    [0x6a] = L_I8,
    [0x6b] = L_MI8,
    [0x70 ... 0x7f] = L_REL8,
    [0x80] = L_MI8,
    [0x81] = L_MIZ,
    [0x83] = L_MI8,
    [0x84 ... 0x8b] = L_M,
    [0x8d] = L_M,
    [0x8f] = L_GRP_M0,
    [0x90 ... 0x99] = L_1,
    [0x9c ... 0x9f] = L_1,
    [0xa4 ... 0xa7] = L_1,
    [0xa8] = L_I8,
    [0xa9] = L_IZ,
    [0xaa ... 0xaf] = L_1,
    [0xb0 ... 0xb7] = L_I8,
    [0xb8 ... 0xbf] = L_IV,
    [0xc0] = L_MI8,
    [0xc1] = L_MI8,
    [0xc2] = L_I16,
    [0xc3] = L_1,
    [0xc6] = L_MOV_I8,
    [0xc7] = L_MOV_IZ,
    [0xc9] = L_1,
    [0xcc] = L_1,
    [0xd0 ... 0xd3] = L_M,
    [0xe8] = L_REL32,
    [0xe9] = L_REL32,
    [0xeb] = L_REL8,
    [0xf4] = L_1,
    [0xf5] = L_1,
    [0xf6] = L_GRP3B,
    [0xf7] = L_GRP3V,
    [0xf8 ... 0xfd] = L_1,
    [0xfe] = L_GRP4,
    [0xff] = L_GRP5,
};

/* Two-byte map (0F xx), legacy encoding: 1 = ModRM, 2 = ModRM + imm8,
 * 3 = no operand bytes, 4 = rel32 (jcc); 0 = unknown. */
static const uint8_t len_map2[256] = {
    [0x05] = 3,          [0x0b] = 3,          [0x0d] = 1,          [0x10 ... 0x17] = 1,
    [0x18 ... 0x1f] = 1, [0x28 ... 0x2f] = 1, [0x31] = 3,          [0x40 ... 0x4f] = 1,
    [0x50 ... 0x6f] = 1, [0x70 ... 0x73] = 2, [0x74 ... 0x76] = 1, [0x7e] = 1,
    [0x7f] = 1,          [0x80 ... 0x8f] = 4, [0x90 ... 0x9f] = 1, [0xa2] = 3,
    [0xa3] = 1,          [0xa4] = 2,          [0xa5] = 1,          [0xab] = 1,
    [0xac] = 2,          [0xad] = 1,          [0xae] = 1,          [0xaf] = 1,
    [0xb0] = 1,          [0xb1] = 1,          [0xb3] = 1,          [0xb6] = 1,
    [0xb7] = 1,          [0xb8] = 1,          [0xba] = 2,          [0xbb ... 0xbf] = 1,
    [0xc0] = 1,          [0xc1] = 1,          [0xc2] = 2,          [0xc3] = 1,
    [0xc4 ... 0xc6] = 2, [0xc7] = 1,          [0xc8 ... 0xcf] = 3, [0xd0 ... 0xfe] = 1,
};

/* VEX opcodes that exist, per map (1: 0F, 2: 0F38, 3: 0F3A); the rest
 * are undefined and capstone rejects them, so the table declines too. */
static const uint8_t len_vex_ok[4][256] = {
    [1] = {[0x10 ... 0x17] = 1,
           [0x28 ... 0x2f] = 1,
           [0x50 ... 0x76] = 1,
           [0x7c ... 0x7f] = 1,
           [0xc2] = 1,
           [0xc4 ... 0xc6] = 1,
           [0xd0 ... 0xfe] = 1},
    [2] = {[0x00 ... 0x0f] = 1,
           [0x13] = 1,
           [0x16 ... 0x1a] = 1,
           [0x1c ... 0x1e] = 1,
           [0x20 ... 0x25] = 1,
           [0x28 ... 0x2f] = 1,
           [0x30 ... 0x40] = 1,
           [0x45 ... 0x47] = 1,
           [0x58 ... 0x5a] = 1,
           [0x78] = 1,
           [0x79] = 1,
           [0x8c] = 1,
           [0x8e] = 1,
           [0x90 ... 0x9f] = 1,
           [0xa6 ... 0xaf] = 1,
           [0xb6 ... 0xbf] = 1,
           [0xdb ... 0xdf] = 1,
           [0xf2 ... 0xf3] = 1,
           [0xf5 ... 0xf7] = 1},
    [3] = {[0x00 ... 0x06] = 1,
           [0x08 ... 0x0f] = 1,
           [0x14 ... 0x19] = 1,
           [0x1d] = 1,
           [0x20 ... 0x22] = 1,
           [0x38] = 1,
           [0x39] = 1,
           [0x40 ... 0x42] = 1,
           [0x44] = 1,
           [0x46] = 1,
           [0x48 ... 0x4c] = 1,
           [0x60 ... 0x63] = 1,
           [0xdf] = 1,
           [0xf0] = 1},
};

/* Bytes of ModRM + SIB + displacement at m (32/64-bit addressing), or 0
 * when they run past `left`. */
static size_t len_modrm(const uint8_t *m, size_t left, struct x86_len_info *li)
{
	if (left < 1)
		return 0;
	uint8_t mod = m[0] >> 6, rm = m[0] & 7;
	size_t n = 1;
	if (mod != 3 && rm == 4) {
		if (left < 2)
			return 0;
		n = 2;
		if (mod == 0 && (m[1] & 7) == 5) {
			n += 4; /* SIB with no base: disp32 */
			li->absmem = 1;
		}
	} else if (mod == 0 && rm == 5) {
		n += 4; /* rip + disp32 */
		li->riprel = 1;
		li->disp = m + 1;
	}
	n += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	return n <= left ? n : 0;
}

/* The rest of a VEX/EVEX instruction whose prefix is pre bytes and whose
 * opcode (at b[pre], map `map`) takes a ModRM: ModRM, SIB, displacement,
 * and the imm8 the map and opcode call for; the whole length or 0. */
static size_t len_vex_rest(const uint8_t *b, size_t left, size_t pre, unsigned map,
                           struct x86_len_info *li)
{
	uint8_t op = b[pre];
	size_t m = left > pre + 1 ? len_modrm(b + pre + 1, left - pre - 1, li) : 0;
	if (!m)
		return 0;
	int imm =
	    map == 3 ||
	    (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 || (op >= 0xc4 && op <= 0xc6)));
	size_t n = pre + 1 + m + (size_t)imm;
	return n <= left ? n : 0;
}

/* VEX (C4/C5) and EVEX (62): prefix, opcode, ModRM, imm8 by map. */
static size_t len_vex(const uint8_t *b, size_t left, struct x86_len_info *li)
{
	size_t pre;
	unsigned map;
	if (b[0] == 0xc5) {
		pre = 2, map = 1;
	} else if (b[0] == 0xc4) {
		if (left < 3)
			return 0;
		pre = 3, map = b[1] & 0x1f;
	} else {
		/* EVEX (62): the length rules are the same, but capstone 4
		 * cannot decode much of AVX-512BW (vpcmpb, vpbroadcastb...)
		 * and its callers treat such bytes conservatively; declining
		 * keeps their decisions exactly capstone's. */
		return 0;
	}
	if (map < 1 || map > 3 || left < pre + 2)
		return 0;
	uint8_t op = b[pre];
	/* Not listed: vzeroupper/vzeroall (no ModRM) and the AVX-512 mask
	 * ops (kmov, kand..., kortest, kshift) capstone 4 cannot decode. */
	if (!len_vex_ok[map][op])
		return 0;
	return len_vex_rest(b, left, pre, map, li);
}

size_t x86_vex_any_len(const uint8_t *b, size_t left)
{
	size_t pre;
	unsigned map;
	if (left < 2)
		return 0;
	if (b[0] == 0xc5) {
		pre = 2, map = 1;
	} else if (b[0] == 0xc4) {
		pre = 3, map = b[1] & 0x1f;
	} else if (b[0] == 0x62) {
		/* EVEX: P1 bit 2 is always 1; maps 5 and 6 (FP16) declined */
		if (left < 4 || !(b[2] & 0x04))
			return 0;
		pre = 4, map = b[1] & 0x07;
	} else {
		return 0;
	}
	if (map < 1 || map > 3 || left < pre + 1)
		return 0;
	uint8_t op = b[pre];
	if (b[0] != 0x62 && map == 1 && op == 0x77)
		return pre + 1; /* vzeroupper, vzeroall: no ModRM */
	struct x86_len_info li;
	return len_vex_rest(b, left, pre, map, &li);
}

/* Two- and three-byte legacy maps; o points at the 0F. */
static size_t len_0f(const uint8_t *o, size_t left, struct x86_len_info *li)
{
	if (left < 2)
		return 0;
	if (o[1] == 0x38 || o[1] == 0x3a) { /* ModRM (+ imm8 for 0F3A) */
		if (left < 3)
			return 0;
		size_t m = len_modrm(o + 3, left - 3, li);
		size_t n = m ? 3 + m + (o[1] == 0x3a) : 0;
		return n <= left ? n : 0;
	}
	switch (len_map2[o[1]]) {
	case 1: {
		size_t m = len_modrm(o + 2, left - 2, li);
		return m ? 2 + m : 0;
	}
	case 2: {
		size_t m = len_modrm(o + 2, left - 2, li);
		return m && 3 + m <= left ? 3 + m : 0;
	}
	case 3:
		return 2;
	case 4:
		li->rel = 4;
		return left >= 6 ? 6 : 0;
	default:
		return 0;
	}
}

/* Opcode-group forms that depend on ModRM.reg. */
static size_t len_group(unsigned kind, const uint8_t *o, size_t left, size_t immz,
                        struct x86_len_info *li)
{
	if (left < 2)
		return 0;
	unsigned reg = (o[1] >> 3) & 7;
	size_t m = len_modrm(o + 1, left - 1, li), imm = 0;
	switch (kind) {
	case L_GRP3B:
		imm = reg < 2;
		break;
	case L_GRP3V:
		imm = reg < 2 ? immz : 0;
		li->wide_imm = imm != 0;
		break;
	case L_GRP5:
		if (reg == 3 || reg == 4 || reg == 5 || reg == 7)
			return 0;
		li->indirect_call = reg == 2;
		break;
	case L_MOV_I8:
		if (reg)
			return 0;
		imm = 1;
		break;
	case L_MOV_IZ:
		if (reg)
			return 0;
		imm = immz;
		li->wide_imm = 1;
		break;
	case L_GRP_M0:
		if (reg)
			return 0;
		break;
	case L_GRP4:
		if (reg > 1)
			return 0;
		break;
	default:
		return 0;
	}
	return m && 1 + m + imm <= left ? 1 + m + imm : 0;
}

/* After the legacy prefixes and REX: the one-byte map. */
static size_t len_map1_op(const uint8_t *o, size_t left, int opsize16, int rexw,
                          struct x86_len_info *li)
{
	size_t immz = opsize16 && !rexw ? 2 : 4, m; /* REX.W overrides 66 */
	unsigned kind = len_map1[o[0]];
	switch (kind) {
	case L_1:
		return 1;
	case L_I8:
		return left >= 2 ? 2 : 0;
	case L_IZ:
		li->wide_imm = 1;
		return left >= 1 + immz ? 1 + immz : 0;
	case L_I16:
		li->wide_imm = 1;
		return left >= 3 ? 3 : 0;
	case L_IV: {
		size_t n = 1 + (rexw ? 8 : immz);
		li->wide_imm = 1;
		return left >= n ? n : 0;
	}
	case L_REL8:
		li->rel = 1;
		return left >= 2 ? 2 : 0;
	case L_REL32:
		li->rel = 4;
		return left >= 5 ? 5 : 0;
	case L_M:
	case L_MI8:
	case L_MIZ:
		m = len_modrm(o + 1, left - 1, li);
		if (!m || (o[0] == 0x8d && (o[1] >> 6) == 3)) /* lea reg,reg: invalid */
			return 0;
		m += 1 + (kind == L_MI8 ? 1 : kind == L_MIZ ? immz : 0);
		li->wide_imm = kind == L_MIZ;
		return m <= left ? m : 0;
	default:
		return len_group(kind, o, left, immz, li);
	}
}

/* What a byte is in front of the opcode: one table load per byte instead
 * of a chain of compares (this loop runs once per instruction of every
 * cold sweep). P_66/P_REP/P_SEG: the legacy prefixes we accept. */
enum { P_66 = 1, P_REP = 2, P_SEG = 4, P_LEGACY = 7, P_VEX = 8, P_REX = 16 };
static const uint8_t len_pfx[256] = {
    [0x66] = P_66,  [0xf2] = P_REP, [0xf3] = P_REP,          [0x64] = P_SEG,
    [0x65] = P_SEG, [0x2e] = P_SEG, [0x3e] = P_SEG,          [0xc4] = P_VEX,
    [0xc5] = P_VEX, [0x62] = P_VEX, [0x40 ... 0x4f] = P_REX,
};

size_t x86_fast_len(const uint8_t *b, size_t left, struct x86_len_info *li)
{
	size_t p = 0;
	int opsize16 = 0, rep = 0, rexw = 0;
	unsigned c = 0;
	li->rel = li->riprel = li->indirect_call = li->wide_imm = li->absmem = 0;
	li->disp = NULL;
	for (; p < left && p < 4; p++) { /* legacy prefixes we accept */
		c = len_pfx[b[p]];
		if (!(c & P_LEGACY))
			break;
		opsize16 |= c == P_66;
		rep |= c == P_REP;
	}
	if (p >= left || p == 4)
		return 0;
	/* c: the class of b[p], the byte that ended the loop */
	if (c & P_VEX) { /* no legacy prefix allowed */
		size_t n = p == 0 ? len_vex(b, left, li) : 0;
		return n;
	}
	if (c & P_REX) {
		rexw = (b[p] & 0x08) != 0;
		if (++p >= left)
			return 0;
	}
	const uint8_t *o = b + p;
	size_t n;
	if (o[0] == 0x0f) {
		n = len_0f(o, left - p, li);
	} else {
		/* f2/f3 only on string ops and `rep ret`; everything else
		 * (bnd jmp, xacquire...) is rare enough for capstone. */
		if (rep && !(o[0] >= 0xa4 && o[0] <= 0xaf) && o[0] != 0xc3 && o[0] != 0x90)
			return 0;
		n = len_map1_op(o, left - p, opsize16, rexw, li);
	}
	/* A prefixed branch (66: rel16 truncating rip; 2e/3e: hints) goes
	 * to capstone, which decides the exact form. */
	if (li->rel && p > 0)
		return 0;
	return n ? p + n : 0;
}

/* Second bytes of the 0F map (no legacy prefix, any REX) where capstone
 * decodes every form the length table accepts, to the same length:
 * found exhaustively (every second byte, ModRM and REX, with and without
 * a SIB displacement). Left out: the SSE forms without their mandatory
 * prefix, the hint nops 0F 18-1E and the 0F 1F register forms capstone
 * 4 rejects, 0F38/0F3A and a few more. */
static const uint8_t len_cs_0f[256] = {
    [0x05] = 1,          [0x0b] = 1,          [0x10 ... 0x12] = 1, [0x14 ... 0x16] = 1,
    [0x19] = 1,          [0x28 ... 0x2a] = 1, [0x2c ... 0x2f] = 1, [0x31] = 1,
    [0x40 ... 0x4f] = 1, [0x51 ... 0x6b] = 1, [0x6e ... 0x70] = 1, [0x74 ... 0x76] = 1,
    [0x7e ... 0x9f] = 1, [0xa2 ... 0xa5] = 1, [0xab ... 0xad] = 1, [0xaf ... 0xb1] = 1,
    [0xb3] = 1,          [0xb6 ... 0xb7] = 1, [0xbb ... 0xc2] = 1, [0xc4] = 1,
    [0xc6] = 1,          [0xc8 ... 0xcf] = 1, [0xd1 ... 0xd5] = 1, [0xd8 ... 0xe5] = 1,
    [0xe8 ... 0xef] = 1, [0xf1 ... 0xf6] = 1, [0xf8 ... 0xfe] = 1,
};

/* x86_internal.h. The one-byte map without a legacy prefix (REX
 * allowed) was checked exhaustively against capstone (every opcode,
 * ModRM and REX, with and without a SIB displacement, 1 and 2 legacy
 * prefixes too): capstone rejects nothing the table accepts there, and
 * only `ret imm16` (C2) after 66 + REX.W gets another length (capstone
 * reads a longer immediate; C2 is left out whatever the prefixes). */
int x86_len_cs_same(const uint8_t *p)
{
	const uint8_t *o =
	    p + ((p[0] & 0xf0) == 0x40); /* the table measured >= 2 bytes after REX */
	switch (p[0]) {
	case 0x66:
	case 0xf2:
	case 0xf3:
	case 0x64:
	case 0x65:
	case 0x2e:
	case 0x3e:
	case 0xc4:
	case 0xc5:
	case 0x62:
		return 0;
	default:
		if (o[0] != 0x0f)
			return o[0] != 0xc2;
		/* 0F xx: the table measured o[1] (and the ModRM it reads). */
		return len_cs_0f[o[1]] || (o[1] == 0x1f && (o[2] >> 6) != 3);
	}
}
