/*
 * Test target for the recording pipeline (tests/integration/pipeline.cmake):
 * links the producer API directly (no agent), emits a known sequence on 4
 * threads: thread t (1..4) emits events whose function_id is
 * (t << 32) | seq, seq = 0, 1, 2, ... with CALL/RETURN alternating, so a
 * checker can see completeness and order from the files alone.
 *
 * usage: producer_kill exact N      each thread emits N events, exits 0
 *        producer_kill kill COUNTS  each thread emits without end; after
 *                                   each event it stores its count in the
 *                                   shared file COUNTS (4 x u64); once every
 *                                   thread passed 200 000 events it creates
 *                                   COUNTS.ready. The driver SIGKILLs it.
 *        producer_kill serial COUNTS  short threads one after another:
 *                                   thread i (0..SERIAL_MAX-1) emits
 *                                   SERIAL_EVENTS events with function_id
 *                                   (i + 1) << 32 | seq, its count in
 *                                   COUNTS (SERIAL_MAX x u64), and ends; the
 *                                   next starts once it is joined, until
 *                                   the recorder (the parent) is gone; then
 *                                   COUNTS.done and a pause until SIGKILL.
 *        producer_kill late COUNTS N  thread 0 emits N events and ends;
 *                                   then COUNTS.phase, and once COUNTS.go
 *                                   exists thread 1 emits LATE_EVENTS, its
 *                                   count in COUNTS (4 x u64), and the
 *                                   program exits 0. The driver stops the
 *                                   recorder before go and continues it
 *                                   once thread 1 filled its ring: that
 *                                   thread waits for ring space, and the
 *                                   drain first sees it after whatever
 *                                   thread 0 did to the disk.
 * The count is stored after the event was published, so after a SIGKILL
 * the files must hold count or count + 1 events of each thread.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring.h"

#define NTHREADS 4
#define READY_AT 200000ull
#define SERIAL_MAX 512u
#define SERIAL_EVENTS 200u     /* within a spill slot's ring (512): never a wait */
#define LATE_EVENTS (1u << 18) /* four default rings (2 MiB, 65 536 events) */

static uint64_t limit;
static _Atomic uint64_t *counts;
static _Atomic uint64_t local_counts[NTHREADS];

static void *worker(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg;
	for (uint64_t seq = 0; limit == 0 || seq < limit; seq++) {
		ada_emit((t + 1) << 32 | (seq & 0xffffffffu),
		         seq & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
		atomic_store_explicit(&counts[t], seq + 1, memory_order_release);
	}
	return NULL;
}

static void *serial_worker(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg;
	for (uint64_t seq = 0; seq < SERIAL_EVENTS; seq++) {
		ada_emit((t + 1) << 32 | seq, seq & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
		atomic_store_explicit(&counts[t], seq + 1, memory_order_release);
	}
	return NULL;
}

/* Threads one at a time while the recorder lives: those started after its
 * death would find no slot freed for them. */
static int serial(const char *path)
{
	pid_t parent = getppid();
	for (uintptr_t i = 0; i < SERIAL_MAX && getppid() == parent; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, serial_worker, (void *)i) != 0)
			return 5;
		pthread_join(th, NULL);
	}
	char done[4096];
	snprintf(done, sizeof(done), "%s.done", path);
	int fd = open(done, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
	for (;;)
		pause();
}

/* Creates PATH.SUFFIX (empty): a sign for the driver. */
static void touch(const char *path, const char *suffix)
{
	char name[4096];
	snprintf(name, sizeof(name), "%s.%s", path, suffix);
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
}

/* Thread 0's N events, then, on the driver's sign, thread 1's
 * LATE_EVENTS (while the recorder lives: a driver gone never signs). */
static int late(const char *path)
{
	pid_t parent = getppid();
	pthread_t th;
	if (pthread_create(&th, NULL, worker, (void *)0) != 0)
		return 5;
	pthread_join(th, NULL);
	touch(path, "phase");
	char go[4096];
	snprintf(go, sizeof(go), "%s.go", path);
	while (access(go, F_OK) != 0) {
		if (getppid() != parent)
			return 6;
		usleep(1000);
	}
	limit = LATE_EVENTS;
	if (pthread_create(&th, NULL, worker, (void *)1) != 0)
		return 5;
	pthread_join(th, NULL);
	return 0;
}

static void wait_ready(const char *path)
{
	for (;;) {
		bool all = true;
		for (int t = 0; t < NTHREADS; t++)
			all &= atomic_load(&counts[t]) >= READY_AT;
		if (all)
			break;
		usleep(1000);
	}
	touch(path, "ready");
}

int main(int argc, char **argv)
{
	bool is_late = argc == 4 && !strcmp(argv[1], "late");
	if ((argc != 3 && !is_late) || (strcmp(argv[1], "exact") && strcmp(argv[1], "kill") &&
	                                strcmp(argv[1], "serial") && !is_late)) {
		fprintf(stderr,
		        "usage: producer_kill exact N | kill COUNTS_FILE | serial COUNTS_FILE "
		        "| late COUNTS_FILE N\n");
		return 2;
	}
	int rc = ada_producer_init_from_env();
	if (rc < 0) {
		fprintf(stderr, "producer_kill: no arena (%s)\n", strerror(-rc));
		return 3;
	}
	/* These runs promise zero drops; a drain starved of CPU for 2 s (the
	 * default lag timeout) on a loaded or sanitized machine would make the
	 * producer drop as if the recorder were dead. The recorder is alive
	 * here, so the timeout is only a guard against a hang. */
	ada_producer_set_drain_timeout_ms(120000);
	counts = local_counts;
	if (!strcmp(argv[1], "exact")) {
		limit = strtoull(argv[2], NULL, 10);
	} else {
		int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, 4096) < 0)
			return 4;
		counts = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (counts == MAP_FAILED)
			return 4;
	}
	if (!strcmp(argv[1], "serial"))
		return serial(argv[2]);
	if (is_late) {
		limit = strtoull(argv[3], NULL, 10);
		return late(argv[2]);
	}
	pthread_t th[NTHREADS];
	for (int t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
	if (limit == 0)
		wait_ready(argv[2]);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	return 0;
}
