/* Placeholder until the validate command lands. */
#include "cmd.h"

int cmd_validate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ada_log("'validate' is not implemented yet");
	return 2;
}
