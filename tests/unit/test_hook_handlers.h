/* Test enter/exit handlers (test_hook_handlers.c, -mgeneral-regs-only). */
#ifndef TEST_HOOK_HANDLERS_H
#define TEST_HOOK_HANDLERS_H

#include <stdint.h>

#include "hook_arch.h"

#define TH_MAX_IDS 64

extern uint64_t th_enter[TH_MAX_IDS], th_exit[TH_MAX_IDS];
extern uint64_t th_bad_sp, th_overflow, th_depth;
extern uint64_t th_ret_tramp; /* 0: do not capture returns */
extern struct ada_hook_regs th_last_regs;

void th_on_enter(uint64_t fn_id, uint64_t *ret_slot, struct ada_hook_regs *regs);
uint64_t th_on_exit(uint64_t sp);

#endif
