/*
 * The plan cache's and the symbol-table cache's files read into private
 * memory (plancache_internal.h, plan_cache_read_file). Not hook context.
 *
 * Read into a fresh buffer, a file costs a first touch from user space of
 * each of its new pages twice (the copy, then the checksum); on a
 * paravirtualised guest with shadow page tables each is an exit to the
 * hypervisor, for each of a large image's hundreds of pages (cc1's
 * symbol table and plans: docs/benchmarks.md). A file from 64 KiB on is
 * instead copied by the kernel (sendfile) into a memfd of our own, sealed
 * against any write, growth or shrinking (F_SEAL_*), and mapped
 * privately: its pages are the memfd's, which nobody can change (the fd
 * is closed once mapped, and sealed before), so they are as private as a
 * read's buffer -- whatever happens to the cache file afterwards (a
 * rewrite in place, a truncation) -- and a write of ours (the symbol
 * table's statuses) copies just the page it writes. Under a seccomp
 * filter (which may kill for memfd_create or sendfile: hook_no_seccomp),
 * after the start-up scan (hook_seccomp_window), or when any step is
 * refused, the file is read as before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "hook_mem.h"
#include "plancache_internal.h"

/* Files smaller than this are read: a mapping costs more than it saves. */
#define CACHE_FILE_MAP_MIN (64u << 10)

/* want bytes of fd copied by the kernel into a sealed memfd, mapped
 * privately; NULL when any step fails (the caller reads instead). */
static void *cache_file_sealed_copy(int fd, size_t want)
{
#if defined(MFD_ALLOW_SEALING) && defined(F_SEAL_WRITE)
	int m = memfd_create("ada-cache", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0)
		return NULL;
	off_t off = 0;
	bool ok = true;
	while (ok && (size_t)off < want) {
		ssize_t n = sendfile(m, fd, &off, want - (size_t)off);
		ok = n > 0 || (n < 0 && errno == EINTR); /* 0: the file shrank */
	}
	ok = ok &&
	     fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0;
	void *p = ok ? mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE, m, 0) : MAP_FAILED;
	close(m);
	return p == MAP_FAILED ? NULL : p;
#else
	(void)fd, (void)want;
	return NULL;
#endif
}

int plan_cache_read_file(const char *path, uint64_t min, uint64_t max, void **out, size_t *len,
                         size_t *map_len)
{
	*map_len = 0;
	int fd;
	size_t want;
	int err = ada_fs_open_private_sized(path, min, max, &fd, &want);
	if (err && fd < 0)
		return err;
	void *p = !err && want >= CACHE_FILE_MAP_MIN && hook_no_seccomp()
	              ? cache_file_sealed_copy(fd, want)
	              : NULL;
	close(fd);
	if (err)
		return err;
	if (p) {
		*out = p;
		*len = want;
		*map_len = want;
		return 0;
	}
	return ada_fs_read_private(path, min, max, NULL, out, len);
}

void plan_cache_free_file(void *buf, size_t map_len)
{
	if (map_len)
		munmap(buf, map_len);
	else
		free(buf);
}
