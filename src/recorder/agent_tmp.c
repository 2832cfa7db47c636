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
 * pid_N/ is the target's to fill: the sweep reads at most
 * ADA_FS_WALK_MAX_ENTRIES entries (getdents into a buffer on the stack),
 * and says when it stopped there, and how many entries of the agent's
 * pattern it left because they were no regular file.
 * Threads: the drain's, when it finishes a process.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
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

/* name under fd removed when it is a regular file: 1 then, 0 when it
 * was no regular file (planted: left), -1 when it could not be removed. */
static int agent_tmp_unlink(int fd, const char *name)
{
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -1;
	if (!S_ISREG(st.st_mode))
		return 0;
	return unlinkat(fd, name, 0) == 0 ? 1 : -1;
}

void wal_agent_tmp_sweep_dir(int fd, unsigned max, struct wal_agent_tmp_sweep *s)
{
	struct ada_fs_dirents d;
	const struct dirent64 *de;
	unsigned seen = 0;

	memset(s, 0, sizeof(*s));
	ada_fs_dirents_init(&d, fd);
	while ((de = ada_fs_dirents_next(&d))) {
		if (seen++ == max) { /* the rest is not looked at */
			s->capped = true;
			break;
		}
		if (!agent_tmp_is_name(de->d_name))
			continue;
		int k = agent_tmp_unlink(fd, de->d_name);
		s->removed += k == 1;
		s->planted += k == 0;
	}
}

/* What the sweep left, said in p's warnings (one sentence each). */
static void agent_tmp_say(struct ada_recorder *r, struct wal_proc *p,
                          const struct wal_agent_tmp_sweep *s)
{
	if (s->removed)
		wal_note(r, p,
		         "pid %d: ended while its agent wrote agent.json: %u unfinished "
		         "temporar%s removed; its agent.json is the one written before",
		         (int)p->pid, s->removed, s->removed == 1 ? "y" : "ies");
	if (s->planted)
		wal_note(r, p,
		         "pid %d: %u entr%s of its directory named as the agent's agent.json "
		         "temporaries %s no regular file (a link or directory put there): left",
		         (int)p->pid, s->planted, s->planted == 1 ? "y" : "ies",
		         s->planted == 1 ? "is" : "are");
	if (s->capped)
		wal_note(r, p,
		         "pid %d: its directory holds more than %u entries: the sweep for the "
		         "agent's unfinished agent.json temporaries stopped there, and any past "
		         "them are left",
		         (int)p->pid, ADA_FS_WALK_MAX_ENTRIES);
}

unsigned wal_agent_tmp_sweep(struct ada_recorder *r, struct wal_proc *p)
{
	/* A descriptor of its own: the listing must start at the beginning
	 * whatever p->dir_fd's offset. */
	int fd = p->dir_fd < 0 ? -1 : openat(p->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct wal_agent_tmp_sweep s;
	if (fd < 0)
		return 0;
	wal_agent_tmp_sweep_dir(fd, ADA_FS_WALK_MAX_ENTRIES, &s);
	close(fd);
	agent_tmp_say(r, p, &s);
	return s.removed;
}
