/* Reading CRuby objects out of another process: strings, arrays, a class's instance variables
 * (its name), symbol names. Every read goes through interp__read_mem with a bound; a value that
 * is not what it must be (wrong type bits, sizes past the caps) is an error, never followed.
 */
#ifndef STACKSCOPE_RUBY_OBJECTS_H
#define STACKSCOPE_RUBY_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Object layout of one CRuby version (x86-64); ruby.c says where each value comes from. */
struct ruby_obj_layout {
	uint64_t str_noembed_flag; /* RString flag: contents on the heap */
	uint8_t str_embed_shift;   /* embedded length: (flags >> shift) & mask (no str_len) */
	uint8_t str_embed_mask;
	uint16_t str_len;        /* RString.len of both forms (3.2+), 0: as.heap.len / flags */
	uint16_t str_embed;      /* embedded bytes */
	uint16_t str_heap_len;   /* as.heap.len */
	uint16_t str_heap_ptr;   /* as.heap.ptr */
	uint64_t ary_embed_flag; /* RArray flag: elements inside the object */
	uint8_t ary_embed_shift;
	uint8_t ary_embed_mask;
	uint16_t ary_embed;    /* embedded elements */
	uint16_t ary_heap_len; /* as.heap.len */
	uint16_t ary_heap_ptr; /* as.heap.ptr */
	/* A class's rb_classext_t: at RClass + class_ext (class_ext_inline: 3.3, allocated with
	 * the class), or pointed to by the RClass field at class_ext.
	 */
	uint16_t class_ext;
	bool class_ext_inline;
	/* Its name and a singleton's object: instance variables (__classpath__, __attached__) in
	 * the st_table at rb_classext_t + ext_iv_tbl (ext_classpath == 0), or the fields
	 * ext_classpath and ext_attached of rb_classext_t (3.3).
	 */
	uint16_t ext_iv_tbl;
	uint16_t ext_classpath;
	uint16_t ext_attached;
	uint16_t st_entries_start, st_entries_bound, st_entries; /* st_table */
	uint16_t sym_last_id;                                    /* rb_symbols_t.last_id (uint32) */
	uint16_t sym_ids;    /* rb_symbols_t.ids: array of 512-entry arrays of [str, sym] */
	uint16_t last_op_id; /* id.h tLAST_OP_ID: ids up to it are operators, their own serial */
};

/* Ruby's type tags (RBasic.flags & 0x1f) this file checks. */
#define RUBY_T_CLASS 0x02
#define RUBY_T_MODULE 0x03
#define RUBY_T_STRING 0x05
#define RUBY_T_ARRAY 0x07
#define RUBY_T_ICLASS 0x1c
#define RUBY_FL_SINGLETON (1ULL << 12) /* FL_USER0 on a class */

struct ruby_reader {
	pid_t pid;
	const struct ruby_obj_layout *l;
};

/* RBasic.flags of a heap object (not an immediate); 0 or -errno. */
int ruby_obj__flags(const struct ruby_reader *r, uint64_t obj, uint64_t *flags);
/* A String's bytes as a NUL-terminated C string (control bytes replaced by '?', truncated to
 * cap - 1); 0 or -errno.
 */
int ruby_obj__string(const struct ruby_reader *r, uint64_t str, char *out, size_t cap);
/* Element idx of an Array; 0, -ENOENT (past its end) or -errno. */
int ruby_obj__array_at(const struct ruby_reader *r, uint64_t ary, uint64_t idx, uint64_t *out);
/* Call fn(ctx, id, value) for each instance variable of a class or module (at most 64);
 * fn returning nonzero stops with that result. 0 when all were seen, -ENOTSUP for a layout
 * without an ivar table (ext_classpath), or -errno.
 */
int ruby_obj__class_ivars(const struct ruby_reader *r, uint64_t klass,
			  int (*fn)(void *ctx, uint64_t id, uint64_t value), void *ctx);
/* With ext_classpath (3.3): a class's or module's name (its classpath String, absent for an
 * anonymous one: -ENOENT) and the object a singleton class is attached to. 0, -ENOTSUP for
 * the other layouts, or -errno.
 */
int ruby_obj__class_path(const struct ruby_reader *r, uint64_t klass, char *out, size_t cap);
int ruby_obj__attached(const struct ruby_reader *r, uint64_t singleton, uint64_t *object);
/* The name of symbol id through the symbol table at `symbols` (ruby_global_symbols); 0 or
 * -errno.
 */
int ruby_obj__id_name(const struct ruby_reader *r, uint64_t symbols, uint64_t id, char *out,
		      size_t cap);

#endif
