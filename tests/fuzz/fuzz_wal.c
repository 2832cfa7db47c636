/*
 * libFuzzer target for the src/wal and src/clock parsers: the /proc/cpuinfo flag parser
 * (buf, len), the --flush policy text, and the recovery scan of an
 * unfinished index file (ada_wal_finalize_path on a memfd holding the
 * input). The first byte selects the parser. After a successful recovery
 * the file must be a consistent finalized index file.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "wal.h"

static void fuzz_recover(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_wal", 0);
	if (fd < 0)
		return;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct ada_wal_file_summary s;
	if (ada_wal_finalize_path(path, NULL, 0, &s) == 0) {
		struct stat st;
		if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != s.bytes ||
		    s.bytes != 128 + s.events * 32)
			abort(); /* a "recovered" file that is not consistent */
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t sel = data[0];
	data++;
	size--;
	if (sel % 3 == 0) {
		(void)ada_tsc_invariant_from_cpuinfo((const char *)data, size);
	} else if (sel % 3 == 1) {
		char *s = strndup((const char *)data, size);
		struct ada_flush_policy p = {0};
		if (s)
			(void)ada_flush_parse(s, &p);
		free(s);
	} else {
		fuzz_recover(data, size);
	}
	return 0;
}
