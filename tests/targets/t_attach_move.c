/*
 * Test target: threads held at an exact place inside a prologue while
 * ada attach patches it (issue 10; tests/integration/attach_test.py, case
 * move). Both functions are written in assembly (with CFI, as compiled
 * C has) so their first bytes are known:
 *   move_probe(p)   push rbp | movzbl (rdi),eax | mov rbp,rsp; pop; ret
 *                   The probe thread calls it on a page registered with
 *                   userfaultfd: its load faults and the thread waits in
 *                   the kernel with its pc at move_probe+1, strictly inside
 *                   the 7 bytes a patch displaces, at an instruction
 *                   boundary. ada attach must patch the function and move
 *                   the thread to the trampoline's copy of the load.
 *   busy_read(fd, buf, n)   xor eax,eax | syscall | xchg ax,ax; ret
 *                   The reader thread blocks in its read(): a system call
 *                   that restarts at busy_read+2, inside the patch, so the
 *                   function must stay unpatched (busy_at_attach).
 * Protocol: prints "ready" once the first probe thread's fault is
 * reported (the uffd message) and the reader is seen in read() at
 * busy_read+4 (/proc). On "again" from stdin it starts a second probe
 * thread on a second page and prints "ready2" once its fault is reported
 * (a second attach finds it inside the prologue, restored by the first
 * detach). On "go" it resolves both faults (the pages hold 7s) and writes
 * one byte to the reader's pipe; each probe thread then calls move_probe
 * PROBE_CALLS more times on a byte holding 1. Prints "probe SUM" (7 +
 * PROBE_CALLS per probe thread) and "read x", exits 42 when both are
 * right; 77 when userfaultfd is not available here (the test skips).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PROBE_CALLS 1000
#define WAIT_ROUNDS 120000 /* 1 ms each: a run-away guard, not a timing */

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

unsigned move_probe(const volatile uint8_t *p);
long busy_read(int fd, void *buf, unsigned long n);

__asm__(".text\n"
        ".p2align 4\n"
        ".globl move_probe\n.type move_probe,@function\n"
        "move_probe:\n"
        "  .cfi_startproc\n"
        "	push %rbp\n" /* 55 */
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset %rbp, -16\n"
        "	movzbl (%rdi), %eax\n" /* 0f b6 07: +1, where the thread waits */
        "	mov %rsp, %rbp\n"      /* 48 89 e5: +4 */
        "  .cfi_def_cfa_register %rbp\n"
        "	pop %rbp\n"
        "  .cfi_def_cfa %rsp, 8\n"
        "	ret\n"
        "  .cfi_endproc\n"
        ".size move_probe, .-move_probe\n"

        ".p2align 4\n"
        ".globl busy_read\n.type busy_read,@function\n"
        "busy_read:\n"
        "  .cfi_startproc\n"
        "	xor %eax, %eax\n" /* SYS_read */
        "	syscall\n"        /* +2: where a restart goes back to */
        "	xchg %ax, %ax\n"  /* +4: where the blocked reader's pc is */
        "	ret\n"
        "  .cfi_endproc\n"
        ".size busy_read, .-busy_read\n");

static uint8_t *move_page; /* two pages, one per probe thread */
static long move_pg;
static uint8_t move_one = 1;
static unsigned long move_sum[2];
static int move_pipe[2];
static char move_got;
static long move_got_n;
static _Atomic pid_t move_reader_tid;

static void *move_prober(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	unsigned long sum = move_probe(move_page + k * move_pg); /* waits for the fault */
	for (int i = 0; i < PROBE_CALLS; i++)
		sum += move_probe(&move_one);
	move_sum[k] = sum;
	return NULL;
}

static void *move_reader(void *arg)
{
	(void)arg;
	atomic_store(&move_reader_tid, (pid_t)syscall(SYS_gettid));
	move_got_n = busy_read(move_pipe[0], &move_got, 1);
	return NULL;
}

/* The page whose first touch waits for us; 0 or -1 (not available). */
static int move_uffd_open(int *uffd)
{
	move_pg = sysconf(_SC_PAGESIZE);
	*uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (*uffd < 0)
		*uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	struct uffdio_api api = {.api = UFFD_API};
	move_page = mmap(NULL, 2 * (size_t)move_pg, PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*uffd < 0 || ioctl(*uffd, UFFDIO_API, &api) < 0 || move_page == MAP_FAILED)
		return -1;
	struct uffdio_register reg = {.range = {(uintptr_t)move_page, 2 * (uint64_t)move_pg},
	                              .mode = UFFDIO_REGISTER_MODE_MISSING};
	return ioctl(*uffd, UFFDIO_REGISTER, &reg) < 0 ? -1 : 0;
}

/* The reader is inside read() at busy_read+4 (/proc/self/task/T/syscall:
 * "0 fd buf n 0 0 0 sp pc"). */
static int move_reader_blocked(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *pc = strrchr(buf, ' ');
	return buf[0] == '0' && buf[1] == ' ' && pc &&
	       strtoull(pc + 1, NULL, 16) == (uintptr_t)busy_read + 4;
}

/* Waits for a fault on page k. A probe thread moved by an attach may
 * fault again on its own page (from the trampoline's copy of the load):
 * those messages are passed over. */
static int move_wait_fault(int uffd, uintptr_t k)
{
	for (int i = 0; i < WAIT_ROUNDS; i++) {
		struct uffd_msg msg;
		ssize_t n;
		while ((n = read(uffd, &msg, sizeof(msg))) < 0 && errno == EINTR)
			;
		if (n != sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT)
			return -1;
		if ((msg.arg.pagefault.address & ~(uint64_t)(move_pg - 1)) ==
		    (uintptr_t)move_page + k * (uint64_t)move_pg)
			return 0;
	}
	return -1;
}

static int move_wait_ready(int uffd)
{
	if (move_wait_fault(uffd, 0) < 0)
		return -1;
	for (int i = 0; i < WAIT_ROUNDS; i++) {
		pid_t tid = atomic_load(&move_reader_tid);
		if (tid && move_reader_blocked(tid))
			return 0;
		usleep(1000);
	}
	return -1;
}

/* Fills both pages with 7s and wakes every thread waiting on them. */
static int move_resolve(int uffd)
{
	uint8_t *src = malloc(2 * (size_t)move_pg);
	if (!src)
		return -1;
	memset(src, 7, 2 * (size_t)move_pg);
	struct uffdio_copy cp = {
	    .dst = (uintptr_t)move_page, .src = (uintptr_t)src, .len = 2 * (uint64_t)move_pg};
	int rc = ioctl(uffd, UFFDIO_COPY, &cp);
	free(src);
	return rc < 0 && errno != EEXIST ? -1 : 0;
}

static void move_say(const char *s)
{
	printf("%s\n", s);
	fflush(stdout);
}

int main(void)
{
	int uffd, nprobe = 1;
	pthread_t tp[2], tr;
	char line[16] = "";
	if (move_uffd_open(&uffd) < 0) {
		printf("skip: userfaultfd is not available here (%s)\n", strerror(errno));
		return 77;
	}
	if (pipe(move_pipe) < 0 || pthread_create(&tp[0], NULL, move_prober, (void *)0) ||
	    pthread_create(&tr, NULL, move_reader, NULL) || move_wait_ready(uffd) < 0) {
		fprintf(stderr, "t_attach_move: setup failed\n");
		return 1;
	}
	move_say("ready");
	while (fgets(line, sizeof(line), stdin) && !strcmp(line, "again\n") && nprobe == 1) {
		if (pthread_create(&tp[1], NULL, move_prober, (void *)1) ||
		    move_wait_fault(uffd, 1) < 0) {
			fprintf(stderr, "t_attach_move: second probe failed\n");
			return 1;
		}
		nprobe = 2;
		move_say("ready2");
	}
	if (strcmp(line, "go\n") || move_resolve(uffd) < 0 || write(move_pipe[1], "x", 1) != 1) {
		fprintf(stderr, "t_attach_move: no go\n");
		return 1;
	}
	unsigned long sum = 0;
	for (int k = 0; k < nprobe; k++) {
		pthread_join(tp[k], NULL);
		sum += move_sum[k];
	}
	pthread_join(tr, NULL);
	printf("probe %lu\nread %c\n", sum, move_got_n == 1 ? move_got : '?');
	return sum == (unsigned long)nprobe * (7 + PROBE_CALLS) && move_got_n == 1 &&
	               move_got == 'x'
	           ? 42
	           : 1;
}
