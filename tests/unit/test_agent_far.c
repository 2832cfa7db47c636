/*
 * The far patch form's BTI test (agent_far.c, agent_far_note_bti): which
 * GNU property notes ask for BTI, on the notes GNU as writes (the bytes
 * below are aarch64-linux-gnu-gcc's .note.gnu.property for
 * -mbranch-protection=standard and =pac-ret), and malformed ones (read
 * within their length, never guarded). Built on any host.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent_internal.h"

/* -mbranch-protection=standard: FEATURE_1_AND = BTI | PAC */
static const uint8_t note_bti[] = {
    0x04, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x47, 0x4e, 0x55, 0x00,
    0x00, 0x00, 0x00, 0xc0, 0x04, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
/* -mbranch-protection=pac-ret: PAC only */
static const uint8_t note_pac[] = {
    0x04, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x47, 0x4e, 0x55, 0x00,
    0x00, 0x00, 0x00, 0xc0, 0x04, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static void test_note_bti(void **state)
{
	uint8_t b[64];
	(void)state;
	assert_true(agent_far_note_bti(note_bti, sizeof(note_bti)));
	assert_false(agent_far_note_bti(note_pac, sizeof(note_pac)));
	/* another property first (x86's FEATURE_1_AND, 0xc0000002), then BTI */
	memcpy(b, note_bti, 16);
	b[4] = 0x20; /* descsz 32 */
	static const uint8_t x86p[] = {0x02, 0x00, 0x00, 0xc0, 0x04, 0x00, 0x00, 0x00,
	                               0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	memcpy(b + 16, x86p, 16);
	memcpy(b + 32, note_bti + 16, 16);
	assert_true(agent_far_note_bti(b, 48));
	/* truncated or lying sizes: read within len, not guarded */
	assert_false(agent_far_note_bti(note_bti, 24));
	memcpy(b, note_bti, sizeof(note_bti));
	b[4] = 0xff; /* descsz beyond the note */
	assert_false(agent_far_note_bti(b, sizeof(note_bti)));
	memcpy(b, note_bti, sizeof(note_bti));
	b[20] = 0xf0; /* pr_datasz beyond the descriptor */
	assert_false(agent_far_note_bti(b, sizeof(note_bti)));
	memcpy(b, note_bti, sizeof(note_bti));
	b[12] = 'X'; /* not the GNU owner */
	assert_false(agent_far_note_bti(b, sizeof(note_bti)));
	assert_false(agent_far_note_bti(b, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_note_bti),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
