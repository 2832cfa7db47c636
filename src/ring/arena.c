/*
 * ada ring: the shared-memory arena -- creation (producer side), opening and
 * validation (drain, `ada recover`), process state, heartbeat, drop totals.
 *
 * Threads: ada_arena_create/open/close run once, on a setup path (agent init,
 * recorder's arena discovery). The accessors are called concurrently by the
 * traced process's threads and the recorder's drain thread, in two different
 * processes; everything they share is a C11 atomic in the mapping (layout in
 * ring_internal.h).
 * Invariants: a handle never trusts geometry read from the file; it computes
 * its own from a validated config and checks the file agrees (a corrupt or
 * truncated arena gives -EPROTO, never a read outside the mapping).
 */
#define _GNU_SOURCE /* O_PATH */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "ring_internal.h"

/* Whether tmpfs gives huge pages to a region advised MADV_HUGEPAGE: the
 * bracketed word of shmem_enabled is always, within_size, advise or force
 * (not never or deny). Parses (buf, len) as read. */
static bool arena_shmem_thp_read(void)
{
	char buf[128];
	int fd = open("/sys/kernel/mm/transparent_hugepage/shmem_enabled", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *open_br = strchr(buf, '[');
	return open_br && strncmp(open_br, "[never]", 7) != 0 && strncmp(open_br, "[deny]", 6) != 0;
}

/* arena_shmem_thp_read(), once per process and its forked children
 * (relaxed: any thread may read the file again, with the same answer). */
ADA_FORK_PATH static bool arena_shmem_thp(void)
{
	static _Atomic int known; /* 0: not read yet; 1: no; 2: yes */
	int k = atomic_load_explicit(&known, memory_order_relaxed);
	if (!k) {
		k = arena_shmem_thp_read() ? 2 : 1;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k == 2;
}

void ring_arena_fork_prepare(void)
{
	arena_shmem_thp();
}

/* Huge pages, when the file system and the kernel's settings give them;
 * returns the ADA_ARENA_F_* page flag that says which we got (0: 4 KiB).
 * fs is the file's fstatfs (ring_arena_fs). */
ADA_FORK_PATH static uint32_t arena_huge_pages(const struct ring_fs *fs, void *base, uint64_t size)
{
	if (fs->type == HUGETLBFS_MAGIC)
		return ADA_ARENA_F_HUGETLB;
#ifdef MADV_HUGEPAGE
	/* madvise succeeds on tmpfs whatever shmem_enabled says, so ask it
	 * too; other file systems (ext4 ...) do not back shared writable
	 * file mappings with huge pages. */
	if (fs->type == TMPFS_MAGIC && arena_shmem_thp() && madvise(base, size, MADV_HUGEPAGE) == 0)
		return ADA_ARENA_F_THP;
#else
	(void)base;
	(void)size;
#endif
	return 0;
}

ADA_FORK_PATH void ring_arena_fs(int fd, struct ring_fs *fs)
{
	struct statfs st;
	*fs = (struct ring_fs){0, 0};
	if (fstatfs(fd, &st) == 0) {
		fs->type = (uint64_t)st.f_type;
		fs->bsize = st.f_bsize > 0 ? (uint64_t)st.f_bsize : 0;
	}
}

ADA_FORK_PATH uint64_t ring_fs_file_size(const struct ring_fs *fs, uint64_t size)
{
	if (fs->type == HUGETLBFS_MAGIC && fs->bsize > 0)
		return (size + fs->bsize - 1) / fs->bsize * fs->bsize;
	return size;
}

/* hugetlbfs wants sizes in whole huge pages. */
uint64_t ring_arena_file_size(int fd, uint64_t size)
{
	struct ring_fs fs;
	ring_arena_fs(fd, &fs);
	return ring_fs_file_size(&fs, size);
}

/* Allocates every page now so the hot path never takes a page fault. */
ADA_FORK_PATH static void arena_prefault(uint8_t *base, uint64_t size)
{
#ifdef MADV_POPULATE_WRITE
	if (madvise(base, size, MADV_POPULATE_WRITE) == 0)
		return;
#endif
	/* Kernels before 5.14: touch one byte per page (the file is zeros). */
	for (uint64_t off = 0; off < size; off += 4096)
		base[off] = 0;
}

ADA_FORK_PATH static int arena_map(int fd, uint64_t size, bool populate, struct ada_arena **out)
{
	struct ada_arena *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	int flags = MAP_SHARED | (populate ? MAP_POPULATE : 0);
	void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (base == MAP_FAILED) {
		int err = -errno;
		free(a);
		return err;
	}
	a->base = base;
	a->map_size = size;
	a->ctl = base;
	*out = a;
	return 0;
}

ADA_FORK_PATH uint32_t ada_arena_native_machine(void)
{
#if defined(__aarch64__)
	return EM_AARCH64;
#else
	return EM_X86_64;
#endif
}

/* The counter and CLOCK_BOOTTIME read side by side: the tightest of a few
 * brackets (the counter read on both sides of the clock), as the drain's
 * own samples (ada_tsc_sample_pair). */
ADA_FORK_PATH static void arena_init_origin(struct ada_arena_control *c)
{
	c->machine = ada_arena_native_machine();
	c->counter_hz = ada_counter_hz();
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		struct timespec ts;
		uint64_t t0 = ada_tsc();
		clock_gettime(CLOCK_BOOTTIME, &ts);
		uint64_t t1 = ada_tsc();
		if (t1 - t0 < best) {
			best = t1 - t0;
			c->anchor_counter = t0 + (t1 - t0) / 2;
			c->anchor_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		}
	}
}

ADA_FORK_PATH static void
arena_init_control(struct ada_arena *a, const struct ada_arena_config *cfg, uint32_t start_time)
{
	struct ada_arena_control *c = a->ctl;
	c->version = ADA_ARENA_VERSION;
	c->control_size = sizeof(*c);
	c->layout_size = a->geo.total;
	c->desc_offset = a->geo.desc_offset;
	c->slots_offset = a->geo.slots_offset;
	c->slot_stride = a->geo.slot_stride;
	c->detail_offset = a->geo.detail_offset;
	c->keysym_offset = a->geo.keysym_offset;
	atomic_store_explicit(&c->keysym_cur, ADA_KEYSYM_CUR_LOCAL, memory_order_relaxed);
	c->config = *cfg;
	c->pid = (int32_t)getpid();
	c->start_time = start_time;
	arena_init_origin(c);
	a->cfg = *cfg;
	a->desc = (struct ada_slot_desc *)(a->base + a->geo.desc_offset);
	/* The rename of <pid>.ring.tmp.<random> publishes the file to the drain; the magic
	 * is stored last anyway so a reader racing a direct create sees an
	 * incomplete arena as "not an arena". Pairs with the acquire load of
	 * magic in ada_arena_open(). */
	atomic_store_explicit((_Atomic uint64_t *)&c->magic, ADA_ARENA_MAGIC, memory_order_release);
}

/* Locks [off, off+len) when mlock is allowed; a refusal is recorded in the
 * shared flags so the recorder's manifest says so. */
ADA_FORK_PATH static bool arena_lock_range(struct ada_arena *a, uint64_t off, uint64_t len)
{
	if (mlock(a->base + off, len) == 0)
		return true;
	atomic_fetch_or_explicit(&a->ctl->flags, ADA_ARENA_F_MLOCK_FAILED, memory_order_relaxed);
	return false;
}

/* The control block and slot descriptors: the part every process touches
 * at once. Slot regions are populated and locked when a thread claims one
 * (ring_slot_populate), so an arena sized for 64 threads costs a process
 * with two threads only two rings' worth of pages and start-up time. */
ADA_FORK_PATH void ring_arena_lock(struct ada_arena *a, bool *mlock_failed)
{
	a->mlocked = arena_lock_range(a, 0, a->geo.desc_lock_end);
	if (mlock_failed)
		*mlock_failed = !a->mlocked;
}

static uint64_t arena_page_down(uint64_t x)
{
	return x & ~(uint64_t)4095;
}

/* A spill slot counts against the recording's shared-memory ceiling from
 * the first time a thread claims it (once: its pages stay when it is
 * freed and reused). 0, or -EDQUOT over the ceiling. */
static int arena_spill_reserve(struct ada_arena *a, uint32_t slot)
{
	if (!ring_slot_is_spill(a, slot) || !a->budget)
		return 0;
	if (ada_shm_budget_grow(a->budget, ring_spill_budget_unit(&a->geo)) != 0)
		return -EDQUOT;
	atomic_fetch_add_explicit(&a->ctl->spill_taken, 1, memory_order_relaxed);
	return 0;
}

/* Populates [start, end) of the mapping; 0, or -errno (ENOMEM, EFAULT:
 * /dev/shm full). EINVAL means a kernel without MADV_POPULATE_WRITE: the
 * pages then come with the first touch. A recycled arena on tmpfs
 * (pool.c) is populated with reads: they map the pages the file has
 * already sixteen at a fault (the kernel's fault-around) where writes
 * fault each, and a shared mapping of tmpfs needs no write notification,
 * so they come writable. Elsewhere writes: on ext4 a read of a hole
 * maps a page the first write must fault on again, and arenas populated
 * with reads there lost detail records (test_wal_detail's windows, its
 * arenas in /tmp). */
ADA_FORK_PATH static int arena_madvise_range(struct ada_arena *a, uint64_t start, uint64_t end,
                                             bool read)
{
#if defined(MADV_POPULATE_WRITE) && defined(MADV_POPULATE_READ)
	int advice = read ? MADV_POPULATE_READ : MADV_POPULATE_WRITE;
	if (madvise(a->base + start, end - start, advice) != 0 && errno != EINVAL)
		return -errno;
#else
	(void)a;
	(void)start;
	(void)end;
	(void)read;
#endif
	return 0;
}

static int arena_populate_range(struct ada_arena *a, uint64_t start, uint64_t end)
{
	return arena_madvise_range(a, start, end, a->populate_read);
}

/* Maps [start, end) of the mapping, pages the file has (the recorder
 * populated them in its own mapping): one call instead of a fault per
 * page at the first touch of each. On tmpfs with reads, which map sixteen
 * of them at a fault (fault-around) and writable (no write notification
 * on a shared mapping of tmpfs); elsewhere with writes (a read would map
 * a page the first write must fault on again). 0 or -errno. */
ADA_FORK_PATH static int arena_map_range(struct ada_arena *a, uint64_t start, uint64_t end)
{
	return arena_madvise_range(a, start, end, a->map_read);
}

ADA_FORK_PATH int ring_map_pages(struct ada_arena *a, uint64_t start, uint64_t end)
{
	return arena_map_range(a, start, end);
}

/* The page-aligned byte range of slot's region in the mapping. */
static void arena_slot_range(const struct ada_arena *a, uint32_t slot, uint64_t *start,
                             uint64_t *end)
{
	uint64_t base = (uint64_t)((uint8_t *)ring_index_hdr(a, slot) - a->base);
	*start = arena_page_down(base);
	*end = base + ring_slot_stride(a, slot);
	if (*end > a->map_size)
		*end = a->map_size;
}

/* Whether a claim of slot leaves its index ring's pages to the producer
 * (ring_populate_events, a chunk at a time as its head reaches them) and
 * its detail ring's to the recorder (ada_arena_slot_prepare) and its
 * producer (ada_detail_populate): a full slot with a recorder to finish it. A
 * thread -- a forked child's first, most of all -- then starts without
 * allocating 2 MiB it may never write. */
bool ring_slot_lazy(const struct ada_arena *a, uint32_t slot)
{
	return !ring_slot_is_spill(a, slot) && a->rec_pid != 0;
}

/* The pages a lazy claim populates at once: the index header's and the
 * detail header's (what the claim itself and the drain read first). */
static int arena_populate_headers(struct ada_arena *a, uint32_t slot)
{
	uint64_t hdr = (uint64_t)((uint8_t *)ring_index_hdr(a, slot) - a->base);
	uint64_t ev = (uint64_t)((uint8_t *)ring_index_events(a, slot) - a->base);
	int rc = arena_populate_range(a, arena_page_down(hdr), (ev + 4095) & ~(uint64_t)4095);
	if (rc || ring_slot_detail_bytes(a, slot) == 0)
		return rc;
	uint64_t dh = (uint64_t)((uint8_t *)ring_detail_hdr(a, slot) - a->base);
	uint64_t dw = (uint64_t)((uint8_t *)ring_detail_words(a, slot) - a->base);
	return arena_populate_range(a, arena_page_down(dh), (dw + 4095) & ~(uint64_t)4095);
}

/* madvise(advice) over the pages of the index ring events [from, from +
 * n) of slot, in at most two pieces (up to the ring's end, then from its
 * start); 0 or -errno. */
static int arena_events_advise(struct ada_arena *a, uint32_t slot, uint64_t from, uint64_t n,
                               bool map)
{
	uint64_t cap = ring_slot_events(a, slot);
	uint64_t ev = (uint64_t)((uint8_t *)ring_index_events(a, slot) - a->base);
	if (n > cap)
		n = cap;
	while (n) { /* at most two pieces: up to the ring's end, then from its start */
		uint64_t off = from & (cap - 1), k = cap - off < n ? cap - off : n;
		uint64_t lo = ev + off * sizeof(struct atf_index_event);
		uint64_t hi = lo + k * sizeof(struct atf_index_event);
		uint64_t plo = arena_page_down(lo), phi = (hi + 4095) & ~(uint64_t)4095;
		int rc = map ? arena_map_range(a, plo, phi) : arena_populate_range(a, plo, phi);
		if (rc)
			return rc;
		from += k;
		n -= k;
	}
	return 0;
}

int ring_populate_events(struct ada_arena *a, uint32_t slot, uint64_t from, uint64_t n)
{
	return arena_events_advise(a, slot, from, n, false);
}

int ring_map_events(struct ada_arena *a, uint32_t slot, uint64_t from, uint64_t n)
{
	return arena_events_advise(a, slot, from, n, true);
}

int ring_populate_detail(struct ada_arena *a, uint32_t slot, uint64_t from, uint64_t to)
{
	uint64_t d = ring_slot_detail_bytes(a, slot);
	if (to > d)
		to = d;
	if (from >= to)
		return 0;
	uint64_t dw = (uint64_t)((uint8_t *)ring_detail_words(a, slot) - a->base);
	return arena_populate_range(a, arena_page_down(dw + from),
	                            (dw + to + 4095) & ~(uint64_t)4095);
}

int ring_slot_populate(struct ada_arena *a, uint32_t slot)
{
	struct ada_slot_desc *d = &a->desc[slot];
	/* Acquire: pairs with the release store in ada_arena_slot_prepare()
	 * (the recorder populated it ahead) or our own earlier store (a
	 * reused slot): its pages exist, nothing is left to do here. */
	uint32_t pop = atomic_load_explicit(&d->populated, memory_order_acquire);
	bool lazy = ring_slot_lazy(a, slot);
	if ((pop & RING_POP_PAGES) || ((pop & (RING_POP_INDEX | RING_POP_HEADERS)) && lazy))
		return 0;
	if (!(pop & RING_POP_RESERVED)) {
		int rc = arena_spill_reserve(a, slot);
		if (rc)
			return rc;
	}
	uint64_t start, end;
	arena_slot_range(a, slot, &start, &end);
	/* Fails with ENOMEM when /dev/shm is full: better a counted drop now
	 * than a SIGBUS in a hooked function later. The reservation stays
	 * (the pages the call did get stay too); a later claim retries.
	 * Slot 0's headers of a recycled arena: ring_pool_fresh mapped them. */
	int rc = !lazy                          ? arena_populate_range(a, start, end)
	         : slot == 0 && a->slot0_mapped ? 0
	                                        : arena_populate_headers(a, slot);
	if (rc != 0) {
		atomic_store_explicit(&d->populated, RING_POP_RESERVED, memory_order_relaxed);
		return rc;
	}
	/* Ours while CLAIMING; release as in ada_arena_slot_prepare(). A
	 * lazy slot gets INDEX from its producer once it populated the whole
	 * index ring (ada_producer_slow). */
	atomic_store_explicit(&d->populated,
	                      RING_POP_RESERVED |
	                          (lazy ? RING_POP_HEADERS : RING_POP_INDEX | RING_POP_PAGES),
	                      memory_order_release);
	/* With a recorder, it locks the slot in its own mapping (a page locked
	 * in one mapping stays resident: ada_arena_slot_prepare), so the
	 * thread does not wait for mlock; alone (a test's arena), lock here. */
	if (a->rec_pid == 0 && !arena_lock_range(a, start, end - start))
		a->mlocked = false;
	return 0;
}

int ada_arena_slot_prepare(struct ada_arena *a, uint32_t slot, unsigned what, uint64_t *done,
                           uint64_t max_bytes)
{
	if (slot >= a->nslots || !done || max_bytes == 0)
		return -EINVAL;
	uint64_t start, end;
	arena_slot_range(a, slot, &start, &end);
	if ((what & ADA_PREP_NO_DETAIL) && ring_slot_detail_bytes(a, slot)) {
		uint64_t dw = (uint64_t)((uint8_t *)ring_detail_words(a, slot) - a->base);
		end = (dw + 4095) & ~(uint64_t)4095;
	}
	uint64_t from = start + *done;
	if (from >= end)
		return 1;
	uint64_t to = end - from > max_bytes ? arena_page_down(from + max_bytes) : end;
	if (to <= from)
		to = end;
	if (what & ADA_PREP_POPULATE) {
		int rc = arena_populate_range(a, from, to);
		if (rc)
			return rc;
	}
	if ((what & ADA_PREP_LOCK) && !arena_lock_range(a, from, to - from))
		return -EPERM;
	*done = to - start;
	if (to < end)
		return 0;
	/* Publishes the pages populated above: a claimer that reads 1 skips
	 * its own populate; pairs with the acquire load in
	 * ring_slot_populate(). Only for a full slot (a spill slot's first
	 * populate reserves it against the ceiling, the producer's part). */
	if ((what & ADA_PREP_POPULATE) && !ring_slot_is_spill(a, slot))
		atomic_fetch_or_explicit(&a->desc[slot].populated,
		                         RING_POP_INDEX |
		                             (what & ADA_PREP_NO_DETAIL ? 0 : RING_POP_PAGES),
		                         memory_order_release);
	return 1;
}

int ada_arena_slot_lock_detail(struct ada_arena *a, uint32_t slot, uint64_t *locked,
                               uint64_t max_bytes)
{
	if (slot >= a->nslots || !locked || max_bytes == 0)
		return -EINVAL;
	uint64_t d = ring_slot_detail_bytes(a, slot);
	if (*locked >= d)
		return 1;
	/* Relaxed: the target's word, how far its threads populated the
	 * ring; bounded by the ring, so a bogus one costs at most the whole
	 * ring populated here, as a lock of it always did. */
	uint64_t pop = atomic_load_explicit(&ring_detail_hdr(a, slot)->pop, memory_order_relaxed);
	pop = pop < d ? pop : d;
	if (pop <= *locked)
		return 0;
	uint64_t to = pop - *locked > max_bytes ? *locked + max_bytes : pop;
	/* The pages its populate rounded to (ring_populate_detail). */
	uint64_t dw = (uint64_t)((uint8_t *)ring_detail_words(a, slot) - a->base);
	uint64_t lo = arena_page_down(dw + *locked), hi = (dw + to + 4095) & ~(uint64_t)4095;
	if (!arena_lock_range(a, lo, hi - lo))
		return -EPERM;
	*locked = to;
	return to >= d ? 1 : 0;
}

bool ada_arena_slot_index_ready(const struct ada_arena *a, uint32_t slot)
{
	/* Relaxed: a hint, as below. */
	return slot < a->nslots &&
	       (atomic_load_explicit(&a->desc[slot].populated, memory_order_relaxed) &
	        (RING_POP_INDEX | RING_POP_PAGES)) != 0;
}

bool ada_arena_slot_populated(const struct ada_arena *a, uint32_t slot)
{
	/* Relaxed: a hint for the recorder (which slots to prepare), written
	 * by the target, trusted for nothing else. */
	return slot < a->nslots &&
	       (atomic_load_explicit(&a->desc[slot].populated, memory_order_relaxed) &
	        RING_POP_PAGES) != 0;
}

int ada_arena_create(const char *path, const struct ada_arena_config *cfg, struct ada_arena **out,
                     bool *mlock_failed)
{
	return ring_arena_create(path, cfg, 0, out, mlock_failed);
}

ADA_FORK_PATH int ring_arena_create(const char *path, const struct ada_arena_config *cfg,
                                    uint32_t start_time, struct ada_arena **out, bool *mlock_failed)
{
	struct ring_geometry geo;
	if (!path || !out || ring_geometry(cfg, &geo) != 0)
		return -EINVAL;
	/* A finished process's file from the pool (pool.c), its ring pages
	 * there already; else a new one. One fstatfs either way (fs). */
	struct ring_fs fs;
	uint64_t ino = 0;
	int fd = ring_pool_take(path, geo.total, &fs, &ino);
	uint32_t recycled = fd >= 0 ? ADA_ARENA_F_RECYCLED : 0;
	if (fd < 0) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0)
			ring_arena_fs(fd, &fs);
	}
	if (fd < 0)
		return -errno;
	uint64_t fsize = ring_fs_file_size(&fs, geo.total);
	/* Sparse: slot regions get their pages when a thread claims them. */
	int err = recycled || ftruncate(fd, (off_t)fsize) == 0 ? 0 : -errno;
	if (err)
		goto out_unlink;
	struct ada_arena *a = NULL;
	err = arena_map(fd, fsize, false, &a);
	if (err)
		goto out_unlink;
	a->geo = geo;
	a->cfg = *cfg;
	a->nslots = cfg->max_threads + cfg->spill_threads;
	a->map_read = fs.type == TMPFS_MAGIC;
	a->populate_read = recycled && a->map_read;
	a->file_ino = ino;
	uint32_t pages = arena_huge_pages(&fs, a->base, fsize);
	if (recycled && !ring_pool_fresh(a)) {
		/* Not scrubbed for this layout (or not by a recorder at all):
		 * a new file instead. Each such take used up a pool name. */
		ada_arena_close(a);
		close(fd);
		unlink(path);
		return ring_arena_create(path, cfg, start_time, out, mlock_failed);
	}
	/* A recycled file on tmpfs: ring_pool_fresh mapped these already. */
	if (!a->populate_read)
		arena_prefault(a->base, geo.desc_lock_end);
	atomic_store_explicit(&a->ctl->flags, pages | recycled, memory_order_relaxed);
	ring_arena_lock(a, mlock_failed);
	arena_init_control(a, cfg, start_time);
	a->pid = a->ctl->pid;
	a->start_time = start_time;
	close(fd);
	err = ring_consumers_init(a, true);
	if (err) {
		ada_arena_close(a);
		unlink(path);
		return err;
	}
	*out = a;
	return 0;
out_unlink:
	unlink(path);
	close(fd);
	return err;
}

/* Everything ada_arena_open() checks before it touches a slot. */
static int arena_validate(struct ada_arena *a, uint64_t file_size)
{
	const struct ada_arena_control *c = a->ctl;
	if (file_size < sizeof(*c))
		return -EPROTO;
	uint64_t magic =
	    atomic_load_explicit((_Atomic uint64_t *)&c->magic,
	                         memory_order_acquire); /* Pairs with arena_init_control(). */
	if (magic != ADA_ARENA_MAGIC || c->version != ADA_ARENA_VERSION ||
	    c->control_size != sizeof(*c) || (c->machine != EM_X86_64 && c->machine != EM_AARCH64))
		return -EPROTO;
	a->cfg = c->config;
	if (ring_geometry(&a->cfg, &a->geo) != 0)
		return -EPROTO;
	if (c->layout_size != a->geo.total || c->desc_offset != a->geo.desc_offset ||
	    c->slots_offset != a->geo.slots_offset || c->slot_stride != a->geo.slot_stride ||
	    c->detail_offset != a->geo.detail_offset || c->keysym_offset != a->geo.keysym_offset ||
	    file_size < a->geo.total)
		return -EPROTO;
	a->desc = (struct ada_slot_desc *)(a->base + a->geo.desc_offset);
	a->nslots = a->cfg.max_threads + a->cfg.spill_threads; /* valid: <= 65536 */
	a->pid = c->pid;
	a->start_time = c->start_time;
	return 0;
}

int ada_arena_open_fd(int fd, struct ada_arena **out)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof(struct ada_arena_control))
		return -EPROTO;
	struct ada_arena *a = NULL;
	int err = arena_map(fd, (uint64_t)st.st_size, false, &a);
	if (err)
		return err;
	err = arena_validate(a, (uint64_t)st.st_size);
	if (err == 0)
		err = ring_consumers_init(a, false);
	if (err) {
		ada_arena_close(a);
		return err;
	}
	*out = a;
	return 0;
}

/* path opened read-write only once it is known to be a regular file: an
 * O_PATH descriptor (no open of the object itself: a device's open has
 * side effects, a FIFO's blocks) is checked with fstat, then reopened
 * through /proc/self/fd, which names that same inode whatever the path
 * names by then. Without /proc: a direct open that neither blocks nor
 * takes a terminal, and the same inode insisted on. -EPROTO: not a
 * regular file (a link, a device, a FIFO); -EISDIR: a directory. */
static int arena_open_regular(const char *path)
{
	struct stat st, st2;
	char self[64];
	int pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	int bad = fstat(pfd, &st) != 0   ? -errno
	          : S_ISDIR(st.st_mode)  ? -EISDIR /* as an open O_RDWR said */
	          : !S_ISREG(st.st_mode) ? -EPROTO
	                                 : 0;
	if (bad) {
		close(pfd);
		return bad;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	int fd = open(self, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	int err = fd < 0 ? -errno : 0;
	close(pfd);
	if (fd >= 0 && (fstat(fd, &st2) != 0 || !S_ISREG(st2.st_mode) || st2.st_dev != st.st_dev ||
	                st2.st_ino != st.st_ino))
		err = -EPROTO;
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

int ada_arena_open(const char *path, struct ada_arena **out)
{
	if (!path || !out)
		return -EINVAL;
	int fd = arena_open_regular(path);
	if (fd < 0)
		return fd == -ELOOP ? -EPROTO : fd;
	int err = ada_arena_open_fd(fd, out);
	close(fd);
	return err;
}

ADA_FORK_PATH void ada_arena_close(struct ada_arena *a)
{
	if (!a)
		return;
	munmap(a->base, a->map_size);
	ada_shm_budget_close(a->budget);
	ring_consumers_free(a);
	free(a->pub_path);
	free(a);
}

void ada_arena_mapping(const struct ada_arena *a, const void **base, uint64_t *size)
{
	*base = a->base;
	*size = a->map_size;
}

ADA_FORK_PATH const struct ada_arena_config *ada_arena_config_of(const struct ada_arena *a)
{
	return &a->cfg;
}

ADA_FORK_PATH int32_t ada_arena_pid(const struct ada_arena *a)
{
	return a->pid; /* read once at open */
}

ADA_FORK_PATH uint32_t ada_arena_start_time(const struct ada_arena *a)
{
	return a->start_time; /* read once at open */
}

void ada_arena_origin(const struct ada_arena *a, struct ada_arena_origin *out)
{
	const struct ada_arena_control *c = a->ctl;
	out->machine = c->machine; /* checked at open, never written again */
	out->counter_hz = c->counter_hz;
	out->anchor_counter = c->anchor_counter;
	out->anchor_ns = c->anchor_ns;
}

ADA_FORK_PATH bool ada_arena_pid_reused(const struct ada_arena *a)
{
	return a && a->pid_reused;
}

uint32_t ada_arena_flags(const struct ada_arena *a)
{
	return atomic_load_explicit(&a->ctl->flags, memory_order_relaxed);
}

bool ada_arena_mlocked(const struct ada_arena *a)
{
	return a->mlocked;
}

static void arena_set_state(struct ada_arena *a, uint32_t state, int info)
{
	atomic_store_explicit(&a->ctl->exit_info, info, memory_order_relaxed);
	/* Publishes exit_info with the state; pairs with the acquire load in
	 * ada_arena_process_state(). */
	atomic_store_explicit(&a->ctl->process_state, state, memory_order_release);
	/* The process ends: a drain asleep finishes it now (its last events,
	 * a crash's windows), not at its timer. The producer's handle only
	 * (the recorder's has no budget page). */
	ada_shm_budget_ring(a->budget);
}

void ada_arena_set_exited(struct ada_arena *a, int status)
{
	arena_set_state(a, ADA_PROC_EXITED, status);
}

void ada_arena_set_crashed(struct ada_arena *a, int signo)
{
	arena_set_state(a, ADA_PROC_CRASHED, signo);
}

bool ada_arena_record_crash(struct ada_arena *a, const struct ada_crash_info *ci)
{
	struct ada_arena_control *c = a->ctl;
	uint32_t none = 0, tid = ci->tid ? ci->tid : 1;
	if (!atomic_compare_exchange_strong_explicit(&c->crash_tid, &none, tid,
	                                             memory_order_relaxed, memory_order_relaxed))
		return false; /* another thread died first: its record stands */
	atomic_store_explicit(&c->crash_signo, ci->signo, memory_order_relaxed);
	atomic_store_explicit(&c->crash_code, ci->code, memory_order_relaxed);
	atomic_store_explicit(&c->crash_addr, ci->addr, memory_order_relaxed);
	atomic_store_explicit(&c->crash_ts, ci->ts_raw, memory_order_relaxed);
	for (uint32_t i = 0; i < ADA_CRASH_NREGS; i++)
		atomic_store_explicit(&c->crash_regs[i], ci->regs[i], memory_order_relaxed);
	/* Publishes the fields above; pairs with the acquire load in
	 * ada_arena_crash_info(). */
	atomic_store_explicit(&c->crash_ready, 1, memory_order_release);
	arena_set_state(a, ADA_PROC_CRASHED, ci->signo);
	return true;
}

bool ada_arena_crash_info(const struct ada_arena *a, struct ada_crash_info *out)
{
	const struct ada_arena_control *c = a->ctl;
	/* Pairs with the release store in ada_arena_record_crash(). */
	if (!atomic_load_explicit(&c->crash_ready, memory_order_acquire))
		return false;
	*out = (struct ada_crash_info){
	    .signo = atomic_load_explicit(&c->crash_signo, memory_order_relaxed),
	    .code = atomic_load_explicit(&c->crash_code, memory_order_relaxed),
	    .tid = atomic_load_explicit(&c->crash_tid, memory_order_relaxed),
	    .addr = atomic_load_explicit(&c->crash_addr, memory_order_relaxed),
	    .ts_raw = atomic_load_explicit(&c->crash_ts, memory_order_relaxed),
	};
	for (uint32_t i = 0; i < ADA_CRASH_NREGS; i++)
		out->regs[i] = atomic_load_explicit(&c->crash_regs[i], memory_order_relaxed);
	return true;
}

void ada_arena_record_crash_others(struct ada_arena *a, uint32_t how,
                                   const struct ada_crash_thread *t, uint32_t n, uint32_t seen)
{
	struct ada_arena_control *c = a->ctl;
	if (n > ADA_CRASH_OTHERS)
		n = ADA_CRASH_OTHERS;
	for (uint32_t i = 0; i < n; i++) {
		atomic_store_explicit(&c->others[i].tid, t[i].tid, memory_order_relaxed);
		atomic_store_explicit(&c->others[i].nr, t[i].nr, memory_order_relaxed);
		atomic_store_explicit(&c->others[i].sp, t[i].sp, memory_order_relaxed);
		atomic_store_explicit(&c->others[i].pc, t[i].pc, memory_order_relaxed);
	}
	atomic_store_explicit(&c->others_n, n, memory_order_relaxed);
	atomic_store_explicit(&c->others_seen, seen, memory_order_relaxed);
	/* Publishes the fields above; pairs with the acquire load in
	 * ada_arena_crash_others(). */
	atomic_store_explicit(&c->others_how, how, memory_order_release);
}

uint32_t ada_arena_crash_others(const struct ada_arena *a,
                                struct ada_crash_thread out[ADA_CRASH_OTHERS], uint32_t *n,
                                uint32_t *seen)
{
	const struct ada_arena_control *c = a->ctl;
	/* Pairs with the release store in ada_arena_record_crash_others(). */
	uint32_t how = atomic_load_explicit(&c->others_how, memory_order_acquire);
	*n = *seen = 0;
	if (how == ADA_OTHERS_NONE)
		return how;
	uint32_t k = atomic_load_explicit(&c->others_n, memory_order_relaxed);
	*n = k < ADA_CRASH_OTHERS ? k : ADA_CRASH_OTHERS;
	*seen = atomic_load_explicit(&c->others_seen, memory_order_relaxed);
	for (uint32_t i = 0; i < *n; i++)
		out[i] = (struct ada_crash_thread){
		    .tid = atomic_load_explicit(&c->others[i].tid, memory_order_relaxed),
		    .nr = atomic_load_explicit(&c->others[i].nr, memory_order_relaxed),
		    .sp = atomic_load_explicit(&c->others[i].sp, memory_order_relaxed),
		    .pc = atomic_load_explicit(&c->others[i].pc, memory_order_relaxed),
		};
	return how;
}

uint32_t ada_arena_process_state(const struct ada_arena *a, int *status_or_signal)
{
	/* Pairs with the release store in arena_set_state(). */
	uint32_t s = atomic_load_explicit(&a->ctl->process_state, memory_order_acquire);
	if (status_or_signal)
		*status_or_signal = atomic_load_explicit(&a->ctl->exit_info, memory_order_relaxed);
	return s;
}

struct ada_metrics *ada_arena_metrics(struct ada_arena *a)
{
	return &a->ctl->metrics;
}

void ada_arena_drain_heartbeat(struct ada_arena *a)
{
	/* Only a change matters to the producer; nothing is published with it. */
	atomic_fetch_add_explicit(&a->ctl->heartbeat, 1, memory_order_relaxed);
}

uint64_t ada_arena_heartbeat(const struct ada_arena *a)
{
	return atomic_load_explicit(&a->ctl->heartbeat, memory_order_relaxed);
}

const char *ada_drop_reason_name(unsigned reason)
{
	static const char *const names[ADA_DROP_REASON_COUNT] = {
	    "ring_full",     "drain_lag",    "detail_overwritten", "no_slot",
	    "corrupt",       "thread_limit", "window_lost",        "keysym_unknown",
	    "recorder_gone", "fd_limit",     "unread_at_end",
	};
	return reason < ADA_DROP_REASON_COUNT ? names[reason] : "?";
}

void ring_arena_drop(struct ada_arena *a, enum ada_lane lane, enum ada_drop_reason why)
{
	atomic_fetch_add_explicit(&a->ctl->drops[lane][why], 1, memory_order_relaxed);
}

void ring_slot_drop(struct ada_arena *a, uint32_t slot, enum ada_lane lane,
                    enum ada_drop_reason why)
{
	_Atomic uint64_t *d = &ring_index_hdr(a, slot)->drops[lane][why];
	/* Single writer while the slot is owned: no locked add needed. */
	atomic_store_explicit(d, atomic_load_explicit(d, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
}

/* Approximate while ada_arena_slot_free() folds a slot's counters (a
 * reader may see them twice for that instant); exact once quiescent. */
void ada_arena_drop_totals(const struct ada_arena *a,
                           uint64_t out[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT])
{
	for (int l = 0; l < ADA_LANE_COUNT; l++)
		for (int r = 0; r < ADA_DROP_REASON_COUNT; r++)
			out[l][r] =
			    atomic_load_explicit(&a->ctl->drops[l][r], memory_order_relaxed);
	uint32_t used = ring_slots_used(a); /* the others were never claimed */
	for (uint32_t s = 0; s < used; s++) {
		if (ada_slot_fault(a, s, NULL))
			continue; /* quarantined: its counters are as untrusted as its ring */
		/* Free and never claimed (no RING_POP_* bit: every claim sets
		 * one): its counters are zero, and reading them would allocate a
		 * page of its ring -- max_threads of them per process, each
		 * manifest. Relaxed: hints; a slot claimed meanwhile is read
		 * next time. */
		if (!atomic_load_explicit(&a->desc[s].populated, memory_order_relaxed) &&
		    atomic_load_explicit(&a->desc[s].state, memory_order_relaxed) == ADA_SLOT_FREE)
			continue;
		struct ada_index_hdr *h = ring_index_hdr(a, s);
		for (int l = 0; l < ADA_LANE_COUNT; l++)
			for (int r = 0; r < ADA_DROP_REASON_COUNT; r++)
				out[l][r] +=
				    atomic_load_explicit(&h->drops[l][r], memory_order_relaxed);
	}
}

uint64_t ada_arena_spill_bytes_taken(const struct ada_arena *a)
{
	/* Written by the target: never more than its spill slots. */
	uint32_t n = atomic_load_explicit(&a->ctl->spill_taken, memory_order_relaxed);
	if (n > a->cfg.spill_threads)
		n = a->cfg.spill_threads;
	return (uint64_t)n * ring_spill_budget_unit(&a->geo);
}

ADA_FORK_PATH uint8_t *ada_arena_keysym_area(const struct ada_arena *a, uint64_t *bytes)
{
	uint32_t l = a->cfg.keysym_log2;
	if (bytes)
		*bytes = l ? (uint64_t)1 << l : 0;
	return l ? a->base + a->geo.keysym_offset : NULL;
}

ADA_FORK_PATH _Atomic uint64_t *ada_arena_keysym_cur(const struct ada_arena *a)
{
	return a->cfg.keysym_log2 ? &a->ctl->keysym_cur : NULL;
}

ADA_FORK_PATH void ada_arena_set_flags(struct ada_arena *a, uint32_t flags)
{
	atomic_fetch_or_explicit(&a->ctl->flags, flags, memory_order_relaxed);
}
