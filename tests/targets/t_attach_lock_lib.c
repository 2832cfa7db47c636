/*
 * The library tests/targets/t_attach_lock.c loads: its constructor waits
 * on the pipe named by T_LOCK_FD, so the thread that dlopens it holds the
 * dynamic loader's lock until the program writes a byte there.
 */
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void lock_lib_init(void)
{
	const char *fd = getenv("T_LOCK_FD");
	char c;
	if (fd && read(atoi(fd), &c, 1) != 1)
		_exit(3);
}

int lock_lib_value(void)
{
	return 42;
}
