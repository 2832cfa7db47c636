/* The ada command's shared helpers: its one log function and opening a
 * trace tree for the reading commands. */
#define _GNU_SOURCE /* vasprintf */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf.h"
#include "cmd.h"
#include "fs.h"
#include "manifest.h"

/* The sentence's control characters (C0 but newline and tab, DEL, C1 as
 * UTF-8) as '?': what it quotes -- paths under a session, names, a
 * manifest's words -- may be a hostile user's, meant for root's terminal. */
static void log_mask(char *s)
{
	char *o = s;
	for (const unsigned char *i = (const unsigned char *)s; *i; o++) {
		bool c1 = i[0] == 0xc2 && i[1] >= 0x80 && i[1] <= 0x9f;
		bool c0 = (*i < 0x20 && *i != '\n' && *i != '\t') || *i == 0x7f;
		*o = c1 || c0 ? '?' : (char)*i;
		i += c1 ? 2 : 1;
	}
	*o = '\0';
}

void ada_log(const char *fmt, ...)
{
	va_list ap;
	char *text = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		text = NULL;
	if (text)
		log_mask(text);
	fprintf(stderr, "ada: %s\n", text ? text : fmt); /* out of memory: the bare format */
	free(text);
}

static int cmd_count_line(json_t *line, void *arg)
{
	(void)line;
	(void)arg;
	return 0;
}

/* The processes of the session dir the disk budget retired (retired.jsonl,
 * docs/manifest.md): nothing of them is left to read; said once. */
static int cmd_say_retired(const char *dir)
{
	int n = ada_retired_foreach(dir, cmd_count_line, NULL, NULL);
	if (n > 0)
		ada_log(
		    "%s: the disk budget deleted every event of %d more process%s, retired (one "
		    "line each in %s: what each recorded and how it ended)",
		    dir, n, n == 1 ? "" : "es", ADA_RETIRED_NAME);
	return n;
}

void cmd_session_root(const char *dir)
{
	/* Not a directory, or gone: it is opened (and said) as before. */
	(void)ada_fs_root_add(dir);
}

struct ada_atf_tree *cmd_open_tree(const char *dir)
{
	struct ada_atf_tree *tree = NULL;
	cmd_session_root(dir);
	int retired = cmd_say_retired(dir);
	int err = ada_atf_tree_scan(dir, &tree);
	if (err) {
		ada_log("%s: %s", dir,
		        err == -ENOTDIR ? "not a directory (give a pid_N directory or one above it)"
		                        : strerror(-err));
		return NULL;
	}
	if (tree->links_skipped)
		ada_log("%s: skipped %zu symbolic link%s in the trace tree (ada never follows a "
		        "link it did not create)",
		        dir, tree->links_skipped, tree->links_skipped == 1 ? "" : "s");
	if (tree->npids == 0 && retired > 0) {
		/* Read as a session whose processes have no events left. */
		ada_log("%s: no traces left: the disk budget retired every process", dir);
		return tree;
	}
	if (tree->npids == 0) {
		ada_log("%s: no traces found (no pid_N directory at or under it)", dir);
		ada_atf_tree_free(tree);
		return NULL;
	}
	return tree;
}
