/*
 * The agent's unfinished agent.json temporaries in a finished process's
 * pid_N/. The agent (and its live-counts thread) writes agent.json
 * through "agent.json.tmp.<16 hex>" renamed into place (src/hook/agent.c,
 * agent_write_file; fs.h ada_fs_create_tmp); an _exit or a fatal signal
 * in the middle of that write leaves the temporary behind, which nobody
 * asked for. Once the process is gone none of its threads can still be
 * writing one, so what matches that name exactly is removed and said.
 * pid_N/ is the recorder's (p->dir_fd) but the target can write in it:
 * only regular files are removed, by unlinkat on the directory's fd (a
 * link is never followed; a link or directory planted under the name is
 * not the agent's and stays). A later process given the same pid writes
 * into this pid_N/ too, but is not recorded (drain_side_watch): its
 * temporary is no data of the recording's.
 * Threads: the drain's, when it finishes a process.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder_internal.h"

#define AGENT_TMP_PREFIX "agent.json.tmp."

/* Exactly "agent.json.tmp." and 16 lowercase hex digits (fs.c,
 * ada_fs_tmp_name). */
static bool agent_tmp_is_name(const char *n)
{
	if (strncmp(n, AGENT_TMP_PREFIX, sizeof(AGENT_TMP_PREFIX) - 1))
		return false;
	n += sizeof(AGENT_TMP_PREFIX) - 1;
	for (int i = 0; i < 16; i++)
		if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
			return false;
	return n[16] == '\0';
}

/* name under fd removed when it is a regular file; true then. */
static bool agent_tmp_unlink(int fd, const char *name)
{
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
		return false;
	return unlinkat(fd, name, 0) == 0;
}

unsigned wal_agent_tmp_sweep(struct ada_recorder *r, struct wal_proc *p)
{
	int fd = p->dir_fd < 0 ? -1 : openat(p->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	unsigned n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (agent_tmp_is_name(de->d_name))
			n += agent_tmp_unlink(fd, de->d_name);
	closedir(d);
	if (n)
		wal_note(r, p,
		         "pid %d: ended while its agent wrote agent.json: %u unfinished "
		         "temporar%s removed; its agent.json is the one written before",
		         (int)p->pid, n, n == 1 ? "y" : "ies");
	return n;
}
