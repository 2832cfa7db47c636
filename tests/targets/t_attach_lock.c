/*
 * Test target: ada attach while a thread holds the dynamic loader's lock
 * (issue 10; tests/integration/attach_test.py, case loader_lock).
 *
 *   t_attach_lock LIB
 *
 * A thread dlopens LIB (tests/targets/t_attach_lock_lib.c), whose
 * constructor waits on a pipe: while it waits it holds the loader's lock,
 * and once ada attach has stopped it, the agent's dlopen cannot take it.
 * Prints "ready" once that thread is seen in read() on the pipe (/proc);
 * the main thread then waits on stdin (ada attach makes its calls on it).
 * On "go": writes the byte, joins the loader thread, calls LIB's function
 * and dlopens libm (the loader works), prints "loaded ok", exits 42.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WAIT_ROUNDS 120000 /* 1 ms each: a run-away guard, not a timing */

static const char *lock_lib;
static void *lock_handle;
static _Atomic pid_t lock_tid;

static void *lock_loader(void *arg)
{
	(void)arg;
	atomic_store(&lock_tid, (pid_t)syscall(SYS_gettid));
	lock_handle = dlopen(lock_lib, RTLD_NOW);
	return NULL;
}

/* The loader thread is in read(fd) (/proc/self/task/T/syscall: "0 0xFD ..."). */
static int lock_waiting(int fd)
{
	char path[64], buf[256], want[32];
	pid_t tid = atomic_load(&lock_tid);
	if (!tid)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	snprintf(want, sizeof(want), "0 0x%x ", fd);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return !strncmp(buf, want, strlen(want));
}

int main(int argc, char **argv)
{
	int p[2];
	char fd[16], line[16] = "";
	pthread_t t;
	if (argc != 2 || pipe(p) < 0)
		return 1;
	lock_lib = argv[1];
	snprintf(fd, sizeof(fd), "%d", p[0]);
	setenv("T_LOCK_FD", fd, 1);
	if (pthread_create(&t, NULL, lock_loader, NULL))
		return 1;
	int i = 0;
	while (i < WAIT_ROUNDS && !lock_waiting(p[0])) {
		usleep(1000);
		i++;
	}
	if (i == WAIT_ROUNDS)
		return 1;
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || strcmp(line, "go\n") || write(p[1], "x", 1) != 1)
		return 1;
	pthread_join(t, NULL);
	int (*value)(void) =
	    lock_handle ? (int (*)(void))dlsym(lock_handle, "lock_lib_value") : NULL;
	void *m = dlopen("libm.so.6", RTLD_NOW);
	int ok = value && value() == 42 && m;
	printf("loaded %s\n", ok ? "ok" : "failed");
	return ok ? 42 : 1;
}
