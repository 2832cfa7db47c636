/*
 * ada fs: private, link-proof creation, no-follow reading and the trust
 * checks a root process makes before it writes somewhere (fs.h has the
 * rules). Threads: any; no state. Callers: the agent (agent.json, .syms,
 * plan cache, arena), the recorder (session, manifest, index files),
 * `ada recover`, and the readers (validate, dump, status).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

#define FS_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

static int fs_open_dir_at(int dirfd, const char *name, int *out);

int ada_fs_open_dir(int dirfd, const char *name, int *out)
{
	int tmp = -1, err = ada_fs_root_resolve(&dirfd, &name, &tmp);
	if (!err)
		err = fs_open_dir_at(dirfd, name, out);
	if (tmp >= 0)
		close(tmp);
	return err;
}

static int fs_open_dir_at(int dirfd, const char *name, int *out)
{
	int fd = openat(dirfd, name, FS_DIR_FLAGS);
	if (fd < 0) {
		int err = -errno;
		struct stat st;
		/* O_NOFOLLOW|O_DIRECTORY on a link reports ENOTDIR: say ELOOP,
		 * which is what the caller must tell the user about. */
		if (err == -ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			err = -ELOOP;
		return err;
	}
	*out = fd;
	return 0;
}

int ada_fs_mkdir(int dirfd, const char *name, unsigned flags, int *out)
{
	bool made = mkdirat(dirfd, name, ADA_FS_DIR_MODE) == 0;
	if (!made && (errno != EEXIST || (flags & ADA_FS_EXCL)))
		return -errno;
	int fd = -1, err = ada_fs_open_dir(dirfd, name, &fd);
	if (err)
		return err;
	struct stat st;
	if (fstat(fd, &st) < 0)
		err = -errno;
	else if (st.st_uid != geteuid())
		err = -EPERM; /* someone else's directory where ours belongs */
	else if (made && (st.st_mode & 07777) != ADA_FS_DIR_MODE && fchmod(fd, ADA_FS_DIR_MODE) < 0)
		err = -errno; /* a umask may have narrowed it; nothing widened it */
	if (err) {
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

int ada_fs_create(int dirfd, const char *name, int flags, int *out)
{
	int fd = openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	                ADA_FS_FILE_MODE);
	if (fd < 0)
		return -errno;
	/* fchmod only when a umask (or a default ACL) narrowed the mode: on
	 * ext4 it is a journalled inode update, paid for every thread's
	 * index.atf (issue 32); fstat reads the inode. */
	struct stat st;
	if ((fstat(fd, &st) < 0 || (st.st_mode & 07777) != ADA_FS_FILE_MODE) &&
	    fchmod(fd, ADA_FS_FILE_MODE) < 0) {
		int err = -errno;
		unlinkat(dirfd, name, 0);
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

/* A forked child's arena gets its temporary name here: beside the rest of
 * the child's set-up in the agent's text (ring.h, ADA_FORK_PATH). */
#define FS_FORK_PATH __attribute__((section(".text.hot.ada_fork")))

/* 64 unpredictable bits: the kernel's pool, or -- should getrandom be
 * unavailable (old kernel, seccomp) -- a mix of clocks, pid and a counter.
 * O_EXCL keeps the fallback safe; it only makes a name easier to guess. */
FS_FORK_PATH static uint64_t fs_random64(void)
{
	uint64_t v;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	static _Atomic uint64_t counter;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ ((uint64_t)getpid() << 17) ^
	    (uint64_t)(uintptr_t)&v ^ ++counter;
	v ^= v >> 33; /* splitmix64 finaliser */
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	return v;
}

/* name ".tmp." and 16 hex digits, by hand: no snprintf, whose code,
 * tables and stack a forked child would fault in for this one name. */
FS_FORK_PATH int ada_fs_tmp_name(const char *name, char *tmp, size_t cap)
{
	static const char mid[] = ".tmp.";
	size_t n = strlen(name);
	if (n + sizeof(mid) - 1 + 16 >= cap)
		return -ENAMETOOLONG;
	memcpy(tmp, name, n);
	memcpy(tmp + n, mid, sizeof(mid) - 1);
	n += sizeof(mid) - 1;
	uint64_t v = fs_random64();
	for (int i = 15; i >= 0; i--, v >>= 4) {
		unsigned d = (unsigned)(v & 15);
		tmp[n + (size_t)i] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
	}
	tmp[n + 16] = '\0';
	return 0;
}

int ada_fs_create_tmp(int dirfd, const char *name, int flags, char *tmp, int *out)
{
	int err = -EEXIST;
	for (int i = 0; i < 16 && err == -EEXIST; i++) {
		err = ada_fs_tmp_name(name, tmp, ADA_FS_TMP_NAME_MAX);
		if (!err)
			err = ada_fs_create(dirfd, tmp, flags, out);
	}
	return err;
}

int ada_fs_commit(int dirfd, const char *tmp, const char *name)
{
	if (renameat(dirfd, tmp, dirfd, name) == 0)
		return 0;
	int err = -errno;
	unlinkat(dirfd, tmp, 0);
	return err;
}

int ada_fs_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int ada_fs_replace(int dirfd, const char *name, const void *buf, size_t len, bool sync)
{
	char tmp[ADA_FS_TMP_NAME_MAX];
	int fd = -1, err = ada_fs_create_tmp(dirfd, name, O_WRONLY, tmp, &fd);
	if (err)
		return err;
	err = ada_fs_write_all(fd, buf, len);
	if (!err && sync && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (err) {
		unlinkat(dirfd, tmp, 0);
		return err;
	}
	return ada_fs_commit(dirfd, tmp, name);
}

static int fs_open_file_at(int dirfd, const char *name, int flags, int *out);

int ada_fs_open_file(int dirfd, const char *name, int flags, int *out)
{
	int tmp = -1, err = ada_fs_root_resolve(&dirfd, &name, &tmp);
	if (!err)
		err = fs_open_file_at(dirfd, name, flags, out);
	if (tmp >= 0)
		close(tmp);
	return err;
}

static int fs_open_file_at(int dirfd, const char *name, int flags, int *out)
{
	/* O_NONBLOCK: a FIFO planted under the name must not hang a reader. */
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	struct stat st;
	int err = 0;
	if (fstat(fd, &st) < 0)
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

DIR *ada_fs_opendir(int dirfd, const char *name)
{
	int fd = -1, err = ada_fs_open_dir(dirfd, name, &fd);
	if (err) {
		errno = -err;
		return NULL;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		err = errno;
		close(fd);
		errno = err;
	}
	return d;
}

void ada_fs_dirents_init(struct ada_fs_dirents *d, int fd)
{
	d->fd = fd;
	d->err = 0;
	d->len = d->off = 0;
}

const struct dirent64 *ada_fs_dirents_next(struct ada_fs_dirents *d)
{
	if (d->off >= d->len) {
		ssize_t n = getdents64(d->fd, d->buf, sizeof(d->buf));
		if (n <= 0) {
			d->err = n < 0 ? -errno : 0;
			d->len = d->off = 0;
			return NULL;
		}
		d->len = n;
		d->off = 0;
	}
	const struct dirent64 *de = (const struct dirent64 *)(d->buf + d->off);
	/* The kernel's records; a length that would not move on or would run
	 * past what it returned ends the listing as an error, not a loop. */
	if (de->d_reclen == 0 || d->off + de->d_reclen > d->len) {
		d->err = -EIO;
		d->len = d->off = 0;
		return NULL;
	}
	d->off += de->d_reclen;
	return de;
}

enum ada_fs_kind ada_fs_entry_kind(int dirfd, const struct dirent *de)
{
	if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
		return ADA_FS_OTHER;
	unsigned char t = de->d_type;
	if (t == DT_UNKNOWN) {
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return ADA_FS_OTHER;
		t = S_ISREG(st.st_mode)   ? DT_REG
		    : S_ISDIR(st.st_mode) ? DT_DIR
		    : S_ISLNK(st.st_mode) ? DT_LNK
		                          : DT_UNKNOWN;
	}
	switch (t) {
	case DT_REG:
		return ADA_FS_REG;
	case DT_DIR:
		return ADA_FS_DIR;
	case DT_LNK:
		return ADA_FS_LINK;
	default:
		return ADA_FS_OTHER;
	}
}

/* ---- trust ---- */

static bool fs_stat_trusted(const struct stat *st, uid_t uid)
{
	if (st->st_uid != 0 && st->st_uid != uid)
		return false;
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
		return true;
	/* A sticky directory of root's: others may add names but cannot
	 * remove, rename or replace ours. */
	return S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) && st->st_uid == 0;
}

int ada_fs_dir_trusted(int fd, uid_t uid)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	return fs_stat_trusted(&st, uid) ? 0 : -EPERM;
}

/* The walk of ada_fs_place_trusted(): where (for the message) and the
 * descriptor of the directory reached so far. */
struct fs_walk {
	char where[PATH_MAX];
	int fd;
	int links;
};

static int fs_walk_root(struct fs_walk *w)
{
	if (w->fd >= 0)
		close(w->fd);
	snprintf(w->where, sizeof(w->where), "/");
	w->fd = open("/", FS_DIR_FLAGS);
	return w->fd < 0 ? -errno : 0;
}

static void fs_walk_name(struct fs_walk *w, const char *c)
{
	size_t n = strlen(w->where);
	snprintf(w->where + n, sizeof(w->where) - n, "%s%s", n > 1 ? "/" : "", c);
}

/* Follows the link c (already checked) by prepending its target to rest. */
static int fs_walk_link(struct fs_walk *w, const char *c, char *rest, size_t cap)
{
	char target[PATH_MAX], next[PATH_MAX];
	if (++w->links > 40)
		return -ELOOP;
	ssize_t n = readlinkat(w->fd, c, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	if (snprintf(next, sizeof(next), "%s/%s", target, rest) >= (int)sizeof(next))
		return -ENAMETOOLONG;
	snprintf(rest, cap, "%s", next);
	return target[0] == '/' ? fs_walk_root(w) : 0;
}

/* One component c of the walk: 2 when c does not exist (and is not to
 * be created). */
static int fs_walk_step(struct fs_walk *w, const char *c, char *rest, size_t cap, uid_t uid,
                        unsigned flags)
{
	struct stat st;
	int fd = -1, err;
	if (fstatat(w->fd, c, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return -errno;
		if (!(flags & ADA_FS_WALK_CREATE))
			return 2;
		err = ada_fs_mkdir(w->fd, c, 0, &fd);
	} else if (S_ISLNK(st.st_mode)) {
		if (st.st_uid != 0 && st.st_uid != uid) {
			fs_walk_name(w, c);
			return -EPERM;
		}
		return fs_walk_link(w, c, rest, cap);
	} else {
		err = ada_fs_open_dir(w->fd, c, &fd);
	}
	if (err)
		return err;
	close(w->fd);
	w->fd = fd;
	fs_walk_name(w, c);
	return ada_fs_dir_trusted(fd, uid);
}

/* Takes the next component of rest into c (NAME_MAX + 1 bytes): 0, 1 at
 * the end, -ENAMETOOLONG. */
static int fs_walk_next(char *rest, char *c)
{
	char *s = rest;
	while (*s == '/')
		s++;
	if (!*s)
		return 1;
	size_t n = strcspn(s, "/");
	if (n > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(c, s, n);
	c[n] = '\0';
	memmove(rest, s + n, strlen(s + n) + 1);
	return 0;
}

int ada_fs_walk(const char *path, uid_t uid, unsigned flags, int *out, char *why, size_t cap)
{
	char rest[PATH_MAX], cwd[PATH_MAX], c[NAME_MAX + 1];
	struct fs_walk w = {.fd = -1};
	if (path[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return -errno;
	if (snprintf(rest, sizeof(rest), "%s/%s", path[0] == '/' ? "" : cwd, path) >=
	    (int)sizeof(rest))
		return -ENAMETOOLONG;
	int err = fs_walk_root(&w);
	if (!err)
		err = ada_fs_dir_trusted(w.fd, uid);
	while (!err && !(err = fs_walk_next(rest, c)))
		if (strcmp(c, "."))
			err = fs_walk_step(&w, c, rest, sizeof(rest), uid, flags);
	if (err == -EPERM && why)
		snprintf(why, cap, "%s", w.where);
	if (err == 1 && out) {
		*out = w.fd; /* the whole path was walked */
		w.fd = -1;
	} else if (out) {
		*out = -1;
	}
	if (w.fd >= 0)
		close(w.fd);
	return err > 0 ? 0 : err;
}

/* The directory the last walk without flags reached while the memo is
 * on (ada_fs_memo_begin), and its descriptor, kept open. */
static struct {
	bool on;
	int fd;
	char dir[PATH_MAX];
} fs_memo = {.fd = -1};

void ada_fs_memo_begin(void)
{
	fs_memo.on = true;
}

void ada_fs_memo_end(void)
{
	if (fs_memo.fd >= 0)
		close(fs_memo.fd);
	fs_memo.fd = -1;
	fs_memo.dir[0] = '\0';
	fs_memo.on = false;
}

/* The memo's descriptor of directory d duplicated into *dfd: 1; 0 when
 * it holds another one (or none); -errno. */
static int fs_memo_get(const char *d, int *dfd)
{
	if (!fs_memo.on || fs_memo.fd < 0 || strcmp(d, fs_memo.dir))
		return 0;
	*dfd = fcntl(fs_memo.fd, F_DUPFD_CLOEXEC, 0);
	return *dfd >= 0 ? 1 : -errno;
}

/* Keeps a duplicate of dfd, the walked directory d, in the memo. */
static void fs_memo_put(const char *d, int dfd)
{
	if (!fs_memo.on || strlen(d) >= sizeof(fs_memo.dir))
		return;
	int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (fs_memo.fd >= 0)
		close(fs_memo.fd);
	fs_memo.fd = fd;
	snprintf(fs_memo.dir, sizeof(fs_memo.dir), "%s", d);
}

int ada_fs_walk_parent(const char *path, unsigned flags, int *dfd, const char **base)
{
	char d[PATH_MAX];
	const char *slash = strrchr(path, '/');
	*dfd = -1;
	if (!slash || (size_t)(slash - path) >= sizeof(d))
		return -EINVAL;
	memcpy(d, path, (size_t)(slash - path));
	d[slash - path] = '\0';
	*base = slash + 1;
	int got = flags ? 0 : fs_memo_get(d[0] ? d : "/", dfd);
	if (got)
		return got < 0 ? got : 0;
	int err = ada_fs_walk(d[0] ? d : "/", geteuid(), flags, dfd, NULL, 0);
	if (!err && *dfd >= 0 && !flags)
		fs_memo_put(d[0] ? d : "/", *dfd);
	return err ? err : *dfd < 0 ? -ENOENT : 0;
}

int ada_fs_open_private(const char *path, int *out, struct stat *st)
{
	const char *base;
	struct stat sb;
	int dfd, fd = -1, err = ada_fs_walk_parent(path, 0, &dfd, &base);
	if (!err)
		err = ada_fs_open_file(dfd, base, O_RDONLY, &fd); /* never a link */
	if (dfd >= 0)
		close(dfd);
	if (!err && fstat(fd, &sb))
		err = -errno;
	/* A file someone else made or may change is not ours to trust,
	 * whatever its contents say. */
	if (!err && (sb.st_uid != geteuid() || (sb.st_mode & (S_IWGRP | S_IWOTH))))
		err = -EPERM;
	if (err && fd >= 0)
		close(fd);
	*out = err ? -1 : fd;
	if (!err && st)
		*st = sb;
	return err;
}

/* Reads len bytes of fd into buf: -errno, -EBADMSG when the file ends
 * first (it shrank since its fstat). */
static int fs_read_exact(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = read(fd, buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EBADMSG;
		got += (size_t)r;
	}
	return 0;
}

/* Buffers at least this large are populated before the read fills them. */
#define FS_POPULATE_MIN (64u << 10)

/* The whole pages of [p, p + len), which a read is about to fill, made
 * present in one call instead of by a page fault each as the copy
 * reaches them (a plan cache or symbol-table file of hundreds of KiB,
 * read by every process at start-up). Best effort: a kernel without
 * MADV_POPULATE_WRITE faults them in as before. */
void ada_fs_populate(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1),
	          hi = ((uintptr_t)p + len) & ~(page - 1);
	if (len >= FS_POPULATE_MIN && page > 0 && hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
	(void)p, (void)len;
#endif
}

int ada_fs_open_private_sized(const char *path, uint64_t min, uint64_t max, int *fd, size_t *size)
{
	struct stat sb;
	int err = ada_fs_open_private(path, fd, &sb);
	if (err)
		return err;
	/* Only a file of a size the caller can use is read, and no more. */
	if ((uint64_t)sb.st_size < min || (uint64_t)sb.st_size > max || sb.st_size < 0)
		err = -EBADMSG;
	*size = err ? 0 : (size_t)sb.st_size;
	return err;
}

int ada_fs_read_private(const char *path, uint64_t min, uint64_t max, void *buf, void **out,
                        size_t *len)
{
	int fd;
	size_t want;
	int err = ada_fs_open_private_sized(path, min, max, &fd, &want);
	if (err && fd < 0)
		return err;
	uint8_t *dst = buf;
	if (!err && !dst && !(dst = malloc(want ? want : 1)))
		err = -ENOMEM;
	else if (!err && !buf)
		ada_fs_populate(dst, want);
	if (!err)
		err = fs_read_exact(fd, dst, want);
	close(fd);
	if (!buf && err)
		free(dst);
	else if (!buf)
		*out = dst;
	*len = err ? 0 : want;
	return err;
}

static bool fs_is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* $HOME/.cache/ada/<sub> when $HOME/.cache exists: ada makes none in a
 * HOME that has none (the traced program's HOME is often the user's). */
static int fs_home_cache_dir(const char *sub, char *out, size_t cap)
{
	const char *home = secure_getenv("HOME");
	if (!home || home[0] != '/')
		return -ENOENT;
	int n = snprintf(out, cap, "%s/.cache", home);
	if (n <= 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	if (!fs_is_dir(out))
		return -ENOENT;
	n = snprintf(out, cap, "%s/.cache/ada/%s", home, sub);
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int ada_fs_cache_dir(const char *sub, char *out, size_t cap)
{
	const char *xdg = secure_getenv("XDG_CACHE_HOME");
	if (xdg && xdg[0] == '/') {
		int n = snprintf(out, cap, "%s/ada/%s", xdg, sub);
		return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
	}
	int err = fs_home_cache_dir(sub, out, cap);
	/* root, whose HOME has no .cache (a fresh machine, a container): the
	 * system's cache directory, so that every exec is not analysed
	 * afresh, which for a large image such as cc1 is most of its start-up. */
	if (err != -ENOENT || geteuid() != 0 || !fs_is_dir(ADA_FS_SYSTEM_CACHE))
		return err;
	int n = snprintf(out, cap, "%s/ada/%s", ADA_FS_SYSTEM_CACHE, sub);
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}
