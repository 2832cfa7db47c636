/*
 * atf_count: counts the events of every index.atf under a directory, per
 * function_id and kind, for the bench runner's lost-event check. Much
 * faster than `ada dump --format jsonl` on tens of millions of events.
 *
 * Usage: atf_count DIR
 * Output, one line per function_id seen:
 *   F <function_id hex> <calls> <returns> <exceptions>
 * then `T <files> <events> <bytes of the index files>`.
 * Event count per file is taken from the footer (authoritative, errata 1)
 * when the footer magic is there, else from the file length. A compact
 * index file (ATC1, ada's default --index-format) is read through the atf
 * library, which decodes it; its bytes are its size on disk. Single-
 * threaded CLI helper; not part of ada. Bounds-checks every read.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf.h"
#include "atf_format.h"
#include "cidx.h"

struct cnt_entry {
	uint64_t fid;
	uint64_t n[3]; /* call, return, exception */
	int used;
};

static struct cnt_entry *cnt_tab;
static size_t cnt_cap = 1 << 16, cnt_used;
static uint64_t cnt_files, cnt_events, cnt_bytes, cnt_other;

static void cnt_grow(void);

static struct cnt_entry *cnt_find(uint64_t fid)
{
	if (cnt_used * 2 >= cnt_cap)
		cnt_grow();
	size_t i = (size_t)((fid * 0x9e3779b97f4a7c15ull) >> 20) & (cnt_cap - 1);
	while (cnt_tab[i].used && cnt_tab[i].fid != fid)
		i = (i + 1) & (cnt_cap - 1);
	if (!cnt_tab[i].used) {
		cnt_tab[i].used = 1;
		cnt_tab[i].fid = fid;
		cnt_used++;
	}
	return &cnt_tab[i];
}

static void cnt_grow(void)
{
	struct cnt_entry *old = cnt_tab;
	size_t old_cap = cnt_cap;
	cnt_cap *= 2;
	cnt_tab = calloc(cnt_cap, sizeof(*cnt_tab));
	if (!cnt_tab) {
		perror("atf_count");
		exit(1);
	}
	cnt_used = 0;
	for (size_t i = 0; i < old_cap; i++) {
		if (!old[i].used)
			continue;
		struct cnt_entry *e = cnt_find(old[i].fid);
		memcpy(e->n, old[i].n, sizeof(e->n));
	}
	free(old);
}

/* Events in the file: the footer's count when it is valid, else what fits. */
static uint64_t cnt_events_in(const uint8_t *p, size_t len, uint64_t *off)
{
	const struct atf_index_header *h = (const void *)p;
	*off = h->events_offset ? h->events_offset : ATF_HEADER_SIZE;
	if (*off > len)
		return 0;
	uint64_t fit = (len - *off) / ATF_INDEX_EVENT_SIZE;
	uint64_t fo = h->footer_offset;
	if (fo >= *off && fo + ATF_FOOTER_SIZE <= len &&
	    memcmp(p + fo, ATF_INDEX_FOOTER_MAGIC, 4) == 0) {
		const struct atf_index_footer *f = (const void *)(p + fo);
		uint64_t n = f->event_count;
		return n <= fit ? n : fit;
	}
	return fit;
}

static void cnt_event(const struct atf_index_event *e)
{
	uint32_t k = e->event_kind;
	if (k >= 1 && k <= 3)
		cnt_find(e->function_id)->n[k - 1]++;
	else
		cnt_other++;
}

/* A compact file: its events as the library decodes them. */
static void cnt_compact(const char *path, size_t len)
{
	struct ada_atf_index *ix;
	if (ada_atf_index_open(path, ADA_ATF_OPEN_SALVAGE, &ix) < 0)
		return;
	uint64_t n = ada_atf_index_count(ix);
	for (uint64_t i = 0; i < n; i++)
		cnt_event(ada_atf_index_get(ix, i));
	ada_atf_index_free(ix);
	cnt_files++;
	cnt_events += n;
	cnt_bytes += len;
}

static void cnt_file(const char *path, size_t len)
{
	if (len < ATF_HEADER_SIZE)
		return;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	uint8_t *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	if (memcmp(p, ATF_INDEX_MAGIC, 4) == 0) {
		uint64_t off, n = cnt_events_in(p, len, &off);
		const struct atf_index_event *ev = (const void *)(p + off);
		for (uint64_t i = 0; i < n; i++)
			cnt_event(&ev[i]);
		cnt_files++;
		cnt_events += n;
		cnt_bytes += len;
	} else if (memcmp(p, ADA_CIDX_MAGIC, 4) == 0) {
		munmap(p, len);
		cnt_compact(path, len);
		return;
	}
	munmap(p, len);
}

static int cnt_visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	size_t l = strlen(path);
	/* index.atf and the generations before it, index.g<N>.atf */
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (type == FTW_F && !strncmp(base, "index", 5) && l >= 4 && !strcmp(path + l - 4, ".atf"))
		cnt_file(path, (size_t)st->st_size);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: atf_count DIR\n");
		return 2;
	}
	cnt_tab = calloc(cnt_cap, sizeof(*cnt_tab));
	if (!cnt_tab || nftw(argv[1], cnt_visit, 32, FTW_PHYS) != 0) {
		perror("atf_count");
		return 1;
	}
	for (size_t i = 0; i < cnt_cap; i++)
		if (cnt_tab[i].used)
			printf("F %llx %llu %llu %llu\n", (unsigned long long)cnt_tab[i].fid,
			       (unsigned long long)cnt_tab[i].n[0],
			       (unsigned long long)cnt_tab[i].n[1],
			       (unsigned long long)cnt_tab[i].n[2]);
	printf("T %llu %llu %llu %llu\n", (unsigned long long)cnt_files,
	       (unsigned long long)cnt_events, (unsigned long long)cnt_bytes,
	       (unsigned long long)cnt_other);
	return 0;
}
