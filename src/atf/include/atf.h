/*
 * ada atf: the ATF v2 format as a library.
 *
 * - Readers: an index file (fixed 32-byte events) and a detail file
 *   (length-prefixed events), mmapped read-only; get(seq) is O(1) both ways
 *   (the detail reader builds an offset table on open by walking
 *   total_length, bounds-checked).
 * - Time-range skipping: the header's time range, then binary search (the
 *   events of one thread are non-decreasing in timestamp_ns).
 * - A thread directory (thread_N/) with its retention generations
 *   (index.g<G>.atf ... index.atf) and their detail files.
 * - A cross-thread k-way merge by timestamp_ns on a binary heap.
 * - Writer helpers (header/footer fill) for the WAL, and a small buffered
 *   file writer for tests and golden data.
 * - The validator: every rule of the schema plus errata, one problem per
 *   call of a callback with the file path and byte offset.
 *
 * Every function returns 0 or -errno unless it says otherwise; nothing here
 * prints. The manifest lives in manifest.h, the symbol files in symbols.h.
 */
#ifndef ADA_ATF_H
#define ADA_ATF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "atf_format.h"

/* ------------------------------------------------------------------ */
/* Index reader                                                        */
/* ------------------------------------------------------------------ */

struct ada_atf_index;

/* Open flags. STRICT (0): the header and footer must agree with the file
 * length, else -EBADMSG. SALVAGE: when they do not, use every whole event
 * that lies between events_offset and the end of the file (minus a footer
 * when one is found there), so a damaged or unfinished file can be read. */
#define ADA_ATF_OPEN_SALVAGE 0x1u

/* Maps path read-only. Errors: -ENOENT/-EACCES/... from open, -EBADMSG when
 * the file is not a usable index file (too short, wrong magic, event_size
 * not 32, inconsistent counts without SALVAGE). */
int ada_atf_index_open(const char *path, unsigned flags, struct ada_atf_index **out);
/* Same over a caller-owned buffer (kept, not copied: it must outlive the
 * reader). Used by tests and the fuzz targets. */
int ada_atf_index_open_mem(const void *buf, size_t len, unsigned flags, struct ada_atf_index **out);
void ada_atf_index_free(struct ada_atf_index *ix); /* NULL is a no-op */

const struct atf_index_header *ada_atf_index_header(const struct ada_atf_index *ix);
uint64_t ada_atf_index_count(const struct ada_atf_index *ix);
/* Event at index_seq, or NULL when seq >= count. O(1) (a compact file's
 * block is decoded when first asked for). The pointer stays valid until
 * ada_atf_index_done() or free covers it. */
const struct atf_index_event *ada_atf_index_get(const struct ada_atf_index *ix, uint64_t seq);
/* Events [seq, seq + n) as one array (n >= 1), or NULL when they are not
 * all there: what a chunked reader walks without a call per event. */
const struct atf_index_event *ada_atf_index_span(const struct ada_atf_index *ix, uint64_t seq,
                                                 uint64_t n);
/* The caller has read events [begin, end) and will not come back to them
 * soon: their pages leave the process's resident set (the page cache keeps
 * them; a later get() reads them again). Streaming readers call it per
 * chunk so their RSS does not grow with the file. A compact file's
 * decoded events are given back the same way (their blocks decoded again
 * when asked for); an ATF v2 buffer opened with _open_mem() is kept. */
void ada_atf_index_done(const struct ada_atf_index *ix, uint64_t begin, uint64_t end);
/* The sequential path: events [begin, end) (clipped to count) handed to
 * fn in order, in runs: fn(ctx, ev, seq, n) gets events seq..seq+n-1;
 * a non-zero return stops the walk and is returned. A compact file's
 * blocks are each decoded once, in pieces into one small buffer that
 * stays in cache (nothing of get()'s address range is touched); an ATF
 * v2 file's runs are its mapping, each given back (done()) once fn has
 * it. -EBADMSG when a compact block does not decode (the walk ends there;
 * ada_atf_index_undecoded() counts it), -ENOMEM. */
typedef int (*ada_atf_index_walk_fn)(void *ctx, const struct atf_index_event *ev, uint64_t seq,
                                     uint64_t n);
int ada_atf_index_walk(const struct ada_atf_index *ix, uint64_t begin, uint64_t end,
                       ada_atf_index_walk_fn fn, void *ctx);
/* Pieces of one file walked at once by several threads: the same walk
 * as ada_atf_index_walk() over [begin, end), safe beside others of the
 * same index over other ranges, but a compact block that does not decode
 * is not counted: -EBADMSG with *bad the first seq not handed out
 * (UINT64_MAX for any other return), which the caller passes to
 * ada_atf_index_note_bad() (one thread at a time) if one walk would have
 * met it. */
int ada_atf_index_walk_piece(const struct ada_atf_index *ix, uint64_t begin, uint64_t end,
                             ada_atf_index_walk_fn fn, void *ctx, uint64_t *bad);
void ada_atf_index_note_bad(const struct ada_atf_index *ix, uint64_t seq);
/* Where a piece from seq of about want events ends (>= seq + 1 when
 * seq < count): at a compact block's first event, so a piece decodes
 * its blocks alone; at most count. */
uint64_t ada_atf_index_piece_end(const struct ada_atf_index *ix, uint64_t seq, uint64_t want);
/* Blocks of a compact file found not to decode since open (their CRC
 * holds, their coded events do not: a file damaged before it was sealed,
 * or hostile). get() reads their events as zeros, the walk stops at the
 * first; a reader says so. 0 for ATF v2 files. */
uint64_t ada_atf_index_undecoded(const struct ada_atf_index *ix);
/* Whether the file shrank while it was mapped: its pages past the new
 * end read as zeros from the fault on (a SIGBUS there does not kill the
 * reader), so what was read of them is not the file. */
bool ada_atf_index_shrank(const struct ada_atf_index *ix);
/* First seq whose timestamp_ns >= ts (count when none). O(log n). */
uint64_t ada_atf_index_lower_bound(const struct ada_atf_index *ix, uint64_t ts);
/* First seq whose timestamp_ns > ts (count when none). O(log n). */
uint64_t ada_atf_index_upper_bound(const struct ada_atf_index *ix, uint64_t ts);
/* The half-open seq range [*begin, *end) of events with from <= ts <= to.
 * Uses the header's time range to skip the whole file in O(1). */
void ada_atf_index_range(const struct ada_atf_index *ix, uint64_t from, uint64_t to,
                         uint64_t *begin, uint64_t *end);

/* ------------------------------------------------------------------ */
/* Detail reader                                                       */
/* ------------------------------------------------------------------ */

struct ada_atf_detail;

/* Maps path, walks total_length from events_offset and builds the offset
 * table. -EBADMSG when the file is not usable (without SALVAGE: header,
 * footer and walk must agree; with SALVAGE: every whole event the walk
 * reaches is kept). -ENOMEM. */
int ada_atf_detail_open(const char *path, unsigned flags, struct ada_atf_detail **out);
int ada_atf_detail_open_mem(const void *buf, size_t len, unsigned flags,
                            struct ada_atf_detail **out);
void ada_atf_detail_free(struct ada_atf_detail *d); /* NULL is a no-op */
/* As ada_atf_index_shrank(). */
bool ada_atf_detail_shrank(const struct ada_atf_detail *d);

const struct atf_detail_header *ada_atf_detail_header(const struct ada_atf_detail *d);
uint64_t ada_atf_detail_count(const struct ada_atf_detail *d);
/* Event at detail_seq (its total_length bytes are all inside the mapping),
 * or NULL when seq >= count. O(1). */
const struct atf_detail_event_header *ada_atf_detail_get(const struct ada_atf_detail *d,
                                                         uint64_t seq);
/* The function payload of a FUNCTION_CALL/RETURN event (or its _FP form)
 * and its stack snapshot, or NULL when the event is another type or too
 * short for the payload and the stack_size it declares. */
const struct atf_detail_function_payload *
ada_atf_detail_function(const struct atf_detail_event_header *ev, const uint8_t **stack);
/* Types 6 and 7 (FUNCTION_CALL_FP, FUNCTION_RETURN_FP): a function
 * payload with the vector registers (ada_atf_detail_function reads them
 * too; its stack pointer skips the registers). */
bool ada_atf_detail_is_fp(uint32_t type);
/* FUNCTION_CALL or FUNCTION_CALL_FP. */
bool ada_atf_detail_is_call(uint32_t type);
/* xmm0..xmm7 of a type 6/7 event (ATF_DETAIL_XMM_WORDS words, unaligned
 * in the file: read with memcpy), or NULL. */
const uint64_t *ada_atf_detail_xmm(const struct atf_detail_event_header *ev);
/* The payload of a SIGNAL_CONTEXT event, or NULL when the event is another
 * type or its total_length is not exactly 24 + the payload. */
const struct atf_detail_signal_payload *
ada_atf_detail_signal(const struct atf_detail_event_header *ev);
/* The name of x86_64 signal-context register i (ATF_SIGNAL_NREGS). */
const char *ada_atf_signal_reg_name(uint32_t i);
/* The same for a file or recording of arch (ATF_ARCH_*: arm64's x0 ..
 * pstate, atf_format.h; any other value: x86_64's). */
const char *ada_atf_signal_reg_name_for(uint8_t arch, uint32_t i);

/* ------------------------------------------------------------------ */
/* Thread directories and retention generations                        */
/* ------------------------------------------------------------------ */

/* One generation of a thread: index.g<G>.atf (+ detail.g<G>.atf), or the
 * current index.atf (+ detail.atf), which always comes last. */
struct ada_atf_gen {
	uint32_t generation; /* G; UINT32_MAX for the current file */
	char *index_path;
	char *detail_path;             /* NULL when the file does not exist */
	struct ada_atf_index *index;   /* NULL when it could not be opened */
	struct ada_atf_detail *detail; /* NULL when absent or unusable */
	int index_err, detail_err;     /* -errno of the failed open, else 0 */
};

struct ada_atf_thread {
	uint32_t thread; /* N of thread_N */
	char *dir;
	size_t ngen;
	struct ada_atf_gen *gen; /* oldest first, the current file last */
};

#define ADA_ATF_CURRENT_GEN UINT32_MAX

/* Lists the generations in dir (ascending G, then index.atf) without
 * opening them. -ENOENT when dir holds no index file, -EINVAL when dir's
 * name is not thread_<N>. */
int ada_atf_thread_scan(const char *dir, struct ada_atf_thread **out);
/* Scan and open every generation (open failures are kept in index_err /
 * detail_err, not returned: a damaged file must not hide the others). */
int ada_atf_thread_open(const char *dir, unsigned flags, struct ada_atf_thread **out);
void ada_atf_thread_free(struct ada_atf_thread *t); /* NULL is a no-op */

/* Parses "index.atf" (-> ADA_ATF_CURRENT_GEN) or "index.g<G>.atf". Returns
 * false for any other name. */
bool ada_atf_parse_index_name(const char *name, uint32_t *gen);
/* Writes the file name for generation gen ("index.atf" / "index.g3.atf",
 * or the detail counterparts) into buf. Returns 0 or -ENAMETOOLONG. */
int ada_atf_gen_name(char *buf, size_t len, bool detail, uint32_t gen);

/* A session tree: every pid_N directory at or under root, and its
 * thread_N directories, sorted numerically. */
struct ada_atf_pid {
	uint32_t pid;
	char *dir;
	size_t nthreads;
	char **thread_dirs; /* sorted by N */
	uint32_t *thread_ids;
};
struct ada_atf_tree {
	size_t npids;
	struct ada_atf_pid *pids; /* sorted by path */
	size_t links_skipped;     /* symbolic links met and not followed */
};
/* -ENOENT when root does not exist, -ENOTDIR when it is not a directory;
 * an empty tree (npids == 0) is not an error. Depth is bounded (8 levels)
 * and so is each listing (ADA_FS_WALK_MAX_ENTRIES); below root no link is
 * followed (each is counted in links_skipped), so a loop ends at once. */
int ada_atf_tree_scan(const char *root, struct ada_atf_tree **out);
void ada_atf_tree_free(struct ada_atf_tree *t);

/* ------------------------------------------------------------------ */
/* Cross-thread merge                                                  */
/* ------------------------------------------------------------------ */

/* A k-way merge by timestamp_ns over any number of index sources. Ties are
 * broken by (thread, source order within the thread, index_seq) so the
 * output is deterministic. */
struct ada_atf_merge;

struct ada_atf_merge_item {
	const struct atf_index_event *ev;
	uint64_t index_seq;
	uint32_t thread;
	void *user; /* what was passed to ada_atf_merge_add() */
};

int ada_atf_merge_new(struct ada_atf_merge **out);
void ada_atf_merge_free(struct ada_atf_merge *m);
/* Adds events [begin, end) of ix; rank orders sources of the same thread
 * (a generation number: older first). The reader must outlive the merge. */
int ada_atf_merge_add(struct ada_atf_merge *m, const struct ada_atf_index *ix, uint64_t begin,
                      uint64_t end, uint32_t thread, uint32_t rank, void *user);
/* Next event in merged order; false when all sources are exhausted. */
bool ada_atf_merge_next(struct ada_atf_merge *m, struct ada_atf_merge_item *out);

/* ------------------------------------------------------------------ */
/* Writer helpers                                                      */
/* ------------------------------------------------------------------ */

struct ada_atf_file_info {
	uint32_t thread_id;
	uint8_t arch;       /* enum atf_arch */
	uint8_t os;         /* enum atf_os */
	uint8_t clock_type; /* enum atf_clock */
	bool has_detail;    /* index only: the thread has a detail file */
};

/* Native arch/os/clock (x86_64 or arm64, Linux, boottime). */
void ada_atf_file_info_native(struct ada_atf_file_info *info, uint32_t thread_id);

/* Fills a finalized index header for count events of [t_start, t_end] laid
 * out as header, events at 64, footer after the last event. */
void ada_atf_index_header_fill(struct atf_index_header *h, const struct ada_atf_file_info *info,
                               uint64_t count, uint64_t t_start, uint64_t t_end);
void ada_atf_index_footer_fill(struct atf_index_footer *f, uint32_t crc, uint64_t count,
                               uint64_t t_start, uint64_t t_end);
/* events_bytes is the size of the events section (the sum of total_length);
 * seq_start/seq_end are the first and last index_seq linked. */
void ada_atf_detail_header_fill(struct atf_detail_header *h, const struct ada_atf_file_info *info,
                                uint64_t count, uint64_t events_bytes, uint64_t seq_start,
                                uint64_t seq_end);
void ada_atf_detail_footer_fill(struct atf_detail_footer *f, uint32_t crc, uint64_t count,
                                uint64_t events_bytes, uint64_t t_start, uint64_t t_end);
/* zlib crc32 continued over buf (start with crc = 0). */
uint32_t ada_atf_crc32(uint32_t crc, const void *buf, size_t len);

/* A buffered writer of one whole file (index or detail): events are
 * appended in memory-sized chunks, the header is written as a placeholder
 * and rewritten at finish with the counts, times and CRC seen. For tests,
 * golden data and tools; the recorder's drain has its own io_uring path. */
struct ada_atf_writer;
int ada_atf_writer_new(const char *path, bool detail, const struct ada_atf_file_info *info,
                       struct ada_atf_writer **out);
/* Index: the event's timestamp_ns is used for the time range. */
int ada_atf_writer_index(struct ada_atf_writer *w, const struct atf_index_event *ev);
/* Detail: ev->total_length bytes at ev (header + payload) are appended. */
int ada_atf_writer_detail(struct ada_atf_writer *w, const struct atf_detail_event_header *ev);
/* Writes header and footer, closes, frees (also on error). */
int ada_atf_writer_finish(struct ada_atf_writer *w);
/* Closes and frees without finishing (the file is left unfinished). */
void ada_atf_writer_abort(struct ada_atf_writer *w);

/* ------------------------------------------------------------------ */
/* Validator                                                           */
/* ------------------------------------------------------------------ */

enum ada_atf_severity { ADA_ATF_ERROR = 0, ADA_ATF_WARNING = 1 };

/* Called once per problem. offset is the byte offset in path the problem
 * is about (0 for whole-file problems). */
typedef void (*ada_atf_problem_fn)(void *ctx, enum ada_atf_severity sev, const char *path,
                                   uint64_t offset, const char *msg);

struct ada_atf_report {
	ada_atf_problem_fn fn;
	void *ctx;
	uint64_t errors; /* counted by the validator */
	uint64_t warnings;
	/* Per file, at most this many problems are passed to fn (0: 50); the
	 * rest are counted and summed up in one last line. */
	uint32_t max_per_file;
	/* Called for each file that shrank while it was validated (a running
	 * target, the session's owner, the recorder's final truncation): what
	 * lay past its new end read as zeros, so the problems found there are
	 * about zeros, not its events. Counted as an error; NULL: counted
	 * only. */
	void (*shrank)(void *ctx, const char *path);
};

/* What the validator learned about one file, for cross-file checks. */
struct ada_atf_vfile {
	bool usable; /* structure good enough to follow links into */
	uint64_t count;
	uint64_t first_ts, last_ts;
};

/* One index file in (buf, len). Reads only inside the buffer whatever the
 * header claims. */
void ada_atf_validate_index_buf(const char *path, const void *buf, size_t len,
                                struct ada_atf_report *r, struct ada_atf_vfile *info);
/* One detail file in (buf, len). */
void ada_atf_validate_detail_buf(const char *path, const void *buf, size_t len,
                                 struct ada_atf_report *r, struct ada_atf_vfile *info);
/* Links between an index file and its detail file (either may be NULL when
 * absent): has_detail flag, detail_seq -> index_seq -> detail_seq, and the
 * same timestamp and function_id on both ends. */
void ada_atf_validate_links_buf(const char *ipath, const void *ibuf, size_t ilen, const char *dpath,
                                const void *dbuf, size_t dlen, struct ada_atf_report *r);
/* A thread directory: every generation, its links, and non-decreasing
 * timestamps across generations. Returns 0 or -errno when dir cannot be
 * scanned (problems are reported through r, not returned). */
int ada_atf_validate_thread(const char *dir, struct ada_atf_report *r);

/* Formats the kind names used by dump: "call", "return", "exception", or
 * NULL for an unknown kind. */
const char *ada_atf_kind_name(uint32_t kind);

#endif
