/*
 * ada_syms_name_from_debug (src/atf/symbols_debug.c) on the test binary
 * itself: a .syms file naming one of its local functions the way the
 * agent names what it found from .eh_frame ("<file>+0x<offset>") gets the
 * function's name from a debug file made afterwards with objcopy -- by the
 * .gnu_debuglink of a stripped copy at the recorded path, and by the
 * recorded build-id under a debug root -- and keeps it when the build-id
 * is another's; other names are left alone. Skipped without objcopy.
 * The recorded path and build-id are the session's (input): a FIFO named
 * by either is passed over at once, not waited on for a writer.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbols.h"

__attribute__((noinline, used)) static int symdebug_local(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 5 + 3;
}

static int symdebug_base_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uint64_t *)arg = info->dlpi_addr; /* the main program comes first */
	return 1;
}

static bool symdebug_sh(const char *cmd)
{
	return system(cmd) == 0;
}

/* The test binary's build-id as hex (readelf), "" when none. */
static void symdebug_build_id(const char *self, char *hex, size_t cap)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "readelf -n %s | awk '/Build ID/ {print $3}'", self);
	FILE *p = popen(cmd, "r");
	hex[0] = '\0';
	if (p && fgets(hex, (int)cap, p))
		hex[strcspn(hex, "\n")] = '\0';
	if (p)
		pclose(p);
}

/* A .syms file of the image at path with build_id (NULL: "-"), whose
 * function 0 is named as the agent names an .eh_frame function. */
static struct ada_syms_module *symdebug_syms(const char *path, const char *build_id, uint64_t off)
{
	char text[2 * PATH_MAX];
	const char *base = strrchr(path, '/') + 1;
	snprintf(text, sizeof(text),
	         "ada-symbols 1\nmodule_id 1\npath %s\nbuild_id %s\nload_base 0x0\n"
	         "F 0 %" PRIx64 " 10 hooked %s+0x%" PRIx64 "\nF 1 %" PRIx64 " 4 hooked other\n",
	         path, build_id ? build_id : "-", off, base, off, off + 0x100);
	struct ada_syms_module *m = NULL;
	assert_int_equal(ada_syms_parse(text, strlen(text), &m, NULL), 0);
	return m;
}

static void test_debug_files(void **state)
{
	(void)state;
	char self[PATH_MAX], dir[] = "/tmp/ada_test_symdebug_XXXXXX", cmd[3 * PATH_MAX];
	char prog[64], id[160];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = '\0';
	assert_non_null(mkdtemp(dir));
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(cmd, sizeof(cmd),
	         "objcopy --strip-all %s %s && objcopy --only-keep-debug %s %s.debug && "
	         "cd %s && objcopy --add-gnu-debuglink=prog.debug prog",
	         self, prog, self, prog, dir);
	symdebug_build_id(self, id, sizeof(id));
	if (!symdebug_sh(cmd) || strlen(id) < 4) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		symdebug_sh(cmd);
		skip();
	}
	uint64_t base = 0;
	dl_iterate_phdr(symdebug_base_cb, &base);
	uint64_t off = (uint64_t)(uintptr_t)symdebug_local - base;
	assert_int_equal(symdebug_local(1), 8);

	/* By .gnu_debuglink, next to the stripped file at the recorded path. */
	struct ada_syms_module *m = symdebug_syms(prog, id, off);
	assert_int_equal(ada_syms_name_from_debug(m, "/nonexistent"), 1);
	assert_string_equal(m->funcs[0].name, "symdebug_local");
	assert_string_equal(m->funcs[1].name, "other");
	ada_syms_module_free(m);

	/* Recorded with another build-id: its debug file is not this one. */
	m = symdebug_syms(prog, "00112233445566778899aabbccddeeff00112233", off);
	assert_int_equal(ada_syms_name_from_debug(m, "/nonexistent"), 0);
	assert_string_not_equal(m->funcs[0].name, "symdebug_local");
	ada_syms_module_free(m);

	/* By build-id under a root, the image itself gone. */
	snprintf(
	    cmd, sizeof(cmd),
	    "mkdir -p %s/root/.build-id/%.2s && mv %s.debug %s/root/.build-id/%.2s/%s.debug && "
	    "rm %s",
	    dir, id, prog, dir, id, id + 2, prog);
	assert_true(symdebug_sh(cmd));
	char root[PATH_MAX + 8];
	snprintf(root, sizeof(root), "%s/root", dir);
	m = symdebug_syms(prog, id, off);
	assert_int_equal(ada_syms_name_from_debug(m, "/nonexistent"), 0); /* no debug file there */
	assert_int_equal(ada_syms_name_from_debug(m, root), 1);
	assert_string_equal(m->funcs[0].name, "symdebug_local");
	ada_syms_module_free(m);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	symdebug_sh(cmd);
}

/* A FIFO at the recorded path and at the build-id's place under the
 * root: no name from either, and no wait (the alarm fails a hang). */
static void test_fifo_not_opened(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_test_symdebug_XXXXXX", prog[64], dbg[128], cmd[160];
	assert_non_null(mkdtemp(dir));
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(dbg, sizeof(dbg), "%s/.build-id/aa", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s", dbg);
	assert_true(symdebug_sh(cmd));
	snprintf(dbg, sizeof(dbg), "%s/.build-id/aa/bbccdd.debug", dir);
	assert_int_equal(mkfifo(prog, 0600), 0);
	assert_int_equal(mkfifo(dbg, 0600), 0);
	alarm(5);
	struct ada_syms_module *m = symdebug_syms(prog, "aabbccdd", 0x40);
	assert_int_equal(ada_syms_name_from_debug(m, dir), 0);
	assert_string_equal(m->funcs[0].name, "prog+0x40");
	ada_syms_module_free(m);
	alarm(0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	symdebug_sh(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_debug_files),
	    cmocka_unit_test(test_fifo_not_opened),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
