/*
 * The PROGRAM checks: the file exists and is an executable ELF for this
 * machine (or a script whose #! interpreter exists, or a text file that
 * runs with /bin/sh), dynamically linked (the agent needs the loader), and
 * neither setuid/setgid nor carrying file capabilities (the loader runs
 * those in secure mode and ignores LD_PRELOAD). The file is opened
 * read-only and never changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "diag_internal.h"

#if defined(__x86_64__)
#define DIAG_MACHINE EM_X86_64
#define DIAG_ARCH "x86_64"
#elif defined(__aarch64__)
#define DIAG_MACHINE EM_AARCH64
#define DIAG_ARCH "aarch64"
#endif

/* What the ELF header and program headers say, or the #! line. */
struct diag_elf {
	int kind; /* 0: neither, 1: ELF, 2: script (#!), 3: text without #! */
	bool ours;
	unsigned machine, cls;
	bool interp;
	char interpreter[256]; /* kind 2: the #! line's interpreter path */
};

/* The head of a file that is not ELF: a #! line's interpreter (as the
 * kernel reads it: the first 256 bytes, the path after "#!" and blanks, up
 * to a blank or the end of the line), or text that a shell would run with
 * /bin/sh (execvp's fallback for ENOEXEC: no NUL byte in the first line,
 * as shells decide what is binary). */
static void diag_script_read(int fd, struct diag_elf *d)
{
	char head[256];
	ssize_t n = pread(fd, head, sizeof(head), 0);
	if (n >= 2 && head[0] == '#' && head[1] == '!') {
		d->kind = 2;
		ssize_t i = 2;
		while (i < n && (head[i] == ' ' || head[i] == '\t'))
			i++;
		size_t k = 0;
		while (i < n && head[i] != ' ' && head[i] != '\t' && head[i] != '\n' &&
		       head[i] != '\0' && k < sizeof(d->interpreter) - 1)
			d->interpreter[k++] = head[i++];
		d->interpreter[k] = '\0';
		return;
	}
	if (n <= 0)
		return;
	for (ssize_t i = 0; i < n && head[i] != '\n'; i++)
		if (head[i] == '\0')
			return;
	d->kind = 3;
}

static void diag_elf_read(int fd, struct diag_elf *d)
{
	char magic[4] = {0};
	memset(d, 0, sizeof(*d));
	if (pread(fd, magic, sizeof(magic), 0) < 4 || memcmp(magic, "\177ELF", 4)) {
		diag_script_read(fd, d);
		return;
	}
	if (elf_version(EV_CURRENT) == EV_NONE)
		return;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
		elf_end(e);
		return;
	}
	d->kind = 1;
	d->machine = eh.e_machine;
	d->cls = eh.e_ident[EI_CLASS];
	d->ours = eh.e_machine == DIAG_MACHINE && d->cls == ELFCLASS64;
	size_t n = 0;
	if (elf_getphdrnum(e, &n) == 0)
		for (size_t i = 0; i < n && i < 4096; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
				d->interp = true;
		}
	elf_end(e);
}

/* The file itself; false when nothing more can be checked. */
static bool diag_path(const char *shown, const char *open_path, const struct stat *st, int err,
                      struct ada_diag_report *rep)
{
	struct ada_diag_check *c = diag_add(rep, "path", "the program file");
	if (!c)
		return false;
	if (err == -ENOENT) {
		diag_set(c, ADA_DIAG_FAIL, true, "'%s' does not exist", shown);
		diag_step(c, "check the spelling, or give the program's full path");
		return false;
	}
	if (err) {
		diag_set(c, ADA_DIAG_FAIL, true, "'%s' cannot be examined (%s)", shown,
		         strerror(-err));
		diag_step(c, "run ada as a user who may read '%s'", shown);
		return false;
	}
	if (S_ISDIR(st->st_mode)) {
		diag_set(c, ADA_DIAG_FAIL, true, "'%s' is a directory, not a program", shown);
		diag_step(c, "give the path of the program file inside it");
		return false;
	}
	if (!S_ISREG(st->st_mode) || access(open_path, X_OK) < 0) {
		diag_set(c, ADA_DIAG_FAIL, true, "'%s' is not an executable file", shown);
		diag_step(c, "give the path of the program itself (a file you may execute)");
		return false;
	}
	diag_set(c, ADA_DIAG_OK, false, "'%s' exists and is executable", shown);
	return true;
}

/* A script: its interpreter must exist and be executable (else exec
 * fails with ENOENT or EACCES, naming the script, not the interpreter);
 * what the interpreter is, is its own checks' business when it starts. */
static void diag_interpreter(struct ada_diag_check *c, const char *shown, const char *interp)
{
	struct stat st;
	if (!interp[0]) {
		diag_set(c, ADA_DIAG_FAIL, false, "'%s' has a #! line that names no interpreter",
		         shown);
		diag_step(c, "write the interpreter's path after #! (e.g. #!/bin/sh)");
	} else if (stat(interp, &st) < 0) {
		diag_set(c, ADA_DIAG_FAIL, false,
		         "the interpreter of '%s', '%s' (its #! line), does not exist", shown,
		         interp);
		diag_step(c, "correct the #! line of '%s'", shown);
	} else if (!S_ISREG(st.st_mode) || access(interp, X_OK) < 0) {
		diag_set(c, ADA_DIAG_FAIL, false,
		         "the interpreter of '%s', '%s' (its #! line), is not an executable file",
		         shown, interp);
		diag_step(c, "correct the #! line of '%s'", shown);
	} else {
		diag_set(c, ADA_DIAG_OK, false,
		         "'%s' is a script for %s: the agent goes into its interpreter, whose "
		         "checks follow it",
		         shown, interp);
	}
}

/* Whether path is a qemu-user emulator (qemu-aarch64, qemu-arm-static,
 * ...; not qemu-system-*): a process it runs is another machine's
 * program, which ada attach would miss (it would trace qemu). */
static bool diag_is_qemu_user(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "qemu-", 5) && strncmp(base, "qemu-system-", 12) != 0;
}

/* ELF for this machine; false when not (nothing more to check). */
static bool diag_elf_kind(const char *shown, const struct diag_elf *d, bool attach, bool emulated,
                          struct ada_diag_report *rep)
{
	struct ada_diag_check *c = diag_add(rep, "elf", "an ELF program for this machine");
	if (!c)
		return false;
	if (d->kind == 2 && !attach) {
		diag_interpreter(c, shown, d->interpreter);
		return false;
	}
	if (d->kind == 3 && !attach) {
		diag_set(c, ADA_DIAG_OK, false,
		         "'%s' is a text file without a #! line: it runs with /bin/sh, as a shell "
		         "would run it",
		         shown);
		return false;
	}
	if (d->kind != 1) {
		diag_set(c, ADA_DIAG_FAIL, false,
		         "'%s' is neither an ELF program nor a script (or it cannot be read)",
		         shown);
		diag_step(c, "give the path of the compiled program");
		return false;
	}
	if (!d->ours && emulated && d->machine == EM_AARCH64 && d->cls == ELFCLASS64) {
		diag_set(c, ADA_DIAG_OK, false,
		         "'%s' is a 64-bit ELF program for aarch64: ada runs it under qemu-aarch64 "
		         "(emulated)",
		         shown);
		return true;
	}
	if (!d->ours) {
		diag_set(c, ADA_DIAG_FAIL, false,
		         "'%s' is an ELF program for another machine (e_machine %u, class %u); "
		         "this ada runs on " DIAG_ARCH,
		         shown, d->machine, d->cls);
		diag_step(c, "record it with an ada built for its machine, on that machine");
		return false;
	}
	if (attach && diag_is_qemu_user(shown)) {
		diag_set(c, ADA_DIAG_FAIL, false,
		         "'%s' is qemu-user: the process runs a program of another machine under "
		         "emulation, and qemu-user does not implement ptrace for the programs it "
		         "runs, so ada attach cannot reach it (it would trace qemu itself)",
		         shown);
		diag_step(c, "record the program from its start: ada record PROGRAM (ada runs an "
		             "aarch64 program under qemu-aarch64 itself, docs/arm64.md)");
		return false;
	}
	diag_set(c, ADA_DIAG_OK, false, "'%s' is a 64-bit ELF program for " DIAG_ARCH, shown);
	return true;
}

static void diag_static(const char *shown, const struct diag_elf *d, const struct ada_diag_opts *o,
                        struct ada_diag_report *rep)
{
	struct ada_diag_check *c = diag_add(rep, "static", "dynamically linked");
	if (!c)
		return;
	if (d->interp) {
		diag_set(c, ADA_DIAG_OK, false, "'%s' is dynamically linked: the agent can be %s",
		         shown, o->attach ? "loaded into it with dlopen" : "preloaded");
		return;
	}
	if (!o->agent) {
		diag_set(c, ADA_DIAG_OK, false,
		         "'%s' is statically linked; without the agent it records only what it "
		         "writes through the producer API it links",
		         shown);
		return;
	}
	diag_set(c, ADA_DIAG_FAIL, false,
	         "'%s' is statically linked, so neither LD_PRELOAD nor dlopen injection can load "
	         "the agent into it (it has no dynamic loader)",
	         shown);
	diag_step(c, "rebuild it dynamically linked (without -static)");
	diag_step(c, "or link it with the producer API (ada_producer) and record it with "
	             "--no-agent");
}

/* setuid/setgid bits and file capabilities: the loader's secure mode. */
static void diag_secure(const char *shown, const char *open_path, const struct stat *st,
                        const struct ada_diag_opts *o, struct ada_diag_report *rep)
{
	struct ada_diag_check *c =
	    diag_add(rep, "setuid", "not setuid, setgid or with capabilities");
	if (!c)
		return;
	bool suid = st->st_mode & (S_ISUID | S_ISGID);
	bool caps = getxattr(open_path, "security.capability", NULL, 0) > 0;
	const char *what = suid && caps ? "setuid/setgid and has file capabilities"
	                   : suid       ? "setuid/setgid"
	                                : "has file capabilities";
	if (!suid && !caps) {
		diag_set(c, ADA_DIAG_OK, false,
		         "'%s' is neither setuid/setgid nor has file capabilities", shown);
	} else if (o->attach) {
		/* The process's own credentials decide (the ptrace checks). */
		diag_set(c, ADA_DIAG_WARN, false,
		         "'%s' is %s: unless the process dropped its privileges, only root may "
		         "trace it (see the ptrace checks)",
		         shown, what);
		diag_step(c, "if the ptrace checks fail, run ada attach as root");
	} else if (o->agent) {
		diag_set(c, ADA_DIAG_FAIL, true,
		         "'%s' is %s, and the loader ignores LD_PRELOAD for such programs, so the "
		         "agent cannot be preloaded",
		         shown, what);
		diag_step(c,
		          "record a copy of it, which has neither (cp '%s' /tmp/copy), run by "
		          "the user whose rights it needs",
		          shown);
	} else {
		diag_set(c, ADA_DIAG_OK, false, "'%s' is %s (no agent is preloaded)", shown, what);
	}
}

void diag_program(const struct ada_diag_opts *o, const char *path, struct ada_diag_report *rep)
{
	char exe[64];
	const char *open_path = path;
	if (rep->pid) { /* the process's executable, even when its file was replaced */
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)rep->pid);
		open_path = exe;
	}
	struct stat st;
	int err = stat(open_path, &st) < 0 ? -errno : 0;
	if (!diag_path(path, open_path, &st, err, rep))
		return;
	int fd = open(open_path, O_RDONLY | O_CLOEXEC);
	struct diag_elf d = {0};
	if (fd >= 0) {
		diag_elf_read(fd, &d);
		close(fd);
	}
	if (!diag_elf_kind(path, &d, o->attach, o->emulated, rep))
		return;
	diag_static(path, &d, o, rep);
	diag_secure(path, open_path, &st, o, rep);
}
