/*
 * Key-symbol sets on the recorder side: the recording's spec (what the
 * user asked for, src/keysym), turned into one set per traced process
 * from that process's module tables and published into its arena's
 * key-symbol area (ada_keysym_region: the RCU swap).
 *
 * Threads: ada_recorder_keysym_set() runs on any thread (the control
 * socket's); it stages the spec under ks->mu, bumps ks->staged_gen and waits
 * on ks->cv. Everything else runs on the drain thread (wal_keysym_tick, at
 * the drain's 10 ms cadence): it takes the staged spec, builds and
 * publishes for every live process, reclaims old sets, then stores
 * ks->applied_gen and the result under ks->mu and broadcasts.
 *
 * A process's set is rebuilt when the spec changes and when its module
 * tables change (a dlopen wrote a new pid_N/module_<ID>.syms): pid_N/'s
 * mtime is looked at every WAL_KS_MODULES_NS at most, and its .syms names
 * read again when it moved. The .syms files are written by the target:
 * read without following links, each at most WAL_KS_SYMS_MAX bytes, at
 * most WAL_KS_MAX_MODULES of them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "keysym.h"
#include "symbols.h"
#include "arena_internal.h"
#include "recorder_internal.h"

/* The recording's key-symbol state, owned by this file (r->ks): staged
 * by any thread under mu, applied by the drain. */
struct wal_keysym {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ada_keysym_spec *staged;                    /* under mu */
	uint64_t staged_gen, applied_gen, applied_version; /* under mu */
	json_t *result;                                    /* under mu: the last answer */
	json_t *applied_cover;                    /* under mu: what applied_version covers */
	struct ada_keysym_spec *spec;             /* drain: in force; NULL: --detail never */
	uint64_t gen, answered_gen, next_version; /* drain */
};

#define WAL_KS_MODULES_NS 50000000ull /* look at pid_N/ at most this often */
#define WAL_KS_MAX_MODULES 4096
#define WAL_KS_WAIT_NS                                                                             \
	20000000000ull /* run-away guard (the drain answers at its next tick; the client waits 30  \
	                  s) */
#define WAL_KS_VERSIONS_MAX 1000 /* manifest entries per process (then counted) */

/* ---- reading a process's module tables ---- */

int wal_syms_read(int dirfd, const char *name, char **buf, size_t *len)
{
	int fd;
	int err = ada_fs_open_file(dirfd, name, O_RDONLY | O_NONBLOCK, &fd);
	if (err)
		return err;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > WAL_KS_SYMS_MAX) {
		close(fd);
		return -EFBIG;
	}
	*buf = malloc((size_t)st.st_size + 1);
	ssize_t n = *buf ? read(fd, *buf, (size_t)st.st_size) : -1;
	close(fd);
	if (n < 0) {
		free(*buf);
		return -EIO;
	}
	*len = (size_t)n;
	return 0;
}

bool wal_is_syms_name(const char *n)
{
	size_t l = strlen(n);
	return strncmp(n, "module_", 7) == 0 && l > 12 && strcmp(n + l - 5, ".syms") == 0;
}

struct ks_mods {
	struct ada_syms_module **m;
	size_t n;
};

static void ks_mods_free(struct ks_mods *ms)
{
	for (size_t i = 0; i < ms->n; i++)
		ada_syms_module_free(ms->m[i]);
	free(ms->m);
	ms->m = NULL;
	ms->n = 0;
}

/* Test hook (e2e.keysym_gap): ADA_TEST_KS_HIDE=NAME makes every build skip
 * the module whose path ends in /NAME, as if the recorder had not read its
 * .syms yet: a set with a gap below the modules it did read is made on
 * purpose, not by the order readdir() happens to give. Read once by
 * wal_keysym_init(), before the drain runs. */
static char ks_hidden[256];

static bool ks_is_hidden(const struct ada_syms_module *m)
{
	const char *base = m->path ? strrchr(m->path, '/') : NULL;
	return ks_hidden[0] && base && strcmp(base + 1, ks_hidden) == 0;
}

/* Every module_<ID>.syms of p that parses; the others are skipped (the
 * agent only writes whole files; the set says nothing about a module it
 * was not told about: ADA_KEYSYM_UNCOVERED, or no entry). */
static int ks_mods_load(struct wal_proc *p, struct ks_mods *ms)
{
	ms->m = NULL;
	ms->n = 0;
	if (p->dir_fd < 0)
		return 0; /* nothing hooked yet */
	DIR *d = ada_fs_opendir(p->dir_fd, ".");
	if (!d)
		return -errno;
	struct dirent *e;
	ms->m = calloc(WAL_KS_MAX_MODULES, sizeof(*ms->m));
	for (unsigned k = 0;
	     ms->m && ms->n < WAL_KS_MAX_MODULES && k < ADA_FS_WALK_MAX_ENTRIES && (e = readdir(d));
	     k++) {
		char *buf;
		size_t len;
		if (!wal_is_syms_name(e->d_name) || wal_syms_read(dirfd(d), e->d_name, &buf, &len))
			continue;
		if (ada_syms_parse_at(dirfd(d), buf, len, WAL_KS_SYMS_MAX, &ms->m[ms->n], NULL) ==
		    0) {
			if (ks_is_hidden(ms->m[ms->n]))
				ada_syms_module_free(ms->m[ms->n]);
			else
				ms->n++;
		}
		free(buf);
	}
	closedir(d);
	return ms->m ? 0 : -ENOMEM;
}

/* splitmix64's finalizer: a name's hash spread over the 64 bits. */
static uint64_t ks_mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* What p's module_<ID>.syms are now, in any order: each name and inode
 * mixed, summed (0: none). */
static uint64_t ks_mods_sig(const struct wal_proc *p)
{
	DIR *d = ada_fs_opendir(p->dir_fd, ".");
	uint64_t sig = 0;
	struct dirent *e;
	for (unsigned k = 0; d && k < ADA_FS_WALK_MAX_ENTRIES && (e = readdir(d)); k++) {
		if (!wal_is_syms_name(e->d_name))
			continue;
		uint64_t h = (uint64_t)e->d_ino;
		for (const char *c = e->d_name; *c; c++)
			h = h * 131 + (unsigned char)*c;
		sig += ks_mix(h);
	}
	if (d)
		closedir(d);
	return sig;
}

/* Notes pid_N/'s module tables now; true when they changed since the
 * last note: its mtime moved, and its .syms names or inodes with it. */
static bool ks_mods_note(struct wal_proc *p, uint64_t now)
{
	p->ks_mods_seen_ns = now;
	struct stat st;
	if (p->dir_fd < 0 || fstat(p->dir_fd, &st) != 0)
		return false;
	uint64_t m = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	if (m == p->ks_mods_mtime)
		return false;
	p->ks_mods_mtime = m;
	uint64_t sig = ks_mods_sig(p);
	if (sig == p->ks_mods_sig)
		return false;
	p->ks_mods_sig = sig;
	return true;
}

/* Its module tables changed since the last build (or were never looked at). */
static bool ks_mods_changed(struct wal_proc *p, uint64_t now)
{
	if (now - p->ks_mods_seen_ns < WAL_KS_MODULES_NS)
		return false;
	return ks_mods_note(p, now);
}

/* ---- the target's threads, for grace periods ---- */

static bool ks_has_tid(const struct ada_keysym_thread *t, size_t n, uint32_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].tid == tid)
			return true;
	return false;
}

/* Every slot held, then every task of /proc/PID/task without one (it may
 * test membership before its first event). */
static int ks_threads(void *ctx, struct ada_keysym_thread *out, size_t cap)
{
	struct wal_proc *p = ctx;
	size_t n = 0;
	uint32_t used = ada_arena_slots_used(p->arena);
	for (uint32_t s = 0; s < used && n < cap; s++) {
		struct ada_slot_info si;
		ada_arena_slot_info(p->arena, s, &si);
		if (si.state != ADA_SLOT_FREE)
			out[n++] = (struct ada_keysym_thread){(uint64_t)s << 32 | si.generation,
			                                      si.head, si.tid, 0};
	}
	char path[48];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno; /* no proof about slot-less threads: nothing reclaimed */
	struct dirent *e;
	size_t slots = n;
	while ((e = readdir(d))) {
		char *end;
		unsigned long tid = strtoul(e->d_name, &end, 10);
		if (*end || !tid || tid > UINT32_MAX || ks_has_tid(out, slots, (uint32_t)tid))
			continue;
		if (n == cap) {
			closedir(d);
			return -ENOSPC; /* more threads than we follow: nothing reclaimed */
		}
		out[n++] =
		    (struct ada_keysym_thread){ADA_KEYSYM_NO_SLOT | tid, 0, (uint32_t)tid, 0};
	}
	closedir(d);
	return (int)n;
}

static struct ada_keysym_target ks_target(struct wal_proc *p)
{
	bool exp = ada_arena_flags(p->arena) & ADA_ARENA_F_MEMBARRIER;
	/* Slots, then up to 4096 slot-less tasks. */
	return (struct ada_keysym_target){p->pid, exp, p->max_threads + 4096, ks_threads, p};
}

/* ---- one process ---- */

static json_t *ks_version_json(const struct ada_keysym_info *in, uint64_t now_ns)
{
	json_t *o = json_object(), *mods = json_array();
	char x[20];
	snprintf(x, sizeof(x), "%016llx", (unsigned long long)in->xxh64);
	json_object_set_new(o, "version", json_integer((json_int_t)in->version));
	json_object_set_new(o, "time_ns", json_integer((json_int_t)now_ns));
	json_object_set_new(o, "all", json_boolean(in->all));
	json_object_set_new(o, "live", json_boolean(in->live));
	json_object_set_new(o, "entries", json_integer((json_int_t)in->entries));
	/* Module ids below `entries` the set says nothing about (their .syms
	 * not read yet when it was built; module 0, the agent's own code, has
	 * none): the agent decides them from its own start-time set. */
	json_t *unk = json_array();
	for (uint32_t i = 0; i < in->uncovered && i < ADA_KEYSYM_INFO_UNCOVERED_IDS; i++)
		json_array_append_new(unk, json_integer(in->uncovered_ids[i]));
	json_object_set_new(o, "unknown", json_integer((json_int_t)in->uncovered));
	json_object_set_new(o, "unknown_ids", unk);
	json_object_set_new(o, "members", json_integer((json_int_t)in->members));
	json_object_set_new(o, "bytes", json_integer((json_int_t)in->bytes));
	json_object_set_new(o, "xxh64", json_string(x));
	for (uint32_t i = 0; i < in->n_mods; i++) {
		json_t *m = json_object();
		json_object_set_new(m, "id", json_integer(in->mods[i].module_id));
		json_object_set_new(m, "container",
		                    json_string(ada_keysym_kind_name(in->mods[i].kind)));
		json_object_set_new(m, "members", json_integer((json_int_t)in->mods[i].members));
		json_array_append_new(mods, m);
	}
	json_object_set_new(o, "modules", mods);
	return o;
}

/* Builds the spec's set for p into a private, checked blob. */
static int ks_build(struct ada_recorder *r, struct wal_proc *p, uint64_t version, void **blob,
                    size_t *len, struct ada_keysym_info *info, char *why, size_t cap)
{
	struct ks_mods ms;
	struct ada_keysym_builder *b = NULL;
	int err = ks_mods_load(p, &ms);
	if (!err)
		err = ada_keysym_builder_new(&b);
	/* A spec `ada keysym` gave: the agent's own set (start-time rules)
	 * may disagree with it on a module this set says nothing about, so
	 * the agent counts what it decides there (ADA_KEYSYM_F_LIVE). */
	if (!err && r->ks->gen != 0)
		ada_keysym_builder_set_live(b);
	if (!err)
		err = ada_keysym_spec_build(
		    r->ks->spec, (const struct ada_syms_module *const *)ms.m, ms.n, b, why, cap);
	ks_mods_free(&ms);
	*blob = NULL;
	if (!err && (*len = ada_keysym_builder_size(b)) == 0)
		err = -ENOMEM;
	if (!err && !(*blob = aligned_alloc(ADA_KEYSYM_ALIGN, *len)))
		err = -ENOMEM;
	if (!err)
		err = ada_keysym_builder_write(b, version, *blob, *len, info);
	const char *bad = NULL;
	if (!err && ada_keysym_validate(*blob, *len, NULL, &bad) != 0) {
		snprintf(why, cap, "the set built for pid %d fails its own check: %s", (int)p->pid,
		         bad ? bad : "?");
		ada_keysym_info_fini(info);
		err = -EBADMSG;
	}
	if (err && err != -EBADMSG && err != -ERANGE && !why[0])
		snprintf(why, cap, "building the key-symbol set of pid %d failed (%s)", (int)p->pid,
		         strerror(-err));
	ada_keysym_builder_free(b);
	return err;
}

/* The swap writes into the target's arena file: under the SIGBUS guard. */
__attribute__((noinline)) static int ks_swap(struct wal_proc *p, const void *blob, size_t len,
                                             char *why, size_t cap)
{
	struct ada_keysym_target t = ks_target(p);
	volatile int err = -EFAULT;
	WAL_GUARDED(p->arena,
	            err = ada_keysym_region_publish(p->ks_region, blob, len, &t, why, cap),
	            snprintf(why, cap, "pid %d's arena was truncated under the key-symbol swap",
	                     (int)p->pid));
	return err;
}

static int ks_publish(struct ada_recorder *r, struct wal_proc *p, char *why, size_t cap)
{
	if (!p->ks_region) {
		uint64_t bytes;
		uint8_t *area = ada_arena_keysym_area(p->arena, &bytes);
		if (!area) {
			snprintf(why, cap,
			         "pid %d has no key-symbol area (recorded with --detail never)",
			         (int)p->pid);
			return -ENOTSUP;
		}
		int err = ada_keysym_region_new(area, bytes, ada_arena_keysym_cur(p->arena),
		                                &p->ks_region);
		if (err)
			return err;
	}
	void *blob;
	size_t len;
	struct ada_keysym_info info = {0};
	uint64_t version = ++r->ks->next_version;
	int err = ks_build(r, p, version, &blob, &len, &info, why, cap);
	if (err)
		return err;
	err = ks_swap(p, blob, len, why, cap);
	free(blob);
	if (!err) {
		p->ks_version = version;
		json_t *v = ks_version_json(&info, ada_boottime_ns());
		json_t *cover =
		    json_pack("{s:I,s:i,s:O,s:O,s:O}", "version", (json_int_t)version, "pid",
		              (int)p->pid, "entries", json_object_get(v, "entries"), "unknown",
		              json_object_get(v, "unknown"), "unknown_ids",
		              json_object_get(v, "unknown_ids"));
		pthread_mutex_lock(&r->ks->mu); /* `ada status` reads them */
		r->ks->applied_version = version;
		json_decref(r->ks->applied_cover);
		r->ks->applied_cover = cover;
		pthread_mutex_unlock(&r->ks->mu);
		if (!p->ks_versions)
			p->ks_versions = json_array();
		if (json_array_size(p->ks_versions) < WAL_KS_VERSIONS_MAX)
			json_array_append(p->ks_versions, v);
		else
			p->ks_versions_dropped++;
		json_decref(p->ks_last);
		p->ks_last = v;
	}
	ada_keysym_info_fini(&info);
	return err;
}

static bool ks_live(const struct wal_proc *p)
{
	return p->arena && !p->finished && !p->gone && !p->arena_bad &&
	       ada_arena_keysym_cur(p->arena);
}

/* ---- the drain's tick ---- */

static void ks_take_staged(struct ada_recorder *r)
{
	pthread_mutex_lock(&r->ks->mu);
	if (r->ks->staged) {
		ada_keysym_spec_free(r->ks->spec);
		r->ks->spec = r->ks->staged;
		r->ks->staged = NULL;
		r->ks->gen = r->ks->staged_gen;
	}
	pthread_mutex_unlock(&r->ks->mu);
}

static void ks_proc_tick(struct ada_recorder *r, struct wal_proc *p, uint64_t now, json_t *res)
{
	bool changed = ks_mods_changed(p, now);
	if (p->ks_gen == r->ks->gen && !changed) {
		if (p->ks_region) {
			struct ada_keysym_target t = ks_target(p);
			WAL_GUARDED(p->arena, ada_keysym_region_reclaim(p->ks_region, &t, NULL),
			            (void)0);
		}
		return;
	}
	/* The default (every function) is the agent's own set until a spec
	 * with rules or blobs comes: nothing to publish for it at the start. */
	if (p->ks_gen == 0 && r->ks->gen == 0 && ada_keysym_spec_is_all(r->ks->spec)) {
		p->ks_gen = r->ks->gen;
		return;
	}
	/* The publish reads pid_N/ as it is now: note its tables first, so
	 * that a module written before this publish does not make the next
	 * tick publish the same set again as a new version (a .syms written
	 * within the 50 ms the check waits did; e2e.keysym_narrow saw it). */
	if (!changed)
		(void)ks_mods_note(p, now);
	char why[320] = "";
	int err = ks_publish(r, p, why, sizeof(why));
	json_t *o = json_object();
	json_object_set_new(o, "pid", json_integer(p->pid));
	if (err == -EBUSY) {
		json_decref(o); /* tried again at the next tick */
		if (res)
			json_array_append_new(
			    res, json_pack("{s:i,s:s}", "pid", (int)p->pid, "error", why));
		return;
	}
	p->ks_gen = r->ks->gen;
	if (err) {
		p->ks_failed++;
		json_object_set_new(o, "error", json_string(why));
		wal_note(r, p, "%s", why);
	} else {
		json_object_update(o, p->ks_last);
	}
	if (res)
		json_array_append(res, o);
	json_decref(o);
}

void wal_keysym_tick(struct ada_recorder *r)
{
	if (!r->ks->spec)
		return; /* --detail never: no key-symbol areas */
	ks_take_staged(r);
	uint64_t gen = r->ks->gen, now = ada_boottime_ns();
	bool answering = gen != r->ks->answered_gen;
	json_t *res = answering ? json_array() : NULL;
	for (size_t i = 0; i < r->nprocs; i++)
		if (ks_live(r->procs[i]))
			ks_proc_tick(r, r->procs[i], now, res);
	if (!answering)
		return;
	r->ks->answered_gen = gen;
	pthread_mutex_lock(&r->ks->mu);
	json_decref(r->ks->result);
	r->ks->result =
	    json_pack("{s:I,s:o}", "version", (json_int_t)r->ks->next_version, "processes", res);
	r->ks->applied_gen = gen;
	pthread_cond_broadcast(&r->ks->cv);
	pthread_mutex_unlock(&r->ks->mu);
}

/* ---- any thread ---- */

int ada_recorder_keysym_set(struct ada_recorder *r, struct ada_keysym_spec *spec, json_t **result,
                            char *why, size_t cap)
{
	*result = NULL;
	if (!r->ks->spec) {
		ada_keysym_spec_free(spec);
		snprintf(why, cap,
		         "this recording has no detail lane (--detail never): restart it with "
		         "--detail triggered to choose key symbols");
		return -ENOTSUP;
	}
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(WAL_KS_WAIT_NS / 1000000000ull);
	pthread_mutex_lock(&r->ks->mu);
	ada_keysym_spec_free(r->ks->staged);
	r->ks->staged = spec;
	uint64_t gen = ++r->ks->staged_gen;
	int err = 0;
	ada_recorder_wake(r); /* a drain asleep applies it now */
	while (r->ks->applied_gen < gen && err == 0)
		err = pthread_cond_timedwait(&r->ks->cv, &r->ks->mu, &until);
	if (r->ks->applied_gen >= gen)
		*result = json_deep_copy(r->ks->result);
	pthread_mutex_unlock(&r->ks->mu);
	if (!*result) {
		snprintf(why, cap, "the recorder did not apply the key-symbol set within %llu s",
		         (unsigned long long)(WAL_KS_WAIT_NS / 1000000000ull));
		return -ETIMEDOUT;
	}
	return 0;
}

bool wal_keysym_timed(const struct ada_recorder *r)
{
	/* A set of rules follows the modules each process loads, which only
	 * the 10 ms tick looks for (the agent rings no bell for a .syms). */
	return r->ks->spec && (r->ks->gen != 0 || !ada_keysym_spec_is_all(r->ks->spec));
}

uint64_t ada_recorder_keysym_version(struct ada_recorder *r)
{
	pthread_mutex_lock(&r->ks->mu);
	uint64_t v = r->ks->applied_version;
	pthread_mutex_unlock(&r->ks->mu);
	return v;
}

json_t *ada_recorder_keysym_cover(struct ada_recorder *r)
{
	pthread_mutex_lock(&r->ks->mu);
	json_t *c = r->ks->applied_cover ? json_deep_copy(r->ks->applied_cover) : NULL;
	pthread_mutex_unlock(&r->ks->mu);
	return c;
}

/* ---- life ---- */

int wal_keysym_init(struct ada_recorder *r, const struct ada_keysym_spec *initial)
{
	r->ks = calloc(1, sizeof(*r->ks));
	if (!r->ks)
		return -ENOMEM;
	pthread_mutex_init(&r->ks->mu, NULL);
	pthread_cond_init(&r->ks->cv, NULL);
	const char *hide = getenv("ADA_TEST_KS_HIDE");
	snprintf(ks_hidden, sizeof(ks_hidden), "%s", hide ? hide : "");
	if (r->o.detail_mode == ADA_DETAIL_NEVER)
		return 0;
	return ada_keysym_spec_copy(initial, &r->ks->spec);
}

void wal_keysym_fini(struct ada_recorder *r)
{
	if (!r->ks)
		return;
	ada_keysym_spec_free(r->ks->spec);
	ada_keysym_spec_free(r->ks->staged);
	json_decref(r->ks->result);
	json_decref(r->ks->applied_cover);
	pthread_cond_destroy(&r->ks->cv);
	pthread_mutex_destroy(&r->ks->mu);
	free(r->ks);
	r->ks = NULL;
}

const struct ada_keysym_spec *wal_keysym_spec(const struct ada_recorder *r)
{
	return r->ks ? r->ks->spec : NULL;
}

void wal_keysym_proc_free(struct wal_proc *p)
{
	ada_keysym_region_free(p->ks_region);
	p->ks_region = NULL;
	json_decref(p->ks_versions);
	json_decref(p->ks_last);
	p->ks_versions = p->ks_last = NULL;
}

void wal_keysym_proc_finished(struct wal_proc *p)
{
	if (!p->ks_region)
		return;
	struct ada_keysym_region_stats st;
	ada_keysym_region_stats(p->ks_region, &st);
	p->ks_published = st.published;
	p->ks_reclaimed = st.reclaimed;
	p->ks_syscall_quiescent = st.syscall_quiescent;
	p->ks_unreclaimable = st.unreclaimable;
	ada_keysym_region_free(p->ks_region);
	p->ks_region = NULL;
}

/* The manifest's "keysym" (docs/manifest.md). */
json_t *wal_keysym_json(const struct ada_recorder *r, const struct wal_proc *p)
{
	if (!r->ks->spec)
		return NULL;
	json_t *o = json_object();
	/* finished: the region is freed, its counts kept */
	struct ada_keysym_region_stats st = {.published = p->ks_published,
	                                     .reclaimed = p->ks_reclaimed,
	                                     .syscall_quiescent = p->ks_syscall_quiescent,
	                                     .unreclaimable = p->ks_unreclaimable};
	if (p->ks_region)
		ada_keysym_region_stats(p->ks_region, &st);
	json_object_set_new(o, "current", json_integer((json_int_t)p->ks_version));
	json_object_set_new(o, "versions",
	                    p->ks_versions ? json_incref(p->ks_versions) : json_array());
	json_object_set_new(o, "versions_not_listed",
	                    json_integer((json_int_t)p->ks_versions_dropped));
	json_object_set_new(o, "swaps", json_integer((json_int_t)st.published));
	json_object_set_new(o, "reclaimed", json_integer((json_int_t)st.reclaimed));
	json_object_set_new(o, "syscall_quiescent", json_integer((json_int_t)st.syscall_quiescent));
	json_object_set_new(o, "unreclaimable", json_integer((json_int_t)st.unreclaimable));
	json_object_set_new(o, "failed", json_integer((json_int_t)p->ks_failed));
	return o;
}
