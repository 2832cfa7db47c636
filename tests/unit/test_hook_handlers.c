/*
 * Minimal hook handlers for the clobber tests, built like the agent's:
 * -mgeneral-regs-only, no libc. They count calls and returns per fn_id,
 * keep a shadow stack of return addresses (swapped, or returned through
 * the trampoline's R_F), and check that the
 * return trampoline passes sp such that sp - 8 is the slot the enter
 * handler saw. Single-threaded tests only.
 */
#include "test_hook_handlers.h"

struct th_frame {
	uint64_t orig;
	uint64_t *slot;
	uint64_t id;
};

static struct th_frame th_stack[8192];
uint64_t th_enter[TH_MAX_IDS], th_exit[TH_MAX_IDS];
uint64_t th_bad_sp, th_overflow, th_depth;
uint64_t th_ret_tramp;
struct ada_hook_regs th_last_regs;

void th_on_enter(uint64_t fn_id, uint64_t *ret_slot, struct ada_hook_regs *regs)
{
	th_enter[fn_id % TH_MAX_IDS]++;
	th_last_regs = *regs;
	if (!th_ret_tramp)
		return;
	if (th_depth == sizeof(th_stack) / sizeof(th_stack[0])) {
		th_overflow++;
		return;
	}
	th_stack[th_depth++] = (struct th_frame){*ret_slot, ret_slot, fn_id};
	/* Both ways back (hook_arch.h), alternating with the depth: 0 makes
	 * the trampoline call the body (the return comes through its R_F),
	 * the return trampoline's address makes it jump (the swap). */
	*ret_slot = (th_depth & 1) ? 0 : th_ret_tramp;
}

uint64_t th_on_exit(uint64_t sp)
{
	struct th_frame *f = &th_stack[--th_depth];

	th_exit[f->id % TH_MAX_IDS]++;
	if ((uint64_t *)(sp - 8) != f->slot)
		th_bad_sp++;
	return f->orig;
}
