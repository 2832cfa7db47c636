/*
 * Test target: code that does not follow the C call/return conventions
 * (issue 14: V8's builtins, interpreters' assembly). nonc_shift_* pops its
 * return address, pushes its result where the return address was and
 * returns from one word lower: its caller (nonc_call_*, assembly too)
 * pops the result off the stack. Under ada the return trampoline then
 * comes back at a slot the shadow stack does not know.
 *   t_nonc nocfi   nonc_shift_nocfi has no .eh_frame FDE: the agent must
 *                  leave it unhooked (no_unwind_info)
 *   t_nonc cfi     nonc_shift_cfi declares CFI, so it is hooked: the agent
 *                  must resynchronise (never abort), stop tracing the
 *                  thread and count what it no longer records
 *   t_nonc cfi-fork
 *                  as cfi, then forks: the child calls c_work() 10 times
 *                  and exits; its agent.json counts only its own calls
 *                  not traced, none of its parent's
 * Either way the output is the untraced one. c_work() is ordinary C.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

long nonc_call_cfi(long x);
long nonc_call_nocfi(long x);

/* The callers have no CFI (so they are never hooked); only the callee
 * differs. */
__asm__(".text\n"
        ".globl nonc_shift_cfi\n"
        ".type nonc_shift_cfi, @function\n"
        "nonc_shift_cfi:\n"
        "  .cfi_startproc\n"
        "  pop %rcx\n"
        "  lea 1(%rdi,%rdi), %rax\n"
        "  push %rax\n"
        "  push %rcx\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size nonc_shift_cfi, .-nonc_shift_cfi\n"
        ".globl nonc_shift_nocfi\n"
        ".type nonc_shift_nocfi, @function\n"
        "nonc_shift_nocfi:\n"
        "  pop %rcx\n"
        "  lea 1(%rdi,%rdi), %rax\n"
        "  push %rax\n"
        "  push %rcx\n"
        "  ret\n"
        ".size nonc_shift_nocfi, .-nonc_shift_nocfi\n"
        ".globl nonc_call_cfi\n"
        ".type nonc_call_cfi, @function\n"
        "nonc_call_cfi:\n"
        "  call nonc_shift_cfi\n"
        "  pop %rax\n"
        "  ret\n"
        ".size nonc_call_cfi, .-nonc_call_cfi\n"
        ".globl nonc_call_nocfi\n"
        ".type nonc_call_nocfi, @function\n"
        "nonc_call_nocfi:\n"
        "  call nonc_shift_nocfi\n"
        "  pop %rax\n"
        "  ret\n"
        ".size nonc_call_nocfi, .-nonc_call_nocfi\n");

static volatile long sink;

__attribute__((noinline, used)) long c_work(long x)
{
	sink = x;
	return x * 3;
}

int main(int argc, char **argv)
{
	if (argc < 2 ||
	    (strcmp(argv[1], "cfi") && strcmp(argv[1], "nocfi") && strcmp(argv[1], "cfi-fork"))) {
		fprintf(stderr, "usage: t_nonc cfi|nocfi|cfi-fork\n");
		return 2;
	}
	long (*call)(long) = strcmp(argv[1], "nocfi") ? nonc_call_cfi : nonc_call_nocfi;
	long acc = 0;
	for (long i = 0; i < 100; i++)
		acc += call(i) + c_work(i);
	printf("acc %ld\n", acc);
	if (strcmp(argv[1], "cfi-fork"))
		return 0;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (long i = 0; i < 10; i++)
			acc += c_work(i);
		printf("child acc %ld\n", acc);
		exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	return 0;
}
