/*
 * Test target: fork, and fork + exec.
 *   exec PATH  the child calls child_prepare(), then child_exec() writes the
 *              child's table and execs PATH (t_exec_child), whose frames are
 *              lost with the old image; the parent calls parent_work() and
 *              waits for the child.
 *   fork       the child carries on in the same image: child_work(), then it
 *              returns through the frames it inherited and exits.
 *   threads    as fork, while two other threads keep calling traced code:
 *              the child has only the forking thread; the others' counts
 *              stay in the parent.
 *   tree       a tree of forked processes (two children, each with two
 *              children of its own), one after the other, each calling
 *              child_work: none of them loads anything, so each one's
 *              pid_N/ holds exactly its parent's symbol files.
 *   tree replace
 *              as tree, after replacing its own (traced) module_1.syms
 *              with a copy, as a hostile or rewriting parent would: its
 *              children must not link the copy, they write their own.
 *   tree _exit as tree, but the leaves end with _exit (their table written
 *              first): no exit handler of theirs runs, so their agent.json
 *              is the one the recorder makes from their parent's (each
 *              child links it at the fork and writes its own only at
 *              exit: issue 32).
 * The child forgets what was counted before the fork (tc_reset_after_fork),
 * so each process's table holds exactly what ran in that process.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcount.h"

// clang-format off
#define FUNCS(X)                                                                                   \
	X(main)                                                                                    \
	X(run_fork) X(child_prepare) X(child_exec) X(child_work) X(parent_work) X(spinner)         \
	    X(spin_step) X(run_fork_threads) X(run_tree) X(replace_own_syms)
// clang-format on
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static volatile unsigned long sink;
static bool leaves_exit_now; /* tree _exit */

TC_FN static unsigned long parent_work(unsigned long x)
{
	TC_ENTER(FN_parent_work);
	sink = x;
	return x * 7;
}

TC_FN static unsigned long child_work(unsigned long x)
{
	TC_ENTER(FN_child_work);
	sink = x;
	return x * 5;
}

TC_FN static void child_prepare(void)
{
	TC_ENTER(FN_child_prepare);
	sink = (unsigned long)getpid();
}

TC_FN static void child_exec(const char *path)
{
	TC_ENTER(FN_child_exec);
	char *args[] = {(char *)path, (char *)"from-fork", NULL};
	TC_LOST(FN_child_exec, 1);
	tc_report();
	execv(path, args);
	perror("execv");
	_exit(127);
}

/* Returns in both processes when !exec; in the child only through exec. */
TC_FN static int run_fork(const char *exec_path)
{
	TC_ENTER(FN_run_fork);
	unsigned long acc = 0;
	int status = 0;

	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		tc_reset_after_fork();
		if (exec_path) {
			child_prepare();
			child_exec(exec_path);
		}
		for (unsigned long i = 0; i < 30; i++)
			acc += child_work(i);
		printf("fork child: %lu\n", acc);
		return 0;
	}
	for (unsigned long i = 0; i < 20; i++)
		acc += parent_work(i);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	printf("parent: %lu, child status %d\n", acc, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

static const char *const spin_labels[2] = {"s0", "s1"};
static atomic_int spinners_started;

TC_FN static unsigned long spin_step(unsigned long x)
{
	TC_ENTER(FN_spin_step);
	sink = x;
	return x + 1;
}

TC_FN static void *spinner(void *arg)
{
	TC_ENTER(FN_spinner);
	long i = (long)arg;
	tc_thread_begin(spin_labels[i]);
	/* Pairs with the acquire load in run_fork_threads(). */
	atomic_fetch_add_explicit(&spinners_started, 1, memory_order_release);
	for (unsigned long k = 0; k < 30000 + 1000 * (unsigned long)i; k++)
		spin_step(k);
	return NULL;
}

TC_FN static int run_fork_threads(void)
{
	TC_ENTER(FN_run_fork_threads);
	pthread_t t[2];
	pid_t parent = getpid();
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, spinner, (void *)i);
	/* Fork while both are calling traced code. Pairs with spinner(). */
	while (atomic_load_explicit(&spinners_started, memory_order_acquire) < 2)
		;
	int r = run_fork(NULL);
	if (getpid() != parent)
		return r; /* the child has no spinners to join */
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return r;
}

/* Replaces pid_<self>/module_1.syms under $ADA_SESSION_DIR with a
 * copy of itself (another inode, same bytes); nothing when untraced. */
TC_FN static void replace_own_syms(void)
{
	TC_ENTER(FN_replace_own_syms);
	const char *sess = getenv("ADA_SESSION_DIR");
	if (!sess)
		return;
	char path[4096], tmp[4200];
	snprintf(path, sizeof(path), "%s/pid_%d/module_1.syms", sess, (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s.copy", path);
	FILE *in = fopen(path, "rb"), *out = in ? fopen(tmp, "wb") : NULL;
	char buf[65536];
	size_t n;
	while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	if (in)
		fclose(in);
	if (out && fclose(out) == 0 && rename(tmp, path) != 0)
		perror("rename");
}

/* Forks two children in turn, waiting for each; a child calls
 * child_work, forks its own children while depth > 1, then returns 0 (it
 * ends through the frames it inherited). The parent returns the number of
 * children that failed. */
TC_FN static int run_tree(int depth)
{
	TC_ENTER(FN_run_tree);
	int failed = 0;
	for (unsigned long i = 0; i < 2; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			tc_reset_after_fork();
			for (unsigned long k = 0; k < 10 + i; k++)
				child_work(k);
			int r = depth > 1 ? run_tree(depth - 1) : 0;
			sink = (unsigned long)r; /* after the call: no tail call */
			if (depth == 1 && leaves_exit_now) {
				/* The frames still open are the parent's (entered
				 * before the fork): none of this process's is lost. */
				tc_report();
				_exit(r);
			}
			return r;
		}
		int status = 0;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	}
	return failed;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "fork", fn_names, FN_COUNT);
	if (argc > 2 && !strcmp(argv[1], "exec"))
		return run_fork(argv[2]) != 0;
	if (argc > 1 && !strcmp(argv[1], "fork"))
		return run_fork(NULL) != 0;
	if (argc > 1 && !strcmp(argv[1], "threads"))
		return run_fork_threads() != 0;
	if (argc > 1 && !strcmp(argv[1], "tree")) {
		pid_t self = getpid();
		if (argc > 2 && !strcmp(argv[2], "replace"))
			replace_own_syms();
		leaves_exit_now = argc > 2 && !strcmp(argv[2], "_exit");
		int failed = run_tree(2);
		if (getpid() == self)
			printf("tree: %d children failed\n", failed);
		return failed != 0;
	}
	fprintf(stderr, "usage: t_fork exec PATH | fork | threads | tree [replace|_exit]\n");
	return 2;
}
