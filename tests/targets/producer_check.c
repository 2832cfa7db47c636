/*
 * Checker for the pipeline tests: reads a session (or pid_N) directory on
 * its own -- independently of src/atf -- and checks, for every thread file
 * and retention generation (index.g<G>.atf ascending, then index.atf):
 * header/footer/length agree, CRC-32 (zlib) of the events, time range,
 * per-thread timestamps non-decreasing; and that the events of producer
 * thread t ((t << 32) | seq) are consecutive in seq across the files.
 *
 * usage: producer_check DIR exact N         every thread: seq 0..N-1
 *        producer_check DIR counts FILE     every thread: seq 0..c or 0..c+1
 *        producer_check DIR tail N          every thread with events kept: ends
 *                                           at N-1, starts anywhere (older
 *                                           generations retired, a thread that
 *                                           finished early may be all retired)
 *        producer_check DIR prefix N        every thread: seq 0..k-1, k <= N
 *                                           (recording stopped early: disk full)
 *        producer_check DIR serial FILE     producer_kill serial's threads (up
 *                                           to MAXT): thread t seq 0..c-1
 * In every mode a thread_K directory holds one producer thread's events:
 * another's there was attributed to the wrong thread.
 * Prints one line per problem; exit 0 when all is well.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "atf_format.h"

#define MAXT 512 /* producer_kill serial's SERIAL_MAX */

static uint64_t first_seq[MAXT + 1], next_seq[MAXT + 1];
static int seen[MAXT + 1];
static int problems;

#define BAD(...)                                                                                   \
	do {                                                                                       \
		fprintf(stderr, "producer_check: " __VA_ARGS__);                                   \
		fputc('\n', stderr);                                                               \
		problems++;                                                                        \
	} while (0)

static uint64_t dir_thread; /* the producer thread of the directory's events so far */

static void check_events(const char *path, const struct atf_index_event *ev, uint64_t n)
{
	uint64_t last = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t = ev[i].function_id >> 32, seq = ev[i].function_id & 0xffffffffu;
		if (ev[i].timestamp_ns < last)
			BAD("%s: event %llu: time goes back", path, (unsigned long long)i);
		last = ev[i].timestamp_ns;
		/* ada's own marks of a wait for ring space (docs/format.md,
		 * "Wait markers"): not the producer's */
		if (ev[i].function_id == 0 && ev[i].event_kind == ATF_EVENT_EXCEPTION &&
		    (ev[i].call_depth == ADA_WAIT_MARKER_BEGIN ||
		     ev[i].call_depth == ADA_WAIT_MARKER_END))
			continue;
		if (t < 1 || t > MAXT) {
			BAD("%s: event %llu: function_id %llx is not a producer event", path,
			    (unsigned long long)i, (unsigned long long)ev[i].function_id);
			return;
		}
		if (dir_thread && t != dir_thread) {
			BAD("%s: event %llu: producer thread %llu's in thread %llu's directory",
			    path, (unsigned long long)i, (unsigned long long)t,
			    (unsigned long long)dir_thread);
			return;
		}
		dir_thread = t;
		if (!seen[t]) {
			seen[t] = 1;
			first_seq[t] = next_seq[t] = seq;
		}
		if (seq != (next_seq[t] & 0xffffffffu)) {
			BAD("%s: event %llu: thread %llu seq %llu, expected %llu (gap or disorder)",
			    path, (unsigned long long)i, (unsigned long long)t,
			    (unsigned long long)seq, (unsigned long long)next_seq[t]);
			next_seq[t] = seq;
		}
		next_seq[t]++;
	}
}

static void check_file(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < 128) {
		BAD("%s: missing or too short", path);
		if (fd >= 0)
			close(fd);
		return;
	}
	uint8_t *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	const struct atf_index_header *h = (const void *)m;
	const struct atf_index_footer *f = (const void *)(m + st.st_size - 64);
	uint64_t n = ((uint64_t)st.st_size - 128) / 32;
	if (memcmp(h->magic, "ATI2", 4) || memcmp(f->magic, "2ITA", 4))
		BAD("%s: bad magic", path);
	else if ((uint64_t)st.st_size != 128 + n * 32 || f->event_count != n ||
	         h->event_count != (uint32_t)n || h->footer_offset != 64 + n * 32)
		BAD("%s: counts disagree with the length", path);
	else if (f->checksum != (uint32_t)crc32(0, m + 64, (uInt)(n * 32)))
		BAD("%s: CRC mismatch", path);
	else if (n &&
	         (h->time_start_ns != ((const struct atf_index_event *)(m + 64))[0].timestamp_ns ||
	          h->time_end_ns != ((const struct atf_index_event *)(m + 64))[n - 1].timestamp_ns))
		BAD("%s: time range mismatch", path);
	else
		check_events(path, (const void *)(m + 64), n);
	munmap(m, (size_t)st.st_size);
}

static int gen_of(const char *name)
{
	unsigned g;
	if (!strcmp(name, "index.atf"))
		return INT_MAX;
	if (sscanf(name, "index.g%u.atf", &g) == 1)
		return (int)g;
	return -1;
}

static int cmp_gen(const void *a, const void *b)
{
	int x = gen_of(*(char *const *)a), y = gen_of(*(char *const *)b);
	return (x > y) - (x < y);
}

static void check_thread_dir(const char *dir)
{
	DIR *d = opendir(dir);
	char *names[4096];
	int nn = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) && nn < 4096)
		if (gen_of(de->d_name) >= 0)
			names[nn++] = strdup(de->d_name);
	if (d)
		closedir(d);
	qsort(names, (size_t)nn, sizeof(names[0]), cmp_gen);
	dir_thread = 0;
	for (int i = 0; i < nn; i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		check_file(p);
		free(names[i]);
	}
}

static void walk(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d || depth > 4) {
		if (d)
			closedir(d);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (!strncmp(de->d_name, "thread_", 7))
			check_thread_dir(p);
		else
			walk(p, depth + 1);
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr,
		        "usage: producer_check DIR exact N | counts FILE | tail N | serial FILE\n");
		return 2;
	}
	walk(argv[1], 0);
	uint64_t want[MAXT + 1] = {0};
	int mode = !strcmp(argv[2], "exact")    ? 0
	           : !strcmp(argv[2], "counts") ? 1
	           : !strcmp(argv[2], "tail")   ? 2
	           : !strcmp(argv[2], "serial") ? 4
	                                        : 3;
	int nt = mode == 4 ? MAXT : 4;
	if (mode == 1 || mode == 4) {
		int fd = open(argv[3], O_RDONLY);
		static uint64_t c[MAXT];
		size_t want_bytes = (size_t)nt * sizeof(c[0]);
		if (fd < 0 || read(fd, c, want_bytes) != (ssize_t)want_bytes)
			BAD("cannot read %s", argv[3]);
		for (int t = 0; t < nt; t++)
			want[t + 1] = c[t];
		if (fd >= 0)
			close(fd);
	} else {
		for (int t = 1; t <= 4; t++)
			want[t] = strtoull(argv[3], NULL, 10);
	}
	uint64_t total = 0;
	for (int t = 1; t <= nt; t++) {
		uint64_t got = seen[t] ? next_seq[t] : 0;
		uint64_t from = seen[t] ? first_seq[t] : 0;
		total += got - from;
		if (mode != 2 && seen[t] && from != 0)
			BAD("thread %d starts at seq %llu, not 0", t, (unsigned long long)from);
		if ((mode == 0 || mode == 4) && got != want[t])
			BAD("thread %d: %llu events, expected %llu", t, (unsigned long long)got,
			    (unsigned long long)want[t]);
		if (mode == 1 && (got < want[t] || got > want[t] + 1))
			BAD("thread %d: %llu events, but it had published %llu before the kill", t,
			    (unsigned long long)got, (unsigned long long)want[t]);
		if (mode == 3 && got > want[t])
			BAD("thread %d: %llu events, more than the %llu emitted", t,
			    (unsigned long long)got, (unsigned long long)want[t]);
		if (mode == 2 && seen[t] && got != want[t])
			BAD("thread %d: last seq %llu, expected %llu", t, (unsigned long long)got,
			    (unsigned long long)want[t]);
	}
	if (mode == 2 && total == 0)
		BAD("no events kept at all");
	printf("producer_check: %llu events checked, %d problem(s)\n", (unsigned long long)total,
	       problems);
	return problems ? 1 : 0;
}
