/* Placeholder until the recover command lands. */
#include "cmd.h"

int cmd_recover(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ada_log("'recover' is not implemented yet");
	return 2;
}
