/*
 * A forked child's agent.json when the child ended without writing its
 * own. At the fork a child with nothing of its own to say yet (every
 * symbol file linked, no count-only section) links its parent's
 * agent.json instead of writing one (src/hook/agent.c, agent_link_json)
 * and writes its own once, at exit; one that never gets there (killed,
 * _exit, a crash) leaves the parent's, which its "pid" gives away. Its
 * final manifest makes it the child's: what the fork left the child's
 * counts at (all zero: they restart at the fork; every symbol file
 * shared), the child's pid and "inherited_from" the pid that wrote it,
 * then writes it back as the child's pid_N/agent.json (over the link, by
 * rename: the parent's file and any other child's link to it are left
 * alone). The file is the target's: only what is checked is used.
 * Threads: the caller's (the drain, or ada recover).
 */
#include <jansson.h>
#include <string.h>

#include "fork_files.h"
#include "manifest.h"
#include "recorder_internal.h"

/* Every integer member of a's object key set to 0, every boolean to
 * false: a count section as a fresh process has it. */
static void inherit_zero(json_t *a, const char *key)
{
	json_t *o = json_object_get(a, key), *v;
	const char *k;
	json_object_foreach(o, k, v)
	{
		if (json_is_integer(v))
			json_integer_set(v, 0);
		else if (json_is_boolean(v))
			json_object_set_new(o, k, json_false());
	}
}

/* symbol_files as the child's: each loaded module's files linked. */
static void inherit_symbol_files(json_t *a)
{
	json_int_t shared = 0;
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(a, "modules"), i, m)
	{
		if (json_is_object(m) && !json_is_true(json_object_get(m, "unloaded")))
			shared++;
	}
	inherit_zero(a, "symbol_files");
	json_t *sf = json_object_get(a, "symbol_files");
	if (json_is_object(sf))
		json_object_set_new(sf, "shared", json_integer(shared));
}

bool wal_agent_inherit(json_t *a, pid_t pid)
{
	json_t *from = json_object_get(a, "pid");
	if (!json_is_integer(from) || json_integer_value(from) == (json_int_t)pid)
		return false;
	json_int_t parent = json_integer_value(from);
	json_object_set_new(a, "pid", json_integer((json_int_t)pid));
	json_object_set_new(a, "inherited_from", json_integer(parent));
	inherit_symbol_files(a);
	static const char *const counts[] = {"untraced_calls", "unmatched_returns",
	                                     "stack_switches", "recorder_gone", NULL};
	for (const char *const *k = counts; *k; k++)
		inherit_zero(a, *k);
	json_object_set_new(a, "agent_json_writes", json_integer(0));
	json_object_del(a, "hot_functions"); /* a parent's at its exit */
	/* Its parent's exit counts, folded into the file this was made from
	 * when the parent ended first (manifest.c): not the child's. */
	json_object_del(a, "exit_counts");
	/* Why the parent wrote its own files is not the child's; the
	 * recorder's word on a file it derived is (fork_files.c). */
	const char *ff = json_string_value(json_object_get(a, "fork_files"));
	if (ff && strcmp(ff, WAL_FORK_DERIVED))
		json_object_del(a, "fork_files");
	return true;
}

int wal_agent_inherit_write(int pid_dir_fd, const json_t *a)
{
	return ada_json_writeat(pid_dir_fd, "agent.json", a, false);
}
