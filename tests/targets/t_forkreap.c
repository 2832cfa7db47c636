/*
 * Test target: N children one after the other, each calling _exit at
 * once and reaped at once with waitpid, so each ends while the recorder
 * is looking at its new arena (reaprace_test.sh) and its status reaches
 * the recorder only through this process's table of reaped children
 * (waitnotes_test.sh).
 *   t_forkreap N          exits 0 when every child exited 0
 *   t_forkreap N status   child i exits i % 256 by the exit_group system
 *                         call (its agent does not see it: only its
 *                         zombie and this process's wait tell the
 *                         status); prints "PID i" for each
 *   t_forkreap N stop     the same, with the recorder (this process's
 *                         parent) stopped (SIGSTOP) from before the first
 *                         fork until every child is reaped: its drain
 *                         reads nothing meanwhile, so a table of fewer
 *                         slots than N wraps
 */
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Whether every thread of pid is stopped (state T in its stat). */
static bool all_stopped(pid_t pid)
{
	char path[320];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool all = true;
	struct dirent *de;
	while (all && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char st[512];
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, de->d_name);
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(st, 1, sizeof(st) - 1, f) : 0;
		if (f)
			fclose(f);
		st[n] = '\0';
		char *c = strrchr(st, ')');
		all = c && c[1] == ' ' && c[2] == 'T';
	}
	closedir(d);
	return all;
}

/* The recorder stopped, all its threads (the drain among them) before
 * the first fork: kill() returns before they stop. */
static int stop_recorder(pid_t rec)
{
	if (kill(rec, SIGSTOP) != 0) {
		perror("t_forkreap: SIGSTOP the recorder");
		return -1;
	}
	for (int i = 0; i < 10000 && !all_stopped(rec); i++)
		usleep(1000);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc >= 2 ? atoi(argv[1]) : 0;
	const char *mode = argc == 3 ? argv[2] : "";
	if (n < 1 || n > 100000 || argc > 3 ||
	    (*mode && strcmp(mode, "status") && strcmp(mode, "stop"))) {
		fprintf(stderr, "usage: t_forkreap N [status|stop] (N 1..100000)\n");
		return 2;
	}
	bool codes = *mode != '\0', stop = !strcmp(mode, "stop");
	pid_t rec = getppid();
	if (stop && stop_recorder(rec) != 0)
		return 1;
	int bad = 0;
	for (int i = 0; i < n && !bad; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			perror("t_forkreap: fork");
			bad = 1;
			break;
		}
		if (pid == 0) /* with codes, by the system call: no agent sees this exit */
			codes ? syscall(SYS_exit_group, i % 256) : _exit(0);
		int st, want = codes ? i % 256 : 0;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != want) {
			fprintf(stderr, "t_forkreap: child %d failed\n", i);
			bad = 1;
		}
		if (codes)
			printf("%d %d\n", (int)pid, i);
	}
	if (stop)
		kill(rec, SIGCONT);
	return bad;
}
