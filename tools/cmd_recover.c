/*
 * ada recover DIR: finalize a session (or one pid_N) whose recorder died.
 * Drains what the leftover shared-memory arenas still hold, rebuilds every
 * index file's header and footer from the events on disk, cuts the
 * preallocated zero tail, and writes the manifests with state "recovered",
 * so that `ada validate DIR` passes. The work is src/recorder's
 * ada_wal_recover(); this file only parses and reports.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "control.h"
#include "recorder.h"

/* Recover's notices: a quarantined thread, an arena it could not read. */
static void recover_notice(void *arg, const char *sentence)
{
	(void)arg;
	ada_log("%s", sentence);
}

/* How long the session's recovery lock is asked for before saying it is
 * busy: another command's orphan scan holds it for a few ms, a killed
 * recorder's writes for tens (a live recorder holds it for its whole
 * life, so that answer comes a second later). */
#define RECOVER_LOCK_WAIT_MS 1000u

/* What was recovered, and what was not: one line each. */
static void recover_print(const struct ada_recover_report *r, const char *dir)
{
	fprintf(stderr,
	        "ada: recovered %u process%s, %u files, %llu events on disk + %llu from %u "
	        "leftover arena%s%s\n",
	        r->pids, r->pids == 1 ? "" : "es", r->files, (unsigned long long)r->events_on_disk,
	        (unsigned long long)r->events_from_arena, r->arenas_found,
	        r->arenas_found == 1 ? "" : "s",
	        r->errors ? " (some files could not be repaired)" : "");
	/* One sentence for all: each process's manifest names its arena. */
	if (r->arenas_gone)
		ada_log("%u process%s not finalized by the recorder had no arena left: what %s "
		        "rings still held is not recovered (each one's manifest names its arena in "
		        "its warnings)",
		        r->arenas_gone, r->arenas_gone == 1 ? "" : "es",
		        r->arenas_gone == 1 ? "its" : "their");
	if (r->links_skipped)
		ada_log("skipped %u symbolic link%s in '%s' (ada never follows or writes through a "
		        "link it did not create)",
		        r->links_skipped, r->links_skipped == 1 ? "" : "s", dir);
	if (r->quarantined)
		ada_log("%u thread%s broke the ring protocol: %llu events counted as corrupt drops "
		        "(see the manifests' \"quarantined\")",
		        r->quarantined, r->quarantined == 1 ? "" : "s",
		        (unsigned long long)r->corrupt_drops);
	if (r->ring_records_rejected || r->events_skipped_by_time)
		ada_log("%u ring record%s of pid_N/.ring_slots (an earlier file's, or not fitting "
		        "their ring) not used; %llu ring events no later than their file's last "
		        "event were taken as already on disk (see the manifests' warnings)",
		        r->ring_records_rejected, r->ring_records_rejected == 1 ? "" : "s",
		        (unsigned long long)r->events_skipped_by_time);
}

int cmd_recover(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: ada recover DIR\n       ada recover --all\n\n"
		       "Finalizes the index files of a session (or pid_N directory) whose\n"
		       "recorder died, with what is on disk and in leftover shared memory.\n"
		       "--all: every session of yours whose recorder died and left shared\n"
		       "memory in /dev/shm (what record, attach, ls and status do as they\n"
		       "start, here also for recordings made with ADA_NO_RECOVER_ORPHANS).\n");
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--all")) {
		int n = cmd_orphans_recover(true);
		if (n == 0)
			ada_log("nothing recovered");
		return n < 0 ? 1 : 0;
	}
	if (argc != 2) {
		ada_log("usage: ada recover DIR | --all");
		return 2;
	}
	struct stat st;
	if (stat(argv[1], &st) < 0 || !S_ISDIR(st.st_mode)) {
		ada_log("'%s' is not a directory", argv[1]);
		return 2;
	}
	if (cmd_root_check_recover(argv[1]) < 0)
		return 2;
	/* The directory named is the user's choice (a link to it is fine);
	 * below it recover follows none. */
	char *real = realpath(argv[1], NULL);
	struct ada_recover_report rep = {.notice = recover_notice};
	int lock = -1,
	    rc = ada_recover_lock_wait(real ? real : argv[1], &lock, RECOVER_LOCK_WAIT_MS);
	if (rc == 0) /* the scan of ada ls & co. may be recovering it too */
		rc = ada_wal_recover(real ? real : argv[1], &rep);
	if (lock >= 0)
		close(lock);
	free(real);
	ada_control_registry_prune(); /* the killed recorder's entries */
	if (rc == -ENOENT) {
		ada_log("'%s' holds no pid_N directories: nothing to recover", argv[1]);
		return 1;
	}
	if (rc == -EBUSY) {
		ada_log("'%s' is still being recorded (its recorder runs), or another ada recover "
		        "is at "
		        "it: nothing to recover there now",
		        argv[1]);
		return 1;
	}
	if (rc < 0) {
		ada_log("cannot recover '%s': %s", argv[1], strerror(-rc));
		return 1;
	}
	recover_print(&rep, argv[1]);
	return rep.errors ? 1 : 0;
}
