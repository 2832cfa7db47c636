/*
 * libelf loaded by the agent when it first reads an image's ELF (a symbol
 * table the cache does not hold), not by the loader with the agent.
 *
 * Why: an exec'd image whose symbol tables and plans are all cached never
 * calls libelf, yet linked in, libelf and its libz were mapped, relocated
 * and bound in every process the agent starts in, a part of each exec'd
 * child's CPU (docs/benchmarks.md, "An exec'd child's start-up, part
 * by part"). The
 * functions the agent calls are defined here under libelf's own names
 * (hidden: the agent's archives bind to them, nothing else can see them),
 * each calling through a pointer bound by dlopen/dlvsym at the first
 * call, to the symbol versions the agent was built against. Loaded, the
 * two libraries are the agent's dependencies as before
 * (discover_set_agent_library: found unhooked at the next scan).
 *
 * When libelf cannot be loaded, each function fails as libelf does on a
 * bad input (NULL, -1, EV_NONE): an image whose symbols are not cached
 * is then not hooked, and the agent's log says why, once.
 *
 * Not hook context: the symbol reads of a scan or a rescan (agent.lock
 * held) and their analysis; the load is once per process (pthread_once;
 * a fork child inherits what its parent loaded).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>

#include "agent_internal.h"
#include "discover_internal.h"

#ifndef ADA_LIBELF_SONAME
#define ADA_LIBELF_SONAME "libelf.so.1"
#endif

/* (name, return type, parameters, arguments, version, failure value) */
#define AGENT_LIBELF_FUNCS(X)                                                                      \
	X(elf_version, unsigned, (unsigned v), (v), "ELFUTILS_1.0", EV_NONE)                       \
	X(elf_begin, Elf *, (int fd, Elf_Cmd cmd, Elf *ref), (fd, cmd, ref), "ELFUTILS_1.0", NULL) \
	X(elf_end, int, (Elf * e), (e), "ELFUTILS_1.0", 0)                                         \
	X(elf_kind, Elf_Kind, (Elf * e), (e), "ELFUTILS_1.0", ELF_K_NONE)                          \
	X(gelf_getclass, int, (Elf * e), (e), "ELFUTILS_1.0", ELFCLASSNONE)                        \
	X(elf_nextscn, Elf_Scn *, (Elf * e, Elf_Scn * s), (e, s), "ELFUTILS_1.0", NULL)            \
	X(gelf_getshdr, GElf_Shdr *, (Elf_Scn * s, GElf_Shdr * d), (s, d), "ELFUTILS_1.0", NULL)   \
	X(gelf_getehdr, GElf_Ehdr *, (Elf * e, GElf_Ehdr * d), (e, d), "ELFUTILS_1.0", NULL)       \
	X(elf_getphdrnum, int, (Elf * e, size_t * n), (e, n), "ELFUTILS_1.6", -1)                  \
	X(gelf_getphdr, GElf_Phdr *, (Elf * e, int i, GElf_Phdr *d), (e, i, d), "ELFUTILS_1.0",    \
	  NULL)                                                                                    \
	X(elf_getdata, Elf_Data *, (Elf_Scn * s, Elf_Data * d), (s, d), "ELFUTILS_1.0", NULL)      \
	X(gelf_getsym, GElf_Sym *, (Elf_Data * d, int i, GElf_Sym *s), (d, i, s), "ELFUTILS_1.0",  \
	  NULL)                                                                                    \
	X(gelf_getdyn, GElf_Dyn *, (Elf_Data * d, int i, GElf_Dyn *s), (d, i, s), "ELFUTILS_1.0",  \
	  NULL)                                                                                    \
	X(elf_strptr, char *, (Elf * e, size_t sec, size_t off), (e, sec, off), "ELFUTILS_1.0",    \
	  NULL)                                                                                    \
	X(elf_rawfile, char *, (Elf * e, size_t * n), (e, n), "ELFUTILS_1.0", NULL)                \
	X(elf_getshdrstrndx, int, (Elf * e, size_t * n), (e, n), "ELFUTILS_1.5", -1)               \
	X(gelf_getnote, size_t,                                                                    \
	  (Elf_Data * d, size_t off, GElf_Nhdr * h, size_t * name, size_t * desc),                 \
	  (d, off, h, name, desc), "ELFUTILS_1.3", 0)

static struct {
#define AGENT_LIBELF_PTR(name, ret, params, args, ver, fail) ret(*name) params;
	AGENT_LIBELF_FUNCS(AGENT_LIBELF_PTR)
#undef AGENT_LIBELF_PTR
	bool ok;
} libelf;

static pthread_once_t libelf_once = PTHREAD_ONCE_INIT;

static void libelf_load(void)
{
	void *h = dlopen(ADA_LIBELF_SONAME, RTLD_NOW | RTLD_LOCAL);
	bool ok = h != NULL;
#define AGENT_LIBELF_BIND(name, ret, params, args, ver, fail)                                      \
	*(void **)&libelf.name = h ? dlvsym(h, #name, ver) : NULL;                                 \
	ok = ok && libelf.name;
	AGENT_LIBELF_FUNCS(AGENT_LIBELF_BIND)
#undef AGENT_LIBELF_BIND
	struct link_map *lm = NULL;
	if (h && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm)
		discover_set_agent_library((uint64_t)lm->l_addr);
	if (!ok)
		agent_log("%s could not be loaded (%s): the images whose symbols are not cached "
		          "are not hooked",
		          ADA_LIBELF_SONAME, h ? "a function is missing" : dlerror());
	libelf.ok = ok; /* published by pthread_once to every later caller */
}

/* Whether libelf is there to call, loaded at the first ask. */
static bool libelf_ready(void)
{
	pthread_once(&libelf_once, libelf_load);
	return libelf.ok;
}

#define AGENT_LIBELF_DEF(name, ret, params, args, ver, fail)                                       \
	ret name params                                                                            \
	{                                                                                          \
		return libelf_ready() ? libelf.name args : (ret)(fail);                            \
	}
AGENT_LIBELF_FUNCS(AGENT_LIBELF_DEF)
#undef AGENT_LIBELF_DEF
