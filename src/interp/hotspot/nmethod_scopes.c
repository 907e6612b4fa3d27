/* Compiled Java code's pc descriptors, scopes and metadata. See nmethod_scopes.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interp/hotspot/hotspot_lines.h"
#include "interp/hotspot/nmethod_scopes.h"
#include "interp/hotspot/vmstructs.h"
#include "interp/interp.h"

#define NM_SCOPE_READ 16        /* bytes read per scope: three UNSIGNED5 numbers fit in 15 */
#define NM_METADATA_MAX 0x10000 /* entries of a metadata table */

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

/* The metadata table of nmethod (its scopes data at scopes, 17's table end) into d. */
static void locate_metadata(pid_t reader, const struct nm_layout *l, uint64_t nmethod,
			    struct nm_debug *d)
{
	uint64_t begin, end, mutable_data;
	int32_t off, len;

	switch (l->metadata_at) {
	case NM_METADATA_OFFSET: /* [nmethod + _metadata_offset, scopes data) */
		if (read_i32(reader, nmethod + l->meta_off, &off) || off <= 0)
			return;
		begin = nmethod + (uint64_t)off;
		end = d->scopes;
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
	if (end <= begin || (end - begin) / 8 > NM_METADATA_MAX)
		return;
	d->metadata = begin;
	d->metadata_cnt = (uint32_t)((end - begin) / 8);
}

void nm_debug__read(pid_t reader, const struct nm_layout *l, uint64_t nmethod, struct nm_debug *d)
{
	uint64_t base = nmethod, scopes;
	int32_t begin = 0, end = 0;
	size_t len;

	memset(d, 0, sizeof(*d));
	if (!l->found)
		return;
	if (l->immutable && interp__read_u64(reader, nmethod + l->data, &base))
		return;
	if (read_i32(reader, nmethod + l->pcs, &begin) ||
	    read_i32(reader, nmethod + l->pcs_end, &end) || begin < 0 || end <= begin)
		return;
	if (l->immutable)
		scopes = base + (uint64_t)end;
	else if (interp__read_u64(reader, nmethod + l->scopes, &scopes))
		return;
	len = (size_t)(end - begin);
	if (len > NM_PCS_MAX)
		len = NM_PCS_MAX - NM_PCS_MAX % l->pcdesc_size;
	d->pcs = malloc(len);
	if (!d->pcs)
		return;
	if (interp__read_mem(reader, base + (uint64_t)begin, d->pcs, len)) {
		nm_debug__free(d);
		return;
	}
	d->pcs_cnt = len / l->pcdesc_size;
	d->scopes = scopes;
	locate_metadata(reader, l, nmethod, d);
}

void nm_debug__free(struct nm_debug *d)
{
	free(d->pcs);
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

/* Entry idx (1-based) of the metadata table; 0 when out of the table or unreadable. */
static uint64_t metadata_at(pid_t reader, const struct nm_debug *d, uint32_t idx)
{
	uint64_t v;

	if (!d->metadata || !idx || idx > d->metadata_cnt ||
	    interp__read_u64(reader, d->metadata + 8 * (uint64_t)(idx - 1), &v))
		return 0;
	return v;
}

int nm_debug__scopes(pid_t reader, const struct nm_layout *l, const struct nm_debug *d,
		     uint64_t method, uint32_t pos, bool exact, struct nm_scope *out, int cap,
		     int *dropped)
{
	uint32_t idx[NM_SCOPE_HOPS], bci[NM_SCOPE_HOPS], scope, sender;
	uint8_t buf[NM_SCOPE_READ];
	int n = 0, i, first;
	size_t at;

	*dropped = 0;
	if (cap < 1 || !(scope = find_scope(l, d, pos, exact)))
		return 0;
	/* The chain, innermost first, to the outermost scope (sender 0). */
	for (;;) {
		if (n == NM_SCOPE_HOPS ||
		    interp__read_mem(reader, d->scopes + scope, buf, sizeof(buf)))
			return 0;
		at = 0;
		if (hotspot_lines__unsigned5(buf, sizeof(buf), &at, l->u5_excluded, &sender) ||
		    hotspot_lines__unsigned5(buf, sizeof(buf), &at, l->u5_excluded, &idx[n]) ||
		    hotspot_lines__unsigned5(buf, sizeof(buf), &at, l->u5_excluded, &bci[n]))
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
	if (n > 1 && metadata_at(reader, d, idx[n - 1]) != method)
		first = n - 1;
	for (i = first; i < n - 1; i++) {
		out[i - first].method = metadata_at(reader, d, idx[i]);
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
