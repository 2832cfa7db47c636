/*
 * Tests of src/fs session roots (root.c): below a directory the user
 * named, no link is followed anywhere on a path -- a thread_K swapped for
 * a link, a link in the middle, a link as the file -- for readers
 * (ada_fs_open_file, ada_fs_opendir, ada_fs_open_path, ada_fs_lstat_path)
 * and writers (ada_fs_open_path with O_CREAT), through openat2 and
 * through the walk of kernels without it; the user's own link to the
 * session is followed.
 *
 * Layout made by fx_setup under /tmp/ada-fs-root-XXXXXX:
 *   victim/thread_1/index.atf  "victim"   (what a link must never reach)
 *   s/pid_1/thread_0/index.atf "ours"
 *   s/pid_1/thread_1 -> ../../victim/thread_1
 *   s/pid_1/thread_2/index.atf -> ../../../victim/thread_1/index.atf
 *   s/pid_2 -> ../victim  (a link in the middle: s/pid_2/thread_1/...)
 *   latest -> s           (the user's own link, named on the command line)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs.h"

static char top[64];

static void fx_mkfile(const char *rel, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", top, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void fx_run(const char *fmt)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), fmt, top, top, top, top, top, top);
	assert_int_equal(system(cmd), 0);
}

static int fx_setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/ada-fs-root-XXXXXX");
	if (!mkdtemp(top))
		return -1;
	fx_run("cd '%s' && mkdir -p victim/thread_1 s/pid_1/thread_0 s/pid_1/thread_2 && "
	       "ln -s ../../victim/thread_1 s/pid_1/thread_1 && "
	       "ln -s ../../../victim/thread_1/index.atf s/pid_1/thread_2/index.atf && "
	       "ln -s ../victim s/pid_2 && ln -s s latest");
	fx_mkfile("victim/thread_1/index.atf", "victim");
	fx_mkfile("s/pid_1/thread_0/index.atf", "ours");
	return 0;
}

static int fx_teardown(void **state)
{
	(void)state;
	ada_fs_root_clear();
	fx_run("rm -rf '%s'");
	return 0;
}

static void path_of(char *p, size_t cap, const char *root, const char *rel)
{
	snprintf(p, cap, "%s/%s/%s", top, root, rel);
}

static void root_add(const char *root)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", top, root);
	assert_int_equal(ada_fs_root_add(p), 1);
	assert_int_equal(ada_fs_root_add(p), 0); /* once */
}

/* Every reader refuses each hostile path with -ELOOP; the file of ours reads. */
static void check_readers(const char *root)
{
	char p[256];
	int fd = -1;
	struct stat st;

	path_of(p, sizeof(p), root, "pid_1/thread_1/index.atf");
	assert_int_equal(ada_fs_open_file(AT_FDCWD, p, O_RDONLY, &fd), -ELOOP);
	assert_int_equal(ada_fs_open_path(p, O_RDONLY, 0, &fd), -ELOOP);
	assert_int_equal(ada_fs_lstat_path(p, &st), -ELOOP);
	path_of(p, sizeof(p), root, "pid_1/thread_1");
	assert_int_equal(ada_fs_open_dir(AT_FDCWD, p, &fd), -ELOOP);
	path_of(p, sizeof(p), root, "pid_1/thread_2/index.atf");
	assert_int_equal(ada_fs_open_file(AT_FDCWD, p, O_RDONLY, &fd), -ELOOP);
	path_of(p, sizeof(p), root, "pid_2/thread_1/index.atf");
	assert_int_equal(ada_fs_open_path(p, O_RDONLY, 0, &fd), -ELOOP);
	assert_null(ada_fs_opendir(AT_FDCWD, p));
	path_of(p, sizeof(p), root, "pid_1/thread_0/index.atf");
	assert_int_equal(ada_fs_open_file(AT_FDCWD, p, O_RDONLY, &fd), 0);
	close(fd);
	path_of(p, sizeof(p), root, "");
	assert_int_equal(ada_fs_open_dir(AT_FDCWD, p, &fd), 0); /* the root itself */
	close(fd);
}

/* A writer creating through the middle link makes nothing in victim/. */
static void check_writer(const char *root)
{
	char p[256];
	int fd = -1;

	path_of(p, sizeof(p), root, "pid_2/thread_1/new.atf");
	assert_int_equal(ada_fs_open_path(p, O_WRONLY | O_CREAT | O_TRUNC, 0600, &fd), -ELOOP);
	path_of(p, sizeof(p), root, "pid_1/thread_1/index.atf");
	assert_int_equal(ada_fs_open_path(p, O_WRONLY | O_TRUNC, 0, &fd), -ELOOP);
	snprintf(p, sizeof(p), "%s/victim/thread_1/new.atf", top);
	assert_int_equal(access(p, F_OK), -1);
	char buf[16] = {0};
	snprintf(p, sizeof(p), "%s/victim/thread_1/index.atf", top);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "victim");
}

static void test_root_refuses_links(void **state)
{
	(void)state;
	root_add("s");
	check_readers("s");
	check_writer("s");
}

/* The user's own link to the session is theirs: followed, once. */
static void test_root_user_link(void **state)
{
	(void)state;
	root_add("latest");
	check_readers("latest");
	check_writer("latest");
}

/* The walk of kernels without openat2 refuses the same links. */
static void test_root_walk(void **state)
{
	(void)state;
	char p[256];
	int rfd, fd = -1;
	snprintf(p, sizeof(p), "%s/s", top);
	assert_int_equal(ada_fs_open_dir(AT_FDCWD, p, &rfd), 0);
	for (unsigned how = 0; how <= ADA_FS_BENEATH_WALK; how++) {
		assert_int_equal(ada_fs_open_beneath_dir(rfd, "pid_1/thread_1", how, &fd), -ELOOP);
		assert_int_equal(ada_fs_open_beneath_dir(rfd, "pid_2/thread_1", how, &fd), -ELOOP);
		assert_int_equal(ada_fs_open_beneath_dir(rfd, "pid_2", how, &fd), -ELOOP);
		assert_int_equal(ada_fs_open_beneath_dir(rfd, "./pid_1//thread_0/", how, &fd), 0);
		close(fd);
	}
	close(rfd);
}

/* A path under no root, or with a "..", is opened as before: its last
 * component not followed, the rest as the path says. */
static void test_root_outside(void **state)
{
	(void)state;
	char p[256];
	int fd = -1;
	root_add("s");
	snprintf(p, sizeof(p), "%s/s/pid_1/../pid_1/thread_0/index.atf", top);
	assert_int_equal(ada_fs_open_file(AT_FDCWD, p, O_RDONLY, &fd), 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/victim/thread_1/index.atf", top);
	assert_int_equal(ada_fs_open_file(AT_FDCWD, p, O_RDONLY, &fd), 0);
	close(fd);
	/* A name that only begins like the root is not under it. */
	snprintf(p, sizeof(p), "%s/s", top);
	ada_fs_root_remove(p);
	assert_int_equal(ada_fs_root_add(p), 1);
	snprintf(p, sizeof(p), "%s/sx", top);
	assert_int_equal(ada_fs_open_dir(AT_FDCWD, p, &fd), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_root_refuses_links, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_root_user_link, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_root_walk, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_root_outside, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
