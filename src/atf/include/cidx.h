/*
 * ada cidx: the compact index ("ATC1"), a versioned extension of ATF v2 for
 * the index lane of the recording's own write-ahead log (DESIGN.md decision
 * 4, ATF-ERRATA.md 7). docs/format.md, "Compact index", has the byte layout;
 * this header is its one definition in C.
 *
 * What it keeps: every ATF v2 index event, bit for bit (timestamp_ns,
 * function_id, thread_id, event_kind, call_depth, detail_seq), whatever the
 * values; the common shapes are just cheaper. The file is
 *
 *   file header (64) | block | block | ... | link table | block table | footer (64)
 *
 * Blocks are written back to back; each one is sealed (header, CRC-32)
 * before any of its bytes leave the writer, carries the absolute state
 * its events are coded against (first seq, first time, depth, the open
 * frames up to ADA_CIDX_FRAMES_MAX, the last function ids), and decodes
 * alone. Link table, block table and footer exist once the file is
 * finished; an unfinished file is its sealed blocks followed by anything
 * (zeros of a preallocated tail, a torn write), and a reader walks the
 * blocks from the file header, each checked by its CRC.
 *
 * Links (detail_seq) are not in the event stream: a window decided after
 * the fact would have to rewrite variable-length bytes already on disk.
 * The encoder collects them (from events that carry one, and from
 * ada_cidx_enc_link() after the fact) and writes them sorted as the link
 * table at finish. Until then the detail file is the link log: each
 * detail record names its index_seq (docs/format.md), so recovery rebuilds
 * the table from it.
 *
 * Threads: an encoder belongs to one thread at a time (the drain's, for
 * one recorded thread); a decoder is immutable after open except for the
 * scratch its callers pass in, so several threads may read one.
 * Every function returns 0 or -errno unless it says otherwise; nothing
 * here prints.
 */
#ifndef ADA_CIDX_H
#define ADA_CIDX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atf.h"
#include "atf_format.h"

#define ADA_CIDX_MAGIC "ATC1"
#define ADA_CIDX_FOOTER_MAGIC "1CTA"
#define ADA_CIDX_BLOCK_MAGIC "ATCB"
#define ADA_CIDX_VERSION 1

#define ADA_CIDX_FRAMES_MAX 64u    /* open frames a block header carries */
#define ADA_CIDX_CACHE_SLOTS 1024u /* the function-id cache, direct mapped */
#define ADA_CIDX_EVENT_MAX 48u     /* the longest coded event (a RAW one) */
#define ADA_CIDX_BLOCK_DEFAULT 65536u
#define ADA_CIDX_BLOCK_MIN 4096u
#define ADA_CIDX_BLOCK_MAX (1u << 20)

/* The file header (64 bytes), at offset 0. Shaped like the ATF v2 index
 * header; block_size is the most bytes one block takes. */
struct __attribute__((packed)) ada_cidx_file_header {
	uint8_t magic[4]; /* "ATC1" */
	uint8_t endian;   /* ATF_ENDIAN_LITTLE */
	uint8_t version;  /* ADA_CIDX_VERSION */
	uint8_t arch;
	uint8_t os;
	uint32_t flags; /* ATF_INDEX_FLAG_HAS_DETAIL */
	uint32_t thread_id;
	uint8_t clock_type;
	uint8_t reserved1[3];
	uint32_t block_size;
	uint64_t event_count;   /* 0 until finished; the footer's is authoritative */
	uint64_t blocks_offset; /* 64 */
	uint64_t footer_offset; /* 0 until finished */
	uint64_t time_start_ns;
	uint64_t time_end_ns;
};

/* One open frame of a block's starting state. */
struct __attribute__((packed)) ada_cidx_frame {
	uint64_t function_id;
	uint32_t call_depth;
};

/* A block header (64 bytes), followed by nframes frames (oldest first)
 * and the coded events; total_len covers all three. */
struct __attribute__((packed)) ada_cidx_block_header {
	uint8_t magic[4]; /* "ATCB" */
	uint32_t crc;     /* zlib crc32 of bytes [8, total_len) of the block */
	uint32_t total_len;
	uint32_t nevents;
	uint64_t first_seq; /* index_seq of the block's first event */
	uint64_t first_ts;  /* its timestamp_ns; the first delta is from here */
	uint32_t thread_id; /* the events' thread_id unless one says otherwise */
	uint32_t cur_depth; /* depth of the innermost open frame (0: none) */
	uint32_t nframes;   /* <= ADA_CIDX_FRAMES_MAX */
	uint32_t flags;     /* 0 */
	uint64_t last_call_fid;
	uint64_t last_explicit_fid;
};

/* The footer (64 bytes) of a finished file. */
struct __attribute__((packed)) ada_cidx_footer {
	uint8_t magic[4]; /* "1CTA" */
	uint32_t crc;     /* crc32 of [link_offset, footer offset) */
	uint64_t event_count;
	uint64_t nblocks;
	uint64_t nlinks;
	uint64_t link_offset;
	uint64_t btab_offset;
	uint64_t reserved[2];
};

/* A block table entry (24 bytes); the table is nblocks of them. */
struct __attribute__((packed)) ada_cidx_btab_entry {
	uint64_t offset;
	uint64_t first_seq;
	uint64_t first_ts;
};

_Static_assert(sizeof(struct ada_cidx_file_header) == 64, "cidx file header is 64 bytes");
_Static_assert(offsetof(struct ada_cidx_file_header, block_size) == 20, "block_size at 20");
_Static_assert(offsetof(struct ada_cidx_file_header, time_start_ns) == 48, "time_start at 48");
_Static_assert(sizeof(struct ada_cidx_frame) == 12, "cidx frame is 12 bytes");
_Static_assert(sizeof(struct ada_cidx_block_header) == 64, "cidx block header is 64 bytes");
_Static_assert(offsetof(struct ada_cidx_block_header, first_seq) == 16, "first_seq at 16");
_Static_assert(offsetof(struct ada_cidx_block_header, last_call_fid) == 48, "last_call at 48");
_Static_assert(sizeof(struct ada_cidx_footer) == 64, "cidx footer is 64 bytes");
_Static_assert(sizeof(struct ada_cidx_btab_entry) == 24, "cidx btab entry is 24 bytes");

/* True when buf starts with the compact magic. */
bool ada_cidx_is_compact(const void *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Encoder (the drain, one per recorded thread)                        */
/* ------------------------------------------------------------------ */

struct ada_cidx_enc;

/* Where encoded bytes go: the caller's buffer, p[len..cap) free. The
 * encoder's bytes are meant to be written back to back from file offset
 * 64 (after the file header); ada_cidx_enc_put() appends, ada_cidx_enc_seal()
 * closes the block it left open in the same buffer. */
struct ada_cidx_out {
	uint8_t *p;
	size_t len, cap;
};

/* block_size: 0 for ADA_CIDX_BLOCK_DEFAULT, else within
 * [ADA_CIDX_BLOCK_MIN, ADA_CIDX_BLOCK_MAX] (-EINVAL). -ENOMEM. */
int ada_cidx_enc_new(uint32_t block_size, struct ada_cidx_enc **out);
void ada_cidx_enc_free(struct ada_cidx_enc *e); /* NULL is a no-op */

/* Codes ev[0..n) into o, opening and sealing blocks as they fill (a block
 * never goes past block_size bytes nor past o->cap). Returns the events
 * taken: fewer than n when o has no room left for a block to open or an
 * event to fit; the caller then seals, writes o out and goes on with a
 * fresh buffer. Events with detail_seq != ATF_NO_DETAIL are remembered as
 * links (-ENOMEM there is returned as a short count with *err set). */
size_t ada_cidx_enc_put(struct ada_cidx_enc *e, const struct atf_index_event *ev, size_t n,
                        struct ada_cidx_out *o, int *err);
/* ---- The drain's fused pass (ada_cidx_enc_put_ring) ----
 *
 * One pass per event over a recorded thread's ring: the event's counter
 * time converted, its fields checked, the event coded into the open block
 * and a caller's stack of open calls kept, without an ATF v2 copy in
 * between. It takes the common events only and stops at the first other
 * one, which the caller gives the general way (convert, check, put());
 * both code the same bytes (blocks end where their bytes say, enc_run()). */

/* How put_ring() converts and checks a ring event (the drain's rules,
 * src/recorder/drain_convert.c): ns = ns0 + ((raw - tsc0) * mult >> 32),
 * at least last; an event stops the pass unless raw - tsc0 <= d_max (the
 * piece of the clock, and the newest time a published event can have),
 * thread_id == tid, its kind is a CALL or RETURN, detail_seq is
 * ATF_NO_DETAIL and call_depth <= depth_max. last moves on. */
struct ada_cidx_ring_conv {
	uint64_t tsc0, ns0, mult;
	uint64_t d_max;
	uint64_t last;
	uint32_t tid;
	uint32_t depth_max;
};

/* An open call of the stack put_ring() keeps beside the encoder: the
 * trigger engine's per-thread frames (src/trigger), which are these.
 * wait0, mask and gen are its own: a push writes the stack's wait0 and
 * zeros. */
struct ada_cidx_call {
	uint64_t call_ns;
	uint64_t fn_id;
	uint64_t wait0;
	uint64_t mask;
	uint64_t gen;
	uint32_t depth;
};

/* The stack: fr[] a ring of cap (a power of two) frames, n held, the
 * next push at head. put_ring() keeps it as the engine does for events
 * that judge nothing: a CALL pushes (and stops the pass when it would
 * drop a frame: deeper than the innermost plus one, or cap held); the
 * RETURN of the innermost frame pops; nothing else is taken. */
struct ada_cidx_calls {
	struct ada_cidx_call *fr;
	uint32_t cap, head, n;
	uint64_t wait0;
};

/* What a caller keeps of each event put_ring() takes, for its own reads
 * later (the drain's recent window for the detail lane, src/wal): event
 * i of the file at at[i & mask] as ts_kind = timestamp_ns | event_kind <<
 * 62 (0 when the time is 2^62 ns or more) and fid, stored without
 * reading the line first (non-temporal on x86_64: the window is read back
 * only long after, for a few events). next: the file index of the next
 * event, moved on. */
struct ada_cidx_recent {
	uint64_t ts_kind;
	uint64_t fid;
};
struct ada_cidx_keep {
	struct ada_cidx_recent *at;
	uint64_t mask;
	uint64_t next;
};

/* Codes the ring events src[0..n) (raw counter times, as the producer
 * wrote them: read once each) into o's open block, as converted by cv,
 * keeping calls (NULL: none). Stops before the first event that is not
 * a CALL one level deeper (of any function: a new one is spelled out and
 * cached, as put() does) or the RETURN of the innermost frame, that fails
 * cv's checks or calls' rules, whose time is more than 65566 ns after the
 * previous one, or that would not fit the block; and after 64 frames of
 * its own open at once, a RETURN at depth 0, or (keep) a time that could
 * reach 2^62 ns. Returns the events taken (0 when no block is open: put()
 * opens one); cv->last, calls and keep (NULL: none) move on with them. */
size_t ada_cidx_enc_put_ring(struct ada_cidx_enc *e, const struct atf_index_event *src, size_t n,
                             struct ada_cidx_ring_conv *cv, struct ada_cidx_calls *calls,
                             struct ada_cidx_keep *keep, struct ada_cidx_out *o);
/* Where the encoder put event seq: its block's file offset (pos), length
 * in bytes so far (len), first seq and events so far (an open block's
 * grow as events come; a sealed block's are final). -ERANGE when seq is
 * not an event coded yet, -ENOMEM when the block table was lost. */
struct ada_cidx_span {
	uint64_t pos, first_seq;
	uint32_t len, nevents;
};
int ada_cidx_enc_block_of(const struct ada_cidx_enc *e, uint64_t seq, struct ada_cidx_span *s);
/* Decodes the first n events of one block from its bytes blk[0..len)
 * (header, frames, coded events; its CRC, total_len and nevents are not
 * read: an open block's are not written yet) into out, links not applied
 * (ATF_NO_DETAIL). -EBADMSG when they do not decode to n events. */
int ada_cidx_block_events(const void *blk, size_t len, uint32_t n, struct atf_index_event *out);
/* Seals the block put() left open in o (its header, CRC). A no-op when
 * none is open. A caller seals before o's bytes go to the file. */
void ada_cidx_enc_seal(struct ada_cidx_enc *e, struct ada_cidx_out *o);
/* The event index_seq is linked to detail event detail_seq (the back-patch:
 * any event already coded, any time before finish). A later link of the
 * same index_seq replaces an earlier one. -ENOMEM, -ERANGE when index_seq
 * is not an event coded yet. */
int ada_cidx_enc_link(struct ada_cidx_enc *e, uint64_t index_seq, uint32_t detail_seq);
/* Drops every link to a detail event at or past detail_seq (a detail file
 * cut short by a failed write): those events say "no detail" again.
 * Returns how many links it dropped. */
uint64_t ada_cidx_enc_unlink_from(struct ada_cidx_enc *e, uint32_t detail_seq);
/* Resumes e (fresh from ada_cidx_enc_new()) after the whole blocks of an
 * unfinished compact file (buf, len) - a recorder that died, `ada
 * recover`: the next event is index_seq ada_cidx_dec_count() of that
 * file, the next block goes at *end (the end of its last whole block:
 * what follows is to be overwritten), the model is the state after that
 * block's last event, the block table holds its blocks. An unfinished
 * file has no link table: the caller adds the links again from the detail
 * file (ada_cidx_enc_link()). -EBADMSG (no usable header), -ENOMEM,
 * -EINVAL (e was used). */
int ada_cidx_enc_resume(struct ada_cidx_enc *e, const void *buf, size_t len, uint64_t *end);
/* Events coded so far, and the file offset the next block starts at. */
uint64_t ada_cidx_enc_count(const struct ada_cidx_enc *e);
uint64_t ada_cidx_enc_offset(const struct ada_cidx_enc *e);
/* The open frames a block opened now would carry: one opened after n
 * more events carries at most this + n (a CALL adds one), and never more
 * than ADA_CIDX_FRAMES_MAX (a writer's bound on the bytes n events take). */
uint32_t ada_cidx_enc_frames(const struct ada_cidx_enc *e);
/* Bytes ada_cidx_enc_finish() needs (link table, block table, footer), at
 * most: links added in seq order are counted exactly, others at their
 * longest, so a writer can count the tail against a disk budget ahead. */
size_t ada_cidx_enc_tail_size(const struct ada_cidx_enc *e);
/* The most one ada_cidx_enc_link() adds to ada_cidx_enc_tail_size(): a
 * link out of seq order at its longest (one in order takes two varints,
 * 15 bytes at most). */
#define ADA_CIDX_LINK_MAX_BYTES 20u
/* Seals nothing (seal first): writes the link table, the block table and
 * the footer into buf (they go at ada_cidx_enc_offset() of the file) and
 * fills *h, the final file header. *len gets the bytes written. -ENOSPC
 * when cap < ada_cidx_enc_tail_size(), -EBUSY when a block is open. */
int ada_cidx_enc_finish(struct ada_cidx_enc *e, const struct ada_atf_file_info *info, void *buf,
                        size_t cap, size_t *len, struct ada_cidx_file_header *h);
/* The placeholder header written first (counts and footer_offset 0). */
void ada_cidx_file_header_fill(struct ada_cidx_file_header *h, const struct ada_atf_file_info *info,
                               uint32_t block_size);

/* A whole file in memory (malloc'ed into *buf, *len bytes): ev[0..n) put
 * through e (fresh from ada_cidx_enc_new()), then the links of
 * link_seq[i] -> link_detail[i] added after the fact, then finished. For
 * tests, tools and fuzz seeds; the drain writes its own buffers. -ENOMEM,
 * -EINVAL when e was used or a link names no event. */
int ada_cidx_write_mem(struct ada_cidx_enc *e, const struct ada_atf_file_info *info,
                       const struct atf_index_event *ev, size_t n, const uint64_t *link_seq,
                       const uint32_t *link_detail, size_t nlinks, uint8_t **buf, size_t *len);

/* ------------------------------------------------------------------ */
/* Decoder (readers; untrusted bytes)                                  */
/* ------------------------------------------------------------------ */

struct ada_cidx_dec;

/* Opens the compact image (buf, len), kept, not copied. Walks the block
 * headers from the header's blocks_offset (magic, lengths within
 * block_size and the buffer, nframes, nevents within the block's bytes,
 * first_seq following on): O(blocks), the events are not read. Without
 * ADA_ATF_OPEN_SALVAGE the file must be finished and consistent: footer
 * and its CRC, the walk ending at the link table, the block table equal
 * to the walk, the counts, the link table (-EBADMSG otherwise); a block's
 * CRC is checked when it is decoded (or by ada_cidx_dec_block_whole()).
 * With it, the walk also checks each block's CRC and stops before the
 * first block that is not whole (an unfinished file's zeros, a torn
 * write, damage); the links are kept when the whole tail is intact.
 * Allocations are bounded by len. -ENOMEM. */
int ada_cidx_dec_open(const void *buf, size_t len, unsigned flags, struct ada_cidx_dec **out);
/* The same, buf being a mapping of the whole file fd (same length): the
 * walk reads the block headers (and, with SALVAGE, the blocks it checks)
 * with pread(2) into a buffer of one block (4 KiB without SALVAGE), so
 * that opening touches no page of the mapping but the header's, the
 * footer's and the tail's: a walk through the mapping faults in the pages
 * around each header, the whole file for 64 KiB blocks. fd is used only
 * during the call; a read that comes short ends the walk there. */
int ada_cidx_dec_open_fd(const void *buf, size_t len, int fd, unsigned flags,
                         struct ada_cidx_dec **out);
void ada_cidx_dec_free(struct ada_cidx_dec *d); /* NULL is a no-op */

const struct ada_cidx_file_header *ada_cidx_dec_header(const struct ada_cidx_dec *d);
uint64_t ada_cidx_dec_count(const struct ada_cidx_dec *d);
size_t ada_cidx_dec_nblocks(const struct ada_cidx_dec *d);
/* Block b's first seq, its event count, first timestamp. */
void ada_cidx_dec_block_info(const struct ada_cidx_dec *d, size_t b, uint64_t *first_seq,
                             uint32_t *nevents, uint64_t *first_ts);
/* Block b's file offset and its length in bytes. */
void ada_cidx_dec_block_span(const struct ada_cidx_dec *d, size_t b, uint64_t *offset,
                             uint32_t *len);
/* The block holding seq (O(log blocks)), or nblocks when seq >= count. */
size_t ada_cidx_dec_block_of(const struct ada_cidx_dec *d, uint64_t seq);
/* Block b's CRC holds (its bytes are the ones sealed; whether they
 * decode is only known by decoding them). */
bool ada_cidx_dec_block_whole(const struct ada_cidx_dec *d, size_t b);
/* Decodes block b into out (room for its nevents), links applied.
 * -EBADMSG when its bytes do not decode to exactly nevents events. */
int ada_cidx_dec_block(const struct ada_cidx_dec *d, size_t b, struct atf_index_event *out);
/* The event at seq into *ev: one block decoded into scratch, which has
 * room for ada_cidx_dec_scratch_events() events (the most one block of
 * this file holds). -ERANGE when seq >= count, -EBADMSG when the block
 * does not decode. */
size_t ada_cidx_dec_scratch_events(const struct ada_cidx_dec *d);
int ada_cidx_dec_get(const struct ada_cidx_dec *d, uint64_t seq, struct atf_index_event *scratch,
                     struct atf_index_event *ev);
/* First seq whose timestamp_ns >= ts (count when none): a binary search
 * over the blocks' first times and one block decoded into scratch. */
uint64_t ada_cidx_dec_find(const struct ada_cidx_dec *d, uint64_t ts,
                           struct atf_index_event *scratch);
/* Decodes every event into out (count of them). The streaming path. */
int ada_cidx_dec_all(const struct ada_cidx_dec *d, struct atf_index_event *out);
/* A streaming iterator: block by block, each block decoded once and in
 * pieces of at most ADA_CIDX_ITER_EVENTS events into the iterator's own
 * buffer (128 KiB: it stays in cache however long the file and however
 * many events a block holds), links applied. The reader's path for a
 * whole file without holding it decoded. A block's CRC is checked before
 * its first piece; a block whose bytes turn out not to decode to exactly
 * its nevents events ends the walk with -EBADMSG (pieces of it already
 * handed out came from bytes its CRC vouches for). */
#define ADA_CIDX_ITER_EVENTS 4096u
struct cidx_model;
struct ada_cidx_iter {
	const struct ada_cidx_dec *d;
	struct atf_index_event *buf; /* ADA_CIDX_ITER_EVENTS events */
	struct cidx_model *m;        /* the block's state between pieces */
	const uint8_t *p, *end;      /* the block's coded bytes still to decode */
	size_t block;                /* the next block to start */
	uint64_t seq;                /* index_seq of the next event decoded */
	uint64_t skip;               /* events still to pass over before seq of init */
	uint32_t left;               /* events of the current block still to decode */
};
/* Starts at seq (count: at the end). -ENOMEM. */
int ada_cidx_iter_init(struct ada_cidx_iter *it, const struct ada_cidx_dec *d, uint64_t seq);
/* *ev gets the next events (at most ADA_CIDX_ITER_EVENTS); returns how
 * many (0 at the end) or -EBADMSG when the block they are in does not
 * decode. They stay valid until the next call. */
long ada_cidx_iter_next(struct ada_cidx_iter *it, const struct atf_index_event **ev);
void ada_cidx_iter_fini(struct ada_cidx_iter *it);

/* The link table: detail_seq of index_seq (ATF_NO_DETAIL when none). */
uint32_t ada_cidx_dec_link(const struct ada_cidx_dec *d, uint64_t index_seq);
uint64_t ada_cidx_dec_nlinks(const struct ada_cidx_dec *d);

/* ------------------------------------------------------------------ */
/* ATF v2 form and validation (cidx_export.c)                          */
/* ------------------------------------------------------------------ */

/* The strict ATF v2 index file of the compact image (buf, len): header,
 * events, footer with the CRC-32, malloc'ed into *out. flags as for
 * ada_cidx_dec_open(); with SALVAGE the whole blocks before the first bad
 * one. -EBADMSG, -ENOMEM. */
int ada_cidx_to_atf(const void *buf, size_t len, unsigned flags, uint8_t **out, size_t *out_len);
/* The way an export's bulk went to its file (ada_cidx_file_to_atf_fd()). */
enum ada_cidx_export_how {
	ADA_CIDX_EXPORT_PLAIN,           /* plain writes (small, tmpfs, not a regular file) */
	ADA_CIDX_EXPORT_DONTCACHE,       /* buffered with RWF_DONTCACHE through io_uring */
	ADA_CIDX_EXPORT_DIRECT,          /* O_DIRECT through io_uring, asked for */
	ADA_CIDX_EXPORT_DIRECT_FALLBACK, /* O_DIRECT: RWF_DONTCACHE refused */
};
/* Flags of the exports: O_DIRECT asked for (RWF_DONTCACHE's page-cache
 * copy takes a CPU of its own: not when several exports run at once);
 * RWF_DONTCACHE taken as refused, as by a kernel before 6.14 (tests). */
#define ADA_CIDX_EXPORT_DIRECT_ONLY 0x100u
#define ADA_CIDX_EXPORT_NO_DONTCACHE 0x200u
/* The same file written to fd (a regular file, empty, at offset 0) a
 * piece of the iterator at a time (ada_cidx_iter), so memory stays 128
 * KiB of events whatever the file's size: header placeholder, events,
 * footer, then the final header at 0, and fdatasync: the bytes are on
 * disk when it returns 0 (a file that cannot be synced, EINVAL: a pipe,
 * /dev/null, is not). An output of 4 MiB or more is written through
 * io_uring from four 2 MiB staging buffers in turn, into space allocated
 * ahead, buffered with RWF_DONTCACHE when the file takes it (unless
 * ADA_CIDX_EXPORT_DIRECT_ONLY), else with O_DIRECT, else through the page
 * cache (and on tmpfs); fd's status flags are as they came after.
 * -EBADMSG, -ENOMEM, -errno of a write (the file is then incomplete). */
int ada_cidx_to_atf_fd(const void *buf, size_t len, unsigned flags, int fd);
/* The same from the compact file in (len bytes, its size), mapped here:
 * the block headers read with pread at open (ada_cidx_dec_open_fd()) and
 * the mapping's pages given back every 8 MiB as the stream decodes them,
 * so that memory stays a few MiB whatever the file's size. -errno of the
 * mapping too; -ESTALE when in shrank while it was read (its pages past
 * the new end read as zeros, not a SIGBUS: atf_guard.c), so fd does not
 * hold its conversion. how (NULL: not asked): the way the bulk went. */
int ada_cidx_file_to_atf_fd(int in, size_t len, unsigned flags, int fd,
                            enum ada_cidx_export_how *how);
/* The validator for a compact index file: its structure (finished, block
 * table, every block's CRC and events), then every ATF v2 rule on its
 * ATF v2 form (reported with the path "PATH (as ATF v2)" and offsets of
 * that form). ada_atf_validate_index_buf() comes here for "ATC1" files. */
void ada_cidx_validate_buf(const char *path, const void *buf, size_t len, struct ada_atf_report *r,
                           struct ada_atf_vfile *info);

#endif
