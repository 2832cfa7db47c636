/*
 * ada export --format atf -o DIR SRC: a strict ATF v2 copy of a recording,
 * for tools that read ATF v2 files themselves. The directory tree under
 * SRC (a session, a pid_N or a thread_K) is copied under DIR; each compact
 * index file (ATC1, cidx.h) becomes its ATF v2 form (ada_cidx_to_atf_fd:
 * the same events, links included, 32 bytes each, the footer's CRC-32);
 * every other file is copied as it is. A pid_N's manifest.json is written
 * last, with each converted file's entry saying "encoding": "atf" and its
 * new bytes and crc32.
 *
 * Threads: the compact files are converted on rd_par_threads() threads
 * (read_par.h), one file each at a time, as the walk meets them (threads'
 * files are independent: each is written by its own thread, no lock of
 * the kernel's shared); every other file is copied, and each manifest
 * written, by the CLI's thread, a pid's manifest once its files are all
 * converted. A failed conversion is said when its result is taken back,
 * in the order the walk met the files. A compact file is mapped and
 * written out a piece at a time; every other file is copied by the
 * kernel (or through a 1 MiB buffer): memory does not grow with the
 * files (two conversions in flight a thread).
 * Durability: every file written is fdatasync'd and every directory
 * written fsync'd, DIR's parent included, before the command returns
 * (docs/reading.md).
 * The session is input (the traced program can write under it): below
 * SRC nothing is followed, and a FIFO is not waited on. DIR and each
 * directory under it are made 0700 or must be a directory of the
 * effective user's (not a link: -ELOOP, not another's: -EPERM), and
 * every file is written relative to its directory's descriptor, never
 * through a link, so a DIR planted as a link (or swapped for one while
 * the export runs) is not written through.
 * Exit status: 0; 1 when a file could not be read, converted, written or
 * synced (the rest is exported; what was written of that file removed).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf.h"
#include "atf_format.h"
#include "cidx.h"
#include "cmd.h"
#include "fs.h"
#include "manifest.h"
#include "read.h"
#include "read_par.h"

/* dirfd/name for writing: a new file, or one of ours rewritten, never a
 * link's target. */
static int xa_create(int dirfd, const char *name)
{
	return openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* fd, the new file dirfd/name, closed; removed when r (its writing) or
 * the close failed: what is left of it is no copy of its source, and a
 * converted file's manifest entry would describe its last bytes as an
 * ATF v2 footer (xa_manifest_entry). Returns r, else the close's error. */
static int xa_close_out(int fd, int dirfd, const char *name, int r)
{
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, name, 0); /* ours: made by xa_create in our directory */
	return r;
}

/* Copies in to a new file at path: in the kernel (copy_file_range), else
 * through a 1 MiB buffer; never the whole file in memory. */
static int xa_copy(int in, int dirfd, const char *name)
{
	int out = xa_create(dirfd, name);
	if (out < 0)
		return -errno;
	int r = 0;
	ssize_t k;
	while ((k = copy_file_range(in, NULL, out, NULL, 1u << 30, 0)) > 0)
		;
	if (k < 0 && errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
		r = -errno;
	else if (k < 0) { /* not here: by hand from where it stopped */
		uint8_t *buf = malloc(1u << 20);
		r = buf ? 0 : -ENOMEM;
		while (r == 0 && (k = read(in, buf, 1u << 20)) > 0)
			for (ssize_t done = 0, w; r == 0 && done < k; done += w)
				if ((w = write(out, buf + done, (size_t)(k - done))) <= 0)
					r = w < 0 ? -errno : -EIO;
		if (r == 0 && k < 0)
			r = -errno;
		free(buf);
	}
	if (r == 0 && fdatasync(out) < 0) /* on disk at return, as the converted files */
		r = -errno;
	return xa_close_out(out, dirfd, name, r);
}

/* The directory at path on disk (fsync): its names, once its files are
 * in it. The path is the export's own output (made by ada_fs_mkdir:
 * oflags O_NOFOLLOW), or the user's directory DIR was made in (0). */
static int xa_sync_dir(const char *path, int oflags)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | oflags);
	if (fd < 0)
		return -errno;
	int r = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* A compact index file into its ATF v2 form at dirfd/name (on disk when
 * it returns: ada_cidx_file_to_atf_fd() syncs it); xflags: the export's
 * (ADA_CIDX_EXPORT_DIRECT_ONLY); *how: the way it went. */
static int xa_convert(int in, size_t len, int dirfd, const char *name, unsigned xflags,
                      enum ada_cidx_export_how *how)
{
	int fd = xa_create(dirfd, name);
	*how = ADA_CIDX_EXPORT_PLAIN;
	if (fd < 0)
		return -errno;
	return xa_close_out(fd, dirfd, name, ada_cidx_file_to_atf_fd(in, len, xflags, fd, how));
}

/* A file that could not be exported, said in one sentence. */
static void xa_not_exported(const char *path, int r)
{
	if (r == -ESTALE)
		ada_log("%s shrank while being read: not exported (what lay past its new end "
		        "read as zeros)",
		        path);
	else
		ada_log("%s: not exported: %s", path, rd_strerror(r));
}

/* The conversions in flight (pool NULL: each done where it is met). */
struct xa_pool {
	struct rd_par *par;
	unsigned n;        /* its threads */
	unsigned *bad;     /* files not exported */
	unsigned fallback; /* files written with O_DIRECT: RWF_DONTCACHE refused */
	unsigned xflags;   /* the conversions' (ADA_CIDX_EXPORT_DIRECT_ONLY) */
	char **dirs;       /* the directories written, synced at the end */
	size_t ndirs;
};

/* dir (written) to be synced once every file in it is. -ENOMEM. */
static int xa_dir_note(struct xa_pool *pool, const char *dir)
{
	char **d = realloc(pool->dirs, (pool->ndirs + 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	pool->dirs = d;
	return (d[pool->ndirs] = strdup(dir)) ? (pool->ndirs++, 0) : -ENOMEM;
}

struct xa_job {
	struct rd_par_job pj; /* first: the pool's job */
	int in, dirfd;        /* dirfd: the job's own descriptor of the directory */
	size_t len;
	char *from, *to;
	int r;
	unsigned xflags;
	enum ada_cidx_export_how how;
};

static void xa_job_run(struct rd_par_job *pj)
{
	struct xa_job *j = (struct xa_job *)pj;
	j->r = xa_convert(j->in, j->len, j->dirfd, j->to, j->xflags, &j->how);
	close(j->in);
}

static void xa_job_free(struct xa_job *j)
{
	if (j->dirfd >= 0)
		close(j->dirfd);
	free(j->from);
	free(j->to);
	free(j);
}

/* The oldest conversion back, its failure said; false when none is out. */
static bool xa_take(struct xa_pool *pool)
{
	struct xa_job *j = (struct xa_job *)rd_par_take(pool->par);
	if (!j)
		return false;
	if (j->r < 0) {
		xa_not_exported(j->from, j->r);
		(*pool->bad)++;
	}
	pool->fallback += j->how == ADA_CIDX_EXPORT_DIRECT_FALLBACK;
	xa_job_free(j);
	return true;
}

/* Every conversion in flight back (before a manifest that names them). */
static void xa_drain(struct xa_pool *pool)
{
	while (pool && pool->par && xa_take(pool))
		;
}

/* in (the pool's then) converted to dirfd/to by the pool; its failure
 * said when it is taken back. -ENOMEM (in is the caller's again). */
static int xa_submit(struct xa_pool *pool, int in, size_t len, const char *from, int dirfd,
                     const char *to)
{
	struct xa_job *j = calloc(1, sizeof(*j));
	if (j)
		j->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (!j || j->dirfd < 0 || !(j->from = strdup(from)) || !(j->to = strdup(to))) {
		if (j)
			xa_job_free(j);
		return -ENOMEM;
	}
	j->in = in;
	j->len = len;
	j->xflags = pool->xflags;
	while (rd_par_pending(pool->par) >= 2 * (size_t)pool->n)
		xa_take(pool);
	rd_par_submit(pool->par, &j->pj);
	return 0;
}

/* One file: converted when it is a compact index (by the pool when there
 * is one: 0 then says only that it went), else copied. */
static int xa_file(const char *from, int dirfd, const char *to, struct xa_pool *pool)
{
	/* Never through a link (none below the session: ada_fs_root_add);
	 * never blocked by a FIFO planted in a session. */
	int in = -1, r = ada_fs_open_path(from, O_RDONLY | O_NONBLOCK, 0, &in);
	struct stat st;
	char magic[4];
	if (r < 0)
		return r;
	r = fstat(in, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
	bool compact = r == 0 && pread(in, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	               ada_cidx_is_compact(magic, sizeof(magic));
	if (compact && pool && pool->par &&
	    !xa_submit(pool, in, (size_t)st.st_size, from, dirfd, to))
		return 0;
	enum ada_cidx_export_how how = ADA_CIDX_EXPORT_PLAIN;
	if (r == 0)
		r = compact ? xa_convert(in, (size_t)st.st_size, dirfd, to, pool ? pool->xflags : 0,
		                         &how)
		            : xa_copy(in, dirfd, to);
	if (pool)
		pool->fallback += how == ADA_CIDX_EXPORT_DIRECT_FALLBACK;
	close(in);
	return r;
}

/* A file entry of the manifest that names a converted file: its new
 * encoding, size and CRC (from the written file's footer). The path is
 * the manifest's (input): one under outdir only. */
static void xa_manifest_entry(json_t *o, int outdir)
{
	const char *enc = json_string_value(json_object_get(o, "encoding"));
	const char *rel = json_string_value(json_object_get(o, "path"));
	struct stat st;
	struct atf_index_footer ft;
	if (!enc || strcmp(enc, "compact") || !rel || rel[0] == '/' || strstr(rel, ".."))
		return;
	int fd = openat(outdir, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_size >= (off_t)(2 * ATF_HEADER_SIZE) &&
	    pread(fd, &ft, sizeof(ft), st.st_size - (off_t)sizeof(ft)) == (ssize_t)sizeof(ft)) {
		json_object_set_new(o, "encoding", json_string("atf"));
		json_object_set_new(o, "bytes", json_integer((json_int_t)st.st_size));
		json_object_set_new(o, "crc32", json_integer(ft.checksum));
	}
	close(fd);
}

static void xa_manifest_walk(json_t *j, int outdir)
{
	const char *k;
	json_t *v;
	size_t i;
	if (json_is_object(j)) {
		xa_manifest_entry(j, outdir);
		const char *f = json_string_value(json_object_get(j, "index_format"));
		if (f && !strcmp(f, "compact"))
			json_object_set_new(j, "index_format", json_string("atf"));
		json_object_foreach(j, k, v) xa_manifest_walk(v, outdir);
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v) xa_manifest_walk(v, outdir);
	}
}

/* dir's manifest.json (read as every reader reads it: a regular file,
 * not a link, bounded) into outdir, its converted files' entries new. */
static int xa_manifest(const char *dir, int outdir)
{
	json_t *m = NULL;
	if (ada_manifest_read(dir, &m) < 0) { /* not a manifest we know: as it is */
		char from[PATH_MAX];
		snprintf(from, sizeof(from), "%s/manifest.json", dir);
		return xa_file(from, outdir, "manifest.json", NULL);
	}
	xa_manifest_walk(m, outdir);
	int r = ada_json_writeat(outdir, "manifest.json", m, true); /* on disk at return */
	json_decref(m);
	return r;
}

/* from's tree into the directory to (under the descriptor at; opath: its
 * whole path, to sync it at the end). The root (depth 0) is the user's
 * choice; below it nothing is followed. */
static int xa_dir(const char *from, int at, const char *to, const char *opath, int depth,
                  unsigned *bad, struct xa_pool *pool)
{
	DIR *d = depth == 0 ? opendir(from) : ada_fs_opendir(AT_FDCWD, from);
	if (!d)
		return -errno;
	int tfd = -1, r = ada_fs_mkdir(at, to, 0, &tfd);
	if (r < 0) {
		closedir(d);
		return r;
	}
	bool manifest = false;
	struct dirent *de;
	char f[PATH_MAX], o[PATH_MAX];
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strcmp(de->d_name, "manifest.json")) {
			manifest = true; /* after the files it describes */
			continue;
		}
		snprintf(f, sizeof(f), "%s/%s", from, de->d_name);
		struct stat st;
		if (ada_fs_lstat_path(f, &st) < 0)
			continue;
		snprintf(o, sizeof(o), "%s/%s", opath, de->d_name);
		r = S_ISDIR(st.st_mode)   ? xa_dir(f, tfd, de->d_name, o, depth + 1, bad, pool)
		    : S_ISREG(st.st_mode) ? xa_file(f, tfd, de->d_name, pool)
		    : S_ISLNK(st.st_mode) ? -ELOOP /* planted: said, not followed */
		                          : 0;
		if (r < 0) {
			xa_not_exported(f, r);
			(*bad)++;
		}
	}
	closedir(d);
	if (manifest) {
		xa_drain(pool); /* the manifest reads the converted files' footers */
		if (xa_manifest(from, tfd) < 0) {
			ada_log("%s/manifest.json: not exported", from);
			(*bad)++;
		}
	}
	close(tfd);
	return xa_dir_note(pool, opath);
}

/* A file whose export is long (a compact index of 1 MiB holds 170 000
 * to 900 000 events: 5-29 MB of ATF v2). */
#define XA_LARGE (1ull << 20)

/* How deep xa_count_large() looks (a session's tree has 3 levels). */
#define XA_LARGE_DEPTH 4

/* The files of XA_LARGE or more under dir (at most 2: enough to know),
 * depth levels down at most; below the user's dir no link is followed. */
static unsigned xa_count_large(const char *dir, int depth)
{
	DIR *d = depth <= 0                ? NULL
	         : depth == XA_LARGE_DEPTH ? opendir(dir)
	                                   : ada_fs_opendir(AT_FDCWD, dir);
	unsigned n = 0;
	struct dirent *de;
	char f[PATH_MAX];
	struct stat st;
	while (d && n < 2 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(f, sizeof(f), "%s/%s", dir, de->d_name);
		if (ada_fs_lstat_path(f, &st) < 0)
			continue;
		n += S_ISDIR(st.st_mode) ? xa_count_large(f, depth - 1)
		                         : S_ISREG(st.st_mode) && (uint64_t)st.st_size >= XA_LARGE;
	}
	if (d)
		closedir(d);
	return n;
}

/* The directory out was made in (its entry for out): "." for a bare
 * name, "/" at the root. Into buf (PATH_MAX). */
static const char *xa_parent(const char *out, char *buf)
{
	snprintf(buf, PATH_MAX, "%s", out);
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	char *s = strrchr(buf, '/');
	if (!s)
		return ".";
	s[s == buf] = '\0'; /* "/x": "/" */
	return buf;
}

/* Every directory the export wrote on disk, and (out: it was made) the
 * one out is in, whose new entry is out: without it, the export could
 * vanish whole with a crash after the command returned. Each failure
 * said and counted in *bad; pool->dirs freed. */
static void xa_sync_dirs(struct xa_pool *pool, const char *out, unsigned *bad)
{
	char parent[PATH_MAX];
	for (size_t i = pool->ndirs; i-- > 0; free(pool->dirs[i])) { /* the names on disk */
		int s = xa_sync_dir(pool->dirs[i], O_NOFOLLOW);
		if (s < 0) {
			ada_log("%s: not synced: %s", pool->dirs[i], strerror(-s));
			(*bad)++;
		}
	}
	free(pool->dirs);
	const char *dir = out ? xa_parent(out, parent) : NULL;
	int s = dir ? xa_sync_dir(dir, 0) : 0; /* the user's path: a link there is theirs */
	if (s < 0) {
		ada_log("%s: not synced: %s", dir, strerror(-s));
		(*bad)++;
	}
}

int cmd_export_atf(const char *src, const char *out)
{
	unsigned bad = 0;
	struct xa_pool pool = {.n = rd_par_threads(), .bad = &bad};
	/* RWF_DONTCACHE's copy into the page cache takes a CPU of its own (an
	 * io_uring worker's) beside the decoding: one large file at a time
	 * gains by it; several at once on the machine's CPUs lost to O_DIRECT
	 * (docs/benchmarks.md, "The export's write mode"). */
	if (xa_count_large(src, XA_LARGE_DEPTH) > 1)
		pool.xflags = ADA_CIDX_EXPORT_DIRECT_ONLY;
	if (pool.n > 1 && rd_par_new(pool.n, xa_job_run, &pool.par))
		pool.par = NULL; /* no threads to be had: one at a time */
	int r = xa_dir(src, AT_FDCWD, out, out, 0, &bad, &pool);
	xa_drain(&pool);
	rd_par_free(pool.par);
	xa_sync_dirs(&pool, r == 0 ? out : NULL, &bad);
	if (pool.fallback)
		ada_log("%u index file(s) written with O_DIRECT: this kernel or file system "
		        "refused RWF_DONTCACHE (Linux 6.14+), the export's faster way "
		        "(docs/benchmarks.md)",
		        pool.fallback);
	if (r < 0) {
		ada_log("%s -> %s: %s", src, out, strerror(-r));
		return 1;
	}
	return bad ? 1 : 0;
}
