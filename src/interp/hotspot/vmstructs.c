/* HotSpot's serviceability tables, read from a live JVM. See vmstructs.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "formats/elf_file.h"
#include "interp/hotspot/vmstructs.h"
#include "interp/common/proc_memory.h"
#include "interp/interp.h"

#define NAME_MAX_LEN 128
#define CHUNK_ENTRIES 64
#define STRIDE_MAX 256

const char *const vm_sym_names[VM_SYM_CNT] = { VM_SYMS(INTERP_LIST_TEXT) };

struct reader {
	pid_t pid;
	struct elf_file *elf;
	uint64_t bias;
};

static int read_u64(const struct reader *r, uint64_t addr, uint64_t *out)
{
	return interp__read_mem(r->pid, addr, out, sizeof(*out));
}

/* A NUL-terminated name at addr (absolute): from the file when it lies in it, else from
 * memory. NULL when unreadable, empty or too long.
 */
static char *read_name(const struct reader *r, uint64_t addr)
{
	char buf[NAME_MAX_LEN], *s;
	const void *data;
	size_t avail, len;

	if (!addr)
		return NULL;
	if (r->elf && addr >= r->bias &&
	    !elf_file__bytes_at_vaddr(r->elf, addr - r->bias, &data, &avail) && avail) {
		len = strnlen(data, avail < sizeof(buf) ? avail : sizeof(buf));
		if (len == 0 || len >= sizeof(buf))
			return NULL;
		memcpy(buf, data, len);
		buf[len] = 0;
		return strdup(buf);
	}
	/* From memory: read up to its NUL, in chunks that stop at a mapping's end. */
	s = interp__read_cstr(r->pid, addr, sizeof(buf) - 1);
	if (s && (!s[0] || strlen(s) >= sizeof(buf) - 1)) {
		free(s);
		s = NULL;
	}
	return s;
}

/* The table's base pointer and its entry layout: stride and the wanted member offsets. */
static int table_layout(const struct reader *r, const uint64_t *syms, int table, int stride,
			const int *off_syms, int off_cnt, uint64_t *base, uint64_t *size,
			uint64_t *offs)
{
	int i;

	if (!syms[table] || !syms[stride] || read_u64(r, syms[table] + r->bias, base) ||
	    read_u64(r, syms[stride] + r->bias, size) || !*base || *size == 0 || *size > STRIDE_MAX)
		return -ENOENT;
	for (i = 0; i < off_cnt; i++) {
		if (!syms[off_syms[i]] || read_u64(r, syms[off_syms[i]] + r->bias, &offs[i]) ||
		    offs[i] + 8 > *size)
			return -ENOENT;
	}
	return 0;
}

/* Visit the entries of a table until the one whose name at name_off is NULL. */
typedef int (*entry_fn)(const struct reader *r, const uint8_t *e, const uint64_t *offs, void *ctx);

static int walk_table(const struct reader *r, uint64_t base, uint64_t stride, const uint64_t *offs,
		      entry_fn fn, void *ctx)
{
	uint8_t *chunk = malloc(stride * CHUNK_ENTRIES);
	size_t i, n;
	int err = -ENOENT;

	if (!chunk)
		return -ENOMEM;
	for (n = 0; n < VMSTRUCTS_CAP; n += CHUNK_ENTRIES) {
		if (interp__read_mem(r->pid, base + n * stride, chunk, stride * CHUNK_ENTRIES)) {
			/* The table may end near the end of its mapping: entry by entry. */
			for (i = 0; i < CHUNK_ENTRIES; i++)
				if (interp__read_mem(r->pid, base + (n + i) * stride,
						     chunk + i * stride, stride))
					break;
			if (i == 0)
				break;
			memset(chunk + i * stride, 0, (CHUNK_ENTRIES - i) * stride);
		}
		for (i = 0; i < CHUNK_ENTRIES; i++) {
			uint64_t name;

			memcpy(&name, chunk + i * stride + offs[0], 8);
			if (!name) {
				err = n + i ? 0 : -ENOENT;
				goto out;
			}
			err = fn(r, chunk + i * stride, offs, ctx);
			if (err)
				goto out;
		}
	}
out:
	free(chunk);
	return err;
}

static uint64_t member(const uint8_t *e, uint64_t off)
{
	uint64_t v;

	memcpy(&v, e + off, 8);
	return v;
}

/* Struct entries: offs = type name, field name, type string, is static, offset, address. */
static int add_field(const struct reader *r, const uint8_t *e, const uint64_t *offs, void *ctx)
{
	struct vmstructs *vs = ctx;
	struct vm_field *f;
	int32_t is_static;

	if (array__reserve_bounded((void **)&vs->fields, &vs->field_cap, vs->field_cnt + 1,
				   sizeof(*vs->fields), 256, VMSTRUCTS_CAP))
		return -ENOMEM;
	f = &vs->fields[vs->field_cnt];
	memset(f, 0, sizeof(*f));
	f->type = read_name(r, member(e, offs[0]));
	f->field = read_name(r, member(e, offs[1]));
	f->type_string = read_name(r, member(e, offs[2]));
	if (!f->type || !f->field) {
		free(f->type);
		free(f->field);
		free(f->type_string);
		return 0; /* skipped: names unreadable */
	}
	memcpy(&is_static, e + offs[3], 4);
	f->is_static = is_static != 0;
	f->offset = member(e, offs[4]);
	f->address = member(e, offs[5]);
	vs->field_cnt++;
	return 0;
}

/* The number named at name_addr into table t; an entry whose name is unreadable is skipped. */
static int add_number(const struct reader *r, uint64_t name_addr, uint64_t value,
		      struct vm_numbers *t)
{
	char *name;

	if (array__reserve_bounded((void **)&t->entries, &t->cap, t->cnt + 1, sizeof(*t->entries),
				   256, VMSTRUCTS_CAP))
		return -ENOMEM;
	name = read_name(r, name_addr);
	if (name)
		t->entries[t->cnt++] = (struct vm_number){ .name = name, .value = value };
	return 0;
}

/* Type entries: offs = name, size; ctx: the types. */
static int add_type(const struct reader *r, const uint8_t *e, const uint64_t *offs, void *ctx)
{
	return add_number(r, member(e, offs[0]), member(e, offs[1]), ctx);
}

/* Int constant entries: offs = name, value (an int32_t); ctx: the constants. */
static int add_int(const struct reader *r, const uint8_t *e, const uint64_t *offs, void *ctx)
{
	int32_t value;

	memcpy(&value, e + offs[1], 4);
	return add_number(r, member(e, offs[0]), (uint64_t)(int64_t)value, ctx);
}

int vmstructs__read(struct vmstructs *vs, pid_t pid, struct elf_file *elf, uint64_t bias,
		    const uint64_t syms[VM_SYM_CNT])
{
	struct reader r = { .pid = pid, .elf = elf, .bias = bias };
	uint64_t base, stride, offs[6], toffs[2], ioffs[2];
	int err;

	static const int field_offs[6] = { VM_SYM_STRUCT_TYPE_NAME,   VM_SYM_STRUCT_FIELD_NAME,
					   VM_SYM_STRUCT_TYPE_STRING, VM_SYM_STRUCT_IS_STATIC,
					   VM_SYM_STRUCT_OFFSET,      VM_SYM_STRUCT_ADDRESS };
	static const int type_offs[2] = { VM_SYM_TYPE_NAME, VM_SYM_TYPE_SIZE };
	static const int int_offs[2] = { VM_SYM_INT_NAME, VM_SYM_INT_VALUE };

	memset(vs, 0, sizeof(*vs));
	/* The member offsets come in the order add_field(), add_type(), add_int() read them. */
	err = table_layout(&r, syms, VM_SYM_STRUCTS, VM_SYM_STRUCT_STRIDE, field_offs, 6, &base,
			   &stride, offs);
	if (!err)
		err = walk_table(&r, base, stride, offs, add_field, vs);
	if (!err)
		err = table_layout(&r, syms, VM_SYM_TYPES, VM_SYM_TYPE_STRIDE, type_offs, 2, &base,
				   &stride, toffs);
	if (!err)
		err = walk_table(&r, base, stride, toffs, add_type, &vs->types);
	/* Constants are optional: without them the frame layout keeps its defaults. */
	if (!err && !table_layout(&r, syms, VM_SYM_INTS, VM_SYM_INT_STRIDE, int_offs, 2, &base,
				  &stride, ioffs))
		walk_table(&r, base, stride, ioffs, add_int, &vs->ints);
	if (err)
		vmstructs__free(vs);
	return err;
}

static void vm_numbers__free(struct vm_numbers *t)
{
	size_t i;

	for (i = 0; i < t->cnt; i++)
		free(t->entries[i].name);
	free(t->entries);
}

void vmstructs__free(struct vmstructs *vs)
{
	size_t i;

	for (i = 0; i < vs->field_cnt; i++) {
		free(vs->fields[i].type);
		free(vs->fields[i].field);
		free(vs->fields[i].type_string);
	}
	free(vs->fields);
	vm_numbers__free(&vs->types);
	vm_numbers__free(&vs->ints);
	memset(vs, 0, sizeof(*vs));
}

static const struct vm_field *find_field(const struct vmstructs *vs, const char *type,
					 const char *field)
{
	size_t i;

	for (i = 0; i < vs->field_cnt; i++)
		if (!strcmp(vs->fields[i].field, field) && !strcmp(vs->fields[i].type, type))
			return &vs->fields[i];
	return NULL;
}

int vmstructs__offset(const struct vmstructs *vs, const char *type, const char *field,
		      uint64_t *out)
{
	const struct vm_field *f = find_field(vs, type, field);

	if (!f || f->is_static)
		return -ENOENT;
	*out = f->offset;
	return 0;
}

int vmstructs__address(const struct vmstructs *vs, const char *type, const char *field,
		       uint64_t *out)
{
	const struct vm_field *f = find_field(vs, type, field);

	if (!f || !f->is_static || !f->address)
		return -ENOENT;
	*out = f->address;
	return 0;
}

const char *vmstructs__field_type(const struct vmstructs *vs, const char *type, const char *field)
{
	const struct vm_field *f = find_field(vs, type, field);

	return f ? f->type_string : NULL;
}

static const struct vm_number *find_number(const struct vm_numbers *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->cnt; i++)
		if (!strcmp(t->entries[i].name, name))
			return &t->entries[i];
	return NULL;
}

int vmstructs__size(const struct vmstructs *vs, const char *type, uint64_t *out)
{
	const struct vm_number *n = find_number(&vs->types, type);

	if (!n)
		return -ENOENT;
	*out = n->value;
	return 0;
}

int vmstructs__int(const struct vmstructs *vs, const char *name, int32_t *out)
{
	const struct vm_number *n = find_number(&vs->ints, name);

	if (!n)
		return -ENOENT;
	*out = (int32_t)n->value;
	return 0;
}
