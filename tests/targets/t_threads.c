/*
 * Test target: four threads, each calling the same functions a different
 * number of times, so the harness can match every trace thread to the
 * program thread it was and check the counts per thread. Prints a checksum.
 * With the argument "many": 160 short threads, 8 alive at a time — more
 * threads than the arena has slots, so slots must be recycled. With "heavy":
 * the four threads call 25x more (600 000 events in all, as fast as they
 * can), so the index rings fill and the default lossless mode must wait;
 * "heavy N" calls N times more (1 to 25), for small rings, which fill
 * with fewer events.
 * With "budget": each thread then calls work_a until it sees leaf moved to
 * count-only by ada's --overhead-budget (its own code's patch leads to a
 * count block; at most 16 M rounds, or 2^N with "budget N": the untraced
 * run under qemu-user never sees a move), and as many rounds again. With
 * "budget_fork": the same in a forked child, the parent only waiting (the
 * child's budget thread must do the moving). With "budget_serial": no
 * long thread at all, a thread per request: short threads one after
 * another (each 2 000 work_a rounds, joined before the next starts) until
 * main sees leaf moved, then as many again (at most 240 threads: the
 * untraced run never sees a move); no thread lives through two of the
 * budget's ticks, so only its judgement of the threads together can move
 * leaf. In each budget mode (x86_64) the move seen must have taken the
 * count block's copy form (leaf's bytes up to its ret copied into the
 * block, no jump back), else the exit status is 3.
 * Single role: a target for tests/integration/ada_itest.py; no shared state
 * besides the results array, written once per thread before join.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcount.h"

#define FUNCS(X)                                                                                   \
	X(main)                                                                                    \
	X(worker)                                                                                  \
	X(work_a)                                                                                  \
	X(work_b)                                                                                  \
	X(leaf)                                                                                    \
	X(spawn_all)                                                                               \
	X(join_all)                                                                                \
	X(short_worker)                                                                            \
	X(run_many)                                                                                \
	X(serial_worker)                                                                           \
	X(run_serial)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

#define NTHREADS 4
static volatile unsigned long sink;
static unsigned long results[NTHREADS];
static const char *const labels[NTHREADS] = {"t0", "t1", "t2", "t3"};
static long heavy = 1;
static int budget_mode;
static int budget_log2 = 24; /* at most 2^budget_log2 rounds before a move */
#if defined(__x86_64__)
static unsigned long gs_of[NTHREADS]; /* each worker's %gs base at its end */
/* T_GS_MOVE (e2e.count_only_gs_moved): each worker points %gs at its row
 * here for its work_b calls, as a program using %gs for itself would
 * after ada registered the thread: ada's count blocks must not add into
 * it (its first qword is not their tag), so every row stays zero. A row
 * holds every counter slot a block could address. */
#define GS_ROW (4096 + 2)
static unsigned long gs_rows[NTHREADS][GS_ROW];
static int gs_move, gs_dirty;

/* arch_prctl(code, addr) as a raw system call: no function of its own. */
static long gs_prctl(long code, unsigned long addr)
{
	long r;
	__asm__ volatile("syscall"
	                 : "=a"(r)
	                 : "0"(158L), "D"(code), "S"(addr)
	                 : "rcx", "r11", "memory");
	return r;
}
#endif

/* "budget": whether ada's --overhead-budget moved fn to count-only: its
 * patch (x86_64: a jmp rel32; aarch64: a b) leads to a count block,
 * which starts with an %fs prefix (aarch64: mrs x16, tpidr_el0) instead
 * of a trampoline (a call; sub sp). Only reads its own code. */
static int moved_to_count(const void *fn)
{
	const unsigned char *p = fn;
#if defined(__aarch64__)
	uint32_t w, t;
	memcpy(&w, p, 4);
	if ((w & 0xfc000000u) != 0x14000000u)
		return 0;
	int32_t imm = (int32_t)(w << 6) >> 6; /* imm26, in words */
	memcpy(&t, p + 4 * (intptr_t)imm, 4);
	return t == 0xd53bd050u;
#else
	if (p[0] != 0xe9)
		return 0;
	int rel;
	memcpy(&rel, p + 1, 4);
	return p[5 + rel] == 0x64;
#endif
}

/* x86_64: whether the count block fn's patch leads to is the copy form
 * (docs/hooks.md, "Count-only functions"; the budget's live moves take it
 * as the install's blocks do): after the test and count (36 bytes in the
 * %gs form, 32 in the pointer form), the function's own first bytes, not
 * the jmp to the trampoline's copy of the prologue, and no jump back
 * into the function behind the patch (the inline form's) in what follows
 * (leaf's copy is shorter than 128 bytes). Set once a thread saw a move
 * in another form; main then exits 3. */
static volatile int moved_not_inline;

static inline __attribute__((always_inline)) void check_inline(const void *fn)
{
#if defined(__x86_64__)
	const unsigned char *p = fn, *b;
	int rel;
	memcpy(&rel, p + 1, 4);
	b = p + 5 + rel;
	/* The %gs form's tag compare at 11 (after the gate's cmp and its
	 * jne rel8) has the gs prefix 0x65; the pointer form has a push r11
	 * there. */
	size_t count_len = b[11] == 0x65 ? 36 : 32;
	if (b[count_len] == 0xe9)
		moved_not_inline = 1;
	for (size_t k = count_len; k < 128; k++) {
		memcpy(&rel, b + k + 1, 4);
		if (b[k] == 0xe9 && b + k + 5 + rel > p && b + k + 5 + rel < p + 16)
			moved_not_inline = 1;
	}
#else
	(void)fn; /* no inline form */
#endif
}

TC_FN static unsigned long leaf(unsigned long x)
{
	TC_ENTER(FN_leaf);
	sink = x;
	return x * 2654435761u + 1;
}

TC_FN static unsigned long work_a(unsigned long x)
{
	TC_ENTER(FN_work_a);
	return leaf(x) ^ leaf(x + 1);
}

TC_FN static unsigned long work_b(unsigned long x)
{
	TC_ENTER(FN_work_b);
	return leaf(x + 7) + 3;
}

TC_FN static void *worker(void *arg)
{
	TC_ENTER(FN_worker);
	long i = (long)arg;
	unsigned long acc = 0;
	tc_thread_begin(labels[i]);
	for (long k = 0; k < (i + 1) * 300 * heavy; k++)
		acc += work_a((unsigned long)k);
	/* Until the budget moved leaf (bounded: 16 M rounds), then as many
	 * more: calls on both sides of the move. */
	int seen = 0;
	for (long k = 0, end = budget_mode ? 1L << budget_log2 : 0; k < end; k++) {
		acc += work_a((unsigned long)k);
		if (!seen && (k & 65535) == 0 && moved_to_count((const void *)leaf)) {
			seen = 1;
			check_inline((const void *)leaf);
			end = 2 * k + 65536;
		}
	}
#if defined(__x86_64__)
	unsigned long gs_mine = 0;
	if (gs_move) { /* ARCH_GET_GS, then ARCH_SET_GS to the row past its first qword */
		gs_prctl(0x1004, (unsigned long)&gs_mine);
		gs_prctl(0x1001, (unsigned long)&gs_rows[i][1]);
	}
#endif
	for (long k = 0; k < (NTHREADS - i) * 500 + i; k++)
		acc += work_b((unsigned long)k);
#if defined(__x86_64__)
	if (gs_move) {
		gs_prctl(0x1001, gs_mine);
		for (int s = 0; s < GS_ROW; s++)
			gs_dirty |= gs_rows[i][s] != 0;
	}
#endif
	results[i] = acc;
#if defined(__x86_64__)
	/* This thread's %gs base (arch_prctl ARCH_GET_GS, a raw system call:
	 * no function of its own), for count_form_ok. */
	long r;
	__asm__ volatile("syscall"
	                 : "=a"(r)
	                 : "0"(158L), "D"(0x1004L), "S"(&gs_of[i])
	                 : "rcx", "r11", "memory");
	(void)r;
#endif
	return NULL;
}

TC_FN static void spawn_all(pthread_t *t)
{
	TC_ENTER(FN_spawn_all);
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
}

TC_FN static void join_all(pthread_t *t)
{
	TC_ENTER(FN_join_all);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
}

#define MANY 160
#define MANY_BATCH 8
static char many_labels[MANY][8];

TC_FN static void *short_worker(void *arg)
{
	TC_ENTER(FN_short_worker);
	long i = (long)arg;
	unsigned long acc = 0;
	tc_thread_begin(many_labels[i]);
	for (long k = 0; k < 10 + i; k++)
		acc += work_b((unsigned long)k);
	sink = acc;
	return NULL;
}

TC_FN static void run_many(void)
{
	TC_ENTER(FN_run_many);
	pthread_t t[MANY_BATCH];
	for (long b = 0; b < MANY; b += MANY_BATCH) {
		for (long i = 0; i < MANY_BATCH; i++) {
			snprintf(many_labels[b + i], sizeof(many_labels[0]), "m%ld", b + i);
			pthread_create(&t[i], NULL, short_worker, (void *)(b + i));
		}
		for (long i = 0; i < MANY_BATCH; i++)
			pthread_join(t[i], NULL);
	}
	printf("many: %d threads\n", MANY);
}

#define SERIAL_MAX 240
#define SERIAL_ROUNDS 2000
static char serial_labels[SERIAL_MAX][24];

TC_FN static void *serial_worker(void *arg)
{
	TC_ENTER(FN_serial_worker);
	long i = (long)arg;
	unsigned long acc = 0;
	tc_thread_begin(serial_labels[i]);
	for (long k = 0; k < SERIAL_ROUNDS; k++)
		acc += work_a((unsigned long)k);
	sink = acc;
	return NULL;
}

TC_FN static void run_serial(void)
{
	TC_ENTER(FN_run_serial);
	long end = SERIAL_MAX;
	for (long i = 0; i < end; i++) {
		pthread_t t;
		snprintf(serial_labels[i], sizeof(serial_labels[0]), "s%ld", i);
		if (pthread_create(&t, NULL, serial_worker, (void *)i) != 0)
			exit(1);
		pthread_join(t, NULL);
		if (end == SERIAL_MAX && moved_to_count((const void *)leaf)) {
			end = 2 * i + 2 < SERIAL_MAX ? 2 * i + 2 : SERIAL_MAX;
			check_inline((const void *)leaf);
		}
	}
	/* Nothing printed: the threads' number depends on when the move came. */
}

/* x86_64, T_COUNT_FORM=gs or ptr (e2e.count_only, e2e.count_only_ptr):
 * whether leaf's count block is that form: its instruction after the
 * gate's test (at 11) is the %gs tag compare (prefix 0x65) or the pointer form's push
 * r11 (0x41); and whether each worker counted in its own page: gs, a %gs
 * base of its own (a worker starts with main's and sets its own when it
 * registers: not main's); ptr, none. Elsewhere, untraced or unset: true. */
static int count_form_ok(void)
{
#if defined(__x86_64__)
	const char *want = getenv("T_COUNT_FORM");
	const unsigned char *p = (const void *)leaf;
	int rel, gs = want && !strcmp(want, "gs");
	if (!want || p[0] != 0xe9)
		return 1;          /* or untraced: no block to look at */
	unsigned long main_gs = 0; /* main's own, as the workers' (worker) */
	long r;
	__asm__ volatile("syscall"
	                 : "=a"(r)
	                 : "0"(158L), "D"(0x1004L), "S"(&main_gs)
	                 : "rcx", "r11", "memory");
	for (int i = 0; i < NTHREADS; i++)
		if (gs ? !main_gs || !gs_of[i] || gs_of[i] == main_gs : gs_of[i] || main_gs)
			return 0;
	memcpy(&rel, p + 1, 4);
	return p[5 + rel + 11] == (gs ? 0x65 : 0x41);
#else
	return 1;
#endif
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	pthread_t t[NTHREADS];
	unsigned long sum = 0;

	tc_init(argc, argv, "threads", fn_names, FN_COUNT);
#if defined(__x86_64__)
	gs_move = getenv("T_GS_MOVE") != NULL;
#endif
	if (argc > 1 && !strcmp(argv[1], "many")) {
		run_many();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "budget_serial")) {
		run_serial();
		return moved_not_inline ? 3 : 0;
	}
	if (argc > 1 && !strcmp(argv[1], "heavy"))
		heavy = argc > 2 && atoi(argv[2]) >= 1 && atoi(argv[2]) <= 25 ? atoi(argv[2]) : 25;
	if (argc > 1 && !strcmp(argv[1], "budget"))
		budget_mode = 1;
	if (budget_mode && argc > 2 && atoi(argv[2]) >= 16 && atoi(argv[2]) <= 24)
		budget_log2 = atoi(argv[2]);
	if (argc > 1 && !strcmp(argv[1], "budget_fork")) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid > 0) {
			int st = 0;
			return waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
		}
		if (pid < 0)
			return 1;
		tc_reset_after_fork();
		budget_mode = 1;
	}
	spawn_all(t);
	join_all(t);
	for (int i = 0; i < NTHREADS; i++)
		sum += results[i];
	sum += work_a(99);
	if (!budget_mode) /* budget: the rounds depend on when the move came */
		printf("threads checksum %lu\n", sum);
	if (getenv("T_COUNT_FORM") && !count_form_ok()) /* called only then: at -O0 a call */
		return 4;
#if defined(__x86_64__)
	if (gs_dirty) /* a count block wrote into the program's own %gs memory */
		return 5;
#endif
	return moved_not_inline ? 3 : 0;
}
