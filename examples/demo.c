/*
 * The demo program `tools/demo.sh` records: a small item server. Its two
 * worker threads serve requests "GET /item/<id in hex>": parse the request,
 * find the item in a hash table, render it as JSON and checksum the
 * response. Each serves a list of 600 requests, then waits with the main
 * thread until every worker is done (so every thread is still there when
 * one of them crashes). Worker 1's 400th request is bad, GET /item/badc0de,
 * an item that does not exist: find_item() returns NULL, handle_request()
 * forgets to check, and render_item() reads through the NULL pointer. The
 * program dies of SIGSEGV, as a real server with this bug would. Nothing
 * here knows about ada; it is an ordinary program.
 *
 *   ada-demo          worker 1 dies on its 400th request (exit: SIGSEGV)
 *   ada-demo --good   the bad request left out: all 1200 are served
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kept as real, separately hooked functions with their own arguments: no
 * inlining, no clones with other parameters (GCC's IPA-SRA, constprop). */
#if defined(__clang__)
#define DEMO_FN __attribute__((noinline))
#else
#define DEMO_FN __attribute__((noipa))
#endif

#define ITEMS 1024
#define BUCKETS 256
#define REQUESTS_PER_WORKER 600
#define BAD_REQUEST_AT 399 /* worker 1's 400th request */
#define BAD_ITEM 0xbadc0deUL

struct item {
	unsigned long id;
	struct item *next;
	unsigned price_cents;
	char name[28];
};

static struct item items[ITEMS];
static struct item *buckets[BUCKETS];
static volatile unsigned long sink;
static pthread_barrier_t start_line;  /* the workers start together */
static pthread_barrier_t finish_line; /* the workers and main, at the end */

DEMO_FN void add_item(struct item *it, unsigned long id)
{
	it->id = id;
	it->price_cents = (unsigned)(id * 37 % 10000);
	snprintf(it->name, sizeof it->name, "widget-%lx", id);
	it->next = buckets[id % BUCKETS];
	buckets[id % BUCKETS] = it;
}

/* "GET /item/1f3" -> 0x1f3; -1 when the line is not such a request. */
DEMO_FN int parse_request(const char *line, unsigned long *id)
{
	static const char prefix[] = "GET /item/";
	if (strncmp(line, prefix, sizeof prefix - 1) != 0)
		return -1;
	char *end;
	*id = strtoul(line + sizeof prefix - 1, &end, 16);
	return end == line + sizeof prefix - 1 || *end != '\0' ? -1 : 0;
}

/* NULL when no item has this id. */
DEMO_FN struct item *find_item(unsigned long id)
{
	struct item *it = buckets[id % BUCKETS];
	while (it && it->id != id)
		it = it->next;
	return it;
}

/* The JSON of an item into out; its length. The bug's victim: it trusts
 * its caller to pass an item that exists. */
DEMO_FN int render_item(const struct item *it, unsigned long id, char *out, size_t size)
{
	unsigned dollars = it->price_cents / 100, cents = it->price_cents % 100;
	int n = snprintf(out, size, "{\"id\":\"%lx\",\"name\":\"%s\",\"price\":\"%u.%02u\"}", id,
	                 it->name, dollars, cents);
	return n < (int)size ? n : (int)size - 1;
}

DEMO_FN unsigned long checksum(const char *s, size_t n)
{
	unsigned long h = 5381;
	for (size_t i = 0; i < n; i++)
		h = h * 33 + (unsigned char)s[i];
	return h;
}

/* One request: its HTTP status. The bug: a missing item (404) is not
 * checked before render_item(). */
DEMO_FN int handle_request(const char *line)
{
	unsigned long id;
	char body[128];
	if (parse_request(line, &id) != 0)
		return 400;
	struct item *it = find_item(id);
	int n = render_item(it, id, body, sizeof body); /* it may be NULL */
	sink += checksum(body, (size_t)n);
	return 200;
}

struct worker {
	int index;
	int bad; /* worker 1 serves the bad request at BAD_REQUEST_AT */
	int served;
};

DEMO_FN void *worker_main(void *arg)
{
	struct worker *w = arg;
	char line[64];
	pthread_barrier_wait(&start_line);
	for (int i = 0; i < REQUESTS_PER_WORKER; i++) {
		unsigned long id = (unsigned long)(w->index * 311 + i * 7) % ITEMS;
		if (w->bad && w->index == 1 && i == BAD_REQUEST_AT)
			id = BAD_ITEM;
		snprintf(line, sizeof line, "GET /item/%lx", id);
		if (handle_request(line) == 200)
			w->served++;
	}
	pthread_barrier_wait(&finish_line);
	return NULL;
}

int main(int argc, char **argv)
{
	int bad = !(argc > 1 && strcmp(argv[1], "--good") == 0);
	for (unsigned long i = 0; i < ITEMS; i++)
		add_item(&items[i], i);
	printf("ada-demo: item server, %d items, 2 workers x %d requests%s\n", ITEMS,
	       REQUESTS_PER_WORKER, bad ? "; worker 1's 400th is bad: GET /item/badc0de" : "");
	fflush(stdout);
	pthread_t t[2];
	struct worker w[2] = {{0, bad, 0}, {1, bad, 0}};
	pthread_barrier_init(&start_line, NULL, 2);
	pthread_barrier_init(&finish_line, NULL, 3);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	pthread_barrier_wait(&finish_line);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("ada-demo: served %d requests\n", w[0].served + w[1].served);
	return 0;
}
