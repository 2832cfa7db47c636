/*
 * Test target: dlopen() of a test library (t_dlib, argv[1]) after start,
 * calls into it (and from it back into the program), dlclose(), dlopen()
 * again and calls again — the second image must be hooked afresh and the
 * first leave nothing behind. Each time the library is opened twice (the
 * second dlopen only takes a reference): nothing may be hooked twice.
 * Single-threaded; prints the results.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "tcount.h"

// clang-format off
#define FUNCS(X)                                                                                   \
	X(main)                                                                                    \
	X(use_library) X(exe_callback) X(add_library_counts) X(dlib_entry) X(dlib_mid)             \
	    X(dlib_leaf) X(dlib_callback_twice) X(dlib_counts) X(dlib_ctor_work) X(dlib_init)
// clang-format on
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

typedef unsigned long (*entry_fn)(unsigned long);
typedef long (*cb_twice_fn)(long (*)(long), long);
typedef int (*counts_fn)(const char *const **, const unsigned long **);

TC_FN static long exe_callback(long v)
{
	TC_ENTER(FN_exe_callback);
	return v * 3 + 1;
}

/* Adds the library's own counts of this load to the program's table. */
TC_FN static void add_library_counts(counts_fn counts)
{
	TC_ENTER(FN_add_library_counts);
	const char *const *names;
	const unsigned long *calls;
	int n = counts(&names, &calls);
	for (int i = 0; i < n; i++)
		for (int fn = 0; fn < FN_COUNT; fn++)
			if (!strcmp(names[i], fn_names[fn]))
				TC_ADD(fn, calls[i]);
}

TC_FN static int use_library(const char *path, unsigned long n)
{
	TC_ENTER(FN_use_library);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	void *again = dlopen(path, RTLD_NOW | RTLD_LOCAL); /* same handle, one more ref */
	entry_fn entry = (entry_fn)dlsym(h, "dlib_entry");
	cb_twice_fn twice = (cb_twice_fn)dlsym(h, "dlib_callback_twice");
	counts_fn counts = (counts_fn)dlsym(h, "dlib_counts");
	if (!entry || !twice || !counts) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	printf("entry(%lu) = %lu\n", n, entry(n));
	printf("twice = %ld\n", twice(exe_callback, (long)n));
	add_library_counts(counts);
	if (again != h || dlclose(again) != 0)
		return 1;
	return dlclose(h) != 0;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "dlopen", fn_names, FN_COUNT);
	if (argc < 2) {
		fprintf(stderr, "usage: t_dlopen LIBRARY\n");
		return 2;
	}
	if (use_library(argv[1], 50) || use_library(argv[1], 70))
		return 1;
	return 0;
}
