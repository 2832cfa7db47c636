/*
 * tcount: the counting support of the test targets (see tcount.h for the
 * table format). Role: collect every thread's counters when it ends and write
 * one table per process image. Threads: any thread of a target runs
 * tc_thread_begin() and, at its end, tc_thread_end(); the main thread runs
 * tc_init() and the atexit writer. Invariant: records[] only grows, under
 * tc_lock; the table is written at most once per process image.
 */
#include "tcount.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

__thread unsigned long tc_tls[TC_NCOL][TC_MAX_FUNCS] __attribute__((tls_model("initial-exec")));
static __thread const char *tc_label;

struct tc_record {
	const char *label;
	long tid;
	unsigned long counts[TC_NCOL][TC_MAX_FUNCS];
};

static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tc_record tc_records[TC_MAX_THREADS];
static int tc_nrecords;
static const char *const *tc_names;
static int tc_nfuncs;
static const char *tc_program = "?";
static int tc_to_stdout;
/* $ADA_TEST_COUNTS as it was at tc_init(): the program may clear its
 * environment later (t_env). */
static const char *tc_counts_tmpl;
static int tc_done;
static pthread_key_t tc_key;

int tc_is_counts_arg(const char *arg)
{
	return strcmp(arg, "--counts") == 0;
}

/* Moves the calling thread's counters into a record (thread exit). */
static void tc_thread_end(void *label)
{
	pthread_mutex_lock(&tc_lock);
	if (tc_nrecords >= TC_MAX_THREADS) {
		/* A table with threads missing would blame the tracer: stop. */
		fprintf(stderr, "tcount: more than %d threads; raise TC_MAX_THREADS\n",
		        TC_MAX_THREADS);
		abort();
	}
	struct tc_record *r = &tc_records[tc_nrecords++];
	r->label = label;
	r->tid = (long)syscall(SYS_gettid);
	memcpy(r->counts, tc_tls, sizeof(r->counts));
	pthread_mutex_unlock(&tc_lock);
	memset(tc_tls, 0, sizeof(tc_tls));
}

void tc_thread_begin(const char *label)
{
	tc_label = label;
	/* A non-NULL value makes the destructor run at return and pthread_exit. */
	pthread_setspecific(tc_key, label);
}

/* "%p" -> pid, "%n" -> program name; anything else is copied. */
static void tc_expand_path(const char *tmpl, char *out, size_t cap)
{
	size_t o = 0;
	for (const char *p = tmpl; *p && o + 1 < cap; p++) {
		int n = 0;
		if (p[0] == '%' && p[1] == 'p')
			n = snprintf(out + o, cap - o, "%ld", (long)getpid());
		else if (p[0] == '%' && p[1] == 'n')
			n = snprintf(out + o, cap - o, "%s", tc_program);
		else {
			out[o++] = *p;
			continue;
		}
		if (n < 0 || (size_t)n >= cap - o)
			break;
		o += (size_t)n;
		p++;
	}
	out[o] = '\0';
}

static void tc_write_row(FILE *f, const char *prefix, int fn,
                         unsigned long c[TC_NCOL][TC_MAX_FUNCS])
{
	fprintf(f, "%s %s %lu %lu %lu %lu\n", prefix, tc_names[fn], c[TC_CALLS][fn], c[TC_UNW][fn],
	        c[TC_LOSTC][fn], c[TC_EITH][fn]);
}

/* Whether ada's agent is mapped in this process (--no-follow must leave
 * none in a child). */
static int tc_agent_mapped(void)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;
	while (m && !found && fgets(line, sizeof(line), m))
		found = strstr(line, "libada_agent") != NULL;
	if (m)
		fclose(m);
	return found;
}

static void tc_write_table(FILE *f)
{
	static unsigned long total[TC_NCOL][TC_MAX_FUNCS];
	char prefix[96];

	memset(total, 0, sizeof(total));
	fprintf(f, "# ada-test-counts 1 program=%s pid=%ld ppid=%ld agent=%d\n", tc_program,
	        (long)getpid(), (long)getppid(), tc_agent_mapped());
	for (int t = 0; t < tc_nrecords; t++)
		for (int k = 0; k < TC_NCOL; k++)
			for (int fn = 0; fn < tc_nfuncs; fn++)
				total[k][fn] += tc_records[t].counts[k][fn];
	for (int fn = 0; fn < tc_nfuncs; fn++)
		tc_write_row(f, "total", fn, total);
	for (int t = 0; t < tc_nrecords; t++) {
		snprintf(prefix, sizeof(prefix), "thread %s:%ld", tc_records[t].label,
		         tc_records[t].tid);
		for (int fn = 0; fn < tc_nfuncs; fn++)
			tc_write_row(f, prefix, fn, tc_records[t].counts);
	}
}

void tc_report(void)
{
	const char *tmpl = tc_counts_tmpl;
	char path[4096];

	if (tc_done)
		return;
	tc_done = 1;
	/* The reporting thread's own counters become its record. */
	tc_thread_end((void *)(tc_label ? tc_label : "main"));
	if (tc_to_stdout) {
		fflush(stdout);
		tc_write_table(stdout);
		fflush(stdout);
	}
	if (tmpl && *tmpl) {
		tc_expand_path(tmpl, path, sizeof(path));
		FILE *f = fopen(path, "a");
		if (!f) {
			fprintf(stderr, "tcount: cannot write %s\n", path);
			return;
		}
		tc_write_table(f);
		fclose(f);
	}
}

static void tc_atexit(void)
{
	tc_report();
}

void tc_init(int argc, char **argv, const char *program, const char *const *names, int nfuncs)
{
	tc_program = program;
	const char *tmpl = getenv("ADA_TEST_COUNTS");
	tc_counts_tmpl = tmpl ? strdup(tmpl) : NULL;
	tc_names = names;
	tc_nfuncs = nfuncs < TC_MAX_FUNCS ? nfuncs : TC_MAX_FUNCS;
	for (int i = 1; i < argc; i++)
		if (tc_is_counts_arg(argv[i]))
			tc_to_stdout = 1;
	if (pthread_key_create(&tc_key, tc_thread_end) != 0)
		abort();
	atexit(tc_atexit);
}

void tc_set_program(const char *name)
{
	tc_program = name;
}

void tc_reset_after_fork(void)
{
	/* The child has only the forking thread: a thread that held tc_lock
	 * at fork() (ending: its destructor moves its counters) is not here
	 * to release it, and the child's report at exit would wait on it
	 * forever. Nobody else can hold it now: a fresh one. (Not
	 * pthread_atfork: it links __pthread_atfork into the image, which
	 * the e2e harness would see as an untabled function.) */
	static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	memcpy(&tc_lock, &fresh, sizeof(tc_lock));
	tc_nrecords = 0;
	tc_done = 0;
	memset(tc_tls, 0, sizeof(tc_tls));
}
