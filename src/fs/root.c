/*
 * Session roots: the directories a reading or recovering command was
 * named, below which nothing is followed through a link -- not the last
 * component of a path only, every component below the root.
 *
 * The command registers the path the user gave (ada_fs_root_add): it is
 * opened once, its own links followed (they are the user's choice), and
 * the descriptor kept. A later path that begins with that string is then
 * opened relative to the descriptor: openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS) where the kernel has it (5.6), else a walk of one
 * openat(O_PATH|O_DIRECTORY|O_NOFOLLOW) a component. A thread_K or pid_N
 * swapped for a link, or a link anywhere in between, gives -ELOOP; no
 * file outside the root is ever reached, read or written.
 *
 * Paths that begin with no root (the recorder's own, the agent's: nothing
 * is registered there) are opened as before, the last component not
 * followed. A path with a ".." component is not taken as under a root.
 *
 * Threads: roots are added by the command's thread before it starts any
 * other (the parallel readers); after that the table is only read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs.h"

#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

struct fs_root {
	char *path;
	size_t len;
	int fd;
};

static struct fs_root fs_roots[ADA_FS_ROOTS_MAX];
static unsigned fs_nroots;

int ada_fs_root_add(const char *path)
{
	for (unsigned i = 0; i < fs_nroots; i++)
		if (!strcmp(fs_roots[i].path, path))
			return 0;
	if (fs_nroots == ADA_FS_ROOTS_MAX)
		return -ENOSPC;
	/* The user's own path: its links are theirs, followed once here. */
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char *p = strdup(path);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	fs_roots[fs_nroots++] = (struct fs_root){.path = p, .len = strlen(p), .fd = fd};
	return 1;
}

void ada_fs_root_remove(const char *path)
{
	for (unsigned i = 0; i < fs_nroots; i++) {
		if (strcmp(fs_roots[i].path, path))
			continue;
		close(fs_roots[i].fd);
		free(fs_roots[i].path);
		fs_roots[i] = fs_roots[--fs_nroots];
		return;
	}
}

void ada_fs_root_clear(void)
{
	for (unsigned i = 0; i < fs_nroots; i++) {
		close(fs_roots[i].fd);
		free(fs_roots[i].path);
	}
	fs_nroots = 0;
}

/* Whether rel has a ".." component. */
static bool root_has_dotdot(const char *rel)
{
	for (const char *c = rel; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return true;
		c += n;
		c += strspn(c, "/");
	}
	return false;
}

/* The root path begins with, and *rel the rest of path after it (its
 * leading slashes skipped; "" for the root itself); NULL when none. The
 * longest match wins (a root registered inside another). */
static const struct fs_root *root_find(const char *path, const char **rel)
{
	const struct fs_root *best = NULL;

	for (unsigned i = 0; i < fs_nroots; i++) {
		const struct fs_root *r = &fs_roots[i];
		if (strncmp(path, r->path, r->len))
			continue;
		char next = path[r->len];
		bool at_slash = r->len > 0 && r->path[r->len - 1] == '/';
		if ((next == '/' || next == '\0' || at_slash) && (!best || r->len > best->len))
			best = r;
	}
	if (!best)
		return NULL;
	*rel = path + best->len + strspn(path + best->len, "/");
	return root_has_dotdot(*rel) ? NULL : best;
}

/* One component c (n bytes) under fd, a directory, never a link. */
static int root_step(int fd, const char *c, size_t n, int *out)
{
	char name[NAME_MAX + 1];
	struct stat st;

	if (n > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, c, n);
	name[n] = '\0';
	int sub = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0) {
		int err = -errno;
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			err = -ELOOP;
		return err;
	}
	*out = sub;
	return 0;
}

/* The directory rel (components separated by '/', "." skipped) under
 * rootfd, one component at a time: the kernels without openat2. */
static int root_walk(int rootfd, const char *rel, int *out)
{
	int fd = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	for (const char *c = rel + strspn(rel, "/"); *c && !err;) {
		size_t n = strcspn(c, "/");
		int sub = -1;
		if (!(n == 1 && c[0] == '.')) {
			err = root_step(fd, c, n, &sub);
			close(fd);
			fd = sub;
		}
		c += n;
		c += strspn(c, "/");
	}
	if (err)
		return err;
	*out = fd;
	return 0;
}

/* openat2 of the directory rel under rootfd; -ENOSYS when the kernel (or
 * a seccomp filter) has no openat2. */
static int root_openat2(int rootfd, const char *rel, int *out)
{
#ifdef SYS_openat2
	struct open_how how = {
	    .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, rootfd, *rel ? rel : ".", &how, sizeof(how));
	if (fd >= 0) {
		*out = (int)fd;
		return 0;
	}
	/* A seccomp filter that does not know openat2 says EPERM. */
	return errno == EPERM || errno == E2BIG ? -ENOSYS : -errno;
#else
	(void)rootfd;
	(void)rel;
	(void)out;
	return -ENOSYS;
#endif
}

int ada_fs_open_beneath_dir(int rootfd, const char *rel, unsigned how, int *out)
{
	int err = (how & ADA_FS_BENEATH_WALK) ? -ENOSYS : root_openat2(rootfd, rel, out);
	if (err == -ENOSYS)
		err = root_walk(rootfd, rel, out);
	return err;
}

int ada_fs_root_resolve(int *dirfd, const char **name, int *tmpfd)
{
	const char *rel;
	const struct fs_root *r;

	*tmpfd = -1;
	if (*dirfd != AT_FDCWD || fs_nroots == 0 || !(r = root_find(*name, &rel)))
		return 0;
	if (!*rel) {
		*dirfd = r->fd;
		*name = ".";
		return 0;
	}
	/* rel without its trailing slashes: the last component is the name. */
	size_t end = strlen(rel);
	while (end > 0 && rel[end - 1] == '/')
		end--;
	size_t base = end;
	while (base > 0 && rel[base - 1] != '/')
		base--;
	if (base == 0) { /* one component: right under the root */
		*dirfd = r->fd;
		*name = rel;
		return 0;
	}
	char *parent = strndup(rel, base);
	if (!parent)
		return -ENOMEM;
	int err = ada_fs_open_beneath_dir(r->fd, parent, 0, tmpfd);
	free(parent);
	if (err)
		return err;
	*dirfd = *tmpfd;
	*name = rel + base;
	return 0;
}

int ada_fs_open_path(const char *path, int flags, mode_t mode, int *out)
{
	int dirfd = AT_FDCWD, tmp = -1;
	int err = ada_fs_root_resolve(&dirfd, &path, &tmp);
	if (!err) {
		int fd = openat(dirfd, path, flags | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0)
			err = -errno;
		else
			*out = fd;
	}
	if (tmp >= 0)
		close(tmp);
	return err;
}

int ada_fs_lstat_path(const char *path, struct stat *st)
{
	int dirfd = AT_FDCWD, tmp = -1;
	int err = ada_fs_root_resolve(&dirfd, &path, &tmp);
	if (!err && fstatat(dirfd, path, st, AT_SYMLINK_NOFOLLOW) != 0)
		err = -errno;
	if (tmp >= 0)
		close(tmp);
	return err;
}

int ada_fs_unlink_path(const char *path)
{
	int dirfd = AT_FDCWD, tmp = -1;
	int err = ada_fs_root_resolve(&dirfd, &path, &tmp);
	if (!err && unlinkat(dirfd, path, 0) != 0)
		err = -errno;
	if (tmp >= 0)
		close(tmp);
	return err;
}
