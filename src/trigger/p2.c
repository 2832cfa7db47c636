/*
 * The running p99 of one function: the P-square estimator (Jain and
 * Chlamtac, CACM 1985). Five markers track the minimum, p/2, p, (1+p)/2
 * and the maximum; each sample moves marker positions and adjusts heights
 * by a piecewise-parabolic step. Why P-square: 5 doubles of state per
 * function whatever the number of calls (a glob such as '*' can match tens
 * of thousands of functions: a log-bucketed histogram of even 1 KiB each
 * would cost tens of MB), O(1) per sample with no allocation, and for the
 * tail of a latency distribution its error is a few percent once a few
 * hundred samples are in, which is what an outlier test needs (we wait for
 * ADA_TRIGGER_P99_MIN_CALLS calls before trusting it).
 *
 * Threads: the drain only (each estimator belongs to one process's table).
 */
#include "trigger_internal.h"

#define P2_P 0.99

void ada_trigger_p2_init(struct ada_trigger_p2 *p)
{
	*p = (struct ada_trigger_p2){0};
}

static void p2_sort5(double *q)
{
	for (int i = 1; i < 5; i++)
		for (int j = i; j > 0 && q[j - 1] > q[j]; j--) {
			double t = q[j];
			q[j] = q[j - 1];
			q[j - 1] = t;
		}
}

static void p2_start(struct ada_trigger_p2 *p)
{
	p2_sort5(p->q);
	for (int i = 0; i < 5; i++)
		p->n[i] = i + 1;
	p->np[0] = 1;
	p->np[1] = 1 + 2 * P2_P;
	p->np[2] = 1 + 4 * P2_P;
	p->np[3] = 3 + 2 * P2_P;
	p->np[4] = 5;
}

static double p2_parabolic(const struct ada_trigger_p2 *p, int i, double s)
{
	const double *q = p->q, *n = p->n;
	return q[i] + s / (n[i + 1] - n[i - 1]) *
	                  ((n[i] - n[i - 1] + s) * (q[i + 1] - q[i]) / (n[i + 1] - n[i]) +
	                   (n[i + 1] - n[i] - s) * (q[i] - q[i - 1]) / (n[i] - n[i - 1]));
}

static void p2_adjust(struct ada_trigger_p2 *p, int i)
{
	double d = p->np[i] - p->n[i];
	if (!((d >= 1 && p->n[i + 1] - p->n[i] > 1) || (d <= -1 && p->n[i - 1] - p->n[i] < -1)))
		return;
	double s = d >= 1 ? 1.0 : -1.0;
	int j = d >= 1 ? i + 1 : i - 1;
	double qp = p2_parabolic(p, i, s);
	if (p->q[i - 1] < qp && qp < p->q[i + 1])
		p->q[i] = qp;
	else /* the parabola overshoots a neighbour: linear step instead */
		p->q[i] += s * (p->q[j] - p->q[i]) / (p->n[j] - p->n[i]);
	p->n[i] += s;
}

void ada_trigger_p2_add(struct ada_trigger_p2 *p, double x)
{
	if (p->count < 5) {
		p->q[p->count++] = x;
		if (p->count == 5)
			p2_start(p);
		return;
	}
	p->count++;
	int k;
	if (x < p->q[0]) {
		p->q[0] = x;
		k = 0;
	} else if (x >= p->q[4]) {
		p->q[4] = x;
		k = 3;
	} else {
		for (k = 0; k < 3 && x >= p->q[k + 1]; k++)
			;
	}
	for (int i = k + 1; i < 5; i++)
		p->n[i] += 1;
	static const double dn[5] = {0, P2_P / 2, P2_P, (1 + P2_P) / 2, 1};
	for (int i = 0; i < 5; i++)
		p->np[i] += dn[i];
	for (int i = 1; i <= 3; i++)
		p2_adjust(p, i);
}

double ada_trigger_p2_value(const struct ada_trigger_p2 *p)
{
	if (p->count == 0)
		return 0;
	if (p->count >= 5)
		return p->q[2];
	double q[5] = {0};
	for (uint64_t i = 0; i < p->count; i++)
		q[i] = p->q[i];
	p2_sort5(q); /* zeros of unused markers sort first: take from the top */
	return q[4]; /* below 5 samples the 99th percentile is the maximum */
}
