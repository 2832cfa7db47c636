/*
 * A module's symbol-table body shared by content (docs/format.md,
 * "Shared symbol bodies"): modules/module_<ID>.body is a hard link of the
 * session's symbodies/<key>, made by the first process that wrote that
 * body; a later process of the same image (an exec'd child: make running
 * cc1 again) links it instead of writing it again. Not hook context.
 *
 * Whatever the link finds is checked (a regular file of the body's
 * length and XXH64) before it is kept: the store is in the session,
 * where the target can write. A body is written whole under a private
 * name and renamed into modules/ before it is linked into the store, so
 * a concurrent writer of the same body finds either nothing or a whole
 * file (its link then fails with EEXIST, and both are the same bytes).
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

/* True when name under dirfd is a regular file of len bytes whose XXH64
 * is hash. */
static bool agent_body_matches(int dirfd, const char *name, size_t len, uint64_t hash)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return false;
	bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == len;
	if (ok && len) {
		void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		ok = p != MAP_FAILED && XXH64(p, len, 0) == hash;
		if (p != MAP_FAILED)
			munmap(p, len);
	}
	close(fd);
	return ok;
}

/* The store's name for a body: the image's build-id (or "-"), the
 * symbol-table source, the body's XXH64 and length. */
static void agent_body_key(const struct agent_module *m, uint64_t hash, size_t len, char *key,
                           size_t cap)
{
	char bid[2 * sizeof(m->st.build_id) + 2] = "-";
	size_t n = m->st.build_id_len < sizeof(m->st.build_id) ? m->st.build_id_len
	                                                       : sizeof(m->st.build_id);
	for (size_t i = 0; i < n; i++)
		snprintf(bid + 2 * i, 3, "%02x", m->st.build_id[i]);
	snprintf(key, cap, "%s.%s.%016" PRIx64 ".%zu", bid, ada_symtab_source_name(m->st.source),
	         hash, len);
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

/* Links modules/name into the store as key. EEXIST: another process
 * stored the same body first, or a planted file is there, which ours
 * replaces (through a private name, renamed over it) so that later
 * processes find the body. */
static void agent_store_body(int store, int mod_fd, const char *name, const char *key)
{
	char tmp[ADA_FS_TMP_NAME_MAX];
	if (linkat(mod_fd, name, store, key, 0) == 0)
		return;
	if (errno == EEXIST && ada_fs_tmp_name(key, tmp, sizeof(tmp)) == 0 &&
	    linkat(mod_fd, name, store, tmp, 0) == 0 && ada_fs_commit(store, tmp, key) == 0)
		return;
	agent.syms_bodies_unstored++;
}

int agent_put_body(int mod_fd, const struct agent_module *m, const char *name, const char *body,
                   size_t len, uint64_t hash)
{
	/* Already here (a dlopen writes the files again): nothing to do. */
	if (agent_body_matches(mod_fd, name, len, hash))
		return 0;
	unlinkat(mod_fd, name, 0);
	char key[128];
	agent_body_key(m, hash, len, key, sizeof(key));
	int store = agent_open_store();
	if (store >= 0 && linkat(store, key, mod_fd, name, 0) == 0) {
		if (agent_body_matches(mod_fd, name, len, hash)) {
			agent.syms_bodies_shared++;
			close(store);
			return 0;
		}
		/* Not this body: a planted file. Ours replaces the link. */
		unlinkat(mod_fd, name, 0);
		agent.syms_bodies_refused++;
	}
	int err = ada_fs_replace(mod_fd, name, body, len, false);
	if (!err) {
		agent.syms_bodies_written++;
		if (store >= 0)
			agent_store_body(store, mod_fd, name, key);
	}
	if (store >= 0)
		close(store);
	return err;
}
