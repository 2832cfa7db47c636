/*
 * ada recover's search for the arenas no manifest names: a process the
 * recorder died before writing a manifest for (its first 20 ms,
 * drain_early_manifest), or one whose arena it never admitted. Both are
 * in the session's arena directory, which a sibling's manifest names or
 * else the directory's owner record does (orphans.c). And the walk of a
 * session for its pid_N (ada_wal_recover), with the session registered as
 * a root below which no link is followed (fs.h).
 *
 * Threads: the caller's (ada recover, the orphan scan).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "manifest.h"
#include "recorder_internal.h"
#include "ring.h"

bool rec_recorder_running(json_t *man)
{
	const char *st0 = ada_manifest_state(man);
	json_int_t rpid = json_integer_value(json_object_get(man, "recorder_pid"));
	json_int_t rticks = json_integer_value(json_object_get(man, "recorder_start_ticks"));
	return st0 && !strcmp(st0, "recording") && rpid > 0 && rpid != getpid() &&
	       ada_recorder_alive((pid_t)rpid, rticks > 0 ? (uint64_t)rticks : 0);
}

bool rec_arena_in_dir(const char *arena, const char *adir)
{
	size_t n = adir ? strlen(adir) : 0;
	return n && arena && !strncmp(arena, adir, n) && arena[n] == '/' && arena[n + 1] &&
	       !strchr(arena + n + 1, '/');
}

/* What mkdtemp made for the recorder: a directory of the effective
 * user's, 0700. */
static bool rec_arena_dir_ours(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       (st.st_mode & 07777) == ADA_FS_DIR_MODE;
}

int rec_arena_dir_open(const char *adir, int *dfd)
{
	const char *base = adir ? strrchr(adir, '/') : NULL;
	int pfd = -1, rc;

	*dfd = -1;
	if (!base || strncmp(base + 1, "ada-", 4)) /* named as rec_arena_dir names it */
		return -EPERM;
	rc = ada_fs_walk_parent(adir, 0, &pfd, &base);
	if (rc == 0 && pfd < 0)
		rc = -ENOENT; /* the walk stopped at a missing directory */
	if (rc == 0) {
		rc = ada_fs_open_dir(pfd, base, dfd); /* -ELOOP: a link */
		close(pfd);
	}
	if (rc == 0 && !rec_arena_dir_ours(*dfd)) {
		close(*dfd);
		*dfd = -1;
		rc = -EPERM;
	}
	return rc;
}

bool rec_is_pid_dir(const char *name)
{
	unsigned pid;
	char tail;
	return sscanf(name, "pid_%u%c", &pid, &tail) == 1;
}

/* A sibling pid_* of session whose manifest names the arena directory
 * (one recorder: one directory, one clock): its arena_dir, clock and arch
 * copied into man. 0, -ENOENT, -EBUSY (that sibling's recorder runs). */
static int rec_sibling_arena(const char *session, json_t *man)
{
	DIR *d = ada_fs_opendir(AT_FDCWD, session);
	if (!d)
		return -ENOENT;
	int rc = -ENOENT;
	struct dirent *de;
	for (unsigned i = 0; rc == -ENOENT && i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d));
	     i++) {
		char sub[PATH_MAX];
		json_t *sib = NULL;
		if (ada_fs_entry_kind(dirfd(d), de) != ADA_FS_DIR || !rec_is_pid_dir(de->d_name) ||
		    snprintf(sub, sizeof(sub), "%s/%s", session, de->d_name) >= (int)sizeof(sub) ||
		    ada_manifest_read(sub, &sib) < 0 || !sib)
			continue;
		if (json_is_string(json_object_get(sib, "arena_dir"))) {
			rc = rec_recorder_running(sib) ? -EBUSY : 0;
			static const char *const keys[] = {"arena_dir", "clock", "arch"};
			for (size_t k = 0; rc == 0 && k < sizeof(keys) / sizeof(keys[0]); k++)
				if (!json_object_get(man, keys[k]) && json_object_get(sib, keys[k]))
					json_object_set(man, keys[k],
					                json_object_get(sib, keys[k]));
		}
		json_decref(sib);
	}
	closedir(d);
	return rc;
}

int rec_name_arena(const char *pid_dir, json_t *man)
{
	const char *st = ada_manifest_state(man);
	json_int_t pid = json_integer_value(json_object_get(man, "pid"));
	if (json_object_get(man, "arena") || (st && strcmp(st, "recording")) || pid <= 0)
		return 0;
	char session[PATH_MAX], adir[PATH_MAX], ring[PATH_MAX];
	const char *slash = strrchr(pid_dir, '/');
	if (!realpath(slash ? pid_dir : ".", session))
		return 0;
	if (slash) /* pid_dir resolved: its parent is the session */
		*strrchr(session, '/') = '\0';
	int rc = rec_sibling_arena(session, man);
	if (rc == 0)
		snprintf(adir, sizeof(adir), "%s",
		         json_string_value(json_object_get(man, "arena_dir")));
	else if (rc == -ENOENT &&
	         (rc = ada_orphan_arena_dir("/dev/shm", session, adir, sizeof(adir))) == 0)
		json_object_set_new(man, "arena_dir", json_string(adir));
	if (rc < 0)
		return rc == -EBUSY ? rc : 0;
	struct stat st0;
	if (snprintf(ring, sizeof(ring), "%s/%d.ring", adir, (int)pid) >= (int)sizeof(ring) ||
	    lstat(ring, &st0) != 0 || !S_ISREG(st0.st_mode))
		return 0;
	json_object_set_new(man, "arena", json_string(ring));
	return 1;
}

/* Whether name is <pid>.ring (an arena's final name), into *pid. */
static bool rec_arena_name(const char *name, unsigned *pid)
{
	char tail[8];
	return sscanf(name, "%u%7s", pid, tail) == 2 && !strcmp(tail, ".ring") && *pid > 0;
}

/* Whether adir/name opens as an arena (checked as the drain checks it):
 * an empty file named like one makes no pid_N. */
static bool rec_arena_valid(const char *adir, const char *name)
{
	char path[PATH_MAX];
	struct ada_arena *a = NULL;
	if (snprintf(path, sizeof(path), "%s/%s", adir, name) >= (int)sizeof(path) ||
	    ada_arena_open(path, &a) < 0)
		return false;
	ada_arena_close(a);
	return true;
}

/* At most this many pid_N made for arenas never admitted: the target can
 * fill its directory with names. */
#define REC_UNADMITTED_MAX 4096u
int rec_unadmitted(const char *dir, int (*recover_pid)(const char *pid_dir, void *arg), void *arg)
{
	char session[PATH_MAX], adir[PATH_MAX];
	json_t *probe = json_object();
	if (!realpath(dir, session) || !probe) {
		json_decref(probe);
		return 0;
	}
	int rc = rec_sibling_arena(session, probe);
	if (rc == 0)
		snprintf(adir, sizeof(adir), "%s",
		         json_string_value(json_object_get(probe, "arena_dir")));
	else if (rc == -ENOENT)
		rc = ada_orphan_arena_dir("/dev/shm", session, adir, sizeof(adir));
	json_decref(probe);
	int sfd = -1, afd = -1;
	if (rc == 0) /* the manifest's: only a directory ada could have made */
		rc = rec_arena_dir_open(adir, &afd);
	DIR *d = rc == 0 ? fdopendir(afd) : NULL;
	if (!d && afd >= 0)
		close(afd);
	if (!d || ada_fs_open_dir(AT_FDCWD, session, &sfd) < 0) {
		if (d)
			closedir(d);
		return rc == -EBUSY ? rc : 0;
	}
	struct dirent *de;
	unsigned pid, taken = 0;
	for (unsigned i = 0;
	     i < ADA_FS_WALK_MAX_ENTRIES && taken < REC_UNADMITTED_MAX && (de = readdir(d)); i++) {
		char name[32], sub[PATH_MAX];
		int pfd = -1;
		if (ada_fs_entry_kind(dirfd(d), de) != ADA_FS_REG ||
		    !rec_arena_name(de->d_name, &pid))
			continue;
		snprintf(name, sizeof(name), "pid_%u", pid);
		if (faccessat(sfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT ||
		    !rec_arena_valid(adir, de->d_name) ||
		    ada_fs_mkdir(sfd, name, ADA_FS_EXCL, &pfd) < 0)
			continue;
		close(pfd);
		taken++;
		if (snprintf(sub, sizeof(sub), "%s/%s", session, name) < (int)sizeof(sub))
			recover_pid(sub, arg);
	}
	closedir(d);
	close(sfd);
	return 0;
}

static int rec_pid_cb(const char *pid_dir, void *rep)
{
	return rec_pid(pid_dir, rep);
}

static int rec_session(const char *dir, struct ada_recover_report *rep);

/* Below dir nothing is followed through a link while it is recovered
 * (fs.h, session roots): a thread_K or pid_N swapped for one is refused,
 * never read or written through. */
int ada_wal_recover(const char *dir, struct ada_recover_report *rep)
{
	int added = ada_fs_root_add(dir);
	int rc = rec_session(dir, rep);
	if (added == 1)
		ada_fs_root_remove(dir);
	return rc;
}

static int rec_session(const char *dir, struct ada_recover_report *rep)
{
	void (*notice)(void *, const char *) = rep->notice;
	void *notice_arg = rep->notice_arg;
	memset(rep, 0, sizeof(*rep));
	rep->notice = notice;
	rep->notice_arg = notice_arg;
	const char *base = strrchr(dir, '/');
	base = base ? base + 1 : dir;
	if (rec_is_pid_dir(base))
		return rec_pid(dir, rep);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int busy = 0;
	struct dirent *de;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		enum ada_fs_kind k = ada_fs_entry_kind(dirfd(d), de);
		rep->links_skipped += k == ADA_FS_LINK;
		if (k != ADA_FS_DIR || !rec_is_pid_dir(de->d_name))
			continue;
		char sub[PATH_MAX];
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		int rc = rec_pid(sub, rep);
		if (rc == -EBUSY)
			busy = rc;
	}
	closedir(d);
	if (!busy)
		busy = rec_unadmitted(dir, rec_pid_cb, rep);
	if (busy)
		return busy;
	wal_spares_recover(dir, rep);
	return rep->pids ? 0 : -ENOENT;
}
