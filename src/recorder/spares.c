/*
 * Spare thread directories: a thread's files made ahead of need, off the
 * drain (issue 32 item 1).
 *
 * A new thread gets two new inodes, thread_K/ and its index.atf. On ext4
 * each costs the file system an inode-bitmap search (recently freed
 * inodes are skipped by reading their inode-table blocks), and the
 * drain, which must keep up with the rings, paid both for every thread.
 * Here a thread of its own (the maker, "ada-spares") makes them ahead:
 *
 *   <session>/.thread_spares/          0700, made by the maker
 *     s<N>/                            0700, ada_fs_mkdir (must be new)
 *       index.atf                      0600, empty, ada_fs_create (O_EXCL)
 *     new/                             0700: where s<N> is made, then
 *                                      moved up when whole
 *
 * and the drain moves one into place with renameat2(RENAME_NOREPLACE),
 * `s<N>` -> `pid_M/thread_K`: a rename allocates no inode, and the
 * directory and file descriptors the maker opened when it made them are
 * the drain's from then on (no lookup by name, no link followed). The
 * session layout a reader sees is unchanged: while recording, readers
 * skip dot-names (the tree walk) or look for pid_N only; at the end the
 * spares left are removed, and `ada recover` removes what a killed
 * recorder left (wal_spares_sweep: only directories named s<N> holding
 * nothing but an empty regular index.atf; anything else stays, counted).
 *
 * Threads and protocol: the maker makes spares and pushes them onto the
 * ready list; the drain takes them (wal_spares_use) and stops the pool at
 * its end (wal_spares_stop). One mutex guards the list, the target, the
 * counts and the stop flag; neither thread holds it across a file-system
 * call, so the drain waits at most for a push. The target is 0 until
 * SPARES_FIRST threads found the list empty (a program of one thread
 * makes none), then doubles, up to SPARES_MAX, each time a thread found
 * it empty: every spare left at the end is removed, and a removal costs
 * more than making a thread's files (spares_dirs). The spares'
 * descriptors (two each) are the recorder's, within its raised
 * RLIMIT_NOFILE. A failure is counted with its reason
 * (wal_spares_counts) and never loses events: a thread without a spare
 * gets its directory made by the drain, as before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "recorder.h"
#include "recorder_internal.h"
#include "spares.h"

/* Ready at once, at most: what is left at the end is removed, and each
 * removal frees a directory block (spares_dirs). */
#define SPARES_MAX 16u
#define SPARES_FIRST 2u /* the target once SPARES_FIRST threads found none */
#define SPARES_FILE "index.atf"
#define SPARES_NEW "new" /* where the maker makes them (spares_make) */

struct wal_spare {
	uint32_t id; /* its name: s<id> */
	int dir_fd, file_fd;
};

struct wal_spares {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* the maker waits on it for room or stop */
	pthread_t thr;
	bool started;
	int session_fd; /* borrowed: the recorder's */
	/* Under mu: */
	int dir_fd; /* .thread_spares, set once by the maker */
	bool stop, off;
	unsigned n, target;
	uint32_t next_id;
	struct wal_spare ready[SPARES_MAX];
	struct wal_spares_counts c;
};

static void spares_first_err(int *slot, int err)
{
	if (!*slot)
		*slot = err;
}

/* Closes a spare's descriptors and removes it (a failed move). */
static void spares_discard(struct wal_spares *s, const struct wal_spare *sp)
{
	char name[16];
	snprintf(name, sizeof(name), "s%u", sp->id);
	close(sp->file_fd);
	unlinkat(sp->dir_fd, SPARES_FILE, 0);
	close(sp->dir_fd);
	unlinkat(s->dir_fd, name, AT_REMOVEDIR);
}

/* One spare, s<id> and its empty index.atf, made outside the lock in
 * new/ and then moved up: a mkdir holds its parent's lock for the whole
 * inode search, and the drain's move out of .thread_spares/ would wait
 * for it; the move up holds that lock only for a directory entry. */
static int spares_make(int new_fd, int dir_fd, uint32_t id, struct wal_spare *sp)
{
	char name[16];
	snprintf(name, sizeof(name), "s%u", id);
	sp->id = id;
	int rc = ada_fs_mkdir(new_fd, name, ADA_FS_EXCL, &sp->dir_fd);
	if (rc < 0)
		return rc;
	rc = ada_fs_create(sp->dir_fd, SPARES_FILE, O_RDWR, &sp->file_fd);
	if (rc == 0 && renameat2(new_fd, name, dir_fd, name, RENAME_NOREPLACE) < 0) {
		rc = -errno;
		close(sp->file_fd);
		unlinkat(sp->dir_fd, SPARES_FILE, 0);
	}
	if (rc < 0) {
		close(sp->dir_fd);
		unlinkat(new_fd, name, AT_REMOVEDIR);
	}
	return rc;
}

/* WAL_SPARES_DIR and its new/, made when the first spare is wanted: a
 * program of one thread gets none (each directory removed at the end
 * frees a block: on ext4 mounted with `discard`, a discard, 1-8 ms). */
static int spares_dirs(int session_fd, int *dfd, int *nfd)
{
	int rc = ada_fs_mkdir(session_fd, WAL_SPARES_DIR, ADA_FS_EXCL, dfd);
	return rc < 0 ? rc : ada_fs_mkdir(*dfd, SPARES_NEW, ADA_FS_EXCL, nfd);
}

/* The maker: keeps the ready list at its target until stopped or until a
 * spare cannot be made (then the pool is off and the drain makes every
 * thread's files itself). */
static void *spares_main(void *arg)
{
	struct wal_spares *s = arg;
	int dfd = -1, nfd = -1, rc = 0;
	pthread_mutex_lock(&s->mu);
	while (rc == 0 && !s->stop) {
		if (s->n >= s->target) {
			pthread_cond_wait(&s->cv, &s->mu);
			continue;
		}
		/* Woken (or still short): make until the target. */
		uint32_t id = s->next_id++;
		struct wal_spare sp;
		pthread_mutex_unlock(&s->mu);
		if (dfd < 0)
			rc = spares_dirs(s->session_fd, &dfd, &nfd);
		if (rc == 0)
			rc = spares_make(nfd, dfd, id, &sp);
		pthread_mutex_lock(&s->mu);
		s->dir_fd = dfd; /* the drain's source, from its first take on */
		if (rc == 0) {
			s->ready[s->n++] = sp;
			s->c.made++;
		}
	}
	if (rc < 0) {
		s->off = true;
		s->c.make_failed++;
		spares_first_err(&s->c.make_err, rc);
	}
	pthread_mutex_unlock(&s->mu);
	if (nfd >= 0)
		close(nfd);
	return NULL;
}

int wal_spares_new(int session_fd, struct wal_spares **out)
{
	struct wal_spares *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->session_fd = session_fd;
	s->dir_fd = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	int rc = pthread_create(&s->thr, NULL, spares_main, s);
	if (rc) {
		wal_spares_free(s);
		return -rc;
	}
	pthread_setname_np(s->thr, "ada-spares"); /* for top, perf */
	s->started = true;
	*out = s;
	return 0;
}

/* The next ready spare, or why none (-EAGAIN: the list is empty, the
 * target grows; -ENODEV: the pool is off). */
static int spares_take(struct wal_spares *s, struct wal_spare *sp, int *from_fd)
{
	int rc = 0;
	pthread_mutex_lock(&s->mu);
	if (s->off || s->stop) {
		rc = -ENODEV;
	} else if (s->n == 0) { /* also before the maker made its directory */
		s->c.empty++;
		unsigned t = s->target                    ? s->target * 2
		             : s->c.empty >= SPARES_FIRST ? SPARES_FIRST
		                                          : 0;
		s->target = t > SPARES_MAX ? SPARES_MAX : t;
		rc = -EAGAIN;
	} else {
		*sp = s->ready[--s->n];
	}
	*from_fd = s->dir_fd;
	/* The maker refills from half the target on: one wake-up a batch. */
	if (s->n <= s->target / 2)
		pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* A move refused: -EEXIST (the name is taken) keeps the spare for the
 * next thread; any other reason removes it, and one the file system gives
 * for every move (no RENAME_NOREPLACE, another file system) turns the
 * pool off. */
static void spares_refused(struct wal_spares *s, const struct wal_spare *sp, int err)
{
	pthread_mutex_lock(&s->mu);
	bool keep = err == -EEXIST && s->n < SPARES_MAX;
	if (err == -EEXIST) {
		s->c.taken_names++;
	} else {
		s->c.move_failed++;
		spares_first_err(&s->c.move_err, err);
		if (err == -EINVAL || err == -ENOSYS || err == -EXDEV || err == -EPERM)
			s->off = true;
	}
	if (keep)
		s->ready[s->n++] = *sp;
	pthread_mutex_unlock(&s->mu);
	if (!keep)
		spares_discard(s, sp);
}

int wal_spares_use(struct wal_spares *s, int to_dir_fd, const char *name, int *dir_fd, int *file_fd)
{
	if (!s)
		return -ENODEV;
	struct wal_spare sp;
	int from_fd;
	int rc = spares_take(s, &sp, &from_fd);
	if (rc < 0)
		return rc;
	char from[16];
	snprintf(from, sizeof(from), "s%u", sp.id);
	if (renameat2(from_fd, from, to_dir_fd, name, RENAME_NOREPLACE) < 0) {
		rc = -errno;
		spares_refused(s, &sp, rc);
		return rc;
	}
	pthread_mutex_lock(&s->mu);
	s->c.used++;
	pthread_mutex_unlock(&s->mu);
	*dir_fd = sp.dir_fd;
	*file_fd = sp.file_fd;
	return 0;
}

/* Removes s<N> under dir_fd when it is a spare: a directory of ours
 * holding nothing but an empty regular index.atf (or nothing: a maker
 * killed before it made the file). True when removed. */
static bool spares_rm_one(int dir_fd, const char *name)
{
	int fd;
	struct stat st;
	if (ada_fs_open_dir(dir_fd, name, &fd) < 0)
		return false;
	bool ok = fstat(fd, &st) == 0 && st.st_uid == geteuid();
	DIR *d = ok ? fdopendir(fd) : NULL;
	if (!d) {
		close(fd);
		return false;
	}
	unsigned n = 0;
	struct dirent *de;
	while (ok && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ok = ++n == 1 && !strcmp(de->d_name, SPARES_FILE) &&
		     fstatat(fd, SPARES_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		     S_ISREG(st.st_mode) && st.st_size == 0 && st.st_uid == geteuid();
	}
	if (ok && n == 1)
		ok = unlinkat(fd, SPARES_FILE, 0) == 0;
	else
		ok = ok && n == 0;
	closedir(d);
	return ok && unlinkat(dir_fd, name, AT_REMOVEDIR) == 0;
}

static bool spares_name(const char *name)
{
	unsigned id;
	char tail;
	return sscanf(name, "s%u%c", &id, &tail) == 1 && name[1] >= '0' && name[1] <= '9';
}

/* Removes name under at (WAL_SPARES_DIR, or its new/ when depth is 1)
 * with the spares in it; what it does not recognise stays, in *kept. */
static void spares_sweep_dir(int at, const char *name, int depth, unsigned *removed, unsigned *kept)
{
	DIR *d = ada_fs_opendir(at, name);
	struct stat st;
	if (!d) {
		/* Absent is the normal case; anything else under the name stays. */
		*kept += errno != ENOENT;
		return;
	}
	if (fstat(dirfd(d), &st) < 0 || st.st_uid != geteuid()) {
		closedir(d);
		(*kept)++;
		return;
	}
	unsigned kept_in = 0;
	struct dirent *de;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		bool dir = ada_fs_entry_kind(dirfd(d), de) == ADA_FS_DIR;
		if (dir && depth == 0 && !strcmp(de->d_name, SPARES_NEW)) {
			spares_sweep_dir(dirfd(d), SPARES_NEW, 1, removed, &kept_in);
			continue;
		}
		if (dir && spares_name(de->d_name) && spares_rm_one(dirfd(d), de->d_name))
			(*removed)++;
		else
			kept_in++;
	}
	closedir(d);
	if (unlinkat(at, name, AT_REMOVEDIR) < 0 && !kept_in)
		kept_in++;
	*kept += kept_in;
}

void wal_spares_sweep(int session_fd, unsigned *removed, unsigned *kept)
{
	*removed = *kept = 0;
	spares_sweep_dir(session_fd, WAL_SPARES_DIR, 0, removed, kept);
}

void wal_spares_stop(struct wal_spares *s)
{
	if (!s || !s->started)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thr, NULL);
	s->started = false;
	/* The maker is gone: what follows is the caller's thread alone. */
	for (unsigned i = 0; i < s->n; i++) {
		close(s->ready[i].file_fd);
		close(s->ready[i].dir_fd);
	}
	s->n = 0;
	if (s->dir_fd >= 0) {
		close(s->dir_fd);
		s->dir_fd = -1;
		wal_spares_sweep(s->session_fd, &s->c.removed, &s->c.left);
	}
}

void wal_spares_counts(struct wal_spares *s, struct wal_spares_counts *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	*out = s->c;
	pthread_mutex_unlock(&s->mu);
}

void wal_spares_free(struct wal_spares *s)
{
	if (!s)
		return;
	wal_spares_stop(s);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void wal_spares_recover(const char *dir, struct ada_recover_report *rep)
{
	int sfd;
	if (ada_fs_open_dir(AT_FDCWD, dir, &sfd) < 0)
		return;
	unsigned removed, kept;
	wal_spares_sweep(sfd, &removed, &kept);
	close(sfd);
	rep->spares_removed += removed;
	rep->spares_kept += kept;
	char sentence[256];
	snprintf(sentence, sizeof(sentence),
	         "%s/%s: %u entries are not spare thread directories of ada's and were left", dir,
	         WAL_SPARES_DIR, kept);
	if (kept && rep->notice)
		rep->notice(rep->notice_arg, sentence);
}
