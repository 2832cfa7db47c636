/*
 * The persistent per-build-id plan cache (plancache.c), private to
 * src/hook. docs/hooks.md, "Plan cache".
 *
 * One file per (image build-id, agent build-id):
 *   <dir>/<build-id>-<agent-hash>.plan
 * where dir is the directory the recorder passes (ADA_PLAN_CACHE). It stores, per
 * function of the image's symbol table, the verdict of the full analysis
 * (hook_arch_prepare + the cross-function xref check) and the patch
 * length, so that a later run skips both body sweeps, and for a hooked
 * function its decoded plan (the displaced bytes, their instructions and
 * relocations, the padding slot), so that it decodes nothing either: the
 * plan is used only when the bytes it was decoded from are still the
 * image's (agent_install.c). A file is only used
 * when its header names the same build-id, agent hash, module size,
 * function count and symbol-table hash, and its XXH64 checksum matches;
 * anything else is ignored (and rewritten after the full analysis).
 */
#ifndef ADA_PLANCACHE_INTERNAL_H
#define ADA_PLANCACHE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook.h"
#include "hook_arch.h"

/* status of a function the run that wrote the file did not analyse
 * (excluded by the options then, or skipped before prepare). */
#define PLAN_CACHE_UNKNOWN 0xff
/* In patch_len: the padding form (hook_arch_prepare_short), found again
 * on a hit by the same slot rules. */
#define PLAN_CACHE_PAD 0x80
/* In patch_len: a decoded plan of this function follows the entries
 * (struct hook_arch_plan, its addresses relative to the function). */
#define PLAN_CACHE_PLAN 0x40
/* In patch_len: the bytes the patch displaces. */
#define PLAN_CACHE_LEN 0x3f

/* What a cache file must match to be used. */
struct plan_cache_key {
	uint8_t build_id[ADA_HOOK_BUILD_ID_MAX];
	uint32_t build_id_len;
	uint64_t agent_hash;  /* changes with every build of the analysis code */
	uint64_t module_size; /* mapped span of the image's PT_LOAD segments */
	uint64_t fn_count;
	uint64_t table_hash; /* plan_cache_table_hash() of the symbol table */
};

/* One function's cached verdict. */
struct plan_cache_entry {
	uint8_t status;    /* enum ada_hook_skip, or PLAN_CACHE_UNKNOWN */
	uint8_t patch_len; /* bytes the patch displaces when status is OK */
};

/* XXH64 over every function's offset, size and pre-analysis status (as
 * ada_hook_symtab_read() left it): a different symbol source for the same
 * build-id (a debug file installed since) gives another hash. */
uint64_t plan_cache_table_hash(const struct ada_hook_symtab *st);

/* Parses a cache file held in (buf, len) against key and fills out[0 ..
 * key->fn_count). With plans (NULL: the decoded plans are checked but not
 * kept), each entry flagged PLAN_CACHE_PLAN fills plans[i], its addresses
 * made absolute from plans[i].fn_addr, which the caller set to function
 * i's address beforehand; other plans[] are not touched. The plan is
 * checked for shape only (instructions within the patch, a padding slot
 * within reach and outside it): the caller compares its bytes with the
 * image's. Returns 0, -EBADMSG (truncated, bad magic or checksum, bad
 * entry or plan) or -ESTALE (valid file for another key). */
int plan_cache_parse(const uint8_t *buf, size_t len, const struct plan_cache_key *key,
                     struct plan_cache_entry *out, struct hook_arch_plan *plans);

/* Makes (buf, len) a file for key whose checksum holds, whatever its
 * header said: for the fuzzer, to reach the entries and records behind
 * them. Shorter than a header: unchanged. */
void plan_cache_reseal(uint8_t *buf, size_t len, const struct plan_cache_key *key);

/* Serialises key + entries into a malloc'ed buffer, with plans (NULL:
 * none) the decoded plan of every hooked entry whose plans[i] holds one
 * (insn_count > 0; its addresses stored relative to plans[i].fn_addr).
 * 0 or -ENOMEM. */
int plan_cache_encode(const struct plan_cache_key *key, const struct plan_cache_entry *e,
                      const struct hook_arch_plan *plans, uint8_t **out, size_t *out_len);

/* Whether a decoded plan from a cache file (plan_cache_parse: untrusted,
 * its shape checked) fits the image as mem holds it (the module's
 * readable segments): patch_len is the entry's, the bytes it was decoded
 * from are the function's bytes now, and a padding slot holds the bytes
 * it kept. The plan is a function of those bytes alone (and of the
 * function's place, which the file's key pins), so it is what a decode
 * would give; a byte changed since (or in the file) makes it false. */
bool plan_cache_fits(const struct hook_arch_memview *mem, const struct hook_arch_plan *plan,
                     unsigned patch_len);

/* The cache directory: given, the directory the recorder chose and passed
 * (ADA_PLAN_CACHE, or ada attach's cache=; the recorder picks
 * $XDG_CACHE_HOME/ada/plans, or $HOME/.cache/ada/plans when that .cache
 * exists: docs/hooks.md, "Plan cache"). Never derived from the program's
 * own HOME: the agent creates nothing in the program's world but where
 * the recorder said. The agent calls it once at start-up and keeps the
 * answer. 0, -ENOENT (NULL or not absolute: no cache) or -ENAMETOOLONG. */
int plan_cache_dir(const char *given, char *out, size_t cap);
/* The cache file's path for key under dir (the .../ada/plans directory;
 * "" means none), or, with dir NULL, under $ADA_PLAN_CACHE. 0, -ENOENT
 * (no usable directory) or -ENAMETOOLONG. */
int plan_cache_path(const char *dir, const struct plan_cache_key *key, char *out, size_t cap);

/* Reads and parses the file at path. 0, -ENOENT and the like from
 * open/read, or plan_cache_parse()'s errors. */
int plan_cache_load(const char *path, const struct plan_cache_key *key,
                    struct plan_cache_entry *out, struct hook_arch_plan *plans);

/* A cache file kept, as read, after plan_cache_parse() accepted it: on a
 * hit the agent walks its plan records (plan_cache_next_plan) where it
 * needs them instead of copying every plan into an array indexed by
 * function (libc's ~900 KB, every page of it new memory). */
struct plan_cache_file {
	uint8_t *buf; /* the whole file, read into private memory (owned) */
	size_t len;
	const uint8_t *next; /* the next plan record */
	size_t left;         /* bytes from next to the end */
	bool bad;            /* a record was not one: the walk has ended */
};

/* The file at path read and kept in f, its header (checksum, key) and
 * entries checked as plan_cache_parse() checks them, into out; its plan
 * records are checked by the walk that reads them (plan_cache_next_plan,
 * plan_cache_file_whole): a hit reads each one where it needs it rather
 * than once more up front. 0 with f to be freed by plan_cache_file_free(),
 * or the errors of plan_cache_load() with f empty. */
int plan_cache_load_file(const char *path, const struct plan_cache_key *key,
                         struct plan_cache_entry *out, struct plan_cache_file *f);

/* plan_cache_load_file() of a file already in (buf, len): on success f
 * holds buf (plan_cache_file_free() frees it); on failure f is empty
 * and buf the caller's. */
int plan_cache_open_buf(uint8_t *buf, size_t len, const struct plan_cache_key *key,
                        struct plan_cache_entry *out, struct plan_cache_file *f);

/* Whether a walk of every entry has read every record of f and nothing
 * else is left: what plan_cache_parse() asks of the whole file. */
bool plan_cache_file_whole(const struct plan_cache_file *f);

/* Whether every OK entry of e[0 .. n) carries a plan (so a hit decodes
 * nothing and needs no array of plans). */
bool plan_cache_all_planned(const struct plan_cache_entry *e, size_t n);

/* The next plan record of f, entry e's, rebased on fn_addr, into out,
 * checked as plan_cache_parse() checks it. The caller walks the entries
 * in function order and calls this for each one (a call for an entry
 * without a plan reads nothing). False for an entry without a plan, or
 * for a record that is not one, after which the walk has ended (every
 * later call false too, plan_cache_file_whole() false). */
bool plan_cache_next_plan(struct plan_cache_file *f, const struct plan_cache_entry *e,
                          uint64_t fn_addr, struct hook_arch_plan *out);

/* Back to the first plan record of a file of fn_count entries. */
void plan_cache_file_rewind(struct plan_cache_file *f, uint64_t fn_count);

/* The checksum in f's header (a function of the whole file), 0 for an
 * empty f. */
uint64_t plan_cache_file_sum(const struct plan_cache_file *f);

/* Frees f's buffer and empties it; an empty f is a no-op. */
void plan_cache_file_free(struct plan_cache_file *f);

/* Writes the file atomically (a temporary file in the same directory,
 * then rename), creating the directories it needs, then removes the
 * files of the same build-id written by other agent builds. 0 or -errno. */
int plan_cache_store(const char *path, const struct plan_cache_key *key,
                     const struct plan_cache_entry *e, const struct hook_arch_plan *plans);

/* XXH64 of the build-id of the image containing self_addr (the agent),
 * mixed with the architecture's name (HOOK_ARCH_NAME): the agent_hash of
 * the key. 0 when the image has no build-id (then the cache is not used). */
uint64_t plan_cache_self_hash(uint64_t self_addr);

struct dl_phdr_info;
/* The NT_GNU_BUILD_ID note of a mapped image (dl_iterate_phdr's info):
 * its bytes where they are mapped and *len, or NULL. The plan cache
 * hashes it, the symbol-table cache (symcache.c) keys by it. */
const uint8_t *agent_note_build_id(const struct dl_phdr_info *info, size_t *len);

#endif
