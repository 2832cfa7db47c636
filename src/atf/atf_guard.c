/*
 * Guarded file mappings: a reader survives a file that shrinks under it.
 *
 * Every file the readers map (index and detail files, .syms files and
 * bodies, the export's input) may be truncated while it is read: by a
 * target still running, by whoever owns the session, by the recorder's
 * own final truncation of a live session's files. An access to a page
 * past the file's new end raises SIGBUS, which would kill the reader.
 * Pointers into the mappings leave this library (ada_atf_index_get(),
 * the walks' runs), so no jump back to a guard could unwind the callers'
 * half-done work; instead the handler puts anonymous zero pages over the
 * mapping from the faulting page to its end and returns: the access is
 * made again and reads zeros, which the readers already meet as damage
 * (a compact block that does not decode, an event of no kind), and the
 * mapping's slot says it shrank, for the reader to say in one sentence.
 *
 * Registry: one 64-bit word a mapping (its first page and its length in
 * 4 KiB units, 0: free), claimed with a CAS and cleared before the
 * munmap, so the handler, which may run on any thread at any time, reads
 * each mapping's range whole with one load: no lock, no torn range.
 * A fault outside every guarded range goes to the handler that was
 * there before (the recorder's WAL_GUARDED one in `ada recover`), else
 * takes SIGBUS's default action.
 *
 * Threads: any; the handler is async-signal-safe (atomics and one raw
 * mmap), errno kept.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "atf_internal.h"

#define GUARD_SLOTS 65536 /* more than vm.max_map_count's default mappings */
#define GUARD_UNIT 12     /* lengths and addresses in 4 KiB units */
#define GUARD_LEN_BITS 28 /* 1 TiB a mapping; past that, the first TiB is guarded */
#define GUARD_LEN_MAX ((UINT64_C(1) << GUARD_LEN_BITS) - 1)
#define GUARD_ADDR_MAX (UINT64_C(1) << (64 - GUARD_LEN_BITS))

static _Atomic uint64_t guard_word[GUARD_SLOTS];
static _Atomic uint8_t guard_shrank_flag[GUARD_SLOTS];
static _Atomic uint32_t guard_top;  /* slots [0, top) have been used */
static _Atomic uint32_t guard_next; /* where the next claim starts looking */
static struct sigaction guard_prev; /* the SIGBUS action before ours */
static uintptr_t guard_page_size;   /* set before the handler is */
static pthread_mutex_t guard_install_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t guard_pack(const void *base, size_t len)
{
	uint64_t units = ((uint64_t)len + (1u << GUARD_UNIT) - 1) >> GUARD_UNIT;
	uint64_t page = (uint64_t)(uintptr_t)base >> GUARD_UNIT;
	if (page >= GUARD_ADDR_MAX || units == 0)
		return 0;
	return page << GUARD_LEN_BITS | (units < GUARD_LEN_MAX ? units : GUARD_LEN_MAX);
}

/* Zero pages over [addr's page, the end of w's range): 0; 1 when addr
 * is not in it; -1 when the pages could not be put there. */
static int guard_patch(uint64_t w, uintptr_t addr)
{
	uintptr_t lo = (uintptr_t)(w >> GUARD_LEN_BITS) << GUARD_UNIT;
	uintptr_t hi = lo + ((uintptr_t)(w & GUARD_LEN_MAX) << GUARD_UNIT);
	uintptr_t from = addr & ~(guard_page_size - 1);
	if (addr < lo || addr >= hi)
		return 1;
	/* The raw system call: no interposed mmap (a sanitizer's) in a handler. */
	long p = syscall(SYS_mmap, from, hi - from, PROT_READ,
	                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	return p == (long)from ? 0 : -1;
}

/* The action that was there before ours, for a fault we do not own. */
static void guard_pass(int sig, siginfo_t *si, void *uc)
{
	if ((guard_prev.sa_flags & SA_SIGINFO) && guard_prev.sa_sigaction) {
		guard_prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (guard_prev.sa_handler != SIG_DFL && guard_prev.sa_handler != SIG_IGN) {
		guard_prev.sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig); /* sent by someone: deliver it as it was meant */
	                    /* A fault: returning makes the access again, now with SIG_DFL. */
}

static void guard_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	uint32_t top = atomic_load_explicit(&guard_top, memory_order_acquire);
	uintptr_t addr = (uintptr_t)si->si_addr;
	for (uint32_t i = 0; si->si_code > 0 && i < top; i++) {
		/* Pairs with the release CAS in atf_guard_map(). */
		uint64_t w = atomic_load_explicit(&guard_word[i], memory_order_acquire);
		int r = w ? guard_patch(w, addr) : 1;
		if (r == 1)
			continue;
		if (r == 0) {
			atomic_store_explicit(&guard_shrank_flag[i], 1, memory_order_relaxed);
			errno = saved;
			return;
		}
		break; /* could not patch (no mapping left): as if unguarded */
	}
	errno = saved;
	guard_pass(sig, si, uc);
}

/* Ours as SIGBUS's action, the one before kept to pass others' faults
 * to; again if someone has replaced it since (the recorder's guard). */
static int guard_install(void)
{
	struct sigaction cur, sa = {0};
	int err = 0;
	pthread_mutex_lock(&guard_install_lock);
	guard_page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (sigaction(SIGBUS, NULL, &cur) != 0) {
		err = -errno;
	} else if (!((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == guard_sigbus)) {
		guard_prev = cur;
		sa.sa_sigaction = guard_sigbus;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, NULL) != 0)
			err = -errno;
	}
	pthread_mutex_unlock(&guard_install_lock);
	return err;
}

/* A free slot claimed for w; -1 when every one is taken. */
static int guard_claim(uint64_t w)
{
	uint32_t start = atomic_fetch_add_explicit(&guard_next, 1, memory_order_relaxed);
	for (uint32_t k = 0; k < GUARD_SLOTS; k++) {
		uint32_t i = (start + k) % GUARD_SLOTS;
		uint64_t free_w = 0;
		if (atomic_load_explicit(&guard_word[i], memory_order_relaxed))
			continue;
		atomic_store_explicit(&guard_shrank_flag[i], 0, memory_order_relaxed);
		/* Release: the flag's reset before the range; pairs with the
		 * handler's acquire load. */
		if (!atomic_compare_exchange_strong_explicit(
		        &guard_word[i], &free_w, w, memory_order_release, memory_order_relaxed))
			continue;
		uint32_t top = atomic_load_explicit(&guard_top, memory_order_relaxed);
		while (top <= i && !atomic_compare_exchange_weak_explicit(&guard_top, &top, i + 1,
		                                                          memory_order_release,
		                                                          memory_order_relaxed))
			;
		return (int)i;
	}
	return -1;
}

int atf_guard_map(int fd, size_t len, const uint8_t **base, int *slot)
{
	int err = guard_install();
	if (err)
		return err;
	void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	uint64_t w = guard_pack(p, len);
	*slot = w ? guard_claim(w) : -1;
	if (*slot < 0) {
		munmap(p, len); /* every slot taken: as mmap out of mappings */
		return -ENOMEM;
	}
	*base = p;
	return 0;
}

void atf_guard_unmap(const uint8_t *base, size_t len, int slot)
{
	/* The range leaves the registry before the mapping goes: a later
	 * mapping at the same address is never taken for this one. */
	if (slot >= 0)
		atomic_store_explicit(&guard_word[slot], 0, memory_order_relaxed);
	munmap((void *)base, len);
}

bool atf_guard_shrank(int slot)
{
	/* The handler ran on the faulting thread; another reader thread
	 * learns it through the hand-over of the reader (a join, a queue). */
	return slot >= 0 && atomic_load_explicit(&guard_shrank_flag[slot], memory_order_relaxed);
}

/* Test hook (ADA_TEST_SHRINK_MAPPED=N, tests/integration/shrink_read_test.sh):
 * the first file of at least N bytes a reader has opened (an index
 * file strictly, not a count's salvage pre-pass; the export's input) is cut to 4 KiB
 * there, between its open and its reading, as a target or the recorder
 * may cut it: the shrink made deterministic. Once a process. */
void atf_guard_test_shrink(int fd, size_t len)
{
	static atomic_bool done;
	const char *s = getenv("ADA_TEST_SHRINK_MAPPED");
	char self[64];
	if (!s || len < strtoull(s, NULL, 10) || len <= 4096 || atomic_exchange(&done, true))
		return;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	int w = open(self, O_WRONLY | O_CLOEXEC);
	if (w >= 0 && ftruncate(w, 4096) == 0)
		fprintf(stderr, "ADA_TEST_SHRINK_MAPPED: cut a file of %zu bytes to 4096\n", len);
	if (w >= 0)
		close(w);
}
