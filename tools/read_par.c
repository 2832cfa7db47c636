/*
 * The reading commands on several CPUs (read_par.h): the ordered pool and
 * the walk of a pid's threads in pieces.
 *
 * Pool protocol: one mutex guards the queue (submitted, not taken: head
 * to tail; next_run the first not started), every job's done, pending
 * and stop. A worker takes next_run under it, runs the job without it,
 * and sets done under it; the taker waits for done under it: so a job's
 * run happens before its take, and no job is touched by two threads at
 * once.
 * Threads: rd_par_* and rd_pwalk_pid() are called by one thread (the
 * command's); the pool's workers run only the jobs' run function.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "read_par.h"

struct rd_par {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct rd_par_job *head, *tail, *next_run;
	size_t pending;
	bool stop;
	rd_par_fn run;
	unsigned n;
	pthread_t th[];
};

unsigned rd_par_threads(void)
{
	static bool said;
	const char *s = getenv("ADA_READ_THREADS");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (s && *s) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);
		if (!*end && v >= 1 && v <= 64)
			return (unsigned)v;
		if (!said)
			ada_log("ADA_READ_THREADS=%s is not a number from 1 to 64: ignored", s);
		said = true;
	}
	return cpus < 1 ? 1 : cpus > (long)RD_PAR_MAX ? RD_PAR_MAX : (unsigned)cpus;
}

static void *par_worker(void *arg)
{
	struct rd_par *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->next_run && !p->stop)
			pthread_cond_wait(&p->work, &p->mu);
		if (!p->next_run)
			break; /* stopping, nothing left to start */
		struct rd_par_job *j = p->next_run;
		p->next_run = j->next;
		pthread_mutex_unlock(&p->mu);
		p->run(j);
		pthread_mutex_lock(&p->mu);
		j->done = true;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int rd_par_new(unsigned n, rd_par_fn run, struct rd_par **out)
{
	struct rd_par *p = calloc(1, sizeof(*p) + n * sizeof(pthread_t));
	int err = 0;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	p->run = run;
	for (; p->n < n; p->n++)
		if ((err = pthread_create(&p->th[p->n], NULL, par_worker, p)) != 0)
			break;
	if (err) {
		rd_par_free(p);
		return -err;
	}
	*out = p;
	return 0;
}

void rd_par_submit(struct rd_par *p, struct rd_par_job *job)
{
	job->next = NULL;
	job->done = false;
	pthread_mutex_lock(&p->mu);
	if (p->tail)
		p->tail->next = job;
	else
		p->head = job;
	p->tail = job;
	if (!p->next_run)
		p->next_run = job;
	p->pending++;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->mu);
}

struct rd_par_job *rd_par_take(struct rd_par *p)
{
	pthread_mutex_lock(&p->mu);
	struct rd_par_job *j = p->head;
	while (j && !j->done)
		pthread_cond_wait(&p->done, &p->mu);
	if (j) {
		p->head = j->next;
		p->tail = p->head ? p->tail : NULL;
		p->pending--;
	}
	pthread_mutex_unlock(&p->mu);
	return j;
}

size_t rd_par_pending(const struct rd_par *p)
{
	return p->pending; /* changed only by the caller's own submit and take */
}

void rd_par_free(struct rd_par *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->n; i++)
		pthread_join(p->th[i], NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* ------------------------------------------------------------ pwalk */

/* A thread being walked: owned by the cutter until its last job is
 * submitted, then by that job. */
struct pw_thread {
	struct rd_pwalk_thread th;
	int64_t dead_gen; /* a generation whose block did not decode: its rest dropped */
	bool begun;
};

struct pw_walk;
struct pw_job {
	struct rd_par_job pj; /* first: the pool's job is the piece */
	const struct pw_walk *pw;
	struct pw_thread *th;
	const struct ada_atf_index *ix;
	uint32_t gen;
	bool last; /* no events: the thread's end */
	uint64_t begin, end;
	/* The run's: */
	void *acc;
	struct ada_frames *w;
	uint64_t bad;
	int err;
};

struct pw_walk {
	struct rd_pid *rp;
	bool (*wants)(const void *f, uint32_t thread);
	const void *f;
	uint64_t from, to;
	struct ada_frames *w;
	const struct rd_pwalk_ops *ops;
	void *cmd;
	struct rd_par *par;
	/* The cutter: thread i next to open, cur being cut, its generation g
	 * and the range [seq, gend) of it still to cut. */
	size_t i;
	struct pw_thread *cur;
	size_t g;
	uint64_t seq, gend;
	uint64_t piece; /* events a piece */
	int err;
};

struct pw_feed {
	struct ada_frames *w;
	uint32_t gen;
};

static int pw_feed_run(void *ctx, const struct atf_index_event *ev, uint64_t seq, uint64_t n)
{
	struct pw_feed *fd = ctx;
	ada_frames_push_many(fd->w, ev, n, fd->gen, seq);
	return 0;
}

/* A worker: the piece walked alone. The walk's own errors are one
 * walk's (rd_thread_walk() goes on without them): only *bad is kept. */
static void pw_run(struct rd_par_job *pj)
{
	struct pw_job *j = (struct pw_job *)pj;

	j->bad = UINT64_MAX;
	if (j->last)
		return;
	j->acc = j->pw->ops->acc_new(j->pw->cmd, &j->th->th);
	if (!j->acc) {
		j->err = -ENOMEM;
		return;
	}
	j->err = ada_frames_new(&j->pw->ops->piece, j->acc, &j->w);
	if (j->err)
		return;
	ada_frames_part_begin(j->w);
	struct pw_feed fd = {j->w, j->gen};
	(void)ada_atf_index_walk_piece(j->ix, j->begin, j->end, pw_feed_run, &fd, &j->bad);
}

/* Generation g of the thread being cut: the range still to cut. */
static void pw_gen(struct pw_walk *pw)
{
	const struct ada_atf_thread *t = pw->cur->th.t;
	pw->seq = pw->gend = 0;
	if (pw->g < t->ngen && t->gen[pw->g].index)
		ada_atf_index_range(t->gen[pw->g].index, pw->from, pw->to, &pw->seq, &pw->gend);
}

/* RD_PWALK_PIECE, or ADA_READ_PIECE's. */
static uint64_t pw_piece(void)
{
	const char *s = getenv("ADA_READ_PIECE");
	char *end;
	unsigned long long v = s ? strtoull(s, &end, 10) : 0;

	return s && *s && !*end && v >= 1 && v <= (1u << 30) ? v : RD_PWALK_PIECE;
}

/* The next wanted thread with an index opened as cur; false when none
 * is left or an open failed (pw->err). */
static bool pw_open_next(struct pw_walk *pw)
{
	const struct ada_atf_pid *p = pw->rp->p;

	while (pw->i < p->nthreads) {
		size_t i = pw->i++;
		struct ada_atf_thread *t;
		if (!pw->wants(pw->f, p->thread_ids[i]))
			continue;
		pw->err = rd_thread_open(pw->rp, i, &t);
		if (pw->err)
			return false;
		if (!t)
			continue;
		pw->cur = calloc(1, sizeof(*pw->cur));
		if (!pw->cur) {
			rd_thread_close(pw->rp, t);
			pw->err = -ENOMEM;
			return false;
		}
		pw->cur->th = (struct rd_pwalk_thread){t, i, rd_thread_tid(pw->rp, t)};
		pw->cur->dead_gen = -1;
		pw->g = 0;
		pw_gen(pw);
		return true;
	}
	return false;
}

/* The next piece to walk, in order; NULL when none is left (or pw->err). */
static struct pw_job *pw_next(struct pw_walk *pw)
{
	if (!pw->cur && !pw_open_next(pw))
		return NULL;
	struct pw_job *j = calloc(1, sizeof(*j));
	if (!j) {
		pw->err = -ENOMEM;
		return NULL;
	}
	const struct ada_atf_thread *t = pw->cur->th.t;
	while (pw->g < t->ngen && pw->seq >= pw->gend) {
		pw->g++;
		pw_gen(pw);
	}
	j->pw = pw;
	j->th = pw->cur;
	if (pw->g == t->ngen) { /* the thread's end: it goes with this job */
		j->last = true;
		pw->cur = NULL;
		return j;
	}
	j->ix = t->gen[pw->g].index;
	j->gen = (uint32_t)pw->g;
	j->begin = pw->seq;
	j->end = ada_atf_index_piece_end(j->ix, pw->seq, pw->piece);
	j->end = j->end < pw->gend ? j->end : pw->gend;
	pw->seq = j->end;
	return j;
}

/* Piece j after the ones before it: stitched and its accumulator added,
 * or walked again on the whole walker. */
static int pw_stitch(struct pw_walk *pw, struct pw_job *j)
{
	uint64_t bad = j->bad;
	int err = ada_frames_stitch(pw->w, j->w);

	if (err == -EAGAIN) {
		struct pw_feed fd = {pw->w, j->gen};
		(void)ada_atf_index_walk_piece(j->ix, j->begin, j->end, pw_feed_run, &fd, &bad);
		err = 0;
	} else if (!err) {
		err = pw->ops->acc_merge(pw->cmd, j->acc);
	}
	if (bad != UINT64_MAX) { /* one walk ends the generation's events here */
		ada_atf_index_note_bad(j->ix, bad);
		j->th->dead_gen = j->gen;
	}
	return err;
}

/* A job taken back, in order: its thread begun, the piece stitched, or
 * the thread ended and closed. After an error (err) only the closing. */
static int pw_take(struct pw_walk *pw, struct pw_job *j, int err)
{
	struct pw_thread *th = j->th;

	if (!err && !th->begun) {
		th->begun = true;
		pw->ops->thread_begin(pw->cmd, &th->th);
	}
	if (j->last) {
		if (!err) {
			ada_frames_finish(pw->w);
			pw->ops->thread_end(pw->cmd, &th->th);
		}
		rd_thread_close(pw->rp, th->th.t);
		free(th);
	} else if (!err) {
		err = j->err;
		if (!err && th->dead_gen != (int64_t)j->gen)
			err = pw_stitch(pw, j);
	}
	pw->ops->acc_free(j->acc);
	ada_frames_free(j->w);
	free(j);
	return err;
}

int rd_pwalk_pid(struct rd_pid *rp, bool (*wants)(const void *f, uint32_t thread), const void *f,
                 uint64_t from, uint64_t to, struct ada_frames *w, const struct rd_pwalk_ops *ops,
                 void *cmd, unsigned nthreads)
{
	struct pw_walk pw = {.rp = rp,
	                     .wants = wants,
	                     .f = f,
	                     .from = from,
	                     .to = to,
	                     .w = w,
	                     .ops = ops,
	                     .cmd = cmd,
	                     .piece = pw_piece()};
	int err = rd_par_new(nthreads, pw_run, &pw.par);
	struct rd_par_job *pj;

	if (err)
		return 1; /* no threads to be had: the caller walks on its own */
	for (;;) {
		struct pw_job *j;
		while (!err && !pw.err && rd_par_pending(pw.par) < 3 * (size_t)nthreads &&
		       (j = pw_next(&pw)))
			rd_par_submit(pw.par, &j->pj);
		if (!(pj = rd_par_take(pw.par)))
			break;
		err = pw_take(&pw, (struct pw_job *)pj, err);
	}
	if (pw.cur) { /* cut short by an error: its jobs are all taken */
		rd_thread_close(rp, pw.cur->th.t);
		free(pw.cur);
	}
	rd_par_free(pw.par);
	return err ? err : pw.err;
}
