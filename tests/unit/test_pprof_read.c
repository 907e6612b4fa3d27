/* Unit tests for the pprof reader (src/export/pprof_read.c): a profile written by our writer
 * (pprof__encode) decodes to exactly what the profile holds; every field of the message,
 * including those our writer never sets, survives decode -> encode -> decode; the changes
 * stackscope symbolize makes (strings, functions, lines) are written back; and corrupt,
 * truncated or invalid input fails with -EBADMSG (or -EFBIG), never a crash (run under
 * ASan+UBSan by `make asan-test`).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "export/pprof.h"
#include "export/pprof_read.h"
#include "export/protobuf.h"
#include "profile/profile.h"
#include "store/pprof_import.h"
#include "profile_fixture.h"
#include "scratch.h"
#include "test.h"

static char tmp_dir[256];

/* ---- helpers ---- */

static const char *str_of(const struct pprof_profile *p, int64_t idx)
{
	return pprof_profile__string(p, idx);
}

static const char *fn_name(const struct pprof_profile *p, uint64_t fid)
{
	const struct pprof_function *fn = pprof_profile__function(p, fid);

	return fn ? str_of(p, fn->name) : "(no function)";
}

static const char *fn_file(const struct pprof_profile *p, uint64_t fid)
{
	const struct pprof_function *fn = pprof_profile__function(p, fid);

	return fn ? str_of(p, fn->filename) : "(no function)";
}

/* -1 if p has no label called key in s; else its index. */
static int label_idx(const struct pprof_profile *p, const struct pprof_sample *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->label_cnt; i++) {
		if (!strcmp(str_of(p, s->labels[i].key), key))
			return (int)i;
	}
	return -1;
}

/* gzip of len bytes (one member) into a new buffer. */
static uint8_t *gzip_bytes(const uint8_t *data, size_t len, size_t *out_len)
{
	z_stream zs;
	size_t cap = len + len / 8 + 128;
	uint8_t *out = malloc(cap);

	memset(&zs, 0, sizeof(zs));
	if (!out || deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY)) {
		free(out);
		return NULL;
	}
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&zs);
		free(out);
		return NULL;
	}
	*out_len = cap - zs.avail_out;
	deflateEnd(&zs);
	return out;
}

/* ---- a profile built with the in-memory profile API: profile_fixture.h ---- */

static void encode_profile(const struct profile *prof, struct pb_buf *b)
{
	pb_buf__init(b, PPROF_MAX_SZ);
	REQUIRE(pprof__encode(prof, b) == 0);
}

/* Checks that the decoded d says everything prof holds (the writer's conventions included). */
static void check_against_profile(const struct pprof_profile *d, const struct profile_fixture *fx)
{
	const struct profile *prof = fx->p;
	uint64_t period = profile__period_ns(prof);
	size_t i, j;
	uint32_t cnt, id;

	/* header */
	CHECK_STR(str_of(d, 0), "");
	REQUIRE(d->sample_type_cnt == 2);
	CHECK_STR(str_of(d, d->sample_types[0].type), "samples");
	CHECK_STR(str_of(d, d->sample_types[0].unit), "count");
	CHECK_STR(str_of(d, d->sample_types[1].type), "cpu");
	CHECK_STR(str_of(d, d->sample_types[1].unit), "nanoseconds");
	CHECK_STR(str_of(d, d->period_type.type), "cpu");
	CHECK_STR(str_of(d, d->period_type.unit), "nanoseconds");
	CHECK_EQ_U64(d->period, period);
	CHECK_EQ_U64(d->time_nanos, 1700000000000000000ULL);
	CHECK_EQ_U64(d->duration_nanos, 2000000000ULL);
	CHECK_EQ_INT(d->comment_cnt, 0);
	CHECK_EQ_INT(d->drop_frames, 0);

	/* samples, in order, with their stacks, values and labels */
	REQUIRE(d->sample_cnt == profile__sample_cnt(prof));
	for (i = 0; i < d->sample_cnt; i++) {
		const struct profile_agg_sample *ps = profile__sample(prof, i);
		const uint32_t *frames = profile__stack(prof, ps->stack, &cnt);
		const struct pprof_sample *s = &d->samples[i];
		int l;

		REQUIRE(s->location_cnt == cnt);
		for (j = 0; j < cnt; j++)
			CHECK_EQ_U64(s->location_ids[j], frames[j]);
		REQUIRE(s->value_cnt == 2);
		CHECK_EQ_U64(s->values[0], ps->count);
		CHECK_EQ_U64(s->values[1], ps->count * period);
		CHECK_EQ_INT(s->label_cnt, 4);
		l = label_idx(d, s, "pid");
		REQUIRE(l >= 0);
		CHECK_EQ_U64(s->labels[l].num, ps->pid);
		CHECK_EQ_INT(s->labels[l].str, 0);
		l = label_idx(d, s, "tid");
		REQUIRE(l >= 0);
		CHECK_EQ_U64(s->labels[l].num, ps->tid);
		l = label_idx(d, s, "comm");
		REQUIRE(l >= 0);
		CHECK_STR(str_of(d, s->labels[l].str), ps->comm);
		l = label_idx(d, s, "thread_comm");
		REQUIRE(l >= 0);
		CHECK_STR(str_of(d, s->labels[l].str), ps->thread_comm);
	}

	/* mappings: the profile's two, then the writer's kernel mapping */
	REQUIRE(d->mapping_cnt == 3);
	for (id = 1; id <= 2; id++) {
		const struct profile_mapping *pm = profile__mapping(prof, id);
		const struct pprof_mapping *m = pprof_profile__mapping(d, id);

		REQUIRE(m);
		CHECK_EQ_U64(m->memory_start, pm->start);
		CHECK_EQ_U64(m->memory_limit, pm->limit);
		CHECK_EQ_U64(m->file_offset, pm->file_offset);
		CHECK_STR(str_of(d, m->filename), pm->path);
		CHECK_STR(str_of(d, m->build_id), pm->build_id);
	}
	/* libfoo: only an address frame; app: symbolized with an inline frame */
	CHECK(!pprof_profile__mapping(d, fx->m_foo)->has_functions);
	CHECK(pprof_profile__mapping(d, fx->m_app)->has_functions);
	CHECK(pprof_profile__mapping(d, fx->m_app)->has_filenames);
	CHECK(pprof_profile__mapping(d, fx->m_app)->has_line_numbers);
	CHECK(pprof_profile__mapping(d, fx->m_app)->has_inline_frames);
	CHECK_STR(str_of(d, pprof_profile__mapping(d, 3)->filename), "[kernel.kallsyms]");
	CHECK(pprof_profile__mapping(d, 3)->memory_start == 0xffffffff81000010ULL);
	CHECK(pprof_profile__mapping(d, 3)->memory_limit == 0xffffffff81000021ULL);
	CHECK(!pprof_profile__mapping(d, 3)->has_functions);

	/* locations = frames */
	REQUIRE(d->location_cnt == profile__frame_cnt(prof));
	for (id = 1; id <= profile__frame_cnt(prof); id++) {
		const struct profile_frame *f = profile__frame(prof, id);
		const struct pprof_location *loc = pprof_profile__location(d, id);
		uint64_t want_mapping = f->kind == FRAME_KERNEL ? 3 : f->mapping;

		REQUIRE(loc);
		CHECK_EQ_U64(loc->address, f->address);
		CHECK_EQ_U64(loc->mapping_id, want_mapping);
		CHECK(!loc->is_folded);
		if (!f->line_cnt) {
			REQUIRE(loc->line_cnt == 1);
			CHECK_STR(fn_name(d, loc->lines[0].function_id),
				  profile__frame_name(prof, id, 0));
			CHECK_STR(fn_file(d, loc->lines[0].function_id), "");
			CHECK_EQ_INT(loc->lines[0].line, 0);
			continue;
		}
		REQUIRE(loc->line_cnt == f->line_cnt);
		for (j = 0; j < f->line_cnt; j++) {
			const struct pprof_function *fn =
				pprof_profile__function(d, loc->lines[j].function_id);

			REQUIRE(fn);
			CHECK_STR(str_of(d, fn->name), f->lines[j].function);
			CHECK_STR(str_of(d, fn->system_name), f->lines[j].function);
			CHECK_STR(str_of(d, fn->filename),
				  f->lines[j].file ? f->lines[j].file : "");
			CHECK_EQ_INT(loc->lines[j].line, f->lines[j].line);
			CHECK_EQ_INT(loc->lines[j].column, f->lines[j].column);
		}
	}
	CHECK_STR(fn_name(d, pprof_profile__location(d, fx->foo)->lines[0].function_id),
		  "libfoo.so+0x1234");
	/* functions: dense ids, unique (name, filename) */
	for (i = 0; i < d->function_cnt; i++) {
		CHECK_EQ_U64(d->functions[i].id, i + 1);
		for (j = 0; j < i; j++)
			CHECK(d->functions[i].name != d->functions[j].name ||
			      d->functions[i].filename != d->functions[j].filename);
	}
}

/* Deep equality of two decoded profiles, by content (strings compared as strings). */
static void check_same(const struct pprof_profile *a, const struct pprof_profile *b)
{
	size_t i, j;

#define SAME_STR(x, y) CHECK_STR(str_of(a, x), str_of(b, y))
	REQUIRE(a->sample_type_cnt == b->sample_type_cnt);
	for (i = 0; i < a->sample_type_cnt; i++) {
		SAME_STR(a->sample_types[i].type, b->sample_types[i].type);
		SAME_STR(a->sample_types[i].unit, b->sample_types[i].unit);
	}
	REQUIRE(a->sample_cnt == b->sample_cnt);
	for (i = 0; i < a->sample_cnt; i++) {
		const struct pprof_sample *x = &a->samples[i], *y = &b->samples[i];

		REQUIRE(x->location_cnt == y->location_cnt && x->value_cnt == y->value_cnt &&
			x->label_cnt == y->label_cnt);
		for (j = 0; j < x->location_cnt; j++)
			CHECK_EQ_U64(x->location_ids[j], y->location_ids[j]);
		for (j = 0; j < x->value_cnt; j++)
			CHECK_EQ_U64(x->values[j], y->values[j]);
		for (j = 0; j < x->label_cnt; j++) {
			SAME_STR(x->labels[j].key, y->labels[j].key);
			SAME_STR(x->labels[j].str, y->labels[j].str);
			CHECK_EQ_U64(x->labels[j].num, y->labels[j].num);
			SAME_STR(x->labels[j].num_unit, y->labels[j].num_unit);
		}
	}
	REQUIRE(a->mapping_cnt == b->mapping_cnt);
	for (i = 0; i < a->mapping_cnt; i++) {
		const struct pprof_mapping *x = &a->mappings[i], *y = &b->mappings[i];

		CHECK_EQ_U64(x->id, y->id);
		CHECK_EQ_U64(x->memory_start, y->memory_start);
		CHECK_EQ_U64(x->memory_limit, y->memory_limit);
		CHECK_EQ_U64(x->file_offset, y->file_offset);
		SAME_STR(x->filename, y->filename);
		SAME_STR(x->build_id, y->build_id);
		CHECK(x->has_functions == y->has_functions);
		CHECK(x->has_filenames == y->has_filenames);
		CHECK(x->has_line_numbers == y->has_line_numbers);
		CHECK(x->has_inline_frames == y->has_inline_frames);
	}
	REQUIRE(a->location_cnt == b->location_cnt);
	for (i = 0; i < a->location_cnt; i++) {
		const struct pprof_location *x = &a->locations[i], *y = &b->locations[i];

		CHECK_EQ_U64(x->id, y->id);
		CHECK_EQ_U64(x->mapping_id, y->mapping_id);
		CHECK_EQ_U64(x->address, y->address);
		CHECK(x->is_folded == y->is_folded);
		REQUIRE(x->line_cnt == y->line_cnt);
		for (j = 0; j < x->line_cnt; j++) {
			CHECK_EQ_U64(x->lines[j].function_id, y->lines[j].function_id);
			CHECK_EQ_INT(x->lines[j].line, y->lines[j].line);
			CHECK_EQ_INT(x->lines[j].column, y->lines[j].column);
		}
	}
	REQUIRE(a->function_cnt == b->function_cnt);
	for (i = 0; i < a->function_cnt; i++) {
		const struct pprof_function *x = &a->functions[i], *y = &b->functions[i];

		CHECK_EQ_U64(x->id, y->id);
		SAME_STR(x->name, y->name);
		SAME_STR(x->system_name, y->system_name);
		SAME_STR(x->filename, y->filename);
		CHECK_EQ_INT(x->start_line, y->start_line);
	}
	REQUIRE(a->string_cnt == b->string_cnt);
	for (i = 0; i < a->string_cnt; i++) {
		CHECK_EQ_INT(a->strings[i].len, b->strings[i].len);
		CHECK(a->strings[i].len == b->strings[i].len &&
		      !memcmp(a->strings[i].s, b->strings[i].s, a->strings[i].len));
	}
	SAME_STR(a->drop_frames, b->drop_frames);
	SAME_STR(a->keep_frames, b->keep_frames);
	CHECK_EQ_U64(a->time_nanos, b->time_nanos);
	CHECK_EQ_U64(a->duration_nanos, b->duration_nanos);
	SAME_STR(a->period_type.type, b->period_type.type);
	SAME_STR(a->period_type.unit, b->period_type.unit);
	CHECK_EQ_U64(a->period, b->period);
	REQUIRE(a->comment_cnt == b->comment_cnt);
	for (i = 0; i < a->comment_cnt; i++)
		SAME_STR(a->comments[i], b->comments[i]);
	SAME_STR(a->default_sample_type, b->default_sample_type);
	SAME_STR(a->doc_url, b->doc_url);
#undef SAME_STR
}

/* decode(encode(d)) must equal d. */
static void check_reencode(const struct pprof_profile *d)
{
	struct pprof_profile *again = NULL;
	struct pb_buf b;

	pb_buf__init(&b, PPROF_MAX_SZ);
	REQUIRE(pprof_profile__encode(d, &b) == 0);
	CHECK_EQ_INT(pprof_profile__decode(b.data, b.len, 0, &again), 0);
	pb_buf__free(&b);
	REQUIRE(again);
	check_same(d, again);
	pprof_profile__free(again);
}

/* ---- tests ---- */

TEST(decode_our_writer_raw_and_gzip)
{
	struct pprof_profile *d = NULL;
	struct profile_fixture fx;
	struct pb_buf b;
	uint8_t *gz;
	size_t gz_len = 0;

	profile_fixture__build(&fx);
	encode_profile(fx.p, &b);
	CHECK_EQ_INT(pprof_profile__decode(b.data, b.len, 0, &d), 0);
	REQUIRE(d);
	check_against_profile(d, &fx);
	check_reencode(d);
	pprof_profile__free(d);
	d = NULL;

	gz = gzip_bytes(b.data, b.len, &gz_len);
	REQUIRE(gz);
	CHECK_EQ_INT(pprof_profile__decode(gz, gz_len, 0, &d), 0);
	REQUIRE(d);
	check_against_profile(d, &fx);
	pprof_profile__free(d);
	d = NULL;
	/* the decompressed size is capped */
	CHECK_EQ_INT(pprof_profile__decode(gz, gz_len, b.len - 1, &d), -EFBIG);
	CHECK(!d);
	CHECK_EQ_INT(pprof_profile__decode(gz, gz_len, b.len, &d), 0);
	pprof_profile__free(d);
	d = NULL;
	/* and so is a raw message */
	CHECK_EQ_INT(pprof_profile__decode(b.data, b.len, b.len - 1, &d), -EFBIG);
	free(gz);
	pb_buf__free(&b);
	profile__free(fx.p);
}

TEST(read_file_written_by_pprof_write)
{
	struct pprof_profile *d = NULL, *e = NULL;
	struct profile_fixture fx;
	char path[512], path2[512];

	profile_fixture__build(&fx);
	snprintf(path, sizeof(path), "%s/in.pb.gz", tmp_dir);
	snprintf(path2, sizeof(path2), "%s/out.pb.gz", tmp_dir);
	REQUIRE(pprof__write(fx.p, path) == 0);
	CHECK_EQ_INT(pprof_profile__read(path, 0, &d), 0);
	REQUIRE(d);
	check_against_profile(d, &fx);
	/* written again (gzip) and read back */
	CHECK_EQ_INT(pprof_profile__write(d, path2), 0);
	CHECK_EQ_INT(pprof_profile__read(path2, 0, &e), 0);
	REQUIRE(e);
	check_same(d, e);
	check_against_profile(e, &fx);
	CHECK(access(path2, F_OK) == 0);
	snprintf(path2, sizeof(path2), "%s/out.pb.gz.tmp", tmp_dir);
	CHECK(access(path2, F_OK) != 0);
	pprof_profile__free(d);
	pprof_profile__free(e);
	/* missing file, a folder, a file over the cap */
	snprintf(path2, sizeof(path2), "%s/missing.pb.gz", tmp_dir);
	CHECK_EQ_INT(pprof_profile__read(path2, 0, &d), -ENOENT);
	CHECK_EQ_INT(pprof_profile__read(tmp_dir, 0, &d), -EISDIR);
	CHECK_EQ_INT(pprof_profile__read(path, 16, &d), -EFBIG);
	CHECK(!d);
	profile__free(fx.p);
}

/* Columns: V8 frames at the same line but other columns are other locations; the column
 * goes out as Line.column, comes back through the reader, a rewrite and pprof_import (the
 * store's and the diff's way in); a frame without one writes none.
 */
TEST(columns_round_trip)
{
	struct profile_opts opts = { .period_ns = 1000000, .start_time_ns = 1 };
	struct profile_line at9[] = { { "gamma", "/srv/app.js", 12, 9 } };
	struct profile_line at23[] = { { "gamma", "/srv/app.js", 12, 23 } };
	struct profile_line inl[] = { { "inner", "/srv/app.js", 3, 5 },
				      { "beta", "/srv/app.js", 20, 17 } };
	struct profile_line py[] = { { "handler", "/srv/app.py", 7 } };
	struct profile *p = profile__new(&opts), *back = NULL;
	struct pprof_profile *d = NULL, *e = NULL;
	uint32_t f9, f23, fi, fp, again, stack[3];
	struct pb_buf b;
	char path[512];
	size_t i, j;

	REQUIRE(p);
	f9 = profile__add_frame(p, &(struct profile_frame){ FRAME_RUNTIME, 0, 0, at9, 1, "v8js" });
	f23 = profile__add_frame(p,
				 &(struct profile_frame){ FRAME_RUNTIME, 0, 0, at23, 1, "v8js" });
	fi = profile__add_frame(p, &(struct profile_frame){ FRAME_RUNTIME, 0, 0, inl, 2, "v8js" });
	fp = profile__add_frame(p,
				&(struct profile_frame){ FRAME_RUNTIME, 0, 0, py, 1, "cpython" });
	again = profile__add_frame(p,
				   &(struct profile_frame){ FRAME_RUNTIME, 0, 0, at9, 1, "v8js" });
	REQUIRE(f9 && f23 && fi && fp);
	CHECK(f9 != f23);
	CHECK_EQ_INT(again, f9);
	CHECK_EQ_INT(profile__frame(p, f23)->lines[0].column, 23);
	stack[0] = f9;
	stack[1] = fi;
	stack[2] = fp;
	REQUIRE(!profile__add_sample(p, &(struct profile_sample){ stack, 3, 1, 1, "node", "node", 0,
								  2, 3 }));
	stack[0] = f23;
	REQUIRE(!profile__add_sample(p, &(struct profile_sample){ stack, 3, 1, 1, "node", "node", 0,
								  2, 1 }));
	encode_profile(p, &b);
	REQUIRE(!pprof_profile__decode(b.data, b.len, 0, &d));
	CHECK_EQ_INT(pprof_profile__location(d, f9)->lines[0].column, 9);
	CHECK_EQ_INT(pprof_profile__location(d, f9)->lines[0].line, 12);
	CHECK_EQ_INT(pprof_profile__location(d, f23)->lines[0].column, 23);
	CHECK_EQ_INT(pprof_profile__location(d, fi)->lines[0].column, 5);
	CHECK_EQ_INT(pprof_profile__location(d, fi)->lines[1].column, 17);
	CHECK_EQ_INT(pprof_profile__location(d, fp)->lines[0].column, 0);
	/* no column field at all for the Python frame: its Line is function and line only */
	{
		const uint8_t tail[] = { 0x10, 0x07 }; /* line = 7, then the Line ends */
		bool found = false;

		for (i = 0; i + 4 < b.len; i++)
			if (b.data[i] == 0x22 && b.data[i + 1] == 4 && b.data[i + 2] == 0x08 &&
			    !memcmp(b.data + i + 4, tail, sizeof(tail)))
				found = true;
		CHECK(found);
	}
	/* written back and read again */
	snprintf(path, sizeof(path), "%s/columns.pb.gz", tmp_dir);
	REQUIRE(!pprof_profile__write(d, path));
	REQUIRE(!pprof_profile__read(path, 0, &e));
	check_same(d, e);
	/* imported into a profile: the same lines, columns included */
	REQUIRE(!pprof_import(e, &back));
	CHECK_EQ_INT(profile__frame_cnt(back), 4);
	for (i = 1; i <= profile__frame_cnt(back); i++) {
		const struct profile_frame *g = profile__frame(back, (uint32_t)i);
		const struct profile_frame *want = NULL;
		uint32_t k;

		for (k = 1; k <= profile__frame_cnt(p) && !want; k++) {
			const struct profile_frame *h = profile__frame(p, k);

			if (h->line_cnt == g->line_cnt && h->lines[0].line == g->lines[0].line &&
			    h->lines[0].column == g->lines[0].column &&
			    !strcmp(h->lines[0].function, g->lines[0].function))
				want = h;
		}
		REQUIRE(want);
		for (j = 0; j < g->line_cnt; j++) {
			CHECK_STR(g->lines[j].file, want->lines[j].file);
			CHECK_EQ_INT(g->lines[j].line, want->lines[j].line);
			CHECK_EQ_INT(g->lines[j].column, want->lines[j].column);
		}
	}
	CHECK_EQ_U64(profile__total_samples(back), 4);
	profile__free(back);
	pprof_profile__free(d);
	pprof_profile__free(e);
	pb_buf__free(&b);
	profile__free(p);
}

/* A message with every field, some unpacked, with unknown fields of every wire type. */
static void encode_full(struct pb_buf *b, bool unpacked)
{
	static const char *const strs[] = {
		"",    "samples", "count",  "cpu",       "nanoseconds", "key",
		"val", "bytes",   "/bin/x", "bid",       "fn",          "sys",
		"x.c", "drop.*",  "keep.*", "a comment", "https://doc"
	};
	size_t m, m2, i;

	pb_buf__init(b, 1 << 20);
	pb_buf__begin(b, 1, &m); /* sample_type */
	pb_buf__varint(b, 1, 1);
	pb_buf__varint(b, 2, 2);
	pb_buf__end(b, m);
	pb_buf__begin(b, 1, &m);
	pb_buf__varint(b, 1, 3);
	pb_buf__varint(b, 2, 4);
	pb_buf__end(b, m);
	pb_buf__begin(b, 2, &m); /* sample */
	if (unpacked) {
		pb_buf__varint(b, 1, 7);
		pb_buf__varint(b, 2, 5);
		pb_buf__varint(b, 1, 8);
		pb_buf__varint(b, 2, (uint64_t)-3); /* negative value */
	} else {
		uint64_t ids[] = { 7, 8 }, vals[] = { 5, (uint64_t)-3 };

		pb_buf__packed_varints(b, 1, ids, 2);
		pb_buf__packed_varints(b, 2, vals, 2);
	}
	pb_buf__begin(b, 3, &m2); /* label with everything */
	pb_buf__varint(b, 1, 5);
	pb_buf__varint(b, 2, 6);
	pb_buf__varint(b, 3, 42);
	pb_buf__varint(b, 4, 7);
	pb_buf__end(b, m2);
	pb_buf__fixed32(b, 99, 0xdeadbeef); /* unknown, I32 */
	pb_buf__end(b, m);
	pb_buf__begin(b, 3, &m); /* mapping with all flags */
	pb_buf__varint(b, 1, 3);
	pb_buf__varint(b, 2, 0x1000);
	pb_buf__varint(b, 3, 0x2000);
	pb_buf__varint(b, 4, 0x1000);
	pb_buf__varint(b, 5, 8);
	pb_buf__varint(b, 6, 9);
	for (i = 7; i <= 10; i++)
		pb_buf__varint(b, (uint32_t)i, 1);
	pb_buf__end(b, m);
	for (i = 7; i <= 8; i++) { /* locations 7 and 8 */
		pb_buf__begin(b, 4, &m);
		pb_buf__varint(b, 1, i);
		pb_buf__varint(b, 2, 3);
		pb_buf__varint(b, 3, 0x1000 + i);
		pb_buf__begin(b, 4, &m2);
		pb_buf__varint(b, 1, 11);
		pb_buf__varint(b, 2, 17);
		pb_buf__varint(b, 3, 4); /* column */
		pb_buf__end(b, m2);
		pb_buf__begin(b, 4, &m2); /* a line without function */
		pb_buf__varint(b, 2, 18);
		pb_buf__end(b, m2);
		pb_buf__varint(b, 5, i == 8); /* is_folded */
		pb_buf__string(b, 77, "unknown string field");
		pb_buf__end(b, m);
	}
	pb_buf__begin(b, 5, &m); /* function */
	pb_buf__varint(b, 1, 11);
	pb_buf__varint(b, 2, 10);
	pb_buf__varint(b, 3, 11);
	pb_buf__varint(b, 4, 12);
	pb_buf__varint(b, 5, 15);
	pb_buf__end(b, m);
	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		pb_buf__string(b, 6, strs[i]);
	pb_buf__bytes(b, 6, "nul\0inside", 10); /* index 17 */
	pb_buf__varint(b, 7, 13);
	pb_buf__varint(b, 8, 14);
	pb_buf__varint(b, 9, 123456789);
	pb_buf__varint(b, 10, 987654321);
	pb_buf__begin(b, 11, &m);
	pb_buf__varint(b, 1, 3);
	pb_buf__varint(b, 2, 4);
	pb_buf__end(b, m);
	pb_buf__varint(b, 12, 10000000);
	if (unpacked) {
		pb_buf__varint(b, 13, 15);
		pb_buf__varint(b, 13, 17);
	} else {
		uint64_t c[] = { 15, 17 };

		pb_buf__packed_varints(b, 13, c, 2);
	}
	pb_buf__varint(b, 14, 3);
	pb_buf__varint(b, 15, 16);
	pb_buf__fixed64(b, 16, 1);  /* unknown I64 (an old tick_unit variant) */
	pb_buf__varint(b, 1000, 5); /* unknown varint */
	REQUIRE(pb_buf__err(b) == 0);
}

static void check_full(const struct pprof_profile *d)
{
	const struct pprof_sample *s;
	const struct pprof_mapping *m;
	const struct pprof_location *loc;
	const struct pprof_function *fn;

	REQUIRE(d->sample_cnt == 1 && d->sample_type_cnt == 2);
	s = &d->samples[0];
	REQUIRE(s->location_cnt == 2 && s->value_cnt == 2 && s->label_cnt == 1);
	CHECK_EQ_U64(s->location_ids[0], 7);
	CHECK_EQ_U64(s->location_ids[1], 8);
	CHECK_EQ_INT(s->values[0], 5);
	CHECK_EQ_INT(s->values[1], -3);
	CHECK_STR(str_of(d, s->labels[0].key), "key");
	CHECK_STR(str_of(d, s->labels[0].str), "val");
	CHECK_EQ_INT(s->labels[0].num, 42);
	CHECK_STR(str_of(d, s->labels[0].num_unit), "bytes");
	m = pprof_profile__mapping(d, 3);
	REQUIRE(m && d->mapping_cnt == 1);
	CHECK(!pprof_profile__mapping(d, 1) && !pprof_profile__mapping(d, 0));
	CHECK_EQ_U64(m->memory_start, 0x1000);
	CHECK_EQ_U64(m->memory_limit, 0x2000);
	CHECK_EQ_U64(m->file_offset, 0x1000);
	CHECK_STR(str_of(d, m->filename), "/bin/x");
	CHECK_STR(str_of(d, m->build_id), "bid");
	CHECK(m->has_functions && m->has_filenames && m->has_line_numbers && m->has_inline_frames);
	loc = pprof_profile__location(d, 8);
	REQUIRE(loc && d->location_cnt == 2);
	CHECK_EQ_U64(loc->mapping_id, 3);
	CHECK_EQ_U64(loc->address, 0x1008);
	CHECK(loc->is_folded);
	CHECK(!pprof_profile__location(d, 7)->is_folded);
	REQUIRE(loc->line_cnt == 2);
	CHECK_EQ_U64(loc->lines[0].function_id, 11);
	CHECK_EQ_INT(loc->lines[0].line, 17);
	CHECK_EQ_INT(loc->lines[0].column, 4);
	CHECK_EQ_U64(loc->lines[1].function_id, 0);
	CHECK_EQ_INT(loc->lines[1].line, 18);
	fn = pprof_profile__function(d, 11);
	REQUIRE(fn);
	CHECK_STR(str_of(d, fn->name), "fn");
	CHECK_STR(str_of(d, fn->system_name), "sys");
	CHECK_STR(str_of(d, fn->filename), "x.c");
	CHECK_EQ_INT(fn->start_line, 15);
	REQUIRE(d->string_cnt >= 18);
	CHECK_EQ_INT(d->strings[17].len, 10);
	CHECK(!memcmp(d->strings[17].s, "nul\0inside", 10));
	CHECK_STR(str_of(d, d->drop_frames), "drop.*");
	CHECK_STR(str_of(d, d->keep_frames), "keep.*");
	CHECK_EQ_INT(d->time_nanos, 123456789);
	CHECK_EQ_INT(d->duration_nanos, 987654321);
	CHECK_STR(str_of(d, d->period_type.type), "cpu");
	CHECK_STR(str_of(d, d->period_type.unit), "nanoseconds");
	CHECK_EQ_INT(d->period, 10000000);
	REQUIRE(d->comment_cnt == 2);
	CHECK_STR(str_of(d, d->comments[0]), "a comment");
	CHECK_EQ_INT(d->strings[d->comments[1]].len, 10);
	CHECK_STR(str_of(d, d->default_sample_type), "cpu");
	CHECK_STR(str_of(d, d->doc_url), "https://doc");
}

TEST(every_field_packed_and_unpacked)
{
	struct pprof_profile *d = NULL;
	struct pb_buf b;
	int unpacked;

	for (unpacked = 0; unpacked <= 1; unpacked++) {
		encode_full(&b, unpacked);
		CHECK_EQ_INT(pprof_profile__decode(b.data, b.len, 0, &d), 0);
		pb_buf__free(&b);
		REQUIRE(d);
		check_full(d);
		CHECK_EQ_INT(d->function_cnt, 1);
		CHECK_EQ_INT(d->string_cnt, 18);
		check_reencode(d);
		pprof_profile__free(d);
		d = NULL;
	}
}

TEST(changes_are_written_back)
{
	struct pprof_profile *d = NULL, *e = NULL;
	struct pprof_location *loc;
	struct pprof_line lines[2];
	struct pb_buf b;
	size_t strs, fns, i;
	int64_t name, file, again;
	uint64_t fid, fid2;

	encode_full(&b, false);
	REQUIRE(pprof_profile__decode(b.data, b.len, 0, &d) == 0);
	pb_buf__free(&b);
	strs = d->string_cnt;
	fns = d->function_cnt;
	/* existing strings are found, new ones appended once */
	CHECK_EQ_INT(pprof_profile__intern(d, ""), 0);
	CHECK_EQ_INT(pprof_profile__intern(d, "x.c"), 12);
	name = pprof_profile__intern(d, "new_function");
	file = pprof_profile__intern(d, "new.c");
	CHECK_EQ_INT(name, (int64_t)strs);
	CHECK_EQ_INT(file, (int64_t)strs + 1);
	again = pprof_profile__intern(d, "new_function");
	CHECK_EQ_INT(again, name);
	/* many strings: the table and its hash grow */
	for (i = 0; i < 500; i++) {
		char s[32];

		snprintf(s, sizeof(s), "s%zu", i);
		CHECK_EQ_INT(pprof_profile__intern(d, s), (int64_t)(strs + 2 + i));
	}
	CHECK_EQ_INT(pprof_profile__intern(d, "s77"), (int64_t)(strs + 2 + 77));
	/* functions: the existing one is found, a new one gets the next id */
	CHECK_EQ_U64(pprof_profile__add_function(d, 10, 11, 12, 15), 11);
	fid = pprof_profile__add_function(d, name, name, file, 0);
	CHECK_EQ_U64(fid, 12);
	fid2 = pprof_profile__add_function(d, name, name, 0, 0);
	CHECK_EQ_U64(fid2, 13);
	CHECK_EQ_U64(pprof_profile__add_function(d, name, name, file, 0), fid);
	errno = 0;
	CHECK_EQ_U64(pprof_profile__add_function(d, 100000, 0, 0, 0), 0);
	CHECK_EQ_INT(errno, EINVAL);
	CHECK_EQ_INT(d->function_cnt, fns + 2);
	CHECK(pprof_profile__function(d, fid) && pprof_profile__function(d, fid2));
	/* lines replaced (twice: the first owned copy is freed) */
	loc = pprof_profile__location(d, 7);
	REQUIRE(loc);
	lines[0] = (struct pprof_line){ .function_id = fid, .line = 5 };
	lines[1] = (struct pprof_line){ .function_id = fid2, .line = 9, .column = 2 };
	CHECK_EQ_INT(pprof_profile__set_lines(d, loc, lines, 1), 0);
	CHECK_EQ_INT(pprof_profile__set_lines(d, loc, lines, 2), 0);
	lines[0].function_id = 999;
	CHECK_EQ_INT(pprof_profile__set_lines(d, loc, lines, 1), -EINVAL);
	CHECK_EQ_INT(loc->line_cnt, 2);
	/* what comes back */
	pb_buf__init(&b, 1 << 20);
	REQUIRE(pprof_profile__encode(d, &b) == 0);
	REQUIRE(pprof_profile__decode(b.data, b.len, 0, &e) == 0);
	pb_buf__free(&b);
	check_same(d, e);
	loc = pprof_profile__location(e, 7);
	REQUIRE(loc && loc->line_cnt == 2);
	CHECK_STR(fn_name(e, loc->lines[0].function_id), "new_function");
	CHECK_STR(fn_file(e, loc->lines[0].function_id), "new.c");
	CHECK_EQ_INT(loc->lines[0].line, 5);
	CHECK_STR(fn_file(e, loc->lines[1].function_id), "");
	CHECK_EQ_INT(loc->lines[1].column, 2);
	/* the rest is as it was */
	check_full(e);
	pprof_profile__free(d);
	pprof_profile__free(e);
}

/* Every prefix and every single-byte change of a valid message: 0 or -EBADMSG, no crash. */
TEST(truncated_and_flipped_bytes)
{
	struct pprof_profile *d;
	struct profile_fixture fx;
	struct pb_buf b;
	uint8_t *copy, *gz;
	size_t len, gz_len = 0, fails = 0, i;
	int err, bad = 0;

	profile_fixture__build(&fx);
	encode_profile(fx.p, &b);
	len = b.len;
	copy = malloc(len);
	REQUIRE(copy);
	for (i = 0; i < len; i++) {
		d = NULL;
		err = pprof_profile__decode(b.data, i, 0, &d);
		if (err != 0 && err != -EBADMSG)
			bad++;
		fails += err != 0;
		pprof_profile__free(d);
	}
	CHECK_EQ_INT(bad, 0);
	/* the strings come last: nearly every cut leaves an index without its string */
	CHECK(fails >= len - 2);
	for (i = 0; i < len; i++) {
		static const uint8_t flips[] = { 0xff, 0x80, 0x01, 0x7f };
		size_t k;

		for (k = 0; k < sizeof(flips); k++) {
			memcpy(copy, b.data, len);
			copy[i] ^= flips[k];
			d = NULL;
			err = pprof_profile__decode(copy, len, 0, &d);
			if (err != 0 && err != -EBADMSG)
				bad++;
			if (!err)
				check_reencode(d);
			pprof_profile__free(d);
		}
	}
	CHECK_EQ_INT(bad, 0);
	/* gzip cut short, or with garbage after it */
	gz = gzip_bytes(b.data, len, &gz_len);
	REQUIRE(gz);
	for (i = 0; i < gz_len; i += 7) {
		d = NULL;
		CHECK_EQ_INT(pprof_profile__decode(gz, i, 0, &d), -EBADMSG);
		CHECK(!d);
	}
	gz = realloc(gz, gz_len + 4);
	REQUIRE(gz);
	memcpy(gz + gz_len, "junk", 4);
	d = NULL;
	CHECK_EQ_INT(pprof_profile__decode(gz, gz_len + 4, 0, &d), -EBADMSG);
	free(gz);
	free(copy);
	pb_buf__free(&b);
	profile__free(fx.p);
}

TEST(two_gzip_members)
{
	struct pprof_profile *d = NULL;
	struct profile_fixture fx;
	struct pb_buf b;
	uint8_t *g1, *g2, *both;
	size_t l1 = 0, l2 = 0, half;

	profile_fixture__build(&fx);
	encode_profile(fx.p, &b);
	half = b.len / 2;
	g1 = gzip_bytes(b.data, half, &l1);
	g2 = gzip_bytes(b.data + half, b.len - half, &l2);
	both = malloc(l1 + l2);
	REQUIRE(g1 && g2 && both);
	memcpy(both, g1, l1);
	memcpy(both + l1, g2, l2);
	CHECK_EQ_INT(pprof_profile__decode(both, l1 + l2, 0, &d), 0);
	if (d)
		check_against_profile(d, &fx);
	pprof_profile__free(d);
	free(g1);
	free(g2);
	free(both);
	pb_buf__free(&b);
	profile__free(fx.p);
}

/* Hand-made bad messages: each one -EBADMSG. */
TEST(invalid_messages)
{
	static const struct {
		const char *what;
		size_t len;
		const uint8_t bytes[40];
	} cases[] = {
		{ "empty message (no string table)", 0, { 0 } },
		{ "string_table[0] not empty", 3, { 0x32, 0x01, 'x' } },
		{ "varint of 11 bytes",
		  13,
		  { 0x48, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
		    0x32 } },
		{ "varint past 64 bits",
		  13,
		  { 0x32, 0x00, 0x48, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		    0x02 } },
		{ "varint cut", 3, { 0x32, 0x00, 0x48 } },
		{ "length past the end", 4, { 0x32, 0x00, 0x12, 0x05 } },
		{ "huge length",
		  12,
		  { 0x32, 0x00, 0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f } },
		{ "field number 0", 4, { 0x32, 0x00, 0x00, 0x01 } },
		{ "group wire type", 3, { 0x32, 0x00, 0x0b } },
		{ "wire type 7", 3, { 0x32, 0x00, 0x0f } },
		{ "fixed64 cut", 5, { 0x32, 0x00, 0x09, 0x01, 0x02 } },
		{ "string index out of range", 4, { 0x32, 0x00, 0x38, 0x01 } },
		{ "negative string index",
		  13,
		  { 0x32, 0x00, 0x38, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		    0x01 } },
		{ "location id 0", 6, { 0x32, 0x00, 0x22, 0x02, 0x18, 0x05 } },
		{ "duplicate location id",
		  10,
		  { 0x32, 0x00, 0x22, 0x02, 0x08, 0x01, 0x22, 0x02, 0x08, 0x01 } },
		{ "missing mapping", 8, { 0x32, 0x00, 0x22, 0x04, 0x08, 0x01, 0x10, 0x02 } },
		{ "missing function",
		  10,
		  { 0x32, 0x00, 0x22, 0x06, 0x08, 0x01, 0x22, 0x02, 0x08, 0x03 } },
		{ "sample with a missing location", 6, { 0x32, 0x00, 0x12, 0x02, 0x08, 0x01 } },
		{ "sample with too few values", 6, { 0x32, 0x00, 0x0a, 0x00, 0x12, 0x00 } },
		{ "sample with a value too many",
		  8,
		  { 0x32, 0x00, 0x12, 0x04, 0x10, 0x01, 0x10, 0x02 } },
		{ "label key out of range", 8, { 0x32, 0x00, 0x12, 0x04, 0x1a, 0x02, 0x08, 0x04 } },
		{ "mapping id 0", 6, { 0x32, 0x00, 0x1a, 0x02, 0x10, 0x01 } },
		{ "function name out of range",
		  8,
		  { 0x32, 0x00, 0x2a, 0x04, 0x08, 0x01, 0x10, 0x09 } },
		{ "packed varint cut", 6, { 0x32, 0x00, 0x6a, 0x02, 0x00, 0x80 } },
		{ "comment out of range", 4, { 0x32, 0x00, 0x68, 0x02 } },
		{ "gzip magic then garbage", 6, { 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00 } },
		{ "gzip with a bad header", 12, { 0x1f, 0x8b, 0x07, 0x00, 0, 0, 0, 0, 0, 0, 0, 0 } },
	};
	static const uint8_t ok[] = { 0x32, 0x00, 0x12, 0x00, 0x22, 0x02, 0x08, 0x01 };
	struct pprof_profile *d;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		d = NULL;
		if (pprof_profile__decode(cases[i].bytes, cases[i].len, 0, &d) != -EBADMSG)
			test__fail("%s: not -EBADMSG", cases[i].what);
		if (d)
			test__fail("%s: a profile came out", cases[i].what);
		pprof_profile__free(d);
	}
	/* the smallest valid ones: "" only; and a sample without values nor sample types, and
	 * a location without mapping
	 */
	d = NULL;
	CHECK_EQ_INT(pprof_profile__decode(ok, 2, 0, &d), 0);
	CHECK(d && d->string_cnt == 1);
	pprof_profile__free(d);
	d = NULL;
	CHECK_EQ_INT(pprof_profile__decode(ok, sizeof(ok), 0, &d), 0);
	CHECK(d && d->sample_cnt == 1 && d->location_cnt == 1);
	pprof_profile__free(d);
}

static void run_tests(void)
{
	RUN(decode_our_writer_raw_and_gzip);
	RUN(read_file_written_by_pprof_write);
	RUN(columns_round_trip);
	RUN(every_field_packed_and_unpacked);
	RUN(changes_are_written_back);
	RUN(truncated_and_flipped_bytes);
	RUN(two_gzip_members);
	RUN(invalid_messages);
}

int main(void)
{
	return test_scratch_main(tmp_dir, sizeof(tmp_dir), "pprof-read", run_tests);
}
