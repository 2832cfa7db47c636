/*
 * bench/fork_bench.py's program: N children one after the other, each
 * either calling _exit at once (fork) or exec'ing /bin/true (exec); the
 * parent times each from fork to the end of wait4 and takes the child's
 * CPU time and minor page faults from wait4's rusage, and, before it
 * reaps the child (waitid with WNOWAIT), the time the child spent
 * runnable but waiting for a CPU from /proc/PID/schedstat (its second
 * field; the read itself is left out of the wall time). Prints one line:
 *   forkexec: mode=M n=N wall_median_us=W wall_min_us=W0 child_cpu_median_us=C
 *             child_minflt_median=F child_runq_median_us=Q
 * (the faults are a count the machine's load does not move: an A/B of
 * start-up work that touches fewer pages shows there when the times are
 * noise; Q says how much of a child's wall time was the machine's load
 * rather than its own work; -1 without /proc).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double tv_us(struct timeval tv)
{
	return (double)tv.tv_sec * 1e6 + (double)tv.tv_usec;
}

/* How long the exited child (a zombie until wait4) waited on a run
 * queue (ns, /proc/PID/schedstat's second field); -1 when that cannot be
 * read. */
static double child_runq_us(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	FILE *f = fopen(path, "r");
	unsigned long long run = 0, wait = 0;
	int got = f ? fscanf(f, "%llu %llu", &run, &wait) : 0;
	if (f)
		fclose(f);
	return got == 2 ? (double)wait / 1e3 : -1;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "fork") && strcmp(argv[1], "exec"))) {
		fprintf(stderr, "usage: forkexec fork|exec N\n");
		return 2;
	}
	int exec_child = !strcmp(argv[1], "exec");
	int n = atoi(argv[2]);
	if (n < 1 || n > 100000) {
		fprintf(stderr, "forkexec: N must be 1..100000\n");
		return 2;
	}
	double *wall = calloc((size_t)n, sizeof(*wall)), *cpu = calloc((size_t)n, sizeof(*cpu));
	double *flt = calloc((size_t)n, sizeof(*flt)), *runq = calloc((size_t)n, sizeof(*runq));
	if (!wall || !cpu || !flt || !runq)
		return 1;
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			if (exec_child)
				execl("/bin/true", "true", (char *)NULL);
			_exit(exec_child ? 127 : 0);
		}
		int status;
		struct rusage ru;
		siginfo_t si;
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) != 0)
			return 1;
		double t1 = now_us();
		runq[i] = child_runq_us(pid);
		double read_us = now_us() - t1;
		if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
		wall[i] = now_us() - t0 - read_us;
		cpu[i] = tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
		flt[i] = (double)ru.ru_minflt;
	}
	qsort(wall, (size_t)n, sizeof(*wall), cmp_double);
	qsort(cpu, (size_t)n, sizeof(*cpu), cmp_double);
	qsort(flt, (size_t)n, sizeof(*flt), cmp_double);
	qsort(runq, (size_t)n, sizeof(*runq), cmp_double);
	printf("forkexec: mode=%s n=%d wall_median_us=%.1f wall_min_us=%.1f "
	       "child_cpu_median_us=%.1f child_minflt_median=%.0f child_runq_median_us=%.1f\n",
	       argv[1], n, wall[n / 2], wall[0], cpu[n / 2], flt[n / 2], runq[n / 2]);
	free(runq);
	free(wall);
	free(cpu);
	free(flt);
	return 0;
}
