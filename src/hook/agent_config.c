/*
 * Agent options (ADA_HOOK_CONFIG) and the default exclude list
 * (not hook context; read once by the init thread, then read-only).
 *
 * The default exclude list is the one place naming libc/libgcc functions
 * that cannot be traced by return-address replacement; docs/hooks.md
 * repeats it with the same reasons.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "atf_format.h"
#include "hook.h"

struct config_default {
	const char *glob;
	size_t len; /* strlen(glob): compared before any byte */
	const char *why;
};

/* A default's glob and its length. */
#define CONFIG_GLOB(g) g, sizeof(g) - 1

static const struct config_default config_defaults[] = {
    {CONFIG_GLOB("*.cold*"), "a cold block split off a function by gcc: entered by jmp, not call"},
    {CONFIG_GLOB("setjmp"),
     "saves its own return address: a later longjmp would land in the return trampoline"},
    {CONFIG_GLOB("_setjmp"), "as setjmp"},
    {CONFIG_GLOB("__sigsetjmp"), "as setjmp (sigsetjmp's real name)"},
    {CONFIG_GLOB("sigsetjmp"), "as setjmp"},
    {CONFIG_GLOB("getcontext"), "saves its return address in the ucontext"},
    {CONFIG_GLOB("swapcontext"), "saves its return address and returns on another stack"},
    {CONFIG_GLOB("__start_context"),
     "entered by the ret of a makecontext function, not by a call: the "
     "word at rsp is its uc_link, not a return address"},
    {CONFIG_GLOB("vfork"), "returns twice on one stack shared by parent and child"},
    {CONFIG_GLOB("__vfork"), "as vfork"},
    {CONFIG_GLOB("clone"), "the child returns on another stack with the parent's TLS"},
    {CONFIG_GLOB("__clone"), "as clone"},
    {CONFIG_GLOB("clone3"), "as clone"},
    {CONFIG_GLOB("__clone3"), "as clone"},
    {CONFIG_GLOB("__clone_internal"), "as clone"},
    {CONFIG_GLOB("_Unwind_*"),
     "the unwinder reads its own return address to find its caller's frame"},
    {CONFIG_GLOB("__tls_get_addr"), "TLS resolution; called from the handlers' own TLS accesses"},
    {CONFIG_GLOB("__libc_start_main"), "never returns; runs before the agent could be ready"},
    {CONFIG_GLOB("__libc_start_call_main"), "never returns"},
    /* V8 (node): generated code calls these and reads their return
     * address back as the exit frame's pc, to find the code object that
     * called (stack traces, GC): the return trampoline is no code V8 knows
     * (node 20 died in "Check failed: maybe_code.has_value()" on the
     * first `new Error`). Their callees are traced. */
    {CONFIG_GLOB("*EiPmPNS0_7IsolateE*"),
     "V8's runtime functions and C++ builtins (v8::internal::Runtime_*, "
     "Builtin_*(int, Address*, Isolate*)): V8 reads their return address"},
    {CONFIG_GLOB("*FunctionCallbackInfo*"), "V8 API callbacks: V8 reads their return address"},
    {CONFIG_GLOB("*PropertyCallbackInfo*"),
     "V8 accessor and interceptor callbacks: as FunctionCallbackInfo"},
};

static void config_free_list(char **v, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free(v[i]);
	*n = 0;
}

void ada_hook_config_fini(struct ada_hook_config *cfg)
{
	if (!cfg)
		return;
	config_free_list(cfg->mod_exclude, &cfg->n_mod_exclude);
	config_free_list(cfg->mod_include, &cfg->n_mod_include);
	config_free_list(cfg->sym_exclude, &cfg->n_sym_exclude);
	config_free_list(cfg->sym_include, &cfg->n_sym_include);
	config_free_list(cfg->detail_sym, &cfg->n_detail_sym);
	config_free_list(cfg->key_sym, &cfg->n_key_sym);
	config_free_list(cfg->count_only, &cfg->n_count_only);
}

/* Appends each ','-separated glob of (v, len) to list. */
static int config_add_globs(const char *v, size_t len, char **list, size_t *n)
{
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && v[j] != ',')
			j++;
		if (j > i) {
			if (*n >= ADA_HOOK_MAX_GLOBS)
				return -E2BIG;
			list[*n] = strndup(v + i, j - i);
			if (!list[*n])
				return -ENOMEM;
			(*n)++;
		}
		i = j + 1;
	}
	return 0;
}

static int config_bool(const char *v, size_t len, bool *out)
{
	if (len == 1 && (v[0] == '0' || v[0] == '1')) {
		*out = v[0] == '1';
		return 0;
	}
	return -EINVAL;
}

/* 0..ATF_DETAIL_STACK_MAX, decimal. */
static int config_stack_bytes(const char *v, size_t len, uint32_t *out)
{
	uint32_t n = 0;
	if (len == 0 || len > 3)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		n = n * 10 + (uint32_t)(v[i] - '0');
	}
	if (n > ATF_DETAIL_STACK_MAX)
		return -EINVAL;
	*out = n;
	return 0;
}

/* 1..100, decimal. */
static int config_pct(const char *v, size_t len, uint32_t *out)
{
	uint32_t n = 0;
	if (len == 0 || len > 3)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		n = n * 10 + (uint32_t)(v[i] - '0');
	}
	if (n < 1 || n > 100)
		return -EINVAL;
	*out = n;
	return 0;
}

/* "1" or "2". */
static int config_threads(const char *v, size_t len, uint32_t *out)
{
	if (len != 1 || (v[0] != '1' && v[0] != '2'))
		return -EINVAL;
	*out = (uint32_t)(v[0] - '0');
	return 0;
}

static bool config_key_is(const char *k, size_t klen, const char *name)
{
	return strlen(name) == klen && memcmp(k, name, klen) == 0;
}

static int config_apply(struct ada_hook_config *cfg, const char *k, size_t klen, const char *v,
                        size_t vlen)
{
	if (config_key_is(k, klen, "exclude"))
		return config_add_globs(v, vlen, cfg->mod_exclude, &cfg->n_mod_exclude);
	if (config_key_is(k, klen, "include"))
		return config_add_globs(v, vlen, cfg->mod_include, &cfg->n_mod_include);
	if (config_key_is(k, klen, "exclude-symbol"))
		return config_add_globs(v, vlen, cfg->sym_exclude, &cfg->n_sym_exclude);
	if (config_key_is(k, klen, "include-symbol"))
		return config_add_globs(v, vlen, cfg->sym_include, &cfg->n_sym_include);
	if (config_key_is(k, klen, "follow"))
		return config_bool(v, vlen, &cfg->follow);
	if (config_key_is(k, klen, "defaults"))
		return config_bool(v, vlen, &cfg->defaults);
	if (config_key_is(k, klen, "cache"))
		return config_bool(v, vlen, &cfg->cache);
	if (config_key_is(k, klen, "shared-text"))
		return config_bool(v, vlen, &cfg->shared_text);
	if (config_key_is(k, klen, "fde"))
		return config_bool(v, vlen, &cfg->need_fde);
	if (config_key_is(k, klen, "pad"))
		return config_bool(v, vlen, &cfg->pad);
	if (config_key_is(k, klen, "detail"))
		return config_bool(v, vlen, &cfg->detail);
	if (config_key_is(k, klen, "detail-symbol"))
		return config_add_globs(v, vlen, cfg->detail_sym, &cfg->n_detail_sym);
	if (config_key_is(k, klen, "key-symbol"))
		return config_add_globs(v, vlen, cfg->key_sym, &cfg->n_key_sym);
	if (config_key_is(k, klen, "detail-fp"))
		return config_bool(v, vlen, &cfg->detail_fp);
	if (config_key_is(k, klen, "stack-bytes"))
		return config_stack_bytes(v, vlen, &cfg->stack_bytes);
	if (config_key_is(k, klen, "count-only"))
		return config_add_globs(v, vlen, cfg->count_only, &cfg->n_count_only);
	if (config_key_is(k, klen, "overhead-budget"))
		return config_pct(v, vlen, &cfg->overhead_budget);
	if (config_key_is(k, klen, "count-gs"))
		return config_bool(v, vlen, &cfg->count_gs);
	if (config_key_is(k, klen, "count-copy"))
		return config_bool(v, vlen, &cfg->count_copy);
	if (config_key_is(k, klen, "count-live"))
		return config_bool(v, vlen, &cfg->count_live);
	if (config_key_is(k, klen, "analysis-threads"))
		return config_threads(v, vlen, &cfg->analysis_threads);
	return -EINVAL;
}

int ada_hook_config_parse(const char *buf, size_t len, struct ada_hook_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->follow = true;
	cfg->defaults = true;
	cfg->cache = true;
	cfg->shared_text = true;
	cfg->need_fde = true;
	cfg->pad = true;
	cfg->count_gs = true;
	cfg->count_copy = true;
	cfg->count_live = true;
	cfg->stack_bytes = 128;
	cfg->analysis_threads = 1;
	size_t i = 0;
	while (i < len) {
		size_t j = i, eq = SIZE_MAX;
		while (j < len && buf[j] != ';') {
			if (buf[j] == '=' && eq == SIZE_MAX)
				eq = j;
			j++;
		}
		if (j > i) {
			if (eq == SIZE_MAX)
				return -EINVAL;
			int err = config_apply(cfg, buf + i, eq - i, buf + eq + 1, j - eq - 1);
			if (err)
				return err;
		}
		i = j + 1;
	}
	return 0;
}

/* Whether the n bytes at infix occur in name (name_len bytes): each place
 * its first byte occurs, compared. Not memmem, which sets up a shift
 * table on every call: with four infix defaults over every name of every
 * image (a C++ program's long names all searched), that set-up was most
 * of the verdicts' time. */
static bool config_has_infix(const char *name, size_t name_len, const char *infix, size_t n)
{
	if (n == 0)
		return true;
	const char *p = name, *last = name + (name_len - n); /* the last place it fits */
	while (p <= last && (p = memchr(p, infix[0], (size_t)(last - p) + 1)) != NULL) {
		if (!memcmp(p + 1, infix + 1, n - 1))
			return true;
		p++;
	}
	return false;
}

/* The defaults are "name", "prefix*" or "*infix*": plain compares,
 * because this runs for every symbol of every image and fnmatch would cost
 * milliseconds. name_len: strlen(name), measured once for every default.
 * An infix longer than the name cannot match: most names are shorter than
 * V8's infixes, and are not searched for them. */
static bool config_default_hit(const struct config_default *d, const char *name, size_t name_len)
{
	const char *glob = d->glob;
	size_t n = d->len;
	if (glob[0] == '*') {
		if (n < 2 || n - 2 > name_len)
			return false;
		return config_has_infix(name, name_len, glob + 1, n - 2);
	}
	if (glob[n - 1] == '*')
		return name_len >= n - 1 && memcmp(glob, name, n - 1) == 0;
	return name_len == n && memcmp(glob, name, n) == 0;
}

static bool config_match_any(char *const *globs, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++) {
		if (fnmatch(globs[i], s, 0) == 0)
			return true;
	}
	return false;
}

bool ada_hook_config_module_wanted(const struct ada_hook_config *cfg, const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	bool hit_ex = config_match_any(cfg->mod_exclude, cfg->n_mod_exclude, path) ||
	              config_match_any(cfg->mod_exclude, cfg->n_mod_exclude, base);
	if (hit_ex)
		return false;
	if (cfg->n_mod_include == 0)
		return true;
	return config_match_any(cfg->mod_include, cfg->n_mod_include, path) ||
	       config_match_any(cfg->mod_include, cfg->n_mod_include, base);
}

/* FNV-1a of a string's first 8 bytes at most: its top 8 bits pick a bit
 * of config_literal_filter. */
static uint32_t config_hash8(const char *s)
{
	uint32_t h = 2166136261u;
	for (int i = 0; i < 8 && s[i]; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h >> 24;
}

#define CONFIG_N_DEFAULTS (sizeof(config_defaults) / sizeof(config_defaults[0]))

/* The "name" and "prefix*" defaults by the hash of their first 8 bytes (a
 * name they match has the same first 8 bytes: every prefix is at least
 * that long, else the filter passes everything), and the "*infix*" ones'
 * indices: a name is compared with the literal defaults only when its bit
 * is set (most of libc's 3 700 names at each exec: one bit). */
static uint64_t config_literal_filter[4];
static uint8_t config_infix[CONFIG_N_DEFAULTS], config_n_infix;
static pthread_once_t config_defaults_once = PTHREAD_ONCE_INIT;

static void config_defaults_index(void)
{
	for (size_t i = 0; i < CONFIG_N_DEFAULTS; i++) {
		const struct config_default *d = &config_defaults[i];
		if (d->glob[0] == '*') {
			config_infix[config_n_infix++] = (uint8_t)i;
			continue;
		}
		if (d->glob[d->len - 1] == '*' && d->len - 1 < 8) {
			memset(config_literal_filter, 0xff, sizeof(config_literal_filter));
			continue;
		}
		uint32_t b = config_hash8(d->glob);
		config_literal_filter[b >> 6] |= 1ull << (b & 63);
	}
}

/* Whether a default excludes name (name_len: strlen(name)). */
static bool config_default_excluded(const char *name, size_t name_len)
{
	pthread_once(&config_defaults_once, config_defaults_index);
	for (size_t k = 0; k < config_n_infix; k++)
		if (config_default_hit(&config_defaults[config_infix[k]], name, name_len))
			return true;
	uint32_t b = config_hash8(name);
	if (!(config_literal_filter[b >> 6] & (1ull << (b & 63))))
		return false;
	for (size_t i = 0; i < CONFIG_N_DEFAULTS; i++) {
		const char *g = config_defaults[i].glob;
		if (g[0] == name[0] && config_default_hit(&config_defaults[i], name, name_len))
			return true;
	}
	return false;
}

enum ada_hook_skip ada_hook_config_symbol_verdict(const struct ada_hook_config *cfg,
                                                  const char *name)
{
	if (cfg->defaults && config_default_excluded(name, strlen(name)))
		return ADA_SKIP_EXCLUDED;
	if (config_match_any(cfg->sym_exclude, cfg->n_sym_exclude, name))
		return ADA_SKIP_EXCLUDED;
	if (cfg->n_sym_include && !config_match_any(cfg->sym_include, cfg->n_sym_include, name))
		return ADA_SKIP_EXCLUDED;
	return ADA_HOOK_OK;
}

bool ada_hook_config_count_only(const struct ada_hook_config *cfg, const char *name)
{
	return config_match_any(cfg->count_only, cfg->n_count_only, name);
}
