/*
 * libFuzzer target for the small formats ada reads from places a user or
 * another process can write (issue 35): the first byte chooses the parser
 * (4 and 5 themselves, else its low two bits: the corpus's older inputs
 * keep theirs),
 * the rest is its input.
 *   0  ADA_HOOK_CONFIG, the agent's options from the environment
 *      (ada_hook_config_parse), then its verdicts on a few names
 *   1  a plan cache file (plan_cache_parse) against a key taken from the
 *      input's own head, so the fuzzer can reach the entries; then the
 *      same bytes with the header made that key's and the checksum right
 *      (plan_cache_reseal), so it reaches the plan records; each time the
 *      hit's walk of the records (plan_cache_next_plan) checked against
 *      the parse
 *   2  the TSC slope cache line (ada_tsc_cache_parse)
 *   3  a key-symbol rules file (--key-symbols; ada_keysym_spec_parse_file)
 *   4  a symbol-table cache file (symtab_cache_parse) against a key taken
 *      from the input's head, its checksum made right so the fuzzer
 *      reaches the records
 *   5  the budget's memory of an image (budgetmem_parse) against a table
 *      of the size the input's first byte gives; then the same bytes with
 *      that table's count and hash and a right checksum, so the fuzzer
 *      reaches the indices
 * Seeds: tests/fuzz/corpus/inputs/ (one valid input of each, in this form).
 *   ./fuzz_inputs -max_total_time=60 CORPUS_DIR
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "budgetmem_internal.h"
#include "clock.h"
#include "hook.h"
#include "keysym.h"
#include "plancache_internal.h"
#include "symcache_internal.h"

#define FUZZ_PLAN_FNS_MAX 4096u /* functions of a fuzzed key: small, not the input's word */

static void fuzz_hook_config(const uint8_t *p, size_t n)
{
	static const char *const names[] = {"/usr/lib/libc.so.6", "main", "malloc", "", "*"};
	struct ada_hook_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	if (ada_hook_config_parse((const char *)p, n, &cfg) == 0)
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			(void)ada_hook_config_module_wanted(&cfg, names[i]);
			(void)ada_hook_config_symbol_verdict(&cfg, names[i]);
		}
	ada_hook_config_fini(&cfg);
}

/* The file (p, n) walked record by record as a plan-cache hit walks it
 * (plan_cache_open_buf, plan_cache_next_plan for every entry): whole
 * exactly when the parse accepted it (parsed 0), with the parse's plans
 * (plans), and never past a record that is not one. */
static void fuzz_plan_walk(const uint8_t *p, size_t n, const struct plan_cache_key *key, int parsed,
                           const struct hook_arch_plan *plans)
{
	struct plan_cache_file f;
	struct plan_cache_entry *e = calloc(key->fn_count + 1, sizeof(*e));
	uint8_t *buf = malloc(n ? n : 1);
	if (!e || !buf)
		goto out;
	memcpy(buf, p, n);
	if (plan_cache_open_buf(buf, n, key, e, &f) != 0) {
		if (parsed == 0)
			abort(); /* the head the parse accepted */
		goto out;
	}
	buf = NULL; /* f's */
	for (size_t i = 0; i < key->fn_count; i++) {
		struct hook_arch_plan got;
		bool planned = e[i].status == ADA_HOOK_OK && (e[i].patch_len & PLAN_CACHE_PLAN);
		bool read = plan_cache_next_plan(&f, &e[i], plans[i].fn_addr, &got);
		if ((read && !planned) || (parsed == 0 && read != planned) ||
		    (parsed == 0 && read && memcmp(&got, &plans[i], sizeof(got))))
			abort();
	}
	if (plan_cache_file_whole(&f) != (parsed == 0))
		abort();
	plan_cache_file_free(&f);
out:
	free(buf);
	free(e);
}

/* The key: build-id length (1 byte, at most the maximum) and bytes, the
 * function count (2 bytes), then the file. */
static void fuzz_plan_cache(const uint8_t *p, size_t n)
{
	struct plan_cache_key key;
	memset(&key, 0, sizeof(key));
	if (n < 3)
		return;
	key.build_id_len = p[0] % (ADA_HOOK_BUILD_ID_MAX + 1);
	if (n < 3 + key.build_id_len)
		return;
	memcpy(key.build_id, p + 1, key.build_id_len);
	p += 1 + key.build_id_len, n -= 1 + key.build_id_len;
	key.fn_count = (uint64_t)(p[0] | p[1] << 8) % (FUZZ_PLAN_FNS_MAX + 1);
	struct plan_cache_entry *out = calloc(key.fn_count + 1, sizeof(*out));
	struct hook_arch_plan *plans = calloc(key.fn_count + 1, sizeof(*plans));
	uint8_t *sealed = malloc(n);
	if (out && plans && sealed) {
		int parsed = plan_cache_parse(p + 2, n - 2, &key, out, plans);
		fuzz_plan_walk(p + 2, n - 2, &key, parsed, plans);
		/* The same bytes as a file for this key with a right checksum:
		 * the entries and the plan records are what is fuzzed. */
		memcpy(sealed, p + 2, n - 2);
		plan_cache_reseal(sealed, n - 2, &key);
		parsed = plan_cache_parse(sealed, n - 2, &key, out, plans);
		fuzz_plan_walk(sealed, n - 2, &key, parsed, plans);
	}
	free(sealed);
	free(out);
	free(plans);
}

#define FUZZ_SYMTAB_AGENT_HASH 0x1234u /* the seed's */

/* The key: build-id length (1 byte, at most the maximum) and bytes,
 * flags (1 byte), the file-name hash (8 bytes), then the file. */
static void fuzz_symtab_cache(const uint8_t *p, size_t n)
{
	struct symtab_cache_key key;
	memset(&key, 0, sizeof(key));
	if (n < 1)
		return;
	key.build_id_len = p[0] % (ADA_HOOK_BUILD_ID_MAX + 1);
	if (n < 10 + key.build_id_len)
		return;
	memcpy(key.build_id, p + 1, key.build_id_len);
	p += 1 + key.build_id_len, n -= 1 + key.build_id_len;
	key.flags = p[0];
	memcpy(&key.base_hash, p + 1, 8);
	p += 9, n -= 9;
	key.agent_hash = FUZZ_SYMTAB_AGENT_HASH;
	key.debug_ident = SYMTAB_CACHE_ANY_IDENT;
	uint8_t *b = malloc(n ? n : 1);
	if (!b)
		return;
	memcpy(b, p, n);
	symtab_cache_reseal(b, n);
	struct ada_hook_symtab st;
	if (symtab_cache_parse(b, n, &key, &st, NULL, false) == 0) {
		size_t sum = 0; /* every name is read: each must end inside the pool */
		for (size_t i = 0; i < st.count; i++)
			sum += strlen(ada_hook_fn_name(&st, &st.fns[i]));
		(void)sum;
		ada_hook_symtab_fini(&st);
	}
	/* Adopted, as the agent reads it: the records checked in place. */
	if (symtab_cache_parse(b, n, &key, &st, NULL, true) == 0) {
		size_t sum = 0;
		for (size_t i = 0; i < st.count; i++)
			sum += strlen(ada_hook_fn_name(&st, &st.fns[i]));
		(void)sum;
		ada_hook_symtab_fini(&st); /* frees b */
		return;
	}
	free(b);
}

/* budgetmem_parse's result checked against what it marked: a success
 * marks within the table (mark has one guard byte past it) and no more
 * functions than it says; a refusal marks none. */
static void fuzz_budgetmem_check(const uint8_t *b, size_t n, const struct ada_hook_symtab *st,
                                 uint8_t *mark)
{
	memset(mark, 0, st->count + 1);
	int got = budgetmem_parse(b, n, st, mark);
	size_t marked = 0;
	for (size_t i = 0; i < st->count; i++)
		marked += mark[i];
	if (mark[st->count] || (got < 0 && marked) || (got >= 0 && marked > (size_t)got))
		abort();
}

/* The table: p[0] % 64 functions, each at 0x40 * i, 0x20 + (i & 7)
 * long; then the file. */
static void fuzz_budgetmem(const uint8_t *p, size_t n)
{
	static struct ada_hook_fn fns[64];
	static uint8_t mark[65];
	struct ada_hook_symtab st;
	if (n < 1)
		return;
	memset(&st, 0, sizeof(st));
	st.count = p[0] % 64;
	for (size_t i = 0; i < st.count; i++) {
		fns[i].offset = 0x40 * i;
		fns[i].size = 0x20 + (i & 7);
	}
	st.fns = fns;
	p++, n--;
	fuzz_budgetmem_check(p, n, &st, mark);
	if (n < 32)
		return;
	uint8_t *b = malloc(n);
	if (!b)
		return;
	memcpy(b, p, n);
	/* budgetmem.c's layout: table hash at 8, count at 16, XXH64 last. */
	uint64_t th = budgetmem_table_hash(&st);
	uint32_t cnt = (uint32_t)st.count;
	memcpy(b + 8, &th, 8);
	memcpy(b + 16, &cnt, 4);
	uint64_t sum = XXH64(b, n - 8, 0);
	memcpy(b + n - 8, &sum, 8);
	fuzz_budgetmem_check(b, n, &st, mark);
	free(b);
}

static void fuzz_tsc_cache(const uint8_t *p, size_t n)
{
	uint64_t mult;
	(void)ada_tsc_cache_parse((const char *)p, n, "0b6e3cfa-1b4c-4c55-9a8f-2f6f8d6b7a10",
	                          &mult);
}

static void fuzz_keysym_rules(const uint8_t *p, size_t n)
{
	struct ada_keysym_spec *s;
	char why[256];
	if (ada_keysym_spec_new(&s))
		return;
	(void)ada_keysym_spec_parse_file(s, (const char *)p, n, why, sizeof(why));
	ada_keysym_spec_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] == 4) {
		fuzz_symtab_cache(data + 1, size - 1);
		return 0;
	}
	if (data[0] == 5) {
		fuzz_budgetmem(data + 1, size - 1);
		return 0;
	}
	switch (data[0] & 3) {
	case 0:
		fuzz_hook_config(data + 1, size - 1);
		break;
	case 1:
		fuzz_plan_cache(data + 1, size - 1);
		break;
	case 2:
		fuzz_tsc_cache(data + 1, size - 1);
		break;
	default:
		fuzz_keysym_rules(data + 1, size - 1);
	}
	return 0;
}
