/*
 * A test shim (LD_PRELOAD) for tests/integration/session_links_test.sh: a
 * session's owner swapping a directory or file for a symbolic link while
 * a root command reads it, made deterministic. The first time the command
 * opens a directory or file named ADA_TEST_SWAP_ON (its last component), right
 * after that open, ADA_TEST_SWAP_PATH is renamed away (to
 * ADA_TEST_SWAP_PATH.moved) and a link to ADA_TEST_SWAP_TO put in its
 * place: after the command listed what it will read, before it reads it.
 * With ADA_TEST_SWAP_ON naming a file (manifest.json), the first open of
 * a file of that name does it.
 * Threads: the command's; one swap per process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int shim_done;

static void shim_maybe_swap(const char *path)
{
	const char *on = getenv("ADA_TEST_SWAP_ON"), *p = getenv("ADA_TEST_SWAP_PATH"),
	           *to = getenv("ADA_TEST_SWAP_TO");
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (!on || !p || !to || strcmp(base, on) || atomic_exchange(&shim_done, 1))
		return;
	char moved[4096];
	snprintf(moved, sizeof(moved), "%s.moved", p);
	if (rename(p, moved) != 0 || symlink(to, p) != 0)
		perror("session_links_shim: swap");
}

#define SHIM_OPENAT(name)                                                                          \
	int name(int dirfd, const char *path, int flags, ...)                                      \
	{                                                                                          \
		static int (*real)(int, const char *, int, ...);                                   \
		va_list ap;                                                                        \
		va_start(ap, flags);                                                               \
		mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;            \
		va_end(ap);                                                                        \
		if (!real)                                                                         \
			real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, #name);      \
		int fd = real(dirfd, path, flags, mode);                                           \
		if (fd >= 0)                                                                       \
			shim_maybe_swap(path);                                                     \
		return fd;                                                                         \
	}

SHIM_OPENAT(openat)
SHIM_OPENAT(openat64)

#define SHIM_OPEN(name)                                                                            \
	int name(const char *path, int flags, ...)                                                 \
	{                                                                                          \
		va_list ap;                                                                        \
		va_start(ap, flags);                                                               \
		mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;            \
		va_end(ap);                                                                        \
		return openat(AT_FDCWD, path, flags, mode);                                        \
	}

SHIM_OPEN(open)
SHIM_OPEN(open64)
