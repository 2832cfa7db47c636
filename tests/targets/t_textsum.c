/*
 * Test target of e2e.shared_text (tests/integration/shared_text_test.py):
 * prints, for its own text and libc's, the mapping's path and an FNV-1a
 * hash of its bytes as they are in memory, patches included:
 *     text <name> <hash> <path>
 * Two runs whose patched text is the same bytes print the same hashes,
 * whether the agent patched the text in place or mapped a copy.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

struct xmap {
	unsigned long lo, hi;
	char path[4096];
};
static struct xmap xmaps[256];

/* The executable mappings of /proc/self/maps, in address order. */
static int read_xmaps(void)
{
	char line[4352];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	while (n < 256 && fgets(line, sizeof(line), f)) {
		char perms[5];
		int at = 0;
		if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &xmaps[n].lo, &xmaps[n].hi, perms,
		           &at) < 3 ||
		    perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(xmaps[n].path, sizeof(xmaps[n].path), "%s", line + at);
		n++;
	}
	fclose(f);
	return n;
}

/* The text that holds addr, hashed and printed as name: the executable
 * mapping there with the executable ones adjacent to it (patching a text
 * in place may split its mapping where its pages' private copies end). */
static int print_text(const char *name, uintptr_t addr, int n)
{
	for (int i = 0; i < n; i++) {
		if (addr < xmaps[i].lo || addr >= xmaps[i].hi)
			continue;
		int a = i, b = i;
		while (a > 0 && xmaps[a - 1].hi == xmaps[a].lo)
			a--;
		while (b + 1 < n && xmaps[b + 1].lo == xmaps[b].hi)
			b++;
		const uint8_t *p = (const uint8_t *)xmaps[a].lo;
		printf("text %s %016" PRIx64 " %s\n", name, fnv1a(p, xmaps[b].hi - xmaps[a].lo),
		       xmaps[i].path);
		return 0;
	}
	return -1;
}

int main(void)
{
	int n = read_xmaps();
	int bad = n <= 0 || print_text("self", (uintptr_t)&main, n) ||
	          print_text("libc", (uintptr_t)&getpid, n);
	return bad ? 1 : 0;
}
