/* The hand-built golden session (tests/data/golden) and its generator. */
#ifndef ADA_TEST_ATF_GOLDEN_H
#define ADA_TEST_ATF_GOLDEN_H

#define GOLDEN_PID 4242
#define GOLDEN_PID_DIR "pid_4242"

/* Writes root/pid_4242/{manifest.json, thread_0/{index,detail}.atf,
 * thread_1/index.atf, modules/module_1.syms}. Returns 0 or -errno. */
int golden_write(const char *root);

/* Relative paths of every golden file, NULL-terminated. */
extern const char *const golden_files[];

#endif
