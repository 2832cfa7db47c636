/*
 * Arenas whose recorder died, from the command's side: `ada record`,
 * `ada attach`, `ada ls` and `ada status` recover them as they start
 * (unless ADA_NO_RECOVER_ORPHANS is set or `ada --no-recover-orphans`),
 * and `ada recover --all` does it by hand, manual ones included. The work
 * is src/recorder/orphans.c; this file says one line per directory.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "control.h"
#include "recorder.h"

/* "22:39", or "Nov 28 22:39" when not today. */
static void orphans_when(int64_t started, char *out, size_t cap)
{
	time_t t = (time_t)started, now = time(NULL);
	struct tm tm, today;
	localtime_r(&t, &tm);
	localtime_r(&now, &today);
	bool same = tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday;
	strftime(out, cap, same ? "%H:%M" : "%b %d %H:%M", &tm);
}

/* "; N arena pool files (no events) removed", or "" for none. */
static void orphans_pooled(const struct ada_orphan *o, char *out, size_t cap)
{
	out[0] = '\0';
	if (o->pooled)
		snprintf(out, cap, "; %u arena pool file%s (no events) removed", o->pooled,
		         o->pooled == 1 ? "" : "s");
}

static void orphans_recovered(const struct ada_orphan *o, const char *when)
{
	const struct ada_recover_report *r = o->rep;
	char unread[96] = "", pooled[96], gone[128] = "";
	if (o->unread)
		snprintf(unread, sizeof(unread), "; %u arena%s no manifest named removed unread",
		         o->unread, o->unread == 1 ? "" : "s");
	if (r->arenas_gone)
		snprintf(gone, sizeof(gone),
		         "; the arena of %u process%s was gone (what its rings held is not "
		         "recovered: see the manifests' warnings)",
		         r->arenas_gone, r->arenas_gone == 1 ? "" : "es");
	orphans_pooled(o, pooled, sizeof(pooled));
	ada_log("recovered the recording of %s whose recorder was killed: %s, %u process%s, "
	        "%llu events (%llu from its shared memory)%s%s%s%s",
	        when, o->session_dir, r->pids, r->pids == 1 ? "" : "es",
	        (unsigned long long)r->events_on_disk, (unsigned long long)r->events_from_arena,
	        r->errors ? "; some files could not be repaired" : "", unread, gone, pooled);
}

static void orphans_found(void *arg, const struct ada_orphan *o)
{
	(void)arg;
	char when[32] = "?", pooled[96];
	if (o->started)
		orphans_when(o->started, when, sizeof(when));
	switch (o->outcome) {
	case ADA_ORPHAN_RECOVERED:
		orphans_recovered(o, when);
		break;
	case ADA_ORPHAN_IN_USE:
		ada_log("the recording of %s (%s) lost its recorder, but process %d still maps its "
		        "shared memory %s: left as it is, recovered once that process ends",
		        when, o->session_dir, (int)o->holder, o->arena_dir);
		break;
	case ADA_ORPHAN_NO_SESSION:
		ada_log("left %s, the shared memory of a recording whose recorder died: its "
		        "session %s cannot be written (%s); `rm -r %s` frees it",
		        o->arena_dir, o->session_dir, strerror(o->error), o->arena_dir);
		break;
	case ADA_ORPHAN_FAILED:
		ada_log("could not recover the recording of %s (%s): %s; its shared memory %s is "
		        "left for `ada recover`",
		        when, o->session_dir, strerror(o->error), o->arena_dir);
		break;
	case ADA_ORPHAN_REMOVED:
		orphans_pooled(o, pooled, sizeof(pooled));
		ada_log("removed %s: shared memory of an ada recording that names no session, "
		        "whose processes are all gone (%u arena%s, never read)%s",
		        o->arena_dir, o->unread, o->unread == 1 ? "" : "s", pooled);
		break;
	case ADA_ORPHAN_POOL_SWEPT:
		ada_log("removed %u arena pool file%s (no events) of the recording of %s whose "
		        "recorder was killed (%s, made under ADA_NO_RECOVER_ORPHANS): its arenas "
		        "in %s are left for `ada recover --all`",
		        o->pooled, o->pooled == 1 ? "" : "s", when, o->session_dir, o->arena_dir);
		break;
	default:
		ada_log("left %s: shared memory of an ada recording that names no session (%s); "
		        "`rm -r %s` frees it",
		        o->arena_dir, strerror(o->error), o->arena_dir);
	}
}

static int orphans_check(void *arg, const char *session)
{
	(void)arg;
	return cmd_root_check_recover(session);
}

static void orphans_notice(void *arg, const char *sentence)
{
	(void)arg;
	ada_log("%s", sentence);
}

int cmd_orphans_recover(bool all)
{
	struct ada_orphan_opts o = {
	    .all = all, .found = orphans_found, .check = orphans_check, .notice = orphans_notice};
	unsigned taken = 0;
	int rc = ada_orphans_recover(&o, &taken);
	if (taken)
		ada_control_registry_prune(); /* the killed recorders' entries */
	if (rc < 0 && all)
		ada_log("cannot list /dev/shm: %s", strerror(-rc));
	return rc < 0 ? rc : (int)taken;
}

void cmd_orphans_on_start(void)
{
	if (!ada_orphans_disabled())
		cmd_orphans_recover(false);
}
