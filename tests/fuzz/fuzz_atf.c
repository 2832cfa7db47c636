/*
 * libFuzzer target for every parser of src/atf: the index and detail
 * validators and readers, the link checker, the .syms parser and the
 * manifest parser. The first input byte picks the parser; the rest is the
 * file. Built only with clang (-fsanitize=fuzzer,address); see atf.cmake.
 *   ./fuzz_atf -max_total_time=60 CORPUS_DIR
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atf.h"
#include "manifest.h"
#include "symbols.h"

static void fuzz_index(const uint8_t *p, size_t n)
{
	struct ada_atf_report r = {0};
	struct ada_atf_vfile v;
	struct ada_atf_index *ix;

	ada_atf_validate_index_buf("f", p, n, &r, &v);
	for (unsigned fl = 0; fl < 2; fl++) {
		if (ada_atf_index_open_mem(p, n, fl, &ix))
			continue;
		uint64_t b, e, c = ada_atf_index_count(ix);
		ada_atf_index_range(ix, 10, 1000000, &b, &e);
		for (uint64_t i = 0; i < c; i++)
			(void)ada_atf_index_get(ix, i)->timestamp_ns;
		ada_atf_index_free(ix);
	}
}

static void fuzz_detail(const uint8_t *p, size_t n)
{
	struct ada_atf_report r = {0};
	struct ada_atf_vfile v;
	struct ada_atf_detail *d;
	const uint8_t *stack;

	ada_atf_validate_detail_buf("f", p, n, &r, &v);
	for (unsigned fl = 0; fl < 2; fl++) {
		if (ada_atf_detail_open_mem(p, n, fl, &d))
			continue;
		for (uint64_t i = 0; i < ada_atf_detail_count(d); i++) {
			const struct atf_detail_function_payload *f =
			    ada_atf_detail_function(ada_atf_detail_get(d, i), &stack);
			if (f && f->stack_size)
				(void)stack[f->stack_size - 1];
		}
		ada_atf_detail_free(d);
	}
}

/* Links: the input split in two files at a position given by byte 1. */
static void fuzz_links(const uint8_t *p, size_t n)
{
	struct ada_atf_report r = {0};
	size_t cut;

	if (n < 2)
		return;
	cut = (size_t)p[0] * 4 + 64;
	p++;
	n--;
	if (cut > n)
		cut = n;
	/* Copies so ASan sees each file's own end. */
	uint8_t *a = malloc(cut ? cut : 1), *b = malloc(n - cut ? n - cut : 1);
	memcpy(a, p, cut);
	memcpy(b, p + cut, n - cut);
	ada_atf_validate_links_buf("i", a, cut, "d", b, n - cut, &r);
	free(a);
	free(b);
}

static void fuzz_text(const uint8_t *p, size_t n, int which)
{
	if (which == 0) {
		struct ada_syms_module *m;
		if (!ada_syms_parse((const char *)p, n, &m, NULL)) {
			for (uint32_t i = 0; i < 8; i++)
				(void)ada_syms_find(m, i);
			ada_syms_module_free(m);
		}
	} else {
		json_t *doc;
		if (!ada_manifest_parse((const char *)p, n, &doc)) {
			struct ada_manifest_module mm;
			struct ada_manifest_thread mt;
			for (size_t i = 0; i < ada_manifest_module_count(doc); i++)
				ada_manifest_module_get(doc, i, &mm);
			for (size_t i = 0; i < ada_manifest_thread_count(doc); i++)
				ada_manifest_thread_get(doc, i, &mt);
			json_decref(doc);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* Copy: the parsers must stay inside exactly size - 1 bytes. */
	size_t n = size - 1;
	uint8_t *p = malloc(n ? n : 1);
	memcpy(p, data + 1, n);
	switch (data[0] % 5) {
	case 0:
		fuzz_index(p, n);
		break;
	case 1:
		fuzz_detail(p, n);
		break;
	case 2:
		fuzz_links(p, n);
		break;
	case 3:
		fuzz_text(p, n, 0);
		break;
	default:
		fuzz_text(p, n, 1);
		break;
	}
	free(p);
	return 0;
}
