/*
 * The golden session: two threads of one process, thread 0 with a detail
 * file linked both ways, a manifest and one module's symbol file. Every
 * byte is fixed here (no clock, no pid, no randomness) so the files under
 * tests/data/golden/ can be compared byte for byte with a fresh run.
 *
 * thread 0 (tid 4242)                      thread 1 (tid 4243)
 *   0 1000 call   main   d1                  0 1100 call   worker d1
 *   1 1100 call   foo    d2                  1 1200 call   foo    d2
 *   2 1200 call   bar    d3  detail 0        2 1250 except foo    d2
 *   3 1300 return bar    d3                  3 1700 return worker d1
 *   4 1400 return foo    d2  detail 1
 *   5 1500 call   2:7    d2  (module 2 has no symbol file)
 *   6 1500 return 2:7    d2
 *   7 1600 return main   d1
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "atf.h"
#include "atf_golden.h"
#include "manifest.h"

const char *const golden_files[] = {
    GOLDEN_PID_DIR "/manifest.json",         GOLDEN_PID_DIR "/thread_0/index.atf",
    GOLDEN_PID_DIR "/thread_0/detail.atf",   GOLDEN_PID_DIR "/thread_1/index.atf",
    GOLDEN_PID_DIR "/modules/module_1.syms", NULL,
};

struct golden_ev {
	uint64_t ts;
	uint32_t module, sym, kind, depth, detail;
};

#define ND ATF_NO_DETAIL
static const struct golden_ev golden_t0[] = {
    {1000, 1, 0, ATF_EVENT_CALL, 1, ND},   {1100, 1, 1, ATF_EVENT_CALL, 2, ND},
    {1200, 1, 2, ATF_EVENT_CALL, 3, 0},    {1300, 1, 2, ATF_EVENT_RETURN, 3, ND},
    {1400, 1, 1, ATF_EVENT_RETURN, 2, 1},  {1500, 2, 7, ATF_EVENT_CALL, 2, ND},
    {1500, 2, 7, ATF_EVENT_RETURN, 2, ND}, {1600, 1, 0, ATF_EVENT_RETURN, 1, ND},
};
static const struct golden_ev golden_t1[] = {
    {1100, 1, 3, ATF_EVENT_CALL, 1, ND},
    {1200, 1, 1, ATF_EVENT_CALL, 2, ND},
    {1250, 1, 1, ATF_EVENT_EXCEPTION, 2, ND},
    {1700, 1, 3, ATF_EVENT_RETURN, 1, ND},
};

static const char golden_syms_lines[] = "F 0 1139 42 hooked main\n"
                                        "F 1 1170 17 hooked foo\n"
                                        "F 2 1190 9 hooked bar\n"
                                        "F 3 11a0 64 hooked worker\n"
                                        "F 4 11f0 3 too_short tiny\n";

static int golden_mkdir(const char *root, const char *sub)
{
	char path[4096];

	int n = snprintf(path, sizeof(path), "%s%s%s", root, sub ? "/" : "", sub ? sub : "");

	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -errno;
}

static int golden_index(const char *path, uint32_t tid, bool has_detail,
                        const struct golden_ev *evs, size_t n)
{
	struct ada_atf_file_info info;
	struct ada_atf_writer *w;
	int err;

	ada_atf_file_info_native(&info, tid);
	info.arch = ATF_ARCH_X86_64; /* fixed bytes whatever the build host */
	info.has_detail = has_detail;
	err = ada_atf_writer_new(path, false, &info, &w);
	for (size_t i = 0; !err && i < n; i++) {
		struct atf_index_event ev = {
		    .timestamp_ns = evs[i].ts,
		    .function_id = atf_function_id(evs[i].module, evs[i].sym),
		    .thread_id = tid,
		    .event_kind = evs[i].kind,
		    .call_depth = evs[i].depth,
		    .detail_seq = evs[i].detail,
		};
		err = ada_atf_writer_index(w, &ev);
	}
	if (err) {
		ada_atf_writer_abort(w);
		return err;
	}
	return ada_atf_writer_finish(w);
}

/* A detail record for index event seq of thread 0, with stack bytes. */
static int golden_detail_one(struct ada_atf_writer *w, uint32_t seq, uint16_t type, uint16_t stack)
{
	uint8_t buf[ATF_DETAIL_EVENT_HEADER_SIZE + sizeof(struct atf_detail_function_payload) + 64];
	struct atf_detail_event_header h = {
	    .total_length = (uint32_t)(ATF_DETAIL_EVENT_HEADER_SIZE +
	                               sizeof(struct atf_detail_function_payload) + stack),
	    .event_type = type,
	    .index_seq = seq,
	    .thread_id = 4242,
	    .timestamp = golden_t0[seq].ts,
	};
	struct atf_detail_function_payload p = {
	    .function_id = atf_function_id(golden_t0[seq].module, golden_t0[seq].sym),
	    .lr = 0x555555555234,
	    .fp = 0x7ffd0000f000 - 16 * seq,
	    .sp = 0x7ffd0000efd0 - 16 * seq,
	    .stack_size = stack,
	};
	for (int r = 0; r < 8; r++)
		p.x_regs[r] = 0x1000u * (seq + 1) + (uint64_t)r;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &p, sizeof(p));
	for (uint16_t i = 0; i < stack; i++)
		buf[sizeof(h) + sizeof(p) + i] = (uint8_t)(0xa0 + i);
	return ada_atf_writer_detail(w, (const struct atf_detail_event_header *)buf);
}

static int golden_detail(const char *path)
{
	struct ada_atf_file_info info;
	struct ada_atf_writer *w;
	int err;

	ada_atf_file_info_native(&info, 4242);
	info.arch = ATF_ARCH_X86_64;
	err = ada_atf_writer_new(path, true, &info, &w);
	if (err)
		return err;
	err = golden_detail_one(w, 2, ATF_DETAIL_FUNCTION_CALL, 16);
	if (!err)
		err = golden_detail_one(w, 4, ATF_DETAIL_FUNCTION_RETURN, 0);
	if (err) {
		ada_atf_writer_abort(w);
		return err;
	}
	return ada_atf_writer_finish(w);
}

static int golden_syms(const char *path)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f)
		return -errno;
	fprintf(f,
	        "# ada symbols, golden test data\nada-symbols 1\nmodule_id 1\npath "
	        "/usr/bin/golden-demo\n"
	        "build_id 0123456789abcdef0123456789abcdef01234567\nload_base 0x555555554000\n"
	        "symbol_source symtab\ntable_xxh64 %016llx\nfunctions 5\n%s",
	        (unsigned long long)XXH64(golden_syms_lines, strlen(golden_syms_lines), 0),
	        golden_syms_lines);
	err = ferror(f) ? -EIO : 0;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static json_t *golden_thread(uint32_t n, uint32_t tid, uint64_t events, uint64_t t0, uint64_t t1,
                             bool detail)
{
	char path[64];

	snprintf(path, sizeof(path), "thread_%u/index.atf", n);
	return json_pack("{s:i, s:i, s:[{s:s, s:n, s:I, s:I, s:I}], s:b}", "thread", (json_int_t)n,
	                 "tid", (json_int_t)tid, "files", "path", path, "generation", "events",
	                 (json_int_t)events, "time_start_ns", (json_int_t)t0, "time_end_ns",
	                 (json_int_t)t1, "detail", detail);
}

static json_t *golden_manifest_doc(void)
{
	json_t *doc = ada_manifest_new(GOLDEN_PID);
	char xxh[17];

	snprintf(xxh, sizeof(xxh), "%016llx",
	         (unsigned long long)XXH64(golden_syms_lines, strlen(golden_syms_lines), 0));

	json_object_set_new(doc, "program", json_pack("[s, s]", "/usr/bin/golden-demo", "--work"));
	json_object_set_new(doc, "state", json_string("complete"));
	json_object_set_new(doc, "arena", json_string("/dev/shm/ada-golden/4242.ring"));
	json_object_set_new(doc, "start_time_ns", json_integer(900));
	json_object_set_new(doc, "end_time_ns", json_integer(1800));
	json_object_set_new(doc, "clock",
	                    json_pack("{s:s, s:s, s:I}", "type", "boottime", "source", "tsc",
	                              "tsc_hz", (json_int_t)2000000000));
	json_object_set_new(doc, "exit",
	                    json_pack("{s:i, s:n, s:b}", "status", 0, "signal", "abnormal", 0));
	json_object_set_new(doc, "threads",
	                    json_pack("[o, o]", golden_thread(0, 4242, 8, 1000, 1600, true),
	                              golden_thread(1, 4243, 4, 1100, 1700, false)));
	json_object_set_new(doc, "modules",
	                    json_pack("[{s:i, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:{s:i}}, {s:i, "
	                              "s:s, s:n, s:s, s:n, s:n}]",
	                              "id", 1, "path", "/usr/bin/golden-demo", "build_id",
	                              "0123456789abcdef0123456789abcdef01234567", "load_base",
	                              "0x555555554000", "symbols", "modules/module_1.syms",
	                              "table_xxh64", xxh, "functions", 5, "hooked", 4, "skipped",
	                              "too_short", 1, "id", 2, "path", "/usr/lib/libgolden.so",
	                              "build_id", "load_base", "0x7f0000000000", "symbols",
	                              "table_xxh64"));
	json_object_set_new(doc, "drops", json_pack("{s:{}, s:{}}", "index", "detail"));
	json_object_set_new(doc, "warnings", json_array());
	return doc;
}

int golden_write(const char *root)
{
	char dir[4096], p[4200];
	json_t *doc;
	int err;

	snprintf(dir, sizeof(dir), "%s/%s", root, GOLDEN_PID_DIR);
	if ((err = golden_mkdir(root, NULL)) || (err = golden_mkdir(dir, NULL)) ||
	    (err = golden_mkdir(dir, "thread_0")) || (err = golden_mkdir(dir, "thread_1")) ||
	    (err = golden_mkdir(dir, "modules")))
		return err;
	snprintf(p, sizeof(p), "%s/thread_0/index.atf", dir);
	if ((err =
	         golden_index(p, 4242, true, golden_t0, sizeof(golden_t0) / sizeof(golden_t0[0]))))
		return err;
	snprintf(p, sizeof(p), "%s/thread_0/detail.atf", dir);
	if ((err = golden_detail(p)))
		return err;
	snprintf(p, sizeof(p), "%s/thread_1/index.atf", dir);
	if ((err =
	         golden_index(p, 4243, false, golden_t1, sizeof(golden_t1) / sizeof(golden_t1[0]))))
		return err;
	snprintf(p, sizeof(p), "%s/modules/module_1.syms", dir);
	if ((err = golden_syms(p)))
		return err;
	doc = golden_manifest_doc();
	if (!doc)
		return -ENOMEM;
	err = ada_manifest_write(dir, doc);
	json_decref(doc);
	return err;
}
