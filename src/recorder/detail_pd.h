/* The detail lane's persist, private to detail_persist.c and
 * detail_take.c (window memory): a thread's detail state and the helpers
 * both use. Threads: the drain thread only. */
#ifndef ADA_DETAIL_PD_H
#define ADA_DETAIL_PD_H

#include "atf.h"
#include "ring.h"
#include "detail_internal.h"
#include "recorder_internal.h"

#define PD_LOOKS 4 /* snapshots a window's look may take for a steady counter */

/* What a record's index event said when it was read (pd_resolve): a
 * compact index keeps only its recent events readable (segment_cidx.c),
 * and a record waiting in window memory may outlive that, so its event
 * is read as soon as the drain has taken it and kept here for the
 * record's decision. */
enum pd_res_state {
	PD_RES_NONE,    /* not read yet (its event not taken yet) */
	PD_RES_MATCH,   /* ts: the event's time; it is the record's */
	PD_RES_OTHER,   /* ts: the event's time; function, kind or link differ */
	PD_RES_NOEVENT, /* no event to read: decided by its own timestamp */
};
struct pd_res {
	uint64_t ts;
	uint32_t state; /* enum pd_res_state */
	uint32_t pad;
};

/* Window memory: blocks of PD_BLOCK bytes, oldest first, each records in
 * snapshot format (ring.h, struct ada_detail_rec) and what their events
 * said. A block is 2 MiB aligned to 2 MiB, so that transparent huge
 * pages back it (a fault per block, not per 4 KiB page: the faults of
 * fresh pages cost more than the copy), and blocks are kept for reuse
 * (PD_POOL_MAX): the memory a take writes to is mostly warm already. */
#define PD_BLOCK (2ull << 20)
#define PD_RES_CAP (PD_BLOCK / 128) /* records a block holds at most */
#define PD_POOL_MAX 16u             /* free blocks kept */
struct pd_part {
	struct pd_part *next;
	struct ada_detail_snapshot snap; /* begin: where its records' positions count from */
	size_t off;                      /* the first record not decided yet */
	size_t bytes;                    /* bytes of records in buf */
	uint64_t first;                  /* the ordinal of the record at off */
	uint64_t nrec;                   /* records in buf */
	uint64_t resolved;               /* records read before this ordinal (pd_resolve) */
	size_t res_off;                  /* ... and its offset */
	struct pd_res *res;              /* one per record, PD_RES_CAP of them */
	uint8_t *buf;                    /* 8-byte aligned records, up to PD_REC_CAP bytes */
};
#define PD_REC_OFF ((sizeof(struct pd_part) + PD_RES_CAP * sizeof(struct pd_res) + 63) & ~63ull)
#define PD_REC_CAP (PD_BLOCK - PD_REC_OFF)

struct wal_tdetail {
	struct wal_dfile *df; /* detail.atf, NULL until the first record */
	uint64_t from;        /* detail ring position to snapshot from */
	uint64_t hwm;         /* records linked below this were decided */
	uint64_t over_seen;   /* the slot's overwritten counter at the previous call */
	uint64_t decided;     /* records decided (persisted or passed over), ever */
	uint64_t last_ns;     /* timestamp of the last record decided (0: none yet) */
	uint64_t stop_ns;     /* ... of the first one a call left undecided (0: none yet) */
	uint64_t gap_counted; /* records found overwritten undecided (wal_gap_count) */
	/* The last gap was counted from a moving counter: the next look may
	 * find more of it (its bounds, for the windows' shares). */
	bool gap_short;
	uint64_t gap_lo, gap_hi;
	/* Totals over the thread's life (manifest). */
	uint64_t records, bytes, overwritten, unlinked, files;
	uint64_t lost;           /* --detail always: overwritten before persisted (drops) */
	uint64_t waits, wait_ns; /* --detail always: the thread's waits for room (the slot's) */
	/* Records a failed write (a full disk) cut from its detail files when
	 * they were finished, their index events unlinked; files removed
	 * because not even the cut file could be sealed (wal_detail_close). */
	uint64_t cut, removed;
	bool settle; /* the next call is the thread's (or file's) last: look whole */
	/* Windows: window memory (wal_detail_take), its bytes, the records
	 * taken ever (the gap count's `decided` of a take's look: taken
	 * records are out of danger), the ring position the next take starts
	 * at (taken_ok: one took place), and the timestamps of the last
	 * record taken and of the first one a take left in the ring. */
	struct pd_part *parts, *parts_tail;
	uint64_t mem_bytes, taken, taken_end, take_last_ns, take_stop_ns;
	bool taken_ok;
	bool take_held; /* the last take stopped at the horizon (take_stop_ns) */
	/* An end's later slices take ring positions below this only (0: no
	 * limit): the records its first slice found, not those a live thread
	 * (a rotation) made meanwhile, whose events belong to its next file. */
	uint64_t take_upto;
	/* The index file's first ring position when the events of window
	 * memory's records were read: another file (a rotation) reads them
	 * again (its records are the old file's: unlinked). */
	uint64_t res_base;
	struct pd_part *res_part; /* the first part pd_resolve has not read whole (NULL: parts) */
	/* One past the ring position of the last record decided for a bad
	 * link (pd_locate): a later look finds it decided, as records below
	 * hwm (whose link it could not move: a link the target made up). */
	uint64_t bad_upto;
	int error;
};

/* One ring record, checked and unpacked. */
struct pd_rec {
	uint64_t raw_ts, link, fn;
	uint32_t type, flags, stack;
	const uint64_t *w; /* its words */
};

struct wal_tdetail *pd_state(struct wal_thread *t);
uint64_t pd_to_ns(const struct ada_recorder *r, uint64_t raw);
int pd_snapshot_part(struct ada_recorder *r, struct wal_thread *t, uint64_t from, uint64_t limit,
                     struct ada_detail_snapshot *snap);
bool pd_parse(const void *p, uint32_t len, struct pd_rec *out);
enum pd_res_state pd_read_event(struct wal_thread *t, const struct pd_rec *rc,
                                struct atf_index_event *ev);
uint64_t pd_counter(struct wal_thread *t);
uint64_t pd_index_head(struct wal_thread *t);
uint64_t pd_overwritten(struct wal_tdetail *dt, uint64_t now);
int pd_look(struct ada_recorder *r, struct wal_thread *t, uint64_t from, uint64_t limit,
            struct ada_detail_snapshot *snap, uint64_t *over, bool *steady);
void pd_gap(const struct wal_thread *t, struct wal_tdetail *dt, uint64_t over, uint64_t in_ring,
            uint64_t decided, uint64_t lo_ns, bool steady, struct wal_detail_stats *st);
/* Frees the parts of window memory whose every record was decided (all
 * of them: every part, at the thread's end), into the pool while it has
 * room (detail_take.c). */
void pd_parts_free(struct ada_recorder *r, struct wal_tdetail *dt, bool all);

#endif
