/*
 * Test target for attaching (src/inject, ada attach; issue 10): two
 * threads busy in calls of attach_work() (which calls attach_work_a and
 * attach_work_b) and one blocked in read() on stdin, with
 * SIGUSR1 blocked. Prints "ready" once the threads run. A line "go" on
 * stdin ends it: the busy threads check their sums against a recount (a
 * register an attach failed to restore shows here, or as a crash), the
 * reader checks its signal mask and what read() returned, and the exit
 * status is 42 only when everything held.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static atomic_int stop;
static atomic_int started;
static int failures;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* Three functions in turn: a thread stopped inside one's first bytes at
 * attach leaves that one unhooked (busy_at_attach), so two busy threads
 * leave at least one of the three hooked. */
__attribute__((noinline)) uint64_t attach_work_a(uint64_t k)
{
	__asm__ volatile("" ::: "memory");
	return k * k;
}

__attribute__((noinline)) uint64_t attach_work_b(uint64_t k)
{
	__asm__ volatile("" ::: "memory");
	return k >> 3;
}

__attribute__((noinline)) uint64_t attach_work(uint64_t k)
{
	__asm__ volatile("" ::: "memory");
	return attach_work_a(k) ^ attach_work_b(k);
}

static void say(const char *line, int bad)
{
	pthread_mutex_lock(&out_lock);
	printf("%s\n", line);
	fflush(stdout);
	failures += bad;
	pthread_mutex_unlock(&out_lock);
}

static void *busy(void *arg)
{
	uint64_t n = 0, sum = 0;
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&stop))
		sum += attach_work(n++);
	uint64_t again = 0;
	for (uint64_t k = 0; k < n; k++)
		again += (k * k) ^ (k >> 3);
	char line[64];
	snprintf(line, sizeof(line), "busy %d %s", (int)(intptr_t)arg,
	         again == sum && n > 0 ? "ok" : "WRONG");
	say(line, !(again == sum && n > 0));
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	sigset_t set, now;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_SETMASK, &set, NULL);
	char buf[64] = {0};
	ssize_t n = read(0, buf, sizeof(buf) - 1);
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	int mask_ok = sigismember(&now, SIGUSR1) && !sigismember(&now, SIGUSR2) &&
	              !sigismember(&now, SIGTERM);
	int read_ok = n == 3 && !memcmp(buf, "go\n", 3);
	say(read_ok ? "read go" : "read WRONG", !read_ok);
	say(mask_ok ? "mask ok" : "mask WRONG", !mask_ok);
	atomic_store(&stop, 1);
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	pthread_create(&t[0], NULL, busy, (void *)0);
	pthread_create(&t[1], NULL, busy, (void *)1);
	while (atomic_load(&started) < 2)
		sched_yield();
	pthread_create(&t[2], NULL, reader, NULL);
	say("ready", 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return failures ? 1 : 42;
}
