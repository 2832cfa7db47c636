/*
 * ada trigger PID|DIR [--note TEXT]
 *
 * Fires `manual` now in a running recording (the `trigger` method), as
 * SIGUSR2 to `ada record` does, with an optional note that the window's
 * record in the manifest keeps. A recording started without
 * `--trigger manual` gets one armed first (the line says so).
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "trigger.h"

static void trigger_usage(FILE *f)
{
	fprintf(f,
	        "usage: ada trigger PID|DIR [--note TEXT]\n"
	        "\n"
	        "Fires the manual trigger of the running recording of PID or DIR now; the\n"
	        "window it opens keeps TEXT (at most %d bytes) in the manifest.\n",
	        ADA_TRIGGER_NOTE_MAX - 1);
}

static int trigger_parse(int argc, char **argv, json_t *params)
{
	static const struct option opts[] = {
	    {"note", required_argument, 0, 'n'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h' || c == '?') {
			trigger_usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 1 : -1;
		}
		if (strlen(optarg) >= ADA_TRIGGER_NOTE_MAX) {
			ada_log("--note takes at most %d bytes, not %zu", ADA_TRIGGER_NOTE_MAX - 1,
			        strlen(optarg));
			return -1;
		}
		json_t *s = json_string(optarg);
		if (!s) {
			ada_log("--note must be UTF-8 text");
			return -1;
		}
		json_object_set_new(params, "note", s);
	}
	if (optind != argc - 1) {
		ada_log("ada trigger needs one PID or DIR: ada trigger PID [--note TEXT]");
		return -1;
	}
	return 0;
}

int cmd_trigger(int argc, char **argv)
{
	json_t *res;
	int rc = cmd_ctl_command(argc, argv, "trigger", trigger_parse, &res);
	if (!res)
		return rc;
	printf("fired manual at %lld ns%s\n",
	       (long long)json_integer_value(json_object_get(res, "fired_ns")),
	       json_is_true(json_object_get(res, "armed_manual"))
	           ? " (armed the manual trigger first: the recording had none)"
	           : "");
	json_decref(res);
	return 0;
}
