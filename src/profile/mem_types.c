/* Memory sample types by name: see mem_types.h. */
#include <string.h>

#include "profile/mem_types.h"
#include "profile/profile.h"

static const struct mem_type_desc descs[MEM_TYPE_CNT] = {
	[MEM_TYPE_FAULTS] = { "faults", "count", false },
	[MEM_TYPE_FAULT_BYTES] = { "fault_bytes", "bytes", false },
	[MEM_TYPE_MAPPED_BYTES] = { "mapped_bytes", "bytes", false },
	[MEM_TYPE_ALLOC_OBJECTS] = { "alloc_objects", "count", false },
	[MEM_TYPE_ALLOC_SPACE] = { "alloc_space", "bytes", false },
	[MEM_TYPE_INUSE_OBJECTS] = { "inuse_objects", "count", true },
	[MEM_TYPE_INUSE_SPACE] = { "inuse_space", "bytes", true },
};

const struct mem_type_desc *mem_type__desc(unsigned int t)
{
	return t < MEM_TYPE_CNT ? &descs[t] : NULL;
}

int mem_type__by_name(const char *type)
{
	int t;

	for (t = 0; type && t < MEM_TYPE_CNT; t++)
		if (!strcmp(descs[t].type, type))
			return t;
	return -1;
}

bool mem_type__in(const struct profile *p, unsigned int t)
{
	return t <= MEM_TYPE_MAPPED_BYTES ? profile__has_mem_growth(p)
					  : t < MEM_TYPE_CNT && profile__has_mem_alloc(p);
}

uint64_t mem_type__value(const struct profile_agg_sample *s, unsigned int t)
{
	uint64_t v[4];

	switch (t) {
	case MEM_TYPE_FAULTS:
		return profile__sample_faults(s);
	case MEM_TYPE_FAULT_BYTES:
		return profile__sample_fault_bytes(s);
	case MEM_TYPE_MAPPED_BYTES:
		return profile__sample_mapped_bytes(s);
	case MEM_TYPE_ALLOC_OBJECTS:
	case MEM_TYPE_ALLOC_SPACE:
	case MEM_TYPE_INUSE_OBJECTS:
	case MEM_TYPE_INUSE_SPACE:
		profile__sample_alloc(s, v);
		return v[t - MEM_TYPE_ALLOC_OBJECTS];
	default:
		return 0;
	}
}
