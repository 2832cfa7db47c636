/*
 * tcount: how a test target knows exactly how many times each of its own
 * functions ran, per thread, and prints that table at exit so the
 * integration harness (tests/integration/ada_itest.py) can hold a trace
 * against it.
 *
 * Counting is a macro, not a call, so it adds no function of its own to the
 * trace: TC_ENTER(FN_x) bumps a thread-local counter. Frames that leave
 * without a normal return are declared by the program itself:
 *   TC_UNWOUND(FN_x, n)  n frames of x were unwound (longjmp, C++ throw,
 *                        pthread_exit): the trace must show an EXCEPTION each;
 *   TC_LOST(FN_x, n)     n frames of x never end in this process image (exec,
 *                        crash, abort): EXCEPTION or no end event at all;
 *   TC_EITHER(FN_x, n)   n frames of x may end in RETURN or EXCEPTION (a frame
 *                        that left through a tail call).
 *
 * Threads: each thread calls tc_thread_begin("label") first; a pthread key
 * destructor moves its counters into a per-thread record when it ends
 * (return or pthread_exit). The main thread's record is labelled "main".
 *
 * Output (the table), written at exit, or by tc_report() before a crash:
 *   # ada-test-counts 1 program=<name> pid=<pid> ppid=<parent pid> agent=<0/1>
 *     (agent: whether libada_agent is mapped in the process)
 *   total <function> <calls> <unwound> <lost> <either>
 *   thread <label>:<tid> <function> <calls> <unwound> <lost> <either>
 * to the file named by $ADA_TEST_COUNTS (`%p` becomes the pid and `%n` the
 * program name, so forked and exec'd processes write files of their own), or
 * to stdout when the program got the argument --counts. Without either,
 * nothing is written and the program's output is untouched.
 *
 * Threads touching it: every thread of the target; records are merged under
 * a mutex at thread exit, the table is written once per process image.
 */
#ifndef ADA_TEST_TCOUNT_H
#define ADA_TEST_TCOUNT_H

#ifdef __cplusplus
extern "C" {
#endif

#define TC_MAX_FUNCS 64
#define TC_MAX_THREADS 256

enum tc_col { TC_CALLS = 0, TC_UNW = 1, TC_LOSTC = 2, TC_EITH = 3, TC_NCOL = 4 };

extern __thread unsigned long tc_tls[TC_NCOL][TC_MAX_FUNCS]
    __attribute__((tls_model("initial-exec")));

/* A function that the compiler must neither inline, clone, nor fold. */
#if defined(__clang__)
#define TC_FN __attribute__((noinline, used))
#else
#define TC_FN __attribute__((noinline, noclone, used))
#endif

/* An optimisation barrier inside a counted function's body. */
#define TC_BARRIER() __asm__ volatile("" ::: "memory")

#define TC_ENTER(id)                                                                               \
	do {                                                                                       \
		tc_tls[TC_CALLS][(id)]++;                                                          \
		TC_BARRIER();                                                                      \
	} while (0)
#define TC_UNWOUND(id, n) (tc_tls[TC_UNW][(id)] += (n))
#define TC_LOST(id, n) (tc_tls[TC_LOSTC][(id)] += (n))
#define TC_EITHER(id, n) (tc_tls[TC_EITH][(id)] += (n))
/* Adds calls counted elsewhere (a dlopen'ed library's own counters). */
#define TC_ADD(id, n) (tc_tls[TC_CALLS][(id)] += (n))

/* X-macro helpers: #define FUNCS(X) X(main) X(work) ... */
#define TC_ENUM(name) FN_##name,
#define TC_NAME(name) #name,

/*
 * Registers the program's function names and the atexit writer. Looks for
 * "--counts" in argv (the program must ignore that argument itself).
 */
void tc_init(int argc, char **argv, const char *program, const char *const *names, int nfuncs);
/* Renames the program in the table (a forked child that plays another
 * part); name must outlive the process image. */
void tc_set_program(const char *name);
/* Called first by every thread other than main. */
void tc_thread_begin(const char *label);
/* Writes the table now and not again at exit (before a crash or exec). */
void tc_report(void);
/* In a forked child: forget everything counted before the fork. */
void tc_reset_after_fork(void);
/* True when argv holds "--counts" (for the program's own argument parsing). */
int tc_is_counts_arg(const char *arg);

#ifdef __cplusplus
}
#endif

#endif
