/* pprof export (see pprof.h for what the Profile contains and why).
 *
 * One pass over the profile writes samples, mappings and locations; functions and the string
 * table are collected on the way (deduplicated in two small hash tables) and written last:
 * protobuf fields may come in any order and pprof resolves string indices after decoding.
 *
 * Invariants: string index 0 is ""; function ids are dense from 1 and unique per
 * (name, filename); every location's mapping_id and function_ids refer to written entries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/array.h"
#include "base/id_index.h"
#include "base/output_file.h"
#include "export/pprof.h"
#include "export/pprof_fields.h"

#define KERNEL_MAPPING_NAME "[kernel.kallsyms]"

/* Open-addressing index from a 64-bit key to a dense id (>= 1). Keys are either string
 * contents (strtab) or (name, filename) index pairs (functions).
 */
struct pprof_enc {
	const struct profile *p;
	struct pb_buf *out;
	struct id_index str_idx; /* key: content hash; collisions resolved by strcmp */
	const char **strs;       /* borrowed: profile strings or literals */
	size_t str_cnt, str_cap;
	struct id_index fn_idx; /* key: name << 32 | filename */
	uint64_t *fns;          /* [id - 1] = key */
	size_t fn_cnt, fn_cap;
	uint32_t kernel_mapping; /* 0 = not needed */
};

struct mapping_flags {
	bool all_functions;
	bool all_filenames;
	bool all_line_numbers;
	bool any_inline;
	bool used;
};

/* Index of s in the string table (added if new); s must outlive the encoder.
 * Returns the index (>= 0) or -ENOMEM.
 */
static int64_t pprof_enc__str(struct pprof_enc *e, const char *s)
{
	struct id_index *t = &e->str_idx;
	uint64_t key;
	size_t i;

	if (!s || !*s)
		return 0;
	if (id_index__reserve(t))
		return -ENOMEM;
	key = fnv64(s, strlen(s), FNV64_INIT);
	for (i = id_index__first(t, key); t->ids[i]; i = id_index__next(t, i)) {
		if (t->hashes[i] == key && !strcmp(e->strs[t->ids[i]], s))
			return t->ids[i];
	}
	if (e->str_cnt >= UINT32_MAX ||
	    array__reserve((void **)&e->strs, &e->str_cap, e->str_cnt + 1, sizeof(*e->strs)))
		return -ENOMEM;
	e->strs[e->str_cnt] = s;
	id_index__set(t, i, key, (uint32_t)e->str_cnt);
	return (int64_t)e->str_cnt++;
}

/* Function id for (name, filename) string indices, added if new; >= 1 or -ENOMEM. */
static int64_t pprof_enc__function(struct pprof_enc *e, int64_t name, int64_t file)
{
	struct id_index *t = &e->fn_idx;
	uint64_t key = ((uint64_t)name << 32) | (uint64_t)file;
	size_t i;

	if (id_index__reserve(t))
		return -ENOMEM;
	for (i = id_index__first(t, key); t->ids[i]; i = id_index__next(t, i)) {
		if (t->hashes[i] == key)
			return t->ids[i];
	}
	if (e->fn_cnt >= UINT32_MAX - 1 ||
	    array__reserve((void **)&e->fns, &e->fn_cap, e->fn_cnt + 1, sizeof(*e->fns)))
		return -ENOMEM;
	e->fns[e->fn_cnt++] = key;
	id_index__set(t, i, key, (uint32_t)e->fn_cnt);
	return (int64_t)e->fn_cnt;
}

static int pprof_enc__value_type(struct pprof_enc *e, uint32_t field, const char *type,
				 const char *unit)
{
	int64_t t = pprof_enc__str(e, type), u = pprof_enc__str(e, unit);
	size_t mark;

	if (t < 0 || u < 0)
		return -ENOMEM;
	pb_buf__begin(e->out, field, &mark);
	pb_buf__varint(e->out, VALUE_TYPE_TYPE, (uint64_t)t);
	pb_buf__varint(e->out, VALUE_TYPE_UNIT, (uint64_t)u);
	return pb_buf__end(e->out, mark);
}

static int pprof_enc__label(struct pprof_enc *e, const char *key, const char *str, uint64_t num)
{
	int64_t k = pprof_enc__str(e, key), s = str ? pprof_enc__str(e, str) : 0;
	size_t mark;

	if (k < 0 || s < 0)
		return -ENOMEM;
	pb_buf__begin(e->out, SAMPLE_LABEL, &mark);
	pb_buf__varint(e->out, LABEL_KEY, (uint64_t)k);
	if (str)
		pb_buf__varint(e->out, LABEL_STR, (uint64_t)s);
	else
		pb_buf__varint(e->out, LABEL_NUM, num);
	return pb_buf__end(e->out, mark);
}

/* pprof values are int64: larger (saturated) counts are written as INT64_MAX, not as
 * negative numbers.
 */
static uint64_t pprof_value(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : v;
}

static int pprof_enc__samples(struct pprof_enc *e)
{
	uint64_t period = profile__period_ns(e->p);
	struct profile_label label;
	size_t i, mark, packed;
	uint32_t j, cnt;
	int err;

	for (i = 0; i < profile__sample_cnt(e->p); i++) {
		const struct profile_agg_sample *s = profile__sample(e->p, i);
		const uint32_t *frames = profile__stack(e->p, s->stack, &cnt);

		pb_buf__begin(e->out, PROFILE_SAMPLE, &mark);
		if (cnt) {
			pb_buf__begin(e->out, SAMPLE_LOCATION_ID, &packed);
			for (j = 0; j < cnt; j++)
				pb_buf__raw_varint(e->out, frames[j]);
			pb_buf__end(e->out, packed);
		}
		pb_buf__begin(e->out, SAMPLE_VALUE, &packed);
		pb_buf__raw_varint(e->out, pprof_value(s->count));
		if (profile__has_cpu(e->p)) /* an off-CPU sample has no CPU time */
			pb_buf__raw_varint(e->out, s->off_cpu_ns || s->mem_kind
							   ? 0
							   : pprof_value(profile__count_mul(
								     s->count, period)));
		if (profile__has_off_cpu(e->p))
			pb_buf__raw_varint(e->out, pprof_value(s->off_cpu_ns));
		if (profile__has_mem_growth(e->p)) {
			pb_buf__raw_varint(e->out, pprof_value(profile__sample_faults(s)));
			pb_buf__raw_varint(e->out, pprof_value(profile__sample_fault_bytes(s)));
			pb_buf__raw_varint(e->out, pprof_value(profile__sample_mapped_bytes(s)));
		}
		if (profile__has_mem_alloc(e->p)) {
			uint64_t v[4];

			profile__sample_alloc(s, v);
			for (j = 0; j < 4; j++)
				pb_buf__raw_varint(e->out, pprof_value(v[j]));
		}
		pb_buf__end(e->out, packed);
		err = pprof_enc__label(e, "pid", NULL, s->pid);
		err = err ?: pprof_enc__label(e, "tid", NULL, s->tid);
		err = err ?: pprof_enc__label(e, "comm", s->comm, 0);
		err = err ?: pprof_enc__label(e, "thread_comm", s->thread_comm, 0);
		for (j = 0; !err && profile__label(e->p, s->labels, j, &label); j++)
			err = pprof_enc__label(e, label.key, label.value, 0);
		if (err)
			return err;
		pb_buf__end(e->out, mark);
	}
	return pb_buf__err(e->out);
}

/* Mapping id a frame's Location points to (0 = none). */
static uint32_t pprof_enc__frame_mapping(const struct pprof_enc *e, const struct profile_frame *f)
{
	if (f->kind == FRAME_ERROR)
		return 0;
	if (f->kind == FRAME_KERNEL && !f->mapping)
		return e->kernel_mapping;
	return f->mapping;
}

static void mapping_flags__add(struct mapping_flags *m, const struct profile_frame *f)
{
	uint32_t i;

	if (!m->used) {
		m->used = true;
		m->all_functions = m->all_filenames = m->all_line_numbers = true;
	}
	if (!f->line_cnt) {
		m->all_functions = m->all_filenames = m->all_line_numbers = false;
		return;
	}
	if (f->line_cnt > 1)
		m->any_inline = true;
	for (i = 0; i < f->line_cnt; i++) {
		if (!f->lines[i].file)
			m->all_filenames = false;
		if (!f->lines[i].line)
			m->all_line_numbers = false;
	}
}

static int pprof_enc__mapping(struct pprof_enc *e, uint32_t id, const struct profile_mapping *m,
			      const struct mapping_flags *fl)
{
	int64_t file = pprof_enc__str(e, m->path), build_id = pprof_enc__str(e, m->build_id);
	bool fn = fl->used && fl->all_functions;
	size_t mark;

	if (file < 0 || build_id < 0)
		return -ENOMEM;
	pb_buf__begin(e->out, PROFILE_MAPPING, &mark);
	pb_buf__varint(e->out, MAPPING_ID, id);
	pb_buf__varint(e->out, MAPPING_MEMORY_START, m->start);
	pb_buf__varint(e->out, MAPPING_MEMORY_LIMIT, m->limit);
	pb_buf__varint(e->out, MAPPING_FILE_OFFSET, m->file_offset);
	pb_buf__varint(e->out, MAPPING_FILENAME, (uint64_t)file);
	pb_buf__varint(e->out, MAPPING_BUILD_ID, (uint64_t)build_id);
	pb_buf__varint(e->out, MAPPING_HAS_FUNCTIONS, fn);
	pb_buf__varint(e->out, MAPPING_HAS_FILENAMES, fn && fl->all_filenames);
	pb_buf__varint(e->out, MAPPING_HAS_LINE_NUMBERS, fn && fl->all_line_numbers);
	pb_buf__varint(e->out, MAPPING_HAS_INLINE_FRAMES, fn && fl->any_inline);
	return pb_buf__end(e->out, mark);
}

static int pprof_enc__mappings(struct pprof_enc *e)
{
	size_t mapping_cnt = profile__mapping_cnt(e->p), frame_cnt = profile__frame_cnt(e->p);
	struct profile_mapping kernel = { .path = KERNEL_MAPPING_NAME, .start = UINT64_MAX };
	struct mapping_flags *flags;
	uint32_t id;
	int err = 0;

	flags = calloc(mapping_cnt + 2, sizeof(*flags));
	if (!flags)
		return -ENOMEM;
	for (id = 1; id <= frame_cnt; id++) {
		const struct profile_frame *f = profile__frame(e->p, id);

		if (f->kind == FRAME_KERNEL && !f->mapping) {
			mapping_flags__add(&flags[mapping_cnt + 1], f);
			if (f->address < kernel.start)
				kernel.start = f->address;
			if (f->address >= kernel.limit)
				kernel.limit = f->address + 1;
		} else if (f->kind != FRAME_ERROR && f->mapping) {
			mapping_flags__add(&flags[f->mapping], f);
		}
	}
	for (id = 1; id <= mapping_cnt && !err; id++)
		err = pprof_enc__mapping(e, id, profile__mapping(e->p, id), &flags[id]);
	if (!err && flags[mapping_cnt + 1].used) {
		e->kernel_mapping = (uint32_t)mapping_cnt + 1;
		err = pprof_enc__mapping(e, e->kernel_mapping, &kernel, &flags[mapping_cnt + 1]);
	}
	free(flags);
	return err;
}

static int pprof_enc__line(struct pprof_enc *e, const char *function, const char *file,
			   uint32_t line, uint32_t column)
{
	int64_t name = pprof_enc__str(e, function), filename = pprof_enc__str(e, file), fn;
	size_t mark;

	if (name < 0 || filename < 0)
		return -ENOMEM;
	fn = pprof_enc__function(e, name, filename);
	if (fn < 0)
		return -ENOMEM;
	pb_buf__begin(e->out, LOCATION_LINE, &mark);
	pb_buf__varint(e->out, LINE_FUNCTION_ID, (uint64_t)fn);
	if (line)
		pb_buf__varint(e->out, LINE_LINE, line);
	if (column)
		pb_buf__varint(e->out, LINE_COLUMN, column);
	return pb_buf__end(e->out, mark);
}

static int pprof_enc__locations(struct pprof_enc *e)
{
	uint32_t id, i, mapping;
	size_t mark;
	int err = 0;

	for (id = 1; id <= profile__frame_cnt(e->p) && !err; id++) {
		const struct profile_frame *f = profile__frame(e->p, id);

		mapping = pprof_enc__frame_mapping(e, f);
		pb_buf__begin(e->out, PROFILE_LOCATION, &mark);
		pb_buf__varint(e->out, LOCATION_ID, id);
		if (mapping)
			pb_buf__varint(e->out, LOCATION_MAPPING_ID, mapping);
		pb_buf__varint(e->out, LOCATION_ADDRESS, f->address);
		if (!f->line_cnt)
			err = pprof_enc__line(e, profile__frame_name(e->p, id, 0), NULL, 0, 0);
		for (i = 0; i < f->line_cnt && !err; i++)
			err = pprof_enc__line(e, f->lines[i].function, f->lines[i].file,
					      f->lines[i].line, f->lines[i].column);
		err = err ?: pb_buf__end(e->out, mark);
	}
	return err;
}

static int pprof_enc__functions(struct pprof_enc *e)
{
	size_t i, mark;

	for (i = 0; i < e->fn_cnt; i++) {
		uint64_t name = e->fns[i] >> 32, file = e->fns[i] & UINT32_MAX;

		pb_buf__begin(e->out, PROFILE_FUNCTION, &mark);
		pb_buf__varint(e->out, FUNCTION_ID, i + 1);
		pb_buf__varint(e->out, FUNCTION_NAME, name);
		pb_buf__varint(e->out, FUNCTION_SYSTEM_NAME, name);
		if (file)
			pb_buf__varint(e->out, FUNCTION_FILENAME, file);
		pb_buf__end(e->out, mark);
	}
	for (i = 0; i < e->str_cnt; i++)
		pb_buf__string(e->out, PROFILE_STRING_TABLE, e->strs[i]);
	return pb_buf__err(e->out);
}

int pprof__encode(const struct profile *p, struct pb_buf *out)
{
	struct pprof_enc e = { .p = p, .out = out };
	uint64_t start = profile__start_time_ns(p), end = profile__end_time_ns(p);
	int err;

	if (pb_buf__err(out))
		return pb_buf__err(out);
	/* string index 0 is "": pprof_enc__str() maps "" there without indexing it */
	err = array__reserve((void **)&e.strs, &e.str_cap, 1, sizeof(*e.strs));
	if (err)
		goto cleanup;
	e.strs[e.str_cnt++] = "";
	/* samples/count counts CPU samples and stays off CPU alike */
	err = pprof_enc__value_type(&e, PROFILE_SAMPLE_TYPE, "samples", "count");
	if (profile__has_cpu(p))
		err = err ?: pprof_enc__value_type(&e, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
	if (profile__has_off_cpu(p))
		err = err
			      ?: pprof_enc__value_type(&e, PROFILE_SAMPLE_TYPE, "off_cpu",
						       "nanoseconds");
	if (profile__has_mem_growth(p))
		err = err ?: pprof_enc__value_type(&e, PROFILE_SAMPLE_TYPE, "faults", "count")
			  ?: pprof_enc__value_type(&e, PROFILE_SAMPLE_TYPE, "fault_bytes", "bytes")
			  ?: pprof_enc__value_type(&e, PROFILE_SAMPLE_TYPE, "mapped_bytes", "bytes");
	if (profile__has_mem_alloc(p))
		err = err ?: pprof_enc__value_type(&e, PROFILE_SAMPLE_TYPE, "alloc_objects", "count")
			  ?: pprof_enc__value_type(&e, PROFILE_SAMPLE_TYPE, "alloc_space", "bytes")
			  ?: pprof_enc__value_type(&e, PROFILE_SAMPLE_TYPE, "inuse_objects", "count")
			  ?: pprof_enc__value_type(&e, PROFILE_SAMPLE_TYPE, "inuse_space", "bytes");
	if (profile__has_cpu(p))
		err = err ?: pprof_enc__value_type(&e, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds");
	if (err)
		goto cleanup;
	if (profile__has_cpu(p))
		pb_buf__varint(out, PROFILE_PERIOD, profile__period_ns(p));
	if (!profile__has_cpu(p)) { /* off-CPU (or memory growth) only: what viewers show first */
		int64_t off = pprof_enc__str(&e, profile__has_off_cpu(p)     ? "off_cpu"
						 : profile__has_mem_alloc(p) ? "inuse_space"
									     : "fault_bytes");

		if (off < 0) {
			err = -ENOMEM;
			goto cleanup;
		}
		pb_buf__varint(out, PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)off);
	}
	if (start)
		pb_buf__varint(out, PROFILE_TIME_NANOS, start);
	if (start && end > start)
		pb_buf__varint(out, PROFILE_DURATION_NANOS, end - start);
	err = pprof_enc__samples(&e);
	err = err ?: pprof_enc__mappings(&e);
	err = err ?: pprof_enc__locations(&e);
	err = err ?: pprof_enc__functions(&e);
	err = err ?: pb_buf__err(out);
cleanup:
	id_index__free(&e.str_idx);
	id_index__free(&e.fn_idx);
	free(e.strs);
	free(e.fns);
	return err;
}

/* Gzips buf into out; nothing committed. 0 or -errno (-EIO when zlib fails without errno). */
static int pprof__gzip_to(const struct pb_buf *buf, struct output_file *out)
{
	gzFile gz;
	size_t off = 0;
	int fd, err = 0;

	fd = dup(output_file__fd(out)); /* gzclose() closes it; out keeps its own */
	if (fd < 0)
		return -errno;
	errno = 0;
	gz = gzdopen(fd, "wb");
	if (!gz) {
		err = errno ? -errno : -ENOMEM;
		close(fd);
		return err;
	}
	while (off < buf->len && !err) {
		unsigned chunk = buf->len - off > (1u << 30) ? 1u << 30
							     : (unsigned)(buf->len - off);

		errno = 0;
		if (gzwrite(gz, buf->data + off, chunk) != (int)chunk)
			err = errno ? -errno : -EIO;
		off += chunk;
	}
	errno = 0;
	if (gzclose(gz) != Z_OK && !err)
		err = errno ? -errno : -EIO;
	return err;
}

int pprof__write_gzip(const struct pb_buf *buf, const char *path)
{
	struct output_file *out;
	int err = output_file__open(path, &out);

	return err ?: output_file__finish(out, pprof__gzip_to(buf, out));
}

int pprof__write_to(const struct profile *p, struct output_file *out)
{
	struct pb_buf buf;
	int err;

	pb_buf__init(&buf, PPROF_MAX_SZ);
	err = pprof__encode(p, &buf);
	err = err ?: pprof__gzip_to(&buf, out);
	pb_buf__free(&buf);
	return err;
}

int pprof__write(const struct profile *p, const char *path)
{
	struct output_file *out;
	int err = output_file__open(path, &out);

	return err ?: output_file__finish(out, pprof__write_to(p, out));
}
