/*
 * ada inject: the recorder side of attaching to a running process
 * (issue 10): stop every thread with ptrace, run a function call in the
 * target on one stopped thread, resume every thread exactly as it was.
 *
 * Protocol with the target (x86_64):
 *   1. ada_inject_stop(): PTRACE_SEIZE + PTRACE_INTERRUPT every thread of
 *      /proc/PID/task, again and again until a listing finds no thread
 *      that is not stopped (a thread created meanwhile is caught by the
 *      next listing: once all are stopped, none can be created; one that
 *      exited but is still listed is passed over). Each
 *      thread's registers are read once stopped (ada_inject_thread_pc()).
 *   2. ada_inject_call(): on the first thread stopped by the interrupt
 *      (not in a signal-delivery stop), saves every register (general,
 *      the whole xsave area) and the signal mask, writes the call's data
 *      below the red zone (128 bytes under rsp), sets rsp 16-aligned at
 *      the call with a return address of 0, blocks every signal but
 *      SIGSEGV, sets orig_rax to -1 (a thread stopped inside a system
 *      call must not have it restarted into the called function), and
 *      continues the thread. The function's return faults at address 0:
 *      the SIGSEGV stops the thread before any handler runs (ptrace sees
 *      a signal before delivery); rax is the result; the saved registers,
 *      xsave area and mask are written back, so a system call the thread
 *      was in is restarted (or fails with EINTR) exactly as it would have
 *      been without us, and the SIGSEGV is discarded at resume.
 *   3. ada_inject_resume(): PTRACE_DETACH every thread, passing on the
 *      signal of any thread that was stopped for one; the pause is the
 *      time from the first seize to the last detach.
 *
 * Not hook context; one thread of the recorder drives one ada_inject.
 * Errors are 0 / -errno with a sentence in why (nothing here prints).
 */
#ifndef ADA_INJECT_H
#define ADA_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ada_inject;

/* Stops every thread of pid. -ESRCH (no such process), -EPERM (not
 * allowed, or another tracer holds it), -errno; why says which. On
 * failure every thread already stopped is resumed: the target is left as
 * it was. */
int ada_inject_stop(pid_t pid, struct ada_inject **out, char *why, size_t cap);
/* Threads stopped, and the instruction pointer of thread i as it was
 * when stopped (x86_64: for a thread inside a system call, the address
 * after the syscall instruction, which the kernel rewinds to it when the
 * thread resumes; *in_syscall tells. arm64: the kernel has made that
 * rewind before the stop, so *in_syscall is always false). */
size_t ada_inject_threads(const struct ada_inject *in);
uint64_t ada_inject_thread_pc(const struct ada_inject *in, size_t i, bool *in_syscall);
/* Thread i's id, and its thread pointer (x86_64: fs_base; arm64: tpidr_el0). */
pid_t ada_inject_thread_tid(const struct ada_inject *in, size_t i);
uint64_t ada_inject_thread_tls(const struct ada_inject *in, size_t i);
/* Makes the calls on thread i instead of the first thread stopped by the
 * interrupt. -EINVAL when i is out of range, exited, or held in a
 * signal-delivery stop (its signal must reach it untouched). */
int ada_inject_use_thread(struct ada_inject *in, size_t i);

/* Finds the address of the dynamic symbol name in the target's mapped
 * library whose file name starts with lib (e.g. "libc.so.6"). 0 or
 * -ENOENT (library not mapped, or no such symbol) / -errno. */
int ada_inject_symbol(pid_t pid, const char *lib, const char *name, uint64_t *addr);
/* The address dlopen has in the target: libc's dlopen (glibc >= 2.34),
 * libdl's, or libc's __libc_dlopen_mode. */
int ada_inject_dlopen_addr(pid_t pid, uint64_t *addr, char *why, size_t cap);

/* Calls fn(args[0..nargs)) (nargs <= 6, integer/pointer arguments) in
 * the target. data (len bytes) is copied below the red zone first and
 * *data_addr (may be NULL) says where: arguments that point into it are
 * built by the caller in two steps (ada_inject_scratch_addr()). 0 and
 * *ret = rax, or -errno (the target's registers are restored whenever the
 * call could be started). */
int ada_inject_call(struct ada_inject *in, uint64_t fn, const uint64_t *args, int nargs,
                    const void *data, size_t len, uint64_t *ret, char *why, size_t cap);
/* A time limit for the calls that follow (0, the default: none). A call
 * still running at its limit is abandoned where it waits: the thread is
 * interrupted and its registers, xsave area and mask restored as after
 * any call, and ada_inject_call() returns -ETIMEDOUT. Only for a call
 * that can be abandoned without harm: dlopen waiting for a lock a
 * stopped thread holds has taken nothing yet (docs/attach.md). */
void ada_inject_set_call_timeout(struct ada_inject *in, uint64_t ns);
/* Where ada_inject_call() will put len bytes of data (the same on every
 * call of one ada_inject). */
uint64_t ada_inject_scratch_addr(const struct ada_inject *in, size_t len);

/* Sets thread i's instruction pointer (ada attach moves a thread out of
 * bytes the agent patched); it resumes there. 0, -EINVAL (i out of range
 * or exited), -errno. */
int ada_inject_thread_set_pc(struct ada_inject *in, size_t i, uint64_t pc);
/* Reads len bytes of the target's memory at addr (e.g. what an injected
 * call wrote into its data). 0 or -errno (-EIO: short read). */
int ada_inject_peek(const struct ada_inject *in, uint64_t addr, void *buf, size_t len);

/* Resumes and detaches every thread; returns the pause in ns (first
 * seize to last detach) and frees in. NULL is a no-op (0). */
uint64_t ada_inject_resume(struct ada_inject *in);

#endif
