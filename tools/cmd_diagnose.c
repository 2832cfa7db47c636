/*
 * ada diagnose PATH|PID [--json] [--out DIR]
 * ada diagnose PATH --functions [--json]
 *
 * Can ada record this program, or attach to this process, here? Runs the
 * checks of src/diag (the program file, the process and its ptrace
 * permission, the machine) and prints each with ok/warn/fail and, for a
 * warning or a failure, what to do in order. A PATH is a program to
 * `ada record`; a number that is not an existing file is a pid to
 * `ada attach`. Exit status: 0 when nothing failed, 1 when a check
 * failed, 2 for bad usage. Nothing is changed, nothing is created.
 * With --functions: which functions of the file PATH a recording would
 * leave unhooked, and why (diagnose_functions.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "diag.h"

static void diagnose_usage(FILE *f)
{
	fprintf(f, "usage: ada diagnose PATH|PID [--json] [--out DIR]\n"
	           "       ada diagnose PATH --functions [--json]\n"
	           "\n"
	           "Checks whether ada can record the program PATH (ada record) or attach to the\n"
	           "process PID (ada attach) on this machine, and says what to do when not.\n"
	           "  --json      the same report as one JSON object on stdout\n"
	           "  --out DIR   the --out directory whose free space is checked\n"
	           "              (default ./ada_traces)\n"
	           "  --functions every function of the program or library PATH that a\n"
	           "              recording would leave unhooked, and why (nothing is run)\n"
	           "Exit status: 0 when no check failed, 1 when one did.\n");
}

/* A pid: all digits, and no file of that name here. */
static pid_t diagnose_pid_of(const char *s)
{
	struct stat st;
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9 || stat(s, &st) == 0)
		return 0;
	return (pid_t)atoi(s);
}

static void diagnose_print(const struct ada_diag_report *rep)
{
	if (rep->pid)
		printf("ada diagnose: pid %d (%s)\n", (int)rep->pid, rep->target);
	else
		printf("ada diagnose: %s\n", rep->target);
	for (size_t i = 0; i < rep->n; i++) {
		const struct ada_diag_check *c = &rep->checks[i];
		static const char *const tag[] = {"ok  ", "WARN", "FAIL"};
		printf("  %s  %-9s %s\n", tag[c->status], c->id, c->message);
		if (c->status == ADA_DIAG_OK)
			continue;
		printf("        %s\n", c->fixable  ? "you can fix this; what to do, in order:"
		                       : c->nsteps ? "not something you can fix here; what remains:"
		                                   : "not something you can fix here");
		for (size_t s = 0; s < c->nsteps; s++)
			printf("          %zu. %s\n", s + 1, c->steps[s]);
	}
	size_t failed = ada_diag_count(rep, ADA_DIAG_FAIL),
	       warned = ada_diag_count(rep, ADA_DIAG_WARN);
	if (failed)
		printf("%zu check%s failed, %zu warning%s: ada cannot %s\n", failed,
		       failed == 1 ? "" : "s", warned, warned == 1 ? "" : "s",
		       rep->pid ? "attach to this process" : "record this program");
	else
		printf("no check failed (%zu warning%s): ada can %s\n", warned,
		       warned == 1 ? "" : "s",
		       rep->pid ? "attach to this process" : "record this program");
}

int cmd_diagnose(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, 0, 'j'},
	                                     {"out", required_argument, 0, 'o'},
	                                     {"functions", no_argument, 0, 'f'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	bool json = false, functions = false;
	const char *out = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'o')
			out = optarg;
		else if (c == 'f')
			functions = true;
		else {
			diagnose_usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc - 1) {
		ada_log("give one program path or pid: ada diagnose PATH|PID [--json]");
		return 2;
	}
	const char *arg = argv[optind];
	if (functions)
		return diagnose_functions(arg, json);
	pid_t pid = diagnose_pid_of(arg);
	struct ada_diag_opts o = {
	    .groups = ADA_DIAG_PROGRAM | ADA_DIAG_HOST | (pid ? ADA_DIAG_PROCESS : 0),
	    .path = pid ? NULL : arg,
	    .pid = pid,
	    .out_dir = out,
	    .agent = true,
	    .attach = pid != 0,
	};
	struct ada_diag_report *rep = malloc(sizeof(*rep));
	if (!rep || ada_diag_run(&o, rep) < 0) {
		ada_log("cannot run the checks: %s", strerror(ENOMEM));
		free(rep);
		return 2;
	}
	if (json) {
		json_t *j = ada_diag_json(rep);
		if (!j || json_dumpf(j, stdout, JSON_INDENT(2)) < 0) {
			ada_log("cannot write the report: %s", strerror(ENOMEM));
			json_decref(j);
			free(rep);
			return 2;
		}
		putchar('\n');
		json_decref(j);
	} else {
		diagnose_print(rep);
	}
	int rc = ada_diag_first_fail(rep) ? 1 : 0;
	free(rep);
	return rc;
}
