/*
 * One filter grammar for every reading command (dump, report, export
 * chrome, flame, graph): which processes (--pid), which threads
 * (--thread N: thread_N), which time range (--from/--to: nanoseconds or an
 * offset from the recording's start; --window N: a trigger window's range),
 * which calls (--function GLOB: each call of a matching function with
 * everything under it) and how deep (--depth N: levels below the matched
 * call, else from the thread's first level). A command takes the options
 * its output has a meaning for; each means the same in all of them.
 *
 * The filters only choose events: a reader's frame walker sees a call of a
 * kept subtree with its own return, so durations are the recorded ones. A
 * --depth cut leaves the calls below it out: their time stays in their
 * caller's self time.
 */
#ifndef ADA_TOOLS_FILTER_H
#define ADA_TOOLS_FILTER_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "read.h"

struct rd_filter {
	bool have_thread, have_pid, have_window;
	uint32_t thread, pid;
	uint32_t depth; /* 0: no limit */
	uint64_t window;
	const char *from_s, *to_s; /* resolved per pid: "+1.5s" counts from its start */
	const char *glob;          /* --function */
};

/* getopt_long codes of the filter options, clear of any short option. */
enum {
	RD_OPT_THREAD = 0x1000,
	RD_OPT_PID,
	RD_OPT_FROM,
	RD_OPT_TO,
	RD_OPT_WINDOW,
	RD_OPT_FUNCTION,
	RD_OPT_DEPTH,
};

/* The option table entries, for a command's struct option array. */
#define RD_FILTER_OPT_SELECT                                                                       \
	{"thread", required_argument, NULL, RD_OPT_THREAD},                                        \
	    {"pid", required_argument, NULL, RD_OPT_PID},                                          \
	    {"from", required_argument, NULL, RD_OPT_FROM},                                        \
	    {"to", required_argument, NULL, RD_OPT_TO},                                            \
	{                                                                                          \
		"window", required_argument, NULL, RD_OPT_WINDOW                                   \
	}
#define RD_FILTER_OPT_CALLS                                                                        \
	{"function", required_argument, NULL, RD_OPT_FUNCTION},                                    \
	{                                                                                          \
		"depth", required_argument, NULL, RD_OPT_DEPTH                                     \
	}

/* c as getopt_long returned it, with its optarg: 0 when it was a filter
 * option and taken, 1 when it is not one, 2 for a bad value (said). */
int rd_filter_opt(struct rd_filter *f, int c, const char *arg);
/* After parsing: 0, or 2 after one sentence when the options contradict
 * each other (--from after --to). */
int rd_filter_check(const struct rd_filter *f);
/* The --help lines of the filter options (calls: --function and --depth
 * too). */
void rd_filter_usage(FILE *out, bool calls);

bool rd_filter_wants_pid(const struct rd_filter *f, uint32_t pid);
/* Before reading: 0, or 1 after one sentence when --pid names no pid_N of
 * the tree under dir. */
int rd_filter_check_pid(const struct rd_filter *f, const struct ada_atf_tree *tree,
                        const char *dir);
/* The tree under dir, checked against --pid: NULL after one sentence with
 * *rc set to the exit status (2 unreadable, 1 no such pid). */
struct ada_atf_tree *rd_filter_open_tree(const struct rd_filter *f, const char *dir, int *rc);
/* thread: N of thread_N. */
bool rd_filter_wants_thread(const struct rd_filter *f, uint32_t thread);

/* The time range the filter keeps in rp's recording (--from/--to
 * resolved from its start, intersected with --window's range): 0, or
 * -EINVAL after one sentence saying what is wrong. */
int rd_filter_range(const struct rd_filter *f, const struct rd_pid *rp, uint64_t *from,
                    uint64_t *to);

/* Per thread: where --function stands. Zero-initialized before the
 * thread's first event. */
struct rd_filter_calls {
	bool inside;   /* within a call of a --function match */
	uint32_t base; /* the depth of that call */
};

/* Whether ev passes --function and --depth, updating st; *depth is its
 * depth below the matched call (1: the match), or as recorded without
 * --function; 64 for a signal marker, which always passes. */
bool rd_filter_event(const struct rd_filter *f, struct ada_names *names, struct rd_filter_calls *st,
                     const struct atf_index_event *ev, uint32_t *depth);

/* rd_thread_walk() through the filter: the events of [from, to], and with
 * --function or --depth only those rd_filter_event() keeps. Returns the
 * events fed. */
uint64_t rd_filter_walk(const struct rd_filter *f, struct ada_names *names,
                        const struct ada_atf_thread *t, struct ada_frames *w, uint64_t from,
                        uint64_t to, bool finish);

#endif
