/*
 * What the reading commands (dump, report, export, flame, crash) share:
 * opening one pid_N directory (manifest, symbol table, name cache), opening
 * a thread with its generations (a damaged file is read as far as it is
 * whole, and said so on stderr), feeding a thread's events to a frame
 * walker, and parsing times (`123`, `+1.5s`). Everything comes from the
 * session directory: the traced binaries may be gone.
 */
#ifndef ADA_TOOLS_READ_H
#define ADA_TOOLS_READ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "analyze.h"
#include "atf.h"
#include "clock.h"

struct rd_pid {
	const struct ada_atf_pid *p;
	json_t *manifest; /* NULL when missing or damaged */
	struct ada_symtab *syms;
	struct ada_names *names;
	uint32_t damaged; /* files skipped or read partly: the command exits 1 */
	uint64_t t0;      /* the time "+1.5s" counts from: the recording's start */
	uint32_t *image;  /* per thread (as p->thread_dirs): its program image, 0 first */
	uint32_t nimages; /* program images the pid ran: 1 + its execs seen */
	struct ada_wall_anchor wall; /* realtime_ns 0: the manifest has none */
};

/* Reads the manifest (a damaged one is said and ignored), the symbol files
 * and makes the name cache. -errno (said by the caller). */
int rd_pid_open(const struct ada_atf_pid *p, enum ada_demangle dm, struct rd_pid *out);
void rd_pid_close(struct rd_pid *rp);

/* Program images (exec): a process that exec'd keeps its pid, and the new
 * image's threads get new thread_N directories, its main thread too (tid
 * = pid). So thread_N whose tid (the manifest's) is the pid and is not the
 * first such begins a new image, and every later thread_N is of that
 * image. rd_pid_open() fills image[] and nimages. rd_thread_new_image():
 * thread i (index in thread_dirs) is the main thread of an image after
 * the first, the thread of an earlier one: counting threads, it is not
 * counted again. */
bool rd_thread_new_image(const struct rd_pid *rp, size_t i);

/* What a reader says of a file or directory it refused because a
 * symbolic link is on its path below the session the user named (fs.h,
 * session roots); rd_strerror(): that for -ELOOP, else strerror. */
#define RD_LINK_SENTENCE                                                                           \
	"its path inside the session holds a symbolic link, and ada never follows a link it "      \
	"did not create"
const char *rd_strerror(int err);

/* Opens thread i of the pid with every generation: strictly, then a
 * damaged file again for its whole events, saying so. A thread directory
 * without an index file is said and counted, and *out is NULL (returns 0).
 * -errno for anything else. */
int rd_thread_open(struct rd_pid *rp, size_t i, struct ada_atf_thread **out);

/* Frees t (NULL is a no-op), first saying each of its files that shrank
 * while it was read and each compact index file with blocks found not to
 * decode (their events are not shown), counting each in rp->damaged. */
void rd_thread_close(struct rd_pid *rp, struct ada_atf_thread *t);

/* Feeds the events of t with from <= ts <= to to w, generation by
 * generation (src = the generation's position in t->gen), then finishes w
 * when finish is true: the atf library's sequential walk (a compact
 * file's blocks decoded once each into a buffer that stays in cache).
 * Returns the number of events fed. */
uint64_t rd_thread_walk(const struct ada_atf_thread *t, struct ada_frames *w, uint64_t from,
                        uint64_t to, bool finish);

/* The tid the files of thread t carry (the manifest's, else the first
 * event's), 0 when unknown. */
uint32_t rd_thread_tid(const struct rd_pid *rp, const struct ada_atf_thread *t);
/* The manifest's count-only functions (docs/hooks.md, "Count-only
 * functions"): their exact calls, which have no events. rd_count_only_text
 * prints one line each ("count-only (exact calls, no events): ..."),
 * nothing when there are none; rd_count_only_json gives the manifest's
 * array (a new reference; an empty array when none), which lists only the
 * functions called: rd_count_only_uncalled counts the others (the
 * manifest's count_only.uncalled; 0 for a manifest written before it,
 * which lists every one). */
void rd_count_only_text(const struct rd_pid *rp, FILE *f, const char *indent);
json_t *rd_count_only_json(const struct rd_pid *rp);
uint64_t rd_count_only_uncalled(const struct rd_pid *rp);
/* The program's name: basename of argv[0] in the manifest, or "pid N";
 * its control bytes made '?' (rd_mask). */
const char *rd_program(const struct rd_pid *rp, char *buf, size_t len);
/* s with each control character (C0, DEL, C1 as UTF-8) made one '?' in
 * place, as ada_control_printable_json does, for text read from a session
 * (argv, names) on its way to a terminal: the traced program chose it,
 * and an escape sequence must not reach the reader's terminal. Each byte
 * that is not part of a UTF-8 character (a directory's name, a name cut
 * short) becomes '?' too: jansson refuses such a string, and a JSON row
 * holding it was not printed at all. Returns s. */
char *rd_mask(char *s);

/* A time: nanoseconds ("123456"), or an offset from base with a unit
 * ("+1.5s", "+200ms", "+30us", "+10ns": ada_trigger_parse_duration's
 * grammar). 0, -EDOM for an offset without its unit ("+50"), -ERANGE, or
 * -EINVAL. */
int rd_parse_time(const char *s, uint64_t base, uint64_t *out);
/* A plain decimal number ("123"); false when it is not one. */
bool rd_parse_u64(const char *s, uint64_t *out);
/* An index of a caller's array of entries by a key (a, b) (report: function
 * and thread; flame: function and parent node): open addressing, linear
 * probing, at most half full. The slots hold an entry's position + 1 (0:
 * empty); the keys stay in the entries, read back through a key function.
 * Zero-initialized it is empty; rd_index_free() frees it. */
struct rd_key {
	uint64_t a;
	uint32_t b;
};
typedef struct rd_key (*rd_key_fn)(const void *entries, uint32_t pos);
struct rd_index {
	uint32_t *slots;
	size_t nslots, len; /* len: entries indexed */
};
/* Room for one more entry (the slots doubled and refilled when it would be
 * more than half full): 0 or -ENOMEM. */
int rd_index_reserve(struct rd_index *x, rd_key_fn key, const void *entries);
/* The slot of k after rd_index_reserve(): holding its entry's position + 1,
 * or 0 where a new entry goes (rd_index_put). */
uint32_t *rd_index_slot(const struct rd_index *x, rd_key_fn key, const void *entries,
                        struct rd_key k);
/* Entry pos goes in the empty slot rd_index_slot() gave. */
void rd_index_put(struct rd_index *x, uint32_t *slot, uint32_t pos);
void rd_index_free(struct rd_index *x);

/* A duration for people: "812 ns", "12.4 us", "3.21 ms", "1.502 s". */
const char *rd_fmt_ns(uint64_t ns, char *buf, size_t len);

/* The manifest's wall-clock anchor (clock.wall_anchor); false when it has
 * none (a recording made before manifests carried one) or a malformed one. */
bool rd_wall_anchor(const json_t *manifest, struct ada_wall_anchor *out);
/* A wall time as local ISO 8601 with nanoseconds and the zone's offset
 * ("2026-11-29T03:12:45.123456789+0100"), the form logs are lined up by. */
const char *rd_fmt_wall(uint64_t wall_ns, char *buf, size_t len);
/* --time: how the reading commands print an event's time. */
enum rd_time_form { RD_TIME_BOOT, RD_TIME_WALL };
/* "boot" or "wall"; -EINVAL for anything else (said by the caller). */
int rd_parse_time_form(const char *s, enum rd_time_form *out);
/* --demangle's value: 0, or 2 after one sentence naming the choices. */
int rd_demangle_opt(const char *arg, enum ada_demangle *out);

/* An output file written whole or not at all: a temporary file beside
 * path (created with O_EXCL|O_NOFOLLOW, mode 0600, src/fs) renamed over
 * path by rd_out_commit(), so a link planted at path is replaced, never
 * followed, and an interrupted export leaves no half file. "-" is stdout. */
struct rd_out {
	FILE *f;
	int dirfd;
	char *name;
	char tmp[256];
};
/* -errno (said by the caller). */
int rd_out_open(struct rd_out *o, const char *path);
/* Flushes, closes and renames; 0 or -errno (the temporary file is removed). */
int rd_out_commit(struct rd_out *o);
/* Closes and removes the temporary file. */
void rd_out_abort(struct rd_out *o);

/* Writes s as a JSON string (quoted, escaped) to f. */
void rd_json_str(FILE *f, const char *s);

/* Under a window that lost records (a manifest's window object w): what
 * filled the rings ("LEAD f1 40 %, f2 12 %") and the fewest of those whose
 * leaving the detail set would have held the window ("; without f1, f2 in
 * the detail setHELD it would have held"). Nothing when w lists none. */
void rd_window_fillers(FILE *f, const json_t *w, const char *lead, const char *held);

/* Progress on stderr for long commands: shown only when stderr is a
 * terminal and the work has taken more than a second; silent otherwise. */
struct rd_progress {
	uint64_t total, done, next_check;
	double t_start;
	bool tty, shown;
	const char *what;
};
void rd_progress_init(struct rd_progress *pg, const char *what, uint64_t total);
void rd_progress_add(struct rd_progress *pg, uint64_t n);
void rd_progress_end(struct rd_progress *pg);

#endif
