/*
 * A forked child's files made by the recorder from the note in its arena
 * (fork_files.h). The note is the target's: every field is checked, the
 * links are made only from pid_<parent>/ under the session, never through
 * a link (linkat without AT_SYMLINK_FOLLOW links a symlink itself, which
 * the inode check then refuses and removes), and only the very files the
 * child noted. Threads: the drain's (wal_fork_files_take), or ada
 * recover's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drain_internal.h"
#include "fork_files.h"
#include "fs.h"
#include "manifest.h"
#include "recorder_internal.h"

/* Above any pid_max Linux allows (as drain_arena.c's WAL_PID_LIMIT). */
#define FF_PID_LIMIT (1l << 22)
/* Module ids an agent gives (agent.c agent_continue_ids bounds them so). */
#define FF_ID_LIMIT (1u << 24)

static const char *const ff_names[WAL_FORK_REFUSE_COUNT] = {"bad_note", "no_parent_dir",
                                                            "not_the_noted_file", "no_pid_dir"};

const char *wal_fork_refusal_name(int k)
{
	return k >= 0 && k < WAL_FORK_REFUSE_COUNT ? ff_names[k] : "?";
}

int wal_fork_note_check(const struct ada_fork_note *n, pid_t pid)
{
	if (n->parent_pid <= 0 || n->parent_pid > FF_PID_LIMIT || n->parent_pid == pid ||
	    n->n_modules > ADA_FORK_MODULES_MAX || n->next_id == 0 || n->next_id >= FF_ID_LIMIT ||
	    n->json_ino == 0)
		return WAL_FORK_BAD_NOTE + 1;
	uint32_t last = 0;
	for (uint32_t i = 0; i < n->n_modules; i++) {
		const struct ada_fork_module *m = &n->mods[i];
		/* Increasing: each id once, every one below next_id. */
		if (m->id <= last || m->id >= n->next_id || m->syms_ino == 0)
			return WAL_FORK_BAD_NOTE + 1;
		last = m->id;
	}
	return 0;
}

/* name linked from src into dst and checked to be the regular file of
 * inode ino, ours: 0; 1 when dst has name already (left alone); -1 when
 * not linked (or linked and removed again: not the noted file). */
static int ff_link(int src, int dst, const char *name, uint64_t ino)
{
	struct stat st;
	if (linkat(src, name, dst, name, 0) != 0)
		return errno == EEXIST ? 1 : -1;
	if (fstatat(dst, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_ino == ino && st.st_uid == geteuid())
		return 0;
	unlinkat(dst, name, 0);
	return -1;
}

/* Module m's .body (shared by content: not checked, as the agent does
 * not: readers check it against its .syms) then its .syms. */
static int ff_link_module(int src, int dst, const struct ada_fork_module *m)
{
	char syms[48], body[48];
	snprintf(syms, sizeof(syms), "module_%" PRIu32 ".syms", m->id);
	snprintf(body, sizeof(body), "module_%" PRIu32 ".body", m->id);
	if (linkat(src, body, dst, body, 0) != 0 && errno != EEXIST)
		return -1;
	return ff_link(src, dst, syms, m->syms_ino);
}

/* Whether id is one of n's modules (increasing: checked); its index. */
static int ff_noted(const struct ada_fork_note *n, json_int_t id)
{
	for (uint32_t i = 0; i < n->n_modules; i++)
		if (n->mods[i].id == id)
			return (int)i;
	return -1;
}

/* The parent's agent.json as written after the fork (its exit, a dlopen:
 * another inode than the one noted) made the child's as it was at the
 * fork: its modules those below the note's next_id, loaded when noted,
 * every noted one listed once; no count-only section (the child had none
 * at the fork). Written as pid_<child>/agent.json with the parent's
 * "pid": its final manifest makes it the child's (agent_inherit.c), as
 * it does the linked one. 0, or -1 when it cannot be so made. */
static int ff_derive_json(int src, int dst, const struct ada_fork_note *n)
{
	int fd = -1;
	struct stat st;
	/* One there already is the child's own (it took its note back):
	 * never written over. */
	if (fstatat(dst, "agent.json", &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	if (ada_fs_open_file(src, "agent.json", O_RDONLY, &fd) != 0)
		return -1;
	json_t *a = ada_json_loadfd(fd, ADA_AGENT_JSON_MAX), *m, *keep = json_array();
	close(fd);
	bool seen[ADA_FORK_MODULES_MAX] = {false};
	uint32_t found = 0;
	size_t i;
	json_array_foreach(json_object_get(a, "modules"), i, m)
	{
		json_t *id = json_object_get(m, "module_id");
		if (!json_is_object(m) || !json_is_integer(id) || json_integer_value(id) <= 0 ||
		    json_integer_value(id) >= n->next_id)
			continue;
		int k = ff_noted(n, json_integer_value(id));
		if (k >= 0 && seen[k]) /* listed twice: not an agent's */
			found = UINT32_MAX;
		else if (k >= 0 && found != UINT32_MAX) {
			seen[k] = true;
			found++;
		}
		json_object_set_new(m, "unloaded", json_boolean(k < 0));
		json_array_append(keep, m);
	}
	int rc = -1;
	if (json_is_object(a) && found == n->n_modules) {
		json_object_set(a, "modules", keep);
		json_object_del(a, "count_only");
		json_object_set_new(a, "fork_files", json_string(WAL_FORK_DERIVED));
		rc = ada_json_writeat(dst, "agent.json", a, false) == 0 ? 0 : -1;
	}
	json_decref(keep);
	json_decref(a);
	return rc;
}

int wal_fork_files_make(int session_fd, int parent_fd, int pid_dir_fd, pid_t pid,
                        const struct ada_fork_note *n)
{
	int bad = wal_fork_note_check(n, pid);
	if (bad)
		return bad;
	if (pid_dir_fd < 0)
		return WAL_FORK_NO_DIR + 1;
	int src = parent_fd;
	if (src < 0) {
		char name[32];
		snprintf(name, sizeof(name), "pid_%d", (int)n->parent_pid);
		if (session_fd < 0 || ada_fs_open_dir(session_fd, name, &src) != 0)
			return WAL_FORK_NO_PARENT + 1;
	}
	int rc = 0;
	for (uint32_t i = 0; !rc && i < n->n_modules; i++)
		if (ff_link_module(src, pid_dir_fd, &n->mods[i]) < 0)
			rc = WAL_FORK_NOT_NOTED + 1;
	/* agent.json last: a reader that finds it finds the modules it names. */
	if (!rc && ff_link(src, pid_dir_fd, "agent.json", n->json_ino) < 0 &&
	    ff_derive_json(src, pid_dir_fd, n) < 0)
		rc = WAL_FORK_NOT_NOTED + 1;
	if (src != parent_fd)
		close(src);
	return rc;
}

/* The refusal k of p's note: counted, told once per reason (then in p's
 * warnings only). */
static void ff_refused(struct ada_recorder *r, struct wal_proc *p, int k, pid_t parent)
{
	char msg[256];
	snprintf(msg, sizeof(msg),
	         "pid %d: its note of the files it shares with process %d was refused (%s): "
	         "its events in those modules are not named",
	         (int)p->pid, (int)parent, wal_fork_refusal_name(k));
	if (r->fork_refused[k]++ == 0)
		wal_note(r, p, "%s", msg);
	else
		json_array_append_new(p->warnings, json_string(msg));
}

void wal_fork_files_take(struct ada_recorder *r, struct wal_proc *p)
{
	if (p->fork_seen || !p->arena)
		return;
	uint32_t st = ada_arena_fork_state(p->arena);
	if (st == ADA_FORK_NONE)
		return; /* not noted (yet): looked at again next pass */
	p->fork_seen = true;
	if (st != ADA_FORK_NOTED)
		return; /* settled by the child (or a value of its own: nothing to make) */
	struct ada_fork_note n;
	ada_arena_fork_note_read(p->arena, &n);
	/* The parent's directory open already, when it is a process of ours. */
	struct wal_proc *pp =
	    n.parent_pid > 0 && n.parent_pid != p->pid ? drain_find(r, n.parent_pid) : NULL;
	int rc = wal_fork_files_make(r->session_fd, pp && pp->dir_fd >= 0 ? pp->dir_fd : -1,
	                             p->dir_fd, p->pid, &n);
	if (!rc) {
		/* Counted when ours: a child that took its note back meanwhile
		 * made them itself (the links are the same). */
		if (ada_arena_fork_settle(p->arena, ADA_FORK_MADE) == ADA_FORK_NOTED)
			r->fork_made++;
		return;
	}
	/* Refused: a child still running writes its own (agent.c). */
	if (ada_arena_fork_settle(p->arena, ADA_FORK_REFUSED) == ADA_FORK_NOTED)
		ff_refused(r, p, rc - 1, n.parent_pid);
}

/* The session directory of pid_dir (its parent), opened; -1 if not. */
static int ff_session_of(const char *pid_dir)
{
	char sess[PATH_MAX];
	const char *slash = strrchr(pid_dir, '/');
	size_t len = slash ? (size_t)(slash - pid_dir) : 0;
	int sfd = -1;
	if (!len || len >= sizeof(sess))
		return -1;
	memcpy(sess, pid_dir, len);
	sess[len] = '\0';
	return ada_fs_open_dir(AT_FDCWD, sess, &sfd) == 0 ? sfd : -1;
}

bool wal_fork_files_recover(struct ada_arena *a, int dfd, const char *pid_dir, pid_t pid,
                            struct ada_fork_exit *fx, char *msg, size_t cap)
{
	msg[0] = '\0';
	if (ada_arena_fork_state(a) == ADA_FORK_NOTED) {
		struct ada_fork_note n;
		ada_arena_fork_note_read(a, &n);
		int sfd = ff_session_of(pid_dir);
		int rc = wal_fork_files_make(sfd, -1, dfd, pid, &n);
		if (sfd >= 0)
			close(sfd);
		if (rc)
			snprintf(
			    msg, cap,
			    "its note of the files it shares with process %d was refused (%s): its "
			    "events in those modules are not named",
			    (int)n.parent_pid, wal_fork_refusal_name(rc - 1));
		else
			ada_arena_fork_settle(a, ADA_FORK_MADE);
	}
	return ada_arena_fork_exit_read(a, fx);
}

/* o[key] = v when o is an object (the agent.json is the target's). */
static void ff_set(json_t *o, const char *key, uint64_t v)
{
	if (json_is_object(o))
		json_object_set_new(o, key,
		                    json_integer((json_int_t)(v > INT64_MAX ? INT64_MAX : v)));
}

void wal_fork_exit_fold(json_t *a, const struct ada_fork_exit *e)
{
	const uint64_t *u = e->untraced;
	json_t *un = json_object_get(a, "untraced_calls");
	static const char *const un_keys[] = {"agent_work", "shadow_full", "nested_signal",
	                                      "unmatched_return"};
	for (int i = 0; i < 4; i++)
		ff_set(un, un_keys[i], u[i]);
	ff_set(un, "thread_exit", u[8]);
	ff_set(un, "recorder_gone", u[9]);
	json_t *ur = json_object_get(a, "unmatched_returns");
	ff_set(ur, "returns", u[4]);
	ff_set(ur, "threads_stopped", u[5]);
	json_t *ss = json_object_get(a, "stack_switches");
	ff_set(ss, "switches", u[6]);
	ff_set(ss, "frames_cut", u[7]);
	json_t *rg = json_object_get(a, "recorder_gone");
	if (json_is_object(rg))
		json_object_set_new(rg, "noticed", json_boolean(e->gone_noticed != 0));
	ff_set(rg, "drain_lag_drops", e->gone_drops);
	json_object_set_new(a, "hot_functions", json_array()); /* it listed none (agent.c) */
	json_object_set_new(a, "exit_counts", json_string("arena"));
}

json_t *wal_fork_counts_json(const struct ada_recorder *r)
{
	json_t *refused = json_object();
	for (int k = 0; k < WAL_FORK_REFUSE_COUNT; k++)
		json_object_set_new(refused, ff_names[k],
		                    json_integer((json_int_t)r->fork_refused[k]));
	return json_pack("{s:I, s:o}", "made", (json_int_t)r->fork_made, "refused", refused);
}
