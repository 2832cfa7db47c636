/*
 * Tests of src/fs: every creation refuses a planted file or link, modes
 * are 0700/0600 under any umask, temporary names differ, readers do not
 * follow links, and the trust checks a root process makes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

static char root[64];
static int rfd = -1;

static int fx_setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/ada-fs-test-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	return ada_fs_open_dir(AT_FDCWD, root, &rfd);
}

static int fx_teardown(void **state)
{
	(void)state;
	char cmd[128];
	close(rfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static mode_t mode_at(const char *name)
{
	struct stat st;
	assert_int_equal(fstatat(rfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_mode & 07777;
}

/* The content of the planted link's target stays as it was. */
static void plant_target(const char *name, const char *text)
{
	int fd = openat(rfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void assert_content(const char *name, const char *text)
{
	char buf[64] = {0};
	int fd = openat(rfd, name, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), (ssize_t)strlen(text));
	close(fd);
	assert_string_equal(buf, text);
}

static void test_create_refuses_planted_file(void **state)
{
	(void)state;
	int fd;
	plant_target("planted", "victim");
	assert_int_equal(ada_fs_create(rfd, "planted", O_WRONLY, &fd), -EEXIST);
	assert_content("planted", "victim");
}

static void test_create_refuses_planted_link(void **state)
{
	(void)state;
	int fd;
	plant_target("target", "victim");
	assert_int_equal(symlinkat("target", rfd, "link"), 0);
	assert_int_equal(ada_fs_create(rfd, "link", O_WRONLY, &fd), -EEXIST);
	/* A dangling link is refused too (O_CREAT would follow it). */
	assert_int_equal(symlinkat("nowhere", rfd, "dangling"), 0);
	assert_int_equal(ada_fs_create(rfd, "dangling", O_WRONLY, &fd), -EEXIST);
	assert_int_equal(faccessat(rfd, "nowhere", F_OK, 0), -1);
	assert_content("target", "victim");
}

static void test_open_refuses_links(void **state)
{
	(void)state;
	int fd;
	plant_target("file", "x");
	assert_int_equal(mkdirat(rfd, "dir", 0755), 0);
	assert_int_equal(symlinkat("file", rfd, "flink"), 0);
	assert_int_equal(symlinkat("dir", rfd, "dlink"), 0);
	assert_int_equal(ada_fs_open_file(rfd, "flink", O_RDONLY, &fd), -ELOOP);
	assert_int_equal(ada_fs_open_dir(rfd, "dlink", &fd), -ELOOP);
	assert_int_equal(ada_fs_mkdir(rfd, "dlink", 0, &fd), -ELOOP);
	assert_int_equal(ada_fs_open_file(rfd, "dir", O_RDONLY, &fd), -EINVAL);
	assert_int_equal(mkfifoat(rfd, "fifo", 0600), 0);
	assert_int_equal(ada_fs_open_file(rfd, "fifo", O_RDONLY, &fd), -EINVAL);
	assert_int_equal(ada_fs_open_file(rfd, "file", O_RDONLY, &fd), 0);
	close(fd);
}

static void test_modes_under_umask(void **state)
{
	(void)state;
	int fd;
	mode_t old = umask(0);
	assert_int_equal(ada_fs_mkdir(rfd, "d0", ADA_FS_EXCL, &fd), 0);
	close(fd);
	assert_int_equal(ada_fs_create(rfd, "f0", O_WRONLY, &fd), 0);
	close(fd);
	assert_int_equal(ada_fs_replace(rfd, "r0", "abc", 3, true), 0);
	/* A umask that removes the owner's own bits is overridden too. */
	umask(0277);
	assert_int_equal(ada_fs_mkdir(rfd, "d1", ADA_FS_EXCL, &fd), 0);
	close(fd);
	assert_int_equal(ada_fs_create(rfd, "f1", O_WRONLY, &fd), 0);
	close(fd);
	umask(old);
	assert_int_equal(mode_at("d0"), 0700);
	assert_int_equal(mode_at("d1"), 0700);
	assert_int_equal(mode_at("f0"), 0600);
	assert_int_equal(mode_at("f1"), 0600);
	assert_int_equal(mode_at("r0"), 0600);
	assert_content("r0", "abc");
}

static void test_mkdir_excl_and_reuse(void **state)
{
	(void)state;
	int fd;
	assert_int_equal(ada_fs_mkdir(rfd, "m", ADA_FS_EXCL, &fd), 0);
	close(fd);
	assert_int_equal(ada_fs_mkdir(rfd, "m", ADA_FS_EXCL, &fd), -EEXIST);
	assert_int_equal(ada_fs_mkdir(rfd, "m", 0, &fd), 0);
	close(fd);
}

static void test_tmp_names_differ(void **state)
{
	(void)state;
	char a[ADA_FS_TMP_NAME_MAX], b[ADA_FS_TMP_NAME_MAX];
	int fa, fb;
	assert_int_equal(ada_fs_create_tmp(rfd, "manifest.json", O_WRONLY, a, &fa), 0);
	assert_int_equal(ada_fs_create_tmp(rfd, "manifest.json", O_WRONLY, b, &fb), 0);
	close(fa);
	close(fb);
	assert_string_not_equal(a, b);
	assert_int_equal(strncmp(a, "manifest.json.tmp.", 18), 0);
	assert_int_equal(strlen(a), 18 + 16);
	assert_int_equal(mode_at(a), 0600);
	assert_int_equal(ada_fs_commit(rfd, a, "manifest.json"), 0);
	assert_int_equal(faccessat(rfd, a, F_OK, 0), -1);
	assert_int_equal(mode_at("manifest.json"), 0600);
}

static void test_replace_over_link_replaces_link(void **state)
{
	(void)state;
	/* rename() replaces the link itself: the target is never written. */
	plant_target("victim", "victim");
	assert_int_equal(symlinkat("victim", rfd, "out.json"), 0);
	assert_int_equal(ada_fs_replace(rfd, "out.json", "new", 3, false), 0);
	assert_content("victim", "victim");
	assert_content("out.json", "new");
	struct stat st;
	assert_int_equal(fstatat(rfd, "out.json", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
}

static void test_entry_kind_never_follows(void **state)
{
	(void)state;
	int fd;
	assert_int_equal(mkdirat(rfd, "w", 0700), 0);
	assert_int_equal(ada_fs_open_dir(rfd, "w", &fd), 0);
	assert_int_equal(mkdirat(fd, "sub", 0700), 0);
	assert_int_equal(symlinkat(".", fd, "loop"), 0);
	int ffd = openat(fd, "f", O_WRONLY | O_CREAT, 0600);
	close(ffd);
	DIR *d = ada_fs_opendir(rfd, "w");
	assert_non_null(d);
	int dirs = 0, links = 0, regs = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		enum ada_fs_kind k = ada_fs_entry_kind(dirfd(d), de);
		dirs += k == ADA_FS_DIR;
		links += k == ADA_FS_LINK;
		regs += k == ADA_FS_REG;
	}
	closedir(d);
	close(fd);
	assert_int_equal(dirs, 1);
	assert_int_equal(links, 1);
	assert_int_equal(regs, 1);
	assert_null(ada_fs_opendir(rfd, "w/loop"));
	assert_int_equal(errno, ELOOP);
}

static void test_trust(void **state)
{
	(void)state;
	char why[PATH_MAX], path[PATH_MAX];
	int fd;
	uid_t me = geteuid();
	assert_int_equal(mkdirat(rfd, "open", 0700), 0);
	assert_int_equal(fchmodat(rfd, "open", 0777, 0), 0);
	assert_int_equal(ada_fs_open_dir(rfd, "open", &fd), 0);
	assert_int_equal(ada_fs_dir_trusted(fd, me), -EPERM);
	close(fd);
	assert_int_equal(ada_fs_dir_trusted(rfd, me), 0);
	/* /tmp: sticky and root's, so it is a place to pass through. */
	snprintf(path, sizeof(path), "%s/open/x/y", root);
	assert_int_equal(ada_fs_place_trusted(path, me, why, sizeof(why)), -EPERM);
	snprintf(path, sizeof(path), "%s/open", root);
	assert_string_equal(why, path);
	snprintf(path, sizeof(path), "%s/not/yet", root);
	assert_int_equal(ada_fs_place_trusted(path, me, why, sizeof(why)), 0);
	/* A link to the open directory is followed and the target judged. */
	assert_int_equal(symlinkat("open", rfd, "via"), 0);
	snprintf(path, sizeof(path), "%s/via/z", root);
	assert_int_equal(ada_fs_place_trusted(path, me, why, sizeof(why)), -EPERM);
	assert_int_equal(symlinkat("l2", rfd, "l1"), 0);
	assert_int_equal(symlinkat("l1", rfd, "l2"), 0);
	snprintf(path, sizeof(path), "%s/l1/z", root);
	assert_int_equal(ada_fs_place_trusted(path, me, why, sizeof(why)), -ELOOP);
	/* Creating walk: the missing directories appear, 0700, and the last
	 * one comes back opened. */
	snprintf(path, sizeof(path), "%s/new/a/b", root);
	assert_int_equal(ada_fs_walk(path, me, ADA_FS_WALK_CREATE, &fd, why, sizeof(why)), 0);
	assert_true(fd >= 0);
	assert_int_equal(ada_fs_create(fd, "f", O_WRONLY, &fd), 0);
	close(fd);
	assert_int_equal(mode_at("new/a"), 0700);
	assert_int_equal(mode_at("new/a/b/f"), 0600);
	snprintf(path, sizeof(path), "%s/open/c", root);
	assert_int_equal(ada_fs_walk(path, me, ADA_FS_WALK_CREATE, &fd, why, sizeof(why)), -EPERM);
	assert_int_equal(fd, -1);
	assert_int_equal(faccessat(rfd, "open/c", F_OK, 0), -1);
}

/* The private reader: the whole file into the caller's buffer or a
 * malloc'd one, only within the sizes asked, never a file another user
 * may write (budgetmem.c and plancache.c read through it). */
static void test_read_private(void **state)
{
	(void)state;
	char path[PATH_MAX], buf[16];
	plant_target("p", "0123456789");
	assert_int_equal(fchmodat(rfd, "p", 0600, 0), 0);
	snprintf(path, sizeof(path), "%s/p", root);
	size_t len = 99;
	assert_int_equal(ada_fs_read_private(path, 10, sizeof(buf), buf, NULL, &len), 0);
	assert_int_equal(len, 10);
	assert_memory_equal(buf, "0123456789", 10);
	void *m = NULL;
	assert_int_equal(ada_fs_read_private(path, 1, 10, NULL, &m, &len), 0);
	assert_int_equal(len, 10);
	assert_memory_equal(m, "0123456789", 10);
	free(m);
	m = NULL;
	assert_int_equal(ada_fs_read_private(path, 11, 20, NULL, &m, &len), -EBADMSG);
	assert_int_equal(ada_fs_read_private(path, 1, 9, buf, NULL, &len), -EBADMSG);
	assert_null(m);
	assert_int_equal(len, 0);
	assert_int_equal(fchmodat(rfd, "p", 0620, 0), 0);
	assert_int_equal(ada_fs_read_private(path, 1, 10, buf, NULL, &len), -EPERM);
	assert_int_equal(symlinkat("p", rfd, "lp"), 0);
	snprintf(path, sizeof(path), "%s/lp", root);
	assert_int_equal(ada_fs_read_private(path, 1, 10, buf, NULL, &len), -ELOOP);
}

/* How many descriptors the process has open. */
static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* Reads root/<dir>/f (private, "abc"): 0 or read_private's error. */
static int read_in(const char *dir)
{
	char path[PATH_MAX], buf[8];
	size_t len;
	snprintf(path, sizeof(path), "%s/%s/f", root, dir);
	return ada_fs_read_private(path, 1, sizeof(buf), buf, NULL, &len);
}

/* While the memo is on, a read in the directory last walked does not
 * walk again (a directory renamed since is still read through the kept
 * descriptor); another directory is walked and replaces it; the end
 * closes what the memo kept, and walks are walks again. */
static void test_walk_memo(void **state)
{
	(void)state;
	const char *dirs[] = {"d", "e"};
	for (int i = 0; i < 2; i++) {
		char f[8];
		assert_int_equal(mkdirat(rfd, dirs[i], 0700), 0);
		snprintf(f, sizeof(f), "%s/f", dirs[i]);
		plant_target(f, "abc");
		assert_int_equal(fchmodat(rfd, f, 0600, 0), 0);
	}
	int fds = open_fds();
	ada_fs_memo_begin();
	assert_int_equal(read_in("d"), 0);
	assert_int_equal(renameat(rfd, "d", rfd, "d2"), 0);
	assert_int_equal(read_in("d"), 0); /* not walked: the kept descriptor */
	assert_int_equal(read_in("e"), 0); /* walked, now the memo's */
	assert_int_equal(read_in("d"), -ENOENT);
	assert_int_equal(open_fds(), fds + 1);
	ada_fs_memo_end();
	assert_int_equal(open_fds(), fds);
	assert_int_equal(read_in("e"), 0);
	assert_int_equal(renameat(rfd, "e", rfd, "e2"), 0);
	assert_int_equal(read_in("e"), -ENOENT); /* no memo: walked */
	assert_int_equal(read_in("d2"), 0);
}

/* ada_fs_dirents: every entry once over several getdents64 buffers (600
 * names of 40 bytes are well over one 8 KiB buffer), err 0 at the end;
 * -EBADF from a descriptor that is no directory. */
static void test_dirents(void **state)
{
	(void)state;
	enum { N = 600 };
	char name[48];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "entry-%034d", i);
		int fd = openat(rfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	static unsigned char seen[N];
	memset(seen, 0, sizeof(seen));
	int fd = openat(rfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct ada_fs_dirents d;
	unsigned dots = 0, total = 0;
	ada_fs_dirents_init(&d, fd);
	for (const struct dirent64 *de; (de = ada_fs_dirents_next(&d));) {
		int i;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			dots++;
		else if (sscanf(de->d_name, "entry-%d", &i) == 1 && i >= 0 && i < N)
			seen[i]++;
		total++;
	}
	assert_int_equal(d.err, 0);
	assert_int_equal(dots, 2);
	assert_int_equal(total, N + 2);
	for (int i = 0; i < N; i++)
		assert_int_equal(seen[i], 1);
	close(fd);
	ada_fs_dirents_init(&d, -1);
	assert_null(ada_fs_dirents_next(&d));
	assert_int_equal(d.err, -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_create_refuses_planted_file, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_create_refuses_planted_link, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_open_refuses_links, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_modes_under_umask, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_mkdir_excl_and_reuse, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_tmp_names_differ, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_replace_over_link_replaces_link, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_entry_kind_never_follows, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_trust, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_read_private, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_walk_memo, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_dirents, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
