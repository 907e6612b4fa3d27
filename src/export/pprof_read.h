/* Reading a pprof file back: a perftools.profiles.Profile decoded into plain arrays, to be
 * changed a little (stackscope symbolize fills in functions and lines) and written again.
 *
 * Everything the message holds is kept: sample types, samples (location ids, values, labels),
 * mappings, locations (lines, is_folded), functions, the string table, drop/keep frames,
 * times, period type and period, comments, default sample type and doc_url. Unknown fields
 * are skipped (and not written back). Repeated scalars are accepted packed and unpacked.
 *
 * Untrusted input: the file may be gzipped (one or more members) or raw; its size and the
 * decompressed size are capped by the caller; every length and index is checked. A file that
 * is not a valid Profile is -EBADMSG, never a crash. "Valid" is what `go tool pprof` checks
 * too: string_table[0] is "", every string index is in the table, mapping/location/function
 * ids are nonzero and unique, every referenced id exists (0 means "none" for a location's
 * mapping_id and a line's function_id), every sample has one value per sample type.
 *
 * Ownership: a pprof_profile owns all its arrays and strings; pointers into it (an item, a
 * string) stay valid until pprof_profile__free() or the next call that adds to the same array
 * (pprof_profile__intern() may move `strings`, pprof_profile__add_function() `functions`).
 * Not thread-safe.
 */
#ifndef STACKSCOPE_PPROF_READ_H
#define STACKSCOPE_PPROF_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/protobuf.h"

/* Default cap on a file and on its decompressed size (the writer's own limit). */
#define PPROF_READ_MAX_SZ ((size_t)1 << 30)

struct pprof_str {
	const char *s; /* NUL-terminated copy (strings may also hold NULs: len is the truth) */
	size_t len;
};

struct pprof_value_type {
	int64_t type; /* strindex */
	int64_t unit; /* strindex */
};

struct pprof_label {
	int64_t key; /* strindex */
	int64_t str; /* strindex */
	int64_t num;
	int64_t num_unit; /* strindex */
};

struct pprof_sample {
	uint64_t *location_ids; /* leaf first */
	size_t location_cnt;
	int64_t *values; /* value_cnt == profile's sample_type_cnt */
	size_t value_cnt;
	struct pprof_label *labels;
	size_t label_cnt;
};

struct pprof_mapping {
	uint64_t id;
	uint64_t memory_start, memory_limit, file_offset;
	int64_t filename; /* strindex */
	int64_t build_id; /* strindex */
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct pprof_line {
	uint64_t function_id; /* 0 = none */
	int64_t line;
	int64_t column;
};

struct pprof_location {
	uint64_t id;
	uint64_t mapping_id; /* 0 = none */
	uint64_t address;
	struct pprof_line *lines; /* innermost first */
	size_t line_cnt;
	bool is_folded;
	bool lines_owned; /* internal: lines were set by pprof_profile__set_lines() */
};

struct pprof_function {
	uint64_t id;
	int64_t name;        /* strindex */
	int64_t system_name; /* strindex */
	int64_t filename;    /* strindex */
	int64_t start_line;
};

struct pprof_profile {
	struct pprof_value_type *sample_types;
	size_t sample_type_cnt;
	struct pprof_sample *samples;
	size_t sample_cnt;
	struct pprof_mapping *mappings;
	size_t mapping_cnt;
	struct pprof_location *locations;
	size_t location_cnt;
	struct pprof_function *functions;
	size_t function_cnt;
	struct pprof_str *strings; /* strings[0] is "" */
	size_t string_cnt;
	int64_t drop_frames, keep_frames; /* strindex */
	int64_t time_nanos, duration_nanos;
	struct pprof_value_type period_type;
	int64_t period;
	int64_t *comments; /* strindex each */
	size_t comment_cnt;
	int64_t default_sample_type; /* strindex */
	int64_t doc_url;             /* strindex */
	struct pprof_index *index;   /* internal: id and string lookups */
};

/* Decodes a gzipped or raw Profile of size bytes; the decompressed message may be at most
 * max_sz bytes (0 = PPROF_READ_MAX_SZ). Returns 0 and *out (free with pprof_profile__free()),
 * or -EBADMSG (not a valid Profile, corrupt gzip), -EFBIG (over max_sz), -ENOMEM.
 */
int pprof_profile__decode(const void *buf, size_t size, size_t max_sz, struct pprof_profile **out);

/* The same for a file of at most max_sz bytes (0 = PPROF_READ_MAX_SZ). Also -errno from
 * open/read.
 */
int pprof_profile__read(const char *path, size_t max_sz, struct pprof_profile **out);

/* Accepts NULL. */
void pprof_profile__free(struct pprof_profile *p);

/* Items by id, or NULL (id 0 and unknown ids). Borrowed, see the top comment. */
struct pprof_mapping *pprof_profile__mapping(const struct pprof_profile *p, uint64_t id);
struct pprof_location *pprof_profile__location(const struct pprof_profile *p, uint64_t id);
struct pprof_function *pprof_profile__function(const struct pprof_profile *p, uint64_t id);

/* String idx as a C string, "" for an index out of range. */
const char *pprof_profile__string(const struct pprof_profile *p, int64_t idx);

/* Index of s in the string table, appended (copied) if new. >= 0 or -ENOMEM. */
int64_t pprof_profile__intern(struct pprof_profile *p, const char *s);

/* Id of the function with these fields, appended with a fresh id if none has them.
 * Returns the id (>= 1), or 0 with errno ENOMEM / EINVAL (a string index out of range).
 */
uint64_t pprof_profile__add_function(struct pprof_profile *p, int64_t name, int64_t system_name,
				     int64_t filename, int64_t start_line);

/* Replaces loc's lines by a copy of lines[0..n). 0, -ENOMEM or -EINVAL (an unknown nonzero
 * function id).
 */
int pprof_profile__set_lines(struct pprof_profile *p, struct pprof_location *loc,
			     const struct pprof_line *lines, size_t n);

/* Appends the (uncompressed) Profile to out; default (zero) scalars are not written, repeated
 * scalars are packed. 0, -ENOMEM or -EMSGSIZE.
 */
int pprof_profile__encode(const struct pprof_profile *p, struct pb_buf *out);

/* Writes the gzipped profile to path (see pprof__write_gzip()). 0 or -errno. */
int pprof_profile__write(const struct pprof_profile *p, const char *path);

#endif
