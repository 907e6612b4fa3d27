/* LuaJIT call-site names (src/interp/luajit/luajit_callsite.c): a GCproto built here in memory
 * (GC64 and 32-bit reference layouts: header, bytecode, string constants, upvalue and variable
 * names) whose call instructions name a global, a field, a method, an upvalue, a local through
 * a MOV, a metamethod and a computed callee (none); then positions and images that must fail
 * cleanly: out of the function, truncated memory, random bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/luajit/luajit_callsite.h"
#include "test.h"

#define BASE 0x10000u
#define MEM_SZ 4096u

enum { MOV = 18, KSHORT = 41, UGET = 45, GGET = 54, TGETV = 56, TGETS = 57, CALL = 66, FUNCF = 89 };

struct image {
	uint8_t m[MEM_SZ];
	size_t limit; /* bytes readable from BASE */
};

static int read_image(void *ctx, uint64_t addr, void *buf, size_t size)
{
	const struct image *im = ctx;

	if (addr < BASE || addr - BASE > im->limit || size > im->limit - (addr - BASE))
		return -EFAULT;
	memcpy(buf, im->m + (addr - BASE), size);
	return 0;
}

static uint32_t ad(uint32_t op, uint32_t a, uint32_t d)
{
	return op | a << 8 | d << 16;
}

static uint32_t abc(uint32_t op, uint32_t a, uint32_t b, uint32_t c)
{
	return op | a << 8 | c << 16 | b << 24;
}

static void put_ref(const struct lj_callsite_layout *l, struct image *im, size_t at, uint64_t v)
{
	memcpy(im->m + at, &v, l->gc64 ? 8 : 4);
}

/* A GCstr at offset `at` holding s. */
static void put_str(const struct lj_callsite_layout *l, struct image *im, size_t at, const char *s)
{
	memcpy(im->m + at + l->str_data, s, strlen(s) + 1);
}

/* The proto at BASE: bc (n instructions), string constants 0.. (kgc[~i]), upvalue names "obj",
 * "M", variable "f" in slot 0 live over [0, n).
 */
static void build(const struct lj_callsite_layout *l, struct image *im, const uint32_t *bc,
		  uint32_t n)
{
	static const char *const kstr[] = { "beta", "alpha", "gamma" };
	static const uint8_t uv[] = "obj\0M";
	static const uint8_t var[] = { 'f', 0, 0, 60, 0 }; /* "f", start +0, length 60, end */
	size_t w = l->gc64 ? 8 : 4, k, uvat, varat, i, strat = 2048;
	uint32_t sizept;

	memset(im, 0, sizeof(*im));
	im->limit = MEM_SZ;
	memcpy(im->m + l->pt_size, bc, 4 * (size_t)n);
	k = l->pt_size + 4 * (size_t)n + 3 * w; /* three GC constants below k */
	for (i = 0; i < 3; i++) {
		put_ref(l, im, k - w * (i + 1), BASE + strat + 64 * i);
		put_str(l, im, strat + 64 * i, kstr[i]);
	}
	uvat = k + 16;
	memcpy(im->m + uvat, uv, sizeof(uv));
	varat = uvat + sizeof(uv);
	memcpy(im->m + varat, var, sizeof(var));
	sizept = (uint32_t)(varat + sizeof(var));
	memcpy(im->m + l->pt_sizebc, &n, 4);
	memcpy(im->m + l->pt_sizept, &sizept, 4);
	im->m[l->pt_sizeuv] = 2;
	put_ref(l, im, l->pt_k, BASE + k);
	put_ref(l, im, l->pt_uvinfo, BASE + uvat);
	put_ref(l, im, l->pt_varinfo, BASE + varat);
}

static int name_at(const struct lj_callsite_layout *l, struct image *im, uint32_t pos, char *out)
{
	return lj_callsite__name(l, read_image, im, BASE, pos, out, LJ_CALLSITE_NAME_MAX);
}

static void check_names(bool gc64)
{
	struct lj_callsite_layout l;
	struct image *im = calloc(1, sizeof(*im));
	char out[LJ_CALLSITE_NAME_MAX];
	uint32_t fr = gc64 ? 1 : 0;
	const uint32_t bc[] = {
		ad(FUNCF, 4, 0),     ad(GGET, 3, 1), /* 1: alpha */
		ad(CALL, 3, 1),                      /* 2: "alpha" */
		ad(UGET, 2, 0),                      /* 3: obj (upvalue 0) */
		ad(MOV, 4 + fr, 2),                  /* 4: self */
		abc(TGETS, 3, 2, 0),                 /* 5: obj.beta */
		ad(CALL, 3, 1),                      /* 6: "obj:beta" */
		ad(UGET, 2, 1),                      /* 7: M (upvalue 1) */
		abc(TGETS, 3, 2, 2),                 /* 8: M.gamma */
		ad(CALL, 3, 1),                      /* 9: "M.gamma" */
		ad(MOV, 3, 0),                       /* 10: f, local 0 */
		ad(CALL, 3, 1),                      /* 11: "f" */
		abc(TGETV, 3, 2, 1),                 /* 12: computed */
		ad(CALL, 3, 1),                      /* 13: none */
		ad(KSHORT, 3, 7),                    /* 14: a constant */
		ad(CALL, 3, 1),                      /* 15: none */
		ad(UGET, 3, 1),                      /* 16: M */
		ad(CALL, 3, 1),                      /* 17: "M" (an upvalue) */
	};
	uint32_t n = sizeof(bc) / sizeof(bc[0]);

	REQUIRE(im);
	lj_callsite_layout__init(&l, gc64);
	build(&l, im, bc, n);
	CHECK_EQ_INT(name_at(&l, im, 2, out), 0);
	CHECK_STR(out, "alpha");
	CHECK_EQ_INT(name_at(&l, im, 6, out), 0);
	CHECK_STR(out, "obj:beta");
	CHECK_EQ_INT(name_at(&l, im, 9, out), 0);
	CHECK_STR(out, "M.gamma");
	CHECK_EQ_INT(name_at(&l, im, 11, out), 0);
	CHECK_STR(out, "f");
	CHECK_EQ_INT(name_at(&l, im, 13, out), -ENOENT);
	CHECK_STR(out, "");
	CHECK_EQ_INT(name_at(&l, im, 15, out), -ENOENT);
	CHECK_EQ_INT(name_at(&l, im, 17, out), 0);
	CHECK_STR(out, "M");
	CHECK_EQ_INT(name_at(&l, im, 5, out), 0); /* TGETS runs __index */
	CHECK_STR(out, "__index");
	CHECK_EQ_INT(name_at(&l, im, 3, out), -ENOENT); /* UGET runs nothing */
	CHECK_EQ_INT(name_at(&l, im, 0, out), -EINVAL);
	CHECK_EQ_INT(name_at(&l, im, n, out), -EINVAL);
	/* the strings unreadable: no name, no read past the image */
	im->limit = 2048;
	CHECK_EQ_INT(name_at(&l, im, 2, out), -ENOENT);
	CHECK_EQ_INT(name_at(&l, im, 11, out), 0); /* a local needs no string constant */
	im->limit = 16;
	CHECK_EQ_INT(name_at(&l, im, 2, out), -EFAULT);
	free(im);
}

TEST(gc64)
{
	check_names(true);
}

TEST(gc32)
{
	check_names(false);
}

/* Random bytecode and debug info over a valid header: never out of bounds (ASan), any result. */
TEST(random)
{
	struct lj_callsite_layout l;
	struct image *im = calloc(1, sizeof(*im));
	char out[LJ_CALLSITE_NAME_MAX];
	uint32_t bc[64], i, r, n = 64;

	REQUIRE(im);
	srand(31);
	for (r = 0; r < 500; r++) {
		lj_callsite_layout__init(&l, r & 1);
		for (i = 0; i < n; i++)
			bc[i] = (uint32_t)rand() << 1 ^ (uint32_t)rand();
		build(&l, im, bc, n);
		for (i = l.pt_size + 4 * n; i < 2048; i++)
			if (rand() % 4 == 0)
				im->m[i] = (uint8_t)rand();
		out[0] = 'x';
		(void)name_at(&l, im, 1 + (uint32_t)rand() % (n - 1), out);
		CHECK(memchr(out, 0, sizeof(out)) != NULL);
	}
	free(im);
}

int main(void)
{
	RUN(gc64);
	RUN(gc32);
	RUN(random);
	return test_summary();
}
