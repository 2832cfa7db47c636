/*
 * atf_to_cidx IN OUT [BLOCK_SIZE]: rewrites an ATF v2 index file as a
 * compact index (src/atf/cidx.h), links included, for the tests that run
 * `ada validate/dump/report` on compact sessions (test_atf_cidx_cli.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf.h"
#include "cidx.h"

int main(int argc, char **argv)
{
	struct ada_atf_index *ix;
	struct ada_cidx_enc *e;
	uint8_t *img;
	size_t len;

	if (argc < 3 || ada_atf_index_open(argv[1], 0, &ix)) {
		fprintf(stderr,
		        "usage: atf_to_cidx IN OUT [BLOCK_SIZE] (IN: a valid ATF v2 index)\n");
		return 2;
	}
	const struct atf_index_header *h = ada_atf_index_header(ix);
	struct ada_atf_file_info info = {h->thread_id, h->arch, h->os, h->clock_type,
	                                 h->flags & ATF_INDEX_FLAG_HAS_DETAIL};
	uint64_t n = ada_atf_index_count(ix);
	const struct atf_index_event *ev = n ? ada_atf_index_get(ix, 0) : NULL;
	if (ada_cidx_enc_new(argc > 3 ? (uint32_t)atoi(argv[3]) : 0, &e) ||
	    ada_cidx_write_mem(e, &info, ev, n, NULL, NULL, 0, &img, &len))
		return 1;
	FILE *f = fopen(argv[2], "wb");
	if (!f || fwrite(img, 1, len, f) != len || fclose(f))
		return 1;
	printf("%s: %llu events, %zu bytes (ATF v2: %llu)\n", argv[2], (unsigned long long)n, len,
	       (unsigned long long)(128 + 32 * n));
	free(img);
	ada_cidx_enc_free(e);
	ada_atf_index_free(ix);
	return 0;
}
