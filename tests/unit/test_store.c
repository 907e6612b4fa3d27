/* The embedded store (src/store/): every field of a profile round-trips; ranges and filters
 * merge the right intervals; retention by age and size drops the oldest first and counts
 * them; a process killed with SIGKILL while writing leaves a file that opens with every
 * committed interval whole; a reader in another process sees whole intervals only while a
 * writer runs; a corrupt file is a clear error and can be moved aside.
 */
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "export/pprof_fields.h"
#include "export/pprof_read.h"
#include "export/protobuf.h"
#include "profile/profile.h"
#include "store/pprof_import.h"
#include "store/store.h"
#include "store/store_sink.h"
#include "scratch.h"
#include "test.h"

static char dir[64];

static const char *path_of(const char *name)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

/* A profile of one interval starting at t s, with every kind of frame, inline lines, labels,
 * two processes; `salt` makes a distinct leaf (for retention tests), `scale` multiplies counts.
 */
static struct profile *make_profile(uint64_t t, unsigned salt, uint64_t scale)
{
	struct profile_opts po = { .period_ns = 10101010, .start_time_ns = t * 1000000000ULL };
	struct profile *p = profile__new(&po);
	struct profile_mapping exe = { "/usr/bin/app",
				       "0123abcd",
				       0x1000,
				       0x9000,
				       0x1000,
				       "00112233445566778899aabbccddeeff",
				       NULL };
	struct profile_mapping go = { "/opt/svc", NULL, 0x400000, 0x800000, 0, NULL, "go-bid/x" };
	struct profile_line l_main[] = { { "inlined_helper", "app.c", 12 },
					 { "main", "app.c", 40 } };
	struct profile_line l_py[] = { { "handler", "/srv/app.py", 7 } };
	struct profile_line l_js[] = { { "gamma", "/srv/app.js", 12, 9 } };
	struct profile_line l_err[] = { { "[unwind: no CFI]", NULL, 0 } };
	struct profile_line l_k[] = { { "do_syscall_64", NULL, 0 } };
	struct profile_line l_go[] = { { "main.serve", "/src/serve.go", 99 } };
	struct profile_label labels[] = { { "route", "/api" }, { "tenant", "blue" } };
	char leaf[64];
	struct profile_line l_leaf[] = { { leaf, "leaf.c", salt } };
	uint32_t m_exe, m_go, f[8], stack1[5], stack2[3];

	REQUIRE(p);
	snprintf(leaf, sizeof(leaf), "leaf_%u", salt);
	m_exe = profile__add_mapping(p, &exe);
	m_go = profile__add_mapping(p, &go);
	f[0] = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, m_exe, 0x1234, l_main,
							      2, NULL, true });
	f[1] = profile__add_frame(p, &(struct profile_frame){ FRAME_RUNTIME, 0, 0, l_py, 1,
							      "cpython", false });
	f[2] = profile__add_frame(p, &(struct profile_frame){ FRAME_ERROR, 0, 0, l_err, 1 });
	f[3] = profile__add_frame(p, &(struct profile_frame){ FRAME_KERNEL, 0,
							      0xffffffff81000000ULL, l_k, 1 });
	f[4] = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, m_go, 0x401000, l_go, 1,
							      "go", false });
	f[5] = profile__add_frame(p,
				  &(struct profile_frame){ FRAME_NATIVE, m_exe, 0x2000, NULL, 0 });
	f[6] = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, m_exe, 0x3000 + salt,
							      l_leaf, 1 });
	f[7] = profile__add_frame(p, &(struct profile_frame){ FRAME_RUNTIME, 0, 0, l_js, 1, "v8js",
							      false });
	stack1[0] = f[3];
	stack1[1] = f[1];
	stack1[2] = f[7];
	stack1[3] = f[0];
	stack1[4] = f[5];
	stack2[0] = f[6];
	stack2[1] = f[4];
	stack2[2] = f[2];
	REQUIRE(!profile__add_sample(p, &(struct profile_sample){ .frames = stack1,
								  .frame_cnt = 5,
								  .pid = 100,
								  .tid = 101,
								  .comm = "app",
								  .thread_comm = "worker",
								  .count = 3 * scale }));
	REQUIRE(!profile__add_sample(p, &(struct profile_sample){ .frames = stack2,
								  .frame_cnt = 3,
								  .pid = 200,
								  .tid = 200,
								  .comm = "svc",
								  .thread_comm = "svc",
								  .count = 5 * scale,
								  .labels = labels,
								  .label_cnt = 2 }));
	REQUIRE(!profile__add_sample(p, &(struct profile_sample){ .frames = stack2,
								  .frame_cnt = 1,
								  .pid = 200,
								  .tid = 201,
								  .comm = "svc",
								  .thread_comm = "gc",
								  .count = 1 * scale }));
	profile__set_end_time(p, (t + 1) * 1000000000ULL);
	return p;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every aggregated sample with all it says (frames with kind, address, mapping, lines,
 * runtime, call site; labels), one line each, sorted: two profiles with the same samples
 * dump the same text whatever their ids.
 */
static char *dump(const struct profile *p)
{
	size_t n = profile__sample_cnt(p), i, sz = 0;
	char **lines = calloc(n + 1, sizeof(*lines)), *out;
	FILE *all;

	REQUIRE(lines);
	for (i = 0; i < n; i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);
		uint32_t fc, k, l;
		const uint32_t *fr = profile__stack(p, s->stack, &fc);
		struct profile_label lb;
		size_t len = 0;
		FILE *f = open_memstream(&lines[i], &len);

		fprintf(f, "%u/%u %s/%s x%llu", s->pid, s->tid, s->comm, s->thread_comm,
			(unsigned long long)s->count);
		for (k = 0; profile__label(p, s->labels, k, &lb); k++)
			fprintf(f, " [%s=%s]", lb.key, lb.value);
		for (k = 0; k < fc; k++) {
			const struct profile_frame *fm = profile__frame(p, fr[k]);
			const struct profile_mapping *m = profile__mapping(p, fm->mapping);

			fprintf(f, " | %d %llx %s %d", fm->kind, (unsigned long long)fm->address,
				fm->runtime ?: "-", fm->call_site);
			if (m)
				fprintf(f, " {%s %s %llx-%llx@%llx %s %s}", m->path,
					m->build_id ?: "-", (unsigned long long)m->start,
					(unsigned long long)m->limit,
					(unsigned long long)m->file_offset, m->file_hash ?: "-",
					m->go_build_id ?: "-");
			for (l = 0; l < fm->line_cnt; l++)
				fprintf(f, " %s@%s:%u:%u", fm->lines[l].function,
					fm->lines[l].file ?: "-", fm->lines[l].line,
					fm->lines[l].column);
		}
		fclose(f);
	}
	qsort(lines, n, sizeof(*lines), cmp_lines);
	all = open_memstream(&out, &sz);
	for (i = 0; i < n; i++) {
		fprintf(all, "%s\n", lines[i]);
		free(lines[i]);
	}
	fclose(all);
	free(lines);
	return out;
}

static struct store *open_store(const char *name, uint64_t max_sz, uint64_t max_age_s)
{
	struct store_opts o = { path_of(name), max_sz, max_age_s * 1000000000ULL, false };
	char err[256];
	struct store *st = store__open(&o, err, sizeof(err));

	if (!st)
		printf("  store__open: %s\n", err);
	return st;
}

static int exe_of(void *ctx, uint32_t pid, struct store_process *out)
{
	out->exe = pid == 100 ? "/usr/bin/app" : "/opt/svc";
	out->container = pid == 200 ? "c0ffee" : NULL;
	return 0;
}

TEST(round_trip)
{
	struct store *st = open_store("rt.db", 0, 0);
	struct profile *in = make_profile(1000, 1, 1), *out = NULL;
	struct store_filter f = { 0 };
	char *a, *b;

	REQUIRE(st);
	CHECK_EQ_INT(store__write(st, in, exe_of, NULL), 0);
	REQUIRE(!store__query(st, &f, &out));
	a = dump(in);
	b = dump(out);
	CHECK_STR(b, a);
	CHECK(strstr(b, " gamma@/srv/app.js:12:9 ")); /* a V8 frame's column */
	CHECK_EQ_U64(profile__total_samples(out), 9);
	CHECK_EQ_U64(profile__start_time_ns(out), 1000 * 1000000000ULL);
	CHECK_EQ_U64(profile__end_time_ns(out), 1001 * 1000000000ULL);
	CHECK_EQ_U64(profile__period_ns(out), 10101010);
	free(a);
	free(b);
	profile__free(in);
	profile__free(out);
	store__close(st);
}

static uint64_t query_total(struct store *st, const struct store_filter *f)
{
	struct profile *p = NULL;
	uint64_t n;

	if (store__query(st, f, &p))
		return UINT64_MAX;
	n = profile__total_samples(p);
	profile__free(p);
	return n;
}

TEST(range_and_filters)
{
	struct store *st = open_store("rf.db", 0, 0);
	struct store_filter f = { 0 };
	int i;

	REQUIRE(st);
	for (i = 0; i < 10; i++) {
		struct profile *p = make_profile(2000 + (uint64_t)i * 2, 1, (uint64_t)i + 1);

		CHECK_EQ_INT(store__write(st, p, exe_of, NULL), 0);
		profile__free(p);
	}
	/* all: 9 * (1 + ... + 10) */
	CHECK_EQ_U64(query_total(st, &f), 9 * 55);
	/* intervals 3 and 4 (starting at 2006 and 2008 s) */
	f.from_ns = 2006 * 1000000000ULL + 1;
	f.to_ns = 2008 * 1000000000ULL + 1;
	CHECK_EQ_U64(query_total(st, &f), 9 * (4 + 5));
	memset(&f, 0, sizeof(f));
	f.pid = 100;
	CHECK_EQ_U64(query_total(st, &f), 3 * 55);
	f.pid = 0;
	f.comm = "svc";
	f.thread = "gc";
	CHECK_EQ_U64(query_total(st, &f), 55);
	f.thread = NULL;
	f.label = "route=/api";
	CHECK_EQ_U64(query_total(st, &f), 5 * 55);
	f.label = "route=/none";
	CHECK_EQ_U64(query_total(st, &f), 0);
	memset(&f, 0, sizeof(f));
	f.container = "c0ffee";
	CHECK_EQ_U64(query_total(st, &f), 6 * 55);
	f.container = NULL;
	f.exe = "/usr/bin/app";
	CHECK_EQ_U64(query_total(st, &f), 3 * 55);
	CHECK_EQ_INT(store_filter__parse(&f, "label", "novalue"), -EINVAL);
	CHECK_EQ_INT(store_filter__parse(&f, "pid", "12x"), -EINVAL);
	CHECK_EQ_INT(store_filter__parse(&f, "from", "-5m"), 1);
	CHECK_EQ_INT(store_filter__parse(&f, "color", "red"), 0);
	store__close(st);
}

/* An interval of the agent with --alloc and --faults at t s: one CPU sample, an allocation of
 * `alloc` bytes (freed: `freed`) and `carried` bytes live from before, on one stack; a fault.
 */
static struct profile *mem_profile(uint64_t t, uint64_t alloc, uint64_t freed, uint64_t carried)
{
	struct profile_opts po = { .period_ns = 10101010,
				   .start_time_ns = t * 1000000000ULL,
				   .mem_growth = true,
				   .mem_alloc = true };
	struct profile *p = profile__new(&po);
	struct profile_line l_leak[] = { { "leak_blocks", "wl.c", 3 } };
	struct profile_line l_cpu[] = { { "spin", "wl.c", 9 } };
	struct profile_line l_fault[] = { { "[mem: page fault]", NULL, 0 } };
	uint32_t f_leak, f_cpu, f_fault[2];

	if (!p)
		return NULL;
	f_leak = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 0x10, l_leak, 1 });
	f_cpu = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 0x20, l_cpu, 1 });
	/* a memory sample's own leaf: its stack is never a CPU sample's */
	f_fault[0] =
		profile__add_frame(p, &(struct profile_frame){ FRAME_ERROR, 0, 0, l_fault, 1 });
	f_fault[1] = f_cpu;
	profile__add_sample(p, &(struct profile_sample){ .frames = &f_cpu,
							 .frame_cnt = 1,
							 .pid = 7,
							 .tid = 7,
							 .comm = "wl",
							 .thread_comm = "wl",
							 .count = 3 });
	profile__add_sample(p, &(struct profile_sample){ .frames = &f_leak,
							 .frame_cnt = 1,
							 .pid = 7,
							 .tid = 7,
							 .comm = "wl",
							 .thread_comm = "wl",
							 .count = 1,
							 .mem_kind = PROFILE_MEM_ALLOC,
							 .mem_value = alloc,
							 .mem_objects = 1,
							 .mem_freed = freed,
							 .mem_freed_objects = freed ? 1 : 0,
							 .mem_carried = carried,
							 .mem_carried_objects = carried ? 1 : 0 });
	profile__add_sample(p, &(struct profile_sample){ .frames = f_fault,
							 .frame_cnt = 2,
							 .pid = 7,
							 .tid = 7,
							 .comm = "wl",
							 .thread_comm = "wl",
							 .count = 1,
							 .mem_kind = PROFILE_MEM_FAULTS,
							 .mem_value = 64 });
	profile__set_end_time(p, (t + 1) * 1000000000ULL);
	return p;
}

static int list_type(void *ctx, const char *type, const char *unit)
{
	char *out = ctx;

	snprintf(out + strlen(out), 256 - strlen(out), "%s/%s ", type, unit);
	return 0;
}

/* Memory rows by sample type: summed over intervals (alloc_space, fault_bytes), in use the
 * newest interval's alone; the CPU profile without them; the types listed.
 */
TEST(sample_types)
{
	struct store *st = open_store("types.db", 0, 0);
	struct store_filter f = { 0 };
	struct profile *p;
	char types[256] = "";

	REQUIRE(st);
	p = mem_profile(3000, 1000, 0, 0); /* 1000 allocated, live */
	CHECK_EQ_INT(store__write(st, p, NULL, NULL), 0);
	profile__free(p);
	p = mem_profile(3002, 500, 500, 1000); /* 500 more, freed; the 1000 carried */
	CHECK_EQ_INT(store__write(st, p, NULL, NULL), 0);
	profile__free(p);
	CHECK_EQ_U64(query_total(st, &f), 6); /* CPU: 3 + 3, no memory sample's count */
	CHECK_EQ_INT(store_filter__parse(&f, "sample_type", "alloc_space"), 1);
	CHECK_EQ_U64(query_total(st, &f), 1500);
	f.sample_type = "inuse_space";
	CHECK_EQ_U64(query_total(st, &f), 1000);
	f.sample_type = "inuse_objects";
	CHECK_EQ_U64(query_total(st, &f), 1);
	f.sample_type = "alloc_objects";
	CHECK_EQ_U64(query_total(st, &f), 2);
	f.sample_type = "fault_bytes";
	CHECK_EQ_U64(query_total(st, &f), 2 * 64 * 4096);
	f.sample_type = "cpu";
	CHECK_EQ_U64(query_total(st, &f), 6);
	f.sample_type = "inuse_space";
	f.to_ns = 3001 * 1000000000ULL; /* the range ends in the first interval */
	CHECK_EQ_U64(query_total(st, &f), 1000);
	f.sample_type = "nonsense";
	f.to_ns = 0;
	CHECK_EQ_U64(query_total(st, &f), 0);
	CHECK_EQ_INT(store__sample_types(st, 0, 0, list_type, types), 0);
	CHECK_STR(types, "samples/count alloc_objects/count alloc_space/bytes inuse_objects/count "
			 "inuse_space/bytes faults/count fault_bytes/bytes ");
	store__close(st);
}

static int count_iv(void *ctx, const struct store_interval *iv)
{
	(*(int *)ctx)++;
	return 0;
}

static int max_samples(void *ctx, const struct store_process_row *row)
{
	uint64_t *most = ctx;

	if (row->samples > *most)
		*most = row->samples;
	return 0;
}

static int first_iv(void *ctx, const struct store_interval *iv)
{
	*(struct store_interval *)ctx = *iv;
	return 1;
}

TEST(retention_by_age)
{
	struct store *st = open_store("age.db", 0, 5);
	struct store_stats s;
	int i, n = 0;

	REQUIRE(st);
	for (i = 0; i < 12; i++) {
		struct profile *p = make_profile(3000 + (uint64_t)i, (unsigned)i, 1);

		CHECK_EQ_INT(store__write(st, p, NULL, NULL), 0);
		profile__free(p);
	}
	store__stats(st, &s);
	/* newest ends at 3012 s: intervals ending before 3007 s are gone (3000..3005) */
	CHECK_EQ_U64(s.dropped_age, 6);
	CHECK_EQ_U64(s.interval_cnt, 6);
	CHECK_EQ_INT(store__intervals(st, 0, 0, count_iv, &n), 0);
	CHECK_EQ_INT(n, 6);
	store__close(st);
}

TEST(retention_by_size)
{
	const uint64_t cap = 256 * 1024;
	struct store *st = open_store("size.db", cap, 0);
	struct store_filter f = { 0 };
	struct store_stats s;
	int i;

	REQUIRE(st);
	for (i = 0; i < 3000; i++) {
		struct profile *p = make_profile(4000 + (uint64_t)i, (unsigned)i, 1);

		REQUIRE(store__write(st, p, NULL, NULL) == 0);
		profile__free(p);
	}
	store__stats(st, &s);
	CHECK(s.dropped_size > 0);
	CHECK(s.gc_runs > 0);
	CHECK(s.file_sz <= cap);
	CHECK_EQ_U64(s.dropped_size + s.interval_cnt, 3000);
	/* (the next write below adds one) */
	/* the newest interval is whole, every name its own (the writer's cache of rows by
	 * content forgot what the collections deleted: a row id kept from before one would name
	 * a deleted row, or one that took its id since)
	 */
	f.from_ns = (4000 + 2999) * 1000000000ULL;
	CHECK_EQ_U64(query_total(st, &f), 9);
	{
		/* the first interval's leaf again: its rows were collected long ago */
		struct profile *in = make_profile(4000 + 3000, 0, 1), *out = NULL;
		char *a, *b;

		REQUIRE(store__write(st, in, NULL, NULL) == 0);
		f.from_ns = (4000 + 3000) * 1000000000ULL;
		REQUIRE(!store__query(st, &f, &out));
		a = dump(in);
		b = dump(out);
		CHECK_STR(b, a);
		free(a);
		free(b);
		profile__free(in);
		profile__free(out);
	}
	store__close(st);
}

/* The writer keeps the dictionary rows it found or added from one write to the next (by
 * content); another connection that deletes them (`store gc`, the sqlite3 CLI) and gives their
 * ids to other rows between two writes must not make the second write name those: every name
 * read back is the profile's own.
 */
TEST(rows_deleted_by_another_connection)
{
	struct store *st = open_store("gone.db", 0, 0);
	struct profile *p1 = make_profile(9000, 1, 1), *p2 = make_profile(9001, 1, 1), *out = NULL;
	struct store_filter f = { .from_ns = 9001 * 1000000000ULL };
	sqlite3 *db = NULL;
	char *a, *b;

	REQUIRE(st);
	CHECK_EQ_INT(store__write(st, p1, exe_of, NULL), 0);
	REQUIRE(sqlite3_open(path_of("gone.db"), &db) == SQLITE_OK);
	REQUIRE(sqlite3_exec(db,
			     "DELETE FROM samples; DELETE FROM intervals; DELETE FROM stacks;"
			     "DELETE FROM frames; DELETE FROM mappings; DELETE FROM processes;"
			     "DELETE FROM threads; DELETE FROM label_sets; DELETE FROM strings;"
			     "INSERT INTO strings(id, s) VALUES (1, 'not yours'), (2, 'nor this'),"
			     " (3, 'x'), (4, 'y'), (5, 'z'), (6, 'w'), (7, 'v'), (8, 'u');",
			     NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK_EQ_INT(store__write(st, p2, exe_of, NULL), 0);
	REQUIRE(!store__query(st, &f, &out));
	a = dump(p2);
	b = dump(out);
	CHECK_STR(b, a);
	free(a);
	free(b);
	profile__free(p1);
	profile__free(p2);
	profile__free(out);
	store__close(st);
}

/* A second writer (an import, another agent) between two writes of the first: the first
 * keeps writing. Every interval after the co-writer's used to fail "database is locked": a
 * dictionary lookup that found its row left its statement running, so the writer kept a read
 * snapshot from before the co-writer's commit and could never take the write lock again.
 */
TEST(co_writer)
{
	struct store *a = open_store("co.db", 0, 0), *b = open_store("co.db", 0, 0);
	struct store_filter f = { 0 };
	int i, n = 0;

	REQUIRE(a && b);
	for (i = 0; i < 6; i++) {
		struct profile *p = make_profile(7000 + (uint64_t)i * 2, (unsigned)i % 2, 1);
		struct profile *q = make_profile(7001 + (uint64_t)i * 2, (unsigned)i % 2, 1);

		CHECK_EQ_INT(store__write(a, p, exe_of, NULL), 0);
		CHECK_EQ_INT(store__write(b, q, exe_of, NULL), 0);
		profile__free(p);
		profile__free(q);
	}
	CHECK_EQ_INT(store__intervals(a, 0, 0, count_iv, &n), 0);
	CHECK_EQ_INT(n, 12);
	CHECK_EQ_U64(query_total(a, &f), 12 * 9);
	store__close(a);
	store__close(b);
}

/* A pprof of one function whose samples say 2^63 - 1, 2^63 - 1 and 2: the import used to
 * report 0 samples (the sum wrapped), the store to hold negative values. Sums saturate now,
 * the store keeps INT64_MAX at most per value, and a query's sum saturates too.
 */
TEST(huge_counts)
{
	static const char *const strs[] = { "", "samples", "count", "hot", "pid" };
	const uint64_t values[] = { INT64_MAX, INT64_MAX, 2 };
	struct store *st = open_store("huge.db", 0, 0);
	struct pprof_profile *pp = NULL;
	struct profile *p = NULL, *out = NULL;
	struct store_filter f = { 0 };
	struct store_interval iv = { 0 };
	uint64_t most = 0;
	struct pb_buf b;
	size_t m, i;
	int n;

	REQUIRE(st);
	pb_buf__init(&b, 1 << 20);
	pb_buf__begin(&b, PROFILE_SAMPLE_TYPE, &m);
	pb_buf__varint(&b, VALUE_TYPE_TYPE, 1);
	pb_buf__varint(&b, VALUE_TYPE_UNIT, 2);
	pb_buf__end(&b, m);
	for (i = 0; i < 3; i++) {
		size_t lm;

		pb_buf__begin(&b, PROFILE_SAMPLE, &m);
		pb_buf__varint(&b, SAMPLE_LOCATION_ID, 1);
		pb_buf__varint(&b, SAMPLE_VALUE, values[i]);
		pb_buf__begin(&b, SAMPLE_LABEL, &lm);
		pb_buf__varint(&b, LABEL_KEY, 4);
		pb_buf__varint(&b, LABEL_NUM, 10 + i); /* three processes: three rows */
		pb_buf__end(&b, lm);
		pb_buf__end(&b, m);
	}
	pb_buf__begin(&b, PROFILE_LOCATION, &m);
	pb_buf__varint(&b, LOCATION_ID, 1);
	{
		size_t lm;

		pb_buf__begin(&b, LOCATION_LINE, &lm);
		pb_buf__varint(&b, LINE_FUNCTION_ID, 1);
		pb_buf__end(&b, lm);
	}
	pb_buf__end(&b, m);
	pb_buf__begin(&b, PROFILE_FUNCTION, &m);
	pb_buf__varint(&b, FUNCTION_ID, 1);
	pb_buf__varint(&b, FUNCTION_NAME, 3);
	pb_buf__end(&b, m);
	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		pb_buf__string(&b, PROFILE_STRING_TABLE, strs[i]);
	pb_buf__varint(&b, PROFILE_TIME_NANOS, 9000 * 1000000000ULL);
	pb_buf__varint(&b, PROFILE_DURATION_NANOS, INT64_MAX); /* the end past 2^63 too */
	REQUIRE(!pb_buf__err(&b));
	REQUIRE(!pprof_profile__decode(b.data, b.len, 0, &pp));
	REQUIRE(!pprof_import(pp, &p));
	CHECK_EQ_U64(profile__total_samples(p), UINT64_MAX);
	/* three intervals: the pid 10 row merges to 3 x (2^63 - 1), past 2^64 */
	for (i = 0; i < 3; i++)
		CHECK_EQ_INT(store__write(st, p, NULL, NULL), 0);
	CHECK_EQ_INT(store__intervals(st, 0, 0, first_iv, &iv), 0);
	CHECK_EQ_U64(iv.total, INT64_MAX);
	CHECK_EQ_U64(iv.end_ns, INT64_MAX);
	REQUIRE(!store__query(st, &f, &out));
	CHECK_EQ_U64(profile__total_samples(out), UINT64_MAX);
	REQUIRE(profile__sample_cnt(out) == 3);
	for (i = 0; i < 3; i++) {
		const struct profile_agg_sample *a = profile__sample(out, i);

		CHECK_EQ_U64(a->count, a->pid == 12 ? 6 : UINT64_MAX);
	}
	profile__free(out);
	out = NULL;
	CHECK_EQ_INT(store__processes(st, 0, 0, max_samples, &most), 0);
	CHECK_EQ_U64(most, UINT64_MAX);
	/* a range from 2^63 on holds nothing (it used to be read as negative: every interval) */
	f.from_ns = (1ULL << 63) + 5;
	REQUIRE(!store__query(st, &f, &out));
	CHECK_EQ_U64(profile__total_samples(out), 0);
	profile__free(out);
	n = 0;
	CHECK_EQ_INT(store__intervals(st, f.from_ns, 0, count_iv, &n), 0);
	CHECK_EQ_INT(n, 0);
	profile__free(p);
	pprof_profile__free(pp);
	pb_buf__free(&b);
	store__close(st);
}

static bool exe_known = true;

/* exe_of() while exe_known, then nothing (the processes have exited) */
static int exe_while_known(void *ctx, uint32_t pid, struct store_process *out)
{
	return exe_known ? exe_of(ctx, pid, out) : -ESRCH;
}

/* The sink (the agent's writer) while another connection holds the write lock (the sqlite3
 * command in a transaction): the intervals it cannot write are kept, with the executables of
 * their processes as they were, and written once the lock is gone; none is lost. They used to
 * be dropped ("database is locked").
 */
TEST(sink_keeps_intervals_through_a_lock)
{
	struct store_sink *sink = store_sink__open(path_of("sink.db"), 0, 0);
	struct store_sink_stats ss;
	struct store *rd = NULL;
	struct store_filter f = { 0 };
	sqlite3 *holder = NULL;
	int i, n = 0;

	REQUIRE(sink);
	for (i = 0; i < 6; i++) {
		struct profile *p = make_profile(8000 + (uint64_t)i, (unsigned)i, 1);

		if (i == 1) { /* the co-writer takes the lock */
			REQUIRE(sqlite3_open(path_of("sink.db"), &holder) == SQLITE_OK);
			REQUIRE(sqlite3_exec(holder, "BEGIN IMMEDIATE", NULL, NULL, NULL) ==
				SQLITE_OK);
		}
		if (i == 4) { /* ... and gives it back; the processes of the kept ones are gone */
			REQUIRE(sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
			sqlite3_close(holder);
			exe_known = false;
		}
		store_sink__write(sink, p, exe_while_known, NULL);
		profile__free(p);
		store_sink__stats(sink, &ss);
		if (i == 3) {
			CHECK_EQ_U64(ss.pending, 3);
			CHECK_EQ_U64(ss.deferred, 3);
			CHECK_EQ_U64(ss.store.intervals_written, 1);
			CHECK(ss.pending_sz > 0);
		}
	}
	exe_known = true;
	store_sink__stats(sink, &ss);
	CHECK_EQ_U64(ss.pending, 0);
	CHECK_EQ_U64(ss.pending_sz, 0);
	CHECK_EQ_U64(ss.written_late, 3);
	CHECK_EQ_U64(ss.lost, 0);
	CHECK_EQ_U64(ss.store.intervals_written, 6);
	store_sink__free(sink);
	rd = open_store("sink.db", 0, 0);
	REQUIRE(rd);
	CHECK_EQ_INT(store__intervals(rd, 0, 0, count_iv, &n), 0);
	CHECK_EQ_INT(n, 6);
	CHECK_EQ_U64(query_total(rd, &f), 6 * 9);
	/* kept intervals 1-3 know their executables: 3 samples of pid 100 in each of 0-3 */
	f.exe = "/usr/bin/app";
	CHECK_EQ_U64(query_total(rd, &f), 4 * 3);
	store__close(rd);
}

/* At the end, what is kept gets one last, longer try: a lock given back within it loses
 * nothing.
 */
static void *release_later(void *arg)
{
	sqlite3 *holder = arg;

	usleep(600 * 1000);
	sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL);
	return NULL;
}

TEST(sink_final_try)
{
	struct store_sink *sink = store_sink__open(path_of("final.db"), 0, 0);
	struct store_sink_stats ss;
	sqlite3 *holder = NULL;
	pthread_t t;
	int n = 0;
	struct store *rd;
	struct profile *p = make_profile(8100, 1, 1);

	REQUIRE(sink);
	REQUIRE(sqlite3_open(path_of("final.db"), &holder) == SQLITE_OK);
	REQUIRE(sqlite3_exec(holder, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
	store_sink__write(sink, p, NULL, NULL);
	profile__free(p);
	store_sink__stats(sink, &ss);
	CHECK_EQ_U64(ss.pending, 1);
	REQUIRE(!pthread_create(&t, NULL, release_later, holder));
	store_sink__free(sink); /* waits up to 3 s for the lock */
	pthread_join(t, NULL);
	sqlite3_close(holder);
	rd = open_store("final.db", 0, 0);
	REQUIRE(rd);
	CHECK_EQ_INT(store__intervals(rd, 0, 0, count_iv, &n), 0);
	CHECK_EQ_INT(n, 1);
	store__close(rd);
}

static int interval_cnt(const char *name);

/* Past STORE_SINK_PENDING_MAX_CNT kept intervals the oldest go, counted as lost; the rest are
 * written once the file may grow again. The file may not grow here through RLIMIT_FSIZE (each
 * attempt fails at once with EFBIG, where a lock costs STORE_SINK_BUSY_MS), in a child.
 */
static void bounded_child(void)
{
	struct store_sink *sink = store_sink__open(path_of("bound.db"), 0, 0);
	struct store_sink_stats ss;
	struct rlimit rl;
	struct stat wal;
	char wal_path[300];
	int i;

	if (!sink || getrlimit(RLIMIT_FSIZE, &rl))
		_exit(10);
	signal(SIGXFSZ, SIG_IGN);
	for (i = 0; i < STORE_SINK_PENDING_MAX_CNT + 4; i++) {
		struct profile *p = make_profile(8200 + (uint64_t)i, (unsigned)i % 3, 1);

		if (i == 1) { /* no file may grow past its size now */
			snprintf(wal_path, sizeof(wal_path), "%s-wal", path_of("bound.db"));
			if (stat(wal_path, &wal))
				_exit(11);
			rl.rlim_cur = (rlim_t)wal.st_size; /* (the hard limit stays) */
			if (setrlimit(RLIMIT_FSIZE, &rl))
				_exit(12);
		}
		if (i == STORE_SINK_PENDING_MAX_CNT + 3) { /* room again */
			rl.rlim_cur = rl.rlim_max;
			if (setrlimit(RLIMIT_FSIZE, &rl))
				_exit(12);
		}
		store_sink__write(sink, p, NULL, NULL);
		profile__free(p);
		store_sink__stats(sink, &ss);
		if (i == STORE_SINK_PENDING_MAX_CNT + 2 &&
		    (ss.pending != STORE_SINK_PENDING_MAX_CNT || ss.lost != 2))
			_exit(13);
	}
	_exit(14);
}

TEST(sink_bounds_what_it_keeps)
{
	int status;
	pid_t pid = fork();

	REQUIRE(pid >= 0);
	if (!pid)
		bounded_child();
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 14);
	/* the first, the 64 kept, the last: 2 lost */
	CHECK_EQ_INT(interval_cnt("bound.db"), STORE_SINK_PENDING_MAX_CNT + 2);
}

/* Writes intervals of 9 samples each forever (until killed). */
static void writer_child(const char *name)
{
	struct store *st = open_store(name, 0, 0);
	uint64_t t;

	if (!st)
		_exit(1);
	for (t = 0;; t++) {
		struct profile *p = make_profile(5000 + t, (unsigned)t, 1);

		if (store__write(st, p, NULL, NULL))
			_exit(2);
		profile__free(p);
	}
}

static pid_t start_writer(const char *name)
{
	pid_t pid = fork();

	if (!pid)
		writer_child(name);
	return pid;
}

/* Intervals in the store at name (0 when it cannot be read yet). */
static int interval_cnt(const char *name)
{
	struct store_opts o = { path_of(name), 0, 0, true };
	char err[256];
	struct store *st = store__open(&o, err, sizeof(err));
	int n = 0;

	if (st && store__intervals(st, 0, 0, count_iv, &n))
		n = 0;
	store__close(st);
	return n;
}

TEST(kill_9_while_writing)
{
	struct store_opts o = { path_of("kill.db"), 0, 0, true };
	struct store_filter f = { 0 };
	struct store *st;
	char err[256];
	int status, n = 0, seen = 0, round, waited;

	for (round = 0; round < 3; round++) {
		pid_t pid = start_writer("kill.db");

		REQUIRE(pid > 0);
		/* killed once it has committed more (a loaded box starts it slowly: 30 s at most) */
		for (waited = 0; waited < 3000 && interval_cnt("kill.db") < seen + 3; waited++)
			usleep(10000);
		usleep(1000 * (useconds_t)(round * 7));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		CHECK(WIFSIGNALED(status));
		n = interval_cnt("kill.db");
		CHECK(n >= seen + 3);
		seen = n;
	}
	st = store__open(&o, err, sizeof(err));
	if (!st)
		printf("  %s\n", err);
	REQUIRE(st);
	n = 0;
	CHECK_EQ_INT(store__intervals(st, 0, 0, count_iv, &n), 0);
	CHECK(n >= 9);
	/* every interval that is there is whole: 9 samples each */
	CHECK_EQ_U64(query_total(st, &f), 9 * (uint64_t)n);
	store__close(st);
}

TEST(read_while_writing)
{
	struct store_opts o = { path_of("rw.db"), 0, 0, true };
	struct store_filter f = { 0 };
	struct store *st = NULL;
	char err[256];
	int i, torn = 0, reads = 0, status;
	uint64_t total, last = 0;
	pid_t pid = start_writer("rw.db");
	struct timespec t0, t1;

	REQUIRE(pid > 0);
	/* the writer has committed something (30 s at most on a loaded box) */
	for (i = 0; i < 3000 && interval_cnt("rw.db") < 2; i++)
		usleep(10000);
	st = store__open(&o, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		total = st ? query_total(st, &f) : UINT64_MAX;
		reads++;
		if (total == UINT64_MAX || total % 9 || total < last)
			torn++;
		last = total;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (st && t1.tv_sec - t0.tv_sec < 2);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	REQUIRE(st);
	CHECK(reads >= 2);
	CHECK(last >= 18);
	CHECK_EQ_INT(torn, 0);
	store__close(st);
}

TEST(corrupt_file)
{
	struct store_opts o = { path_of("bad.db"), 0, 0, false };
	char err[256], moved[512], page[4096];
	struct store *st;
	FILE *f;
	int i;

	/* not a database at all */
	f = fopen(o.path, "w");
	REQUIRE(f);
	for (i = 0; i < 64; i++)
		fputs("this is not an sqlite file, it holds no profiles at all ....\n", f);
	fclose(f);
	st = store__open(&o, err, sizeof(err));
	CHECK(!st);
	CHECK_EQ_INT(errno, EBADMSG);
	CHECK(strlen(err) > 10);
	CHECK_EQ_INT(store__quarantine(o.path, moved, sizeof(moved)), 0);
	CHECK(access(moved, F_OK) == 0);
	CHECK(access(o.path, F_OK) != 0);
	/* a real store whose pages are overwritten in the middle */
	st = open_store("bad.db", 0, 0);
	REQUIRE(st);
	for (i = 0; i < 50; i++) {
		struct profile *p = make_profile(6000 + (uint64_t)i, (unsigned)i, 1);

		CHECK_EQ_INT(store__write(st, p, NULL, NULL), 0);
		profile__free(p);
	}
	store__close(st);
	f = fopen(o.path, "r+");
	REQUIRE(f);
	memset(page, 0x5a, sizeof(page));
	for (i = 2; i < 6; i++) {
		fseek(f, (long)i * 4096, SEEK_SET);
		fwrite(page, 1, sizeof(page), f);
	}
	fclose(f);
	st = store__open(&o, err, sizeof(err));
	CHECK(!st);
	CHECK_EQ_INT(errno, EBADMSG);
	store__close(st);
}

/* The bytes of the file at path (caller frees), their count in *len. */
static char *file_bytes(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;
	FILE *m;

	REQUIRE(f);
	m = open_memstream(&buf, &cap);
	for (int c; (c = fgetc(f)) != EOF;)
		fputc(c, m);
	fclose(m);
	fclose(f);
	*len = cap;
	return buf;
}

/* Another program's SQLite database, refused by a writer and left as it was: the same bytes
 * and mtime, no journal files. One without a meta table used to become a store (the schema
 * added to it), one with a meta table of its own was switched to WAL mode, then refused.
 */
TEST(foreign_database_untouched)
{
	static const char *const schemas[] = {
		"CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT);"
		"INSERT INTO users(name) VALUES('ada'), ('grace');",
		"CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
		"INSERT INTO meta VALUES('owner', 'someone else');",
	};
	size_t i;

	for (i = 0; i < sizeof(schemas) / sizeof(schemas[0]); i++) {
		struct store_opts o = { path_of("foreign.db"), 0, 0, false };
		char err[256], side[300], *before, *after;
		struct stat st0, st1;
		size_t len0, len1;
		sqlite3 *db = NULL;
		int k;

		unlink(o.path);
		REQUIRE(sqlite3_open(o.path, &db) == SQLITE_OK);
		REQUIRE(sqlite3_exec(db, schemas[i], NULL, NULL, NULL) == SQLITE_OK);
		sqlite3_close(db);
		REQUIRE(!stat(o.path, &st0));
		before = file_bytes(o.path, &len0);
		usleep(20000);            /* a write would show in the mtime */
		for (k = 0; k < 2; k++) { /* as a writer, then as a reader */
			o.read_only = k == 1;
			struct store *opened;

			errno = 0;
			opened = store__open(&o, err, sizeof(err));
			CHECK(!opened);
			CHECK_EQ_INT(errno, EPROTO);
			store__close(opened);
			CHECK(strstr(err, "not a stackscope store"));
		}
		REQUIRE(!stat(o.path, &st1));
		after = file_bytes(o.path, &len1);
		CHECK(len0 == len1 && !memcmp(before, after, len0));
		CHECK(st0.st_mtim.tv_sec == st1.st_mtim.tv_sec &&
		      st0.st_mtim.tv_nsec == st1.st_mtim.tv_nsec);
		for (k = 0; k < 3; k++) {
			snprintf(side, sizeof(side), "%s%s", o.path,
				 k == 0   ? "-wal"
				 : k == 1 ? "-shm"
					  : "-journal");
			CHECK(access(side, F_OK) != 0);
		}
		free(before);
		free(after);
	}
}

static void run_tests(void)
{
	RUN(round_trip);
	RUN(range_and_filters);
	RUN(sample_types);
	RUN(retention_by_age);
	RUN(retention_by_size);
	RUN(co_writer);
	RUN(rows_deleted_by_another_connection);
	RUN(huge_counts);
	RUN(sink_keeps_intervals_through_a_lock);
	RUN(sink_final_try);
	RUN(sink_bounds_what_it_keeps);
	RUN(kill_9_while_writing);
	RUN(read_while_writing);
	RUN(corrupt_file);
	RUN(foreign_database_untouched);
}

int main(void)
{
	return test_scratch_main(dir, sizeof(dir), "store", run_tests);
}
