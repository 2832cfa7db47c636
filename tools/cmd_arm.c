/*
 * ada arm PID|DIR --trigger SPEC [--pre-roll-sec S] [--post-roll-sec S] [--pending]
 *
 * Adds a trigger to a running recording through its control socket
 * (docs/control.md): the thin client of the `arm` method. The trigger
 * fires only on events after it was armed; its pre-roll reaches back into
 * what the detail rings hold. One line of result; one sentence and a
 * non-zero exit on failure, a function glob that matches no hooked
 * function included (with the closest names) unless --pending says the
 * function is in a module not loaded yet (then armed, and said).
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "trigger.h"

static void arm_usage(FILE *f)
{
	fprintf(f, "usage: ada arm PID|DIR --trigger SPEC [--pre-roll-sec S] [--post-roll-sec S]\n"
	           "               [--pending]\n"
	           "\n"
	           "Arms SPEC (any form of `ada record --trigger`) in the running recording of\n"
	           "PID (any traced process of it, or `ada record` itself) or of the session\n"
	           "directory DIR. It fires on events after this command returns.\n"
	           "  --pre-roll-sec S   detail kept before a fire (default: the recording's)\n"
	           "  --post-roll-sec S  detail kept after a fire (default: the recording's)\n"
	           "  --pending          arm a symbol, latency or p99 trigger whose functions\n"
	           "                     are in a module not loaded yet (without it, a glob\n"
	           "                     that matches no hooked function is refused)\n");
}

/* --pre-roll-sec / --post-roll-sec into params[key] (seconds). */
static int arm_seconds(json_t *params, const char *opt, const char *key, const char *v)
{
	uint64_t ns;
	if (ada_trigger_parse_seconds(v, &ns) < 0 || ns > 3600ull * 1000000000ull) {
		ada_log(
		    "%s wants seconds between 0 and 3600 (fractions allowed, e.g. 0.5), not '%s'",
		    opt, v);
		return -1;
	}
	json_object_set_new(params, key, json_real((double)ns / 1e9));
	return 0;
}

static int arm_parse(int argc, char **argv, json_t *params)
{
	static const struct option opts[] = {{"trigger", required_argument, 0, 't'},
	                                     {"pre-roll-sec", required_argument, 0, 'p'},
	                                     {"post-roll-sec", required_argument, 0, 'q'},
	                                     {"pending", no_argument, 0, 'w'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	int c;
	char why[400];
	struct ada_trigger_spec s;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			arm_usage(stdout);
			return 1;
		}
		if (c == 't' && ada_trigger_parse(optarg, &s, why, sizeof(why)) < 0) {
			ada_log("--trigger: %s", why);
			return -1;
		}
		if (c == 'w')
			json_object_set_new(params, "pending", json_true());
		if (c == 't' && json_object_get(params, "trigger")) {
			ada_log("one --trigger per `ada arm`: run it again for another");
			return -1;
		}
		if ((c == 't' && json_object_set_new(params, "trigger", json_string(optarg)) < 0) ||
		    (c == 'p' &&
		     arm_seconds(params, "--pre-roll-sec", "pre_roll_sec", optarg) < 0) ||
		    (c == 'q' &&
		     arm_seconds(params, "--post-roll-sec", "post_roll_sec", optarg) < 0) ||
		    c == '?') {
			if (c == '?')
				arm_usage(stderr);
			return -1;
		}
	}
	if (optind != argc - 1 || !json_object_get(params, "trigger")) {
		ada_log("ada arm needs a PID or DIR and --trigger SPEC: ada arm PID --trigger "
		        "symbol=main");
		return -1;
	}
	return 0;
}

/* --pending armed a glob that matches nothing yet: said, with the
 * closest names. */
static void arm_say_pending(json_t *res)
{
	json_t *m = json_object_get(res, "matched"), *near = json_object_get(res, "near");
	if (!json_is_integer(m) || json_integer_value(m) != 0)
		return;
	char names[400];
	ada_log("%s matches no hooked function yet: it fires once a module that has one is "
	        "loaded%s",
	        json_string_value(json_object_get(res, "trigger")),
	        cmd_ctl_near_names(near, names, sizeof(names)));
}

int cmd_arm(int argc, char **argv)
{
	json_t *res;
	int rc = cmd_ctl_command(argc, argv, "arm", arm_parse, &res);
	if (!res)
		return rc;
	printf("armed %s (id %lld): pre-roll %.3g s, post-roll %.3g s, live for events after "
	       "%lld ns\n",
	       json_string_value(json_object_get(res, "trigger")),
	       (long long)json_integer_value(json_object_get(res, "id")),
	       json_number_value(json_object_get(res, "pre_roll_sec")),
	       json_number_value(json_object_get(res, "post_roll_sec")),
	       (long long)json_integer_value(json_object_get(res, "armed_ns")));
	arm_say_pending(res);
	json_decref(res);
	return 0;
}
