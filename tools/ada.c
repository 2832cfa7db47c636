/*
 * ada: the command. Dispatches `ada <command> ...` to tools/cmd_<command>.c.
 * Each command returns its exit status; errors are one plain sentence on
 * stderr, printed through ada_log().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const struct ada_command commands[] = {
    {"record", "record a program: ada record [options] -- PROGRAM [ARGS...]", cmd_record},
    {"validate", "check ATF files: ada validate DIR", cmd_validate},
    {"dump", "print events: ada dump DIR [--format text|jsonl] [--thread N] [--merge]", cmd_dump},
    {"recover", "finalize a session whose recorder died: ada recover DIR | --all", cmd_recover},
    {"status",
     "live metrics of a recording (or the summary of a finished one): ada status PID|DIR "
     "[--json] [--watch]",
     cmd_status},
    {"report", "per-function calls and times: ada report DIR [--sort COL] [--threads] [--json]",
     cmd_report},
    {"export",
     "Chrome trace-event JSON (Perfetto, speedscope): ada export DIR --format chrome -o FILE",
     cmd_export},
    {"flame", "flame graph: ada flame DIR -o FILE.svg, or --folded", cmd_flame},
    {"ls", "the recorded sessions, newest first: ada ls [DIR]", cmd_ls},
    {"crash", "the stacks of a process that died of a signal: ada crash DIR [--json]", cmd_crash},
    {"graph", "callers and callees of a function: ada graph DIR FUNCTION [--json]", cmd_graph},
    {"windows", "the trigger windows of a recording: ada windows DIR|PID [--json]", cmd_windows},
    {"serve", "a control daemon (JSON-RPC: spawn, attach, diagnose …): ada serve", cmd_serve},
    {"attach", "record a running process, then detach: ada attach PID [options]", cmd_attach},
    {"diagnose", "can ada record PATH or attach to PID here? ada diagnose PATH|PID [--json]",
     cmd_diagnose},
    {"arm", "add a trigger to a running recording: ada arm PID|DIR --trigger SPEC", cmd_arm},
    {"disarm", "remove triggers: ada disarm PID|DIR (--trigger SPEC | --all)", cmd_disarm},
    {"trigger", "fire the manual trigger now: ada trigger PID|DIR [--note TEXT]", cmd_trigger},
    {"keysym",
     "replace the key symbols: ada keysym PID|DIR (--symbols G,.. | --file F | --blob ID=F)",
     cmd_keysym},
};

/* The commands that first recover the arenas of recordings whose recorder
 * was killed (cmd_orphans.c): those a user runs when something is amiss
 * or before recording again. */
static bool ada_recovers_orphans(const char *name)
{
	return !strcmp(name, "record") || !strcmp(name, "attach") || !strcmp(name, "ls") ||
	       !strcmp(name, "status");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ada <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n`ada <command> --help` tells more.\n\n"
	           "record, attach, ls and status first recover the shared memory of recordings\n"
	           "whose recorder was killed, into their sessions; `ada --no-recover-orphans\n"
	           "<command>` or ADA_NO_RECOVER_ORPHANS=1 turns that off.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--no-recover-orphans") && argc > 2) {
		/* The environment carries it to the recorder's owner record. */
		setenv("ADA_NO_RECOVER_ORPHANS", "1", 1);
		argc--;
		argv++;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		bool help = argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"));
		if (ada_recovers_orphans(argv[1]) && !help)
			cmd_orphans_on_start();
		return commands[i].run(argc - 1, argv + 1);
	}
	ada_log("unknown command '%s'; run `ada --help` for the list", argv[1]);
	return 2;
}
