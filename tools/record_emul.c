/*
 * ada record of an aarch64 program on an x86_64 machine: the program runs
 * under qemu-user (qemu-aarch64 -L SYSROOT), with the aarch64 build of
 * the agent preloaded into it through qemu's -E (the guest's environment:
 * qemu itself, an x86_64 program, must not get the aarch64 agent in its
 * LD_PRELOAD). The recorder stays native: the arena is the same on both
 * sides (little-endian, LP64), the arenas say their machine and their
 * counter's frequency, and the drain converts the program's CNTVCT with
 * them (src/recorder, drain_arena_origin). A testing convenience, and a
 * way to debug arm64 binaries on x86 machines: emulated, not timed.
 *
 * What it needs, looked for in this order:
 *   - the aarch64 agent: $ADA_AGENT_ARM64, else the cross build's
 *     libada_agent.so this ada was configured with (-DADA_ARM64_AGENT);
 *   - qemu: $ADA_QEMU_AARCH64, else qemu-aarch64 on PATH;
 *   - the aarch64 C library's root: $ADA_QEMU_SYSROOT, else / when the
 *     arm64 C library is installed there (libc6:arm64, which the :arm64
 *     libraries the agent links bring on a multiarch system), else
 *     /usr/aarch64-linux-gnu (libc6-arm64-cross). Not the cross one when
 *     both are there: qemu falls back from the -L root to the host's paths
 *     for what the root lacks, so the cross root's loader would load
 *     /lib/aarch64-linux-gnu's libc.so.6, of another release, and the two
 *     disagree (a dynamic program's first pthread_create never returns).
 * binfmt_misc is not needed (qemu is started by name), and the program's
 * own execve of another aarch64 program fails without it, as it would
 * under qemu-user without ada.
 *
 * Threads: the CLI's main thread, then the forked child (record_emul_exec).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf.h"
#include "cmd.h"

#include "record.h"

#ifndef ADA_ARM64_AGENT
#define ADA_ARM64_AGENT ""
#endif
#define RECORD_EMUL_SYSROOT "/usr/aarch64-linux-gnu"
#define RECORD_EMUL_MULTIARCH_LD "/lib/ld-linux-aarch64.so.1"

/* The ELF machine of the file (host byte order: both are little-endian),
 * 0 when it is not a 64-bit ELF file that can be read. */
static unsigned emul_elf_machine(const char *path, unsigned *type)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, &eh, sizeof(eh));
	close(fd);
	if (n != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return 0;
	if (type)
		*type = eh.e_type;
	return eh.e_machine;
}

uint8_t record_emul_arch(const char *path)
{
#if defined(__x86_64__)
	return emul_elf_machine(path, NULL) == EM_AARCH64 ? ATF_ARCH_ARM64 : 0;
#else
	(void)path;
	return 0; /* the native build records its own machine's programs */
#endif
}

/* An executable regular file named by $var, else found as name on PATH. */
static int emul_find_program(const char *var, const char *name, char *out, size_t cap)
{
	const char *v = getenv(var);
	if (v && *v)
		return (size_t)snprintf(out, cap, "%s", v) < cap && access(out, X_OK) == 0 ? 0 : -1;
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t len = colon ? (size_t)(colon - path) : strlen(path);
		struct stat st;
		if ((size_t)snprintf(out, cap, "%.*s/%s", (int)len, len ? path : ".", name) < cap &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		path += len + (colon ? 1 : 0);
	}
	return -1;
}

/* The aarch64 agent: an aarch64 shared object, readable. */
static int emul_find_agent(char *out, size_t cap)
{
	const char *v = getenv("ADA_AGENT_ARM64");
	if (!v || !*v)
		v = ADA_ARM64_AGENT;
	if (!*v || (size_t)snprintf(out, cap, "%s", v) >= cap)
		return -ENOENT;
	unsigned type = 0;
	if (access(out, R_OK) != 0)
		return -errno;
	return emul_elf_machine(out, &type) == EM_AARCH64 && type == ET_DYN ? 0 : -ENOEXEC;
}

int record_emul_prepare(struct rec_args *a)
{
	if (a->agent) {
		int rc = emul_find_agent(a->emul_agent, sizeof(a->emul_agent));
		if (rc == -ENOEXEC) {
			ada_log(
			    "'%s' is not the aarch64 build of libada_agent.so; set ADA_AGENT_ARM64 "
			    "to the one a cross build made (cmake/aarch64-linux-gnu.cmake)",
			    a->emul_agent);
			return -1;
		}
		if (rc < 0) {
			ada_log("'%s' is an aarch64 program and no aarch64 agent was found: set "
			        "ADA_AGENT_ARM64 to the libada_agent.so of a cross build "
			        "(cmake/aarch64-linux-gnu.cmake), or use --no-agent",
			        a->prog_argv[0]);
			return -1;
		}
	}
	if (emul_find_program("ADA_QEMU_AARCH64", "qemu-aarch64", a->emul_qemu,
	                      sizeof(a->emul_qemu)) < 0) {
		ada_log("'%s' is an aarch64 program and qemu-aarch64 was not found: install "
		        "qemu-user (tools/bootstrap.sh does), or set ADA_QEMU_AARCH64",
		        a->prog_argv[0]);
		return -1;
	}
	const char *root = getenv("ADA_QEMU_SYSROOT");
	if (!root || !*root)
		root = access(RECORD_EMUL_MULTIARCH_LD, R_OK) == 0 ? "/" : RECORD_EMUL_SYSROOT;
	struct stat st;
	if ((size_t)snprintf(a->emul_sysroot, sizeof(a->emul_sysroot), "%s", root) >=
	        sizeof(a->emul_sysroot) ||
	    stat(a->emul_sysroot, &st) != 0 || !S_ISDIR(st.st_mode)) {
		ada_log("'%s' is an aarch64 program and its C library's root %s is not there: "
		        "install libc6:arm64 (tools/bootstrap.sh does), or set ADA_QEMU_SYSROOT",
		        a->prog_argv[0], root);
		return -1;
	}
	return 0;
}

size_t record_emul_argv(const struct rec_args *a, const char *path, const char *preload,
                        char **argv, size_t cap)
{
	size_t n = 0, nargs = 0;
	while (a->prog_argv[nargs])
		nargs++;
	if (cap < nargs + 8)
		return 0;
	argv[n++] = (char *)a->emul_qemu;
	argv[n++] = (char *)"-L";
	argv[n++] = (char *)a->emul_sysroot;
	if (preload) {
		argv[n++] = (char *)"-E";
		argv[n++] = (char *)preload;
	}
	/* The program's argv[0] as given (qemu's -0), its path to run. */
	argv[n++] = (char *)"-0";
	argv[n++] = a->prog_argv[0];
	argv[n++] = (char *)path;
	for (size_t i = 1; i < nargs; i++)
		argv[n++] = a->prog_argv[i];
	argv[n] = NULL;
	return n;
}

void record_emul_exec(const struct rec_args *a, const char *path)
{
	size_t nargs = 0;
	while (a->prog_argv[nargs])
		nargs++;
	char **argv = calloc(nargs + 8, sizeof(*argv));
	char *pre = NULL;
	if (!argv)
		return;
	if (a->agent) {
		/* The guest's LD_PRELOAD: the agent first, then the program's own. */
		const char *old = getenv("LD_PRELOAD");
		int n = old && *old ? asprintf(&pre, "LD_PRELOAD=%s:%s", a->emul_agent, old)
		                    : asprintf(&pre, "LD_PRELOAD=%s", a->emul_agent);
		if (n < 0)
			return;
	}
	record_emul_argv(a, path, pre, argv, nargs + 8);
	execv(a->emul_qemu, argv);
}
