/*
 * ATF v2 on-disk structures, exactly as ../shared/seeds/atf-v2-trace-schema.txt
 * defines them, with the two size fixes of ATF-ERRATA.md (index footer
 * reserved[24]; detail header _reserved2 at offset 60).
 *
 * This header is the binding data contract with every reader of our files.
 * It has no dependencies and no functions: writers (src/wal, src/recorder), the reader and
 * validator (src/atf) and the producer rings (src/ring) all include it.
 * All integers are little-endian on disk; we only build for little-endian
 * hosts (checked below), so the structs are read and written as-is.
 */
#ifndef ADA_ATF_FORMAT_H
#define ADA_ATF_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ATF v2 is little-endian on disk; big-endian hosts need byte swapping"
#endif

#define ATF_INDEX_MAGIC "ATI2"
#define ATF_INDEX_FOOTER_MAGIC "2ITA"
#define ATF_DETAIL_MAGIC "ATD2"
#define ATF_DETAIL_FOOTER_MAGIC "2DTA"

#define ATF_ENDIAN_LITTLE 0x01
#define ATF_VERSION 1

enum atf_arch { ATF_ARCH_X86_64 = 1, ATF_ARCH_ARM64 = 2 };
enum atf_os {
	ATF_OS_IOS = 1,
	ATF_OS_ANDROID = 2,
	ATF_OS_MACOS = 3,
	ATF_OS_LINUX = 4,
	ATF_OS_WINDOWS = 5,
};
enum atf_clock {
	ATF_CLOCK_MACH_CONTINUOUS = 1,
	ATF_CLOCK_QPC = 2,
	ATF_CLOCK_BOOTTIME = 3,
};

/* Index header flags. */
#define ATF_INDEX_FLAG_HAS_DETAIL 0x1u

/* IndexEvent.event_kind */
enum atf_event_kind {
	ATF_EVENT_CALL = 1,
	ATF_EVENT_RETURN = 2,
	ATF_EVENT_EXCEPTION = 3,
};

/* DetailEventHeader.event_type (errata 6: new types get new numbers). */
enum atf_detail_type {
	ATF_DETAIL_FUNCTION_CALL = 3,
	ATF_DETAIL_FUNCTION_RETURN = 4,
	/* ada's: the faulting thread's registers at a fatal signal
	 * (docs/format.md, "Signal context records"; proposed erratum 9). */
	ATF_DETAIL_SIGNAL_CONTEXT = 5,
	/* ada's: FUNCTION_CALL / FUNCTION_RETURN with the vector argument and
	 * return registers (--detail-fp; docs/format.md, "Float registers";
	 * proposed erratum 10): the function payload, then
	 * ATF_DETAIL_XMM_WORDS words, then the stack snapshot. */
	ATF_DETAIL_FUNCTION_CALL_FP = 6,
	ATF_DETAIL_FUNCTION_RETURN_FP = 7,
};
/* xmm0..xmm7, the low 64 bits of each (a double, or a float in the low 32
 * bits); a RETURN_FP has xmm0 and xmm1 (the return registers), the other
 * six 0. */
#define ATF_DETAIL_XMM_WORDS 8u

#define ATF_NO_DETAIL UINT32_MAX
/* ada's convention (docs/format.md): an EXCEPTION whose call_depth has this
 * bit is a fatal-signal marker, not a frame: call_depth & 0x7fffffff is
 * the signal, function_id the fault address (0 when not a fault). */
#define ADA_SIGNAL_MARKER_FLAG 0x80000000u
/* ada's convention (docs/format.md, "Wait markers"; proposed erratum 11):
 * an EXCEPTION whose call_depth is one of these two values marks where a
 * wait of ada's own began and where it ended -- the thread's producer
 * waited for ring space -- not a frame and not a signal. The time between
 * a BEGIN and the END after it is ada's, not the program's: readers
 * subtract it from the frames open around it. function_id is 0. */
#define ADA_WAIT_MARKER_BEGIN (ADA_SIGNAL_MARKER_FLAG | 0x40000000u)
#define ADA_WAIT_MARKER_END (ADA_SIGNAL_MARKER_FLAG | 0x40000001u)

/* The event is a wait marker (either one). */
static inline int ada_wait_marker(uint32_t event_kind, uint32_t call_depth)
{
	return event_kind == ATF_EVENT_EXCEPTION && (call_depth | 1u) == ADA_WAIT_MARKER_END;
}
#define ATF_HEADER_SIZE 64u
#define ATF_FOOTER_SIZE 64u
#define ATF_INDEX_EVENT_SIZE 32u
#define ATF_DETAIL_EVENT_HEADER_SIZE 24u
#define ATF_DETAIL_STACK_MAX 512u

struct __attribute__((packed)) atf_index_header {
	uint8_t magic[4];
	uint8_t endian;
	uint8_t version;
	uint8_t arch;
	uint8_t os;
	uint32_t flags;
	uint32_t thread_id;
	uint8_t clock_type;
	uint8_t reserved1[3];
	uint32_t reserved2;
	uint32_t event_size;
	uint32_t event_count; /* low 32 bits; the footer's count is authoritative */
	uint64_t events_offset;
	uint64_t footer_offset;
	uint64_t time_start_ns;
	uint64_t time_end_ns;
};

struct __attribute__((packed)) atf_index_event {
	uint64_t timestamp_ns;
	uint64_t function_id; /* (module_id << 32) | symbol_index */
	uint32_t thread_id;
	uint32_t event_kind;
	uint32_t call_depth;
	uint32_t detail_seq; /* ATF_NO_DETAIL when none */
};

struct __attribute__((packed)) atf_index_footer {
	uint8_t magic[4];
	uint32_t checksum; /* zlib crc32() of the events section */
	uint64_t event_count;
	uint64_t time_start_ns;
	uint64_t time_end_ns;
	uint64_t bytes_written;
	uint8_t reserved[24]; /* errata 1 */
};

struct __attribute__((packed)) atf_detail_header {
	uint8_t magic[4];
	uint8_t endian;
	uint8_t version;
	uint8_t arch;
	uint8_t os;
	uint32_t flags;
	uint32_t thread_id;
	uint32_t reserved1;
	uint64_t events_offset;
	uint64_t event_count;
	uint64_t bytes_length;
	uint64_t index_seq_start;
	uint64_t index_seq_end;
	uint32_t reserved2; /* errata 2 */
};

struct __attribute__((packed)) atf_detail_event_header {
	uint32_t total_length; /* header + payload */
	uint16_t event_type;
	uint16_t flags;
	uint32_t index_seq;
	uint32_t thread_id;
	uint64_t timestamp;
};

/*
 * On x86_64 (errata 5) x_regs[0..7] = rdi, rsi, rdx, rcx, r8, r9, rax,
 * rdx-at-return; lr = return address, fp = rbp, sp = rsp.
 */
struct __attribute__((packed)) atf_detail_function_payload {
	uint64_t function_id;
	uint64_t x_regs[8];
	uint64_t lr;
	uint64_t fp;
	uint64_t sp;
	uint16_t stack_size;
	uint16_t reserved;
	/* uint8_t stack_snapshot[stack_size] follows */
};

/* Registers of a signal context record: on x86_64 regs[0..15] are the
 * DWARF registers 0-15 (rax rdx rcx rbx rsi rdi rbp rsp r8..r15),
 * regs[16] the pc (rip, DWARF 16) and regs[17] rflags. On arm64 (the
 * file's arch says which) the 18 words keep sp at 7 and the pc at 16, as
 * on x86_64, and hold the argument and result registers, the veneer and
 * platform registers, the frame and link registers: x0-x6, sp, x7, x8,
 * x16, x17, x18, x19, x29 (fp), x30 (lr), pc, pstate (x9-x15 and
 * x20-x28 are not kept: the format's 160 bytes). */
#define ATF_SIGNAL_NREGS 18u
#define ATF_SIGNAL_REG_SP 7u
#define ATF_SIGNAL_REG_PC 16u

/* DetailEventHeader.event_type 5 (ATF_DETAIL_SIGNAL_CONTEXT): total_length
 * is 24 + sizeof(this), nothing follows. */
struct __attribute__((packed)) atf_detail_signal_payload {
	int32_t signo;
	int32_t si_code;
	uint64_t fault_addr; /* si_addr for a kernel fault (si_code > 0), else 0 */
	uint64_t regs[ATF_SIGNAL_NREGS];
};

struct __attribute__((packed)) atf_detail_footer {
	uint8_t magic[4];
	uint32_t checksum;
	uint64_t event_count;
	uint64_t bytes_length;
	uint64_t time_start_ns;
	uint64_t time_end_ns;
	uint8_t reserved[24];
};

_Static_assert(sizeof(struct atf_index_header) == 64, "index header is 64 bytes");
_Static_assert(offsetof(struct atf_index_header, flags) == 8, "flags at 8");
_Static_assert(offsetof(struct atf_index_header, clock_type) == 16, "clock_type at 16");
_Static_assert(offsetof(struct atf_index_header, event_size) == 24, "event_size at 24");
_Static_assert(offsetof(struct atf_index_header, events_offset) == 32, "events_offset at 32");
_Static_assert(offsetof(struct atf_index_header, footer_offset) == 40, "footer_offset at 40");
_Static_assert(offsetof(struct atf_index_header, time_start_ns) == 48, "time_start at 48");
_Static_assert(sizeof(struct atf_index_event) == 32, "index event is 32 bytes");
_Static_assert(offsetof(struct atf_index_event, thread_id) == 16, "thread_id at 16");
_Static_assert(offsetof(struct atf_index_event, detail_seq) == 28, "detail_seq at 28");
_Static_assert(sizeof(struct atf_detail_signal_payload) == 160,
               "signal context payload is 160 bytes");
_Static_assert(sizeof(struct atf_index_footer) == 64, "index footer is 64 bytes (errata 1)");
_Static_assert(offsetof(struct atf_index_footer, bytes_written) == 32, "bytes_written at 32");
_Static_assert(sizeof(struct atf_detail_header) == 64, "detail header is 64 bytes (errata 2)");
_Static_assert(offsetof(struct atf_detail_header, events_offset) == 20, "events_offset at 20");
_Static_assert(offsetof(struct atf_detail_header, index_seq_end) == 52, "index_seq_end at 52");
_Static_assert(offsetof(struct atf_detail_header, reserved2) == 60, "reserved2 at 60");
_Static_assert(sizeof(struct atf_detail_event_header) == 24, "detail event header is 24 bytes");
_Static_assert(sizeof(struct atf_detail_function_payload) == 100, "function payload is 100 bytes");
_Static_assert(sizeof(struct atf_detail_footer) == 64, "detail footer is 64 bytes");

static inline uint64_t atf_function_id(uint32_t module_id, uint32_t symbol_index)
{
	return ((uint64_t)module_id << 32) | symbol_index;
}

#endif
