/*
 * Test target: the other threads at a crash (issue 33 item 2). Three
 * threads park in known functions, then the main thread faults:
 *   park_pause   `mov $34,%eax; syscall; ret`: blocked in pause(2) at
 *                park_pause+7, its own code behind the 5 patched bytes;
 *   park_pause2  `xor %eax,%eax; mov $34,%al; syscall; ret`: the syscall
 *                is the last of the displaced instructions, so the thread
 *                blocks in the trampoline's copy of it; the agent maps
 *                that pc back to park_pause2+6;
 *   park_read    blocked in read(2) on a pipe nobody writes: its pc is in
 *                libc's read, park_read is an open frame;
 *   park_spin    running (a loop without system calls): no pc to read,
 *                park_spin is its innermost open frame.
 * The main thread waits until each of them is in its system call, or
 * running, (its /proc/self/task/TID/syscall says so: no timing), then
 * writes through NULL in crash_here.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__asm__(".text\n"
        ".p2align 4\n"
        ".globl park_pause\n"
        ".type park_pause, @function\n"
        "park_pause:\n"
        "\t.cfi_startproc\n"
        "\tmovl $34, %eax\n"
        "\tsyscall\n"
        "\tret\n"
        "\t.cfi_endproc\n"
        ".size park_pause, .-park_pause\n"
        ".p2align 4\n"
        ".globl park_pause2\n"
        ".type park_pause2, @function\n"
        "park_pause2:\n"
        "\t.cfi_startproc\n"
        "\txorl %eax, %eax\n"
        "\tmovb $34, %al\n"
        "\tsyscall\n"
        "\tret\n"
        "\t.cfi_endproc\n"
        ".size park_pause2, .-park_pause2\n"
        /* A loop in asm: gcc may compile an endless C loop into a jump
         * back to the function's entry, which the patch turns into a new
         * traced call each time round. */
        ".p2align 4\n"
        ".globl park_spin\n"
        ".type park_spin, @function\n"
        "park_spin:\n"
        "\t.cfi_startproc\n"
        "\txorl %eax, %eax\n"
        "\tmovl $1, %ecx\n"
        "1:\taddq %rcx, %rax\n"
        "\tjmp 1b\n"
        "\t.cfi_endproc\n"
        ".size park_spin, .-park_spin\n");

void park_pause(void);
void park_pause2(void);
void park_spin(void);

static int pipefd[2];
static volatile pid_t tids[4];
static void *volatile null_ptr;

__attribute__((noinline, used)) static void park_read(void)
{
	char c;
	while (read(pipefd[0], &c, 1) != 0)
		;
}

static void *parker(void *arg)
{
	int which = (int)(long)arg;
	tids[which] = gettid();
	if (which == 0)
		park_pause();
	else if (which == 1)
		park_pause2();
	else if (which == 2)
		park_read();
	else
		park_spin();
	return NULL;
}

/* Whether thread tid is blocked in system call nr now (nr -2: running). */
static int in_syscall(pid_t tid, long nr)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (strncmp(buf, "running", 7) == 0)
		return nr == -2;
	return strtol(buf, NULL, 10) == nr;
}

__attribute__((noinline, used)) static void crash_here(long v)
{
	*(volatile long *)null_ptr = v;
}

int main(void)
{
	static const long nr[4] = {34, 34, 0, -2};
	pthread_t th[4];
	if (pipe(pipefd) != 0)
		return 1;
	for (long i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, parker, (void *)i) != 0)
			return 1;
	for (int i = 0; i < 4; i++)
		while (!tids[i] || !in_syscall(tids[i], nr[i]))
			usleep(1000);
	printf("parked: %d %d %d %d\n", (int)tids[0], (int)tids[1], (int)tids[2], (int)tids[3]);
	fflush(stdout);
	crash_here(42);
	return 0;
}
