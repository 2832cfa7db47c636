/*
 * Code memory for the hook engine: trampoline regions within +-2 GiB of
 * the module they serve, and patching of the functions' first bytes.
 *
 * Not hook context: used at agent init and on dlopen/dlclose, may call
 * libc, never prints, returns 0 or -errno. NOT thread-safe: the caller
 * serializes all calls on one struct hook_mem (the agent's hook lock).
 *
 * Life cycle of one batch (one module):
 *     hook_mem_alloc() per trampoline -> write code through the returned
 *     pointer -> hook_mem_seal() (regions become RX; a sealed region is
 *     never written again, so threads running its trampolines are safe)
 *     -> hook_patch_apply() with the patches.
 * On dlclose: hook_patch_apply() with the original bytes only if the
 * module's code stays mapped, then hook_mem_release_module().
 */
#ifndef ADA_HOOK_MEM_H
#define ADA_HOOK_MEM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook_arch.h"

struct hook_mem;

/* -ENOMEM */
int hook_mem_new(struct hook_mem **out);
/* Unmaps every region: only after every patch pointing into them is undone
 * (or the process no longer runs hooked code). NULL is a no-op. */
void hook_mem_free(struct hook_mem *m);

/* Reserves len bytes of trampoline memory for module_id such that the
 * whole block lies within +-2 GiB (minus 1 MiB of margin) of every byte of
 * [lo, hi) (the module's mapped range). The block is writable until
 * hook_mem_seal(); *out is both the write pointer and the address the code
 * will run at. Regions are searched near the module using a snapshot of
 * /proc/self/maps taken once per batch and placed with
 * MAP_FIXED_NOREPLACE. Errors: -ENOMEM (no gap in reach), -EINVAL,
 * -errno of open/read/mmap. */
int hook_mem_alloc(struct hook_mem *m, uint32_t module_id, uint64_t lo, uint64_t hi, size_t len,
                   uint8_t **out);

/* hook_mem_alloc() within an explicit window: the block lies inside
 * [wlo, whi) (clamped to the user address space), as close to near as
 * the gaps allow. For arm64's far patch form, whose adrp reaches +-4 GiB
 * (agent_install.c). Errors as hook_mem_alloc(). */
int hook_mem_alloc_in(struct hook_mem *m, uint32_t module_id, uint64_t wlo, uint64_t whi,
                      uint64_t near, size_t len, uint8_t **out);

/* A new region of len bytes for module_id exactly at at (page-aligned),
 * placed with MAP_FIXED_NOREPLACE: -EEXIST when something is there,
 * -EINVAL when it does not fit the address space. For a block whose place
 * relative to its module must be the same in every process
 * (agent_sharedtext.c); the caller checks the patch's reach. */
int hook_mem_alloc_at(struct hook_mem *m, uint32_t module_id, uint64_t at, size_t len,
                      uint8_t **out);

/* Makes every region written since the last seal read+execute (no RWX is
 * left behind) and closes them to further allocation. -errno of mprotect. */
int hook_mem_seal(struct hook_mem *m);

/* Unmaps all regions of module_id (its trampolines must be unreachable). */
int hook_mem_release_module(struct hook_mem *m, uint32_t module_id);

/* Which pages hold trampoline memory, for hook context (any thread, no
 * lock, O(1)): a two-level directory over the user address space (47 bits
 * on x86_64, 48 on arm64: up to HOOK_ARCH_VA_HIGH),
 * one bit per 4 KiB page, one 32 KiB leaf per GiB that holds a region
 * (leaves are never freed: a handler may be reading one). Every region
 * any struct hook_mem maps is marked from its mmap until just before its
 * munmap. Trampoline memory holds trampolines and return trampolines
 * only, so a return address inside it is a return point (hook_arch.h:
 * the only addresses of trampoline memory that ever sit in a return slot
 * are the return trampoline and the trampolines' R_F). */
#define HOOK_MEM_DIR_TOP ((uint32_t)(HOOK_ARCH_VA_HIGH >> 30) + 1) /* GiBs */
#define HOOK_MEM_DIR_LEAF_WORDS (1u << 12)                         /* 2^18 pages a GiB, 64 a word */
extern _Atomic(_Atomic uint64_t *) hook_mem_dir[HOOK_MEM_DIR_TOP];

static inline bool hook_mem_is_tramp(uint64_t addr)
{
	uint64_t g = addr >> 30;
	if (g >= HOOK_MEM_DIR_TOP)
		return false;
	/* Acquire: pairs with the release store that publishes a leaf
	 * (mem_dir_mark): its words are seen zeroed, not as calloc's. */
	_Atomic uint64_t *leaf = atomic_load_explicit(&hook_mem_dir[g], memory_order_acquire);
	if (!leaf)
		return false;
	uint64_t pg = (addr >> 12) & ((1u << 18) - 1);
	/* Relaxed: a return point can only be in a slot once the patch that
	 * leads to its trampoline is written, after the bit (mem_dir_mark:
	 * release, then hook_patch_apply's syscalls and stores, seen in
	 * program order by whoever runs the patched code). */
	return (atomic_load_explicit(&leaf[pg >> 6], memory_order_relaxed) >> (pg & 63)) & 1u;
}

/* Whether this process runs under no seccomp filter (/proc/self/status,
 * "Seccomp:\t0"), read once (callers serialized: the install paths): a
 * filter that does not allow a system call the agent could do without
 * (process_vm_writev for the patches, memfd_create and sendfile for the
 * caches' files) may kill instead of refusing (systemd's
 * SystemCallFilter= without SystemCallErrorNumber=), so under any
 * filter the agent keeps to the calls it needs anyway. */
bool hook_no_seccomp(void);
/* The answer above holds only until the program can have installed a
 * filter of its own: the agent opens the window for its start-up scan
 * (its constructor, before the program's code) and closes it after;
 * closed -- a later dlopen's rescan, ada attach, a unit test that did
 * not open it -- hook_no_seccomp() is false and the agent keeps to the
 * system calls it needs anyway. */
void hook_seccomp_window(bool open);
/* How many times the window has been opened: what was read of the
 * address space while it was open last holds as long as this has not
 * moved (only the agent changes it meanwhile, and not its images'
 * mappings). */
uint64_t hook_seccomp_window_gen(void);

/* Copies src[0, len) to dst (writable memory of this process) through
 * the kernel (process_vm_writev), so that this process does not touch
 * dst's pages: on a paravirtualised guest with shadow page tables the
 * first touch of a new page from user space is an exit to the
 * hypervisor, which code that never runs need not pay. x86_64, no
 * seccomp filter (hook_no_seccomp) only; false then, or when the kernel
 * wrote less: the caller copies it itself. Not hook context. */
bool hook_mem_write_kernel(void *dst, const void *src, size_t len);

/* Bytes of trampoline memory mapped in total (for the manifest). */
size_t hook_mem_mapped_bytes(const struct hook_mem *m);

/* One code patch: write bytes[0..len) at addr. */
struct hook_patch {
	uint64_t addr;
	size_t len; /* 1..HOOK_ARCH_MAX_PATCH */
	uint8_t bytes[HOOK_ARCH_MAX_PATCH];
};

/* Writes every patch (sorts the array by address). The patches inside one
 * mapping are written under one mprotect pair over the pages they span:
 * writable, keeping exec so other threads running there go on (without
 * exec only if the kernel refuses W+X, then safe only single-threaded),
 * then back to the original protection read from /proc/self/maps. A patch
 * straddling two mappings is done page by page. Only the bytes that
 * differ are written: when they lie in one aligned 8-byte word (e.g. a
 * 5-byte jmp at an address whose low 3 bits are 0..3, which covers all
 * 16-byte aligned functions) with one atomic 8-byte store, so a thread
 * fetching the code concurrently sees either the old or the new
 * instruction; otherwise with memcpy, which is only safe when no other
 * thread runs that code (startup, or the agent's stop-the-world).
 * Unpatching = applying the original bytes.
 * Errors: -EINVAL (bad len), -EFAULT (address not mapped), -errno of
 * open/read/mprotect. Patches before the failing one stay applied. */
int hook_patch_apply(struct hook_patch *patches, size_t n);
/* Writes every patch of first[], then every patch of then[] (each array
 * sorted by address in place), under one mprotect pair when all their
 * bytes lie in one mapping (else as hook_patch_apply() of first, then of
 * then). The agent's padding form needs the order: a slot (first) must
 * hold its jump before an entry (then) jumps to it, and the agent itself
 * runs hooked functions between two writes (patch_write's memcpy is
 * glibc's __memmove_avx_unaligned_erms, whose slot is in its own padding
 * after its entry: written in plain address order, its next call runs
 * the padding's nops into the code behind them). With m, the protections
 * of m's snapshot of /proc/self/maps (hook_mem_alloc's) serve instead of
 * reading it again, for a caller that knows nothing but the agent changed
 * the address space since it was read (the start-up scan: one thread, no
 * program code run yet); the snapshot's own mprotect pairs restore what it
 * says, so it stays true. The maps are read as hook_patch_apply() does
 * when m is NULL, or its snapshot stale or missing a patch's mapping.
 * Errors as hook_patch_apply(). */
int hook_patch_apply_pair(struct hook_mem *m, struct hook_patch *first, size_t n_first,
                          struct hook_patch *then, size_t n_then);

/* The file behind an image's text mapping [lo, hi): its bytes at file
 * offset off of fd (opened and checked to be the file mapped: device and
 * inode, agent_text.c), and a buffer of buf_pages pages (at least 2) the
 * writes may use. */
struct hook_patch_file {
	int fd;
	uint64_t lo, hi, off;
	uint8_t *buf;
	size_t buf_pages;
};
/* hook_patch_apply_pair(m, ...) that, in the start-up scan (m given, no
 * seccomp filter, x86_64), writes the changed pages whole from src's
 * bytes with the patches laid over them: one page pin a page instead of
 * one a patch (hook_mem_pages_internal.h). src NULL, or any page it
 * cannot vouch for: as hook_patch_apply_pair(). */
int hook_patch_apply_pair_file(struct hook_mem *m, const struct hook_patch_file *src,
                               struct hook_patch *first, size_t n_first, struct hook_patch *then,
                               size_t n_then);

/* What the patch writes did to the pages they copied (copy-on-write of an
 * image's text), counted over the process's life: clean pages dropped
 * first so that their copies are cheap, pages that held a private copy
 * already (kept: copied the expensive way, per page), and pages that
 * could not be judged or dropped (no /proc/self/pagemap, a refused
 * MADV_DONTNEED: copied the expensive way). Callers serialized as above. */
struct hook_patch_cow {
	uint64_t dropped, kept, failed;
	uint64_t kernel_refused;   /* one-thread writes the kernel did not do (seccomp, refused) */
	uint64_t prefaulted;       /* pages hook_mem_prefault() mapped in one call each range */
	uint64_t populate_refused; /* MADV_POPULATE_* calls refused (before Linux 5.14) */
	uint64_t whole;            /* pages written whole (hook_patch_apply_pair_file) */
};
void hook_patch_cow_stats(struct hook_patch_cow *out);

/* Maps the pages of [addr, addr + len) (an image's text, before the
 * analysis or a plan cache hit's check reads it) for reading in one
 * system call (MADV_POPULATE_READ), counted prefaulted: without it each
 * first read of a page is a fault of its own. Refused (before Linux
 * 5.14), counted populate_refused, the reads fault as before. Callers
 * serialized as above. */
void hook_mem_prefault(uint64_t addr, uint64_t len);

/* Tests: refuse (true) every MADV_POPULATE_* call as a kernel before
 * 5.14 would (counted populate_refused); the agent sets it from
 * ADA_TEST_NO_POPULATE. */
void hook_mem_populate_refuse(bool refuse);

/* /proc/self/pagemap's bits (Documentation/admin-guide/mm/pagemap.rst),
 * read by the patch drops (hook_mem.c) and the plan check from the file
 * (agent_text.c). */
#define HOOK_PM_PRESENT (1ull << 63)
#define HOOK_PM_SWAP (1ull << 62)
#define HOOK_PM_FILE (1ull << 61) /* a file's page (or shared anonymous) */

/* /proc/self/maps parsing, exposed for tests. */
struct hook_map {
	uint64_t start, end;
	int prot; /* PROT_* */
};
/* Parses the text buf[0..len) into at most cap entries; returns the count
 * or -EINVAL on a malformed line, -ENOSPC when cap is too small. */
int hook_maps_parse(const char *buf, size_t len, struct hook_map *out, size_t cap);

/* The main thread's stack as glibc's pthread_getattr_np computes it from
 * /proc/self/maps (nptl/pthread_getattr_np.c): stack_end is
 * __libc_stack_end, rlim the RLIMIT_STACK soft limit. *hi: the page above
 * stack_end; *lo: *hi less the limit's part not above *hi, whole pages,
 * no lower than the end of the mapping before the stack's. -ENOENT when
 * no mapping of maps holds stack_end. */
int hook_maps_main_stack(const struct hook_map *maps, int n, uint64_t stack_end, uint64_t rlim,
                         uint64_t *lo, uint64_t *hi);

/* The text of /proc/self/maps m's snapshot was parsed from, when the
 * snapshot is current (as read, or as read plus the regions m mapped
 * since, which are anonymous and not in the text): the file mappings as
 * they were, without reading the file again. Good until m's next call.
 * -ESTALE when there is none. */
int hook_mem_maps_text(const struct hook_mem *m, const char **text, size_t *len);

/* hook_maps_main_stack() on m's snapshot of /proc/self/maps, when it has
 * one (the agent's start-up read it): the main thread's stack bounds
 * without reading the file again. -ESTALE when there is none. */
int hook_mem_main_stack(const struct hook_mem *m, uint64_t stack_end, uint64_t rlim, uint64_t *lo,
                        uint64_t *hi);

#endif
