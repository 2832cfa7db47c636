/*
 * ada disarm PID|DIR (--trigger SPEC | --all)
 *
 * Removes armed triggers from a running recording (the `disarm` method):
 * every one armed as SPEC, or all of them. Removing nothing is a failure
 * (one sentence, exit 1): the user meant a trigger that is not armed.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

static void disarm_usage(FILE *f)
{
	fprintf(f, "usage: ada disarm PID|DIR (--trigger SPEC | --all)\n"
	           "\n"
	           "Removes the triggers armed as SPEC (as `ada record --trigger` or `ada arm`\n"
	           "gave it), or every trigger, from the running recording of PID or DIR.\n");
}

/* The --trigger SPEC given (argv's), for the sentence when none matched. */
static const char *disarm_spec;

static int disarm_parse(int argc, char **argv, json_t *params)
{
	static const struct option opts[] = {{"trigger", required_argument, 0, 't'},
	                                     {"all", no_argument, 0, 'a'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	int c, given = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			disarm_usage(stdout);
			return 1;
		}
		if (c == '?') {
			disarm_usage(stderr);
			return -1;
		}
		given++;
		disarm_spec = c == 't' ? optarg : NULL;
		json_object_set_new(params, c == 't' ? "trigger" : "all",
		                    c == 't' ? json_string(optarg) : json_true());
	}
	if (optind != argc - 1 || given != 1) {
		ada_log("ada disarm needs a PID or DIR and one of --trigger SPEC or --all");
		return -1;
	}
	return 0;
}

int cmd_disarm(int argc, char **argv)
{
	json_t *res;
	int rc = cmd_ctl_command(argc, argv, "disarm", disarm_parse, &res);
	if (!res)
		return rc;
	json_int_t n = json_integer_value(json_object_get(res, "removed"));
	json_decref(res);
	if (n == 0) {
		if (disarm_spec && disarm_spec[0])
			ada_log(
			    "no trigger '%s' is armed in this recording; `ada status` counts what "
			    "is",
			    disarm_spec);
		else
			ada_log("no trigger is armed in this recording");
		return 1;
	}
	printf("disarmed %lld trigger%s\n", (long long)n, n == 1 ? "" : "s");
	return 0;
}
