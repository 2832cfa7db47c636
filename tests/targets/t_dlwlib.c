/*
 * Test library for t_dlwin: one function, called by the program's waiter
 * thread while the agent has just patched this library (t_dlwin.c).
 */
static volatile unsigned long dlw_sink;

__attribute__((noinline, used, visibility("default"))) unsigned long dlw_leaf(unsigned long x)
{
	dlw_sink = x;
	return x + 1;
}
