/*
 * count_jump: what the jump into a count block costs, apart from the
 * count (docs/benchmarks.md, "Long workloads beside the short ones").
 * A caller makes N distinct calls of N one-line leaves (each `mov
 * [rip+x], edi; lea eax, [rdi+1]; ret`, STRIDE bytes apart), timed three
 * ways: untraced; each leaf's entry a `jmp` to a copy-form count block
 * 64 MiB away (the gate, the tag and `add qword gs:[8i], 1` as ada emits
 * them, then the leaf's copy); and the caller's `call` aimed at that
 * block directly, the leaf left whole. Prints ns a call over the
 * untraced caller, the least of five rounds of 200 M calls each.
 *   cc -O2 -o count_jump bench/count_jump.c && ./count_jump N STRIDE
 * x86_64 Linux only; a measurement program, not part of ada.
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TEXT_AT 0x200000000ull /* the leaves and callers: 64 MiB */
#define ZONE_AT 0x204000000ull /* the count blocks, 64 bytes each */
#define CALLS 200000000l

static uint8_t *text, *zone, *sinkp;

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

/* The leaf at p: mov [rip+sink], edi; lea eax, [rdi+1]; ret. */
static size_t emit_leaf(uint8_t *p)
{
	p[0] = 0x89;
	p[1] = 0x3d;
	put32(p + 2, (int32_t)(sinkp - (p + 6)));
	p[6] = 0x8d;
	p[7] = 0x47;
	p[8] = 0x01;
	p[9] = 0xc3;
	return 10;
}

/* Block i: cmp dword gs:[-16], 1 (the gate, here beside the tag); jne;
 * cmp qword gs:[-8], "adct"; jne; add qword gs:[8i], 1; the leaf. The
 * jne's lead nowhere taken (the gate and tag always match). */
static void emit_block(uint8_t *b, int i)
{
	static const uint8_t gate[] = {0x65, 0x83, 0x3c, 0x25, 0xf0, 0xff,
	                               0xff, 0xff, 0x01, 0x75, 0x30};
	static const uint8_t tag[] = {0x65, 0x48, 0x81, 0x3c, 0x25, 0xf8, 0xff, 0xff,
	                              0xff, 'a',  'd',  'c',  't',  0x75, 0x20};
	static const uint8_t add[] = {0x65, 0x48, 0x83, 0x04, 0x25};
	uint8_t *q = b;
	memcpy(q, gate, sizeof(gate));
	q += sizeof(gate);
	memcpy(q, tag, sizeof(tag));
	q += sizeof(tag);
	memcpy(q, add, sizeof(add));
	q += sizeof(add);
	put32(q, 8 * i);
	q[4] = 1;
	emit_leaf(q + 5);
}

/* mov eax, edi; n x (mov edi, eax; call target(i)); ret. */
static void emit_caller(uint8_t *c, int n, uint8_t *leaves, int stride, bool to_blocks)
{
	uint8_t *q = c;
	*q++ = 0x89;
	*q++ = 0xf8;
	for (int i = 0; i < n; i++) {
		uint8_t *t = to_blocks ? zone + (size_t)i * 64 : leaves + (size_t)i * stride;
		*q++ = 0x89;
		*q++ = 0xc7;
		*q++ = 0xe8;
		put32(q, (int32_t)(t - (q + 4)));
		q += 4;
	}
	*q = 0xc3;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1, stride = argc > 2 ? atoi(argv[2]) : 64;
	if (n < 1 || n > 65536 || stride < 16 || (size_t)n * stride > (32u << 20))
		return 2;
	long reps = CALLS / n;
	int prot = PROT_READ | PROT_WRITE | PROT_EXEC;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE;
	text = mmap((void *)TEXT_AT, 64u << 20, prot, flags, -1, 0);
	zone = mmap((void *)ZONE_AT, 8u << 20, prot, flags, -1, 0);
	/* the gate and tag, then a counter per leaf at the %gs base */
	size_t gs_len = 4096 + (((size_t)n * 8 + 4095) & ~(size_t)4095);
	uint8_t *gs =
	    mmap(NULL, gs_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (text == MAP_FAILED || zone == MAP_FAILED || gs == MAP_FAILED || n * 64 > (8 << 20))
		return 2;
	sinkp = text + 64;
	memcpy(gs + 4096 - 8, "adct\0\0\0\0", 8);
	*(uint32_t *)(gs + 4096 - 16) = 1;
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, (unsigned long)(gs + 4096)))
		return 3;
	uint8_t *leaves = text + (1u << 20);
	for (int i = 0; i < n; i++) {
		emit_leaf(leaves + (size_t)i * stride);
		emit_block(zone + (size_t)i * 64, i);
	}
	emit_caller(text + (34u << 20), n, leaves, stride, false);
	emit_caller(text + (48u << 20), n, leaves, stride, true);
	double best[3] = {1e9, 1e9, 1e9};
	for (int round = 0; round < 5; round++) {
		for (int mode = 0; mode < 3; mode++) {
			for (int i = 0; i < n; i++) { /* mode 1: the entry jumps to the block */
				uint8_t *l = leaves + (size_t)i * stride;
				if (mode == 1) {
					l[0] = 0xe9;
					put32(l + 1, (int32_t)(zone + (size_t)i * 64 - (l + 5)));
				} else {
					emit_leaf(l);
				}
			}
			__builtin___clear_cache((char *)text, (char *)text + (64u << 20));
			int (*f)(int) =
			    (int (*)(int))(void *)(text + (mode == 2 ? 48u << 20 : 34u << 20));
			double t0 = cpu_now();
			int x = 0;
			for (long r = 0; r < reps; r++)
				x = f(x);
			double t = cpu_now() - t0;
			if (x != (int)(reps * n))
				return 4;
			best[mode] = t < best[mode] ? t : best[mode];
		}
	}
	double calls = (double)reps * n;
	printf("n=%d stride=%d: untraced %.3f ns/call, through the entry's jmp +%.3f ns, "
	       "the block called directly %+.3f ns\n",
	       n, stride, best[0] / calls * 1e9, (best[1] - best[0]) / calls * 1e9,
	       (best[2] - best[0]) / calls * 1e9);
	return 0;
}
