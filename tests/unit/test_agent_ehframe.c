/*
 * discover_ehframe.c on this test's own image: a compiled C function is
 * covered by an FDE, at its entry and inside; an assembly function without
 * CFI directives is not; an address outside every FDE is not; an image
 * that cannot be found answers "cannot tell" (covered). Function entries
 * (discover_fde_entry): the C function is one; a fragment whose FDE
 * starts after a push (as gcc's .cold blocks do) and a signal frame are
 * not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "discover_internal.h"

void ehf_asm_nocfi(void);
__asm__(".text\n"
        ".globl ehf_asm_nocfi\n"
        ".type ehf_asm_nocfi, @function\n"
        "ehf_asm_nocfi:\n"
        "  nop\n  nop\n  nop\n  nop\n  nop\n  nop\n  nop\n"
        "  ret\n"
        ".size ehf_asm_nocfi, .-ehf_asm_nocfi\n");

/* Never run: only their FDEs are read. */
void ehf_asm_frag(void);
void ehf_asm_sigframe(void);
__asm__(".text\n"
        ".globl ehf_asm_frag\n"
        ".type ehf_asm_frag, @function\n"
        "ehf_asm_frag:\n"
        "  .cfi_startproc\n"
        "  .cfi_def_cfa_offset 16\n"
        "  pop %rax\n  ret\n"
        "  .cfi_endproc\n"
        ".size ehf_asm_frag, .-ehf_asm_frag\n"
        ".globl ehf_asm_sigframe\n"
        ".type ehf_asm_sigframe, @function\n"
        "ehf_asm_sigframe:\n"
        "  .cfi_startproc\n"
        "  .cfi_signal_frame\n"
        "  nop\n  ret\n"
        "  .cfi_endproc\n"
        ".size ehf_asm_sigframe, .-ehf_asm_sigframe\n");

__attribute__((noinline)) int ehf_c_function(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 7 + 1;
}

struct ehf_self {
	uint64_t base, lo, hi;
};

/* The main program is the first image dl_iterate_phdr reports. */
static int ehf_self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ehf_self *s = arg;
	(void)size;
	s->base = info->dlpi_addr;
	s->lo = UINT64_MAX;
	s->hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD)
			continue;
		s->lo = a < s->lo ? a : s->lo;
		s->hi = a + ph->p_memsz > s->hi ? a + ph->p_memsz : s->hi;
	}
	return 1;
}

static void test_own_image(void **state)
{
	(void)state;
	struct ehf_self me;
	struct discover_fde_table t;
	dl_iterate_phdr(ehf_self_cb, &me);
	assert_int_equal(discover_fde_table(me.base, me.lo, me.hi, &t), 0);
	assert_true(t.n > 0);
	uint64_t c = (uint64_t)(uintptr_t)&ehf_c_function;
	assert_true(discover_fde_covers(&t, c));
	assert_true(discover_fde_covers(&t, c + 1));
	assert_false(discover_fde_covers(&t, (uint64_t)(uintptr_t)&ehf_asm_nocfi));
	assert_false(discover_fde_covers(&t, me.lo)); /* the ELF header */
	assert_int_equal(ehf_c_function(1), 8);
}

/* discover_fde_entry's answer for the table entry that starts at a;
 * -1 when no entry starts there. */
static int ehf_entry_at(const struct discover_fde_table *t, uint64_t a)
{
	for (size_t i = 0; i < t->n; i++) {
		uint64_t start = 0, len = 0;
		bool entry = discover_fde_entry(t, i, &start, &len);
		if (entry && start == a)
			return 1;
		if (!entry && start == a)
			return 0;
	}
	return -1;
}

static void test_entries(void **state)
{
	(void)state;
	struct ehf_self me;
	struct discover_fde_table t;
	dl_iterate_phdr(ehf_self_cb, &me);
	assert_int_equal(discover_fde_table(me.base, me.lo, me.hi, &t), 0);
	assert_int_equal(ehf_entry_at(&t, (uint64_t)(uintptr_t)&ehf_c_function), 1);
	assert_int_equal(ehf_entry_at(&t, (uint64_t)(uintptr_t)&ehf_asm_frag), 0);
	assert_int_equal(ehf_entry_at(&t, (uint64_t)(uintptr_t)&ehf_asm_sigframe), 0);
	assert_int_equal(ehf_entry_at(&t, (uint64_t)(uintptr_t)&ehf_asm_nocfi), -1);
	uint64_t start, len;
	bool entry = true;
	assert_false(discover_fde_entry(&t, t.n, &start, &len)); /* past the table */
	for (size_t i = 0; i < t.n; i++) /* the fragment is read, not an entry */
		if (discover_fde_at(&t, i, &start, &len, &entry) &&
		    start == (uint64_t)(uintptr_t)&ehf_asm_frag)
			break;
	assert_int_equal(start, (uint64_t)(uintptr_t)&ehf_asm_frag);
	assert_int_equal(len, 2);
	assert_false(entry);
}

/* libc, a table of thousands of entries, when the test has it mapped. */
static int ehf_libc_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libc.so"))
		return 0;
	ehf_self_cb(info, size, arg);
	return 1;
}

/* The cursor (discover_fde_covers_next) answers what discover_fde_covers
 * does: over every entry's start and its neighbours in rising order
 * (short steps walk, long ones search), with strides that skip many
 * entries, then going backwards (each search afresh), on this image and
 * on libc. A cursor that kept a stale entry, walked one too far or read
 * the wrong FDE would disagree somewhere. */
static void ehf_cursor_check(const struct ehf_self *im)
{
	struct discover_fde_table t;
	assert_int_equal(discover_fde_table(im->base, im->lo, im->hi, &t), 0);
	assert_true(t.n > 0);
	size_t checked = 0, covered = 0;
	for (size_t stride = 1; stride <= 64; stride *= 4) {
		struct discover_fde_cursor c = {0};
		for (size_t i = 0; i < t.n; i += stride) {
			uint64_t start = 0, len = 0;
			bool entry;
			if (!discover_fde_at(&t, i, &start, &len, &entry))
				continue;
			uint64_t probe[4] = {start - 1, start, start + len / 2, start + len};
			for (int k = 0; k < 4; k++) {
				bool want = discover_fde_covers(&t, probe[k]);
				assert_int_equal(discover_fde_covers_next(&t, probe[k], &c), want);
				checked++;
				covered += want;
			}
		}
	}
	struct discover_fde_cursor c = {0};
	for (uint64_t a = im->hi; a > im->lo; a -= (im->hi - im->lo) / 97 + 1)
		assert_int_equal(discover_fde_covers_next(&t, a, &c), discover_fde_covers(&t, a));
	assert_int_equal(discover_fde_covers_next(&t, im->lo, &c), discover_fde_covers(&t, im->lo));
	assert_true(checked > 4 * t.n);
	assert_true(covered > 0 && covered < checked);
}

static void test_cursor(void **state)
{
	(void)state;
	struct ehf_self me = {0}, libc = {0};
	dl_iterate_phdr(ehf_self_cb, &me);
	ehf_cursor_check(&me);
	if (dl_iterate_phdr(ehf_libc_cb, &libc))
		ehf_cursor_check(&libc);
	struct discover_fde_table none;
	struct discover_fde_cursor c = {0};
	assert_int_equal(discover_fde_table(0x1000, 0x1000, 0x2000, &none), -ENOENT);
	assert_true(discover_fde_covers_next(&none, 0x1800, &c)); /* cannot tell */
}

static void test_unknown_image(void **state)
{
	(void)state;
	struct discover_fde_table t;
	assert_int_equal(discover_fde_table(0x1000, 0x1000, 0x2000, &t), -ENOENT);
	assert_true(discover_fde_covers(&t, 0x1800));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_own_image),
	    cmocka_unit_test(test_entries),
	    cmocka_unit_test(test_cursor),
	    cmocka_unit_test(test_unknown_image),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
