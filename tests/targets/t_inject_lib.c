/* Loaded into a running t_attach by the inject test (dlopen in the
 * target): its constructor must have run before t_inject_probe answers. */
static int loaded;

__attribute__((constructor)) static void t_inject_init(void)
{
	loaded = 1;
}

int t_inject_probe(int x)
{
	return loaded ? 3 * x + 1 : -1;
}
