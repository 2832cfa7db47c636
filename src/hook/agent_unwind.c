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

static void *unwind_next(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
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
