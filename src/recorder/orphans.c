/*
 * Arenas whose recorder died (issue 38): the owner record a recorder
 * leaves in its arena directory, and the scan that finds directories
 * whose recorder is gone, recovers each into its session and removes it.
 *
 * Threads: the caller's (the `ada` command, before its own work; the
 * recorder writes the owner record once, before its drain starts).
 *
 * The owner record, ADA_ORPHAN_OWNER_NAME in the arena directory (0600,
 * written by ada_fs_replace: never through a link), is text:
 *
 *   ada-arena-owner 1
 *   recorder_pid N            the recorder process
 *   recorder_start_ticks T    its start time (alive.c: a reused pid is not it)
 *   started S                 CLOCK_REALTIME seconds (the line the user reads)
 *   manual 0|1                made under ADA_NO_RECOVER_ORPHANS: only
 *                             `ada recover --all` or `ada recover DIR` take it
 *   session /abs/path         the session directory, last (it may hold spaces)
 *
 * Orphan: a directory of /dev/shm named ada-<name>-XXXXXX, a real
 * directory owned by the effective user with mode 0700 (anything else is
 * another user's or not ours: left alone), whose record names a session
 * whose base name is <name>, whose recorder is not alive (pid and start
 * time), and that no process of the user maps or holds a file of. A
 * process that still maps one of its arenas (the traced program outlived
 * its recorder) keeps the whole directory as it is: recovering under it
 * would read a ring still being written, and removing the file would lose
 * what it writes next; the scan says so and takes it once the process is
 * gone. Two scans never take the same directory: each holds flock
 * (LOCK_EX|LOCK_NB) on it while it works. Who maps or holds a directory
 * is asked of /proc once for all the directories that need it (up to
 * ORPHAN_BATCH at a time, kept locked meanwhile): a directory that stays
 * (held, or not ours to take) would otherwise cost every command a walk
 * of /proc of its own. A directory without any record,
 * older than a minute, unheld, and holding nothing but arenas of
 * processes that are gone (and perhaps the budget file) is removed and
 * told: a recording's end that could not empty it leaves one. One marked
 * manual is the user's to recover (`ada recover --all`), but the arena
 * pool's files a killed recorder left in it hold no events: once its
 * recorder is gone and nothing holds it, those are removed and told, the
 * rest left.
 *
 * Everything read here (the record, the directory listing) is input from
 * a place the user owns; it is checked once, in orphan_read_owner().
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "recorder.h"
#include "ring.h"
#include "ring_pool.h"

#define ORPHAN_OWNER_MAX 8192   /* the record's size limit (a path and five numbers) */
#define ORPHAN_PROC_MAX 100000u /* /proc entries looked at, at most */
#define ORPHAN_FD_MAX 65536u    /* descriptors of one process looked at, at most */
#define ORPHAN_YOUNG_S 60       /* a directory without a record this young is starting */
#define ORPHAN_BATCH 32u        /* directories one walk of /proc looks for, at most */

bool ada_orphans_disabled(void)
{
	const char *v = getenv("ADA_NO_RECOVER_ORPHANS");
	return v && *v && strcmp(v, "0");
}

int ada_orphan_mark(const char *arena_dir, const char *session_dir)
{
	char buf[ORPHAN_OWNER_MAX];
	int n = snprintf(buf, sizeof(buf),
	                 "ada-arena-owner 1\nrecorder_pid %d\nrecorder_start_ticks %llu\n"
	                 "started %lld\nmanual %d\nsession %s\n",
	                 (int)getpid(), (unsigned long long)ada_proc_start_ticks(getpid()),
	                 (long long)time(NULL), ada_orphans_disabled() ? 1 : 0, session_dir);
	if (n < 0 || n >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	int fd = -1, rc = ada_fs_open_dir(AT_FDCWD, arena_dir, &fd);
	if (rc < 0)
		return rc;
	rc = ada_fs_replace(fd, ADA_ORPHAN_OWNER_NAME, buf, (size_t)n, false);
	close(fd);
	return rc;
}

struct orphan_owner {
	pid_t pid;
	unsigned long long ticks;
	long long started;
	int manual;
	char session[PATH_MAX];
};

/* A directory of shm_dir, locked, whose fate needs to know who holds it:
 * what was read of it, waiting for the walk of /proc (orphan_holders). */
struct orphan_cand {
	int fd; /* the directory, locked (flock) until it is decided */
	struct stat st;
	char name[NAME_MAX + 1];
	char path[PATH_MAX]; /* shm_dir/name */
	size_t plen;
	int rc; /* orphan_read_owner()'s: 0, the record in o is read */
	struct orphan_owner o;
	pid_t holder; /* a process that maps or holds a file of it; 0: none */
};

/* One walk of /proc: the candidates without a holder yet, and the
 * process looked at. */
struct orphan_walk {
	struct orphan_cand *c;
	unsigned n, left;
	pid_t pid;
};

/* The directory name's <name> (ada-<name>-XXXXXX): the session's base
 * name as the recorder made it. False for any other name. */
static bool orphan_name_session(const char *dname, char *out, size_t cap)
{
	size_t len = strlen(dname);
	if (strncmp(dname, "ada-", 4) || len < 4 + 1 + 7 || dname[len - 7] != '-')
		return false;
	size_t n = len - 4 - 7;
	if (n >= cap)
		return false;
	memcpy(out, dname + 4, n);
	out[n] = '\0';
	return true;
}

/* The owner record of the directory dfd, checked: numbers in range, an
 * absolute session path whose base name is the one in the directory's
 * own name. -ENOENT (no record), -EPROTO (not one ada wrote), -errno. */
static int orphan_read_owner(int dfd, const char *dname, struct orphan_owner *o)
{
	char buf[ORPHAN_OWNER_MAX + 1], want[NAME_MAX + 1];
	int fd = -1, rc = ada_fs_open_file(dfd, ADA_ORPHAN_OWNER_NAME, O_RDONLY, &fd);
	if (rc < 0)
		return rc;
	ssize_t n = read(fd, buf, ORPHAN_OWNER_MAX);
	close(fd);
	if (n <= 0 || n >= ORPHAN_OWNER_MAX)
		return -EPROTO;
	buf[n] = '\0';
	int pid, used = 0;
	if (sscanf(buf,
	           "ada-arena-owner 1\nrecorder_pid %d\nrecorder_start_ticks %llu\nstarted "
	           "%lld\nmanual %d\nsession %n",
	           &pid, &o->ticks, &o->started, &o->manual, &used) != 4 ||
	    !used || pid <= 0)
		return -EPROTO;
	o->pid = pid;
	char *s = buf + used, *nl = strchr(s, '\n');
	if (!nl || nl[1] || (size_t)(nl - s) >= sizeof(o->session) || s[0] != '/')
		return -EPROTO;
	*nl = '\0';
	strcpy(o->session, s);
	const char *base = strrchr(o->session, '/') + 1;
	if (!orphan_name_session(dname, want, sizeof(want)) || strcmp(base, want) ||
	    strstr(o->session, "/../") || strstr(o->session, "/./"))
		return -EPROTO;
	return 0;
}

/* The candidates without a holder yet that file (a path from /proc)
 * lies under ("dir/..."; bare: dir itself too) are held by w->pid. */
static void orphan_held_by(struct orphan_walk *w, const char *file, bool bare)
{
	for (unsigned i = 0; i < w->n && w->left; i++) {
		struct orphan_cand *c = &w->c[i];
		if (c->holder || strncmp(file, c->path, c->plen) ||
		    (file[c->plen] != '/' && (!bare || file[c->plen])))
			continue;
		c->holder = w->pid;
		w->left--;
	}
}

/* The files /proc/PID/maps names. */
static void orphan_maps_hold(struct orphan_walk *w, const char *pid)
{
	char path[64], line[PATH_MAX + 256];
	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (w->left && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		if (p)
			orphan_held_by(w, p, false);
	}
	fclose(f);
}

/* The files PID's descriptors are open on. */
static void orphan_fds_hold(struct orphan_walk *w, const char *pid)
{
	char path[64], link[PATH_MAX];
	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	for (unsigned i = 0; w->left && i < ORPHAN_FD_MAX && (de = readdir(d)); i++) {
		ssize_t n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		orphan_held_by(w, link, true);
	}
	closedir(d);
}

/* Each candidate's holder: a process of the effective user (root: any)
 * other than this one that maps or holds a file under its directory (the
 * first /proc lists), 0 when none. One walk of /proc for all n, ended
 * when each has one; *walks counts it. */
static void orphan_holders(struct orphan_cand *c, unsigned n, unsigned *walks)
{
	if (walks)
		(*walks)++;
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct orphan_walk w = {.c = c, .n = n, .left = n};
	uid_t me = geteuid();
	pid_t self = getpid();
	struct dirent *de;
	for (unsigned i = 0; w.left && i < ORPHAN_PROC_MAX && (de = readdir(d)); i++) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		struct stat st;
		if (*end || pid <= 0 || pid == self || fstatat(dirfd(d), de->d_name, &st, 0) != 0 ||
		    (me != 0 && st.st_uid != me))
			continue;
		w.pid = (pid_t)pid;
		orphan_maps_hold(&w, de->d_name);
		if (w.left)
			orphan_fds_hold(&w, de->d_name);
	}
	closedir(d);
}

/* The session directory of o: a real directory (not a link) owned by the
 * effective user. -ENOENT, -ELOOP, -EPERM. */
static int orphan_session_ok(const struct orphan_owner *o)
{
	struct stat st;
	if (lstat(o->session, &st) != 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return st.st_uid == geteuid() ? 0 : -EPERM;
}

/* Whether the arena file fname (<pid>.ring) has no pid_<pid>/manifest.json
 * in session: recover never read it. */
static bool orphan_unread(const char *session, const char *fname)
{
	unsigned pid;
	char tail[8], path[PATH_MAX];
	if (sscanf(fname, "%u%7s", &pid, tail) != 2 || strcmp(tail, ".ring"))
		return false;
	if (snprintf(path, sizeof(path), "%s/pid_%u/manifest.json", session, pid) >=
	    (int)sizeof(path))
		return false;
	return access(path, F_OK) != 0;
}

/* Empties and removes the arena directory dfd (name under shm); counts
 * the arena files of session no manifest named (never read; session
 * NULL: none is named, nothing counted) and the arena pool's files. */
static void orphan_remove(int shm, const char *name, int dfd, const char *session, uint32_t *unread,
                          uint32_t *pooled)
{
	int fd2 = dup(dfd);
	DIR *d = fd2 < 0 ? NULL : fdopendir(fd2);
	if (!d) {
		if (fd2 >= 0)
			close(fd2);
		return;
	}
	rewinddir(d); /* a dup shares the offset another listing moved */
	struct dirent *de;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		enum ada_fs_kind k = ada_fs_entry_kind(dirfd(d), de);
		if (k != ADA_FS_REG && k != ADA_FS_LINK)
			continue;
		if (session)
			*unread += orphan_unread(session, de->d_name);
		if (unlinkat(dirfd(d), de->d_name, 0) == 0 && k == ADA_FS_REG)
			*pooled += ada_arena_pool_is_name(de->d_name);
	}
	closedir(d);
	unlinkat(shm, name, AT_REMOVEDIR);
}

int ada_recover_lock(const char *dir, int *out)
{
	const char *slash = strrchr(dir, '/');
	unsigned pid;
	char tail, path[PATH_MAX];
	int n;
	if (sscanf(slash ? slash + 1 : dir, "pid_%u%c", &pid, &tail) != 1)
		n = snprintf(path, sizeof(path), "%s", dir);
	else if (!slash) /* a pid directory: its session is the one above */
		n = snprintf(path, sizeof(path), ".");
	else
		n = snprintf(path, sizeof(path), "%.*s", slash == dir ? 1 : (int)(slash - dir),
		             dir);
	if (n < 0 || n >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Not waited for: a live recorder holds the shared lock all its life
	 * (recorder.c rec_session_dir), another recovery the exclusive one. */
	int rc = 0;
	while (flock(fd, LOCK_EX | LOCK_NB) != 0 && rc == 0)
		if (errno != EINTR)
			rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	*out = fd;
	return 0;
}

int ada_recover_lock_wait(const char *dir, int *out, unsigned ms)
{
	int rc = ada_recover_lock(dir, out);
	for (unsigned waited = 0; rc == -EBUSY && waited < ms; waited += 10) {
		struct timespec ten_ms = {.tv_nsec = 10000000};
		nanosleep(&ten_ms, NULL);
		rc = ada_recover_lock(dir, out);
	}
	return rc;
}

/* A session whose recorder is gone (orphan_decide): its lock is let go
 * once that recorder's writes in flight landed, tens of ms after its
 * death; a live recorder seen as gone from here keeps it, and costs this
 * wait once a scan. */
#define ORPHAN_LOCK_WAIT_MS 200u

/* The arena pool's files in the directory dfd (regular files named
 * pool.<k>): counted, and removed when sweep. A killed recorder's pool
 * holds no events, so nothing recover needs is in them; by name and by
 * type only, never through a link. */
static uint32_t orphan_pool_files(int dfd, bool sweep)
{
	uint32_t n = 0;
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++) {
		char name[16];
		struct stat st;
		snprintf(name, sizeof(name), ADA_ARENA_POOL_PREFIX "%u", k);
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			continue;
		n += !sweep || unlinkat(dfd, name, 0) == 0;
	}
	return n;
}

/* Whether the locked candidate c is to be decided at all, before the
 * walk of /proc: not when it is left without a word anyway (a record
 * whose recorder runs, or manual without pool files and this is no
 * `all` scan; no usable record and younger than a minute: a recorder
 * starting). A manual one is wanted for its pool files only, so once
 * they are gone it costs no walk of /proc. */
static bool orphan_wanted(const struct ada_orphan_opts *op, const struct orphan_cand *c)
{
	if (c->rc < 0)
		return time(NULL) - c->st.st_mtime >= ORPHAN_YOUNG_S;
	return !ada_recorder_alive(c->o.pid, (uint64_t)c->o.ticks) &&
	       (!c->o.manual || op->all || orphan_pool_files(c->fd, false));
}

/* A wanted candidate whose record o was read, its holder known: the
 * outcome before recovery (ADA_ORPHAN_RECOVERED: go ahead). */
static int orphan_decide(const struct ada_orphan_opts *op, const struct orphan_cand *c,
                         struct ada_orphan *r)
{
	const struct orphan_owner *o = &c->o;
	if ((r->holder = c->holder))
		return ADA_ORPHAN_IN_USE;
	int rc = orphan_session_ok(o);
	if (rc == 0 && op->check && op->check(op->arg, o->session) < 0)
		rc = -EPERM;
	r->error = -rc;
	return rc < 0 ? ADA_ORPHAN_NO_SESSION : ADA_ORPHAN_RECOVERED;
}

/* True for a name a traced process gives its arena (src/ring/env.c):
 * <pid>.ring or <pid>.<start ticks>.ring, either followed by
 * .tmp.<hex> while it is made; *pid is the pid. */
static bool orphan_arena_name(const char *name, pid_t *pid)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(name, &end, 10);
	if (end == name || !isdigit((unsigned char)name[0]) || errno || v == 0 || v > INT32_MAX)
		return false;
	if (end[0] == '.' && isdigit((unsigned char)end[1])) {
		const char *t = end + 1;
		while (isdigit((unsigned char)*t))
			t++;
		end = (char *)t;
	}
	if (strncmp(end, ".ring", 5))
		return false;
	end += 5;
	if (!strncmp(end, ".tmp.", 5) && end[5]) {
		end += 5;
		while (isxdigit((unsigned char)*end))
			end++;
	}
	*pid = (pid_t)v;
	return *end == '\0';
}

/* True when the directory dfd holds nothing but arenas (files named as
 * orphan_arena_name() says) of processes that no longer exist, and
 * perhaps the budget file and the arena pool's files (no events);
 * *arenas counts the arenas. A pid /proc still lists (alive, or reused)
 * keeps the directory. */
static bool orphan_only_dead_arenas(int dfd, uint32_t *arenas, uint32_t *pooled)
{
	int fd2 = dup(dfd);
	DIR *d = fd2 < 0 ? NULL : fdopendir(fd2);
	if (!d) {
		if (fd2 >= 0)
			close(fd2);
		return false;
	}
	rewinddir(d); /* a dup shares the offset another listing moved */
	bool ok = true;
	struct dirent *de;
	unsigned i = 0;
	*arenas = *pooled = 0;
	for (; ok && i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		bool file = ada_fs_entry_kind(dirfd(d), de) == ADA_FS_REG;
		if (file && !strcmp(de->d_name, ADA_SHM_BUDGET_NAME))
			continue;
		/* The arena pool's files (src/ring/pool.c) hold no events. */
		if (file && ada_arena_pool_is_name(de->d_name)) {
			(*pooled)++;
			continue;
		}
		pid_t pid;
		char proc[32];
		ok = file && orphan_arena_name(de->d_name, &pid);
		if (ok) {
			snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
			ok = access(proc, F_OK) != 0 && errno == ENOENT;
			*arenas += ok;
		}
	}
	closedir(d);
	return ok && i < ADA_FS_WALK_MAX_ENTRIES;
}

/* A directory without a usable record (c->rc): a recorder between
 * mkdtemp and its record, an ada from before records, or the end of a
 * recording that could not empty it (an arena of the program landed
 * after, or the recorder could not list it). Only an old one
 * (orphan_wanted) that no process holds is looked at: without any record
 * (another ada's record is not ours to judge), holding only arenas whose
 * processes are gone, nobody can ever read it, and no session is named
 * to recover into: it is removed and told. Anything else in it is left,
 * and told. */
static void orphan_unmarked(const struct ada_orphan_opts *op, int shm, const struct orphan_cand *c,
                            struct ada_orphan *r)
{
	if (c->holder)
		return;
	r->outcome = ADA_ORPHAN_UNKNOWN;
	r->error = -c->rc;
	uint32_t arenas = 0, pooled = 0;
	if (c->rc == -ENOENT && orphan_only_dead_arenas(c->fd, &arenas, &pooled)) {
		orphan_remove(shm, c->name, c->fd, NULL, NULL, &r->pooled);
		r->outcome = ADA_ORPHAN_REMOVED;
		r->unread = arenas;
		r->error = 0;
	}
	op->found(op->arg, r);
}

/* A candidate marked manual (wanted for its pool files, this no `all`
 * scan), its recorder gone, out decided: unheld, its session there and
 * not being recorded (the session lock, as for a recovery), the pool's
 * files are removed and told; the arenas and the record stay for `ada
 * recover --all`. Left without a word otherwise, as before pools: a
 * manual recording is the user's to recover. */
static void orphan_manual(const struct ada_orphan_opts *op, const struct orphan_cand *c, int out,
                          struct ada_orphan *r)
{
	int lock = -1;
	if (out != ADA_ORPHAN_RECOVERED ||
	    ada_recover_lock_wait(c->o.session, &lock, ORPHAN_LOCK_WAIT_MS) < 0)
		return;
	r->pooled = orphan_pool_files(c->fd, true);
	close(lock);
	r->outcome = ADA_ORPHAN_POOL_SWEPT;
	if (r->pooled)
		op->found(op->arg, r);
}

/* One wanted candidate, locked, its holder known: decided and, when an
 * orphan, taken. */
static void orphan_take(const struct ada_orphan_opts *op, int shm, struct orphan_cand *c,
                        unsigned *taken)
{
	struct ada_orphan r = {.arena_dir = c->path};
	const struct orphan_owner *o = &c->o;
	int rc;
	if (c->rc < 0) {
		orphan_unmarked(op, shm, c, &r);
		return;
	}
	r.session_dir = o->session;
	r.started = o->started;
	int out = orphan_decide(op, c, &r);
	if (o->manual && !op->all) {
		orphan_manual(op, c, out, &r);
		return;
	}
	struct ada_recover_report rep = {.notice = op->notice, .notice_arg = op->arg};
	int lock = -1;
	if (out == ADA_ORPHAN_RECOVERED &&
	    (rc = ada_recover_lock_wait(o->session, &lock, ORPHAN_LOCK_WAIT_MS)) < 0) {
		/* Its recorder runs (seen from here as gone), or a recovery. */
		if (rc == -EBUSY)
			return;
		out = ADA_ORPHAN_FAILED;
		r.error = -rc;
	}
	if (out == ADA_ORPHAN_RECOVERED) {
		rc = ada_wal_recover(o->session, &rep);
		close(lock);
		r.rep = &rep;
		if (rc < 0 && rc != -ENOENT) { /* -EBUSY: a manifest names a live recorder */
			out = ADA_ORPHAN_FAILED;
			r.error = -rc;
		} else {
			orphan_remove(shm, c->name, c->fd, o->session, &r.unread, &r.pooled);
			(*taken)++;
		}
	}
	r.outcome = (uint32_t)out;
	op->found(op->arg, &r);
}

/* Opens name under shm if it is an arena directory of the effective user
 * (a real directory, owned, 0700) and locks it; -1 otherwise. */
static int orphan_open(int shm, const char *name, struct stat *st)
{
	char sess[NAME_MAX + 1];
	if (!orphan_name_session(name, sess, sizeof(sess)))
		return -1;
	int fd = -1;
	if (ada_fs_open_dir(shm, name, &fd) < 0)
		return -1;
	if (fstat(fd, st) != 0 || st->st_uid != geteuid() || (st->st_mode & 07777) != 0700 ||
	    flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether the directory dfd (name under shm) is one of the user's arena
 * directories (a real directory, owned, 0700) whose record names session;
 * -EBUSY when its recorder still runs. */
static int orphan_of_session(int dfd, const char *name, const char *session)
{
	struct stat st;
	struct orphan_owner o;
	if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700 ||
	    orphan_read_owner(dfd, name, &o) < 0 || strcmp(o.session, session))
		return -ENOENT;
	return ada_recorder_alive(o.pid, (uint64_t)o.ticks) ? -EBUSY : 0;
}

int ada_orphan_arena_dir(const char *shm_dir, const char *session, char *out, size_t cap)
{
	const char *base = strrchr(session, '/');
	char want[NAME_MAX + 1];
	if (!base || !shm_dir)
		return -EINVAL;
	DIR *d = ada_fs_opendir(AT_FDCWD, shm_dir);
	if (!d)
		return -errno;
	int rc = -ENOENT;
	struct dirent *de;
	for (unsigned i = 0; rc == -ENOENT && i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d));
	     i++) {
		int fd = -1;
		if (!orphan_name_session(de->d_name, want, sizeof(want)) ||
		    strcmp(want, base + 1) || ada_fs_entry_kind(dirfd(d), de) != ADA_FS_DIR ||
		    ada_fs_open_dir(dirfd(d), de->d_name, &fd) < 0)
			continue;
		rc = orphan_of_session(fd, de->d_name, session);
		close(fd);
		if (rc == 0 && snprintf(out, cap, "%s/%s", shm_dir, de->d_name) >= (int)cap)
			rc = -ENAMETOOLONG;
	}
	closedir(d);
	return rc;
}

/* The directory name of shm_dir into c, opened and locked, its record
 * read; false when it is not one to decide (orphan_open,
 * orphan_wanted): then nothing of it is kept. */
static bool orphan_candidate(const struct ada_orphan_opts *op, int shm, const char *shm_dir,
                             const char *name, struct orphan_cand *c)
{
	int n = snprintf(c->path, sizeof(c->path), "%s/%s", shm_dir, name);
	if (n < 0 || n >= (int)sizeof(c->path) || strlen(name) >= sizeof(c->name))
		return false;
	c->fd = orphan_open(shm, name, &c->st);
	if (c->fd < 0)
		return false;
	c->plen = (size_t)n;
	c->holder = 0;
	strcpy(c->name, name);
	c->rc = orphan_read_owner(c->fd, name, &c->o);
	if (orphan_wanted(op, c))
		return true;
	close(c->fd); /* drops the lock */
	return false;
}

/* The n candidates: one walk of /proc for their holders, then each
 * decided, taken or left, and unlocked. */
static void orphan_batch(const struct ada_orphan_opts *op, int shm, struct orphan_cand *c,
                         unsigned n, unsigned *taken)
{
	if (!n)
		return;
	orphan_holders(c, n, op->proc_walks);
	for (unsigned i = 0; i < n; i++) {
		orphan_take(op, shm, &c[i], taken);
		close(c[i].fd); /* drops the lock */
	}
}

int ada_orphans_recover(const struct ada_orphan_opts *op, unsigned *taken)
{
	/* Resolved once (/dev/shm may be a link, e.g. to /run/shm): the
	 * holders' /proc links and maps name files by their real path, and
	 * a candidate's path must match them or a held directory looks
	 * unheld. The directory itself is the administrator's (root's
	 * /dev/shm, or --shm-dir's), not the target's. */
	char shm_dir[PATH_MAX];
	if (!realpath(op->shm_dir ? op->shm_dir : "/dev/shm", shm_dir))
		return -errno;
	*taken = 0;
	struct orphan_cand *c = calloc(ORPHAN_BATCH, sizeof(*c));
	if (!c)
		return -ENOMEM;
	DIR *d = ada_fs_opendir(AT_FDCWD, shm_dir);
	if (!d) {
		int rc = -errno;
		free(c);
		return rc;
	}
	int shm = dirfd(d);
	unsigned n = 0;
	struct dirent *de;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		if (strncmp(de->d_name, "ada-", 4) || ada_fs_entry_kind(shm, de) != ADA_FS_DIR ||
		    !orphan_candidate(op, shm, shm_dir, de->d_name, &c[n]))
			continue;
		if (++n == ORPHAN_BATCH) {
			orphan_batch(op, shm, c, n, taken);
			n = 0;
		}
	}
	orphan_batch(op, shm, c, n, taken);
	closedir(d);
	free(c);
	return 0;
}
