/*
 * Agent discovery and symbol tables, on the test binary itself: its own
 * functions must come out with the offsets and sizes the loader knows
 * (dladdr1 on the -rdynamic export), sorted, with aliases, IFUNCs and the
 * entry point judged; the image list must classify the loader and vDSO;
 * the cross-function branch check must catch a jump into a patch. A
 * stripped copy of the binary gets its local functions from .eh_frame,
 * named "<file>+0x<offset>", and its names back from a debug file found
 * by .gnu_debuglink or by build-id (objcopy makes them; skipped without).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "discover_internal.h"
#include "hook.h"

__attribute__((noinline)) int agent_test_fn_a(int x)
{
	return x * 3 + (x >> 2);
}

__attribute__((noinline)) int agent_test_fn_b(int x)
{
	return agent_test_fn_a(x) ^ 0x55;
}

int agent_test_alias(int x) __attribute__((alias("agent_test_fn_a")));

/* Local: in .symtab, not in .dynsym (the test exports its globals). */
__attribute__((noinline, used)) static int agent_test_local(int x)
{
	__asm__ volatile("" ::: "memory");
	return agent_test_fn_b(x) + 11;
}

static int agent_test_impl(void)
{
	return 7;
}
static int (*agent_test_resolver(void))(void)
{
	return agent_test_impl;
}
int agent_test_ifunc(void) __attribute__((ifunc("agent_test_resolver")));

static uint64_t self_base(void)
{
	Dl_info di;
	assert_true(dladdr((void *)agent_test_fn_a, &di) != 0);
	struct link_map *lm = NULL;
	assert_true(dladdr1((void *)agent_test_fn_a, &di, (void **)&lm, RTLD_DL_LINKMAP) != 0);
	return lm->l_addr;
}

static const struct ada_hook_fn *find(const struct ada_hook_symtab *st, const char *name)
{
	for (size_t i = 0; i < st->count; i++) {
		if (!strcmp(ada_hook_fn_name(st, &st->fns[i]), name))
			return &st->fns[i];
	}
	return NULL;
}

static void check_fn(const struct ada_hook_symtab *st, uint64_t base, void *addr, const char *name)
{
	const struct ada_hook_fn *f = find(st, name);
	assert_non_null(f);
	assert_int_equal(f->offset, (uint64_t)(uintptr_t)addr - base);
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	assert_true(dladdr1(addr, &di, (void **)&sym, RTLD_DL_SYMENT) != 0);
	assert_non_null(sym);
	assert_int_equal(f->size, sym->st_size);
}

static void test_own_functions(void **state)
{
	(void)state;
	struct ada_hook_symtab st;
	assert_int_equal(ada_hook_symtab_read("/proc/self/exe", "/nonexistent", &st), 0);
	assert_int_equal(st.source, ADA_SYMSRC_SYMTAB);
	uint64_t base = self_base();
	check_fn(&st, base, (void *)agent_test_fn_a, "agent_test_fn_a");
	check_fn(&st, base, (void *)agent_test_fn_b, "agent_test_fn_b");
	for (size_t i = 1; i < st.count; i++)
		assert_true(st.fns[i - 1].offset <= st.fns[i].offset);
	/* One of the two names at agent_test_fn_a's address is the alias. */
	const struct ada_hook_fn *a = find(&st, "agent_test_fn_a");
	const struct ada_hook_fn *al = find(&st, "agent_test_alias");
	assert_non_null(al);
	assert_int_equal(a->offset, al->offset);
	assert_true((a->status == ADA_HOOK_OK) != (al->status == ADA_HOOK_OK));
	assert_true(a->status == ADA_SKIP_ALIAS || al->status == ADA_SKIP_ALIAS);
	const struct ada_hook_fn *ifn = find(&st, "agent_test_ifunc");
	assert_non_null(ifn);
	assert_int_equal(ifn->status, ADA_SKIP_IFUNC);
	const struct ada_hook_fn *start = find(&st, "_start");
	assert_non_null(start);
	assert_int_equal(start->status, ADA_SKIP_ENTRY_POINT);
	assert_int_equal(start->offset, st.entry);
	assert_int_equal(agent_test_ifunc(), 7);
	ada_hook_symtab_fini(&st);
}

static void test_bad_files(void **state)
{
	(void)state;
	struct ada_hook_symtab st;
	assert_int_equal(ada_hook_symtab_read("/nonexistent/file", NULL, &st), -ENOENT);
	assert_int_equal(ada_hook_symtab_read("/proc/self/status", NULL, &st), -ENOEXEC);
	char path[] = "/tmp/ada_test_agent_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd,
	                       "\x7f"
	                       "ELF\x02\x01\x01",
	                       7),
	                 7); /* truncated header */
	close(fd);
	assert_int_equal(ada_hook_symtab_read(path, NULL, &st), -ENOEXEC);
	unlink(path);
}

static void test_images(void **state)
{
	(void)state;
	struct discover_image *v;
	size_t n;
	assert_int_equal(discover_images((uint64_t)(uintptr_t)test_images, &v, &n), 0);
	assert_true(n >= 3);
	assert_true(v[0].is_main);
	char exe[4096];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(k > 0);
	exe[k] = '\0';
	assert_string_equal(v[0].path, exe);
	/* "self" is this test here: the main image counts as the agent. */
	assert_int_equal(v[0].skip, ADA_SKIP_AGENT);
	int loaders = 0, libc = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].skip == ADA_SKIP_LOADER)
			loaders++;
		if (strstr(v[i].path, "libc.so"))
			libc++, assert_int_equal(v[i].skip, ADA_HOOK_OK);
		assert_true(v[i].lo < v[i].hi);
	}
	assert_true(loaders >= 1); /* ld.so (and the vDSO when mapped) */
	assert_int_equal(libc, 1);
	free(v);
}

/* Function A (offset 0) jumps into B's first bytes; C (offset 32) is only
 * called at its start. B must be refused, C kept. */
static void test_xref(void **state)
{
	(void)state;
	uint8_t code[64];
	memset(code, 0x90, sizeof(code));
	code[0] = 0xe8; /* call C (rel32 = 32 - 5) */
	int32_t d = 32 - 5;
	memcpy(code + 1, &d, 4);
	code[5] = 0xeb; /* jmp B+3 (rel8 = 19 - 7) */
	code[6] = (uint8_t)(16 + 3 - 7);
	code[7] = 0xc3;
	char names[] = "A\0B\0C";
	struct ada_hook_fn fns[3] = {
	    {.offset = 0, .size = 8, .name_off = 0},
	    {.offset = 16, .size = 16, .name_off = 2},
	    {.offset = 32, .size = 16, .name_off = 4},
	};
	struct ada_hook_symtab st = {.fns = fns, .count = 3, .names = names, .names_len = 6};
	struct hook_arch_plan plans[3] = {{.patch_len = 5}, {.patch_len = 5}, {.patch_len = 5}};
	assert_int_equal(discover_xref_check((uint64_t)(uintptr_t)code, &st, plans, NULL), 0);
	assert_int_equal(fns[0].status, ADA_HOOK_OK);
	assert_int_equal(fns[1].status, ADA_SKIP_BRANCH_INTO_PATCH);
	assert_int_equal(fns[2].status, ADA_HOOK_OK);
}

/* Runs a shell command; false when it fails (objcopy missing). */
static bool sh(const char *fmt, const char *a, const char *b, const char *c)
{
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), fmt, a, b, c);
	return system(cmd) == 0;
}

/* Every function found from .eh_frame in the stripped copy is one of the
 * unstripped file's functions, at its offset, with its size; the local
 * function is among them; no exported one is repeated. */
static void check_fde_functions(const struct ada_hook_symtab *full,
                                const struct ada_hook_symtab *st, uint64_t local_off)
{
	size_t n_fde = 0;
	bool local = false;
	char want[64];
	snprintf(want, sizeof(want), "stripped+0x%" PRIx64, local_off);
	for (size_t i = 0; i < st->count; i++) {
		const struct ada_hook_fn *f = &st->fns[i];
		const char *name = ada_hook_fn_name(st, f);
		if (strncmp(name, "stripped+0x", 11))
			continue;
		n_fde++;
		local |= !strcmp(name, want);
		const struct ada_hook_fn *g = NULL;
		for (size_t k = 0; k < full->count && !g; k++)
			if (full->fns[k].offset == f->offset &&
			    full->fns[k].status != ADA_SKIP_ALIAS)
				g = &full->fns[k];
		assert_non_null(g);
		assert_int_equal(g->size, f->size);
		assert_null(find(st, ada_hook_fn_name(full, g))); /* not also under its name */
	}
	assert_int_equal(n_fde, st->n_fde);
	assert_true(local);
}

static void test_stripped(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_test_strip_XXXXXX", path[600], dbg[600], root[600];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/stripped", dir);
	snprintf(dbg, sizeof(dbg), "%s/stripped.debug", dir);
	char self[PATH_MAX]; /* not /proc/self/exe: objcopy would copy itself */
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(sl > 0);
	self[sl] = '\0';
	if (!sh("objcopy --strip-all %s %s", self, path, "") ||
	    !sh("objcopy --only-keep-debug %s %s", self, dbg, "")) {
		sh("rm -rf %s", dir, "", "");
		skip();
	}
	struct ada_hook_symtab full, st;
	assert_int_equal(ada_hook_symtab_read("/proc/self/exe", "/nonexistent", &full), 0);
	uint64_t local_off = (uint64_t)(uintptr_t)agent_test_local - self_base();
	assert_int_equal(agent_test_local(1), agent_test_fn_b(1) + 11);

	assert_int_equal(ada_hook_symtab_read_ex(path, "/nonexistent", ADA_SYMTAB_FDE, &st), 0);
	assert_int_equal(st.source, ADA_SYMSRC_EHFRAME);
	fprintf(stderr, "DBG %zu %zu %s\n", st.count, st.n_fde, path);
	for (size_t q = 0; q < 8 && q < st.count; q++)
		fprintf(stderr, "DBG %s\n", ada_hook_fn_name(&st, &st.fns[q]));
	assert_non_null(find(&st, "agent_test_fn_b")); /* from .dynsym */
	check_fde_functions(&full, &st, local_off);
	ada_hook_symtab_fini(&st);
	assert_int_equal(ada_hook_symtab_read(path, "/nonexistent", &st), 0); /* not asked */
	assert_int_equal(st.source, ADA_SYMSRC_DYNSYM);
	assert_int_equal(st.n_fde, 0);
	ada_hook_symtab_fini(&st);

	/* By build-id under a debug root. */
	snprintf(root, sizeof(root), "%s/root", dir);
	assert_int_equal(ada_hook_symtab_read_ex(path, "/nonexistent", ADA_SYMTAB_FDE, &st), 0);
	char idp[200];
	int n = snprintf(idp, sizeof(idp), "%02x/", st.build_id[0]);
	for (size_t i = 1; i < st.build_id_len; i++)
		n += snprintf(idp + n, sizeof(idp) - (size_t)n, "%02x", st.build_id[i]);
	ada_hook_symtab_fini(&st);
	assert_true(sh("mkdir -p %s/.build-id/%.2s", root, idp, ""));
	assert_true(sh("cp %s %s/.build-id/%s.debug", dbg, root, idp));
	assert_int_equal(ada_hook_symtab_read_ex(path, root, ADA_SYMTAB_FDE, &st), 0);
	assert_int_equal(st.source, ADA_SYMSRC_DEBUGLINK);
	assert_int_equal(st.n_fde, 0);
	assert_non_null(find(&st, "agent_test_local"));
	ada_hook_symtab_fini(&st);

	/* By .gnu_debuglink, next to the file. */
	assert_true(
	    sh("cd %s && objcopy --add-gnu-debuglink=stripped.debug stripped", dir, "", ""));
	assert_int_equal(ada_hook_symtab_read_ex(path, "/nonexistent", ADA_SYMTAB_FDE, &st), 0);
	assert_int_equal(st.source, ADA_SYMSRC_DEBUGLINK);
	const struct ada_hook_fn *f = find(&st, "agent_test_local");
	assert_non_null(f);
	assert_int_equal(f->offset, local_off);
	ada_hook_symtab_fini(&st);
	ada_hook_symtab_fini(&full);
	sh("rm -rf %s", dir, "", "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_own_functions), cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_stripped),      cmocka_unit_test(test_images),
	    cmocka_unit_test(test_xref),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
