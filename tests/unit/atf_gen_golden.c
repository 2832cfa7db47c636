/* Writes the golden session: atf_gen_golden DIR (tests/data/golden). */
#include <stdio.h>
#include <string.h>

#include "atf_golden.h"

int main(int argc, char **argv)
{
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: atf_gen_golden DIR\n");
		return 2;
	}
	err = golden_write(argv[1]);
	if (err) {
		fprintf(stderr, "atf_gen_golden: %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	return 0;
}
