/*
 * A module's symbol-table body shared by content (docs/format.md,
 * "Shared symbol bodies"): pid_N/module_<ID>.body is a hard link of the
 * session's symbodies/<key>, made by the first process that wrote that
 * body; a later process of the same image (an exec'd child: make running
 * cc1 again) links it instead of writing it again. Not hook context.
 *
 * The store names a body by the table it is made of (agent_body_key), so
 * a process that finds it there neither formats nor writes its table;
 * what the link finds is checked to be a regular file of the table's
 * count of whole lines, and its length and XXH64 go in the .syms file,
 * which readers check the body against (the store is in the session,
 * where the target can write: it is trusted as far as the session is). A body is written whole
 * under a private name and renamed into pid_N/ before it is linked into the store, so a
 * concurrent writer of the same body finds either nothing or a whole file (its link then fails with
 * EEXIST, and both are the same bytes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "agent_internal.h"
#include "fs.h"

/* Reads no body longer than this (the readers' own largest bound). */
#define AGENT_BODY_MAX (1ull << 30)

/* The '\n' bytes of p[0, n), sixteen at a time in the agent's own code:
 * once libc is hooked, each libc call the agent makes passes a trampoline
 * and the guard's handler (untraced_calls.agent_work), and a memchr per
 * line was one such call per function of the image (6 620 for libc, in
 * every exec'd image that links a shared body: docs/benchmarks.md, cow9).
 * A byte compare of 16 lanes (pcmpeqb, psubb on x86_64; cmeq, sub on
 * arm64), each lane a count up to 255, summed every 255 blocks: libc's
 * 261 KB body in ~16 k blocks, not ~33 k words of bit tricks (exe10). */
typedef uint8_t agent_v16 __attribute__((vector_size(16)));

static size_t agent_count_newlines(const char *p, size_t n)
{
	const agent_v16 nl = {'\n', '\n', '\n', '\n', '\n', '\n', '\n', '\n',
	                      '\n', '\n', '\n', '\n', '\n', '\n', '\n', '\n'};
	size_t c = 0, i = 0;
	while (i + 16 <= n) {
		agent_v16 acc = {0};
		size_t blocks = (n - i) / 16;
		blocks = blocks > 255 ? 255 : blocks; /* no lane passes 255 */
		for (size_t b = 0; b < blocks; b++, i += 16) {
			agent_v16 w;
			memcpy(&w, p + i, sizeof(w)); /* a load: the compiler's own copy */
			acc -= (agent_v16)(w == nl);  /* -1 in each lane that is '\n' */
		}
		for (int k = 0; k < 16; k++)
			c += acc[k];
	}
	for (; i < n; i++)
		c += p[i] == '\n';
	return c;
}

/* The body linked at name under dirfd, when it is a regular file of
 * count whole lines: *hash gets its XXH64, *len its length. */
static bool agent_body_read(int dirfd, const char *name, size_t count, uint64_t *hash, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return false;
	bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	          (uint64_t)st.st_size <= AGENT_BODY_MAX && (st.st_size > 0) == (count > 0);
	size_t n = ok ? (size_t)st.st_size : 0;
	const char *p = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (p == MAP_FAILED)
		return false;
	/* count whole lines: as many '\n' as lines, the last byte one of them. */
	ok = ok && (n ? p[n - 1] == '\n' && agent_count_newlines(p, n) == count : count == 0);
	*hash = ok ? XXH64(p, n, 0) : 0;
	*len = n;
	if (p)
		munmap((void *)p, n);
	return ok;
}

/* What the store names a body by, taken from the table it is made of
 * rather than its text, so that a process finds it without formatting
 * its table: the image's build-id (or "-"), the symbol-table source, the
 * XXH64 of the function records and names pool, and the count. Equal
 * keys are equal tables, and equal tables format to the same body. */
static void agent_body_key(const struct agent_module *m, char *key, size_t cap)
{
	const struct ada_hook_symtab *st = &m->st;
	char bid[2 * sizeof(st->build_id) + 2] = "-";
	size_t n =
	    st->build_id_len < sizeof(st->build_id) ? st->build_id_len : sizeof(st->build_id);
	for (size_t i = 0; i < n; i++)
		snprintf(bid + 2 * i, 3, "%02x", st->build_id[i]);
	uint64_t h = XXH64(st->names, st->names_len, 0);
	h = XXH64(st->fns, st->count * sizeof(*st->fns), h);
	snprintf(key, cap, "%s.%s.%016" PRIx64 ".%zu", bid, ada_symtab_source_name(st->source), h,
	         st->count);
}

/* The session's symbodies/, created when absent; -1 when it cannot be. */
static int agent_open_store(void)
{
	int sfd = -1, fd = -1;
	if (ada_fs_open_dir(AT_FDCWD, agent.session_dir, &sfd) != 0)
		return -1;
	if (ada_fs_mkdir(sfd, "symbodies", 0, &fd) != 0)
		fd = -1;
	close(sfd);
	return fd;
}

/* Links pid_N/name into the store as key. EEXIST: another process
 * stored the same body first, or a planted file is there, which ours
 * replaces (through a private name, renamed over it) so that later
 * processes find the body. */
static void agent_store_body(int store, int pid_fd, const char *name, const char *key)
{
	char tmp[ADA_FS_TMP_NAME_MAX];
	if (linkat(pid_fd, name, store, key, 0) == 0)
		return;
	if (errno == EEXIST && ada_fs_tmp_name(key, tmp, sizeof(tmp)) == 0 &&
	    linkat(pid_fd, name, store, tmp, 0) == 0 && ada_fs_commit(store, tmp, key) == 0)
		return;
	agent.syms_bodies_unstored++;
}

/* Bytes of the buffer a body is formatted through: reused a part at a
 * time, its pages warm after the first. A buffer of the whole body
 * (cc1's is 2 MB) is hundreds of fresh pages, each touched first by the
 * format and read again by the write: on a paravirtualised guest the
 * larger part of writing a large image's files (docs/benchmarks.md). */
#define AGENT_BODY_PART (64u << 10)

/* m's body into pid_N/name (a private temporary file, renamed), *hash
 * its XXH64 and *len its length. */
static int agent_write_body(int pid_fd, const struct agent_module *m, const char *name,
                            uint64_t *hash, size_t *len)
{
	char tmp[ADA_FS_TMP_NAME_MAX];
	size_t cap = AGENT_BODY_PART, next = 0, need = 0;
	char *buf = malloc(cap);
	int fd = -1, err = buf ? ada_fs_create_tmp(pid_fd, name, O_WRONLY, tmp, &fd) : -ENOMEM;
	XXH64_state_t s;
	XXH64_reset(&s, 0);
	*len = 0;
	while (!err && next < m->st.count) {
		size_t n = ada_hook_syms_body_part(&m->st, &next, buf, cap, &need);
		if (n == 0) { /* one line longer than the buffer: a larger one */
			char *nb = realloc(buf, need);
			err = nb ? 0 : -ENOMEM;
			buf = nb ? nb : buf;
			cap = nb ? need : cap;
			continue;
		}
		XXH64_update(&s, buf, n);
		*len += n;
		err = ada_fs_write_all(fd, buf, n);
	}
	free(buf);
	*hash = XXH64_digest(&s);
	if (fd >= 0 && close(fd) < 0 && !err)
		err = -errno;
	if (fd >= 0 && err)
		unlinkat(pid_fd, tmp, 0);
	return err || fd < 0 ? err : ada_fs_commit(pid_fd, tmp, name);
}

int agent_put_body(int pid_fd, const struct agent_module *m, const char *name, uint64_t *hash,
                   size_t *len)
{
	unlinkat(pid_fd, name, 0); /* a dlopen writes the files again */
	char key[128];
	agent_body_key(m, key, sizeof(key));
	int store = agent_open_store();
	if (store >= 0 && linkat(store, key, pid_fd, name, 0) == 0) {
		if (agent_body_read(pid_fd, name, m->st.count, hash, len)) {
			agent.syms_bodies_shared++;
			close(store);
			return 0;
		}
		/* Not a body of this table: a planted file. Ours replaces it. */
		unlinkat(pid_fd, name, 0);
		agent.syms_bodies_refused++;
	}
	int err = agent_write_body(pid_fd, m, name, hash, len);
	if (!err) {
		agent.syms_bodies_written++;
		if (store >= 0)
			agent_store_body(store, pid_fd, name, key);
	}
	if (store >= 0)
		close(store);
	return err;
}
