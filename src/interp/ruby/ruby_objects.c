/* Reading CRuby objects out of another process (see ruby_objects.h). */
#include <errno.h>
#include <string.h>

#include "interp/common/proc_memory.h"
#include "interp/interp.h"
#include "interp/ruby/ruby_objects.h"

#define RUBY_T_MASK 0x1f
#define ARRAY_LEN_MAX (1ULL << 32)
#define CLASS_IVARS_MAX 64
#define ID_SCOPE_SHIFT 4  /* symbol.h RUBY_ID_SCOPE_SHIFT */
#define ID_ENTRY_UNIT 512 /* symbol.c: ids per table array */
#define ID_ENTRY_SIZE 2   /* [str, sym] per id */
#define HEAD_SZ 48        /* an RString's or RArray's fields, embedded contents included */
#define EMBED_MAX 4096    /* an embedded string's length: at most its heap slot's size */
#define QFALSE 0x00       /* special constants (x86-64, flonum builds: 2.x and 3.x) */
#define QNIL 0x08

int ruby_obj__flags(const struct ruby_reader *r, uint64_t obj, uint64_t *flags)
{
	if (!obj || obj & 7) /* Qfalse/Qnil and immediates are not objects */
		return -EINVAL;
	return interp__read_u64(r->pid, obj, flags);
}

/* The first HEAD_SZ bytes of obj into head, and its flags, when it is an object of `type`
 * (RUBY_T_*); 0 or -errno.
 */
static int read_head(const struct ruby_reader *r, uint64_t obj, unsigned int type,
		     uint8_t head[HEAD_SZ], uint64_t *flags)
{
	int err;

	if (!obj || obj & 7)
		return -EINVAL;
	if ((err = interp__read_mem(r->pid, obj, head, HEAD_SZ)))
		return err;
	memcpy(flags, head, 8);
	return (*flags & RUBY_T_MASK) == type ? 0 : -EINVAL;
}

int ruby_obj__string(const struct ruby_reader *r, uint64_t str, char *out, size_t cap)
{
	const struct ruby_obj_layout *l = r->l;
	uint8_t head[HEAD_SZ];
	uint64_t flags, len, ptr;
	size_t n;
	int err;

	if (!cap)
		return -EINVAL;
	out[0] = '\0';
	if ((err = read_head(r, str, RUBY_T_STRING, head, &flags)))
		return err;
	if (l->str_len)
		memcpy(&len, head + l->str_len, 8);
	else if (flags & l->str_noembed_flag)
		memcpy(&len, head + l->str_heap_len, 8);
	else
		len = (flags >> l->str_embed_shift) & l->str_embed_mask;
	if ((int64_t)len < 0 || (!(flags & l->str_noembed_flag) && len > EMBED_MAX))
		return -EINVAL;
	n = len < cap - 1 ? (size_t)len : cap - 1;
	if (flags & l->str_noembed_flag) {
		memcpy(&ptr, head + l->str_heap_ptr, 8);
		if (n && (err = interp__read_mem(r->pid, ptr, out, n)))
			return err;
	} else if (l->str_embed + n <= sizeof(head)) {
		memcpy(out, head + l->str_embed, n);
	} else if (n && (err = interp__read_mem(r->pid, str + l->str_embed, out, n))) {
		return err; /* embedded in a larger slot (variable width allocation, 3.2+) */
	}
	interp__scrub(out, n);
	return 0;
}

int ruby_obj__array_at(const struct ruby_reader *r, uint64_t ary, uint64_t idx, uint64_t *out)
{
	const struct ruby_obj_layout *l = r->l;
	uint8_t head[HEAD_SZ];
	uint64_t flags, len, ptr;
	int err;

	if ((err = read_head(r, ary, RUBY_T_ARRAY, head, &flags)))
		return err;
	if (flags & l->ary_embed_flag) {
		len = (flags >> l->ary_embed_shift) & l->ary_embed_mask;
		if (idx >= len)
			return -ENOENT;
		if (l->ary_embed + (idx + 1) * 8 > sizeof(head)) /* in a larger slot (3.2+) */
			return interp__read_u64(r->pid, ary + l->ary_embed + idx * 8, out);
		memcpy(out, head + l->ary_embed + idx * 8, 8);
		return 0;
	}
	memcpy(&len, head + l->ary_heap_len, 8);
	memcpy(&ptr, head + l->ary_heap_ptr, 8);
	if (len > ARRAY_LEN_MAX)
		return -EINVAL;
	if (idx >= len)
		return -ENOENT;
	return interp__read_u64(r->pid, ptr + idx * 8, out);
}

/* The rb_classext_t of a class or module; 0 or -errno. */
static int class_ext(const struct ruby_reader *r, uint64_t klass, uint64_t *ext)
{
	uint64_t flags;
	int err;

	if ((err = ruby_obj__flags(r, klass, &flags)))
		return err;
	if ((flags & RUBY_T_MASK) != RUBY_T_CLASS && (flags & RUBY_T_MASK) != RUBY_T_MODULE)
		return -EINVAL;
	if (r->l->class_ext_inline) {
		*ext = klass + r->l->class_ext;
		return 0;
	}
	return interp__read_u64(r->pid, klass + r->l->class_ext, ext);
}

int ruby_obj__class_ivars(const struct ruby_reader *r, uint64_t klass,
			  int (*fn)(void *ctx, uint64_t id, uint64_t value), void *ctx)
{
	const struct ruby_obj_layout *l = r->l;
	uint64_t ext, tbl, start, bound, entries, ent[3 * CLASS_IVARS_MAX], i;
	int err;

	if (l->ext_classpath)
		return -ENOTSUP;
	if ((err = class_ext(r, klass, &ext)) ||
	    (err = interp__read_u64(r->pid, ext + l->ext_iv_tbl, &tbl)))
		return err;
	if (!tbl)
		return 0;
	if ((err = interp__read_u64(r->pid, tbl + l->st_entries_start, &start)) ||
	    (err = interp__read_u64(r->pid, tbl + l->st_entries_bound, &bound)) ||
	    (err = interp__read_u64(r->pid, tbl + l->st_entries, &entries)))
		return err;
	if (bound < start)
		return -EINVAL;
	if (bound - start > CLASS_IVARS_MAX)
		bound = start + CLASS_IVARS_MAX;
	if (bound == start)
		return 0;
	/* st_table_entry: { st_index_t hash; st_data_t key; st_data_t record; } */
	if ((err = interp__read_mem(r->pid, entries + start * 24, ent, (bound - start) * 24)))
		return err;
	for (i = 0; i < bound - start; i++) {
		int res = fn(ctx, ent[3 * i + 1], ent[3 * i + 2]);

		if (res)
			return res;
	}
	return 0;
}

int ruby_obj__class_path(const struct ruby_reader *r, uint64_t klass, char *out, size_t cap)
{
	uint64_t ext, path;
	int err;

	if (cap)
		out[0] = '\0';
	if (!r->l->ext_classpath)
		return -ENOTSUP;
	if ((err = class_ext(r, klass, &ext)) ||
	    (err = interp__read_u64(r->pid, ext + r->l->ext_classpath, &path)))
		return err;
	if (path == QFALSE || path == QNIL || path & 7) /* not named (yet): anonymous */
		return -ENOENT;
	return ruby_obj__string(r, path, out, cap);
}

int ruby_obj__attached(const struct ruby_reader *r, uint64_t singleton, uint64_t *object)
{
	uint64_t ext;
	int err;

	if (!r->l->ext_classpath)
		return -ENOTSUP;
	if ((err = class_ext(r, singleton, &ext)))
		return err;
	return interp__read_u64(r->pid, ext + r->l->ext_attached, object);
}

int ruby_obj__id_name(const struct ruby_reader *r, uint64_t symbols, uint64_t id, char *out,
		      size_t cap)
{
	uint64_t serial = id > r->l->last_op_id ? id >> ID_SCOPE_SHIFT : id, ids, chunk, str;
	uint32_t last_id;
	int err;

	if (cap)
		out[0] = '\0';
	if (!symbols || !serial)
		return -EINVAL;
	if ((err = interp__read_mem(r->pid, symbols + r->l->sym_last_id, &last_id,
				    sizeof(last_id))) ||
	    (err = interp__read_u64(r->pid, symbols + r->l->sym_ids, &ids)))
		return err;
	if (serial > last_id)
		return -ENOENT;
	if ((err = ruby_obj__array_at(r, ids, serial / ID_ENTRY_UNIT, &chunk)) ||
	    (err = ruby_obj__array_at(r, chunk, (serial % ID_ENTRY_UNIT) * ID_ENTRY_SIZE, &str)))
		return err;
	return ruby_obj__string(r, str, out, cap);
}
