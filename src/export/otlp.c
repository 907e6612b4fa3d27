/* OTLP profiles encoder, pinned to opentelemetry-proto v1.11.0 (see otlp.h for what a
 * request contains and why).
 *
 * One pass over the samples, grouped by pid, writes the resource_profiles straight into the
 * output buffer; every dictionary entry the samples reference is created on first use
 * (strings, attributes, functions, mappings, locations, stacks, each deduplicated) and the
 * dictionary is written last, as field 2 after the resources: protobuf fields may come in
 * any order. Building tables on first use is what keeps orphans out of the dictionary.
 *
 * Invariants: table index 0 is the zero value in every table and is never handed out for a
 * real entry; a location's mapping and functions, and a stack's locations, exist before the
 * location or stack that references them, so every index written is in range.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/array.h"
#include "base/cmp.h"
#include "base/id_index.h"
#include "base/safe_open.h"
#include "base/u64_map.h"
#include "base/utf8.h"
#include "export/otlp.h"
#include "export/otlp_fields.h"
#include "export/otlp_link.h"
#include "profile/mem_types.h"

#define OTLP_SCOPE_NAME "stackscope"
#define OTLP_KERNEL_MAPPING_NAME "vmlinux"

struct otlp_encoder {
	char *scope_name;
	char *scope_version;
};

/* ---- per-request dictionary ---- */

/* Open-addressing set of table indices (>= 1) keyed by a 64-bit hash; equality is checked
 * by the caller against the table entry.
 */
struct dict_attr {
	uint32_t key; /* strindex */
	bool is_int;
	int64_t int_val;
	const char *str_val; /* clean (valid UTF-8), stable until the request is written */
};

struct dict_function {
	uint32_t name, file; /* strindex */
};

struct dict_mapping {
	uint64_t start, limit, offset;
	uint32_t filename;
	uint32_t attrs[3];
	uint32_t attr_cnt;
	uint32_t pmap; /* profile mapping id, 0 for the kernel mapping */
};

struct dict_location {
	uint32_t frame;   /* profile frame id */
	uint32_t mapping; /* dict index */
	uint32_t type_attr;
	size_t fn_off; /* first of the frame's line_cnt function indices in line_fns */
};

struct otlp_enc {
	struct otlp_encoder *e;
	const struct profile *p;
	const struct otlp_host *host;
	struct pb_buf *out;

	const char **strs;
	size_t str_cnt, str_cap;
	struct id_index str_idx;

	struct dict_attr *attrs;
	size_t attr_cnt, attr_cap;
	struct id_index attr_idx;

	struct dict_function *fns;
	size_t fn_cnt, fn_cap;
	struct id_index fn_idx;

	struct dict_mapping *maps;
	size_t map_cnt, map_cap;
	uint32_t *map_of_pmap; /* [profile mapping id] -> dict index, 0 = not yet */
	uint32_t kernel_map;

	struct dict_location *locs;
	size_t loc_cnt, loc_cap;
	uint32_t *loc_of_frame; /* [profile frame id] -> dict index */
	uint32_t *line_fns;
	size_t line_fn_cnt, line_fn_cap;

	uint32_t *stacks; /* [dict index] -> profile stack id */
	size_t stack_cnt, stack_cap;
	uint32_t *stack_of; /* [profile stack id] -> dict index */

	struct u64_map clean;      /* profile string pointer -> clean copy (in owned) */
	struct u64_map label_keys; /* profile label key -> "process.context.label.<key>" (owned) */
	struct otlp_links links;   /* the link table (otlp_link.h) */
	uint32_t link;             /* the link index of the samples being written (0: none) */
	char **owned;              /* strings the request allocated, freed with it */
	size_t owned_cnt, owned_cap;

	struct profile_event *scratch;
	size_t scratch_cap;

	uint64_t time_ns, duration_ns;
	bool timestamps; /* sample shape: timestamps only (else aggregated values) */
	uint32_t s_thread_name, s_thread_id, s_cpu, s_frame_type; /* key strindex, 0 = not yet */
	unsigned int mem_type; /* the Profile being written: 1 + MEM_TYPE_* (0: CPU, off CPU) */
};

/* array__reserve, bounded by the wire: dictionary indices are int32. */
static int otlp__reserve(void **arr, size_t *cap, size_t need, size_t elem_sz)
{
	return need > UINT32_MAX ? -ENOMEM : array__reserve(arr, cap, need, elem_sz);
}

/* Hands s (malloc'ed or NULL) to the request, which frees it at the end. Returns s, or NULL
 * with *err = -ENOMEM (s is freed then).
 */
static char *otlp_enc__keep(struct otlp_enc *x, char *s, int *err)
{
	if (!s ||
	    otlp__reserve((void **)&x->owned, &x->owned_cap, x->owned_cnt + 1, sizeof(*x->owned))) {
		free(s);
		*err = -ENOMEM;
		return NULL;
	}
	x->owned[x->owned_cnt++] = s;
	return s;
}

/* The clean (valid UTF-8) version of s: s itself, or a copy owned by the request. NULL
 * stays NULL; NULL is also returned on ENOMEM (err set).
 */
static const char *otlp_enc__clean(struct otlp_enc *x, const char *s, int *err)
{
	char *copy;

	if (!s || utf8__valid(s, strlen(s)))
		return s;
	copy = u64_map__get(&x->clean, (uintptr_t)s);
	if (copy)
		return copy;
	copy = otlp_enc__keep(x, utf8__sanitize(s, strlen(s)), err);
	if (copy && u64_map__set(&x->clean, (uintptr_t)s, copy))
		*err = -ENOMEM;
	return copy;
}

/* String table index of s (which must outlive the request; NULL and "" are index 0).
 * s must already be clean. Returns the index or 0 with *err set.
 */
static uint32_t otlp_enc__str(struct otlp_enc *x, const char *s, int *err)
{
	struct id_index *t = &x->str_idx;
	uint64_t h;
	size_t i;

	if (!s || !*s || *err)
		return 0;
	if (id_index__reserve(t))
		goto nomem;
	h = fnv64(s, strlen(s), FNV64_INIT);
	for (i = id_index__first(t, h); t->ids[i]; i = id_index__next(t, i)) {
		if (t->hashes[i] == h && !strcmp(x->strs[t->ids[i]], s))
			return t->ids[i];
	}
	if (otlp__reserve((void **)&x->strs, &x->str_cap, x->str_cnt + 1, sizeof(*x->strs)))
		goto nomem;
	x->strs[x->str_cnt] = s;
	id_index__set(t, i, h, (uint32_t)x->str_cnt);
	return (uint32_t)x->str_cnt++;
nomem:
	*err = -ENOMEM;
	return 0;
}

/* String index of a literal attribute key, interned on first use (no orphan strings). */
static uint32_t otlp_enc__key(struct otlp_enc *x, uint32_t *slot, const char *key, int *err)
{
	if (!*slot)
		*slot = otlp_enc__str(x, key, err);
	return *slot;
}

/* Attribute table index of key = value (a clean string when !is_int). 0 with *err set on
 * failure.
 */
static uint32_t otlp_enc__attr(struct otlp_enc *x, uint32_t key, bool is_int, int64_t int_val,
			       const char *str_val, int *err)
{
	struct id_index *t = &x->attr_idx;
	struct dict_attr *a;
	uint64_t h;
	size_t i;

	if (*err)
		return 0;
	if (!is_int && !str_val)
		str_val = "";
	h = fnv64(&key, sizeof(key), FNV64_INIT);
	h = fnv64(&is_int, sizeof(is_int), h);
	h = is_int ? fnv64(&int_val, sizeof(int_val), h) : fnv64(str_val, strlen(str_val), h);
	if (id_index__reserve(t))
		goto nomem;
	for (i = id_index__first(t, h); t->ids[i]; i = id_index__next(t, i)) {
		a = &x->attrs[t->ids[i]];
		if (t->hashes[i] == h && a->key == key && a->is_int == is_int &&
		    (is_int ? a->int_val == int_val : !strcmp(a->str_val, str_val)))
			return t->ids[i];
	}
	if (otlp__reserve((void **)&x->attrs, &x->attr_cap, x->attr_cnt + 1, sizeof(*x->attrs)))
		goto nomem;
	a = &x->attrs[x->attr_cnt];
	a->key = key;
	a->is_int = is_int;
	a->int_val = int_val;
	a->str_val = str_val;
	id_index__set(t, i, h, (uint32_t)x->attr_cnt);
	return (uint32_t)x->attr_cnt++;
nomem:
	*err = -ENOMEM;
	return 0;
}

/* Function table index of (name, file) string indices; 0 when both are 0 (nothing to say). */
static uint32_t otlp_enc__function(struct otlp_enc *x, uint32_t name, uint32_t file, int *err)
{
	struct id_index *t = &x->fn_idx;
	uint64_t h = ((uint64_t)name << 32) | file;
	size_t i;

	if (*err || !h)
		return 0;
	if (id_index__reserve(t))
		goto nomem;
	for (i = id_index__first(t, h); t->ids[i]; i = id_index__next(t, i)) {
		if (t->hashes[i] == h)
			return t->ids[i];
	}
	if (otlp__reserve((void **)&x->fns, &x->fn_cap, x->fn_cnt + 1, sizeof(*x->fns)))
		goto nomem;
	x->fns[x->fn_cnt].name = name;
	x->fns[x->fn_cnt].file = file;
	id_index__set(t, i, h, (uint32_t)x->fn_cnt);
	return (uint32_t)x->fn_cnt++;
nomem:
	*err = -ENOMEM;
	return 0;
}

/* ---- file ids (htlhash) ---- */

void otlp__kernel_file_id(const char *build_id_hex, char out[33])
{
	static const char hex[] = "0123456789abcdef";
	const unsigned __int128 prime = ((unsigned __int128)1 << 88) | 0x13b;
	unsigned __int128 h = ((unsigned __int128)0x6c62272e07bb0142ULL << 64) |
			      0x62b821756295c58dULL;
	const unsigned char *s = (const unsigned char *)build_id_hex;
	int i;

	for (; *s; s++) {
		h ^= *s;
		h *= prime;
	}
	/* big-endian, as the reference prints its 128-bit file ids */
	for (i = 0; i < 16; i++) {
		unsigned char b = (unsigned char)(h >> (120 - 8 * i));

		out[2 * i] = hex[b >> 4];
		out[2 * i + 1] = hex[b & 15];
	}
	out[32] = '\0';
}

/* Builds the mapping's attribute list from what is known now. */
static void otlp_enc__mapping_attrs(struct otlp_enc *x, struct dict_mapping *m, const char *gnu,
				    const char *file_id, const char *go, int *err)
{
	uint32_t key;

	m->attr_cnt = 0;
	if (gnu && *gnu) {
		key = otlp_enc__str(x, "process.executable.build_id.gnu", err);
		m->attrs[m->attr_cnt++] = otlp_enc__attr(x, key, false, 0, gnu, err);
	}
	if (file_id && *file_id) {
		key = otlp_enc__str(x, "process.executable.build_id.htlhash", err);
		m->attrs[m->attr_cnt++] = otlp_enc__attr(x, key, false, 0, file_id, err);
	}
	if (go && *go) {
		key = otlp_enc__str(x, "process.executable.build_id.go", err);
		m->attrs[m->attr_cnt++] = otlp_enc__attr(x, key, false, 0, go, err);
	}
}

static const char *path__basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* Dict index of the mapping a frame points to (0 = none). */
static uint32_t otlp_enc__mapping(struct otlp_enc *x, const struct profile_frame *f, uint32_t pid,
				  int *err)
{
	const struct profile_mapping *pm;
	struct dict_mapping *m;
	uint32_t *slot;
	char kernel_id[33];

	if (f->kind == FRAME_ERROR || *err)
		return 0;
	if (f->kind == FRAME_KERNEL) {
		slot = &x->kernel_map;
		pm = NULL;
	} else {
		pm = profile__mapping(x->p, f->mapping);
		if (!pm)
			return 0;
		slot = &x->map_of_pmap[f->mapping];
	}
	if (*slot)
		return *slot;
	if (otlp__reserve((void **)&x->maps, &x->map_cap, x->map_cnt + 1, sizeof(*x->maps))) {
		*err = -ENOMEM;
		return 0;
	}
	m = &x->maps[x->map_cnt];
	memset(m, 0, sizeof(*m));
	*slot = (uint32_t)x->map_cnt++;
	if (!pm) {
		const char *bid = x->host ? x->host->kernel_build_id : "";

		m->filename = otlp_enc__str(x, OTLP_KERNEL_MAPPING_NAME, err);
		if (*bid && utf8__valid(bid, strlen(bid))) {
			otlp__kernel_file_id(bid, kernel_id);
			otlp_enc__mapping_attrs(
				x, m, bid, otlp_enc__keep(x, strdup(kernel_id), err), NULL, err);
		}
		return *slot;
	}
	m->pmap = f->mapping;
	if (pm->start < pm->limit) {
		m->start = pm->start;
		m->limit = pm->limit;
	}
	m->offset = pm->file_offset;
	if (pm->path)
		m->filename =
			otlp_enc__str(x, otlp_enc__clean(x, path__basename(pm->path), err), err);
	if (pm->file_hash && *pm->file_hash) {
		/* Computed by the caller from the file it keeps open (deleted files, containers,
		 * processes gone before the interval ended).
		 */
		otlp_enc__mapping_attrs(x, m, otlp_enc__clean(x, pm->build_id, err),
					otlp_enc__clean(x, pm->file_hash, err),
					otlp_enc__clean(x, pm->go_build_id, err), err);
		return *slot;
	}
	otlp_enc__mapping_attrs(x, m, otlp_enc__clean(x, pm->build_id, err), NULL,
				otlp_enc__clean(x, pm->go_build_id, err), err);
	return *slot;
}

static uint32_t otlp_enc__location(struct otlp_enc *x, uint32_t frame_id, uint32_t pid, int *err)
{
	const struct profile_frame *f = profile__frame(x->p, frame_id);
	struct dict_location *l;
	const char *type;
	uint32_t i, mapping;

	if (!f || *err)
		return 0;
	mapping = otlp_enc__mapping(x, f, pid, err);
	if (x->loc_of_frame[frame_id])
		return x->loc_of_frame[frame_id];
	if (otlp__reserve((void **)&x->locs, &x->loc_cap, x->loc_cnt + 1, sizeof(*x->locs)) ||
	    otlp__reserve((void **)&x->line_fns, &x->line_fn_cap, x->line_fn_cnt + f->line_cnt,
			  sizeof(*x->line_fns))) {
		*err = -ENOMEM;
		return 0;
	}
	l = &x->locs[x->loc_cnt];
	l->frame = frame_id;
	l->mapping = mapping;
	l->fn_off = x->line_fn_cnt;
	switch (f->kind) {
	case FRAME_KERNEL:
		type = "kernel";
		break;
	case FRAME_NATIVE:
		type = f->runtime ? f->runtime : "native"; /* "go": Go code (formats/gopclntab.c) */
		break;
	case FRAME_RUNTIME:
		type = f->runtime ? f->runtime : "unknown"; /* the runtime's own (src/interp/) */
		break;
	default:
		type = "abort-marker";
		break;
	}
	l->type_attr = otlp_enc__attr(x,
				      otlp_enc__key(x, &x->s_frame_type, "profile.frame.type", err),
				      false, 0, type, err);
	for (i = 0; i < f->line_cnt; i++) {
		const struct profile_line *ln = &f->lines[i];
		uint32_t name = otlp_enc__str(x, otlp_enc__clean(x, ln->function, err), err);
		uint32_t file = otlp_enc__str(x, otlp_enc__clean(x, ln->file, err), err);

		x->line_fns[x->line_fn_cnt++] = otlp_enc__function(x, name, file, err);
	}
	if (*err)
		return 0;
	x->loc_of_frame[frame_id] = (uint32_t)x->loc_cnt;
	return (uint32_t)x->loc_cnt++;
}

static uint32_t otlp_enc__stack(struct otlp_enc *x, uint32_t stack_id, uint32_t pid, int *err)
{
	const uint32_t *frames;
	uint32_t cnt = 0, i;

	frames = profile__stack(x->p, stack_id, &cnt);
	if (!frames || !cnt || *err)
		return 0; /* the empty stack is the zero Stack */
	/* every location, even of a known stack: a new pid may find a missing htlhash */
	for (i = 0; i < cnt; i++)
		otlp_enc__location(x, frames[i], pid, err);
	if (*err)
		return 0;
	if (x->stack_of[stack_id])
		return x->stack_of[stack_id];
	if (otlp__reserve((void **)&x->stacks, &x->stack_cap, x->stack_cnt + 1,
			  sizeof(*x->stacks))) {
		*err = -ENOMEM;
		return 0;
	}
	x->stacks[x->stack_cnt] = stack_id;
	x->stack_of[stack_id] = (uint32_t)x->stack_cnt;
	return (uint32_t)x->stack_cnt++;
}

/* ---- resources ---- */

struct kv_writer {
	struct pb_buf *out;
	char **keys; /* clean keys written so far, owned */
	size_t cnt, cap;
};

/* Writes one Resource attribute (plain KeyValue) with a string value, or num when is_int.
 * Skips NULL or empty strings and keys already written (the first writer wins). Strings are
 * cleaned on the way. 0 or -ENOMEM / the buffer's error.
 */
static int kv_writer__add(struct kv_writer *w, const char *key, bool is_int, const char *str,
			  int64_t num)
{
	char *ckey = NULL, *cval = NULL;
	size_t mark, any, i;
	int err = 0;

	if (!key || !*key || (!is_int && (!str || !*str)) || w->cnt == w->cap)
		return 0;
	if (is_int)
		str = NULL;
	ckey = utf8__sanitize(key, strlen(key));
	if (!ckey)
		return -ENOMEM;
	for (i = 0; i < w->cnt; i++) {
		if (!strcmp(w->keys[i], ckey))
			goto cleanup;
	}
	if (str && !(str = cval = utf8__sanitize(str, strlen(str)))) {
		err = -ENOMEM;
		goto cleanup;
	}
	pb_buf__begin(w->out, RESOURCE_ATTRIBUTES, &mark);
	pb_buf__string(w->out, KV_KEY, ckey);
	pb_buf__begin(w->out, KV_VALUE, &any);
	if (str)
		pb_buf__string(w->out, ANY_STRING, str);
	else
		pb_buf__varint(w->out, ANY_INT, (uint64_t)num);
	pb_buf__end(w->out, any);
	err = pb_buf__end(w->out, mark);
	w->keys[w->cnt++] = ckey;
	ckey = NULL;
cleanup:
	free(ckey);
	free(cval);
	return err;
}

/* A published attribute (process context) with its type: bool and double are written here,
 * strings and ints by kv_writer__add(). Same rules (first writer wins, keys cleaned).
 */
static int kv_writer__add_published(struct kv_writer *w, const struct pctx_attr *a)
{
	size_t mark, any, i;
	uint64_t bits;
	char *ckey;
	int err;

	if (a->type == PCTX_STRING || a->type == PCTX_INT)
		return kv_writer__add(w, a->key, a->type == PCTX_INT, a->str, a->i);
	if (!a->key || !*a->key || w->cnt == w->cap)
		return 0;
	ckey = utf8__sanitize(a->key, strlen(a->key));
	if (!ckey)
		return -ENOMEM;
	for (i = 0; i < w->cnt; i++) {
		if (!strcmp(w->keys[i], ckey)) {
			free(ckey);
			return 0;
		}
	}
	pb_buf__begin(w->out, RESOURCE_ATTRIBUTES, &mark);
	pb_buf__string(w->out, KV_KEY, ckey);
	pb_buf__begin(w->out, KV_VALUE, &any);
	if (a->type == PCTX_BOOL) {
		pb_buf__varint(w->out, ANY_BOOL, a->b);
	} else {
		memcpy(&bits, &a->d, sizeof(bits));
		pb_buf__fixed64(w->out, ANY_DOUBLE, bits);
	}
	pb_buf__end(w->out, any);
	err = pb_buf__end(w->out, mark);
	w->keys[w->cnt++] = ckey;
	return err;
}

static int otlp_enc__resource(struct otlp_enc *x, uint32_t pid, otlp_process_fn lookup, void *ctx)
{
	const struct otlp_host *h = x->host;
	struct otlp_process proc = { 0 };
	struct kv_writer w = { .out = x->out };
	size_t mark, i;
	int err = 0;

	if (lookup && lookup(ctx, pid, &proc))
		memset(&proc, 0, sizeof(proc));
	w.cap = 16 + proc.extra_cnt + (h ? h->extra_cnt : 0) +
		(proc.published ? proc.published->cnt : 0);
	w.keys = calloc(w.cap, sizeof(*w.keys));
	if (!w.keys)
		return -ENOMEM;
	pb_buf__begin(x->out, RP_RESOURCE, &mark);
	err = kv_writer__add(&w, "process.pid", true, NULL, pid);
	if (!err && proc.exe_path && *proc.exe_path) {
		err = kv_writer__add(&w, "process.executable.path", false, proc.exe_path, 0);
		err = err
			      ?: kv_writer__add(&w, "process.executable.name", false,
						path__basename(proc.exe_path), 0);
	}
	err = err ?: kv_writer__add(&w, "container.id", false, proc.container_id, 0);
	err = err ?: kv_writer__add(&w, "k8s.pod.uid", false, proc.k8s_pod_uid, 0);
	for (i = 0; proc.published && !err && i < proc.published->cnt; i++) {
		if (proc.published->attrs[i].source == PCTX_FROM_RESOURCE)
			err = kv_writer__add_published(&w, &proc.published->attrs[i]);
	}
	for (i = 0; !err && i < proc.extra_cnt; i++)
		err = kv_writer__add(&w, proc.extra[i].key, false, proc.extra[i].value, 0);
	for (i = 0; h && !err && i < h->extra_cnt; i++)
		err = kv_writer__add(&w, h->extra[i].key, false, h->extra[i].value, 0);
	if (h && !err) {
		err = kv_writer__add(&w, "host.name", false, h->host_name, 0);
		err = err ?: kv_writer__add(&w, "host.id", false, h->host_id, 0);
		err = err ?: kv_writer__add(&w, "host.arch", false, h->host_arch, 0);
		err = err ?: kv_writer__add(&w, "os.type", false, h->os_type, 0);
		err = err ?: kv_writer__add(&w, "os.description", false, h->os_description, 0);
	}
	if (!err)
		err = pb_buf__end(x->out, mark);
	for (i = 0; i < w.cnt; i++)
		free(w.keys[i]);
	free(w.keys);
	return err;
}

/* ---- samples and profiles ---- */

static int event__cmp(const void *a, const void *b)
{
	const struct profile_event *x = a, *y = b;

	return cmp_u64(x->cpu, y->cpu) ?: cmp_u64(x->time_ns, y->time_ns);
}

/* One OTLP Sample. events[0..cnt) share one CPU (has_cpu) or are none (the remainder
 * count of an aggregated profile sample, value = count; off CPU: its ns).
 */
static int otlp_enc__sample(struct otlp_enc *x, uint32_t stack, const uint32_t *attrs,
			    size_t attr_cnt, const struct profile_event *events, size_t cnt,
			    uint64_t count, bool off_cpu)
{
	struct pb_buf *out = x->out;
	size_t mark, packed, i;
	uint64_t j, sum = 0;
	uint8_t le[8];
	int k;

	pb_buf__begin(out, PROFILE_SAMPLES, &mark);
	if (stack)
		pb_buf__varint(out, SAMPLE_STACK, stack);
	if (x->link)
		pb_buf__varint(out, SAMPLE_LINK, x->link);
	pb_buf__begin(out, SAMPLE_ATTRS, &packed);
	for (i = 0; i < attr_cnt; i++)
		pb_buf__raw_varint(out, attrs[i]);
	pb_buf__end(out, packed);
	if (off_cpu && x->timestamps && cnt) { /* values and timestamps, one per stay */
		pb_buf__begin(out, SAMPLE_VALUES, &packed);
		for (i = 0; i < cnt; i++)
			pb_buf__raw_varint(out, events[i].off_cpu_ns);
		pb_buf__end(out, packed);
	}
	if (x->timestamps && cnt) {
		pb_buf__begin(out, SAMPLE_TIMESTAMPS, &packed);
		for (i = 0; i < cnt; i++) {
			for (k = 0; k < 8; k++)
				le[k] = (uint8_t)(events[i].time_ns >> (8 * k));
			/* an event standing for several samples repeats its timestamp */
			for (j = 0; j < (off_cpu ? 1 : events[i].count); j++)
				pb_buf__raw(out, le, sizeof(le));
		}
		pb_buf__end(out, packed);
	} else {
		for (i = 0; i < cnt; i++)
			sum += off_cpu ? events[i].off_cpu_ns : events[i].count;
		pb_buf__begin(out, SAMPLE_VALUES, &packed);
		pb_buf__raw_varint(out, cnt ? sum : count);
		pb_buf__end(out, packed);
	}
	return pb_buf__end(out, mark);
}

/* String index of the attribute key of a sample label: "process.context.label.<key>" (the
 * reference agent's name for Go pprof labels), made once per key.
 */
static uint32_t otlp_enc__label_key(struct otlp_enc *x, const char *key, int *err)
{
	static const char prefix[] = "process.context.label.";
	const char *clean = otlp_enc__clean(x, key, err);
	char *full;

	if (!clean)
		return 0;
	full = u64_map__get(&x->label_keys, (uintptr_t)key);
	if (!full) {
		full = malloc(sizeof(prefix) + strlen(clean));
		if (full)
			sprintf(full, "%s%s", prefix, clean);
		full = otlp_enc__keep(x, full, err);
		if (!full || u64_map__set(&x->label_keys, (uintptr_t)key, full)) {
			*err = -ENOMEM;
			return 0;
		}
	}
	return otlp_enc__str(x, full, err);
}

/* All OTLP Samples of one profile sample: one per CPU among its events, plus (aggregated
 * shape only; off CPU, always) one without CPU for the count whose events were not kept.
 */
static int otlp_enc__agg_sample(struct otlp_enc *x, const struct profile_agg_sample *s)
{
	bool off_cpu = s->off_cpu_ns != 0;
	uint32_t attrs[3 + PROFILE_MAX_LABELS], stack, l;
	struct profile_label label;
	size_t attr_cnt = 0, i, run;
	uint64_t covered = 0, mem = x->mem_type ? mem_type__value(s, x->mem_type - 1) : 0;
	int err = 0;

	if (x->mem_type ? !mem : !s->count)
		return 0;
	stack = otlp_enc__stack(x, s->stack, s->pid, &err);
	if (s->thread_comm && *s->thread_comm)
		attrs[attr_cnt++] =
			otlp_enc__attr(x, otlp_enc__key(x, &x->s_thread_name, "thread.name", &err),
				       false, 0, otlp_enc__clean(x, s->thread_comm, &err), &err);
	attrs[attr_cnt++] = otlp_enc__attr(x, otlp_enc__key(x, &x->s_thread_id, "thread.id", &err),
					   true, s->tid, NULL, &err);
	x->link = otlp_links__of_labels(&x->links, x->p, s->labels, &err);
	for (l = 0; l < PROFILE_MAX_LABELS && profile__label(x->p, s->labels, l, &label); l++)
		if (!otlp_links__covers(x->link, label.key) &&
		    strcmp(label.key, PCTX_SERVICE_LABEL)) /* the resource's already */
			attrs[attr_cnt++] =
				otlp_enc__attr(x, otlp_enc__label_key(x, label.key, &err), false, 0,
					       otlp_enc__clean(x, label.value, &err), &err);
	if (err)
		return err;
	if (x->mem_type) /* a memory type: one aggregated value, no CPU nor timestamps */
		return otlp_enc__sample(x, stack, attrs, attr_cnt, NULL, 0, mem, false);
	if (s->event_cnt > x->scratch_cap) {
		free(x->scratch);
		x->scratch_cap = 0;
		x->scratch = calloc(s->event_cnt, sizeof(*x->scratch));
		if (!x->scratch)
			return -ENOMEM;
		x->scratch_cap = s->event_cnt;
	}
	if (s->event_cnt) { /* none kept: scratch may be NULL, which qsort() must not get */
		memcpy(x->scratch, s->events, s->event_cnt * sizeof(*x->scratch));
		qsort(x->scratch, s->event_cnt, sizeof(*x->scratch), event__cmp);
	}
	for (i = 0; i < s->event_cnt && !err; i = run) {
		for (run = i; run < s->event_cnt && x->scratch[run].cpu == x->scratch[i].cpu; run++)
			covered += off_cpu ? x->scratch[run].off_cpu_ns : x->scratch[run].count;
		attrs[attr_cnt] =
			otlp_enc__attr(x, otlp_enc__key(x, &x->s_cpu, "cpu.logical_number", &err),
				       true, x->scratch[i].cpu, NULL, &err);
		err = err
			      ?: otlp_enc__sample(x, stack, attrs, attr_cnt + 1, &x->scratch[i],
						  run - i, 0, off_cpu);
	}
	/* the stays not kept one by one: their time in one more sample */
	if (!err && off_cpu && covered < s->off_cpu_ns)
		err = otlp_enc__sample(x, stack, attrs, attr_cnt, NULL, 0, s->off_cpu_ns - covered,
				       true);
	if (!err && !off_cpu && !x->timestamps && covered < s->count)
		err = otlp_enc__sample(x, stack, attrs, attr_cnt, NULL, 0, s->count - covered,
				       false);
	return err;
}

static void otlp_enc__value_type(struct otlp_enc *x, uint32_t field, uint32_t type, uint32_t unit)
{
	size_t mark;

	pb_buf__begin(x->out, field, &mark);
	pb_buf__varint(x->out, VT_TYPE, type);
	pb_buf__varint(x->out, VT_UNIT, unit);
	pb_buf__end(x->out, mark);
}

/* A CPU sample: neither off CPU nor memory. */
static bool sample__on_cpu(const struct profile_agg_sample *s)
{
	return !s->off_cpu_ns && !s->mem_kind;
}

/* After CPU and off CPU, one Profile per memory type (profile/mem_types.h) with a value in
 * order[0..cnt), in the table's order: sample_type (type, unit), no period; each Sample one
 * aggregated value.
 */
static int otlp_enc__mem_profiles(struct otlp_enc *x, const size_t *order, size_t cnt)
{
	const struct mem_type_desc *d;
	unsigned int t;
	size_t i, prof;
	int err = 0;

	for (t = 0; t < MEM_TYPE_CNT && !err; t++) {
		if (!mem_type__in(x->p, t))
			continue;
		for (i = 0; i < cnt && !mem_type__value(profile__sample(x->p, order[i]), t); i++)
			;
		if (i == cnt)
			continue;
		d = mem_type__desc(t);
		pb_buf__begin(x->out, SP_PROFILES, &prof);
		otlp_enc__value_type(x, PROFILE_SAMPLE_TYPE, otlp_enc__str(x, d->type, &err),
				     otlp_enc__str(x, d->unit, &err));
		x->mem_type = t + 1;
		for (; i < cnt && !err; i++)
			err = otlp_enc__agg_sample(x, profile__sample(x->p, order[i]));
		x->mem_type = 0;
		pb_buf__fixed64(x->out, PROFILE_TIME, x->time_ns);
		pb_buf__varint(x->out, PROFILE_DURATION, x->duration_ns);
		pb_buf__end(x->out, prof);
	}
	return err;
}

/* ResourceProfiles for the samples order[0..cnt), all of one pid. */
static int otlp_enc__process(struct otlp_enc *x, const size_t *order, size_t cnt,
			     otlp_process_fn lookup, void *ctx)
{
	struct pb_buf *out = x->out;
	size_t rp, sp, scope, prof, i;
	uint32_t samples, count, cpu, nanos;
	int err = 0;

	samples = otlp_enc__str(x, "samples", &err);
	count = otlp_enc__str(x, "count", &err);
	cpu = otlp_enc__str(x, "cpu", &err);
	nanos = otlp_enc__str(x, "nanoseconds", &err);
	if (err)
		return err;
	pb_buf__begin(out, REQ_RESOURCE_PROFILES, &rp);
	err = otlp_enc__resource(x, profile__sample(x->p, order[0])->pid, lookup, ctx);
	if (err)
		return err;
	pb_buf__begin(out, RP_SCOPE_PROFILES, &sp);
	pb_buf__begin(out, SP_SCOPE, &scope);
	pb_buf__string(out, SCOPE_NAME, x->e->scope_name);
	if (x->e->scope_version)
		pb_buf__string(out, SCOPE_VERSION, x->e->scope_version);
	pb_buf__end(out, scope);
	/* One Profile per sample type, in the order of (sample_type, period_type): on CPU
	 * ("samples"), then off CPU ("off_cpu"), each only when it has samples.
	 */
	for (i = 0; i < cnt && !sample__on_cpu(profile__sample(x->p, order[i])); i++)
		;
	if (i < cnt) {
		pb_buf__begin(out, SP_PROFILES, &prof);
		otlp_enc__value_type(x, PROFILE_SAMPLE_TYPE, samples, count);
		for (i = 0; i < cnt && !err; i++)
			if (sample__on_cpu(profile__sample(x->p, order[i])))
				err = otlp_enc__agg_sample(x, profile__sample(x->p, order[i]));
		if (err)
			return err;
		pb_buf__fixed64(out, PROFILE_TIME, x->time_ns);
		pb_buf__varint(out, PROFILE_DURATION, x->duration_ns);
		otlp_enc__value_type(x, PROFILE_PERIOD_TYPE, cpu, nanos);
		pb_buf__varint(out, PROFILE_PERIOD, profile__period_ns(x->p));
		pb_buf__end(out, prof);
	}
	for (i = 0; i < cnt && !profile__sample(x->p, order[i])->off_cpu_ns; i++)
		;
	if (i < cnt) { /* off_cpu/nanoseconds, no period */
		uint32_t off_cpu = otlp_enc__str(x, "off_cpu", &err);

		if (err)
			return err;
		pb_buf__begin(out, SP_PROFILES, &prof);
		otlp_enc__value_type(x, PROFILE_SAMPLE_TYPE, off_cpu, nanos);
		for (; i < cnt && !err; i++)
			if (profile__sample(x->p, order[i])->off_cpu_ns)
				err = otlp_enc__agg_sample(x, profile__sample(x->p, order[i]));
		if (err)
			return err;
		pb_buf__fixed64(out, PROFILE_TIME, x->time_ns);
		pb_buf__varint(out, PROFILE_DURATION, x->duration_ns);
		pb_buf__end(out, prof);
	}
	err = otlp_enc__mem_profiles(x, order, cnt);
	if (err)
		return err;
	pb_buf__end(out, sp);
	return pb_buf__end(out, rp);
}

/* ---- the dictionary ---- */

static void otlp_enc__packed_u32(struct otlp_enc *x, uint32_t field, const uint32_t *v, size_t n)
{
	size_t mark, i;

	if (!n)
		return;
	pb_buf__begin(x->out, field, &mark);
	for (i = 0; i < n; i++)
		pb_buf__raw_varint(x->out, v[i]);
	pb_buf__end(x->out, mark);
}

static int otlp_enc__dictionary(struct otlp_enc *x)
{
	struct pb_buf *out = x->out;
	size_t dict, mark, sub, i;
	uint32_t j, cnt, line_cnt;

	pb_buf__begin(out, REQ_DICTIONARY, &dict);

	/* [0] of every table: the zero value, present on the wire as an empty message */
	for (i = 0; i < x->map_cnt; i++) {
		const struct dict_mapping *m = &x->maps[i];

		pb_buf__begin(out, DICT_MAPPING, &mark);
		if (i) {
			if (m->start || m->limit) {
				pb_buf__varint(out, MAP_START, m->start);
				pb_buf__varint(out, MAP_LIMIT, m->limit);
			}
			if (m->offset)
				pb_buf__varint(out, MAP_OFFSET, m->offset);
			if (m->filename)
				pb_buf__varint(out, MAP_FILENAME, m->filename);
			otlp_enc__packed_u32(x, MAP_ATTRS, m->attrs, m->attr_cnt);
		}
		pb_buf__end(out, mark);
	}
	for (i = 0; i < x->loc_cnt; i++) {
		const struct dict_location *l = &x->locs[i];
		const struct profile_frame *f = i ? profile__frame(x->p, l->frame) : NULL;

		pb_buf__begin(out, DICT_LOCATION, &mark);
		if (f) {
			if (l->mapping)
				pb_buf__varint(out, LOC_MAPPING, l->mapping);
			if (f->kind != FRAME_ERROR && f->address)
				pb_buf__varint(out, LOC_ADDRESS, f->address);
			line_cnt = f->line_cnt;
			for (j = 0; j < line_cnt; j++) {
				if (!x->line_fns[l->fn_off + j])
					continue;
				pb_buf__begin(out, LOC_LINES, &sub);
				pb_buf__varint(out, LINE_FUNCTION, x->line_fns[l->fn_off + j]);
				if (f->kind != FRAME_ERROR && f->lines[j].line)
					pb_buf__varint(out, LINE_LINE, f->lines[j].line);
				if (f->kind != FRAME_ERROR && f->lines[j].column)
					pb_buf__varint(out, LINE_COLUMN, f->lines[j].column);
				pb_buf__end(out, sub);
			}
			otlp_enc__packed_u32(x, LOC_ATTRS, &l->type_attr, 1);
		}
		pb_buf__end(out, mark);
	}
	for (i = 0; i < x->fn_cnt; i++) {
		pb_buf__begin(out, DICT_FUNCTION, &mark);
		if (x->fns[i].name)
			pb_buf__varint(out, FN_NAME, x->fns[i].name);
		if (x->fns[i].file)
			pb_buf__varint(out, FN_FILENAME, x->fns[i].file);
		pb_buf__end(out, mark);
	}
	otlp_links__write(&x->links, out, DICT_LINK);
	for (i = 0; i < x->str_cnt; i++)
		pb_buf__string(out, DICT_STRING, x->strs[i]);
	for (i = 0; i < x->attr_cnt; i++) {
		const struct dict_attr *a = &x->attrs[i];

		pb_buf__begin(out, DICT_ATTRIBUTE, &mark);
		if (i) {
			pb_buf__varint(out, KVU_KEY, a->key);
			pb_buf__begin(out, KVU_VALUE, &sub);
			if (a->is_int)
				pb_buf__varint(out, ANY_INT, (uint64_t)a->int_val);
			else
				pb_buf__string(out, ANY_STRING, a->str_val);
			pb_buf__end(out, sub);
		}
		pb_buf__end(out, mark);
	}
	for (i = 0; i < x->stack_cnt; i++) {
		const uint32_t *frames = i ? profile__stack(x->p, x->stacks[i], &cnt) : NULL;

		pb_buf__begin(out, DICT_STACK, &mark);
		if (frames) {
			pb_buf__begin(out, STACK_LOCATIONS, &sub);
			for (j = 0; j < cnt; j++)
				pb_buf__raw_varint(out, x->loc_of_frame[frames[j]]);
			pb_buf__end(out, sub);
		}
		pb_buf__end(out, mark);
	}
	return pb_buf__end(out, dict);
}

/* ---- the request ---- */

static int otlp_enc__init(struct otlp_enc *x)
{
	size_t frame_cnt = profile__frame_cnt(x->p), stack_cnt = profile__stack_cnt(x->p);
	size_t map_cnt = profile__mapping_cnt(x->p);
	int err = 0;

	x->map_of_pmap = calloc(map_cnt + 1, sizeof(*x->map_of_pmap));
	x->loc_of_frame = calloc(frame_cnt + 1, sizeof(*x->loc_of_frame));
	x->stack_of = calloc(stack_cnt + 1, sizeof(*x->stack_of));
	if (!x->map_of_pmap || !x->loc_of_frame || !x->stack_of)
		return -ENOMEM;
	/* the zero entries */
	if (otlp__reserve((void **)&x->strs, &x->str_cap, 1, sizeof(*x->strs)) ||
	    otlp__reserve((void **)&x->attrs, &x->attr_cap, 1, sizeof(*x->attrs)) ||
	    otlp__reserve((void **)&x->fns, &x->fn_cap, 1, sizeof(*x->fns)) ||
	    otlp__reserve((void **)&x->maps, &x->map_cap, 1, sizeof(*x->maps)) ||
	    otlp__reserve((void **)&x->locs, &x->loc_cap, 1, sizeof(*x->locs)) ||
	    otlp__reserve((void **)&x->stacks, &x->stack_cap, 1, sizeof(*x->stacks)))
		return -ENOMEM;
	x->strs[x->str_cnt++] = "";
	memset(&x->attrs[x->attr_cnt++], 0, sizeof(*x->attrs));
	memset(&x->fns[x->fn_cnt++], 0, sizeof(*x->fns));
	memset(&x->maps[x->map_cnt++], 0, sizeof(*x->maps));
	memset(&x->locs[x->loc_cnt++], 0, sizeof(*x->locs));
	x->stacks[x->stack_cnt++] = 0;
	return err;
}

static void otlp_enc__fini(struct otlp_enc *x)
{
	size_t i;

	for (i = 0; i < x->owned_cnt; i++)
		free(x->owned[i]);
	free(x->owned);
	u64_map__free(&x->clean);
	u64_map__free(&x->label_keys);
	otlp_links__free(&x->links);
	free(x->strs);
	id_index__free(&x->str_idx);
	free(x->attrs);
	id_index__free(&x->attr_idx);
	free(x->fns);
	id_index__free(&x->fn_idx);
	free(x->maps);
	free(x->map_of_pmap);
	free(x->locs);
	free(x->loc_of_frame);
	free(x->line_fns);
	free(x->stacks);
	free(x->stack_of);
	free(x->scratch);
}

/* The profile window [time, time + duration) widened to cover every event, and the shape. */
static void otlp_enc__window(struct otlp_enc *x)
{
	uint64_t start = profile__start_time_ns(x->p), end = profile__end_time_ns(x->p);
	size_t i, n = profile__sample_cnt(x->p);
	uint32_t j;

	if (end < start)
		end = start;
	x->timestamps = true;
	for (i = 0; i < n; i++) {
		const struct profile_agg_sample *s = profile__sample(x->p, i);
		uint64_t covered = 0;

		for (j = 0; j < s->event_cnt; j++) {
			uint64_t t = s->events[j].time_ns;

			covered += s->events[j].count;
			if (t < start)
				start = t;
			if (t >= end)
				end = t + 1;
		}
		if (covered != s->count)
			x->timestamps = false;
	}
	x->time_ns = start;
	x->duration_ns = end - start;
}

static int order__cmp(const void *a, const void *b, void *ctx)
{
	const struct profile *p = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	uint32_t pi = profile__sample(p, i)->pid;
	uint32_t pj = profile__sample(p, j)->pid;

	return cmp_u64(pi, pj) ?: cmp_u64(i, j);
}

int otlp_encoder__encode(struct otlp_encoder *e, const struct profile *p,
			 const struct otlp_host *host, otlp_process_fn lookup, void *ctx,
			 struct pb_buf *out)
{
	struct otlp_enc x = { .e = e, .p = p, .host = host, .out = out };
	size_t n = profile__sample_cnt(p), i, run;
	size_t *order = NULL;
	int err;

	err = otlp_enc__init(&x);
	if (err)
		goto cleanup;
	otlp_enc__window(&x);
	order = calloc(n ? n : 1, sizeof(*order));
	if (!order) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), order__cmp, (void *)p);
	for (i = 0; i < n && !err; i = run) {
		uint32_t pid = profile__sample(p, order[i])->pid;

		for (run = i; run < n && profile__sample(p, order[run])->pid == pid; run++)
			;
		err = otlp_enc__process(&x, order + i, run - i, lookup, ctx);
	}
	if (!err)
		err = otlp_enc__dictionary(&x);
	if (!err)
		err = pb_buf__err(out);
cleanup:
	free(order);
	otlp_enc__fini(&x);
	return err ?: pb_buf__err(out);
}

/* ---- the encoder object ---- */

struct otlp_encoder *otlp_encoder__new(const struct otlp_encoder_opts *opts)
{
	struct otlp_encoder *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->scope_name = strdup(opts && opts->scope_name ? opts->scope_name : OTLP_SCOPE_NAME);
	if (opts && opts->scope_version)
		e->scope_version = strdup(opts->scope_version);
	if (!e->scope_name || (opts && opts->scope_version && !e->scope_version)) {
		otlp_encoder__free(e);
		errno = ENOMEM;
		return NULL;
	}
	return e;
}

void otlp_encoder__free(struct otlp_encoder *e)
{
	if (!e)
		return;
	free(e->scope_name);
	free(e->scope_version);
	free(e);
}

/* ---- host detection ---- */

/* First line of path (without the newline) into out; "" when unreadable. */
static void file__first_line(const char *path, char *out, size_t out_sz)
{
	FILE *f = fopen(path, "re");

	out[0] = '\0';
	if (!f)
		return;
	if (!fgets(out, (int)out_sz, f))
		out[0] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
	fclose(f);
}

/* Copies src into dst, truncated to dst_sz - 1 bytes. */
static void str__copy(char *dst, size_t dst_sz, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < dst_sz && src[i]; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

/* PRETTY_NAME from os-release, unquoted, or "". */
static void os_release__pretty_name(char *out, size_t out_sz)
{
	char line[512], *v;
	FILE *f = fopen("/etc/os-release", "re");

	out[0] = '\0';
	if (!f)
		f = fopen("/usr/lib/os-release", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "PRETTY_NAME=", 12))
			continue;
		v = line + 12;
		v[strcspn(v, "\r\n")] = '\0';
		if (*v == '"' || *v == '\'') {
			size_t len = strlen(v);

			if (len >= 2 && v[len - 1] == *v)
				v[len - 1] = '\0';
			v++;
		}
		str__copy(out, out_sz, v);
		break;
	}
	fclose(f);
}

/* The GNU build id in /sys/kernel/notes (a sequence of ELF notes) as hex, or "". */
static void kernel__build_id(char *out, size_t out_sz)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char buf[4096];
	size_t len, off = 0, i;
	uint32_t namesz, descsz, type;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	out[0] = '\0';
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return;
	len = (size_t)n;
	while (off + 12 <= len) {
		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		off += 12;
		if (namesz > len - off || ((namesz + 3) & ~3u) > len - off)
			return;
		size_t name_off = off;

		off += (namesz + 3) & ~3u;
		if (descsz > len - off)
			return;
		if (type == 3 && namesz == 4 && !memcmp(buf + name_off, "GNU", 4)) {
			if (descsz * 2 + 1 > out_sz)
				return;
			for (i = 0; i < descsz; i++) {
				out[2 * i] = hex[buf[off + i] >> 4];
				out[2 * i + 1] = hex[buf[off + i] & 15];
			}
			out[2 * descsz] = '\0';
			return;
		}
		off += (descsz + 3) & ~3u;
	}
}

void otlp_host__detect(struct otlp_host *h)
{
	static const struct {
		const char *uname, *semconv;
	} arches[] = {
		{ "x86_64", "amd64" }, { "aarch64", "arm64" }, { "i386", "x86" },
		{ "i686", "x86" },     { "armv7l", "arm32" },  { "ppc64le", "ppc64" },
		{ "ppc64", "ppc64" },  { "s390x", "s390x" },
	};
	char pretty[128];
	struct utsname u;
	size_t i;

	memset(h, 0, sizeof(*h));
	str__copy(h->os_type, sizeof(h->os_type), "linux");
	if (!uname(&u)) {
		str__copy(h->host_name, sizeof(h->host_name), u.nodename);
		str__copy(h->host_arch, sizeof(h->host_arch), u.machine);
		for (i = 0; i < sizeof(arches) / sizeof(arches[0]); i++) {
			if (!strcmp(u.machine, arches[i].uname))
				str__copy(h->host_arch, sizeof(h->host_arch), arches[i].semconv);
		}
		os_release__pretty_name(pretty, sizeof(pretty));
		snprintf(h->os_description, sizeof(h->os_description), "%s%sLinux %s", pretty,
			 *pretty ? " " : "", u.release);
	}
	file__first_line("/etc/machine-id", h->host_id, sizeof(h->host_id));
	if (!h->host_id[0])
		file__first_line("/var/lib/dbus/machine-id", h->host_id, sizeof(h->host_id));
	kernel__build_id(h->kernel_build_id, sizeof(h->kernel_build_id));
}
