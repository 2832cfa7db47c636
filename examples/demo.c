/*
 * The demo program `tools/demo.sh` records: a small "server" that handles
 * requests on two worker threads, parses them recursively and sometimes
 * fails one. Nothing here knows about ada; it is an ordinary program.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define REQUESTS_PER_WORKER 500

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long checksum(const char *s, size_t n)
{
	unsigned long h = 5381;
	for (size_t i = 0; i < n; i++)
		h = h * 33 + (unsigned char)s[i];
	return h;
}

__attribute__((noinline)) static int parse_field(const char *s, int depth)
{
	if (depth == 0 || *s == '\0')
		return 0;
	return 1 + parse_field(s + 1, depth - 1);
}

__attribute__((noinline)) static int validate(int fields)
{
	return fields % 97 != 13;
}

__attribute__((noinline)) static int handle_request(int id)
{
	char req[64];
	snprintf(req, sizeof req, "GET /item/%d?x=%d", id, id * 7);
	int fields = parse_field(req, 8);
	sink += checksum(req, strlen(req));
	return validate(fields + id) ? 200 : 500;
}

__attribute__((noinline)) static void *worker(void *arg)
{
	int base = *(int *)arg, errors = 0;
	for (int i = 0; i < REQUESTS_PER_WORKER; i++)
		errors += handle_request(base + i) != 200;
	*(int *)arg = errors;
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	int args[2] = {0, 100000};
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, &args[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("demo: handled %d requests, %d failed\n", 2 * REQUESTS_PER_WORKER,
	       args[0] + args[1]);
	return 0;
}
