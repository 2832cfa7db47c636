/* The ada command's shared helpers: its one log function and opening a
 * trace tree for the reading commands. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "atf.h"
#include "cmd.h"

void ada_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ada: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

struct ada_atf_tree *cmd_open_tree(const char *dir)
{
	struct ada_atf_tree *tree = NULL;
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
	if (tree->npids == 0) {
		ada_log("%s: no traces found (no pid_N directory at or under it)", dir);
		ada_atf_tree_free(tree);
		return NULL;
	}
	return tree;
}
