/* Placeholder until the record command lands. */
#include "cmd.h"

int cmd_record(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ada_log("'record' is not implemented yet");
	return 2;
}
