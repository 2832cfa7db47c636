/*
 * Test target: C++ exceptions through traced frames. Mode (argv[1]):
 *   throw    catcher() -> a() -> b() -> c() throws; caught in catcher():
 *            a, b and c are unwound (an EXCEPTION each);
 *   rethrow  as throw, but b() catches and rethrows (`throw;`);
 *   dtor     every frame holds a Guard whose destructor calls dtor_note()
 *            while the exception passes, so traced calls happen in the
 *            middle of unwinding;
 *   local    c() throws and catches within itself: nothing is unwound;
 *   threads  four threads throw through a -> b -> c at the same time, each
 *            a different number of times (dtor guards armed);
 *   libthrow the exception starts inside libstdc++ (std::stoi on a word:
 *            std::invalid_argument), passes lib_thrower() and is caught in
 *            catcher_lib().
 * The counted functions have C names (extern "C") so the table and the trace
 * spell them alike. Single-threaded; prints what it caught.
 */
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tcount.h"

// clang-format off
#define FUNCS(X)                                                                                   \
	X(main)                                                                                    \
	X(catcher)                                                                                 \
	X(a) X(b) X(c) X(dtor_note) X(dtor_leaf) X(local_catch) X(after_catch) X(thrower)          \
	    X(lib_thrower) X(catcher_lib)
// clang-format on
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static volatile int sink;
static int mode_rethrow, mode_dtor;

extern "C" {
TC_FN void dtor_leaf(int v)
{
	TC_ENTER(FN_dtor_leaf);
	sink = v;
}

TC_FN void dtor_note(int v)
{
	TC_ENTER(FN_dtor_note);
	dtor_leaf(v + 1);
}
}

struct Guard {
	int v;
	bool armed;
	explicit Guard(int x, bool on) : v(x), armed(on)
	{
	}
	~Guard()
	{
		if (armed)
			dtor_note(v);
	}
};

extern "C" {
TC_FN void c(int x)
{
	TC_ENTER(FN_c);
	Guard g(3, mode_dtor);
	TC_UNWOUND(FN_c, 1);
	TC_UNWOUND(FN_b, 1);
	TC_UNWOUND(FN_a, 1);
	throw std::runtime_error(x % 2 ? "odd" : "even");
}

TC_FN void b(int x)
{
	TC_ENTER(FN_b);
	Guard g(2, mode_dtor);
	if (!mode_rethrow) {
		c(x + 1);
		sink = x;
		return;
	}
	try {
		c(x + 1);
	} catch (...) {
		sink = x;
		throw;
	}
	sink = x;
}

TC_FN void a(int x)
{
	TC_ENTER(FN_a);
	Guard g(1, mode_dtor);
	b(x + 1);
	sink = x;
}

TC_FN int after_catch(int v)
{
	TC_ENTER(FN_after_catch);
	return v + 100;
}

TC_FN int catcher(int x)
{
	TC_ENTER(FN_catcher);
	try {
		a(x);
	} catch (const std::runtime_error &e) {
		return after_catch((int)std::strlen(e.what()));
	}
	return -1;
}

TC_FN int local_catch(int x)
{
	TC_ENTER(FN_local_catch);
	try {
		if (x >= 0)
			throw x;
	} catch (int v) {
		return after_catch(v);
	}
	return -1;
}
}

extern "C" TC_FN int lib_thrower(const char *text)
{
	TC_ENTER(FN_lib_thrower);
	TC_UNWOUND(FN_lib_thrower, 1); /* callers pass a word: stoi always throws */
	return std::stoi(std::string(text));
}

extern "C" TC_FN int catcher_lib(const char *text)
{
	TC_ENTER(FN_catcher_lib);
	try {
		return lib_thrower(text);
	} catch (const std::invalid_argument &e) {
		return after_catch(-1);
	}
}

static const char *const labels[4] = {"t0", "t1", "t2", "t3"};
static int results[4];

extern "C" TC_FN void *thrower(void *arg)
{
	TC_ENTER(FN_thrower);
	long i = (long)arg;
	tc_thread_begin(labels[i]);
	for (long k = 0; k < (i + 1) * 7; k++)
		results[i] += catcher((int)k);
	return nullptr;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	const char *mode = argc > 1 ? argv[1] : "throw";

	tc_init(argc, argv, "cxx", fn_names, FN_COUNT);
	mode_rethrow = !std::strcmp(mode, "rethrow");
	mode_dtor = !std::strcmp(mode, "dtor");
	if (!std::strcmp(mode, "threads")) {
		pthread_t t[4];
		mode_dtor = 1;
		for (long i = 0; i < 4; i++)
			pthread_create(&t[i], nullptr, thrower, (void *)i);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], nullptr);
		std::printf("threads: %d %d %d %d\n", results[0], results[1], results[2],
		            results[3]);
		return 0;
	}
	if (!std::strcmp(mode, "libthrow")) {
		for (int i = 0; i < 5; i++)
			std::printf("libthrow %d: %d\n", i, catcher_lib("not-a-number"));
		return 0;
	}
	if (!std::strcmp(mode, "local")) {
		for (int i = 0; i < 5; i++)
			std::printf("local %d: %d\n", i, local_catch(i));
		return 0;
	}
	for (int i = 0; i < 5; i++)
		std::printf("%s %d: %d\n", mode, i, catcher(i));
	return 0;
}
