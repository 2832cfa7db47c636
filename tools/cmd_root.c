/*
 * What `ada` refuses when it runs as root: a place another user owns or
 * can write, where they could have planted a link that makes root
 * overwrite any file (DESIGN.md decision 9). Record checks --out and the
 * agent's plan cache (HOME/XDG_CACHE_HOME, which `sudo -E` passes from the
 * user); recover checks the session. Each refusal is one sentence saying
 * why and what to do. Not root: nothing is checked here (a user's own
 * files are theirs; the link-proof creation in src/fs still applies).
 * Also where that plan cache lives (cmd_plan_cache_dir), which ada passes
 * the agent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "fs.h"

/* 0, or -1 after saying why path (for what) is refused and fix. */
static int root_check(const char *what, const char *path, const char *fix)
{
	char why[PATH_MAX] = "";
	int err = ada_fs_place_trusted(path, 0, why, sizeof(why));
	if (err == -EPERM) {
		ada_log("refusing to write %s '%s' as root: '%s' is owned or writable by another "
		        "user, who could plant a link there to make root overwrite any file; %s",
		        what, path, why, fix);
		return -1;
	}
	if (err < 0 && err != -ENOENT) {
		ada_log("refusing to write %s '%s' as root: it cannot be checked (%s); %s", what,
		        path, strerror(-err), fix);
		return -1;
	}
	return 0;
}

const char *cmd_plan_cache_dir(char *buf, size_t cap)
{
	return ada_fs_cache_dir("plans", buf, cap) == 0 ? buf : NULL;
}

int cmd_root_check_record(const char *out, bool agent)
{
	char cache[PATH_MAX];
	if (geteuid() != 0)
		return 0;
	if (root_check("the session under", out,
	               "choose an --out directory only root can write, e.g. /root/ada_traces"))
		return -1;
	if (agent && cmd_plan_cache_dir(cache, sizeof(cache)) &&
	    root_check("the plan cache under", cache,
	               "run sudo with -H (not -E), or set XDG_CACHE_HOME to a directory only "
	               "root can write"))
		return -1;
	return 0;
}

/* The session and the directories ada recover writes in (pid_N,
 * thread_K): each root's and not writable by others. Links are not
 * followed (recover skips them), so they are not judged here. */
static int root_check_tree(const char *dir, int depth)
{
	if (root_check("into the session", dir,
	               "recover it as the user who owns it, or make it root's first "
	               "(chown -R root, chmod -R go-w)"))
		return -1;
	DIR *d = depth > 0 ? ada_fs_opendir(AT_FDCWD, dir) : NULL;
	if (!d)
		return 0;
	struct dirent *de;
	int rc = 0;
	for (unsigned i = 0; !rc && i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		char sub[PATH_MAX];
		if (ada_fs_entry_kind(dirfd(d), de) != ADA_FS_DIR ||
		    snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub))
			continue;
		rc = root_check_tree(sub, depth - 1);
	}
	closedir(d);
	return rc;
}

int cmd_root_check_recover(const char *dir)
{
	/* session/pid_N/thread_K: two levels below the one named. */
	return geteuid() == 0 ? root_check_tree(dir, 2) : 0;
}
