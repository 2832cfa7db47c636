/*
 * ada trigger: what makes the flight recorder persist a detail window.
 *
 * Protocol (who calls what, on which thread, in which order):
 *   - Parsing (ada_trigger_parse*) is pure and thread-safe: the CLI checks
 *     every --trigger before the program starts.
 *   - One engine per recording. The drain thread owns it: it is the only
 *     caller of ada_trigger_feed(), ada_trigger_tick(), ada_trigger_fire_crash(),
 *     the per-process/per-thread objects and the window accessors.
 *   - The trigger SET can change while the drain runs: ada_trigger_add(),
 *     ada_trigger_remove() and ada_trigger_fire_manual() may be called from
 *     any thread (the live-control socket, a signal-forwarding thread). They
 *     take the engine's mutex, change a staged copy and bump a generation
 *     with a release store; the drain compares the generation (acquire)
 *     at the start of each feed/tick and, when it moved, copies the staged
 *     set under the mutex. The drain never holds the mutex while it works.
 *   - A trigger fires only on events whose timestamp is at or after the
 *     time it was added (added_ns, CLOCK_BOOTTIME like every event).
 *   - Events reach the engine converted (CLOCK_BOOTTIME ns), per thread, in
 *     ring order: the stream the drain already reads. The hot path pays
 *     nothing for symbol, latency and p99 triggers.
 *   - A fire becomes a window [fire - pre, fire + post] (latency: centred
 *     on the slow call's return; time=: the whole range plus pre/post).
 *     Windows that overlap merge; a trigger that fires again within its
 *     hold-off is ignored; once max_windows exist new ones are refused
 *     (merges still extend). Every ignored fire is counted.
 * Nothing here prints; errors are 0 / -errno.
 */
#ifndef ADA_TRIGGER_H
#define ADA_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atf_format.h"
#include "cidx.h"

#define ADA_TRIGGER_TEXT_MAX 288
#define ADA_TRIGGER_GLOB_MAX 256
#define ADA_TRIGGER_NOTE_MAX 256       /* a manual fire's note (`ada trigger --note`) */
#define ADA_TRIGGER_MAX 64             /* triggers armed at once */
#define ADA_TRIGGER_P99_MIN_CALLS 100u /* calls before a running p99 is trusted */
#define ADA_TRIGGER_STACK_FRAMES 256u  /* innermost frames kept per thread */
#define ADA_TRIGGER_DEFAULT_PRE_NS 5000000000ull
#define ADA_TRIGGER_DEFAULT_POST_NS 1000000000ull
#define ADA_TRIGGER_DEFAULT_MAX_WINDOWS 16u
#define ADA_TRIGGER_DEFAULT_HOLDOFF_NS 1000000000ull
/* An EXCEPTION index event whose call_depth has this bit is a fatal-signal
 * marker, not a frame: low bits = signal, function_id = fault address
 * (docs/format.md). */
#define ADA_TRIGGER_CRASH_DEPTH_FLAG ADA_SIGNAL_MARKER_FLAG

enum ada_trigger_kind {
	ADA_TRIGGER_CRASH = 1,   /* crash */
	ADA_TRIGGER_SYMBOL = 2,  /* symbol=GLOB */
	ADA_TRIGGER_LATENCY = 3, /* p99=function:GLOB>DURATION, latency=... */
	ADA_TRIGGER_P99 = 4,     /* p99=function:GLOB (the function's own running p99) */
	ADA_TRIGGER_TIME = 5,    /* time=HH:MM-HH:MM */
	ADA_TRIGGER_MANUAL = 6,  /* manual */
};

struct ada_trigger_spec {
	enum ada_trigger_kind kind;
	char text[ADA_TRIGGER_TEXT_MAX]; /* as given */
	char glob[ADA_TRIGGER_GLOB_MAX]; /* SYMBOL, LATENCY, P99: fnmatch(3) pattern */
	uint64_t threshold_ns;           /* LATENCY */
	uint32_t from_sec, to_sec;       /* TIME: seconds after local midnight; to <= from wraps */
	/* Its own pre/post-roll (`ada arm --pre-roll-sec`), used when own_roll;
	 * otherwise the engine's (ada_trigger_opts). */
	bool own_roll;
	uint64_t pre_ns, post_ns;
};

/* Parses one --trigger SPEC. -EINVAL with one sentence in why (naming the
 * bad part and giving an example of a good spec); why may be NULL. */
int ada_trigger_parse(const char *text, struct ada_trigger_spec *out, char *why, size_t why_len);
/* A duration, the one grammar of ada's options and the reading commands'
 * offsets: a number (a fraction and an exponent allowed, no sign) and a
 * unit, which is required: "50ms", "200us", "1.5s", "750ns", ".5ms",
 * "1e3us". Exact (no floating point); what is finer than 1 ns is dropped.
 * 0, -EDOM for a number without a unit ("50"), -ERANGE past UINT64_MAX ns,
 * or -EINVAL. */
int ada_trigger_parse_duration(const char *s, uint64_t *ns);
/* Seconds with an optional fraction: "1", "0.25", "2.5" (no unit, no
 * exponent). 0, -ERANGE past UINT64_MAX ns, or -EINVAL. */
int ada_trigger_parse_seconds(const char *s, uint64_t *ns);
const char *ada_trigger_kind_name(enum ada_trigger_kind k);
/* The rule of symbol, latency and p99 triggers: glob (fnmatch(3)) matches
 * name, or name without a compiler clone suffix (gcc's "f.constprop.0",
 * "f.isra.0", "f.part.0", "f.cold": the user names f). Pure. */
bool ada_trigger_name_match(const char *glob, const char *name);

struct ada_trigger_opts {
	uint64_t pre_ns, post_ns;
	uint32_t max_windows; /* 0: ADA_TRIGGER_DEFAULT_MAX_WINDOWS */
	uint64_t holdoff_ns;
};

struct ada_trigger_window {
	uint32_t id;                        /* 0, 1, ... in creation order */
	uint32_t trigger_id;                /* the trigger that opened it */
	char trigger[ADA_TRIGGER_TEXT_MAX]; /* its spec text */
	uint64_t fire_ns;                   /* first fire */
	uint64_t from_ns, to_ns;            /* merged range */
	uint64_t fn_id;                     /* function that fired it (0: none) */
	uint32_t tid;                       /* thread that fired it (0: none) */
	uint32_t fires;                     /* fires merged into it, the first included */
	uint64_t duration_ns;               /* latency/p99: the slow call's duration */
	uint64_t threshold_ns;              /* latency: the limit; p99: the estimate then */
	char note[ADA_TRIGGER_NOTE_MAX];    /* manual: the first note given (may be empty) */
	bool closed;                        /* the drain persisted all of it */
};

struct ada_trigger_stats {
	uint64_t fires;          /* every fire, counted before hold-off/max */
	uint64_t held_off;       /* ignored: within the trigger's hold-off */
	uint64_t escalated;      /* within the hold-off, but slower than every call it held */
	uint64_t over_max;       /* ignored: max_windows reached */
	uint64_t merged;         /* extended an existing window */
	uint64_t manual_ignored; /* manual fire with no manual trigger armed */
	uint64_t unresolved;     /* CALL of a function whose name was unknown */
	uint64_t p99_untracked;  /* p99 calls beyond the estimator table bound */
	uint64_t stack_dropped;  /* outer frames pushed out of a full frame stack */
	uint64_t stack_mismatch; /* RETURN/EXCEPTION that matched no open frame */
};

struct ada_trigger_engine;
struct ada_trigger_proc;
struct ada_trigger_thread;

/* -ENOMEM. */
int ada_trigger_engine_new(const struct ada_trigger_opts *o, struct ada_trigger_engine **out);
void ada_trigger_engine_free(struct ada_trigger_engine *e); /* NULL is a no-op */
const struct ada_trigger_opts *ada_trigger_engine_opts(const struct ada_trigger_engine *e);

/* Any thread. Arms s; fires only on events at or after now_ns. *id (may be
 * NULL) receives a handle for ada_trigger_remove(). -ENOSPC (ADA_TRIGGER_MAX
 * armed), -EINVAL. */
int ada_trigger_add(struct ada_trigger_engine *e, const struct ada_trigger_spec *s, uint64_t now_ns,
                    uint32_t *id);
/* Any thread. -ENOENT when id is not armed. */
int ada_trigger_remove(struct ada_trigger_engine *e, uint32_t id);
/* Any thread (not a signal handler: it locks). Queues a manual fire at
 * now_ns; the drain applies it at its next tick. -EAGAIN when 64 are queued. */
int ada_trigger_fire_manual(struct ada_trigger_engine *e, uint64_t now_ns);
/* The same with a note (NULL or "": none; cut to ADA_TRIGGER_NOTE_MAX - 1
 * bytes) that the window it opens keeps (a merge keeps the first note). */
int ada_trigger_fire_manual_note(struct ada_trigger_engine *e, uint64_t now_ns, const char *note);
/* Armed triggers (a copy of the staged set; any thread). Returns how many
 * were written (up to max). */
size_t ada_trigger_list(struct ada_trigger_engine *e, struct ada_trigger_spec *out, size_t max);
/* The same with each one's handle in ids[] (for ada_trigger_remove()). */
size_t ada_trigger_list_ids(struct ada_trigger_engine *e, struct ada_trigger_spec *out,
                            uint32_t *ids, size_t max);
/* Any thread: true when a trigger of this kind is armed. */
bool ada_trigger_armed(struct ada_trigger_engine *e, enum ada_trigger_kind k);

/* ---- drain thread only ---- */

/* Whether the armed trigger whose spec text is text has fired (the drain
 * thread, or once it stopped): the recording's end tells a trigger that
 * never fired from one whose functions' tables the disk budget deleted. */
bool ada_trigger_fired(const struct ada_trigger_engine *e, const char *text);

/* Name of fn_id in this process, or NULL when not known (yet). */
typedef const char *(*ada_trigger_name_fn)(void *ctx, uint64_t fn_id);
int ada_trigger_proc_new(struct ada_trigger_engine *e, ada_trigger_name_fn name, void *ctx,
                         struct ada_trigger_proc **out);
void ada_trigger_proc_free(struct ada_trigger_proc *p);
int ada_trigger_thread_new(struct ada_trigger_proc *p, uint32_t tid,
                           struct ada_trigger_thread **out);
void ada_trigger_thread_free(struct ada_trigger_thread *t);

/* n converted events of thread t, in order. */
void ada_trigger_feed(struct ada_trigger_thread *t, const struct atf_index_event *ev, size_t n);
/* For a caller that keeps t's open frames in its own pass over the
 * events (the drain's fused pass, ada_cidx_enc_put_ring()), in place of
 * ada_trigger_feed() for the events it takes: applies the staged set, as
 * a feed does, and hands out the frames in *c; false (c untouched) while
 * some trigger wants function names, when every event needs the engine.
 * ada_trigger_calls_end() takes them back; nothing else may touch t
 * between the two. */
bool ada_trigger_calls_begin(struct ada_trigger_thread *t, struct ada_cidx_calls *c);
void ada_trigger_calls_end(struct ada_trigger_thread *t, const struct ada_cidx_calls *c);
/* True when a trigger was armed or removed, or a manual fire queued, that
 * the drain has not taken yet (its next feed or tick does). */
bool ada_trigger_staged_pending(const struct ada_trigger_engine *e);
/* Applies queued manual fires and time ranges. local_sec = seconds since
 * local midnight at now_ns (the caller reads the wall clock: tests inject). */
void ada_trigger_tick(struct ada_trigger_engine *e, uint64_t now_ns, uint32_t local_sec);
/* The process died of a signal at crash_ns: fires every armed crash
 * trigger (hold-off and max_windows do not apply to a death). Returns
 * true when a window covers crash_ns afterwards. */
bool ada_trigger_fire_crash(struct ada_trigger_engine *e, uint64_t crash_ns, uint32_t tid);

struct ada_trigger_frame {
	uint64_t fn_id;
	uint64_t call_ns;
	uint32_t depth;
};
/* Open frames of t, innermost first (up to max). *depth (may be NULL) =
 * depth of the innermost open frame, which exceeds the count when outer
 * frames were pushed out. */
size_t ada_trigger_thread_stack(const struct ada_trigger_thread *t, struct ada_trigger_frame *out,
                                size_t max, uint32_t *depth);
/* Last fatal-signal marker seen on t (0: none); *addr gets the address. */
int ada_trigger_thread_crash(const struct ada_trigger_thread *t, uint64_t *addr);
uint32_t ada_trigger_thread_tid(const struct ada_trigger_thread *t);

size_t ada_trigger_window_count(const struct ada_trigger_engine *e);
const struct ada_trigger_window *ada_trigger_window_at(const struct ada_trigger_engine *e,
                                                       size_t i);
/* The drain persisted window i up to its end. A later fire that overlaps
 * it reopens it. */
void ada_trigger_window_close(struct ada_trigger_engine *e, size_t i);
/* Whether a window may come to want the detail of events the drain takes
 * now: a trigger armed (its fire's pre-roll reaches back), a change of the
 * set staged and not taken yet (it may arm one), or a window not closed.
 * False: no window will soon read those events' detail back (the drain
 * then fills no recent window with them, ada_wal_file_keep_recent(); a
 * later window's pre-roll decodes them). */
bool ada_trigger_may_window(const struct ada_trigger_engine *e);
/* Bumps whenever a window is created or extended (drain: persist now). */
uint64_t ada_trigger_window_gen(const struct ada_trigger_engine *e);
void ada_trigger_get_stats(const struct ada_trigger_engine *e, struct ada_trigger_stats *out);

/* ---- the p99 estimator (P-square, Jain & Chlamtac 1985), exposed for tests ---- */
struct ada_trigger_p2 {
	double q[5];  /* marker heights */
	double n[5];  /* marker positions (1-based) */
	double np[5]; /* desired positions */
	uint64_t count;
};
void ada_trigger_p2_init(struct ada_trigger_p2 *p);
void ada_trigger_p2_add(struct ada_trigger_p2 *p, double x);
/* Current p99 estimate (exact order statistic below 5 samples; 0 when empty). */
double ada_trigger_p2_value(const struct ada_trigger_p2 *p);

#endif
