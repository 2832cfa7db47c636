/*
 * The unwinder's entry points, interposed (not hook context).
 *
 * An unwinder that walks the stack reads every frame's return address; if
 * one of them is the return trampoline it finds no unwind info and the
 * program terminates instead of catching. So before any walk starts the
 * thread's replaced return addresses are put back (shadow stack ->
 * stack), and when a handler is entered the survivors get the trampoline
 * again (handlers.c, AGENT_SP_*). The same actions run from the inline
 * hooks when these functions could be patched; here they also run when the
 * patcher had to skip them (glibc's libgcc_s _Unwind_RaiseException ends
 * in an indirect jump: ADA_SKIP_JUMP_TABLE), because the preloaded agent's
 * definitions come first in the symbol lookup of every caller that goes
 * through a PLT: libstdc++'s __cxa_throw/__cxa_rethrow, and the landing
 * pads' _Unwind_Resume in the program. Running an action twice (wrapper
 * and inline hook) is harmless: both are idempotent.
 *
 * Not covered: callers that resolved the real function by dlsym (glibc's
 * pthread_cancel path); pthread_exit itself is a special function.
 *
 * Threads: any thread that throws; each touches its own shadow stack.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unwind.h>

#include "agent_internal.h"

#define UNWIND_EXPORT __attribute__((visibility("default")))

/* The slot our own return address lives in: the wrapper's caller's frame
 * begins just above it. Needs the frame pointer (-fno-omit-frame-pointer
 * is on for the whole project). */
#define UNWIND_RET_SLOT() ((uint64_t *)__builtin_frame_address(0) + 1)

/* Where the real one is when the global scope has none: a C program
 * (python) that dlopen'ed a C++ extension (greenlet) has libgcc_s and
 * libstdc++ only in that extension's local scope, yet the extension's
 * calls bind to the preloaded agent first. The library is loaded (the
 * caller needs it): RTLD_NOLOAD finds it without loading anything. */
static void *unwind_local(const char *name)
{
	static const char *const libs[] = {"libgcc_s.so.1", "libstdc++.so.6"};
	void *p = NULL;
	agent_guard_enter(); /* the agent's own dlopen: not the program's call */
	for (size_t i = 0; !p && i < sizeof(libs) / sizeof(libs[0]); i++) {
		void *h = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
		if (h) {
			p = dlsym(h, name);
			dlclose(h); /* drops the reference NOLOAD took; it stays loaded */
		}
	}
	agent_guard_leave();
	return p;
}

static void *unwind_next(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p)
		p = unwind_local(name);
	if (!p) {
		agent_log("%s not found behind the agent; aborting", name);
		abort();
	}
	return p;
}

UNWIND_EXPORT _Unwind_Reason_Code _Unwind_RaiseException(struct _Unwind_Exception *e)
{
	static _Unwind_Reason_Code (*real)(struct _Unwind_Exception *);
	if (!real)
		real = unwind_next("_Unwind_RaiseException");
	agent_special_run(AGENT_SP_UNWIND, UNWIND_RET_SLOT());
	_Unwind_Reason_Code r = real(e);
	/* No handler: __cxa_throw calls std::terminate next. */
	return r;
}

UNWIND_EXPORT _Unwind_Reason_Code _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *e)
{
	static _Unwind_Reason_Code (*real)(struct _Unwind_Exception *);
	if (!real)
		real = unwind_next("_Unwind_Resume_or_Rethrow");
	agent_special_run(AGENT_SP_UNWIND, UNWIND_RET_SLOT());
	return real(e);
}

UNWIND_EXPORT void _Unwind_Resume(struct _Unwind_Exception *e)
{
	static void (*real)(struct _Unwind_Exception *);
	if (!real)
		real = unwind_next("_Unwind_Resume");
	agent_special_run(AGENT_SP_UNWIND, UNWIND_RET_SLOT());
	real(e);
	abort(); /* _Unwind_Resume does not return */
}

UNWIND_EXPORT _Unwind_Reason_Code _Unwind_ForcedUnwind(struct _Unwind_Exception *e,
                                                       _Unwind_Stop_Fn stop, void *arg)
{
	static _Unwind_Reason_Code (*real)(struct _Unwind_Exception *, _Unwind_Stop_Fn, void *);
	if (!real)
		real = unwind_next("_Unwind_ForcedUnwind");
	agent_special_run(AGENT_SP_FORCED, UNWIND_RET_SLOT());
	return real(e, stop, arg);
}

UNWIND_EXPORT void *__cxa_begin_catch(void *e)
{
	static void *(*real)(void *);
	if (!real)
		real = unwind_next("__cxa_begin_catch");
	agent_special_run(AGENT_SP_CATCH, UNWIND_RET_SLOT());
	return real(e);
}
