/* Compiled Java code's pc descriptors, scopes and metadata. See nmethod_scopes.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interp/hotspot/hotspot_lines.h"
#include "interp/hotspot/nmethod_scopes.h"
#include "interp/hotspot/vmstructs.h"
#include "interp/common/proc_memory.h"
#include "interp/interp.h"

void nm_layout__from(const struct vmstructs *vs, unsigned u5_excluded, struct nm_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->u5_excluded = u5_excluded;
	if (vmstructs__size(vs, "PcDesc", &l->pcdesc_size) ||
	    vmstructs__offset(vs, "PcDesc", "_pc_offset", &l->pcdesc_pc) ||
	    vmstructs__offset(vs, "PcDesc", "_scope_decode_offset", &l->pcdesc_scope) ||
	    vmstructs__offset(vs, "nmethod", "_scopes_pcs_offset", &l->pcs) || l->pcdesc_size < 8 ||
	    l->pcdesc_size > 64 || l->pcdesc_pc + 4 > l->pcdesc_size ||
	    l->pcdesc_scope + 4 > l->pcdesc_size)
		return;
	if (!vmstructs__offset(vs, "nmethod", "_immutable_data", &l->data) &&
	    !vmstructs__offset(vs, "nmethod", "_immutable_data_size", &l->data_len) &&
	    !vmstructs__offset(vs, "nmethod", "_scopes_data_offset", &l->scopes)) {
		/* The pc descriptors end where the scopes data begins. */
		l->immutable = true;
		l->pcs_end = l->scopes;
		l->found = true;
	} else if (!vmstructs__offset(vs, "nmethod", "_dependencies_offset", &l->pcs_end) &&
		   !vmstructs__offset(vs, "CompiledMethod", "_scopes_data_begin", &l->scopes)) {
		l->found = true;
	}
	if (!vmstructs__offset(vs, "nmethod", "_metadata_offset", &l->meta_off))
		l->metadata_at = NM_METADATA_OFFSET;
	else if (!vmstructs__offset(vs, "CodeBlob", "_mutable_data", &l->mutable_data) &&
		 !vmstructs__offset(vs, "CodeBlob", "_mutable_data_size", &l->mutable_len) &&
		 !vmstructs__offset(vs, "CodeBlob", "_relocation_size", &l->reloc_size))
		l->metadata_at = NM_METADATA_MUTABLE;
}

static int read_i32(pid_t reader, uint64_t addr, int32_t *out)
{
	return interp__read_mem(reader, addr, out, sizeof(*out));
}

/* *len bytes at addr of process reader into a new buffer, *len halved (in whole units) while
 * the read fails (the end of a mapping); NULL when not even one unit could be read.
 */
static void *copy_out(pid_t reader, uint64_t addr, size_t *len, size_t unit)
{
	void *buf;

	if (*len < unit || !(buf = malloc(*len)))
		return NULL;
	while (*len >= unit && interp__read_mem(reader, addr, buf, *len))
		*len = *len / 2 - *len / 2 % unit;
	if (*len < unit) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The metadata table of nmethod (17: up to its scopes data at scopes_at) into d. */
static void copy_metadata(pid_t reader, const struct nm_layout *l, uint64_t nmethod,
			  uint64_t scopes_at, struct nm_debug *d)
{
	uint64_t begin, end, mutable_data;
	int32_t off, len;
	size_t bytes;

	switch (l->metadata_at) {
	case NM_METADATA_OFFSET: /* [nmethod + _metadata_offset, scopes data) */
		if (read_i32(reader, nmethod + l->meta_off, &off) || off <= 0)
			return;
		begin = nmethod + (uint64_t)off;
		end = scopes_at;
		break;
	case NM_METADATA_MUTABLE: /* mutable data: relocations, then metadata, to its end */
		if (interp__read_u64(reader, nmethod + l->mutable_data, &mutable_data) ||
		    !mutable_data || read_i32(reader, nmethod + l->reloc_size, &off) || off < 0 ||
		    read_i32(reader, nmethod + l->mutable_len, &len) || len < off)
			return;
		begin = mutable_data + (uint64_t)off;
		end = mutable_data + (uint64_t)len;
		break;
	default:
		return;
	}
	if (end <= begin)
		return;
	bytes = (end - begin) / 8 > NM_METADATA_MAX ? NM_METADATA_MAX * 8 : (end - begin) / 8 * 8;
	d->metadata = copy_out(reader, begin, &bytes, 8);
	d->metadata_cnt = d->metadata ? (uint32_t)(bytes / 8) : 0;
}

void nm_debug__read(pid_t reader, const struct nm_layout *l, uint64_t nmethod, struct nm_debug *d)
{
	uint64_t base = nmethod, scopes, scopes_end;
	int32_t begin = 0, end = 0, data_len = 0;
	size_t len;

	memset(d, 0, sizeof(*d));
	if (!l->found)
		return;
	if (l->immutable && (interp__read_u64(reader, nmethod + l->data, &base) ||
			     read_i32(reader, nmethod + l->data_len, &data_len) || data_len <= 0))
		return;
	if (read_i32(reader, nmethod + l->pcs, &begin) ||
	    read_i32(reader, nmethod + l->pcs_end, &end) || begin < 0 || end <= begin)
		return;
	/* 17: the scopes data, then the pc descriptors; 25: the descriptors, then the scopes
	 * data, within the immutable data.
	 */
	if (l->immutable) {
		scopes = base + (uint64_t)end;
		scopes_end = base + (uint64_t)data_len;
	} else {
		if (interp__read_u64(reader, nmethod + l->scopes, &scopes))
			return;
		scopes_end = nmethod + (uint64_t)begin;
	}
	if (scopes_end <= scopes)
		return;
	len = (size_t)(end - begin);
	if (len > NM_PCS_MAX)
		len = NM_PCS_MAX;
	len -= len % l->pcdesc_size;
	d->pcs = copy_out(reader, base + (uint64_t)begin, &len, l->pcdesc_size);
	if (!d->pcs)
		return;
	d->pcs_cnt = len / l->pcdesc_size;
	len = scopes_end - scopes > NM_SCOPES_MAX ? NM_SCOPES_MAX : (size_t)(scopes_end - scopes);
	d->scopes = copy_out(reader, scopes, &len, 1);
	if (!d->scopes) {
		nm_debug__free(d);
		return;
	}
	d->scopes_len = len;
	copy_metadata(reader, l, nmethod, scopes, d);
}

void nm_debug__free(struct nm_debug *d)
{
	free(d->pcs);
	free(d->scopes);
	free(d->metadata);
	memset(d, 0, sizeof(*d));
}

/* The scope decode offset of the descriptor at pos (exact) or the first after it; 0: none. */
static uint32_t find_scope(const struct nm_layout *l, const struct nm_debug *d, uint32_t pos,
			   bool exact)
{
	uint32_t best = UINT32_MAX, scope = 0, pc, so;
	size_t i;

	for (i = 0; i < d->pcs_cnt; i++) {
		const uint8_t *p = d->pcs + i * l->pcdesc_size;

		memcpy(&pc, p + l->pcdesc_pc, 4);
		memcpy(&so, p + l->pcdesc_scope, 4);
		if (!so || pc < pos || pc >= best || (exact && pc != pos))
			continue;
		best = pc;
		scope = so;
	}
	return scope;
}

/* Entry idx (1-based) of the metadata table; 0 when outside the copy. */
static uint64_t metadata_at(const struct nm_debug *d, uint32_t idx)
{
	return d->metadata && idx && idx <= d->metadata_cnt ? d->metadata[idx - 1] : 0;
}

int nm_debug__scopes(const struct nm_layout *l, const struct nm_debug *d, uint64_t method,
		     uint32_t pos, bool exact, struct nm_scope *out, int cap, int *dropped)
{
	uint32_t idx[NM_SCOPE_HOPS], bci[NM_SCOPE_HOPS], scope, sender;
	int n = 0, i, first;
	size_t at;

	*dropped = 0;
	if (cap < 1 || !(scope = find_scope(l, d, pos, exact)))
		return 0;
	/* The chain, innermost first, to the outermost scope (sender 0). */
	for (;;) {
		if (n == NM_SCOPE_HOPS || scope >= d->scopes_len)
			return 0;
		at = scope;
		if (hotspot_lines__unsigned5(d->scopes, d->scopes_len, &at, l->u5_excluded,
					     &sender) ||
		    hotspot_lines__unsigned5(d->scopes, d->scopes_len, &at, l->u5_excluded,
					     &idx[n]) ||
		    hotspot_lines__unsigned5(d->scopes, d->scopes_len, &at, l->u5_excluded,
					     &bci[n]))
			return 0;
		/* bci is stored plus one (InvocationEntryBci = -1: a method's entry) */
		bci[n] = bci[n] >= 1 && bci[n] - 1 < 0x10000 ? bci[n] - 1 : UINT32_MAX;
		n++;
		if (!sender)
			break;
		scope = sender;
	}
	/* The outermost scope must be the nmethod's own method: then the table and the memory
	 * are what we think, and the inner scopes' methods are read from it.
	 */
	first = n > cap ? n - cap : 0;
	if (n > 1 && metadata_at(d, idx[n - 1]) != method)
		first = n - 1;
	for (i = first; i < n - 1; i++) {
		out[i - first].method = metadata_at(d, idx[i]);
		out[i - first].bci = bci[i];
		if (!out[i - first].method) { /* unreadable: the outer scopes only */
			first = i + 1;
			i = first - 1;
		}
	}
	out[n - 1 - first] = (struct nm_scope){ .method = method, .bci = bci[n - 1] };
	*dropped = first;
	return n - first;
}
