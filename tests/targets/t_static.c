/*
 * Test target linked with -static: LD_PRELOAD cannot reach it, so
 * `ada record` must refuse it with one clear sentence (bad-input test);
 * with --wait it then blocks on stdin, for `ada attach` to refuse it
 * (no dynamic loader, no dlopen) while it runs.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	puts("static binary ran");
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "--wait")) {
		char c;
		while (read(0, &c, 1) > 0)
			;
	}
	return 0;
}
