/*
 * Where a stripped image's debug file may be (fs.h, "debug files"): the
 * paths gdb and elfutils look at, computed once for the agent
 * (src/hook/symbols.c, at start) and the readers (src/atf/symbols_debug.c,
 * `ada` after a recording). Pure string work: nothing is opened here, so
 * each caller keeps its own ELF reading and its own build-id check.
 * Threads: any; no state.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs.h"

int ada_fs_debug_build_id_path(const char *root, const char *hex, char *out, size_t cap)
{
	size_t n = hex ? strlen(hex) : 0;
	if (n < 4 || n > 2 * ADA_FS_BUILD_ID_MAX || strspn(hex, "0123456789abcdef") != n)
		return -ENOENT;
	int w = snprintf(out, cap, "%s/.build-id/%.2s/%s.debug", root, hex, hex + 2);
	return w > 0 && (size_t)w < cap ? 0 : -ENAMETOOLONG;
}

bool ada_fs_debuglink_name(const void *buf, size_t size, char *name, size_t cap)
{
	size_t len = buf ? strnlen(buf, size) : 0;
	if (len == 0 || len == size || len >= cap || memchr(buf, '/', len))
		return false;
	memcpy(name, buf, len + 1);
	return true;
}

int ada_fs_debuglink_path(const char *root, const char *image, const char *name, unsigned i,
                          char *out, size_t cap)
{
	static const char *const fmt[ADA_FS_DEBUGLINK_PLACES] = {"%s%.*s/%s", "%s%.*s/.debug/%s",
	                                                         "%s%.*s/%s"};
	const char *slash = strrchr(image, '/');
	if (!slash || i >= ADA_FS_DEBUGLINK_PLACES)
		return -ENOENT;
	int w = snprintf(out, cap, fmt[i], i == 2 ? root : "", (int)(slash - image), image, name);
	if (w <= 0 || (size_t)w >= cap)
		return -ENAMETOOLONG;
	return strcmp(out, image) ? 0 : -ENOENT;
}
