/* Unit tests for the OTLP profiles encoder (v1.11) and UTF-8 cleaning.
 *
 * Requests are checked twice, by independent readers: `protoc --decode` against the schema
 * in proto/ (written from the field tables, not from our encoder), and decoders in this file
 * (over the project's wire-format reader, tested on its own in test_protobuf.c) that rebuild
 * the dictionary and check its invariants (entry 0 is the zero value, every index in range, no
 * repeated attribute key, timestamps in the window, valid UTF-8). The file ids are checked
 * against sha256sum and a Python FNV-128a.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/utf8.h"
#include "export/otlp.h"
#include "proc/file_id.h"
#include "export/protobuf.h"
#include "export/protobuf_read.h"
#include "profile/profile.h"
#include "test.h"

#define REQUEST_TYPE \
	"opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"
#define SERVICE_PROTO "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto"
#define KERNEL_BUILD_ID "00112233445566778899aabbccddeeff00112233"
#define T0 1700000000000000000ULL
#define PERIOD (1000000000ULL / 19)

/* ---- reading requests back (src/export/protobuf_read.h) ---- */

/* Next field; false at the end. A malformed message, or a wire type the encoder never writes,
 * fails the current test.
 */
static bool rd__next(struct pb_reader *r, struct pb_field *f)
{
	if (r->p >= r->end)
		return false;
	REQUIRE(pb_reader__field(r, f) == 0);
	REQUIRE(f->wire != PB_WIRE_I32);
	return true;
}

/* Appends the packed varints of f (or its single varint) to v[*n]. */
static void rd__packed(const struct pb_field *f, uint64_t *v, size_t *n, size_t cap)
{
	REQUIRE(pb_field__varints(f, v, cap, n) == 0);
}

#define MAX_ENTRIES 256
#define MAX_LIST 64

struct d_attr {
	uint64_t key;
	bool is_int, is_str;
	int64_t i;
	char s[128];
};

struct d_sample {
	uint64_t stack;
	uint64_t attrs[MAX_LIST];
	size_t attr_cnt;
	uint64_t ts[MAX_LIST];
	size_t ts_cnt;
	uint64_t values[MAX_LIST];
	size_t value_cnt;
};

struct d_resource {
	char keys[32][64];
	char svals[32][128];
	int64_t ivals[32];
	size_t attr_cnt;
	char scope_name[32];
	uint64_t time, duration, period;
	uint64_t sample_type[2], period_type[2];
	size_t profile_cnt;
	struct d_sample samples[32];
	size_t sample_cnt;
};

struct d_request {
	char strs[MAX_ENTRIES][128];
	size_t str_cnt;
	size_t zero_len[8]; /* body length of [0] per dictionary table (by field number) */
	size_t table_cnt[8];
	struct d_attr attrs[MAX_ENTRIES];
	uint64_t map_filename[MAX_ENTRIES], map_start[MAX_ENTRIES], map_limit[MAX_ENTRIES];
	uint64_t map_attrs[MAX_ENTRIES][4];
	size_t map_attr_cnt[MAX_ENTRIES];
	uint64_t loc_mapping[MAX_ENTRIES], loc_address[MAX_ENTRIES];
	uint64_t loc_attrs[MAX_ENTRIES][4];
	size_t loc_attr_cnt[MAX_ENTRIES];
	uint64_t loc_fns[MAX_ENTRIES][8], loc_lines[MAX_ENTRIES][8], loc_cols[MAX_ENTRIES][8];
	size_t loc_line_cnt[MAX_ENTRIES];
	uint64_t fn_name[MAX_ENTRIES], fn_file[MAX_ENTRIES];
	uint64_t stack_locs[MAX_ENTRIES][MAX_LIST];
	size_t stack_len[MAX_ENTRIES];
	struct d_resource res[8];
	size_t res_cnt;
};

static void copy_str(char *dst, size_t cap, const struct pb_reader *r)
{
	size_t n = pb_reader__left(r) < cap - 1 ? pb_reader__left(r) : cap - 1;

	REQUIRE(utf8__valid((const char *)r->p, pb_reader__left(r)));
	memcpy(dst, r->p, n);
	dst[n] = '\0';
}

static void decode_any(const struct pb_reader *in, bool *is_int, bool *is_str, int64_t *i, char *s,
		       size_t s_cap)
{
	struct pb_reader r = *in;
	struct pb_field f;

	*is_int = *is_str = false;
	while (rd__next(&r, &f)) {
		if (f.num == 1 && f.wire == 2) {
			*is_str = true;
			copy_str(s, s_cap, &f.body);
		} else if (f.num == 3 && f.wire == 0) {
			*is_int = true;
			*i = (int64_t)f.v;
		}
	}
}

static void decode_resource(struct d_resource *res, const struct pb_reader *in)
{
	struct pb_reader r = *in, r2, r3, r4;
	struct pb_field f, g, h, k;
	bool is_int, is_str;

	while (rd__next(&r, &f)) {
		if (f.num == 1) { /* Resource */
			r2 = f.body;
			while (rd__next(&r2, &g)) {
				REQUIRE(g.num == 1 && res->attr_cnt < 32);
				r3 = g.body;
				while (rd__next(&r3, &h)) {
					if (h.num == 1)
						copy_str(res->keys[res->attr_cnt], 64, &h.body);
					else if (h.num == 2)
						decode_any(&h.body, &is_int, &is_str,
							   &res->ivals[res->attr_cnt],
							   res->svals[res->attr_cnt], 128);
				}
				res->attr_cnt++;
			}
		} else if (f.num == 2) { /* ScopeProfiles */
			r2 = f.body;
			while (rd__next(&r2, &g)) {
				if (g.num == 1) {
					r3 = g.body;
					while (rd__next(&r3, &h))
						if (h.num == 1)
							copy_str(res->scope_name, 32, &h.body);
					continue;
				}
				REQUIRE(g.num == 2);
				res->profile_cnt++;
				r3 = g.body;
				while (rd__next(&r3, &h)) {
					struct d_sample *s;

					switch (h.num) {
					case 1:
					case 5:
						r4 = h.body;
						while (rd__next(&r4, &k)) {
							uint64_t *vt = h.num == 1
									       ? res->sample_type
									       : res->period_type;
							vt[k.num - 1] = k.v;
						}
						break;
					case 2:
						REQUIRE(res->sample_cnt < 32);
						s = &res->samples[res->sample_cnt++];
						r4 = h.body;
						while (rd__next(&r4, &k)) {
							if (k.num == 1)
								s->stack = k.v;
							else if (k.num == 2)
								rd__packed(&k, s->attrs,
									   &s->attr_cnt, MAX_LIST);
							else if (k.num == 4)
								rd__packed(&k, s->values,
									   &s->value_cnt, MAX_LIST);
							else if (k.num == 5) {
								struct pb_reader t = k.body;

								REQUIRE(k.wire == 2 &&
									pb_reader__left(&t) % 8 ==
										0);
								for (; t.p < t.end; t.p += 8) {
									REQUIRE(s->ts_cnt <
										MAX_LIST);
									memcpy(&s->ts[s->ts_cnt++],
									       t.p, 8);
								}
							}
						}
						break;
					case 3:
						REQUIRE(h.wire == 1);
						res->time = h.v;
						break;
					case 4:
						res->duration = h.v;
						break;
					case 6:
						res->period = h.v;
						break;
					}
				}
			}
		}
	}
}

static void decode_dictionary(struct d_request *d, const struct pb_reader *in)
{
	struct pb_reader r = *in, r2, r3;
	struct pb_field f, g, h;
	size_t idx;

	while (rd__next(&r, &f)) {
		REQUIRE(f.num >= 1 && f.num <= 7 && f.wire == 2);
		idx = d->table_cnt[f.num]++;
		REQUIRE(idx < MAX_ENTRIES);
		if (!idx)
			d->zero_len[f.num] = pb_reader__left(&f.body);
		r2 = f.body;
		switch (f.num) {
		case 1:
			while (rd__next(&r2, &g)) {
				if (g.num == 1)
					d->map_start[idx] = g.v;
				else if (g.num == 2)
					d->map_limit[idx] = g.v;
				else if (g.num == 4)
					d->map_filename[idx] = g.v;
				else if (g.num == 5)
					rd__packed(&g, d->map_attrs[idx], &d->map_attr_cnt[idx], 4);
			}
			break;
		case 2:
			while (rd__next(&r2, &g)) {
				if (g.num == 1)
					d->loc_mapping[idx] = g.v;
				else if (g.num == 2)
					d->loc_address[idx] = g.v;
				else if (g.num == 4)
					rd__packed(&g, d->loc_attrs[idx], &d->loc_attr_cnt[idx], 4);
				else if (g.num == 3) {
					size_t n = d->loc_line_cnt[idx]++;

					REQUIRE(n < 8);
					r3 = g.body;
					while (rd__next(&r3, &h)) {
						if (h.num == 1)
							d->loc_fns[idx][n] = h.v;
						else if (h.num == 2)
							d->loc_lines[idx][n] = h.v;
						else if (h.num == 3)
							d->loc_cols[idx][n] = h.v;
					}
				}
			}
			break;
		case 3:
			while (rd__next(&r2, &g)) {
				if (g.num == 1)
					d->fn_name[idx] = g.v;
				else if (g.num == 3)
					d->fn_file[idx] = g.v;
			}
			break;
		case 5:
			copy_str(d->strs[idx], 128, &f.body);
			d->str_cnt = idx + 1;
			break;
		case 6:
			while (rd__next(&r2, &g)) {
				if (g.num == 1)
					d->attrs[idx].key = g.v;
				else if (g.num == 2)
					decode_any(&g.body, &d->attrs[idx].is_int,
						   &d->attrs[idx].is_str, &d->attrs[idx].i,
						   d->attrs[idx].s, 128);
			}
			break;
		case 7:
			while (rd__next(&r2, &g))
				if (g.num == 1)
					rd__packed(&g, d->stack_locs[idx], &d->stack_len[idx],
						   MAX_LIST);
			break;
		}
	}
}

static void decode_request(struct d_request *d, const struct pb_buf *b)
{
	struct pb_reader r = { b->data, b->data + b->len };
	struct pb_field f;
	int dicts = 0;

	memset(d, 0, sizeof(*d));
	while (rd__next(&r, &f)) {
		REQUIRE(f.wire == 2);
		if (f.num == 1) {
			REQUIRE(d->res_cnt < 8);
			decode_resource(&d->res[d->res_cnt++], &f.body);
		} else if (f.num == 2) {
			dicts++;
			decode_dictionary(d, &f.body);
		}
	}
	CHECK_EQ_INT(dicts, 1);
}

static const char *attr_key(const struct d_request *d, uint64_t attr)
{
	return attr < d->table_cnt[6] && d->attrs[attr].key < d->str_cnt
		       ? d->strs[d->attrs[attr].key]
		       : NULL;
}

/* The attribute with key in list[0..n), or NULL. */
static const struct d_attr *attr_find(const struct d_request *d, const uint64_t *list, size_t n,
				      const char *key)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const char *k = attr_key(d, list[i]);

		if (k && !strcmp(k, key))
			return &d->attrs[list[i]];
	}
	return NULL;
}

static void check_unique_keys(const struct d_request *d, const uint64_t *list, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		REQUIRE(list[i] > 0 && list[i] < d->table_cnt[6]);
		for (j = 0; j < i; j++)
			CHECK(d->attrs[list[i]].key != d->attrs[list[j]].key);
	}
}

/* Every invariant the dictionary and the samples must keep (OTLP.md 1.2). */
static void check_invariants(const struct d_request *d)
{
	size_t t, i, j, k;

	CHECK(d->res_cnt > 0);
	for (t = 1; t <= 7; t++) {
		CHECK(d->table_cnt[t] >= 1);
		/* zero value, present on the wire (the Link too: empty, as pdata and profcheck) */
		if (d->table_cnt[t] >= 1)
			CHECK_EQ_INT(d->zero_len[t], 0);
	}
	for (i = 1; i < d->table_cnt[6]; i++) {
		CHECK(d->attrs[i].key > 0 && d->attrs[i].key < d->str_cnt);
		CHECK(d->attrs[i].is_int || d->attrs[i].is_str);
	}
	for (i = 1; i < d->table_cnt[1]; i++) {
		CHECK(d->map_filename[i] < d->str_cnt);
		CHECK(d->map_start[i] < d->map_limit[i] ||
		      (d->map_start[i] == 0 && d->map_limit[i] == 0));
		check_unique_keys(d, d->map_attrs[i], d->map_attr_cnt[i]);
	}
	for (i = 1; i < d->table_cnt[2]; i++) {
		CHECK(d->loc_mapping[i] < d->table_cnt[1]);
		check_unique_keys(d, d->loc_attrs[i], d->loc_attr_cnt[i]);
		for (j = 0; j < d->loc_line_cnt[i]; j++)
			CHECK(d->loc_fns[i][j] > 0 && d->loc_fns[i][j] < d->table_cnt[3]);
	}
	for (i = 1; i < d->table_cnt[3]; i++) {
		CHECK(d->fn_name[i] < d->str_cnt && d->fn_file[i] < d->str_cnt);
		CHECK(d->fn_name[i] || d->fn_file[i]);
	}
	for (i = 1; i < d->table_cnt[7]; i++)
		for (j = 0; j < d->stack_len[i]; j++)
			CHECK(d->stack_locs[i][j] > 0 && d->stack_locs[i][j] < d->table_cnt[2]);
	for (i = 1; i < d->str_cnt; i++) /* no duplicate strings */
		for (j = 1; j < i; j++)
			CHECK(strcmp(d->strs[i], d->strs[j]));
	for (i = 0; i < d->res_cnt; i++) {
		const struct d_resource *r = &d->res[i];

		CHECK_EQ_INT(r->profile_cnt, 1);
		CHECK_STR(r->scope_name, "stackscope");
		for (j = 0; j < r->attr_cnt; j++)
			for (k = 0; k < j; k++)
				CHECK(strcmp(r->keys[j], r->keys[k]));
		for (j = 0; j < r->sample_cnt; j++) {
			const struct d_sample *s = &r->samples[j];

			CHECK(s->stack < d->table_cnt[7]);
			check_unique_keys(d, s->attrs, s->attr_cnt);
			CHECK(s->ts_cnt || s->value_cnt);
			for (k = 0; k < s->ts_cnt; k++)
				CHECK(s->ts[k] >= r->time && s->ts[k] < r->time + r->duration);
		}
	}
}

/* ---- running protoc ---- */

/* protoc --decode of b; returns its text output (malloc'ed) or NULL when protoc fails. */
static char *protoc_decode(const struct pb_buf *b)
{
	char path[] = "/tmp/test_otlp_XXXXXX", cmd[512], *text = NULL;
	size_t len = 0, cap = 0, n;
	FILE *f;
	int fd, status;

	fd = mkstemp(path);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, b->data, b->len) == (ssize_t)b->len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "protoc --decode=%s -I proto %s < %s 2>&1", REQUEST_TYPE,
		 SERVICE_PROTO, path);
	f = popen(cmd, "r");
	REQUIRE(f);
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			text = realloc(text, cap);
			REQUIRE(text);
		}
		n = fread(text + len, 1, 4096, f);
		if (!n)
			break;
		len += n;
	}
	text[len] = '\0';
	status = pclose(f);
	unlink(path);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("  protoc: %s\n", text);
		free(text);
		return NULL;
	}
	return text;
}

/* Runs a shell command and returns its first output line (static buffer). */
static const char *shell_line(const char *cmd)
{
	static char line[256];
	FILE *f = popen(cmd, "r");

	line[0] = '\0';
	if (!f)
		return line;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	line[strcspn(line, " \n")] = '\0';
	pclose(f);
	return line;
}

/* ---- fixtures ---- */

static char self_exe[4096];

struct lookup_ctx {
	uint32_t self_pid;
	int calls;
};

static int lookup_process(void *ctx, uint32_t pid, struct otlp_process *out)
{
	static const struct otlp_attr extra[] = { { "process.owner", "root" } };
	struct lookup_ctx *lc = ctx;

	lc->calls++;
	if (pid != lc->self_pid)
		return -ENOENT;
	out->exe_path = "/usr/bin/te\xffst";
	out->container_id = "0123456789abcdef";
	out->k8s_pod_uid = "0f8c1c66-1111-2222-3333-444455556666";
	out->extra = extra;
	out->extra_cnt = 1;
	return 0;
}

static void host_fixture(struct otlp_host *h)
{
	static const struct otlp_attr extra[] = {
		{ "deployment.environment", "test" },
		{ "host.name", "override\xc3" },
	};

	memset(h, 0, sizeof(*h));
	snprintf(h->host_name, sizeof(h->host_name), "detected");
	snprintf(h->host_id, sizeof(h->host_id), "0123456789abcdef0123456789abcdef");
	snprintf(h->host_arch, sizeof(h->host_arch), "amd64");
	snprintf(h->os_type, sizeof(h->os_type), "linux");
	snprintf(h->os_description, sizeof(h->os_description), "Test Linux 6.1");
	snprintf(h->kernel_build_id, sizeof(h->kernel_build_id), KERNEL_BUILD_ID);
	h->extra = extra;
	h->extra_cnt = 2;
}

struct fixture {
	struct profile *p;
	uint32_t self_pid;
	uint32_t f_kernel, f_inline, f_gone, f_python, f_error;
};

/* Two processes: ours (its exe mapped, so the htlhash can be computed) with one thread
 * sampled on CPUs 0 and 1, and pid 4242 (unknown to the lookup) sharing frames.
 */
static void fixture__build(struct fixture *fx, size_t timestamps_cap)
{
	struct profile_opts opts = { .period_ns = PERIOD,
				     .start_time_ns = T0,
				     .timestamps_cap = timestamps_cap };
	struct profile_mapping km = { .path = "[kernel.kallsyms]" };
	struct profile_mapping exe = { .start = 0x1000,
				       .limit = 0x9000,
				       .file_offset = 0x1000,
				       .build_id = "abcdef0123456789",
				       .go_build_id = "aBc/dEf" };
	struct profile_mapping gone = { .path = "/nonexistent/libgone.so",
					.start = 0x2000,
					.limit = 0x3000,
					.build_id = "feedface" };
	struct profile_line kl = { .function = "do_syscall_64" };
	struct profile_line il[2] = { { "inner", "a.c", 10, 7 }, { "outer\xe2\x82", "a.c", 20 } };
	struct profile_line el = { .function = "[unwind: no CFI]" };
	struct profile_line pl = { .function = "Worker.run", .file = "/srv/app.py", .line = 42 };
	struct profile_frame f;
	struct profile_sample s = { 0 };
	uint32_t stack1[5], stack2[2], km_id, exe_id, gone_id;
	static const struct profile_label labels[] = { { "route", "/api" }, { "k\xff", "v\xfe" } };
	static const struct profile_label span[] = {
		{ "trace_id", "0af7651916cd43dd8448eb211c80319c" },
		{ "span_id", "b7ad6b7169203331" },
	};
	ssize_t n;
	int i;

	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	REQUIRE(n > 0);
	self_exe[n] = '\0';
	exe.path = self_exe;
	{
		/* the caller computes the htlhash from the file it keeps open: the encoder does no I/O */
		static char self_hash[33];
		int hfd = open(self_exe, O_RDONLY | O_CLOEXEC);

		REQUIRE(hfd >= 0 && file_id__htlhash(hfd, self_hash) == 0);
		close(hfd);
		exe.file_hash = self_hash;
	}
	fx->self_pid = (uint32_t)getpid();
	fx->p = profile__new(&opts);
	REQUIRE(fx->p);
	km_id = profile__add_mapping(fx->p, &km);
	exe_id = profile__add_mapping(fx->p, &exe);
	gone_id = profile__add_mapping(fx->p, &gone);
	REQUIRE(km_id && exe_id && gone_id);

	f = (struct profile_frame){ FRAME_KERNEL, km_id, 0xffffffff81000100ULL, &kl, 1 };
	fx->f_kernel = profile__add_frame(fx->p, &f);
	f = (struct profile_frame){ FRAME_NATIVE, exe_id, 0x1234, il, 2 };
	fx->f_inline = profile__add_frame(fx->p, &f);
	f = (struct profile_frame){ FRAME_NATIVE, gone_id, 0x2345, NULL, 0, "go" }; /* Go code */
	fx->f_gone = profile__add_frame(fx->p, &f);
	f = (struct profile_frame){ FRAME_RUNTIME, 0, 0, &pl, 1, "cpython" };
	fx->f_python = profile__add_frame(fx->p, &f);
	f = (struct profile_frame){ FRAME_ERROR, 0, 0, &el, 1 };
	fx->f_error = profile__add_frame(fx->p, &f);
	REQUIRE(fx->f_kernel && fx->f_inline && fx->f_gone && fx->f_python && fx->f_error);

	stack1[0] = fx->f_kernel;
	stack1[1] = fx->f_inline;
	stack1[2] = fx->f_gone;
	stack1[3] = fx->f_python;
	stack1[4] = fx->f_error;
	s.frames = stack1;
	s.frame_cnt = 5;
	s.pid = fx->self_pid;
	s.tid = fx->self_pid + 1;
	s.comm = "bad\xc3";
	s.thread_comm = "worker\xff\xfe";
	s.labels = labels; /* goroutine labels: attributes process.context.label.<key> */
	s.label_cnt = 2;
	s.count = 1;
	for (i = 0; i < 5; i++) { /* CPUs 0,1,0,1,0 */
		s.cpu = (uint32_t)(i & 1);
		s.time_ns = T0 + 1000 + (uint64_t)i * PERIOD;
		REQUIRE(profile__add_sample(fx->p, &s) == 0);
	}
	stack2[0] = fx->f_inline;
	stack2[1] = fx->f_gone;
	s.frames = stack2;
	s.frame_cnt = 2;
	s.pid = 4242;
	s.tid = 4242;
	s.comm = "other";
	s.thread_comm = "other";
	s.labels = span; /* a thread context's span: the sample's Link */
	s.label_cnt = 2;
	s.cpu = 3;
	s.time_ns = T0 - 5; /* before the start: the window must widen */
	REQUIRE(profile__add_sample(fx->p, &s) == 0);
	s.time_ns = T0 + 5 * PERIOD;
	REQUIRE(profile__add_sample(fx->p, &s) == 0);
	profile__set_end_time(fx->p, T0 + 5 * PERIOD); /* last sample exactly at the end */
}

static const struct d_resource *find_resource(const struct d_request *d, int64_t pid)
{
	size_t i, j;

	for (i = 0; i < d->res_cnt; i++)
		for (j = 0; j < d->res[i].attr_cnt; j++)
			if (!strcmp(d->res[i].keys[j], "process.pid") && d->res[i].ivals[j] == pid)
				return &d->res[i];
	return NULL;
}

static const char *res_attr(const struct d_resource *r, const char *key)
{
	size_t j;

	for (j = 0; j < r->attr_cnt; j++)
		if (!strcmp(r->keys[j], key))
			return r->svals[j];
	return NULL;
}

static int res_key_count(const struct d_resource *r, const char *key)
{
	size_t j;
	int n = 0;

	for (j = 0; j < r->attr_cnt; j++)
		n += !strcmp(r->keys[j], key);
	return n;
}

/* ---- tests ---- */

TEST(utf8_rules)
{
	char *s;

	CHECK(utf8__valid("plain", 5));
	CHECK(utf8__valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9)); /* é € 😀 */
	CHECK(!utf8__valid("\xc0\xaf", 2));                            /* overlong '/' */
	CHECK(!utf8__valid("\xe0\x80\xaf", 3));                        /* overlong, 3 bytes */
	CHECK(!utf8__valid("\xed\xa0\x80", 3));                        /* surrogate */
	CHECK(!utf8__valid("\xf4\x90\x80\x80", 4));                    /* past U+10FFFF */
	CHECK(!utf8__valid("\xe2\x82", 2));                            /* truncated */
	CHECK(!utf8__valid("\xff", 1));

	s = utf8__sanitize("a\xe2\x82"
			   "A",
			   4); /* one maximal subpart, then 'A' */
	CHECK_STR(s, "a\xef\xbf\xbd"
		     "A");
	free(s);
	s = utf8__sanitize("\xf0\x80\x80", 3); /* F0 80 is never valid: three subparts */
	CHECK_STR(s, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	free(s);
	s = utf8__sanitize("x\0y", 3); /* embedded NUL replaced, string keeps its length */
	CHECK_STR(s, "x\xef\xbf\xbdy");
	free(s);
	s = utf8__sanitize("ok \xc3\xa9", 5);
	CHECK_STR(s, "ok \xc3\xa9");
	free(s);
}

TEST(file_ids_match_reference)
{
	char id[33], cmd[8192];
	const char *want;
	int fd;

	/* htlhash of our own binary against sha256sum over head || tail || be64(size) */
	REQUIRE(readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1) > 0);
	fd = open(self_exe, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	CHECK_EQ_INT(file_id__htlhash(fd, id), 0);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import hashlib; d = open(\"%s\", \"rb\").read(); "
		 "print(hashlib.sha256(d[:4096] + d[-4096:] + len(d).to_bytes(8, \"big\"))"
		 ".hexdigest()[:32])'",
		 self_exe);
	want = shell_line(cmd);
	CHECK_EQ_INT(strlen(want), 32);
	CHECK_STR(id, want);

	/* a file smaller than 4 KiB is hashed twice (head and tail overlap, no padding) */
	snprintf(cmd, sizeof(cmd),
		 "{ printf abc; printf abc; printf '\\0\\0\\0\\0\\0\\0\\0\\3'; } "
		 "| sha256sum | cut -c1-32");
	want = shell_line(cmd);
	{
		char path[] = "/tmp/test_otlp_small_XXXXXX";

		fd = mkstemp(path);
		REQUIRE(fd >= 0);
		REQUIRE(write(fd, "abc", 3) == 3);
		CHECK_EQ_INT(file_id__htlhash(fd, id), 0);
		close(fd);
		unlink(path);
	}
	CHECK_STR(id, want);

	/* kernel: FNV-128a of the hex build id, big-endian hex */
	otlp__kernel_file_id(KERNEL_BUILD_ID, id);
	want = shell_line("python3 -c 'h=0x6c62272e07bb014262b821756295c58d\n"
			  "for b in b\"" KERNEL_BUILD_ID "\": h=((h^b)*((1<<88)+0x13b))%(1<<128)\n"
			  "print(\"%032x\"%h)'");
	CHECK_EQ_INT(strlen(want), 32);
	CHECK_STR(id, want);
}

TEST(request_decodes_with_protoc)
{
	struct lookup_ctx lc = { 0 };
	struct otlp_encoder *e;
	struct otlp_host host;
	struct fixture fx;
	struct pb_buf b;
	char *text;

	fixture__build(&fx, 64);
	host_fixture(&host);
	lc.self_pid = fx.self_pid;
	e = otlp_encoder__new(&(struct otlp_encoder_opts){ .scope_version = "0.1.0" });
	REQUIRE(e);
	pb_buf__init(&b, OTLP_DEFAULT_MAX_REQUEST_SZ);
	CHECK_EQ_INT(otlp_encoder__encode(e, fx.p, &host, lookup_process, &lc, &b), 0);
	text = protoc_decode(&b);
	CHECK(text);
	if (text) {
		CHECK(strstr(text, "key: \"process.pid\""));
		CHECK(strstr(text, "int_value: 4242"));
		CHECK(strstr(text, "string_value: \"stackscope\"") ||
		      strstr(text, "name: \"stackscope\""));
		CHECK(strstr(text, "string_value: \"abort-marker\""));
		CHECK(strstr(text, "string_value: \"kernel\""));
		CHECK(strstr(text, "string_value: \"native\""));
		CHECK(strstr(text, "timestamps_unix_nano:"));
		CHECK(strstr(text, "column: 7"));
		CHECK(strstr(text, "string_table: \"process.executable.build_id.htlhash\""));
		CHECK(strstr(text, "string_table: \"vmlinux\""));
		CHECK(strstr(text, "link_index: 1"));
		CHECK(strstr(text, "span_id: \"\\267\\255kqi 31\""));
		CHECK(!strstr(text, "process.context.label.span_id"));
		CHECK(!strstr(text, "\\377")); /* no raw invalid byte survived */
		free(text);
	}
	pb_buf__free(&b);
	otlp_encoder__free(e);
	profile__free(fx.p);
}

TEST(request_content_and_invariants)
{
	static struct d_request d; /* large: keep it off the stack */
	const struct d_resource *self, *other;
	struct lookup_ctx lc = { 0 };
	const struct d_attr *a;
	struct otlp_encoder *e;
	struct otlp_host host;
	struct fixture fx;
	char id[33], kid[33];
	size_t i, j, cpu0 = 0, cpu1 = 0, ts_total = 0;
	bool seen_kernel = false, seen_inline = false, seen_error = false, seen_gone = false;
	bool seen_python = false;
	struct pb_buf b;
	int fd;

	fixture__build(&fx, 64);
	host_fixture(&host);
	lc.self_pid = fx.self_pid;
	e = otlp_encoder__new(NULL);
	REQUIRE(e);
	pb_buf__init(&b, OTLP_DEFAULT_MAX_REQUEST_SZ);
	REQUIRE(otlp_encoder__encode(e, fx.p, &host, lookup_process, &lc, &b) == 0);
	decode_request(&d, &b);
	check_invariants(&d);
	CHECK_EQ_INT(d.res_cnt, 2);
	CHECK_EQ_INT(lc.calls, 2);

	/* resources */
	self = find_resource(&d, fx.self_pid);
	other = find_resource(&d, 4242);
	REQUIRE(self && other);
	CHECK_STR(res_attr(self, "process.executable.path"), "/usr/bin/te\xef\xbf\xbdst");
	CHECK_STR(res_attr(self, "process.executable.name"), "te\xef\xbf\xbdst");
	CHECK_STR(res_attr(self, "container.id"), "0123456789abcdef");
	CHECK_STR(res_attr(self, "k8s.pod.uid"), "0f8c1c66-1111-2222-3333-444455556666");
	CHECK_STR(res_attr(self, "process.owner"), "root");
	CHECK_STR(res_attr(self, "deployment.environment"), "test");
	CHECK_STR(res_attr(self, "host.name"), "override\xef\xbf\xbd"); /* user's wins */
	CHECK_EQ_INT(res_key_count(self, "host.name"), 1);
	CHECK_STR(res_attr(self, "host.id"), "0123456789abcdef0123456789abcdef");
	CHECK_STR(res_attr(self, "host.arch"), "amd64");
	CHECK_STR(res_attr(self, "os.type"), "linux");
	CHECK_STR(res_attr(self, "os.description"), "Test Linux 6.1");
	CHECK(!res_attr(other, "process.executable.path")); /* lookup failed: pid + host */
	CHECK_STR(res_attr(other, "host.id"), "0123456789abcdef0123456789abcdef");

	/* profile header: samples/count, cpu/nanoseconds, the period, a window around all */
	CHECK_STR(d.strs[self->sample_type[0]], "samples");
	CHECK_STR(d.strs[self->sample_type[1]], "count");
	CHECK_STR(d.strs[self->period_type[0]], "cpu");
	CHECK_STR(d.strs[self->period_type[1]], "nanoseconds");
	CHECK_EQ_U64(self->period, PERIOD);
	CHECK_EQ_U64(self->time, T0 - 5);
	CHECK_EQ_U64(self->time + self->duration, T0 + 5 * PERIOD + 1);

	/* our thread: one sample per CPU, timestamps only, 3 + 2 events */
	CHECK_EQ_INT(self->sample_cnt, 2);
	for (i = 0; i < self->sample_cnt; i++) {
		const struct d_sample *s = &self->samples[i];

		CHECK_EQ_INT(s->value_cnt, 0);
		ts_total += s->ts_cnt;
		a = attr_find(&d, s->attrs, s->attr_cnt, "thread.name");
		CHECK(a && a->is_str && !strcmp(a->s, "worker\xef\xbf\xbd\xef\xbf\xbd"));
		a = attr_find(&d, s->attrs, s->attr_cnt, "thread.id");
		CHECK(a && a->is_int && a->i == fx.self_pid + 1);
		a = attr_find(&d, s->attrs, s->attr_cnt, "process.context.label.route");
		CHECK(a && a->is_str && !strcmp(a->s, "/api"));
		a = attr_find(&d, s->attrs, s->attr_cnt, "process.context.label.k\xef\xbf\xbd");
		CHECK(a && a->is_str && !strcmp(a->s, "v\xef\xbf\xbd"));
		a = attr_find(&d, s->attrs, s->attr_cnt, "cpu.logical_number");
		REQUIRE(a && a->is_int);
		if (a->i == 0)
			cpu0 = s->ts_cnt;
		else if (a->i == 1)
			cpu1 = s->ts_cnt;
		for (j = 1; j < s->ts_cnt; j++)
			CHECK(s->ts[j] > s->ts[j - 1]);
		CHECK_EQ_INT(d.stack_len[s->stack], 5);
	}
	CHECK_EQ_INT(cpu0, 3);
	CHECK_EQ_INT(cpu1, 2);
	CHECK_EQ_INT(ts_total, 5);
	CHECK_EQ_INT(other->sample_cnt, 1);
	CHECK_EQ_INT(other->samples[0].ts_cnt, 2);
	CHECK(!attr_find(&d, other->samples[0].attrs, other->samples[0].attr_cnt,
			 "process.context.label.route"));

	/* locations, leaf first: kernel, inline pair, unsymbolized native, abort marker */
	fd = open(self_exe, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	REQUIRE(file_id__htlhash(fd, id) == 0);
	close(fd);
	otlp__kernel_file_id(KERNEL_BUILD_ID, kid);
	{
		const struct d_sample *s = &self->samples[0];
		const uint64_t *locs = d.stack_locs[s->stack];

		for (i = 0; i < d.stack_len[s->stack]; i++) {
			uint64_t l = locs[i], m = d.loc_mapping[l];
			const char *type;

			a = attr_find(&d, d.loc_attrs[l], d.loc_attr_cnt[l], "profile.frame.type");
			REQUIRE(a && a->is_str);
			type = a->s;
			if (i == 0) {
				seen_kernel = true;
				CHECK_STR(type, "kernel");
				CHECK_EQ_U64(d.loc_address[l], 0xffffffff81000100ULL);
				CHECK_STR(d.strs[d.map_filename[m]], "vmlinux");
				CHECK_EQ_U64(d.map_start[m], 0);
				CHECK_EQ_U64(d.map_limit[m], 0);
				a = attr_find(&d, d.map_attrs[m], d.map_attr_cnt[m],
					      "process.executable.build_id.gnu");
				CHECK(a && !strcmp(a->s, KERNEL_BUILD_ID));
				a = attr_find(&d, d.map_attrs[m], d.map_attr_cnt[m],
					      "process.executable.build_id.htlhash");
				CHECK(a && !strcmp(a->s, kid));
				REQUIRE(d.loc_line_cnt[l] == 1);
				CHECK_STR(d.strs[d.fn_name[d.loc_fns[l][0]]], "do_syscall_64");
			} else if (i == 1) {
				seen_inline = true;
				CHECK_STR(type, "native");
				CHECK_EQ_U64(d.loc_address[l], 0x1234);
				CHECK_EQ_U64(d.map_start[m], 0x1000);
				CHECK_EQ_U64(d.map_limit[m], 0x9000);
				CHECK_STR(d.strs[d.map_filename[m]], strrchr(self_exe, '/') + 1);
				a = attr_find(&d, d.map_attrs[m], d.map_attr_cnt[m],
					      "process.executable.build_id.gnu");
				CHECK(a && !strcmp(a->s, "abcdef0123456789"));
				a = attr_find(&d, d.map_attrs[m], d.map_attr_cnt[m],
					      "process.executable.build_id.htlhash");
				CHECK(a && !strcmp(a->s, id));
				a = attr_find(&d, d.map_attrs[m], d.map_attr_cnt[m],
					      "process.executable.build_id.go");
				CHECK(a && !strcmp(a->s, "aBc/dEf"));
				REQUIRE(d.loc_line_cnt[l] == 2); /* innermost first */
				CHECK_STR(d.strs[d.fn_name[d.loc_fns[l][0]]], "inner");
				CHECK_EQ_U64(d.loc_lines[l][0], 10);
				CHECK_EQ_U64(d.loc_cols[l][0], 7); /* Line.column */
				CHECK_EQ_U64(d.loc_cols[l][1], 0); /* none: not written */
				CHECK_STR(d.strs[d.fn_name[d.loc_fns[l][1]]], "outer\xef\xbf\xbd");
				CHECK_STR(d.strs[d.fn_file[d.loc_fns[l][1]]], "a.c");
				CHECK_EQ_U64(d.loc_lines[l][1], 20);
			} else if (i == 2) {
				seen_gone = true;
				CHECK_STR(type, "go");
				CHECK_EQ_U64(d.loc_address[l], 0x2345);
				CHECK_EQ_INT(d.loc_line_cnt[l], 0);
				CHECK_STR(d.strs[d.map_filename[m]], "libgone.so");
				/* unreadable file: the GNU build id only */
				CHECK_EQ_INT(d.map_attr_cnt[m], 1);
				CHECK(!attr_find(&d, d.map_attrs[m], d.map_attr_cnt[m],
						 "process.executable.build_id.htlhash"));
			} else if (i == 3) {
				seen_python = true;
				CHECK_STR(type, "cpython");
				CHECK_EQ_U64(m, 0);
				REQUIRE(d.loc_line_cnt[l] == 1);
				CHECK_STR(d.strs[d.fn_name[d.loc_fns[l][0]]], "Worker.run");
				CHECK_STR(d.strs[d.fn_file[d.loc_fns[l][0]]], "/srv/app.py");
				CHECK_EQ_U64(d.loc_lines[l][0], 42);
				CHECK_EQ_U64(d.loc_cols[l][0], 0);
			} else {
				seen_error = true;
				CHECK_STR(type, "abort-marker");
				CHECK_EQ_U64(m, 0);
				CHECK_EQ_U64(d.loc_address[l], 0);
				REQUIRE(d.loc_line_cnt[l] == 1);
				CHECK_STR(d.strs[d.fn_name[d.loc_fns[l][0]]], "[unwind: no CFI]");
			}
		}
	}
	CHECK(seen_kernel && seen_inline && seen_gone && seen_python && seen_error);
	/* the locations the second process shares are the same dictionary entries */
	CHECK_EQ_U64(d.stack_locs[other->samples[0].stack][0],
		     d.stack_locs[self->samples[0].stack][1]);
	pb_buf__free(&b);
	otlp_encoder__free(e);
	profile__free(fx.p);
}

/* With too few kept timestamps the whole profile switches to aggregated values, and the
 * count whose CPU is unknown gets a sample without cpu.logical_number.
 */
TEST(aggregated_shape_when_timestamps_were_dropped)
{
	static struct d_request d;
	const struct d_resource *self;
	struct fixture fx;
	struct otlp_encoder *e;
	struct pb_buf b;
	uint64_t total = 0;
	size_t i, with_cpu = 0, without_cpu = 0;

	fixture__build(&fx, 2); /* our thread keeps 2 of its 5 events */
	e = otlp_encoder__new(NULL);
	REQUIRE(e);
	pb_buf__init(&b, OTLP_DEFAULT_MAX_REQUEST_SZ);
	REQUIRE(otlp_encoder__encode(e, fx.p, NULL, NULL, NULL, &b) == 0);
	decode_request(&d, &b);
	check_invariants(&d);
	self = find_resource(&d, fx.self_pid);
	REQUIRE(self);
	for (i = 0; i < self->sample_cnt; i++) {
		const struct d_sample *s = &self->samples[i];

		CHECK_EQ_INT(s->ts_cnt, 0);
		REQUIRE(s->value_cnt == 1);
		total += s->values[0];
		if (attr_find(&d, s->attrs, s->attr_cnt, "cpu.logical_number"))
			with_cpu++;
		else
			without_cpu++;
	}
	CHECK_EQ_U64(total, 5);
	CHECK_EQ_INT(with_cpu, 2); /* the two kept events: CPUs 0 and 1 */
	CHECK_EQ_INT(without_cpu, 1);
	/* no host: no kernel build id, the kernel mapping is still there, named */
	CHECK_EQ_INT(self->attr_cnt, 1); /* process.pid only */
	pb_buf__free(&b);
	otlp_encoder__free(e);
	profile__free(fx.p);
}

TEST(empty_profile_and_size_limit)
{
	static struct d_request d;
	struct profile_opts opts = { .period_ns = PERIOD, .start_time_ns = T0 };
	struct otlp_encoder *e = otlp_encoder__new(NULL);
	struct profile *p = profile__new(&opts);
	struct fixture fx;
	struct pb_buf b;

	REQUIRE(e && p);
	pb_buf__init(&b, 1 << 20);
	CHECK_EQ_INT(otlp_encoder__encode(e, p, NULL, NULL, NULL, &b), 0);
	decode_request(&d, &b);
	CHECK_EQ_INT(d.res_cnt, 0);
	CHECK_EQ_INT(d.table_cnt[5], 1); /* "" only */
	pb_buf__free(&b);
	profile__free(p);

	fixture__build(&fx, 64);
	pb_buf__init(&b, 200);
	CHECK_EQ_INT(otlp_encoder__encode(e, fx.p, NULL, NULL, NULL, &b), -EMSGSIZE);
	pb_buf__free(&b);
	profile__free(fx.p);
	otlp_encoder__free(e);
}

TEST(host_detect)
{
	struct otlp_host h;

	otlp_host__detect(&h);
	CHECK_STR(h.os_type, "linux");
	CHECK(h.host_name[0]);
	CHECK(h.host_arch[0]);
	CHECK(strstr(h.os_description, "Linux "));
	CHECK(!h.kernel_build_id[0] || strlen(h.kernel_build_id) >= 32);
	CHECK(h.extra_cnt == 0);
}

int main(void)
{
	RUN(utf8_rules);
	RUN(file_ids_match_reference);
	RUN(request_decodes_with_protoc);
	RUN(request_content_and_invariants);
	RUN(aggregated_shape_when_timestamps_were_dropped);
	RUN(empty_profile_and_size_limit);
	RUN(host_detect);
	return test_summary();
}
