#include <stdarg.h>
#include <stdio.h>

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
