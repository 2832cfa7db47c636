/*
 * ada fs: private, link-proof files -- the one place ada creates, opens,
 * renames and walks files (DESIGN.md decision 9).
 *
 * The rules every caller gets by using these functions:
 *   - Everything is relative to a directory descriptor opened once
 *     (ada_fs_open_dir / ada_fs_mkdir: O_DIRECTORY|O_NOFOLLOW), so a path
 *     swapped for a symlink after the directory was opened changes nothing.
 *   - A file is created with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC: a planted
 *     file gives -EEXIST, a planted symlink -EEXIST or -ELOOP; nothing is
 *     ever written through a link.
 *   - Directories are 0700 and files 0600 whatever the umask (fchmod after
 *     creation when the mode is not that already): argv, symbol names and register contents are the
 * user's.
 *   - Temporary names are unpredictable (<name>.tmp.<16 random hex digits>)
 *     and are renamed into place with renameat() on the same descriptor.
 *   - Readers open with O_NOFOLLOW and classify entries with d_type /
 *     fstatat(AT_SYMLINK_NOFOLLOW): a walk never follows a link, so it
 *     never visits a directory twice and a loop of links ends at once.
 *   - Below a session root (the directory a command was named:
 *     ada_fs_root_add), a path opened by name follows no link in any
 *     component, not the last only (root.c).
 *
 * This module is the ground: it depends on libc only, so the agent
 * (src/hook, src/ring's producer) and the recorder (src/atf, src/clock,
 * src/wal, src/recorder, tools) share it. Threads: every function is reentrant; none prints.
 * Errors are 0 / -errno.
 */
#ifndef ADA_FS_H
#define ADA_FS_H

#include <dirent.h>
#include <fcntl.h> /* AT_FDCWD, O_* for callers */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define ADA_FS_DIR_MODE 0700
#define ADA_FS_FILE_MODE 0600
/* Room for "<name>.tmp.<16 hex>" with a name of up to 200 bytes. */
#define ADA_FS_TMP_NAME_MAX 224
/* Readers stop a directory listing after this many entries (a session's
 * directories hold a few hundred; a crafted one cannot stall a reader). */
#define ADA_FS_WALK_MAX_ENTRIES 100000u

/* Opens the directory name under dirfd (AT_FDCWD or a descriptor; name may
 * be a path whose last component is not followed) with
 * O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC into *out.
 * -ELOOP when name is a symlink, -ENOTDIR, other -errno of openat. */
int ada_fs_open_dir(int dirfd, const char *name, int *out);

#define ADA_FS_EXCL 1u /* ada_fs_mkdir: the directory must not exist yet */

/* Creates the directory name (one component) under dirfd with mode 0700
 * and opens it as ada_fs_open_dir() does. Without ADA_FS_EXCL an existing
 * directory is accepted when it is a real directory owned by the
 * effective user (then its mode is left alone). -EEXIST (ADA_FS_EXCL),
 * -ELOOP (a symlink), -EPERM (owned by someone else), other -errno. */
int ada_fs_mkdir(int dirfd, const char *name, unsigned flags, int *out);

/* Creates the regular file name under dirfd: openat(O_CREAT|O_EXCL|
 * O_NOFOLLOW|O_CLOEXEC | flags) with mode 0600 (fchmod when a umask or a
 * default ACL narrowed it; neither can widen it). flags: O_WRONLY or O_RDWR, plus
 * O_APPEND etc. -EEXIST when anything (a file or a link) has the name. */
int ada_fs_create(int dirfd, const char *name, int flags, int *out);

/* Creates a temporary file "<name>.tmp.<16 random hex>" under dirfd as
 * ada_fs_create() does, retrying on a collision; its name goes to tmp
 * (ADA_FS_TMP_NAME_MAX bytes). -ENAMETOOLONG, other ada_fs_create() errors. */
int ada_fs_create_tmp(int dirfd, const char *name, int flags, char *tmp, int *out);

/* Writes "<name>.tmp.<16 random hex>" to tmp (cap bytes) for a caller
 * that must create the file itself (the arena: ada_arena_create), always
 * with O_EXCL. 0 or -ENAMETOOLONG. */
int ada_fs_tmp_name(const char *name, char *tmp, size_t cap);

/* renameat(dirfd, tmp, dirfd, name): publishes a finished temporary file.
 * On failure tmp is removed. 0 or -errno. */
int ada_fs_commit(int dirfd, const char *tmp, const char *name);

/* write() all of buf, retrying on EINTR and short writes. -EIO for a
 * write that returns 0. */
int ada_fs_write_all(int fd, const void *buf, size_t len);

/* Replaces name under dirfd atomically with buf: temporary file, write,
 * fsync when sync, rename. Readers see the old file or the whole new one. */
int ada_fs_replace(int dirfd, const char *name, const void *buf, size_t len, bool sync);

/* Opens the existing regular file name under dirfd for reading (flags
 * O_RDONLY) or patching (O_RDWR), never following a link and never
 * blocking on a FIFO. -ELOOP (a symlink), -EINVAL (not a regular file). */
int ada_fs_open_file(int dirfd, const char *name, int flags, int *out);

/* A directory stream over name under dirfd (opened as ada_fs_open_dir()
 * does), or NULL with errno set. closedir() frees it. */
DIR *ada_fs_opendir(int dirfd, const char *name);

/* The entries of the open directory fd, read with getdents64 into a
 * buffer the caller holds (on the stack: no DIR and its 32 KiB from the
 * heap, no path walk; for scans that run once per process):
 *     struct ada_fs_dirents d;
 *     ada_fs_dirents_init(&d, fd);
 *     for (const struct dirent64 *de; (de = ada_fs_dirents_next(&d));) ...
 * "." and ".." come too. At NULL, d.err is 0 when the whole directory was
 * read, else -errno. The caller closes fd. */
struct ada_fs_dirents {
	int fd, err;
	long len, off;
	char buf[8192] __attribute__((aligned(8)));
};
void ada_fs_dirents_init(struct ada_fs_dirents *d, int fd);
const struct dirent64 *ada_fs_dirents_next(struct ada_fs_dirents *d);

enum ada_fs_kind { ADA_FS_OTHER, ADA_FS_REG, ADA_FS_DIR, ADA_FS_LINK };
/* What de (read from the stream over dirfd) is, without following it:
 * d_type, or fstatat(AT_SYMLINK_NOFOLLOW) when the file system leaves
 * d_type unknown. "." and ".." are ADA_FS_OTHER. */
enum ada_fs_kind ada_fs_entry_kind(int dirfd, const struct dirent *de);

/* ---- places another user could have planted a link in ---- */

/* 0 when the directory fd is one only uid (or root) can change: owned by
 * root or uid, and not writable by group or others -- unless it is a
 * sticky directory owned by root (/tmp, /dev/shm), where others cannot
 * touch what is not theirs. -EPERM otherwise; -errno of fstat. */
int ada_fs_dir_trusted(int fd, uid_t uid);

#define ADA_FS_WALK_CREATE 1u /* ada_fs_walk: create what is missing (0700) */

/* Where root's cache is when its HOME has no .cache (ada_fs_cache_dir). */
#define ADA_FS_SYSTEM_CACHE "/var/cache"

/* ada's per-user cache directory sub (plans: the agent's plan cache; tsc):
 * $XDG_CACHE_HOME/ada/<sub>, else $HOME/.cache/ada/<sub> when $HOME/.cache
 * exists (ada creates no .cache in a HOME that has none), else, for root
 * only, /var/cache/ada/<sub>; absolute values
 * only (relative ones are invalid, XDG spec), through secure_getenv (a
 * set-uid program must not cache where its caller says). Only the ada
 * command calls it: the agent is given its plan directory (ADA_PLAN_CACHE)
 * and never reads the program's HOME. 0, -ENOENT (neither usable) or
 * -ENAMETOOLONG. */
int ada_fs_cache_dir(const char *sub, char *out, size_t cap);

/* Walks path from / (a relative path from the working directory) one
 * component at a time, trusting nothing it has not checked: every
 * directory on the way must pass ada_fs_dir_trusted(uid), and every
 * symlink must be owned by root or uid (it then sits in a checked
 * directory, so only they could have made it). With ADA_FS_WALK_CREATE the
 * missing directories are created (ada_fs_mkdir) and *out gets the last
 * one, opened; without it the walk stops quietly at the first missing
 * component (0, *out = -1: what is missing will be the caller's own).
 * -EPERM with the offending directory or link in why (cap bytes), -ELOOP
 * after 40 links, other -errno. out and why may be NULL. */
int ada_fs_walk(const char *path, uid_t uid, unsigned flags, int *out, char *why, size_t cap);

/* The directory of path (a file's path; "/" for a file at the root)
 * through ada_fs_walk(geteuid(), flags) into *dfd, opened, and *base to
 * the file's name inside path. -EINVAL (no '/' or too long), -EPERM (a
 * place another user could change), -ENOENT (missing and not created),
 * other -errno; *dfd is -1 on error. */
int ada_fs_walk_parent(const char *path, unsigned flags, int *dfd, const char **base);

/* Between ada_fs_memo_begin() and ada_fs_memo_end(), a walk without flags
 * of the directory ada_fs_walk_parent() last walked without flags is not
 * walked again: the caller gets a duplicate of its descriptor, kept open
 * by the memo (the agent's start-up scan reads each module's plan and
 * symbol-table cache files from one directory: one walk, not one of
 * every component per file). For one thread, while nothing else in the
 * process can close or reuse a descriptor (the agent's constructor,
 * before the program runs); process-wide, off unless begun. end closes
 * the kept descriptor. */
void ada_fs_memo_begin(void);
void ada_fs_memo_end(void);

/* Opens the private cache file at path for reading into *out: its
 * directory through ada_fs_walk_parent, the file never through a link,
 * and only when it is the effective user's and not writable by group or
 * others (-EPERM otherwise: whatever it holds is not ours to trust).
 * *st (may be NULL) gets its fstat. -errno as ada_fs_walk_parent and
 * ada_fs_open_file; *out is -1 on error. */
int ada_fs_open_private(const char *path, int *out, struct stat *st);
/* ada_fs_open_private, and *size the file's size when it lies within
 * [min, max]: -EBADMSG otherwise, with *fd still open (the caller closes
 * it when it is not -1). */
int ada_fs_open_private_sized(const char *path, uint64_t min, uint64_t max, int *fd, size_t *size);

/* Makes the whole pages of [p, p + len) present in one call when len is
 * 64 KiB or more: for a fresh buffer about to be filled whole, instead of
 * a page fault each as the writes reach its pages. Best effort (a kernel
 * without MADV_POPULATE_WRITE faults them in as before). */
void ada_fs_populate(void *p, size_t len);

/* Reads the whole private file at path (ada_fs_open_private's checks)
 * when its size is min..max bytes: into buf, which has room for max
 * bytes, or, buf NULL, into a buffer of its size malloc'd in *out (the
 * caller frees it). *len gets the size. -EBADMSG (a size out of bounds,
 * or the file ended early), -ENOMEM, or ada_fs_open_private's -errno;
 * nothing in *out on error. */
int ada_fs_read_private(const char *path, uint64_t min, uint64_t max, void *buf, void **out,
                        size_t *len);

/* ada_fs_walk() without creating or opening: 0 when a root process may
 * write under path. */
static inline int ada_fs_place_trusted(const char *path, uid_t uid, char *why, size_t cap)
{
	return ada_fs_walk(path, uid, 0, NULL, why, cap);
}

/* ---- session roots: no link followed below the directory a command was named ---- */

/* Roots a process may register (a command names one or two). */
#define ADA_FS_ROOTS_MAX 8
#define ADA_FS_BENEATH_WALK 1u /* ada_fs_open_beneath_dir: the walk, not openat2 */

/* Registers path, a directory the user named on the command line: opened
 * once here, following its own links (the user's choice), and kept. From
 * then on every (AT_FDCWD, path) this module opens whose path begins with
 * it (ada_fs_open_file, ada_fs_open_dir, ada_fs_opendir, ada_fs_open_path,
 * ada_fs_lstat_path) is resolved below that descriptor without following
 * any link on the way: a symlinked thread_K, or one in the middle, gives
 * -ELOOP. A path with a ".." component, or under no root, is opened as
 * before (its last component not followed). For the command's thread,
 * before it starts others. 1 (registered now), 0 (it was already),
 * -ENOSPC (ADA_FS_ROOTS_MAX reached), other -errno of open. */
int ada_fs_root_add(const char *path);
/* Forgets the root path (a no-op when it is none): a caller that
 * registered it for one piece of work (1 from ada_fs_root_add). */
void ada_fs_root_remove(const char *path);
/* Forgets every root, closing their descriptors (tests). */
void ada_fs_root_clear(void);

/* When *dirfd is AT_FDCWD and *name lies under a root, replaces them with
 * the directory above the last component, opened below the root without
 * following a link (*tmpfd: that descriptor, which the caller closes,
 * or -1 when none was opened), and the last component. Otherwise leaves
 * them. 0, -ELOOP (a link on the way), other -errno. */
int ada_fs_root_resolve(int *dirfd, const char **name, int *tmpfd);

/* Opens the directory rel under rootfd (O_PATH) without following any
 * link or leaving rootfd: openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS),
 * else (no openat2, or how has ADA_FS_BENEATH_WALK) one O_NOFOLLOW
 * openat a component. 0, -ELOOP (a link), -EXDEV (openat2: rel leaves
 * rootfd), other -errno. */
int ada_fs_open_beneath_dir(int rootfd, const char *rel, unsigned how, int *out);

/* openat(AT_FDCWD, path, flags | O_NOFOLLOW | O_CLOEXEC, mode) after
 * ada_fs_root_resolve(): for readers that check what they opened
 * themselves, and for writers that create under a session. 0 or -errno. */
int ada_fs_open_path(const char *path, int flags, mode_t mode, int *out);
/* fstatat(AT_SYMLINK_NOFOLLOW) of path after ada_fs_root_resolve(). */
int ada_fs_lstat_path(const char *path, struct stat *st);
/* unlinkat(path's file) after ada_fs_root_resolve(): a link in the middle
 * is never followed to remove another directory's file. 0 or -errno. */
int ada_fs_unlink_path(const char *path);

/* ---- debug files: where a stripped image's symbols may be ---- */

/* Longest GNU build-id ada looks up, in bytes (SHA-1 gives 20). */
#define ADA_FS_BUILD_ID_MAX 64
/* Places a .gnu_debuglink name is looked for (ada_fs_debuglink_path). */
#define ADA_FS_DEBUGLINK_PLACES 3

/* The debug file of the build-id hex (lowercase hex, 2 to
 * ADA_FS_BUILD_ID_MAX bytes) under root: <root>/.build-id/xx/yyyy.debug.
 * 0, -ENOENT (hex is no build-id) or -ENAMETOOLONG. */
int ada_fs_debug_build_id_path(const char *root, const char *hex, char *out, size_t cap);

/* The file name in the size bytes of a .gnu_debuglink section (the name,
 * NUL, padding, a CRC the callers leave to the build-id check) into name;
 * false when there is none, it is unterminated or longer than cap - 1, or
 * it holds a '/' (a name, never a path). */
bool ada_fs_debuglink_name(const void *buf, size_t size, char *name, size_t cap);

/* Place i (0 .. ADA_FS_DEBUGLINK_PLACES - 1) of the debuglink name of
 * the image at path image: next to it, in its .debug/, in <root>/<its
 * directory>. 0; -ENOENT when image has no '/', i is past the last place
 * or the place is the image itself; -ENAMETOOLONG. */
int ada_fs_debuglink_path(const char *root, const char *image, const char *name, unsigned i,
                          char *out, size_t cap);

#endif
