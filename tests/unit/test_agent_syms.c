/*
 * The .syms writer (src/hook/symbols_file.c) against the reader of the
 * atf module (src/atf/symbols.h): what the agent writes, `ada dump`
 * reads back, table hash included.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "hook.h"
#include "symbols.h"

static char names[] = "main\0helper\0helper_alias\0resolver";

static void make(struct ada_hook_symtab *st, struct ada_hook_fn *fns)
{
	memset(st, 0, sizeof(*st));
	fns[0] = (struct ada_hook_fn){.offset = 0x1130, .size = 42, .name_off = 0};
	fns[1] = (struct ada_hook_fn){
	    .offset = 0x1160, .size = 7, .name_off = 5, .status = ADA_SKIP_TOO_SHORT};
	fns[2] = (struct ada_hook_fn){
	    .offset = 0x1160, .size = 7, .name_off = 12, .status = ADA_SKIP_ALIAS};
	fns[3] = (struct ada_hook_fn){
	    .offset = 0xabcdef, .size = 0, .name_off = 25, .status = ADA_SKIP_IFUNC};
	st->fns = fns;
	st->count = 4;
	st->names = names;
	st->names_len = sizeof(names);
	st->source = ADA_SYMSRC_DEBUGLINK;
	st->build_id_len = 3;
	st->build_id[0] = 0xab;
	st->build_id[1] = 0x01;
	st->build_id[2] = 0xff;
}

static void test_round_trip(void **state)
{
	(void)state;
	struct ada_hook_fn fns[4];
	struct ada_hook_symtab st;
	make(&st, fns);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct ada_hook_module_info mi = {7, "/usr/lib/libx.so.1", 0x7f0012340000ull};
	assert_int_equal(ada_hook_syms_write(f, &mi, &st, NULL), 0);
	fclose(f);

	struct ada_syms_module *m = NULL;
	uint64_t bad = 0;
	assert_int_equal(ada_syms_parse(buf, len, &m, &bad), 0);
	assert_int_equal(m->module_id, 7);
	assert_string_equal(m->path, "/usr/lib/libx.so.1");
	assert_string_equal(m->build_id, "ab01ff");
	assert_string_equal(m->symbol_source, "debuglink");
	assert_int_equal(m->load_base, 0x7f0012340000ull);
	assert_true(m->has_table_xxh64);
	assert_int_equal(m->table_xxh64, m->computed_xxh64);
	assert_int_equal(m->table_xxh64, ada_hook_syms_table_hash(&st));
	assert_int_equal(m->functions, 4);
	assert_int_equal(m->nfuncs, 4);
	const struct ada_syms_func *fn = ada_syms_find(m, 0);
	assert_string_equal(fn->name, "main");
	assert_string_equal(fn->status, "hooked");
	assert_int_equal(fn->offset, 0x1130);
	assert_int_equal(fn->size, 42);
	fn = ada_syms_find(m, 1);
	assert_string_equal(fn->status, hook_skip_name(ADA_SKIP_TOO_SHORT));
	fn = ada_syms_find(m, 2);
	assert_string_equal(fn->name, "helper_alias");
	assert_string_equal(fn->status, hook_skip_name(ADA_SKIP_ALIAS));
	fn = ada_syms_find(m, 3);
	assert_int_equal(fn->offset, 0xabcdef);
	assert_int_equal(fn->size, 0);
	ada_syms_module_free(m);
	free(buf);
}

/* The hash changes with any byte of the table. */
static void test_hash_sensitive(void **state)
{
	(void)state;
	struct ada_hook_fn fns[4];
	struct ada_hook_symtab st;
	make(&st, fns);
	uint64_t h0 = ada_hook_syms_table_hash(&st);
	fns[1].size = 8;
	assert_int_not_equal(ada_hook_syms_table_hash(&st), h0);
	fns[1].size = 7;
	assert_int_equal(ada_hook_syms_table_hash(&st), h0);
	fns[0].status = ADA_SKIP_EXCLUDED;
	assert_int_not_equal(ada_hook_syms_table_hash(&st), h0);
}

static void test_empty(void **state)
{
	(void)state;
	struct ada_hook_symtab st;
	memset(&st, 0, sizeof(st));
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ada_hook_module_info mi = {1, "/bin/x", 0};
	assert_int_equal(ada_hook_syms_write(f, &mi, &st, NULL), 0);
	fclose(f);
	struct ada_syms_module *m = NULL;
	assert_int_equal(ada_syms_parse(buf, len, &m, NULL), 0);
	assert_null(m->build_id);
	assert_int_equal(m->nfuncs, 0);
	assert_int_equal(m->table_xxh64, m->computed_xxh64);
	ada_syms_module_free(m);
	free(buf);
}

/* A version 2 file in dir: module_7.body (the body, or what the caller
 * plants instead) and its lines, in (*buf, *len). */
static void v2_write(int dfd, const char *body, size_t body_len, uint64_t hash, char **buf,
                     size_t *len, const struct ada_hook_symtab *st)
{
	int fd = openat(dfd, "module_7.body", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, body, body_len), (ssize_t)body_len);
	close(fd);
	FILE *f = open_memstream(buf, len);
	assert_non_null(f);
	struct ada_hook_module_info mi = {7, "/usr/lib/libx.so.1", 0x7f0012340000ull};
	assert_int_equal(ada_hook_syms_write_v2(f, &mi, st, hash, "module_7.body", body_len), 0);
	fclose(f);
}

/* Version 2: the lines and the body parse as the version 1 file of the
 * same table; without the directory (or a planted, changed, cut or
 * missing body) the file is refused with -ENODATA; a body name that is a
 * path is never opened. The old form still parses. */
static void test_v2_body(void **state)
{
	(void)state;
	struct ada_hook_fn fns[4];
	struct ada_hook_symtab st;
	make(&st, fns);
	char dir[] = "/tmp/ada_symsv2_XXXXXX";
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	size_t blen = 0;
	char *body = ada_hook_syms_body(&st, &blen);
	assert_non_null(body);
	uint64_t hash = XXH64(body, blen, 0);
	assert_int_equal(hash, ada_hook_syms_table_hash(&st));

	char *buf = NULL;
	size_t len = 0;
	v2_write(dfd, body, blen, hash, &buf, &len, &st);
	struct ada_syms_module *m = NULL;
	uint64_t bad = 0;
	/* Over the reader's own bound: not read. */
	assert_int_equal(ada_syms_parse_at(dfd, buf, len, blen - 1, &m, NULL), -ENODATA);
	assert_int_equal(ada_syms_parse_at(dfd, buf, len, ADA_SYMS_BODY_MAX, &m, &bad), 0);
	assert_int_equal(m->version, 2);
	assert_int_equal(m->module_id, 7);
	assert_int_equal(m->load_base, 0x7f0012340000ull);
	assert_string_equal(m->body, "module_7.body");
	assert_int_equal(m->body_bytes, (int64_t)blen);
	assert_int_equal(m->nfuncs, 4);
	assert_int_equal(m->table_xxh64, m->computed_xxh64);
	assert_string_equal(ada_syms_find(m, 2)->name, "helper_alias");
	ada_syms_module_free(m);
	m = NULL;
	/* No directory: the names are not there. */
	assert_int_equal(ada_syms_parse(buf, len, &m, NULL), -ENODATA);
	assert_null(m);
	free(buf);

	/* A planted body of the same length, one name changed. */
	char *planted = malloc(blen);
	memcpy(planted, body, blen);
	char *h = strstr(planted, "helper_alias");
	assert_non_null(h);
	h[0] = 'H';
	v2_write(dfd, planted, blen, hash, &buf, &len, &st);
	assert_int_equal(ada_syms_parse_at(dfd, buf, len, ADA_SYMS_BODY_MAX, &m, NULL), -ENODATA);
	free(buf);
	/* Cut short by a byte, and missing. */
	v2_write(dfd, body, blen - 1, hash, &buf, &len, &st);
	assert_int_equal(ada_syms_parse_at(dfd, buf, len, ADA_SYMS_BODY_MAX, &m, NULL), -ENODATA);
	free(buf);
	v2_write(dfd, body, blen, hash, &buf, &len, &st);
	int fd = openat(dfd, "module_7.body", O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, body, blen - 1), (ssize_t)blen - 1);
	close(fd);
	assert_int_equal(ada_syms_parse_at(dfd, buf, len, ADA_SYMS_BODY_MAX, &m, NULL), -ENODATA);
	assert_int_equal(unlinkat(dfd, "module_7.body", 0), 0);
	assert_int_equal(ada_syms_parse_at(dfd, buf, len, ADA_SYMS_BODY_MAX, &m, NULL), -ENODATA);
	free(buf);
	/* A link planted as the body: never followed. */
	v2_write(dfd, body, blen, hash, &buf, &len, &st);
	free(buf);
	assert_int_equal(renameat(dfd, "module_7.body", dfd, "real.body"), 0);
	assert_int_equal(symlinkat("real.body", dfd, "module_7.body"), 0);
	{
		FILE *f = open_memstream(&buf, &len);
		struct ada_hook_module_info mi = {7, "/usr/lib/libx.so.1", 0};
		assert_int_equal(ada_hook_syms_write_v2(f, &mi, &st, hash, "module_7.body", blen),
		                 0);
		fclose(f);
	}
	assert_int_equal(ada_syms_parse_at(dfd, buf, len, ADA_SYMS_BODY_MAX, &m, NULL), -ENODATA);
	free(buf);
	/* A body name that is a path, and F lines in a version 2 file's own
	 * lines: malformed. */
	const char *up = "ada-symbols 2\nmodule_id 7\ntable_xxh64 0\nbody ../module_7.body\n"
	                 "body_bytes 0\n";
	assert_int_equal(ada_syms_parse_at(dfd, up, strlen(up), ADA_SYMS_BODY_MAX, &m, NULL),
	                 -ENODATA);
	const char *inl = "ada-symbols 2\nmodule_id 7\nF 0 10 1 hooked f\n";
	assert_int_equal(ada_syms_parse_at(dfd, inl, strlen(inl), ADA_SYMS_BODY_MAX, &m, &bad),
	                 -EBADMSG);
	assert_int_equal(bad, 3);
	/* The old form, through the same entry. */
	buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	struct ada_hook_module_info mi = {7, "/usr/lib/libx.so.1", 0};
	assert_int_equal(ada_hook_syms_write(f, &mi, &st, NULL), 0);
	fclose(f);
	assert_int_equal(ada_syms_parse_at(dfd, buf, len, ADA_SYMS_BODY_MAX, &m, NULL), 0);
	assert_int_equal(m->version, 1);
	assert_int_equal(m->nfuncs, 4);
	ada_syms_module_free(m);
	free(buf);

	free(planted);
	free(body);
	unlinkat(dfd, "module_7.body", 0);
	unlinkat(dfd, "real.body", 0);
	close(dfd);
	rmdir(dir);
}

static char warned[512];

static void warn_keep(void *ctx, const char *path, uint64_t line, const char *msg)
{
	(void)ctx;
	(void)line;
	snprintf(warned, sizeof(warned), "%s: %s", strrchr(path, '/') + 1, msg);
}

/* What a reader says of a changed shared body: ada_symtab_load (dump,
 * report, validate) warns that the body is not what the file declares,
 * and the module's functions resolve to its path without names; with the
 * body restored they have their names again. */
static void test_v2_symtab_says(void **state)
{
	(void)state;
	struct ada_hook_fn fns[4];
	struct ada_hook_symtab st;
	make(&st, fns);
	char dir[] = "/tmp/ada_symsv2t_XXXXXX", sub[64];
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/modules", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	int dfd = open(sub, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	size_t blen = 0, len = 0;
	char *body = ada_hook_syms_body(&st, &blen), *buf = NULL;
	uint64_t hash = XXH64(body, blen, 0);
	body[blen - 2] ^= 1; /* the last name's last byte */
	v2_write(dfd, body, blen, hash, &buf, &len, &st);
	int fd = openat(dfd, "module_7.syms", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);

	struct ada_symtab *t = NULL;
	const char *name, *mod;
	warned[0] = '\0';
	assert_int_equal(ada_symtab_load(dir, NULL, warn_keep, NULL, &t), 0);
	assert_non_null(strstr(warned, "module_7.syms: its shared body"));
	assert_non_null(strstr(warned, "is not the body_bytes and table_xxh64 it declares"));
	assert_false(ada_symtab_resolve(t, (7ull << 32) | 0, &name, &mod));
	assert_null(name);
	ada_symtab_free(t);

	body[blen - 2] ^= 1;
	fd = openat(dfd, "module_7.body", O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, body, blen), (ssize_t)blen);
	close(fd);
	warned[0] = '\0';
	assert_int_equal(ada_symtab_load(dir, NULL, warn_keep, NULL, &t), 0);
	assert_string_equal(warned, "");
	assert_true(ada_symtab_resolve(t, (7ull << 32) | 1, &name, &mod));
	assert_string_equal(name, "helper");
	assert_string_equal(mod, "/usr/lib/libx.so.1");
	ada_symtab_free(t);

	free(buf);
	free(body);
	unlinkat(dfd, "module_7.body", 0);
	unlinkat(dfd, "module_7.syms", 0);
	close(dfd);
	rmdir(sub);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_hash_sensitive),
	    cmocka_unit_test(test_empty),          cmocka_unit_test(test_v2_body),
	    cmocka_unit_test(test_v2_symtab_says),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
