/*
 * Test target: recursion N deep (issue 14: a million frames). deep() calls
 * itself N - 1 times on a thread with a stack big enough for it (256 MiB,
 * touched only as deep as it goes); every call returns normally. Prints
 * the sum.
 *   t_deep N
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline, used)) unsigned long deep(unsigned long n)
{
	if (n <= 1)
		return 1;
	unsigned long r = deep(n - 1);
	__asm__ volatile("" : "+r"(r)); /* no tail call: a real frame per level */
	return r + 1;
}

static void *deep_thread(void *arg)
{
	return (void *)(uintptr_t)deep((unsigned long)(uintptr_t)arg);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	pthread_attr_t at;
	pthread_t t;
	void *r;
	if (n == 0 || pthread_attr_init(&at) || pthread_attr_setstacksize(&at, 256u << 20) ||
	    pthread_create(&t, &at, deep_thread, (void *)(uintptr_t)n) || pthread_join(t, &r)) {
		fprintf(stderr, "usage: t_deep N (N > 0)\n");
		return 2;
	}
	printf("depth %lu\n", (unsigned long)(uintptr_t)r);
	return 0;
}
