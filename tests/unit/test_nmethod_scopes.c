/* Compiled Java code's scopes (src/interp/hotspot/nmethod_scopes.c): pc descriptors, scopes
 * data and a metadata table written here by hand after HotSpot's encoding (UNSIGNED5 numbers
 * below 192 are one byte in the JDK 17 encoding), as nm_debug__read copies them out of a JVM.
 * Checks the inlining chain's order, the exact descriptor at a return address, the
 * outermost-method check, the caps, a looping chain and scopes outside the copy. Real JVMs:
 * tests/system/test_jvm.sh.
 */
#include <stdint.h>
#include <string.h>

#include "interp/hotspot/nmethod_scopes.h"
#include "test.h"

#define M_OUTER 0x1000 /* the nmethod's own Method* */
#define M_MID 0x2000   /* inlined into it */
#define M_INNER 0x3000 /* inlined into M_MID */

/* Scopes at offsets 10 (outermost: method 1, bci 5), 20 (method 2, bci 2, sender 10) and
 * 30 (method 3, bci 0, sender 20); each is sender, metadata index, bci + 1. Offset 40 is its
 * own sender (hostile).
 */
static uint8_t scopes[48];
static uint64_t metadata[3] = { M_OUTER, M_MID, M_INNER };
static struct {
	int32_t pc, scope, obj, flags;
} pcs[4] = { { 0x10, 10, 0, 0 }, { 0x40, 30, 0, 0 }, { 0x80, 20, 0, 0 }, { 0x90, 40, 0, 0 } };

static const struct nm_layout layout = {
	.found = true, .pcdesc_size = 16, .pcdesc_pc = 0, .pcdesc_scope = 4, .u5_excluded = 0
};

static struct nm_debug debug_info(void)
{
	static const uint8_t s10[] = { 0, 1, 6 }, s20[] = { 10, 2, 3 }, s30[] = { 20, 3, 1 };
	static const uint8_t s40[] = { 40, 1, 1 };

	memcpy(scopes + 10, s10, 3);
	memcpy(scopes + 20, s20, 3);
	memcpy(scopes + 30, s30, 3);
	memcpy(scopes + 40, s40, 3);
	return (struct nm_debug){ .pcs = (uint8_t *)pcs,
				  .pcs_cnt = 4,
				  .scopes = scopes,
				  .scopes_len = sizeof(scopes),
				  .metadata = metadata,
				  .metadata_cnt = 3 };
}

TEST(inlining_chain)
{
	struct nm_debug d = debug_info();
	struct nm_scope sc[8];
	int n, dropped;

	/* A return address with its own descriptor: innermost first, the nmethod's own last. */
	n = nm_debug__scopes(&layout, &d, M_OUTER, 0x40, true, sc, 8, &dropped);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(dropped, 0);
	CHECK_EQ_U64(sc[0].method, M_INNER);
	CHECK_EQ_INT(sc[0].bci, 0);
	CHECK_EQ_U64(sc[1].method, M_MID);
	CHECK_EQ_INT(sc[1].bci, 2);
	CHECK_EQ_U64(sc[2].method, M_OUTER);
	CHECK_EQ_INT(sc[2].bci, 5);
	/* A return address without a descriptor of its own: nothing. */
	CHECK_EQ_INT(nm_debug__scopes(&layout, &d, M_OUTER, 0x41, true, sc, 8, &dropped), 0);
	/* A sampled pc: the first descriptor at or after it (0x80: two scopes). */
	n = nm_debug__scopes(&layout, &d, M_OUTER, 0x41, false, sc, 8, &dropped);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_U64(sc[0].method, M_MID);
	CHECK_EQ_U64(sc[1].method, M_OUTER);
	/* Past the last descriptor that has a scope chain ending: nothing. */
	CHECK_EQ_INT(nm_debug__scopes(&layout, &d, M_OUTER, 0x91, false, sc, 8, &dropped), 0);
}

TEST(refused_and_capped)
{
	struct nm_debug d = debug_info();
	struct nm_scope sc[8];
	int n, dropped;

	/* The outermost scope is not the nmethod's method (memory reused, a misread layout):
	 * only its own frame, at the outermost bci; the inner scopes are counted.
	 */
	n = nm_debug__scopes(&layout, &d, 0x9999, 0x40, true, sc, 8, &dropped);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(dropped, 2);
	CHECK_EQ_U64(sc[0].method, 0x9999);
	CHECK_EQ_INT(sc[0].bci, 5);
	/* At most cap scopes: the outer ones are kept (they connect to the caller). */
	n = nm_debug__scopes(&layout, &d, M_OUTER, 0x40, true, sc, 2, &dropped);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(dropped, 1);
	CHECK_EQ_U64(sc[0].method, M_MID);
	CHECK_EQ_U64(sc[1].method, M_OUTER);
	/* A metadata index outside the table: that scope and the ones inside it dropped. */
	d.metadata_cnt = 2;
	n = nm_debug__scopes(&layout, &d, M_OUTER, 0x40, true, sc, 8, &dropped);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(dropped, 1);
	CHECK_EQ_U64(sc[0].method, M_MID);
	/* No metadata table at all: the frame's own method and line only. */
	d.metadata = NULL;
	n = nm_debug__scopes(&layout, &d, M_OUTER, 0x40, true, sc, 8, &dropped);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(dropped, 2);
	/* A scope that is its own sender: cut after NM_SCOPE_HOPS, nothing shown. */
	d = debug_info();
	CHECK_EQ_INT(nm_debug__scopes(&layout, &d, M_OUTER, 0x90, true, sc, 8, &dropped), 0);
	/* Scopes data cut short (a copy of fewer bytes): a chain reaching past it shows nothing. */
	d.scopes_len = 25;
	CHECK_EQ_INT(nm_debug__scopes(&layout, &d, M_OUTER, 0x40, true, sc, 8, &dropped), 0);
	n = nm_debug__scopes(&layout, &d, M_OUTER, 0x10, true, sc, 8, &dropped);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_U64(sc[0].method, M_OUTER);
}

int main(void)
{
	RUN(inlining_chain);
	RUN(refused_and_capped);
	return test_summary();
}
