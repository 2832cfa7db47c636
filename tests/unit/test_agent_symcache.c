/*
 * The symbol-table cache file (src/hook/symcache.c): round trip, a flipped
 * byte anywhere refused, truncated files, another key, records a symbol
 * table could not hold (a name outside the pool, the order broken, an
 * alias left to hook, a function to hook outside the executable ranges,
 * reserved set, a range that ends before it starts), and the real read of this test's own image
 * through the cache (a miss that stores, then a hit with the same table).
 * A .dynsym table (a stripped copy of this test, with .eh_frame's
 * functions): stored and hit while no debug file is where the read looks,
 * refused and read afresh once one appears (by build-id under the debug
 * root, or by its .gnu_debuglink name next to it), a debuglink name that
 * is a path or on a .symtab table refused, another file name a miss;
 * a planted link or a broken file as the cache file refused, never used.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "hook_arch.h"
#include "hook_mem.h"
#include "symcache_internal.h"

static void make_key(struct symtab_cache_key *k)
{
	memset(k, 0, sizeof(*k));
	for (uint32_t i = 0; i < 20; i++)
		k->build_id[i] = (uint8_t)(0xa0 + i);
	k->build_id_len = 20;
	k->agent_hash = 0x1234;
	k->root_hash = 0;
	k->debug_ident = 0;
}

/* main (hooked), an alias of it, helper (ifunc), outside (outside_text). */
static void make_table(struct ada_hook_symtab *st)
{
	static const char names[] = "main\0_main\0helper\0outside";
	memset(st, 0, sizeof(*st));
	st->names_len = sizeof(names);
	st->names = malloc(st->names_len);
	memcpy(st->names, names, st->names_len);
	st->count = 4;
	st->fns = calloc(st->count, sizeof(*st->fns));
	st->fns[0] = (struct ada_hook_fn){
	    .offset = 0x1000, .size = 0x40, .name_off = 0, .status = ADA_HOOK_OK, .is_global = 1};
	st->fns[1] = (struct ada_hook_fn){
	    .offset = 0x1000, .size = 0x40, .name_off = 5, .status = ADA_SKIP_ALIAS};
	st->fns[2] = (struct ada_hook_fn){.offset = 0x1100,
	                                  .size = 0x10,
	                                  .name_off = 11,
	                                  .status = ADA_SKIP_IFUNC,
	                                  .is_ifunc = 1};
	st->fns[3] = (struct ada_hook_fn){
	    .offset = 0x9000, .size = 0x10, .name_off = 18, .status = ADA_SKIP_OUTSIDE_TEXT};
	st->source = ADA_SYMSRC_DEBUGLINK;
	for (uint32_t i = 0; i < 20; i++)
		st->build_id[i] = (uint8_t)(0xa0 + i);
	st->build_id_len = 20;
	st->entry = 0x1100;
	st->xr[0] = (struct ada_hook_xrange){0x1000, 0x2000};
	st->xr_count = 1;
}

static uint8_t *encoded(size_t *len)
{
	struct symtab_cache_key k;
	struct ada_hook_symtab st;
	make_key(&k);
	make_table(&st);
	uint8_t *b = NULL;
	assert_int_equal(symtab_cache_encode(&k, &st, &b, len), 0);
	ada_hook_symtab_fini(&st);
	return b;
}

static void test_round_trip(void **state)
{
	(void)state;
	struct symtab_cache_key k;
	struct ada_hook_symtab st, got;
	make_key(&k);
	make_table(&st);
	size_t len;
	uint8_t *b = encoded(&len);
	uint64_t ident = 7;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, &ident, false), 0);
	assert_int_equal(ident, 0);
	assert_int_equal(got.count, st.count);
	assert_int_equal(got.names_len, st.names_len);
	assert_memory_equal(got.fns, st.fns, st.count * sizeof(*st.fns));
	assert_memory_equal(got.names, st.names, st.names_len);
	assert_int_equal(got.source, st.source);
	assert_int_equal(got.entry, st.entry);
	assert_int_equal(got.xr_count, 1);
	assert_int_equal(got.xr[0].hi, 0x2000);
	assert_string_equal(ada_hook_fn_name(&got, &got.fns[2]), "helper");
	ada_hook_symtab_fini(&got);
	/* Adopted: the buffer is the name pool, and its records, 8-aligned
	 * after the names, the function array (no copy). */
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, true), 0);
	assert_ptr_equal(got.names, b);
	assert_true(got.fns_in_names);
	assert_true((uint8_t *)got.fns > b && (uint8_t *)got.fns < b + len);
	assert_int_equal(((uintptr_t)got.fns) % 8, 0);
	assert_memory_equal(got.fns, st.fns, st.count * sizeof(*st.fns));
	ada_hook_symtab_fini(&got); /* frees b */
	/* The zeros between the names (26 bytes) and the records are zeros. */
	b = encoded(&len);
	b[st.names_len] = 1;
	symtab_cache_reseal(b, len);
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, true), -EBADMSG);
	free(b);
	ada_hook_symtab_fini(&st);
}

static void test_flipped_byte(void **state)
{
	(void)state;
	struct symtab_cache_key k;
	struct ada_hook_symtab got;
	make_key(&k);
	size_t len;
	uint8_t *b = encoded(&len);
	for (size_t i = 0; i < len; i++) {
		b[i] ^= 0x10;
		int rc = symtab_cache_parse(b, len, &k, &got, NULL, false);
		/* Only the header's key fields can give -ESTALE, and only with a
		 * checksum that still holds: never here. */
		assert_int_equal(rc, -EBADMSG);
		b[i] ^= 0x10;
	}
	free(b);
}

static void test_truncated(void **state)
{
	(void)state;
	struct symtab_cache_key k;
	struct ada_hook_symtab got;
	make_key(&k);
	size_t len;
	uint8_t *b = encoded(&len);
	for (size_t n = 0; n < len; n++)
		assert_int_equal(symtab_cache_parse(b, n, &k, &got, NULL, false), -EBADMSG);
	free(b);
}

static void test_other_key(void **state)
{
	(void)state;
	struct symtab_cache_key k;
	struct ada_hook_symtab got;
	size_t len;
	uint8_t *b = encoded(&len);
	make_key(&k);
	k.build_id[3] ^= 1;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	make_key(&k);
	k.agent_hash++;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	make_key(&k);
	k.flags = 1;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	make_key(&k);
	k.root_hash = 5;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	make_key(&k);
	k.debug_ident = 9; /* a debug file it was not read from */
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	k.debug_ident = SYMTAB_CACHE_ANY_IDENT;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), 0);
	ada_hook_symtab_fini(&got);
	free(b);
}

/* symtab_cache_parse of (b, len), and again adopting a copy (the records
 * checked in place): the same answer both ways. */
static int parse_both(const uint8_t *b, size_t len, const struct symtab_cache_key *k)
{
	struct ada_hook_symtab got;
	int rc = symtab_cache_parse((uint8_t *)b, len, k, &got, NULL, false);
	if (rc == 0)
		ada_hook_symtab_fini(&got);
	uint8_t *c = malloc(len);
	assert_non_null(c);
	memcpy(c, b, len);
	int rc2 = symtab_cache_parse(c, len, k, &got, NULL, true);
	assert_int_equal(rc2, rc);
	if (rc2 == 0)
		ada_hook_symtab_fini(&got); /* frees c */
	else
		free(c);
	return rc;
}

/* Encodes st (changed by the caller after make_table) and parses it. */
static int parse_changed(void (*change)(struct ada_hook_symtab *))
{
	struct symtab_cache_key k;
	struct ada_hook_symtab st;
	make_key(&k);
	make_table(&st);
	change(&st);
	uint8_t *b = NULL;
	size_t len;
	int rc = symtab_cache_encode(&k, &st, &b, &len);
	if (rc == 0)
		rc = parse_both(b, len, &k);
	free(b);
	ada_hook_symtab_fini(&st);
	return rc;
}

/* Encodes make_table's table, changes the file's bytes (the checksum
 * made right again, as a hostile writer would) and parses it. The pool
 * is make_table's, in function order: NAMES_LEN bytes. */
#define NAMES_LEN 26u
#define RECS_AT 32u /* the names and zeros to a multiple of 8 */

static int parse_bytes(void (*change)(uint8_t *b))
{
	struct symtab_cache_key k;
	size_t len;
	make_key(&k);
	uint8_t *b = encoded(&len);
	change(b);
	symtab_cache_reseal(b, len);
	int rc = parse_both(b, len, &k);
	free(b);
	return rc;
}

static void name_outside(uint8_t *b)
{
	uint32_t off = NAMES_LEN; /* record 2's name_off */
	memcpy(b + RECS_AT + 2 * 24 + 16, &off, 4);
}
static void pool_unterminated(uint8_t *b)
{
	b[NAMES_LEN - 1] = 'x';
}
static void unsorted(struct ada_hook_symtab *st)
{
	st->fns[2].offset = 0x800;
}
static void alias_hooked(struct ada_hook_symtab *st)
{
	st->fns[1].status = ADA_HOOK_OK;
}
static void hooked_outside(struct ada_hook_symtab *st)
{
	st->fns[3].status = ADA_HOOK_OK;
}
static void hooked_past_end(struct ada_hook_symtab *st)
{
	st->fns[0].size = 0x1001; /* 0x1000 + 0x1001 > 0x2000 */
}
static void reserved_set(struct ada_hook_symtab *st)
{
	st->fns[0].reserved = 1;
}
static void bad_status(struct ada_hook_symtab *st)
{
	st->fns[2].status = ADA_SKIP_REASON_COUNT;
}
static void range_reversed(struct ada_hook_symtab *st)
{
	st->xr[0] = (struct ada_hook_xrange){0x2000, 0x1000};
	st->fns[0].status = ADA_SKIP_OUTSIDE_TEXT; /* no function relies on it */
}
static void dynsym_source(struct ada_hook_symtab *st)
{
	st->source = ADA_SYMSRC_DYNSYM;
}
static void ehframe_without_fdes(struct ada_hook_symtab *st)
{
	st->source = ADA_SYMSRC_EHFRAME; /* n_fde 0: no .eh_frame function */
}
static void fdes_on_symtab(struct ada_hook_symtab *st)
{
	st->n_fde = 1; /* a .symtab table has no .eh_frame functions */
}
static void link_on_symtab(struct ada_hook_symtab *st)
{
	strcpy(st->debuglink, "x.debug"); /* only a .dynsym read records one */
}
static void link_is_path(struct ada_hook_symtab *st)
{
	st->source = ADA_SYMSRC_DYNSYM;
	strcpy(st->debuglink, "../x.debug");
}

static void test_bad_records(void **state)
{
	(void)state;
	assert_int_equal(parse_bytes(name_outside), -EBADMSG);
	assert_int_equal(parse_changed(unsorted), -EBADMSG);
	assert_int_equal(parse_changed(alias_hooked), -EBADMSG);
	assert_int_equal(parse_changed(hooked_outside), -EBADMSG);
	assert_int_equal(parse_changed(hooked_past_end), -EBADMSG);
	assert_int_equal(parse_changed(reserved_set), -EBADMSG);
	assert_int_equal(parse_changed(bad_status), -EBADMSG);
	assert_int_equal(parse_bytes(pool_unterminated), -EBADMSG);
	assert_int_equal(parse_changed(range_reversed), -EBADMSG);
	/* A .dynsym table is one the cache holds (symtab_cache_read checks
	 * that no debug file appeared); its shape must be one a read makes. */
	assert_int_equal(parse_changed(dynsym_source), 0);
	assert_int_equal(parse_changed(ehframe_without_fdes), -EBADMSG);
	assert_int_equal(parse_changed(fdes_on_symtab), -EBADMSG);
	assert_int_equal(parse_changed(link_on_symtab), -EBADMSG);
	assert_int_equal(parse_changed(link_is_path), -EBADMSG);
}

/* A .dynsym table is the image's own, named after its file: another
 * file name (another base_hash) is another key. */
static void test_dynsym_other_name(void **state)
{
	(void)state;
	struct symtab_cache_key k;
	struct ada_hook_symtab st, got;
	make_key(&k);
	k.base_hash = 0x51;
	make_table(&st);
	st.source = ADA_SYMSRC_DYNSYM;
	uint8_t *b = NULL;
	size_t len;
	assert_int_equal(symtab_cache_encode(&k, &st, &b, &len), 0);
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), 0);
	ada_hook_symtab_fini(&got);
	k.base_hash = 0x52;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	free(b);
	ada_hook_symtab_fini(&st);
}

/* got is the table want is, function by function and name by name; a
 * table from the cache has its names in function order. */
static void assert_same_table(const struct ada_hook_symtab *got, const struct ada_hook_symtab *want,
                              bool from_cache)
{
	assert_int_equal(got->count, want->count);
	for (size_t i = 0; i < want->count; i++) {
		const struct ada_hook_fn *g = &got->fns[i], *w = &want->fns[i];
		assert_int_equal(g->offset, w->offset);
		assert_int_equal(g->size, w->size);
		assert_int_equal(g->status, w->status);
		assert_int_equal(g->is_ifunc, w->is_ifunc);
		assert_int_equal(g->is_global, w->is_global);
		assert_int_equal(g->reserved, w->reserved);
		assert_string_equal(ada_hook_fn_name(got, g), ada_hook_fn_name(want, w));
		if (i && from_cache)
			assert_true(g->name_off >= got->fns[i - 1].name_off);
	}
}

/* The one cache file in dir (there is one image in it). */
static void cache_file(const char *dir, char *out, size_t cap)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "ls %s/*.symtab", dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, (int)cap, p));
	pclose(p);
	out[strcspn(out, "\n")] = '\0';
}

/* second, a hit of image read through the cache in dir, is in private
 * memory: the cache file rewritten in place and truncated afterwards
 * changes nothing of it, and is refused by the next read. */
static void clobber_expect(const char *dir, const char *image, struct symtab_cache_key *k,
                           const struct ada_hook_symtab *second,
                           const struct ada_hook_symtab *direct)
{
	char file[PATH_MAX];
	bool hit = true, refused = false;
	cache_file(dir, file, sizeof(file));
	struct stat sb;
	assert_int_equal(stat(file, &sb), 0);
	int fd = open(file, O_WRONLY);
	assert_true(fd >= 0);
	char junk[4096];
	memset(junk, 0x5a, sizeof(junk));
	for (off_t at = 0; at < sb.st_size; at += (off_t)sizeof(junk))
		assert_int_equal(pwrite(fd, junk, sizeof(junk), at), (ssize_t)sizeof(junk));
	assert_int_equal(ftruncate(fd, 0), 0);
	close(fd);
	assert_same_table(second, direct, true);
	struct ada_hook_symtab third;
	assert_int_equal(symtab_cache_read(dir, image, NULL, k, &third, &hit, &refused), 0);
	assert_false(hit);
	assert_true(refused);
	assert_same_table(&third, direct, false);
	ada_hook_symtab_fini(&third);
}

/* The three tables a cache test read, freed, and its directory removed. */
static void tables_done(const char *dir, struct ada_hook_symtab *direct,
                        struct ada_hook_symtab *first, struct ada_hook_symtab *second)
{
	ada_hook_symtab_fini(direct);
	ada_hook_symtab_fini(first);
	ada_hook_symtab_fini(second);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* libc through the cache (its .dynsym table, large enough to be mapped):
 * stored, then a hit in private memory (clobber_expect). */
static void test_read_libc(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_symcache_XXXXXX";
	Dl_info di;
	if (!dladdr((void *)(uintptr_t)&fopen, &di) || !di.dli_fname || di.dli_fname[0] != '/' ||
	    !mkdtemp(dir))
		skip();
	struct symtab_cache_key k = {.agent_hash = 0x78};
	k.build_id_len =
	    symtab_cache_mem_build_id((uint64_t)(uintptr_t)&fopen, k.build_id, sizeof(k.build_id));
	struct ada_hook_symtab direct, first, second;
	bool hit = true, refused = true;
	hook_seccomp_window(true); /* as at the agent's start-up scan */
	assert_int_equal(ada_hook_symtab_read_ex(di.dli_fname, NULL, 0, &direct), 0);
	assert_int_equal(symtab_cache_read(dir, di.dli_fname, NULL, &k, &first, &hit, &refused), 0);
	assert_false(hit);
	assert_int_equal(symtab_cache_read(dir, di.dli_fname, NULL, &k, &second, &hit, &refused),
	                 0);
	if (hit) { /* a table the cache holds (no debug file found, or by build-id) */
		assert_same_table(&second, &direct, true);
		clobber_expect(dir, di.dli_fname, &k, &second, &direct);
	}
	hook_seccomp_window(false);
	tables_done(dir, &direct, &first, &second);
}

/* This test's own image, through the cache: the first read stores, the
 * second hits, and both are what ada_hook_symtab_read_ex reads. */
static void test_read_own_image(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_symcache_XXXXXX";
	if (!mkdtemp(dir))
		skip();
	struct symtab_cache_key k = {.agent_hash = 0x77};
	k.build_id_len = symtab_cache_mem_build_id((uint64_t)(uintptr_t)&test_read_own_image,
	                                           k.build_id, sizeof(k.build_id));
	if (k.build_id_len == 0) {
		rmdir(dir);
		skip(); /* built without a build-id */
	}
	struct ada_hook_symtab direct, first, second;
	assert_int_equal(ada_hook_symtab_read_ex("/proc/self/exe", NULL, 0, &direct), 0);
	if (direct.source != ADA_SYMSRC_SYMTAB) {
		ada_hook_symtab_fini(&direct);
		rmdir(dir);
		skip(); /* stripped: not a table the cache holds */
	}
	bool hit = true, refused = true;
	assert_int_equal(symtab_cache_read(dir, "/proc/self/exe", NULL, &k, &first, &hit, &refused),
	                 0);
	assert_false(hit);
	assert_int_equal(
	    symtab_cache_read(dir, "/proc/self/exe", NULL, &k, &second, &hit, &refused), 0);
	assert_true(hit);
	assert_same_table(&second, &direct, true);
	clobber_expect(dir, "/proc/self/exe", &k, &second, &direct);
	tables_done(dir, &direct, &first, &second);
}

static int run(const char *fmt, const char *a, const char *b)
{
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), fmt, a, b);
	return system(cmd);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* One read of image through the cache in dir: hit and refused as
 * expected, and the table the same as a read without the cache. */
static void read_expect(const char *dir, const char *image, const char *root,
                        struct symtab_cache_key *k, bool want_hit, bool want_refused)
{
	struct ada_hook_symtab direct, got;
	bool hit = !want_hit, refused = !want_refused;
	assert_int_equal(ada_hook_symtab_read_ex(image, root, ADA_SYMTAB_FDE, &direct), 0);
	assert_int_equal(symtab_cache_read(dir, image, root, k, &got, &hit, &refused), 0);
	assert_int_equal(hit, want_hit);
	assert_int_equal(refused, want_refused);
	assert_int_equal(got.source, direct.source);
	assert_int_equal(got.n_fde, direct.n_fde);
	assert_same_table(&got, &direct, want_hit);
	assert_string_equal(got.debuglink, direct.debuglink);
	ada_hook_symtab_fini(&direct);
	ada_hook_symtab_fini(&got);
}

/* A stripped copy of this test (its .dynsym and .eh_frame functions,
 * a .gnu_debuglink naming t.debug) through the cache. */
static void test_dynsym_table(void **state)
{
	(void)state;
	char top[] = "/tmp/ada_symcache_dyn_XXXXXX";
	if (!mkdtemp(top))
		skip();
	char dir[256], root[256], image[256], dbg[256], bid[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/cache", top);
	snprintf(root, sizeof(root), "%s/root", top);
	snprintf(image, sizeof(image), "%s/t", top);
	snprintf(dbg, sizeof(dbg), "%s/t.debug", top);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(mkdir(root, 0700), 0);
	/* objcopy records the debuglink name only when the file exists. */
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	char exe[64];
	snprintf(exe, sizeof(exe), "/proc/%s/exe", pid);
	if (run("cp %s %s", exe, dbg) != 0 ||
	    run("cd %s && objcopy --strip-all --add-gnu-debuglink=t.debug t.debug t", top, "") !=
	        0) {
		run("rm -rf %s", top, "");
		skip(); /* no objcopy */
	}
	unlink(dbg);
	struct symtab_cache_key k = {.flags = ADA_SYMTAB_FDE, .agent_hash = 0x77};
	k.build_id_len = symtab_cache_mem_build_id((uint64_t)(uintptr_t)&test_dynsym_table,
	                                           k.build_id, sizeof(k.build_id));
	if (k.build_id_len == 0) {
		run("rm -rf %s", top, "");
		skip(); /* built without a build-id */
	}
	struct ada_hook_symtab direct;
	assert_int_equal(ada_hook_symtab_read_ex(image, root, ADA_SYMTAB_FDE, &direct), 0);
	assert_true(direct.source == ADA_SYMSRC_DYNSYM || direct.source == ADA_SYMSRC_EHFRAME);
	assert_string_equal(direct.debuglink, "t.debug");
	ada_hook_symtab_fini(&direct);

	read_expect(dir, image, root, &k, false, false); /* cold: stored */
	read_expect(dir, image, root, &k, true, false);  /* warm: the same table */
	assert_true(symtab_cache_no_debug_file(root, image, &k, "t.debug"));

	/* A debug file by its .gnu_debuglink name (not a real one: the read
	 * still falls back to .dynsym, but it must look): refused. */
	write_file(dbg, "not an ELF file\n");
	assert_false(symtab_cache_no_debug_file(root, image, &k, "t.debug"));
	read_expect(dir, image, root, &k, false, true);
	read_expect(dir, image, root, &k, false, true); /* and nothing stored */
	unlink(dbg);
	read_expect(dir, image, root, &k, true, false); /* gone again: the file holds */

	/* A debug file by build-id under the root: refused. */
	char hex[2 * ADA_HOOK_BUILD_ID_MAX + 1];
	for (size_t i = 0; i < k.build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", k.build_id[i]);
	snprintf(bid, sizeof(bid), "%s/.build-id/%.2s", root, hex);
	assert_int_equal(run("mkdir -p %s%s", bid, ""), 0);
	snprintf(bid + strlen(bid), sizeof(bid) - strlen(bid), "/%s.debug", hex + 2);
	read_expect(dir, image, root, &k, true, false);
	write_file(bid, "not an ELF file\n");
	read_expect(dir, image, root, &k, false, true);
	unlink(bid);
	read_expect(dir, image, root, &k, true, false);

	/* A byte changed in the file: refused, read afresh, rewritten. */
	char cf[PATH_MAX];
	cache_file(dir, cf, sizeof(cf));
	FILE *f = fopen(cf, "r+b");
	assert_non_null(f);
	int c = fgetc(f);
	fseek(f, 0, SEEK_SET);
	fputc(c ^ 0x20, f);
	fclose(f);
	read_expect(dir, image, root, &k, false, true);
	read_expect(dir, image, root, &k, true, false);

	/* A link planted as the cache file (to a copy of the good one): not
	 * followed, refused; the store replaces the link, not its target. */
	char other[PATH_MAX];
	snprintf(other, sizeof(other), "%s/good.copy", top);
	assert_int_equal(run("cp %s %s", cf, other), 0);
	unlink(cf);
	assert_int_equal(symlink(other, cf), 0);
	read_expect(dir, image, root, &k, false, true);
	struct stat ls;
	assert_int_equal(lstat(cf, &ls), 0);
	assert_true(S_ISREG(ls.st_mode));
	read_expect(dir, image, root, &k, true, false);
	run("rm -rf %s", top, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),        cmocka_unit_test(test_flipped_byte),
	    cmocka_unit_test(test_truncated),         cmocka_unit_test(test_other_key),
	    cmocka_unit_test(test_bad_records),       cmocka_unit_test(test_read_own_image),
	    cmocka_unit_test(test_dynsym_other_name), cmocka_unit_test(test_dynsym_table),
	    cmocka_unit_test(test_read_libc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
