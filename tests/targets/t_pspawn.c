/*
 * Test target in the manner of uftrace's posix_spawn test (our own code):
 * the parent posix_spawn()s two programs, one after the other, each with
 * an explicit environment that holds only ADA_TEST_COUNTS (no LD_PRELOAD,
 * no ADA_*), and waits for each. The two programs are this one again,
 * `t_pspawn abc` (main -> a -> b -> c -> getpid) and `t_pspawn openclose`
 * (fopen + fclose of /dev/null); each counts its own calls under its own
 * program name, so the parent and both children are held to exact counts.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(a) X(b) X(c) X(open_close) X(spawn_wait)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static char counts_var[4096];

TC_FN static int c(void)
{
	TC_ENTER(FN_c);
	return getpid() % 100000;
}

TC_FN static int b(void)
{
	TC_ENTER(FN_b);
	return c() + 1;
}

TC_FN static int a(void)
{
	TC_ENTER(FN_a);
	return b() - 1;
}

TC_FN static int open_close(void)
{
	TC_ENTER(FN_open_close);
	FILE *f = fopen("/dev/null", "r");
	if (!f)
		return 1;
	return fclose(f) != 0;
}

/* posix_spawn of /proc/self/exe with `what`, waited for: its exit status. */
TC_FN static int spawn_wait(const char *what)
{
	TC_ENTER(FN_spawn_wait);
	char *args[] = {(char *)"t_pspawn", (char *)what, NULL};
	char *env[] = {counts_var, NULL};
	pid_t pid;
	int status = 0;
	fflush(stdout);
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, env) != 0)
		return -1;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	const char *role = argc > 1 ? argv[1] : "parent";
	if (!strcmp(role, "abc")) {
		tc_init(argc, argv, "pspawn_abc", fn_names, FN_COUNT);
		return a() == (int)(getpid() % 100000) ? 0 : 1;
	}
	if (!strcmp(role, "openclose")) {
		tc_init(argc, argv, "pspawn_openclose", fn_names, FN_COUNT);
		return open_close();
	}
	tc_init(argc, argv, "pspawn", fn_names, FN_COUNT);
	const char *cv = getenv("ADA_TEST_COUNTS");
	snprintf(counts_var, sizeof(counts_var), "ADA_TEST_COUNTS=%s", cv ? cv : "");
	int s1 = spawn_wait("abc");
	int s2 = spawn_wait("openclose");
	printf("pspawn: statuses %d %d\n", s1, s2);
	return s1 || s2;
}
