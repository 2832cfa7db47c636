/*
 * Test library for t_dlopen: loaded with dlopen() after the program
 * started, so its functions must be hooked before they first run — its
 * constructor already calls traced code inside dlopen(). It counts
 * its own calls (static counters, so a dlclose + dlopen starts again from
 * zero) and hands them to the program through dlib_counts().
 */
#define DLIB_NFUNCS 7

static const char *const dlib_names[DLIB_NFUNCS] = {
    "dlib_entry",  "dlib_mid",       "dlib_leaf", "dlib_callback_twice",
    "dlib_counts", "dlib_ctor_work", "dlib_init"};
static unsigned long dlib_calls[DLIB_NFUNCS];
static volatile unsigned long dlib_sink;

#define DLIB_FN __attribute__((noinline, used, visibility("default")))
#define DLIB_COUNT(i)                                                                              \
	do {                                                                                       \
		dlib_calls[(i)]++;                                                                 \
		__asm__ volatile("" ::: "memory");                                                 \
	} while (0)

__attribute__((noinline)) static unsigned long dlib_leaf(unsigned long x)
{
	DLIB_COUNT(2);
	dlib_sink = x;
	return x + 1;
}

__attribute__((noinline)) static unsigned long dlib_mid(unsigned long x)
{
	DLIB_COUNT(1);
	return dlib_leaf(x) * 2 + dlib_leaf(x + 1);
}

DLIB_FN unsigned long dlib_entry(unsigned long n)
{
	DLIB_COUNT(0);
	unsigned long acc = 0;
	for (unsigned long i = 0; i < n; i++)
		acc += dlib_mid(i);
	return acc;
}

/* Calls back into the program: traced code of two modules interleaved. */
DLIB_FN long dlib_callback_twice(long (*cb)(long), long v)
{
	DLIB_COUNT(3);
	long r = cb(v);
	return cb(r);
}

/* Names and counts of this load's calls, this call included. */
DLIB_FN int dlib_counts(const char *const **names, const unsigned long **calls)
{
	DLIB_COUNT(4);
	*names = dlib_names;
	*calls = dlib_calls;
	return DLIB_NFUNCS;
}

__attribute__((noinline)) static void dlib_ctor_work(int v)
{
	DLIB_COUNT(5);
	dlib_sink = (unsigned long)v;
}

/* Runs inside dlopen(), before the program can call anything of ours. */
__attribute__((constructor, noinline)) static void dlib_init(void)
{
	DLIB_COUNT(6);
	dlib_ctor_work(1);
	dlib_ctor_work(2);
}
