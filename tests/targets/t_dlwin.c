/*
 * Test target: a call into a dlopen'ed library from another thread the
 * moment the agent's patches of that library go live, inside dlopen()
 * (e2e.detail_set_dlwindow). The agent's test hook ADA_TEST_DL_PAUSE=W,R
 * (agent_install.c; the test sets ADA_TEST_DL_PAUSE=61,62 before the
 * program starts) writes a byte to fd W right after it patched a new
 * module and waits for one on fd R: the waiter thread reads it (fd 60,
 * the other end of 61), calls dlw_leaf() (t_dlwlib.c) and answers on 63
 * (the other end of 62).
 *
 * The loader's lock is held then (the agent rescans when an inner
 * _dl_catch_exception returns), so the waiter cannot dlsym(): a first
 * load tells main() dlw_leaf's offset from the library's base, the
 * library is closed, and the waiter finds the second load's base in
 * /proc/self/maps. Untraced (no agent),
 * main() releases the waiter itself after dlopen() returned, so both
 * runs make the same calls; traced, a waiter released by anyone but the
 * agent fails the run (the test would prove nothing).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcount.h"

// clang-format off
#define FUNCS(X) X(main) X(waiter) X(leaf_offset) X(open_library)
// clang-format on
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

typedef unsigned long (*leaf_fn)(unsigned long);
static int to_waiter[2] = {60, 61}, to_agent[2] = {62, 63};
static volatile unsigned long sink;
static const char *lib_path;
static char lib_real[4096]; /* as /proc/self/maps names it */
static uintptr_t leaf_off;
static int waiter_bad;

TC_FN static void *waiter(void *arg)
{
	TC_ENTER(FN_waiter);
	(void)arg;
	tc_thread_begin("waiter");
	char c = 0;
	while (read(to_waiter[0], &c, 1) < 0 && errno == EINTR)
		;
	/* The library's base and whether the agent is there, from
	 * /proc/self/maps: no callback of ours (its calls would differ
	 * between a traced and an untraced run). */
	uintptr_t base = 0;
	int agent = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, off;
		char *path = strchr(line, '/');
		if (sscanf(line, "%lx-%*x %*s %lx", &lo, &off) != 2 || !path)
			continue;
		path[strcspn(path, "\n")] = 0;
		agent |= strstr(path, "libada_agent") != NULL;
		if (off == 0 && !base && !strcmp(path, lib_real))
			base = lo;
	}
	if (f)
		fclose(f);
	if (base)
		sink = ((leaf_fn)(base + leaf_off))((unsigned long)c);
	waiter_bad = !base || (agent && c != 'a');
	if (c == 'a' && write(to_agent[1], "k", 1) != 1) /* the agent paused: let it go on */
		waiter_bad = 1;
	return NULL;
}

/* dlw_leaf's offset from the library's base, from a load closed again. */
TC_FN static int leaf_offset(void)
{
	TC_ENTER(FN_leaf_offset);
	void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	void *leaf = h ? dlsym(h, "dlw_leaf") : NULL;
	Dl_info di;
	if (!leaf || !dladdr(leaf, &di) || !di.dli_fbase) {
		fprintf(stderr, "cannot find dlw_leaf in %s\n", lib_path);
		return 1;
	}
	leaf_off = (uintptr_t)leaf - (uintptr_t)di.dli_fbase;
	return dlclose(h) != 0;
}

/* Two pipes at fds 60..63 (see the top); fails rather than take an fd
 * something else holds. */
static int fixed_pipes(void)
{
	int p[2][2];
	for (int fd = 60; fd <= 63; fd++)
		if (fcntl(fd, F_GETFD) != -1) {
			fprintf(stderr, "fd %d is taken\n", fd);
			return 1;
		}
	if (pipe(p[0]) || pipe(p[1]))
		return 1;
	for (int i = 0; i < 4; i++) {
		if (dup2(p[i / 2][i % 2], 60 + i) != 60 + i)
			return 1;
		close(p[i / 2][i % 2]);
	}
	return 0;
}

TC_FN static int open_library(void)
{
	TC_ENTER(FN_open_library);
	void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	leaf_fn leaf = h ? (leaf_fn)dlsym(h, "dlw_leaf") : NULL;
	sink = leaf ? leaf(7) : 0;
	return leaf == NULL;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "dlwin", fn_names, FN_COUNT);
	if (argc < 2) {
		fprintf(stderr, "usage: t_dlwin LIBRARY\n");
		return 2;
	}
	lib_path = argv[1];
	if (!realpath(lib_path, lib_real))
		return 1;
	pthread_t t;
	if (leaf_offset() || fixed_pipes() || pthread_create(&t, NULL, waiter, NULL))
		return 1;
	int bad = open_library();
	/* Untraced: the waiter goes on now (traced, the agent let it go). */
	if (write(to_waiter[1], "m", 1) != 1)
		bad = 1;
	pthread_join(t, NULL);
	printf("done %d %d\n", bad, waiter_bad);
	return bad || waiter_bad;
}
