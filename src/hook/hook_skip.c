/*
 * The skip reasons' stable names (hook_arch.h, enum ada_hook_skip): the
 * manifest's words, the same on every architecture.
 *
 * Threads: any; constant data.
 */
#include "hook_arch.h"

static const char *const skip_names[ADA_SKIP_REASON_COUNT] = {
    [ADA_HOOK_OK] = "hooked",
    [ADA_SKIP_TOO_SHORT] = "too_short",
    [ADA_SKIP_BRANCH_INTO_PATCH] = "branch_into_patch",
    [ADA_SKIP_UNDECODABLE] = "undecodable",
    [ADA_SKIP_UNRELOCATABLE] = "unrelocatable",
    [ADA_SKIP_NO_TRAMPOLINE_MEMORY] = "no_trampoline_memory",
    [ADA_SKIP_IFUNC] = "ifunc",
    [ADA_SKIP_AGENT] = "agent",
    [ADA_SKIP_LOADER] = "loader",
    [ADA_SKIP_ENTRY_POINT] = "entry_point",
    [ADA_SKIP_EXCLUDED] = "excluded",
    [ADA_SKIP_ALIAS] = "alias",
    [ADA_SKIP_OUTSIDE_TEXT] = "outside_text",
    [ADA_SKIP_JUMP_TABLE] = "jump_table",
    [ADA_SKIP_NO_UNWIND_INFO] = "no_unwind_info",
    [ADA_SKIP_BUSY_AT_ATTACH] = "busy_at_attach",
};

const char *hook_skip_name(enum ada_hook_skip reason)
{
	if ((unsigned)reason >= ADA_SKIP_REASON_COUNT)
		return "unknown";
	return skip_names[reason];
}
