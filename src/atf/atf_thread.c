/*
 * Thread directories (thread_N/ with their retention generations) and
 * session trees (every pid_N/ at or under a root directory).
 *
 * Threads: CLI only (dump, validate, export). Generations: index.g<G>.atf
 * files are older, complete ATF files (index_seq restarts at 0 in each);
 * detail.g<G>.atf belongs to index.g<G>.atf; index.atf is the newest.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "atf_internal.h"
#include "fs.h"

/* Parses a decimal uint32 filling all of [s, s + n); false otherwise. */
static bool atf_parse_u32(const char *s, size_t n, uint32_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 10)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool atf_parse_prefixed(const char *name, const char *prefix, uint32_t *out)
{
	size_t p = strlen(prefix);
	return !strncmp(name, prefix, p) && atf_parse_u32(name + p, strlen(name + p), out);
}

bool ada_atf_parse_index_name(const char *name, uint32_t *gen)
{
	size_t n = strlen(name);

	if (!strcmp(name, "index.atf")) {
		*gen = ADA_ATF_CURRENT_GEN;
		return true;
	}
	/* "index.g" G ".atf"; G must not be UINT32_MAX (that means current). */
	if (n < 12 || strncmp(name, "index.g", 7) || strcmp(name + n - 4, ".atf"))
		return false;
	return atf_parse_u32(name + 7, n - 11, gen) && *gen != ADA_ATF_CURRENT_GEN;
}

int ada_atf_gen_name(char *buf, size_t len, bool detail, uint32_t gen)
{
	const char *base = detail ? "detail" : "index";
	int n = gen == ADA_ATF_CURRENT_GEN ? snprintf(buf, len, "%s.atf", base)
	                                   : snprintf(buf, len, "%s.g%u.atf", base, gen);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Parses the last component of dir (trailing slashes ignored) as prefix N. */
static bool atf_dir_number(const char *dir, const char *prefix, uint32_t *n)
{
	char tmp[NAME_MAX + 1];
	size_t end = strlen(dir), start;

	while (end > 1 && dir[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && dir[start - 1] != '/')
		start--;
	if (end - start > NAME_MAX)
		return false;
	memcpy(tmp, dir + start, end - start);
	tmp[end - start] = '\0';
	return atf_parse_prefixed(tmp, prefix, n);
}

static int gen_cmp(const void *a, const void *b)
{
	const struct ada_atf_gen *x = a, *y = b;
	return x->generation < y->generation ? -1 : x->generation > y->generation;
}

static int thread_add_gen(struct ada_atf_thread *t, uint32_t g)
{
	struct ada_atf_gen *p = realloc(t->gen, (t->ngen + 1) * sizeof(*p));
	char name[64];
	struct stat st;

	if (!p)
		return -ENOMEM;
	t->gen = p;
	p = &t->gen[t->ngen];
	memset(p, 0, sizeof(*p));
	p->generation = g;
	ada_atf_gen_name(name, sizeof(name), false, g);
	p->index_path = atf_strdup_printf("%s/%s", t->dir, name);
	ada_atf_gen_name(name, sizeof(name), true, g);
	p->detail_path = atf_strdup_printf("%s/%s", t->dir, name);
	if (!p->index_path || !p->detail_path) {
		free(p->index_path);
		free(p->detail_path);
		return -ENOMEM;
	}
	if (ada_fs_lstat_path(p->detail_path, &st) != 0) {
		free(p->detail_path);
		p->detail_path = NULL;
	}
	t->ngen++;
	return 0;
}

static int thread_list(struct ada_atf_thread *t)
{
	DIR *d = ada_fs_opendir(AT_FDCWD, t->dir);
	struct dirent *de;
	uint32_t g;
	int err = 0;

	if (!d)
		return -errno;
	for (unsigned n = 0; !err && n < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); n++)
		if (ada_atf_parse_index_name(de->d_name, &g))
			err = thread_add_gen(t, g);
	closedir(d);
	if (!err && t->ngen == 0)
		err = -ENOENT;
	if (!err)
		qsort(t->gen, t->ngen, sizeof(*t->gen), gen_cmp);
	return err;
}

int ada_atf_thread_scan(const char *dir, struct ada_atf_thread **out)
{
	struct ada_atf_thread *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	if (!atf_dir_number(dir, "thread_", &t->thread)) {
		err = -EINVAL;
		goto fail;
	}
	t->dir = strdup(dir);
	if (!t->dir) {
		err = -ENOMEM;
		goto fail;
	}
	err = thread_list(t);
	if (err)
		goto fail;
	*out = t;
	return 0;
fail:
	ada_atf_thread_free(t);
	return err;
}

int ada_atf_thread_open(const char *dir, unsigned flags, struct ada_atf_thread **out)
{
	struct ada_atf_thread *t;
	int err = ada_atf_thread_scan(dir, &t);

	if (err)
		return err;
	for (size_t i = 0; i < t->ngen; i++) {
		struct ada_atf_gen *g = &t->gen[i];
		g->index_err = ada_atf_index_open(g->index_path, flags, &g->index);
		if (g->detail_path)
			g->detail_err = ada_atf_detail_open(g->detail_path, flags, &g->detail);
	}
	*out = t;
	return 0;
}

void ada_atf_thread_free(struct ada_atf_thread *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->ngen; i++) {
		ada_atf_index_free(t->gen[i].index);
		ada_atf_detail_free(t->gen[i].detail);
		free(t->gen[i].index_path);
		free(t->gen[i].detail_path);
	}
	free(t->gen);
	free(t->dir);
	free(t);
}

/* ----------------------------------------------------------------- tree */

#define ATF_TREE_MAX_DEPTH 8

struct atf_thread_ent {
	uint32_t n;
	char *dir;
};

static int thread_ent_cmp(const void *a, const void *b)
{
	const struct atf_thread_ent *x = a, *y = b;
	return x->n < y->n ? -1 : x->n > y->n;
}

/* What the entry de of the stream d is, without following it; a link is
 * counted in the tree (readers say how many they skipped). */
static enum ada_fs_kind tree_kind(struct ada_atf_tree *t, DIR *d, const struct dirent *de)
{
	enum ada_fs_kind k = ada_fs_entry_kind(dirfd(d), de);
	if (k == ADA_FS_LINK)
		t->links_skipped++;
	return k;
}

static int pid_collect_threads(struct ada_atf_tree *t, struct ada_atf_pid *p)
{
	struct atf_thread_ent *ents = NULL;
	size_t n = 0;
	struct dirent *de;
	DIR *d = ada_fs_opendir(AT_FDCWD, p->dir);
	int err = 0;
	uint32_t num;

	if (!d)
		return -errno;
	for (unsigned i = 0; !err && i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		if (tree_kind(t, d, de) != ADA_FS_DIR ||
		    !atf_parse_prefixed(de->d_name, "thread_", &num))
			continue;
		char *path = atf_strdup_printf("%s/%s", p->dir, de->d_name);
		struct atf_thread_ent *e = realloc(ents, (n + 1) * sizeof(*e));
		if (!path || !e) {
			free(path);
			if (e)
				ents = e;
			err = -ENOMEM;
			break;
		}
		ents = e;
		ents[n++] = (struct atf_thread_ent){num, path};
	}
	closedir(d);
	if (!err && n) {
		qsort(ents, n, sizeof(*ents), thread_ent_cmp);
		p->thread_dirs = calloc(n, sizeof(char *));
		p->thread_ids = calloc(n, sizeof(uint32_t));
		if (!p->thread_dirs || !p->thread_ids)
			err = -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (err) {
			free(ents[i].dir);
			continue;
		}
		p->thread_dirs[i] = ents[i].dir;
		p->thread_ids[i] = ents[i].n;
	}
	if (!err)
		p->nthreads = n;
	free(ents);
	return err;
}

static int tree_add_pid(struct ada_atf_tree *t, const char *dir, uint32_t pid)
{
	struct ada_atf_pid *p = realloc(t->pids, (t->npids + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	t->pids = p;
	p = &t->pids[t->npids];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->dir = strdup(dir);
	if (!p->dir)
		return -ENOMEM;
	t->npids++;
	return pid_collect_threads(t, p);
}

static int tree_walk(struct ada_atf_tree *t, const char *dir, int depth)
{
	uint32_t pid;
	DIR *d;
	struct dirent *de;
	int err = 0;

	if (atf_dir_number(dir, "pid_", &pid))
		return tree_add_pid(t, dir, pid);
	if (depth == 0) {
		/* "." or "../pid_7/.." : judge the root by its real name. */
		char *real = realpath(dir, NULL);
		bool is_pid = real && atf_dir_number(real, "pid_", &pid);
		free(real);
		if (is_pid)
			return tree_add_pid(t, dir, pid);
	}
	if (depth >= ATF_TREE_MAX_DEPTH)
		return 0;
	/* The root is the user's choice; below it nothing is followed, so no
	 * directory is visited twice and a loop of links ends at once. */
	d = depth == 0 ? opendir(dir) : ada_fs_opendir(AT_FDCWD, dir);
	if (!d)
		return 0; /* unreadable subdirectories are not traces */
	for (unsigned i = 0; !err && i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		if (de->d_name[0] == '.' || tree_kind(t, d, de) != ADA_FS_DIR)
			continue;
		char *sub = atf_strdup_printf("%s/%s", dir, de->d_name);
		if (!sub) {
			err = -ENOMEM;
			break;
		}
		err = tree_walk(t, sub, depth + 1);
		free(sub);
	}
	closedir(d);
	return err;
}

static int pid_cmp(const void *a, const void *b)
{
	const struct ada_atf_pid *x = a, *y = b;
	return strcmp(x->dir, y->dir);
}

int ada_atf_tree_scan(const char *root, struct ada_atf_tree **out)
{
	struct ada_atf_tree *t;
	struct stat st;
	int err;

	if (stat(root, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	err = tree_walk(t, root, 0);
	if (err) {
		ada_atf_tree_free(t);
		return err;
	}
	if (t->npids) /* qsort(NULL, 0) is undefined */
		qsort(t->pids, t->npids, sizeof(*t->pids), pid_cmp);
	*out = t;
	return 0;
}

void ada_atf_tree_free(struct ada_atf_tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->npids; i++) {
		for (size_t j = 0; j < t->pids[i].nthreads; j++)
			free(t->pids[i].thread_dirs[j]);
		free(t->pids[i].thread_dirs);
		free(t->pids[i].thread_ids);
		free(t->pids[i].dir);
	}
	free(t->pids);
	free(t);
}
