/* Unit tests for the protobuf encoder and the pprof exporter. The pprof output is decoded by
 * an independent reader, `go tool pprof -raw`, and the stacks, labels and mappings it reports
 * are compared with what the profile holds.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/pprof.h"
#include "export/protobuf.h"
#include "profile/profile.h"
#include "profile_fixture.h"
#include "scratch.h"
#include "test.h"

static char tmp_dir[256];

/* ---- protobuf encoder ---- */

TEST(pb_varint_and_fixed)
{
	static const uint8_t want[] = {
		0x08, 0x96, 0x01,             /* field 1 varint 150 */
		0x10, 0x00,                   /* field 2 varint 0 */
		0x18, 0xff, 0xff, 0xff, 0xff, /* field 3 varint UINT64_MAX ... */
		0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x21, 0x08,
		0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* field 4 fixed64 */
		0x2d, 0x04, 0x03, 0x02, 0x01,             /* field 5 fixed32 */
		0x32, 0x03, 'a',  'b',  'c',              /* field 6 string */
		0x3a, 0x00,                               /* field 7 NULL string */
	};
	struct pb_buf b;

	pb_buf__init(&b, 1024);
	pb_buf__varint(&b, 1, 150);
	pb_buf__varint(&b, 2, 0);
	pb_buf__varint(&b, 3, UINT64_MAX);
	pb_buf__fixed64(&b, 4, 0x0102030405060708ULL);
	pb_buf__fixed32(&b, 5, 0x01020304);
	pb_buf__string(&b, 6, "abc");
	pb_buf__string(&b, 7, NULL);
	CHECK_EQ_INT(pb_buf__err(&b), 0);
	CHECK_EQ_INT(b.len, sizeof(want));
	CHECK(b.len == sizeof(want) && !memcmp(b.data, want, sizeof(want)));
	pb_buf__free(&b);
}

TEST(pb_nested_lengths)
{
	struct pb_buf b;
	size_t outer, inner, i;
	uint64_t vals[3] = { 1, 300, 0 };

	pb_buf__init(&b, 4096);
	pb_buf__begin(&b, 1, &outer);
	pb_buf__begin(&b, 2, &inner);
	for (i = 0; i < 200; i++) /* 200-byte body: a two-byte length */
		pb_buf__raw(&b, "x", 1);
	pb_buf__end(&b, inner);
	pb_buf__packed_varints(&b, 3, vals, 3);
	pb_buf__packed_varints(&b, 4, vals, 0); /* writes nothing */
	pb_buf__end(&b, outer);
	REQUIRE(pb_buf__err(&b) == 0);
	/* outer: tag, len(3 + 200 + 6 = 209 -> 2 bytes); inner: tag, len 200 (2 bytes) */
	CHECK_EQ_INT(b.len, 1 + 2 + 1 + 2 + 200 + 6);
	CHECK_EQ_INT(b.data[0], 0x0a);
	CHECK_EQ_INT(b.data[1], 0xd1); /* 209 = 0x51 | 0x80, 0x01 */
	CHECK_EQ_INT(b.data[2], 0x01);
	CHECK_EQ_INT(b.data[3], 0x12);
	CHECK_EQ_INT(b.data[4], 0xc8); /* 200 = 0x48 | 0x80, 0x01 */
	CHECK_EQ_INT(b.data[5], 0x01);
	CHECK_EQ_INT(b.data[6], 'x');
	CHECK_EQ_INT(b.data[205], 'x');
	/* packed: tag 0x1a, len 4, 01, ac 02, 00 */
	CHECK_EQ_INT(b.data[206], 0x1a);
	CHECK_EQ_INT(b.data[207], 4);
	CHECK_EQ_INT(b.data[208], 1);
	CHECK_EQ_INT(b.data[209], 0xac);
	CHECK_EQ_INT(b.data[210], 0x02);
	CHECK_EQ_INT(b.data[211], 0);
	pb_buf__free(&b);
}

TEST(pb_bounded_and_sticky)
{
	struct pb_buf b;
	size_t mark;

	pb_buf__init(&b, 8);
	CHECK_EQ_INT(pb_buf__varint(&b, 1, 1), 0);
	CHECK_EQ_INT(pb_buf__string(&b, 2, "too long for it"), -EMSGSIZE);
	CHECK(b.len <= 8);
	/* sticky: even a small write now fails and changes nothing */
	CHECK_EQ_INT(pb_buf__varint(&b, 1, 1), -EMSGSIZE);
	CHECK_EQ_INT(pb_buf__begin(&b, 3, &mark), -EMSGSIZE);
	CHECK_EQ_INT(pb_buf__end(&b, mark), -EMSGSIZE);
	CHECK_EQ_INT(pb_buf__err(&b), -EMSGSIZE);
	pb_buf__free(&b);

	/* exactly max_sz bytes fit */
	pb_buf__init(&b, 4);
	CHECK_EQ_INT(pb_buf__string(&b, 1, "ab"), 0);
	CHECK_EQ_INT(b.len, 4);
	pb_buf__free(&b);
}

/* ---- pprof ---- */

/* What `go tool pprof -raw` printed, in id-independent form (pprof renumbers locations and
 * mappings when it loads a profile).
 */
#define MAX_ITEMS 64
#define ITEM_SZ 512

struct raw_dump {
	char header[ITEM_SZ]; /* "PeriodType: ...|Period: ...|<sample types>" */
	/* "labels|values|root@mapping;...;leaf@mapping", inline lines outermost first */
	char samples[MAX_ITEMS][ITEM_SZ];
	size_t sample_cnt;
	/* "start/limit/offset file build_id flags", without the id */
	char mappings[MAX_ITEMS][ITEM_SZ];
	size_t mapping_cnt;
	/* internals, by the ids of this dump */
	char loc_names[MAX_ITEMS][ITEM_SZ]; /* "inner;outer", innermost first */
	uint32_t loc_mapping[MAX_ITEMS];
	char mapping_file[MAX_ITEMS][ITEM_SZ];
	uint32_t sample_locs[MAX_ITEMS][MAX_ITEMS];
	size_t sample_loc_cnt[MAX_ITEMS];
	char sample_vals[MAX_ITEMS][64];
	char sample_labels[MAX_ITEMS][ITEM_SZ];
};

static void str_append(char *dst, size_t cap, const char *src)
{
	size_t len = strlen(dst);

	snprintf(dst + len, cap - len, "%s", src);
}

/* "name file:line s=N" -> name (names may contain spaces; files do not here). */
static void raw_dump__add_line(struct raw_dump *d, long loc, char *text)
{
	char *sp = strrchr(text, ' ');

	if (loc <= 0 || loc >= MAX_ITEMS || !sp)
		return;
	*sp = 0; /* drop " s=N" */
	sp = strrchr(text, ' ');
	if (!sp)
		return;
	*sp = 0; /* drop " file:line" */
	if (d->loc_names[loc][0])
		str_append(d->loc_names[loc], ITEM_SZ, ";");
	str_append(d->loc_names[loc], ITEM_SZ, text);
}

static void raw_dump__parse(struct raw_dump *d, FILE *f)
{
	enum { NONE, SAMPLES, LOCATIONS, MAPPINGS } sec = NONE;
	char line[2048], *p, *end;
	long cur_loc = -1, id;
	size_t n;

	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		p = line + strspn(line, " ");
		if (!strncmp(line, "PeriodType:", 11) || !strncmp(line, "Period:", 7)) {
			str_append(d->header, ITEM_SZ, line);
			str_append(d->header, ITEM_SZ, "|");
		} else if (!strcmp(line, "Samples:")) {
			sec = SAMPLES;
			if (fgets(line, sizeof(line), f)) { /* the sample types */
				line[strcspn(line, "\n")] = 0;
				str_append(d->header, ITEM_SZ, line);
			}
		} else if (!strcmp(line, "Locations")) {
			sec = LOCATIONS;
		} else if (!strcmp(line, "Mappings")) {
			sec = MAPPINGS;
		} else if (sec == SAMPLES && strstr(p, ":[")) { /* labels of the last sample */
			if (d->sample_cnt) {
				str_append(d->sample_labels[d->sample_cnt - 1], ITEM_SZ, p);
				str_append(d->sample_labels[d->sample_cnt - 1], ITEM_SZ, " ");
			}
		} else if (sec == SAMPLES && strchr(p, ':') && d->sample_cnt < MAX_ITEMS) {
			/* "3    3000000: 1 2 3 4 " */
			n = d->sample_cnt++;
			end = strchr(p, ':');
			*end = 0;
			snprintf(d->sample_vals[n], 64, "%.60s", p);
			for (p = strtok(end + 1, " "); p && d->sample_loc_cnt[n] < MAX_ITEMS;
			     p = strtok(NULL, " "))
				d->sample_locs[n][d->sample_loc_cnt[n]++] = strtoul(p, NULL, 10);
		} else if (sec == LOCATIONS) {
			/* "     1: 0x400100 M=2 main app.c:10 s=0", then "      outer app.c:30 s=0" */
			id = strtol(p, &end, 10);
			if (end != p && *end == ':') {
				cur_loc = id;
				p = end + 1 + strspn(end + 1, " ");
				p += strcspn(p, " "); /* the address */
				p += strspn(p, " ");
				if (!strncmp(p, "M=", 2) && cur_loc > 0 && cur_loc < MAX_ITEMS) {
					d->loc_mapping[cur_loc] = strtoul(p + 2, &p, 10);
					p += strspn(p, " ");
				}
			}
			raw_dump__add_line(d, cur_loc, p);
		} else if (sec == MAPPINGS && *line && d->mapping_cnt < MAX_ITEMS) {
			/* "1: 0x1000/0x5000/0x1000 /usr/lib/libfoo.so abcdef0123 [FN]" */
			id = strtol(line, &end, 10);
			if (*end != ':')
				continue;
			p = end + 2;
			snprintf(d->mappings[d->mapping_cnt++], ITEM_SZ, "%.500s", p);
			if (id > 0 && id < MAX_ITEMS) {
				p += strcspn(p, " ") + 1;
				snprintf(d->mapping_file[id], ITEM_SZ, "%.*s", (int)strcspn(p, " "),
					 p);
			}
		}
	}
}

/* Builds d->samples from the parsed ids. */
static void raw_dump__resolve(struct raw_dump *d)
{
	size_t i, j;

	for (i = 0; i < d->sample_cnt; i++) {
		char *out = d->samples[i];

		snprintf(out, ITEM_SZ, "%s|%s|", d->sample_labels[i], d->sample_vals[i]);
		for (j = d->sample_loc_cnt[i]; j-- > 0;) {
			uint32_t loc = d->sample_locs[i][j];
			const char *map;
			char names[ITEM_SZ], *parts[16];
			int n = 0;

			if (loc >= MAX_ITEMS)
				continue;
			map = d->loc_mapping[loc] && d->loc_mapping[loc] < MAX_ITEMS
				      ? d->mapping_file[d->loc_mapping[loc]]
				      : "-";
			snprintf(names, sizeof(names), "%s", d->loc_names[loc]);
			for (char *t = strtok(names, ";"); t && n < 16; t = strtok(NULL, ";"))
				parts[n++] = t;
			while (n-- > 0) {
				if (out[strlen(out) - 1] != '|')
					str_append(out, ITEM_SZ, ";");
				str_append(out, ITEM_SZ, parts[n]);
				str_append(out, ITEM_SZ, "@");
				str_append(out, ITEM_SZ, map);
			}
		}
	}
}

/* Runs `go tool pprof -raw` on path and fills d. Returns 0 or -1. */
static int raw_dump__read(struct raw_dump *d, const char *path)
{
	char cmd[4096];
	FILE *f;

	memset(d, 0, sizeof(*d));
	snprintf(cmd, sizeof(cmd),
		 "HOME=%s GOCACHE=%s/gocache GOPATH=%s/gopath GOFLAGS= "
		 "go tool pprof -raw -symbolize=none '%s' 2>&1",
		 tmp_dir, tmp_dir, tmp_dir, path);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	raw_dump__parse(d, f);
	if (pclose(f) != 0)
		return -1;
	raw_dump__resolve(d);
	return 0;
}

static bool has_item(char (*items)[ITEM_SZ], size_t cnt, const char *want)
{
	size_t i;

	for (i = 0; i < cnt; i++) {
		if (!strcmp(items[i], want))
			return true;
	}
	return false;
}

static void raw_dump__print(const struct raw_dump *d)
{
	size_t i;

	printf("  header: %s\n", d->header);
	for (i = 0; i < d->sample_cnt; i++)
		printf("  sample: %s\n", d->samples[i]);
	for (i = 0; i < d->mapping_cnt; i++)
		printf("  mapping: %s\n", d->mappings[i]);
}

TEST(pprof_decoded_by_go_tool_pprof)
{
	struct profile_fixture fx = { 0 };
	struct raw_dump *d = calloc(1, sizeof(*d));
	char path[512];

	REQUIRE(d);
	profile_fixture__build(&fx);
	snprintf(path, sizeof(path), "%s/cpu.pb.gz", tmp_dir);
	REQUIRE(pprof__write(fx.p, path) == 0);
	REQUIRE(raw_dump__read(d, path) == 0);

	CHECK_STR(d->header, "PeriodType: cpu nanoseconds|Period: 1000000|"
			     "samples/count cpu/nanoseconds");
	CHECK_EQ_INT(d->sample_cnt, 3);
	CHECK(has_item(d->samples, d->sample_cnt,
		       "comm:[app] thread_comm:[worker] pid:[100] tid:[101] |3    3000000|"
		       "main@/usr/bin/app;outer@/usr/bin/app;inner@/usr/bin/app;"
		       "libfoo.so+0x1234@/usr/lib/libfoo.so;do_syscall_64@[kernel.kallsyms]"));
	CHECK(has_item(d->samples, d->sample_cnt,
		       "comm:[app] thread_comm:[app] pid:[100] tid:[100] |5    5000000|"
		       "main@/usr/bin/app;outer@/usr/bin/app;inner@/usr/bin/app"));
	CHECK(has_item(d->samples, d->sample_cnt,
		       "comm:[sh] thread_comm:[sh] pid:[200] tid:[200] |1    1000000|"
		       "[unwind: no CFI]@-;libfoo.so+0x1234@/usr/lib/libfoo.so;"
		       "[kernel]+0xffffffff81000020@[kernel.kallsyms]"));

	/* as registered, plus the kernel mapping made by the exporter; unsymbolized frames
	 * make a mapping claim no functions
	 */
	CHECK_EQ_INT(d->mapping_cnt, 3);
	CHECK(has_item(d->mappings, d->mapping_cnt,
		       "0x1000/0x5000/0x1000 /usr/lib/libfoo.so abcdef0123 "));
	CHECK(has_item(d->mappings, d->mapping_cnt,
		       "0x400000/0x401000/0x0 /usr/bin/app 1234 [FN][FL][LN][IN]"));
	CHECK(has_item(d->mappings, d->mapping_cnt,
		       "0xffffffff81000010/0xffffffff81000021/0x0 [kernel.kallsyms]  "));
	if (test__cur_failed)
		raw_dump__print(d);
	profile__free(fx.p);
	free(d);
}

TEST(pprof_top_is_readable)
{
	struct profile_fixture fx = { 0 };
	char path[512], cmd[4096], line[1024];
	bool saw_foo = false, saw_inner = false;
	FILE *f;

	profile_fixture__build(&fx);
	snprintf(path, sizeof(path), "%s/top.pb.gz", tmp_dir);
	REQUIRE(pprof__write(fx.p, path) == 0);
	snprintf(cmd, sizeof(cmd),
		 "HOME=%s GOCACHE=%s/gocache go tool pprof -top -sample_index=0 "
		 "-symbolize=none '%s' 2>&1",
		 tmp_dir, tmp_dir, path);
	f = popen(cmd, "r");
	REQUIRE(f);
	while (fgets(line, sizeof(line), f)) {
		/* flat column: inner is the leaf of 5 samples */
		if (strstr(line, " inner") && strtol(line + strspn(line, " "), NULL, 10) == 5)
			saw_inner = true;
		if (strstr(line, "libfoo.so+0x1234"))
			saw_foo = true;
	}
	CHECK_EQ_INT(pclose(f), 0);
	CHECK(saw_inner);
	CHECK(saw_foo);
	profile__free(fx.p);
}

TEST(pprof_encode_errors)
{
	struct profile_fixture fx = { 0 };
	struct pb_buf b;

	profile_fixture__build(&fx);
	pb_buf__init(&b, 100);
	CHECK_EQ_INT(pprof__encode(fx.p, &b), -EMSGSIZE);
	pb_buf__free(&b);
	pb_buf__init(&b, PPROF_MAX_SZ);
	CHECK_EQ_INT(pprof__encode(fx.p, &b), 0);
	CHECK(b.len > 100);
	pb_buf__free(&b);
	CHECK(pprof__write(fx.p, "/nonexistent-dir/x.pb.gz") < 0);
	profile__free(fx.p);
}

static void run_tests(void)
{
	RUN(pb_varint_and_fixed);
	RUN(pb_nested_lengths);
	RUN(pb_bounded_and_sticky);
	RUN(pprof_decoded_by_go_tool_pprof);
	RUN(pprof_top_is_readable);
	RUN(pprof_encode_errors);
}

int main(void)
{
	return test_scratch_main(tmp_dir, sizeof(tmp_dir), "pprof", run_tests);
}
