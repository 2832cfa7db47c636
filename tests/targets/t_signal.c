/*
 * Test target: signal handlers that call traced functions.
 *   sync   SIGUSR1 by raise() and kill(getpid()) from inside traced frames
 *          (delivered before those calls return, so the counts are fixed),
 *          and SIGUSR2 on an alternate signal stack (sigaltstack);
 *   async  a second thread sends SIGUSR1 to the main thread 200 times while
 *          it is busy in traced calls, waiting each time until the handler
 *          ran (ping-pong, no timing): the handler lands at arbitrary
 *          instructions, inside hooks too. Counts differ run to run; the
 *          program still knows them exactly. `async N`: N signals (more
 *          land in the index lane's machine-code trampolines, a small
 *          target; by hand: the harness's time grows with the events).
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcount.h"

// clang-format off
#define FUNCS(X)                                                                                   \
	X(main)                                                                                    \
	X(on_usr1) X(on_usr2) X(handler_work) X(busy) X(busy_leaf) X(send_by_raise)                \
	    X(send_by_kill) X(sender) X(install) X(run_sync) X(run_async)
// clang-format on
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

#define ASYNC_SIGNALS 200
static int async_signals = ASYNC_SIGNALS;
static volatile unsigned long sink;
static atomic_int handled;
static pthread_t main_thread;
static int async_mode;
static sem_t handled_sem;

TC_FN static void handler_work(int sig)
{
	TC_ENTER(FN_handler_work);
	sink = (unsigned long)sig;
}

TC_FN static void on_usr1(int sig)
{
	TC_ENTER(FN_on_usr1);
	handler_work(sig);
	/* Pairs with the acquire loads in run_async()/run_sync(). */
	atomic_fetch_add_explicit(&handled, 1, memory_order_release);
	if (async_mode)
		sem_post(&handled_sem); /* async-signal-safe; wakes sender() */
}

TC_FN static void on_usr2(int sig)
{
	TC_ENTER(FN_on_usr2);
	int on_stack_var;
	sink = (unsigned long)&on_stack_var;
	handler_work(sig);
	handler_work(sig + 1);
}

TC_FN static unsigned long busy_leaf(unsigned long x)
{
	TC_ENTER(FN_busy_leaf);
	sink = x;
	return x ^ 0x5a5a;
}

TC_FN static unsigned long busy(unsigned long x)
{
	TC_ENTER(FN_busy);
	return busy_leaf(x) + busy_leaf(x + 1);
}

TC_FN static void send_by_raise(int sig)
{
	TC_ENTER(FN_send_by_raise);
	raise(sig);
}

TC_FN static void send_by_kill(int sig)
{
	TC_ENTER(FN_send_by_kill);
	kill(getpid(), sig);
}

TC_FN static void *sender(void *arg)
{
	TC_ENTER(FN_sender);
	(void)arg;
	tc_thread_begin("sender");
	for (int i = 1; i <= async_signals; i++) {
		pthread_kill(main_thread, SIGUSR1);
		/* Blocks until the handler ran: one signal in flight at a time. */
		while (sem_wait(&handled_sem) != 0)
			;
	}
	return NULL;
}

TC_FN static void install(int sig, void (*fn)(int), int flags)
{
	TC_ENTER(FN_install);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

TC_FN static int run_sync(void)
{
	TC_ENTER(FN_run_sync);
	static char altstack[1 << 16];
	stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack), .ss_flags = 0};

	sigaltstack(&ss, NULL);
	install(SIGUSR2, on_usr2, SA_ONSTACK);
	for (int i = 0; i < 10; i++) {
		busy((unsigned long)i);
		send_by_raise(SIGUSR1);
		send_by_kill(SIGUSR1);
		send_by_raise(SIGUSR2);
	}
	printf("sync: handled %d\n", atomic_load(&handled));
	return 0;
}

TC_FN static int run_async(void)
{
	TC_ENTER(FN_run_async);
	pthread_t t;
	unsigned long i = 0;

	main_thread = pthread_self();
	async_mode = 1;
	sem_init(&handled_sem, 0, 0);
	pthread_create(&t, NULL, sender, NULL);
	/* Pairs with the release in on_usr1(). */
	while (atomic_load_explicit(&handled, memory_order_acquire) < async_signals)
		busy(i++);
	pthread_join(t, NULL);
	printf("async: handled %d\n", atomic_load(&handled));
	return 0;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "signal", fn_names, FN_COUNT);
	install(SIGUSR1, on_usr1, 0);
	if (argc > 1 && !strcmp(argv[1], "async")) {
		if (argc > 2)
			async_signals = atoi(argv[2]) > 0 ? atoi(argv[2]) : ASYNC_SIGNALS;
		return run_async();
	}
	return run_sync();
}
