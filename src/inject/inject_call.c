/*
 * A function call in a stopped target (inject.h, step 2) and finding the
 * function: a library's dynamic symbols (libelf) plus its load address
 * from /proc/PID/maps.
 *
 * Threads: the thread that stopped the target (ptrace binds tracees to it).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "inject_internal.h"

#define INJECT_MAX_DETOURS 64

static void call_why(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;
	if (!why || !cap)
		return;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
}

/* ---- finding a symbol ---- */

/* The load bias of the library mapped from path whose first mapping
 * starts at start: start minus its lowest PT_LOAD page. */
static int sym_lookup_file(const char *path, uint64_t start, const char *name, uint64_t *addr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = -ENOENT;
	Elf *e = elf_version(EV_CURRENT) != EV_NONE ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	size_t nph = 0;
	uint64_t lo = UINT64_MAX;
	if (e && elf_getphdrnum(e, &nph) == 0)
		for (size_t i = 0; i < nph && i < 256; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < lo)
				lo = ph.p_vaddr & ~0xfffull;
		}
	Elf_Scn *scn = NULL;
	while (e && lo != UINT64_MAX && rc == -ENOENT && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			const char *nm;
			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !(nm = elf_strptr(e, sh.sh_link, s.st_name)) || strcmp(nm, name))
				continue;
			*addr = start - lo + s.st_value;
			rc = 0;
			break;
		}
	}
	elf_end(e);
	close(fd);
	return rc;
}

int ada_inject_symbol(pid_t pid, const char *lib, const char *name, uint64_t *addr)
{
	char path[64], line[4096 + 256];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int rc = -ENOENT;
	size_t ll = strlen(lib);
	for (unsigned i = 0; rc == -ENOENT && i < 1000000 && fgets(line, sizeof(line), f); i++) {
		unsigned long long start, off;
		int pos = 0;
		if (sscanf(line, "%llx-%*x %*s %llx %*s %*u %n", &start, &off, &pos) < 2 || !pos ||
		    off != 0)
			continue;
		char *file = line + pos;
		file[strcspn(file, "\n")] = '\0';
		const char *base = strrchr(file, '/');
		if (file[0] != '/' || !base || strncmp(base + 1, lib, ll))
			continue;
		rc = sym_lookup_file(file, start, name, addr);
	}
	fclose(f);
	return rc;
}

int ada_inject_dlopen_addr(pid_t pid, uint64_t *addr, char *why, size_t cap)
{
	if (ada_inject_symbol(pid, "libc.so.6", "dlopen", addr) == 0 ||
	    ada_inject_symbol(pid, "libdl.so.2", "dlopen", addr) == 0 ||
	    ada_inject_symbol(pid, "libc.so.6", "__libc_dlopen_mode", addr) == 0)
		return 0;
	call_why(why, cap,
	         "pid %d has no dlopen: no GNU C library is mapped in it (a static program, or "
	         "another C library)",
	         (int)pid);
	return -ENOENT;
}

/* ---- the call ---- */

struct call_saved {
	struct inject_regs regs;
	uint8_t xstate[INJECT_ARCH_XSTATE_MAX];
	size_t xlen;
	uint64_t mask;
};

static int call_save(pid_t tid, struct call_saved *s)
{
	struct iovec io = {s->xstate, sizeof(s->xstate)};
	int rc = inject_arch_get_regs(tid, &s->regs);
	if (rc)
		return rc;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)INJECT_ARCH_XSTATE_NOTE, &io) < 0 ||
	    ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(s->mask), &s->mask) < 0)
		return -errno;
	s->xlen = io.iov_len;
	return 0;
}

static int call_restore(pid_t tid, struct call_saved *s)
{
	struct iovec io = {s->xstate, s->xlen};
	int rc = 0;
	if (ptrace(PTRACE_SETREGSET, tid, (void *)INJECT_ARCH_XSTATE_NOTE, &io) < 0)
		rc = -errno;
	if (ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(s->mask), &s->mask) < 0 && !rc)
		rc = -errno;
	int rr = inject_arch_set_regs(tid, &s->regs);
	return rc ? rc : rr;
}

uint64_t ada_inject_scratch_addr(const struct ada_inject *in, size_t len)
{
	const struct inject_regs *r = inject_call_regs(in);
	if (!r)
		return 0;
	return (inject_arch_sp(r) - INJECT_ARCH_RED_ZONE - len) & ~15ull;
}

/* Sets up the call frame: data, then (x86_64) a return address of 0
 * with rsp 16-aligned at the call (rsp + 8 aligned at the function's
 * entry); on arm64 the return address 0 is in the link register and sp
 * stays 16-aligned. */
static int call_frame(struct ada_inject *in, struct inject_regs *r, uint64_t fn,
                      const uint64_t *args, int nargs, const void *data, size_t len)
{
	uint64_t sp = (inject_arch_sp(r) - INJECT_ARCH_RED_ZONE - len) & ~15ull, zero = 0;
	if (len && pwrite(inject_mem_fd(in), data, len, (off_t)sp) != (ssize_t)len)
		return -EIO;
	if (INJECT_ARCH_RET_ON_STACK) {
		sp -= 8; /* the return address; sp + 8 is 16-aligned */
		if (pwrite(inject_mem_fd(in), &zero, sizeof(zero), (off_t)sp) != sizeof(zero))
			return -EIO;
	}
	inject_arch_call_setup(r, fn, sp, args, nargs);
	return 0;
}

static uint64_t call_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* waitpid(tid) until deadline (0: none): 0 and *st, -ETIMEDOUT, -errno.
 * The tracer learns of a stop only through waitpid (a SIGCHLD could go
 * to any of ada's threads), so the wait polls, backing off from 50 us to
 * 1 ms: a call lasts milliseconds, and this adds at most one sleep to
 * the pause. Meanwhile the other threads' exits are collected (a process
 * killed during the call would otherwise never report its leader's). */
static int call_wait(struct ada_inject *in, pid_t tid, int *st, uint64_t deadline)
{
	long nap = 50000;
	for (;;) {
		pid_t r = waitpid(tid, st, __WALL | WNOHANG);
		if (r == tid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r == 0 && deadline && call_now() >= deadline)
			return -ETIMEDOUT;
		if (r == 0) {
			inject_reap_exits(in, tid);
			struct timespec ts = {0, nap};
			nanosleep(&ts, NULL);
			nap = nap < 1000000 ? nap * 2 : 1000000;
		}
	}
}

/* One stop of the thread during the call: 1 (not the end: go on), 0 (fn
 * returned to 0: *ret), or -errno. */
static int call_stopped(pid_t tid, int st, uint64_t *ret, char *why, size_t cap)
{
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		call_why(why, cap, "the target exited during the injected call");
		return -ESRCH;
	}
	if (!WIFSTOPPED(st) || (st >> 16) != 0 || WSTOPSIG(st) != SIGSEGV)
		return 1; /* an event or group stop: go on */
	struct inject_regs r;
	int rc = inject_arch_get_regs(tid, &r);
	if (rc)
		return rc;
	if (inject_arch_pc(&r) == 0) {
		*ret = inject_arch_retval(&r);
		return 0;
	}
	call_why(why, cap, "the injected call faulted at 0x%llx",
	         (unsigned long long)inject_arch_pc(&r));
	return -EFAULT;
}

/* The call is over its time: the thread is interrupted where it waits
 * (its registers are restored by the caller, as after any call). 0 and
 * *ret when the call returned meanwhile, -ETIMEDOUT once it is held,
 * -ESRCH when it cannot even be stopped (then nothing can be restored). */
static int call_abandon(struct ada_inject *in, pid_t tid, uint64_t timeout_ns, uint64_t *ret,
                        char *why, size_t cap)
{
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
		return -ESRCH;
	for (int detour = 0; detour < INJECT_MAX_DETOURS; detour++) {
		int st, rc = call_wait(in, tid, &st, call_now() + timeout_ns);
		if (rc < 0) {
			call_why(why, cap,
			         "the injected call did not return and its thread %d "
			         "cannot be stopped",
			         (int)tid);
			return -ESRCH;
		}
		if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP)
			return -ETIMEDOUT;
		rc = call_stopped(tid, st, ret, why, cap);
		if (rc <= 0)
			return rc;
		if (ptrace(PTRACE_CONT, tid, 0, 0) < 0)
			return -ESRCH;
	}
	return -ESRCH;
}

/* Runs the thread until fn returns to 0, for at most timeout_ns (0: no
 * limit). 0 and *ret, or -errno (-ETIMEDOUT: abandoned, thread held). */
static int call_run(struct ada_inject *in, pid_t tid, uint64_t timeout_ns, uint64_t *ret, char *why,
                    size_t cap)
{
	uint64_t deadline = timeout_ns ? call_now() + timeout_ns : 0;
	for (int detour = 0; detour < INJECT_MAX_DETOURS; detour++) {
		if (ptrace(PTRACE_CONT, tid, 0, 0) < 0)
			return -errno;
		int st, rc = call_wait(in, tid, &st, deadline);
		if (rc == -ETIMEDOUT) {
			rc = call_abandon(in, tid, timeout_ns, ret, why, cap);
			if (rc == -ETIMEDOUT)
				call_why(
				    why, cap,
				    "the injected call did not return within %.1f s (a stopped "
				    "thread may hold a lock it needs)",
				    (double)timeout_ns / 1e9);
			return rc;
		}
		if (rc < 0) {
			call_why(why, cap, "the target exited during the injected call");
			return -ESRCH;
		}
		rc = call_stopped(tid, st, ret, why, cap);
		if (rc <= 0)
			return rc;
	}
	call_why(why, cap, "the injected call did not return");
	return -ETIMEDOUT;
}

int ada_inject_call(struct ada_inject *in, uint64_t fn, const uint64_t *args, int nargs,
                    const void *data, size_t len, uint64_t *ret, char *why, size_t cap)
{
	pid_t tid = inject_call_tid(in);
	if (nargs < 0 || nargs > INJECT_ARCH_MAX_ARGS || len > 65536)
		return -EINVAL;
	if (tid <= 0) {
		call_why(why, cap, "no thread of the target is stopped where a call can be made");
		return -EAGAIN;
	}
	struct call_saved *s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	int rc = call_save(tid, s);
	if (rc) {
		call_why(why, cap, "cannot read the registers of thread %d: %s", (int)tid,
		         strerror(-rc));
		free(s);
		return rc;
	}
	struct inject_regs g = s->regs;
	/* Every signal blocked but SIGSEGV, which ends the call: a blocked
	 * SIGSEGV would be forced through with its handler reset. */
	uint64_t mask = ~0ull & ~(1ull << (SIGSEGV - 1));
	rc = call_frame(in, &g, fn, args, nargs, data, len);
	if (!rc)
		rc = inject_arch_set_regs(tid, &g);
	if (!rc && ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask) < 0)
		rc = -errno;
	if (!rc)
		rc = call_run(in, tid, inject_call_timeout(in), ret, why, cap);
	else
		call_why(why, cap, "cannot set up the call in thread %d: %s", (int)tid,
		         strerror(-rc));
	if (rc != -ESRCH) {
		int rr = call_restore(tid, s);
		if (rr && !rc) {
			rc = rr;
			call_why(why, cap, "cannot restore thread %d: %s", (int)tid, strerror(-rr));
		}
	}
	free(s);
	return rc;
}
