/*
 * The start-up scan's whole-page patch writes (hook_mem_pages.c), called
 * by hook_mem.c's patch_write_pair() only; and the laying of patches
 * over a copy of their pages, which agent_sharedtext.c's copies use too.
 */
#ifndef ADA_HOOK_MEM_PAGES_INTERNAL_H
#define ADA_HOOK_MEM_PAGES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook_mem.h"

/* What one call of hook_pages_write() is given: the patches (each array
 * sorted by address), the step's pages [lo, hi), and two bitmaps over
 * them (bit x: page lo + x pages): the pages a patch changes, and the
 * pages that hold the file's bytes (hook_mem.c's patch_drop_range()). */
struct hook_pages_step {
	const struct hook_patch *first, *then;
	size_t n_first, n_then;
	uint64_t lo, hi, pg;
	const uint64_t *changed, *clean;
};

/* Lays the bytes of a[0..n) (sorted by address, each at most
 * HOOK_ARCH_MAX_PATCH long) that fall in [c, e) over buf, which holds
 * [c, e)'s bytes: a patch that crosses c or e, its part inside. */
void hook_pages_lay(uint8_t *buf, uint64_t c, uint64_t e, const struct hook_patch *a, size_t n);

/* Writes every changed page of the step whole -- the file's bytes from
 * src with first's patches and then then's laid over them -- through the
 * kernel (process_vm_writev on this process), a run of up to
 * src->buf_pages pages a call: one page pin a page instead of one a
 * patch. Only in the start-up scan (hook_no_seccomp; one thread), on
 * x86_64, when every changed page holds the file's bytes and lies in
 * src's mapping. A run is cut only where no patch's bytes cross the cut
 * and no entry's jmp rel8 jumps across it to a padding slot after it,
 * so no entry is written before its slot: the agent runs libc between
 * two calls. false, having
 * written nothing, when it does not apply; false after a refused or
 * short read or write (some runs written: the caller writes every patch
 * again its own way, the same bytes). *pages: the pages written. */
bool hook_pages_write(const struct hook_patch_file *src, const struct hook_pages_step *s,
                      uint64_t *pages);

#endif
