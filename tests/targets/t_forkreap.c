/*
 * Test target (reaprace_test.sh): N children one after the other, each
 * calling _exit at once and reaped at once with waitpid, so each ends
 * while the recorder is looking at its new arena.
 *   t_forkreap N   exits 0 when every child exited 0
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc == 2 ? atoi(argv[1]) : 0;
	if (n < 1 || n > 100000) {
		fprintf(stderr, "usage: t_forkreap N (1..100000)\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("t_forkreap: fork");
			return 1;
		}
		if (pid == 0)
			_exit(0);
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "t_forkreap: child %d failed\n", i);
			return 1;
		}
	}
	return 0;
}
