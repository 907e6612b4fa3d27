/* Compiled Java code's debug information, copied out of a JVM's memory once per nmethod: the
 * pc descriptors, scopes data and metadata table of one nmethod (C1/C2 code), which give the
 * methods and bytecode indexes a pc of that code stands for, the methods the compiler inlined
 * there included. Decoding works on the copies: no reads per frame, and frames of a JVM that
 * has exited keep their lines and inlined frames once their nmethod was read.
 *
 * A PcDesc (pc offset, scope decode offset, ...) names a scope in the scopes data; a scope
 * starts with three UNSIGNED5 numbers: its sender scope's offset (0: the outermost scope, the
 * nmethod's own method), its method's index in the nmethod's metadata table (1-based), its bci
 * plus one. Scopes inside the outermost one are inlined methods. Where the tables live moved
 * between releases, all found through the JVM's own tables (vmstructs.h):
 *  - 17: pc descriptors at nmethod + _scopes_pcs_offset up to _dependencies_offset, scopes
 *    data from CompiledMethod::_scopes_data_begin up to the pc descriptors, metadata at
 *    nmethod + _metadata_offset up to the scopes data;
 *  - 25: pc descriptors and scopes data in the immutable data (nmethod::_immutable_data +
 *    _scopes_pcs_offset, + _scopes_data_offset, up to _immutable_data_size), metadata in the
 *    mutable data after the relocations (CodeBlob::_mutable_data + _relocation_size, up to
 *    _mutable_data_size).
 *
 * Invariants: every copy is bounded (NM_PCS_MAX bytes of descriptors, NM_SCOPES_MAX of scopes
 * data, NM_METADATA_MAX entries of metadata), decoding stays inside the copies and follows at
 * most NM_SCOPE_HOPS scopes; a scope outside the copy ends the chain (nothing shown), a
 * metadata index outside it drops that scope and the ones inside it. Inlined methods are shown
 * only when the chain's outermost scope names the nmethod's own Method* through the metadata
 * table (a check of the layout and of the memory at that moment); otherwise only the
 * outermost bci is given and the inner scopes are counted as dropped.
 */
#ifndef STACKSCOPE_HOTSPOT_NMETHOD_SCOPES_H
#define STACKSCOPE_HOTSPOT_NMETHOD_SCOPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NM_PCS_MAX 16384     /* bytes of an nmethod's pc descriptors */
#define NM_SCOPES_MAX 16384  /* bytes of its scopes data */
#define NM_METADATA_MAX 1024 /* entries of its metadata table */
#define NM_SCOPE_HOPS 64     /* scopes followed from a pc descriptor to the outermost */

struct vmstructs;

enum nm_metadata_at {
	NM_METADATA_NONE = 0, /* not found: no inlined methods */
	NM_METADATA_OFFSET,   /* nmethod + *(int *)(nmethod + meta_off) (17) */
	NM_METADATA_MUTABLE,  /* *(nmethod + mutable_data) + *(int *)(nmethod + reloc_size) (25) */
};

/* Where one libjvm's nmethods keep their debug information. */
struct nm_layout {
	bool found;        /* pc descriptors and scopes data located (lines of compiled frames) */
	bool immutable;    /* offsets relative to *(nmethod + data) (25) */
	uint64_t data;     /* nmethod::_immutable_data (25) */
	uint64_t data_len; /* nmethod::_immutable_data_size (25) */
	uint64_t pcs, pcs_end; /* int offsets: PcDesc array [begin, end) */
	uint64_t scopes;       /* int offset (25) or pointer (17) of the scopes data */
	uint64_t pcdesc_size, pcdesc_pc, pcdesc_scope;
	enum nm_metadata_at metadata_at;
	uint64_t meta_off;                  /* 17: nmethod::_metadata_offset */
	uint64_t mutable_data, mutable_len; /* 25: CodeBlob::_mutable_data, _mutable_data_size */
	uint64_t reloc_size;                /* 25: CodeBlob::_relocation_size */
	unsigned u5_excluded;               /* UNSIGNED5 as changed in JDK 20 */
};

/* One nmethod's debug information, copied. */
struct nm_debug {
	uint8_t *pcs; /* pcs_cnt descriptors of layout.pcdesc_size bytes */
	size_t pcs_cnt;
	uint8_t *scopes; /* scopes_len bytes of its scopes data */
	size_t scopes_len;
	uint64_t *metadata; /* metadata_cnt entries of its metadata table (NULL: unknown) */
	uint32_t metadata_cnt;
};

/* One scope of a pc: a method and the bytecode index in it. */
struct nm_scope {
	uint64_t method; /* Method* */
	uint32_t bci;
};

/* Fill l from the tables (l->found false when they lack the descriptors). */
void nm_layout__from(const struct vmstructs *vs, unsigned u5_excluded, struct nm_layout *l);

/* Copy nmethod's descriptors, scopes data and metadata table out of process reader; d is left
 * empty (no lines) when the layout or the memory does not give them (without the metadata: no
 * inlined frames).
 */
void nm_debug__read(pid_t reader, const struct nm_layout *l, uint64_t nmethod, struct nm_debug *d);
void nm_debug__free(struct nm_debug *d);

/* The scopes at pc offset pos of the nmethod whose Method* is method, innermost first, into
 * out[cap] (cap >= 1); the last is the outermost (out[n - 1].method == method). exact: pos is a
 * return address, whose own descriptor is required; else (a sampled pc) the first descriptor
 * at or after pos, as HotSpot's own stack walks do. Returns how many (0: no descriptor or
 * unreadable scopes); *dropped: inlined scopes not shown (the metadata check failed, or more
 * than cap).
 */
int nm_debug__scopes(const struct nm_layout *l, const struct nm_debug *d, uint64_t method,
		     uint32_t pos, bool exact, struct nm_scope *out, int cap, int *dropped);

#endif
