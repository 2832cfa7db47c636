/*
 * The special functions by name (agent_special_of_name, agent_internal.h):
 * asked about every function of every image at its install.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "agent_internal.h"

struct special_name {
	const char *name;
	enum agent_special kind;
};

/* Functions whose entry changes the stack under the shadow stack's feet
 * (docs/hooks.md). They are hooked whatever the options say: an unwinder
 * that meets a return trampoline would stop, and the program would
 * terminate instead of catching. */
static const struct special_name special_names[] = {
    {"_Unwind_RaiseException", AGENT_SP_UNWIND},
    {"_Unwind_Resume", AGENT_SP_UNWIND},
    {"_Unwind_Resume_or_Rethrow", AGENT_SP_UNWIND},
    {"_Unwind_ForcedUnwind", AGENT_SP_FORCED},
    {"pthread_exit", AGENT_SP_FORCED},
    {"__cxa_begin_catch", AGENT_SP_CATCH},
    {"exit", AGENT_SP_EXIT},
    {"_exit", AGENT_SP_EXIT},
    {"_Exit", AGENT_SP_EXIT},
    {"quick_exit", AGENT_SP_EXIT},
    {"dlopen", AGENT_SP_DL},
    {"dlmopen", AGENT_SP_DL},
    {"dlclose", AGENT_SP_DL},
    /* dlopen itself ends in an indirect tail call the patcher refuses;
     * every dlopen (the program's, and libc's own for NSS, iconv and
     * libgcc_s) runs its work under these, which are hookable. */
    {"_dl_catch_exception", AGENT_SP_DL},
    {"_dl_catch_error", AGENT_SP_DL},
    {"execve", AGENT_SP_EXEC},
    {"execveat", AGENT_SP_EXEC},
    {"fexecve", AGENT_SP_EXEC},
    /* greenlet (gevent, eventlet) switches by copying stack slices:
     * 2.x's C++ method, and 0.4/1.x's C function where symbols have it. */
    {"_ZN8greenlet8Greenlet13g_switchstackEv", AGENT_SP_SWITCH},
    {"g_switchstack", AGENT_SP_SWITCH},
};

/* A 256-bit filter of the special names' hashes: most names (every
 * function of every image is asked about, libc's 6 600 at each exec) are
 * told apart by one bit, not by a compare with each special name. */
static uint64_t special_filter[4];
static pthread_once_t special_once = PTHREAD_ONCE_INIT;

/* FNV-1a of a name's first 8 bytes at most (a special name differs from
 * the names sharing them by the compare after): its top 8 bits pick the
 * filter's bit. */
static uint32_t special_name_hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (int i = 0; i < 8 && s[i]; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h >> 24;
}

static void special_init(void)
{
	for (size_t i = 0; i < sizeof(special_names) / sizeof(special_names[0]); i++) {
		uint32_t b = special_name_hash(special_names[i].name);
		special_filter[b >> 6] |= 1ull << (b & 63);
	}
}

enum agent_special agent_special_of_name(const char *name)
{
	pthread_once(&special_once, special_init);
	uint32_t b = special_name_hash(name);
	if (!(special_filter[b >> 6] & (1ull << (b & 63))))
		return AGENT_SP_NONE;
	for (size_t i = 0; i < sizeof(special_names) / sizeof(special_names[0]); i++) {
		const char *s = special_names[i].name;
		if (s[0] == name[0] && !strcmp(s, name))
			return special_names[i].kind;
	}
	return AGENT_SP_NONE;
}
