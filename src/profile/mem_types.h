/* The memory sample types of a profile, by name: one table that OTLP (one Profile per type)
 * and the store (one row per sample and type) share, so that both name and value them alike.
 *
 * faults/count, fault_bytes/bytes, mapped_bytes/bytes (profile_opts.mem_growth) and
 * alloc_objects/count, alloc_space/bytes, inuse_objects/count, inuse_space/bytes
 * (profile_opts.mem_alloc). In-use types are gauges: a profile's value is what was live at its
 * end, so profiles of consecutive intervals are not summed but the last one taken.
 */
#ifndef STACKSCOPE_PROFILE_MEM_TYPES_H
#define STACKSCOPE_PROFILE_MEM_TYPES_H

#include <stdbool.h>
#include <stdint.h>

struct profile;
struct profile_agg_sample;

enum mem_type {
	MEM_TYPE_FAULTS,
	MEM_TYPE_FAULT_BYTES,
	MEM_TYPE_MAPPED_BYTES,
	MEM_TYPE_ALLOC_OBJECTS,
	MEM_TYPE_ALLOC_SPACE,
	MEM_TYPE_INUSE_OBJECTS,
	MEM_TYPE_INUSE_SPACE,
	MEM_TYPE_CNT,
};

struct mem_type_desc {
	const char *type; /* "alloc_space" */
	const char *unit; /* "bytes" */
	bool gauge;       /* in use: the last interval's value, not a sum */
};

/* The type's name and unit; NULL for t >= MEM_TYPE_CNT. */
const struct mem_type_desc *mem_type__desc(unsigned int t);
/* MEM_TYPE_* of a name, or -1. */
int mem_type__by_name(const char *type);
/* The profile records the type (its growth or allocation samples are on). */
bool mem_type__in(const struct profile *p, unsigned int t);
/* A sample's value of the type (0 for a sample of another kind). */
uint64_t mem_type__value(const struct profile_agg_sample *s, unsigned int t);

#endif
