/*
 * libFuzzer target for `ada recover`'s arena reader (src/recorder/recover.c):
 * a session whose recorder died -- pid_P/manifest.json naming an arena
 * file, thread_0/index.atf with its header only -- where the arena file is
 * the fuzzer's image (fuzz_arena_image.h). ada_wal_recover() must read it
 * with the ring's checks, in bounded memory (libFuzzer's -rss_limit_mb
 * catches growth), and leave finalized index files.
 * Invariants (abort when broken): recover succeeds; it takes at most one
 * ring's worth per slot from the arena; every index.atf it leaves is
 * exactly header + events + footer.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fuzz_arena_image.h"
#include "manifest.h"
#include "recorder_internal.h"

static char base[64];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void fuzz_cleanup(void)
{
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void fuzz_session(const char *sess, const char *arena)
{
	char pid_dir[256], tdir[300], path[320];
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", sess, FUZZ_ARENA_PID);
	snprintf(tdir, sizeof(tdir), "%s/thread_0", pid_dir);
	mkdir(sess, 0700);
	mkdir(pid_dir, 0700);
	mkdir(tdir, 0700);
	json_t *m = ada_manifest_new(FUZZ_ARENA_PID);
	json_object_set_new(m, "state", json_string("recording"));
	json_object_set_new(m, "arena", json_string(arena));
	json_t *clk = json_object();
	json_object_set_new(clk, "source", json_string("clock_gettime"));
	json_object_set_new(m, "clock", clk);
	ada_manifest_write(pid_dir, m);
	json_decref(m);
	snprintf(path, sizeof(path), "%s/index.atf", tdir);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	struct atf_index_header h;
	wal_fill_header(&h, 1, WAL_ARCH, ATF_CLOCK_BOOTTIME);
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		abort();
	close(fd);
}

/* Every index.atf under dir is header + n x 32 + footer. */
static int check_file(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)f;
	const char *b = strrchr(p, '/');
	if (flag != FTW_F || !b || strncmp(b + 1, "index", 5))
		return 0;
	if (st->st_size < ATF_HEADER_SIZE + ATF_FOOTER_SIZE ||
	    (st->st_size - ATF_HEADER_SIZE - ATF_FOOTER_SIZE) % ATF_INDEX_EVENT_SIZE)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base[0]) {
		/* tmpfs: recover fsyncs what it writes; removed at exit. */
		snprintf(base, sizeof(base), "/dev/shm/fuzz_recover.XXXXXX");
		if (!mkdtemp(base))
			abort();
		atexit(fuzz_cleanup);
	}
	char sess[128], arena[128];
	snprintf(sess, sizeof(sess), "%s/s", base);
	snprintf(arena, sizeof(arena), "%s/%d.ring", base, FUZZ_ARENA_PID);
	nftw(sess, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	int afd = open(arena, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (afd < 0)
		abort();
	int w = fuzz_arena_write(afd, data, size);
	close(afd);
	if (w < 0) {
		unlink(arena);
		return 0;
	}
	fuzz_session(sess, arena);
	struct ada_recover_report rep = {0};
	int rc = ada_wal_recover(sess, &rep);
	if (rc != 0) {
		fprintf(stderr, "fuzz_recover: ada_wal_recover: %s\n", strerror(-rc));
		abort(); /* a damaged arena is normal input, not a failure */
	}
	if (rep.events_from_arena > 4 * 64)
		abort(); /* at most one ring's worth per slot (<= 4 slots of 64) */
	nftw(sess, check_file, 16, FTW_PHYS);
	unlink(arena);
	return 0;
}
