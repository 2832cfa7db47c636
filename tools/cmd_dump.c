/* Placeholder until the dump command lands. */
#include "cmd.h"

int cmd_dump(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ada_log("'dump' is not implemented yet");
	return 2;
}
