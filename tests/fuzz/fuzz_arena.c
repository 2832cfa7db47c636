/*
 * libFuzzer target for the consumer's trust boundary (src/ring/consumer.c,
 * slots.c): an arena image (fuzz_arena_image.h) is opened and drained as
 * the recorder's drain reads it -- checked slot reads, peek/release,
 * slot frees, drop totals, fault texts -- for a few passes.
 * Invariants (abort when broken): one pass never takes more than one
 * ring's worth from a slot; a quarantined slot yields nothing again; the
 * consumer's tail never passes the head it accepted. The detail ring's
 * snapshot (src/ring/detail.c: any head, oldest, pads and record words)
 * returns at most a ring's bytes, as records the iterator walks exactly;
 * its two ends (ada_detail_ring_ends: a walk of header words in place)
 * come back as one whole record each, inside the buffer, or -EAGAIN.
 * The table of reaped children yields only notes in range.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_arena_image.h"
#include "ring_reaped.h"

static volatile uint64_t fuzz_sink;

/* ada_detail_ring_ends on whatever the image holds: 0 with each end one
 * whole snapshot-format record inside the buffer, or -EAGAIN; never
 * -EINVAL for a valid slot and a whole-ring buffer. */
static void fuzz_ends(struct ada_arena *a, uint32_t s, uint64_t d)
{
	static uint64_t buf[ADA_DETAIL_MIN_BYTES / 8];
	struct ada_detail_ends e;
	int rc = ada_detail_ring_ends(a, s, buf, d, &e);
	if (rc == -EAGAIN || (rc == 0 && !e.found))
		return;
	if (rc != 0)
		abort();
	const uint8_t *b = (const uint8_t *)buf;
	uint64_t offs[2] = {e.first_off, e.last_off}, lens[2] = {e.first_len, e.last_len};
	for (int i = 0; i < 2; i++) {
		size_t off = 0;
		uint32_t len;
		if (offs[i] > d || lens[i] > d - offs[i])
			abort(); /* outside what the caller gave */
		const uint8_t *r = ada_detail_rec_next(b + offs[i], lens[i], &off, &len);
		if (!r || off != lens[i])
			abort(); /* not exactly one record */
		fuzz_sink += (len ? r[0] : 0) + len;
	}
}

/* The drain's detail copy of slot s, from 0 and then from where it ended
 * (an incremental look), each walked record by record. */
static void fuzz_detail(struct ada_arena *a, uint32_t s)
{
	static uint64_t buf[ADA_DETAIL_MIN_BYTES / 8];
	uint64_t d = ada_arena_config_of(a)->detail_bytes, from = 0;
	if (d == 0 || d > sizeof(buf))
		return;
	for (int i = 0; i < 2; i++) {
		struct ada_detail_snapshot snap;
		if (ada_detail_ring_snapshot(a, s, from, buf, sizeof(buf), &snap) != 0)
			abort(); /* a valid slot and buffer: never refused */
		if (snap.bytes > d || snap.begin > snap.end)
			abort();
		size_t off = 0;
		uint32_t len;
		uint64_t n = 0;
		const uint8_t *r;
		while ((r = ada_detail_rec_next(buf, snap.bytes, &off, &len)))
			fuzz_sink += (len ? r[0] : 0) + len + n++;
		if (n != snap.records || off != snap.bytes)
			abort(); /* the snapshot wrote exactly the records it counts */
		from = snap.end;
	}
	fuzz_ends(a, s, d);
}

/* The table of reaped children (reaped.c), read as the drain reads it,
 * from 0 and again from where it stopped, then once as final: every note
 * taken is in range, at most a table's worth a read, the cursor never
 * goes back and never past the head. */
static void fuzz_reaped(struct ada_arena *a)
{
	static struct ada_reaped_note out[ADA_REAPED_SLOTS];
	struct ada_reaped_counts c = {0};
	uint64_t cursor = 0;
	for (int i = 0; i < 3; i++) {
		uint64_t before = cursor;
		uint32_t n = ada_arena_reaped_take(a, &cursor, i == 2, out, &c);
		if (n > ADA_REAPED_SLOTS || cursor < before)
			abort();
		for (uint32_t j = 0; j < n; j++) {
			if (out[j].pid < 1 || out[j].pid > ADA_REAPED_PID_MAX ||
			    out[j].status < 0 || out[j].status > 0xffff)
				abort(); /* a note the reader should have refused */
			fuzz_sink += out[j].ts_raw;
		}
	}
	fuzz_sink += c.overwritten + c.refused;
}

static void fuzz_slot(struct ada_arena *a, uint32_t s, uint64_t cap)
{
	struct ada_slot_info si;
	int rc = ada_slot_read_checked(a, s, &si);
	if (rc != 0) {
		struct ada_slot_fault f;
		char text[256];
		if (rc == -EPROTO && !ada_slot_fault(a, s, &f))
			abort(); /* -EPROTO always leaves a fault to tell */
		if (rc == -EPROTO)
			ada_slot_fault_text(&f, text, sizeof(text));
		const struct atf_index_event *ev;
		if (ada_index_ring_peek(a, s, &ev) != 0)
			abort(); /* a quarantined slot is never read again */
		return;
	}
	if (si.head - si.tail > cap)
		abort();
	uint64_t taken = 0;
	for (int i = 0; i < 4; i++) {
		const struct atf_index_event *ev;
		size_t k = ada_index_ring_peek(a, s, &ev);
		if (k == 0)
			break;
		for (size_t j = 0; j < k; j++) /* touch what the drain would copy */
			fuzz_sink += ev[j].timestamp_ns ^ ev[j].event_kind;
		ada_index_ring_release(a, s, k);
		taken += k;
	}
	if (taken > cap)
		abort(); /* more than the ring could have held in one pass */
	fuzz_detail(a, s);
	if (si.state == ADA_SLOT_EXITED)
		ada_arena_slot_free(a, s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = fuzz_arena_image(data, size);
	if (fd < 0)
		return 0;
	struct ada_arena *a = NULL;
	if (ada_arena_open_fd(fd, &a) == 0) {
		uint64_t cap = ada_arena_config_of(a)->index_events;
		for (int pass = 0; pass < 3; pass++)
			for (uint32_t s = 0; s < ada_arena_max_threads(a); s++)
				fuzz_slot(a, s, cap);
		uint64_t d[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
		ada_arena_drop_totals(a, d);
		int st;
		(void)ada_arena_process_state(a, &st);
		fuzz_reaped(a);
		ada_arena_close(a);
	}
	close(fd);
	return 0;
}
