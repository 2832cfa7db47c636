/* ATF structs: every struct round-trips through its bytes, and the writer
 * helpers put each field at the offset the schema (plus errata) gives. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "atf.h"

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define ROUNDTRIP(T, val)                                                                          \
	do {                                                                                       \
		uint8_t bytes_[sizeof(T)];                                                         \
		T back_;                                                                           \
		memcpy(bytes_, &(val), sizeof(T));                                                 \
		memcpy(&back_, bytes_, sizeof(T));                                                 \
		assert_memory_equal(&back_, &(val), sizeof(T));                                    \
	} while (0)

static void index_header_bytes(void **state)
{
	struct ada_atf_file_info info;
	struct atf_index_header h;
	uint8_t b[64];

	(void)state;
	ada_atf_file_info_native(&info, 77);
	info.arch = ATF_ARCH_X86_64;
	info.has_detail = true;
	ada_atf_index_header_fill(&h, &info, 0x100000005ull, 111, 222);
	memcpy(b, &h, 64);
	assert_memory_equal(b, "ATI2", 4);
	assert_int_equal(b[4], 1);
	assert_int_equal(b[5], 1);
	assert_int_equal(b[6], ATF_ARCH_X86_64);
	assert_int_equal(b[7], ATF_OS_LINUX);
	assert_int_equal(le32(b + 8), 1);
	assert_int_equal(le32(b + 12), 77);
	assert_int_equal(b[16], ATF_CLOCK_BOOTTIME);
	assert_int_equal(le32(b + 24), 32);
	assert_int_equal(le32(b + 28), 5); /* errata 4: low 32 bits */
	assert_int_equal(le64(b + 32), 64);
	assert_int_equal(le64(b + 40), 64 + 0x100000005ull * 32);
	assert_int_equal(le64(b + 48), 111);
	assert_int_equal(le64(b + 56), 222);
	ROUNDTRIP(struct atf_index_header, h);
}

static void index_event_and_footer_bytes(void **state)
{
	struct atf_index_event e = {
	    0x1122334455667788ull, atf_function_id(3, 9), 42, ATF_EVENT_RETURN, 7, ATF_NO_DETAIL};
	struct atf_index_footer f;
	uint8_t b[64];

	(void)state;
	memcpy(b, &e, 32);
	assert_int_equal(le64(b), 0x1122334455667788ull);
	assert_int_equal(le64(b + 8), 0x300000009ull);
	assert_int_equal(le32(b + 16), 42);
	assert_int_equal(le32(b + 20), 2);
	assert_int_equal(le32(b + 24), 7);
	assert_int_equal(le32(b + 28), 0xffffffffu);
	ROUNDTRIP(struct atf_index_event, e);

	ada_atf_index_footer_fill(&f, 0xcafebabe, 10, 5, 6);
	memcpy(b, &f, 64);
	assert_memory_equal(b, "2ITA", 4);
	assert_int_equal(le32(b + 4), 0xcafebabe);
	assert_int_equal(le64(b + 8), 10);
	assert_int_equal(le64(b + 16), 5);
	assert_int_equal(le64(b + 24), 6);
	assert_int_equal(le64(b + 32), 320);
	for (int i = 40; i < 64; i++)
		assert_int_equal(b[i], 0); /* errata 1: reserved[24] */
	ROUNDTRIP(struct atf_index_footer, f);
}

static void detail_structs_bytes(void **state)
{
	struct ada_atf_file_info info;
	struct atf_detail_header h;
	struct atf_detail_footer f;
	struct atf_detail_event_header eh = {224, ATF_DETAIL_FUNCTION_CALL, 0x5, 17, 42, 999};
	struct atf_detail_function_payload p = {0};
	uint8_t b[128];

	(void)state;
	ada_atf_file_info_native(&info, 42);
	ada_atf_detail_header_fill(&h, &info, 3, 300, 17, 90);
	memcpy(b, &h, 64);
	assert_memory_equal(b, "ATD2", 4);
	assert_int_equal(le32(b + 12), 42);
	assert_int_equal(le64(b + 20), 64); /* errata 2: events_offset at 20 */
	assert_int_equal(le64(b + 28), 3);
	assert_int_equal(le64(b + 36), 300);
	assert_int_equal(le64(b + 44), 17);
	assert_int_equal(le64(b + 52), 90);
	assert_int_equal(le32(b + 60), 0);
	ROUNDTRIP(struct atf_detail_header, h);

	ada_atf_detail_footer_fill(&f, 0x01020304, 3, 300, 7, 8);
	memcpy(b, &f, 64);
	assert_memory_equal(b, "2DTA", 4);
	assert_int_equal(le32(b + 4), 0x01020304);
	assert_int_equal(le64(b + 8), 3);
	assert_int_equal(le64(b + 16), 300);
	assert_int_equal(le64(b + 24), 7);
	assert_int_equal(le64(b + 32), 8);
	ROUNDTRIP(struct atf_detail_footer, f);

	memcpy(b, &eh, 24);
	assert_int_equal(le32(b), 224);
	assert_int_equal(b[4] | b[5] << 8, 3);
	assert_int_equal(le32(b + 8), 17);
	assert_int_equal(le64(b + 16), 999);
	ROUNDTRIP(struct atf_detail_event_header, eh);

	p.function_id = 5;
	p.x_regs[7] = 0xabc;
	p.lr = 1;
	p.fp = 2;
	p.sp = 3;
	p.stack_size = 256;
	memcpy(b, &p, sizeof(p));
	assert_int_equal(le64(b + 8 + 7 * 8), 0xabc);
	assert_int_equal(le64(b + 72), 1);
	assert_int_equal(le64(b + 80), 2);
	assert_int_equal(le64(b + 88), 3);
	assert_int_equal(b[96] | b[97] << 8, 256);
	ROUNDTRIP(struct atf_detail_function_payload, p);
}

static void crc_matches_zlib_check_value(void **state)
{
	(void)state;
	/* The standard CRC-32 (IEEE) check value of "123456789". */
	assert_int_equal(ada_atf_crc32(0, "123456789", 9), 0xcbf43926u);
	assert_int_equal(ada_atf_crc32(ada_atf_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
}

static void names_and_generations(void **state)
{
	uint32_t g;
	char buf[32];

	(void)state;
	assert_true(ada_atf_parse_index_name("index.atf", &g));
	assert_int_equal(g, ADA_ATF_CURRENT_GEN);
	assert_true(ada_atf_parse_index_name("index.g12.atf", &g));
	assert_int_equal(g, 12);
	assert_false(ada_atf_parse_index_name("index.g.atf", &g));
	assert_false(ada_atf_parse_index_name("index.gx1.atf", &g));
	assert_false(ada_atf_parse_index_name("index.g4294967295.atf", &g));
	assert_false(ada_atf_parse_index_name("detail.atf", &g));
	assert_int_equal(ada_atf_gen_name(buf, sizeof(buf), true, 3), 0);
	assert_string_equal(buf, "detail.g3.atf");
	assert_int_equal(ada_atf_gen_name(buf, sizeof(buf), false, ADA_ATF_CURRENT_GEN), 0);
	assert_string_equal(buf, "index.atf");
	assert_int_equal(ada_atf_gen_name(buf, 4, false, 3), -ENAMETOOLONG);
	assert_string_equal(ada_atf_kind_name(3), "exception");
	assert_null(ada_atf_kind_name(0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(index_header_bytes),    cmocka_unit_test(index_event_and_footer_bytes),
	    cmocka_unit_test(detail_structs_bytes),  cmocka_unit_test(crc_matches_zlib_check_value),
	    cmocka_unit_test(names_and_generations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
