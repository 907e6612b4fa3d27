/* Tests of the Go pclntab reader (src/formats/gopclntab.c) against the Go toolchain on real
 * binaries built from tests/data/wl_go.go (tests/data/go.mk):
 *  - every instruction `go tool objdump` lists (of the unstripped build, same .text): its
 *    function and its innermost file and line;
 *  - every function's first and last instruction through `go tool addr2line` on the stripped
 *    build: function, full file path, line;
 *  - the inlined main.churn inside main.gamma expands to [churn at its loop, gamma at the call];
 *  - the pcsp tables of every function cover it, the frameless leaf main.gamma has delta 0;
 *  - esbuild from npm (Go 1.26: the 1.20+ format), when it could be fetched: every function
 *    named, every pcsp table whole, lines for >= 99% of function entries, inlined frames.
 * The fixtures are built by whichever Go go.mk found (Debian 12's 1.19, or another with
 * GO=...; tests/system/test_go.sh runs this test on fixtures of Go 1.15 and of the host's Go):
 * the table's format is checked against the version the binary carries.
 *  - a hand-made Go 1.2-format table (Go 1.2-1.15: no toolchain that old is here at `make
 *    test` time): names, files, lines, an inlined call, stack deltas, derived flags, and
 *    hostile variants of it.
 * 0 mismatches allowed.
 */
#include <elf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "formats/elf_file.h"
#include "formats/go_build_id.h"
#include "formats/gopclntab.h"
#include "test.h"
#include "unwind/unwind_table.h"

struct go_fixture {
	struct elf_file *ef;
	struct gopclntab *t;
};

static void fixture_close(struct go_fixture *fx)
{
	gopclntab__free(fx->t);
	elf_file__free(fx->ef);
}

static bool fixture_open(const char *name, struct go_fixture *fx)
{
	fx->ef = elf_file__open(test_fixture(name));
	fx->t = fx->ef ? gopclntab__open(fx->ef) : NULL;
	if (!fx->t) {
		fixture_close(fx);
		return false;
	}
	return true;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* The line of tests/data/wl_go.go that carries marker. */
static int source_line(const char *marker)
{
	FILE *f = fopen("tests/data/wl_go.go", "r");
	char buf[512];
	int n = 0, found = 0;

	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f)) {
		n++;
		if (strstr(buf, marker)) {
			found = n;
			break;
		}
	}
	fclose(f);
	return found;
}

/* Whether the pclntab's position (file, line) is the toolchain's: file and line, or (the
 * toolchain's ":-1": Go 1.24+'s go:textfipsstart/end markers, padding) none.
 */
static bool same_pos(const struct go_frame *fr, const char *file, const char *line, bool base)
{
	if (!*file && !strcmp(line, "-1"))
		return !fr->file && !fr->line;
	return fr->file && !strcmp(base ? base_name(fr->file) : fr->file, file) &&
	       fr->line == strtoul(line, NULL, 10);
}

/* Whether a pclntab name equals a symbol name; the linker writes type arguments in the
 * table as "[...]" (what the Go runtime prints), the symbol table spells them out.
 */
static bool same_func(const char *pcln, const char *sym)
{
	while (*pcln && *sym) {
		if (!strncmp(pcln, "[...]", 5) && *sym == '[') {
			int depth = 0;

			do {
				depth += *sym == '[' ? 1 : *sym == ']' ? -1 : 0;
				sym++;
			} while (*sym && depth);
			pcln += 5;
			continue;
		}
		/* Go 1.26's symbol table writes the middle dot of the table's names ("eq·7") as '.' */
		if (!strncmp(pcln, "\xc2\xb7", 2) && *sym == '.') {
			pcln += 2;
			sym++;
			continue;
		}
		if (*pcln++ != *sym++)
			return false;
	}
	return !*pcln && !*sym;
}

/* The Go minor version a binary carries: the build info's inline version string (1.18+), or
 * (1.13-1.17) the string runtime.buildVersion its first pointer leads to; -1 if neither.
 */
static int go_minor_of(struct elf_file *ef)
{
	struct elf_section bi;
	const uint8_t *p;
	const void *data;
	const char *v = NULL;
	size_t avail, len = 0, i;
	uint64_t addr, hdr[2];
	int minor = 0;

	if (elf_file__section(ef, ".go.buildinfo", &bi) || !bi.data || bi.size < 32)
		return -1;
	p = bi.data;
	if (p[15] & 2) {
		if (bi.size < 33)
			return -1;
		len = p[32];
		v = (const char *)p + 33;
		if (len & 0x80 || len > bi.size - 33)
			return -1;
	} else if (p[14] == 8) {
		memcpy(&addr, p + 16, 8);
		if (elf_file__bytes_at_vaddr(ef, addr, &data, &avail) || avail < sizeof(hdr))
			return -1;
		memcpy(hdr, data, sizeof(hdr));
		if (elf_file__bytes_at_vaddr(ef, hdr[0], &data, &avail) || avail < hdr[1])
			return -1;
		v = data;
		len = (size_t)hdr[1];
	}
	if (!v || len < 5 || strncmp(v, "go1.", 4))
		return -1;
	for (i = 4; i < len && v[i] >= '0' && v[i] <= '9' && minor < 1000; i++)
		minor = minor * 10 + (v[i] - '0');
	return i > 4 ? minor : -1;
}

/* The table format Go 1.<minor> writes. */
static int format_of_minor(int minor)
{
	return minor >= 20 ? GOPCLNTAB_V120 : minor >= 18 ? GOPCLNTAB_V118 : GOPCLNTAB_V12;
}

static void need_go_fixtures(void)
{
	if (access(test_fixture("wl_go.objdump"), R_OK) || access(test_fixture("wl_go"), R_OK))
		SKIP_SETUP("no Go fixtures (golang-go missing?)");
}

TEST(objdump_every_instruction)
{
	struct go_fixture fx;
	char line[1024], func[512] = "";
	size_t checked = 0, mismatches = 0, funcs = 0;
	int minor;
	FILE *f;

	need_go_fixtures();
	REQUIRE(fixture_open("wl_go", &fx));
	minor = go_minor_of(fx.ef);
	printf("  Go 1.%d\n", minor);
	REQUIRE(minor >= 0);
	CHECK_EQ_INT(gopclntab__version(fx.t), format_of_minor(minor));
	CHECK(gopclntab__has_inline(fx.t));
	f = fopen(test_fixture("wl_go.objdump"), "r");
	REQUIRE(f);
	while (fgets(line, sizeof(line), f)) {
		char pos[512], *colon;
		unsigned long long addr;
		struct go_frame fr[GO_MAX_FRAMES];
		int n;

		if (!strncmp(line, "TEXT ", 5) && strstr(line, "(SB)")) {
			size_t len = (size_t)(strstr(line, "(SB)") - line) - 5;

			if (len >= sizeof(func))
				len = sizeof(func) - 1;
			memcpy(func, line + 5, len);
			func[len] = '\0';

			/* objdump names assembly functions by their ABI0 symbol */
			if (len > 5 && !strcmp(func + len - 5, ".abi0"))
				func[len - 5] = '\0';
			funcs++;
			continue;
		}
		if (sscanf(line, " %511s 0x%llx", pos, &addr) != 2 || !(colon = strrchr(pos, ':')))
			continue;
		*colon = '\0';
		n = gopclntab__lookup(fx.t, addr, fr, GO_MAX_FRAMES);
		checked++;
		if (n < 1 || !same_func(fr[n - 1].function, func) ||
		    !same_pos(&fr[0], pos, colon + 1, true)) {
			if (mismatches++ < 10)
				test__fail("0x%llx: objdump %s %s:%s, pclntab (%d) %s %s:%u", addr,
					   func, pos, colon + 1, n,
					   n > 0 ? fr[n - 1].function : "-",
					   n > 0 && fr[0].file ? fr[0].file : "-",
					   n > 0 ? fr[0].line : 0);
		}
	}
	fclose(f);
	printf("  %zu instructions of %zu functions, %zu mismatches\n", checked, funcs, mismatches);
	CHECK_EQ_INT(mismatches, 0);
	CHECK(checked > 50000);
	CHECK_EQ_INT(funcs, gopclntab__func_cnt(fx.t));
	fixture_close(&fx);
}

/* Compares each line of an addr2line oracle ("addr<TAB>function<TAB>file:line": the physical
 * function, the innermost position; "?:0" for a pc without one) with the table's answer;
 * counts the lines and those inside an inlined call. Returns the mismatches.
 */
static size_t addr2line_mismatches(const struct gopclntab *t, const char *oracle, size_t *checked,
				   size_t *inlined)
{
	char line[2048];
	size_t mismatches = 0;
	FILE *f = fopen(test_fixture(oracle), "r");

	*checked = *inlined = 0;
	if (!f) {
		test__fail("%s: %s", oracle, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		char func[512], file[1024], *colon;
		unsigned long long addr;
		struct go_frame fr[GO_MAX_FRAMES];
		bool pos;
		int n;

		if (sscanf(line, "0x%llx\t%511[^\t]\t%1023[^\n]", &addr, func, file) != 3 ||
		    !(colon = strrchr(file, ':')))
			continue;
		*colon = '\0';
		n = gopclntab__lookup(t, addr, fr, GO_MAX_FRAMES);
		(*checked)++;
		*inlined += n >= 2;
		pos = n >= 1 && (strcmp(file, "?") ? same_pos(&fr[0], file, colon + 1, false)
						   : !fr[0].file && !fr[0].line);
		if (n < 1 || strcmp(fr[n - 1].function, func) || !pos) {
			if (mismatches++ < 10)
				test__fail("%s 0x%llx: addr2line %s %s:%s, pclntab %s %s:%u",
					   oracle, addr, func, file, colon + 1,
					   n > 0 ? fr[n - 1].function : "-",
					   n > 0 && fr[0].file ? fr[0].file : "-",
					   n > 0 ? fr[0].line : 0);
		}
	}
	fclose(f);
	return mismatches;
}

TEST(addr2line_every_function)
{
	struct go_fixture fx;
	size_t checked, inlined, mismatches;

	need_go_fixtures();
	REQUIRE(fixture_open("wl_go", &fx));
	mismatches = addr2line_mismatches(fx.t, "wl_go.addr2line", &checked, &inlined);
	printf("  %zu addresses, %zu mismatches\n", checked, mismatches);
	CHECK_EQ_INT(mismatches, 0);
	CHECK(checked >= 2 * gopclntab__func_cnt(fx.t) - 16); /* one-instruction functions */
	fixture_close(&fx);
}

static long func_named(const struct gopclntab *t, const char *name, struct go_func *out)
{
	size_t i;

	for (i = 0; i < gopclntab__func_cnt(t); i++)
		if (!gopclntab__func(t, i, out) && out->name && !strcmp(out->name, name))
			return (long)i;
	return -1;
}

/* Functions with an inlined call in their first 256 bytes; *bad counts the inlined frames
 * without a name, file or line.
 */
static size_t count_inlined(const struct gopclntab *t, size_t *bad)
{
	size_t i, k, with = 0;

	for (i = 0; i < gopclntab__func_cnt(t); i++) {
		struct go_frame fr[GO_MAX_FRAMES];
		struct go_func gf;
		uint64_t pc;
		int n;

		if (gopclntab__func(t, i, &gf))
			continue;
		for (pc = gf.entry; pc < gf.end && pc < gf.entry + 256; pc++) {
			n = gopclntab__lookup(t, pc, fr, GO_MAX_FRAMES);
			if (n < 2)
				continue;
			for (k = 0; k + 1 < (size_t)n; k++)
				if (!strcmp(fr[k].function, "?") || !strchr(fr[k].function, '.') ||
				    !fr[k].file || !fr[k].line) {
					if ((*bad)++ < 5)
						printf("  0x%llx: inlined frame %zu of %d: %s %s:%u\n",
						       (unsigned long long)pc, k, n, fr[k].function,
						       fr[k].file ? fr[k].file : "-", fr[k].line);
				}
			with++;
			break;
		}
	}
	return with;
}

TEST(inlined_call_expanded)
{
	int churn_line = source_line("// CHURN_LOOP"),
	    call_line = source_line("// GAMMA_CALLS_CHURN");
	struct go_fixture fx;
	struct go_func gf;
	uint64_t pc;
	size_t hits = 0;

	need_go_fixtures();
	REQUIRE(churn_line > 0 && call_line > 0);
	REQUIRE(fixture_open("wl_go", &fx));
	if (go_minor_of(fx.ef) < 16) {
		/* Go's inliner took functions with loops from 1.16: churn is a call of its own;
		 * the runtime's inlined calls are checked instead.
		 */
		size_t bad = 0, with = count_inlined(fx.t, &bad);

		printf("  churn not inlined (Go 1.%d): %zu functions with inlined calls\n",
		       go_minor_of(fx.ef), with);
		CHECK(func_named(fx.t, "main.churn", &gf) >= 0);
		CHECK(with > gopclntab__func_cnt(fx.t) / 20);
		CHECK_EQ_INT(bad, 0);
		fixture_close(&fx);
		return;
	}
	REQUIRE(func_named(fx.t, "main.gamma", &gf) >= 0);
	CHECK(func_named(fx.t, "main.(*Server).handle", &gf) >= 0);
	REQUIRE(func_named(fx.t, "main.gamma", &gf) >= 0);
	for (pc = gf.entry; pc < gf.end; pc++) {
		struct go_frame fr[GO_MAX_FRAMES];
		int n = gopclntab__lookup(fx.t, pc, fr, GO_MAX_FRAMES);

		REQUIRE(n >= 1);
		CHECK_STR(fr[n - 1].function, "main.gamma");
		if (fr[0].line != (uint32_t)churn_line)
			continue;
		hits++;
		CHECK_EQ_INT(n, 2);
		CHECK_STR(fr[0].function, "main.churn");
		CHECK_STR(base_name(fr[1].file), "wl_go.go");
		CHECK_EQ_INT(fr[1].line, call_line);
	}
	CHECK(hits > 0);
	fixture_close(&fx);
}

struct sp_walk {
	uint64_t next;
	int32_t max;
	size_t runs;
};

static int on_sp(void *ctx, uint64_t start, uint64_t end, int32_t delta)
{
	struct sp_walk *w = ctx;

	/* -8: the return address popped (syscall.rawVforkSyscall) */
	if (start != w->next || end <= start || delta < -8 || delta % 8)
		return -EINVAL;
	w->next = end;
	if (delta > w->max)
		w->max = delta;
	w->runs++;
	return 0;
}

/* Every function's pcsp table covers it exactly with sane deltas; returns the failures. */
static size_t check_sp_tables(const struct gopclntab *t, size_t *no_table)
{
	size_t i, bad = 0;

	*no_table = 0;
	for (i = 0; i < gopclntab__func_cnt(t); i++) {
		struct go_func gf;
		struct sp_walk w = { 0 };
		int err;

		if (gopclntab__func(t, i, &gf)) {
			bad++;
			continue;
		}
		w.next = gf.entry;
		err = gopclntab__sp_deltas(t, i, on_sp, &w);
		if (err == -ENOENT) {
			(*no_table)++;
			continue;
		}
		/* the table ends with the code; the rest is alignment padding */
		if (err || w.next > gf.end || w.next + 64 < gf.end) {
			if (bad++ < 5)
				printf("  pcsp of %s: %d, covers up to 0x%llx of 0x%llx\n", gf.name,
				       err, (unsigned long long)w.next, (unsigned long long)gf.end);
		}
	}
	return bad;
}

TEST(sp_deltas)
{
	struct go_fixture fx;
	struct go_func gf;
	struct sp_walk w = { 0 };
	const char *leaf;
	size_t no_table;
	long idx;

	need_go_fixtures();
	REQUIRE(fixture_open("wl_go", &fx));
	CHECK_EQ_INT(check_sp_tables(fx.t, &no_table), 0);
	printf("  %zu functions without a pcsp table\n", no_table);
	/* the frameless leaf: gamma, or before Go 1.16 (no inlined loops) churn, gamma's callee */
	leaf = go_minor_of(fx.ef) < 16 ? "main.churn" : "main.gamma";
	idx = func_named(fx.t, leaf, &gf);
	REQUIRE(idx >= 0);
	w.next = gf.entry;
	CHECK_EQ_INT(gopclntab__sp_deltas(fx.t, (size_t)idx, on_sp, &w), 0);
	CHECK_EQ_INT(w.max, 0);
	idx = func_named(fx.t, "main.beta", &gf);
	REQUIRE(idx >= 0);
	w = (struct sp_walk){ .next = gf.entry };
	CHECK_EQ_INT(gopclntab__sp_deltas(fx.t, (size_t)idx, on_sp, &w), 0);
	CHECK(w.max > 0);
	fixture_close(&fx);
}

TEST(esbuild_go120_format)
{
	struct go_fixture fx;
	size_t i, cnt, named = 0, lines = 0, inlined = 0, no_table;

	if (access(test_fixture("esbuild"), R_OK))
		SKIP("no esbuild (npm pack @esbuild/linux-x64 failed: no registry?)");
	REQUIRE(fixture_open("esbuild", &fx));
	CHECK_EQ_INT(gopclntab__version(fx.t), GOPCLNTAB_V120);
	CHECK(gopclntab__has_inline(fx.t));
	cnt = gopclntab__func_cnt(fx.t);
	CHECK(cnt > 5000);
	for (i = 0; i < cnt; i++) {
		struct go_frame fr[GO_MAX_FRAMES];
		struct go_func gf;
		uint64_t pc;
		int n;

		if (gopclntab__func(fx.t, i, &gf) || !gf.name)
			continue;
		named++;
		n = gopclntab__lookup(fx.t, gf.entry, fr, GO_MAX_FRAMES);
		if (n >= 1 && fr[0].file && fr[0].line && !strcmp(fr[n - 1].function, gf.name))
			lines++;
		for (pc = gf.entry; pc < gf.end && pc < gf.entry + 256; pc += 4) {
			n = gopclntab__lookup(fx.t, pc, fr, GO_MAX_FRAMES);
			if (n >= 2) {
				inlined++;
				break;
			}
		}
	}
	printf("  %zu functions: %zu named, %zu with lines, %zu with inlined calls\n", cnt, named,
	       lines, inlined);
	CHECK_EQ_INT(named, cnt);
	CHECK(lines * 100 >= cnt * 99);
	CHECK(inlined > cnt / 10);
	CHECK_EQ_INT(check_sp_tables(fx.t, &no_table), 0);
	fixture_close(&fx);
}

/* The Go 1.16-1.17 table (npm's esbuild 0.11.23 and 0.12.29, tests/data/esbuild_go116.sh):
 * every 61st byte of .text as the Go toolchain's addr2line (debug/gosym) reads it, every
 * function named with its stack-delta table whole, inlined calls, and the funcFlags: 1.17's
 * own byte (it also flags rt0_go SPWRITE), 1.16's derived from its funcIDs.
 */
static void check_go116(const char *name)
{
	static const struct {
		const char *fn;
		uint8_t flag;
	} flagged[] = {
		{ "runtime.goexit", GO_FUNC_TOPFRAME },
		{ "runtime.mstart", GO_FUNC_TOPFRAME },
		{ "runtime.rt0_go", GO_FUNC_TOPFRAME },
		{ "runtime.systemstack", GO_FUNC_SPWRITE },
		{ "runtime.mcall", GO_FUNC_SPWRITE },
		{ "runtime.morestack", GO_FUNC_SPWRITE },
		{ "runtime.asmcgocall", GO_FUNC_SPWRITE },
	};
	struct go_fixture fx;
	char oracle[256];
	size_t i, cnt, checked, mismatches, inlined, no_table;

	snprintf(oracle, sizeof(oracle), "%s.addr2line", name);
	REQUIRE(fixture_open(name, &fx));
	CHECK_EQ_INT(gopclntab__version(fx.t), GOPCLNTAB_V116);
	CHECK(gopclntab__has_inline(fx.t));
	cnt = gopclntab__func_cnt(fx.t);
	CHECK(cnt > 5000);
	mismatches = addr2line_mismatches(fx.t, oracle, &checked, &inlined);
	printf("  %s: %zu functions, %zu addresses (%zu in inlined calls), %zu mismatches\n", name,
	       cnt, checked, inlined, mismatches);
	CHECK_EQ_INT(mismatches, 0);
	CHECK(checked > 50000);
	CHECK(inlined > checked / 20);
	for (i = 0; i < cnt; i++) {
		struct go_func gf;

		CHECK(!gopclntab__func(fx.t, i, &gf) && gf.name);
	}
	CHECK_EQ_INT(check_sp_tables(fx.t, &no_table), 0);
	for (i = 0; i < sizeof(flagged) / sizeof(flagged[0]); i++) {
		struct go_func gf;

		CHECK(func_named(fx.t, flagged[i].fn, &gf) >= 0);
		if ((gf.flags & flagged[i].flag) != flagged[i].flag)
			test__fail("%s %s: flags %u, not %u", name, flagged[i].fn, gf.flags,
				   flagged[i].flag);
	}
	fixture_close(&fx);
}

TEST(esbuild_go116_format)
{
	if (access(test_fixture("esbuild-go116.addr2line"), R_OK) ||
	    access(test_fixture("esbuild-go117.addr2line"), R_OK))
		SKIP("no esbuild-go116/117 (npm pack esbuild-linux-64 failed: no registry?)");
	check_go116("esbuild-go116");
	check_go116("esbuild-go117");
}

/* ---- a hand-made Go 1.2-format table (the layout of Go 1.12-1.15's linker) ----
 * Two functions at 0x401000 (main.outer, 0x40 bytes) and 0x401040 (runtime.goexit, funcID 2):
 *   main.outer: a.go, line 10 at [0, 0x10); b.go:30 at [0x10, 0x20), inlined main.inner
 *   (inline tree entry 0, called from pc 0x08); a.go:12 at [0x20, 0x40); stack delta 0 at
 *   [0, 4), 8 at [4, 0x3c), 0 at [0x3c, 0x40).
 * The inline tree lies at 0x500000 in the "gofunc" bytes (.rodata in a binary).
 */
#define G12_TEXT 0x401000u
#define G12_TREE 0x500000u

struct g12 {
	uint8_t b[1024];
	size_t sz;
	uint8_t tree[20];
	size_t f0, f1, names[3], files[2], filetab; /* offsets in b */
};

static size_t g12_put(struct g12 *g, const void *p, size_t n)
{
	size_t at = g->sz;

	memcpy(g->b + at, p, n);
	g->sz += n;
	return at;
}

static void g12_u32(struct g12 *g, size_t at, uint32_t v)
{
	memcpy(g->b + at, &v, 4);
}

static void g12_u64(struct g12 *g, size_t at, uint64_t v)
{
	memcpy(g->b + at, &v, 8);
}

static void g12_align8(struct g12 *g)
{
	g->sz = (g->sz + 7) & ~(size_t)7;
}

/* A _func (40 bytes + pcdata + padding + funcdata): returns its offset. */
static size_t g12_func(struct g12 *g, uint64_t entry, size_t name, const uint32_t pc[3],
		       uint8_t func_id, const uint32_t *pcdata, uint32_t npcdata,
		       const uint64_t *funcdata, uint8_t nfuncdata)
{
	size_t at, i;

	g12_align8(g);
	at = g->sz;
	g->sz += 40;
	g12_u64(g, at, entry);
	g12_u32(g, at + 8, (uint32_t)name);
	for (i = 0; i < 3; i++) /* pcsp, pcfile, pcln */
		g12_u32(g, at + 20 + 4 * i, pc[i]);
	g12_u32(g, at + 32, npcdata);
	g->b[at + 36] = func_id;
	g->b[at + 39] = nfuncdata;
	for (i = 0; i < npcdata; i++)
		g12_u32(g, g12_put(g, "\0\0\0\0", 4), pcdata[i]);
	if (nfuncdata)
		g12_align8(g);
	for (i = 0; i < nfuncdata; i++)
		g12_u64(g, g12_put(g, "\0\0\0\0\0\0\0\0", 8), funcdata[i]);
	return at;
}

static void g12_build(struct g12 *g)
{
	/* pc-value tables: zigzag value delta (from -1), pc delta; 0 ends */
	static const uint8_t sp0[] = { 2, 4, 16, 0x38, 15, 4, 0 };
	static const uint8_t file0[] = { 4, 16, 2, 16, 1, 32, 0 };
	static const uint8_t line0[] = { 22, 16, 40, 16, 35, 32, 0 };
	static const uint8_t inl0[] = { 0, 16, 2, 16, 1, 32, 0 };
	static const uint8_t sp1[] = { 2, 0x40, 0 };
	static const uint8_t file1[] = { 4, 0x40, 0 };
	static const uint8_t line1[] = { 102, 0x40, 0 }; /* 50 */
	uint32_t pc0[3], pc1[3], pcdata0[3];
	uint64_t funcdata0[5] = { 0, 0, 0, 0, G12_TREE };
	int16_t parent = -1;
	int32_t v;

	memset(g, 0, sizeof(*g));
	g12_put(g, "\xfb\xff\xff\xff\0\0\1\x08", 8);
	g12_u64(g, g12_put(g, "\0\0\0\0\0\0\0\0", 8), 2); /* nfunc */
	g->sz += 2 * 16 + 8 + 4; /* functab, end pc, filetab offset: filled below */
	g->names[0] = g12_put(g, "main.outer", 11);
	g->names[1] = g12_put(g, "runtime.goexit", 15);
	g->names[2] = g12_put(g, "main.inner", 11);
	g->files[0] = g12_put(g, "/src/a.go", 10);
	g->files[1] = g12_put(g, "/src/b.go", 10);
	pc0[0] = (uint32_t)g12_put(g, sp0, sizeof(sp0));
	pc0[1] = (uint32_t)g12_put(g, file0, sizeof(file0));
	pc0[2] = (uint32_t)g12_put(g, line0, sizeof(line0));
	pcdata0[0] = pcdata0[1] = 0;
	pcdata0[2] = (uint32_t)g12_put(g, inl0, sizeof(inl0));
	pc1[0] = (uint32_t)g12_put(g, sp1, sizeof(sp1));
	pc1[1] = (uint32_t)g12_put(g, file1, sizeof(file1));
	pc1[2] = (uint32_t)g12_put(g, line1, sizeof(line1));
	g->f0 = g12_func(g, G12_TEXT, g->names[0], pc0, 0, pcdata0, 3, funcdata0, 5);
	g->f1 = g12_func(g, G12_TEXT + 0x40, g->names[1], pc1, 2, NULL, 0, NULL, 0);
	g12_align8(g);
	g->filetab = g->sz;
	g->sz += 12;
	g12_u32(g, g->filetab, 3); /* count, then files 1 and 2 */
	g12_u32(g, g->filetab + 4, (uint32_t)g->files[0]);
	g12_u32(g, g->filetab + 8, (uint32_t)g->files[1]);
	g12_u64(g, 16, G12_TEXT);
	g12_u64(g, 24, g->f0);
	g12_u64(g, 32, G12_TEXT + 0x40);
	g12_u64(g, 40, g->f1);
	g12_u64(g, 48, G12_TEXT + 0x80);
	g12_u32(g, 56, (uint32_t)g->filetab);
	/* inlinedCall: parent, funcID, pad, file, line, nameoff, parentPc */
	memcpy(g->tree, &parent, 2);
	v = 2;
	memcpy(g->tree + 4, &v, 4);
	v = 11;
	memcpy(g->tree + 8, &v, 4);
	v = (int32_t)g->names[2];
	memcpy(g->tree + 12, &v, 4);
	v = 8;
	memcpy(g->tree + 16, &v, 4);
}

static struct gopclntab *g12_open(const struct g12 *g)
{
	struct gopclntab_image img = { .pcln = g->b,
				       .pcln_sz = g->sz,
				       .gofunc = g->tree,
				       .gofunc_sz = sizeof(g->tree),
				       .gofunc_addr = G12_TREE };

	return gopclntab__open_image(&img);
}

static int on_sp_record(void *ctx, uint64_t start, uint64_t end, int32_t delta)
{
	char *out = ctx;
	size_t n = strlen(out);

	snprintf(out + n, 256 - n, "%llx-%llx:%d ", (unsigned long long)(start - G12_TEXT),
		 (unsigned long long)(end - G12_TEXT), (int)delta);
	return 0;
}

TEST(go12_format)
{
	struct g12 g;
	struct gopclntab *t;
	struct go_frame fr[4];
	struct go_func gf;
	char runs[256] = "";

	g12_build(&g);
	t = g12_open(&g);
	REQUIRE(t);
	CHECK_EQ_INT(gopclntab__version(t), GOPCLNTAB_V12);
	CHECK(gopclntab__has_inline(t));
	CHECK_EQ_INT(gopclntab__func_cnt(t), 2);
	CHECK_EQ_INT(gopclntab__func(t, 0, &gf), 0);
	CHECK_EQ_U64(gf.entry, G12_TEXT);
	CHECK_EQ_U64(gf.end, G12_TEXT + 0x40);
	CHECK_STR(gf.name, "main.outer");
	CHECK_EQ_INT(gf.flags, 0);
	CHECK_EQ_INT(gopclntab__func(t, 1, &gf), 0);
	CHECK_STR(gf.name, "runtime.goexit");
	CHECK_EQ_INT(gf.flags, GO_FUNC_TOPFRAME); /* from funcID 2 */
	CHECK_EQ_INT(gopclntab__find(t, G12_TEXT - 1), -ENOENT);
	CHECK_EQ_INT(gopclntab__find(t, G12_TEXT + 0x3f), 0);
	CHECK_EQ_INT(gopclntab__find(t, G12_TEXT + 0x40), 1);
	CHECK_EQ_INT(gopclntab__find(t, G12_TEXT + 0x80), -ENOENT);
	/* physical code */
	REQUIRE(gopclntab__lookup(t, G12_TEXT + 0x4, fr, 4) == 1);
	CHECK_STR(fr[0].function, "main.outer");
	CHECK_STR(fr[0].file, "/src/a.go");
	CHECK_EQ_INT(fr[0].line, 10);
	REQUIRE(gopclntab__lookup(t, G12_TEXT + 0x30, fr, 4) == 1);
	CHECK_EQ_INT(fr[0].line, 12);
	/* the inlined call: its position at pc, the caller's at parentPc */
	REQUIRE(gopclntab__lookup(t, G12_TEXT + 0x18, fr, 4) == 2);
	CHECK_STR(fr[0].function, "main.inner");
	CHECK_STR(fr[0].file, "/src/b.go");
	CHECK_EQ_INT(fr[0].line, 30);
	CHECK_STR(fr[1].function, "main.outer");
	CHECK_STR(fr[1].file, "/src/a.go");
	CHECK_EQ_INT(fr[1].line, 10);
	REQUIRE(gopclntab__lookup(t, G12_TEXT + 0x18, fr, 1) == 1); /* cut: the innermost */
	CHECK_STR(fr[0].function, "main.inner");
	REQUIRE(gopclntab__lookup(t, G12_TEXT + 0x41, fr, 4) == 1);
	CHECK_STR(fr[0].function, "runtime.goexit");
	CHECK_STR(fr[0].file, "/src/a.go");
	CHECK_EQ_INT(fr[0].line, 50);
	CHECK_EQ_INT(gopclntab__sp_deltas(t, 0, on_sp_record, runs), 0);
	CHECK_STR(runs, "0-4:0 4-3c:8 3c-40:0 ");
	gopclntab__free(t);
}

TEST(go12_hostile)
{
	struct g12 g;
	struct gopclntab *t;
	struct gopclntab_image img;
	struct go_frame fr[4];
	struct go_func gf;

	/* the inline tree's address outside the given bytes: the physical frame only */
	g12_build(&g);
	img = (struct gopclntab_image){ g.b, g.sz, g.tree, sizeof(g.tree), G12_TREE + 4 };
	t = gopclntab__open_image(&img);
	REQUIRE(t);
	REQUIRE(gopclntab__lookup(t, G12_TEXT + 0x18, fr, 4) == 1);
	CHECK_STR(fr[0].function, "main.outer");
	CHECK_EQ_INT(fr[0].line, 30);
	gopclntab__free(t);
	/* a hole between text sections (funcoff ~0): no function there */
	g12_u64(&g, 40, UINT64_MAX);
	t = g12_open(&g);
	REQUIRE(t);
	CHECK_EQ_INT(gopclntab__func(t, 1, &gf), -ENOENT);
	CHECK_EQ_INT(gopclntab__lookup(t, G12_TEXT + 0x41, fr, 4), -ENOENT);
	gopclntab__free(t);
	/* the _func's entry disagrees with the function table */
	g12_build(&g);
	g12_u64(&g, g.f1, G12_TEXT + 0x44);
	t = g12_open(&g);
	REQUIRE(t);
	CHECK_EQ_INT(gopclntab__func(t, 1, &gf), -ENOEXEC);
	gopclntab__free(t);
	/* npcdata and nfuncdata running past the table */
	g12_build(&g);
	g12_u32(&g, g.f1 + 32, 1000);
	t = g12_open(&g);
	REQUIRE(t);
	CHECK_EQ_INT(gopclntab__func(t, 1, &gf), -ENOEXEC);
	gopclntab__free(t);
	/* a file number out of the file table: no file, the line still */
	g12_build(&g);
	g12_u32(&g, g.filetab, 2);
	t = g12_open(&g);
	REQUIRE(t);
	REQUIRE(gopclntab__lookup(t, G12_TEXT + 0x18, fr, 4) == 2);
	CHECK(!fr[0].file);
	CHECK_EQ_INT(fr[0].line, 30);
	gopclntab__free(t);
	/* refused at open: unsorted, all-zero pcs (a PIE's unrelocated table), a file table
	 * past the end, a function table past the end
	 */
	g12_build(&g);
	g12_u64(&g, 32, G12_TEXT + 0x100);
	errno = 0;
	CHECK(!g12_open(&g) && errno == ENOEXEC);
	g12_build(&g);
	g12_u64(&g, 16, 0);
	g12_u64(&g, 32, 0);
	g12_u64(&g, 48, 0);
	errno = 0;
	CHECK(!g12_open(&g) && errno == ENOEXEC);
	g12_build(&g);
	g12_u32(&g, g.filetab, 1000);
	errno = 0;
	CHECK(!g12_open(&g) && errno == ENOEXEC);
	g12_build(&g);
	g12_u64(&g, 8, 1000);
	errno = 0;
	CHECK(!g12_open(&g) && errno == ENOEXEC);
}

TEST(hostile_headers)
{
	uint8_t buf[256];
	struct gopclntab_image img = { .pcln = buf, .pcln_sz = sizeof(buf) };
	struct gopclntab *t;

	memset(buf, 0, sizeof(buf));
	errno = 0;
	CHECK(!gopclntab__open_image(&img) && errno == ENOEXEC);
	memcpy(buf, "\xfa\xff\xff\xff\0\0\1\x08", 8); /* Go 1.16, no function */
	CHECK(!gopclntab__open_image(&img) && errno == ENOEXEC);
	buf[8] = 2; /* 1.16, offsets 0: the function table overlaps the header, unsorted */
	CHECK(!gopclntab__open_image(&img) && errno == ENOEXEC);
	buf[8] = 0;
	memcpy(buf, "\xf2\xff\xff\xff\0\0\1\x08", 8); /* a format after 1.20's */
	CHECK(!gopclntab__open_image(&img) && errno == EPROTONOSUPPORT);
	memcpy(buf, "\xf1\xff\xff\xff\0\0\1\x08", 8);
	buf[8] = 2; /* nfunc 2, offsets 0: the function table overlaps the header, unsorted */
	memset(buf + 64, 0xff, 4);
	t = gopclntab__open_image(&img);
	CHECK(!t);
	/* A sorted table whose _func offsets point past the end: opens, lookups fail cleanly. */
	memset(buf + 32, 0, 48);
	buf[64] = 80;       /* pclnOffset: the function table at 80 */
	buf[80 + 4] = 0xa0; /* func 0 at 80 + 160: its header runs past the end */
	buf[80 + 8] = 0x10;
	buf[80 + 16] = 0x20;
	t = gopclntab__open_image(&img);
	REQUIRE(t);
	{
		struct go_frame fr[4];
		struct go_func gf;

		CHECK_EQ_INT(gopclntab__lookup(t, 4, fr, 4), -ENOEXEC);
		CHECK_EQ_INT(gopclntab__func(t, 0, &gf), -ENOEXEC);
		CHECK_EQ_INT(gopclntab__lookup(t, 0x100, fr, 4), -ENOENT);
	}
	gopclntab__free(t);
}

struct rule_check {
	const struct unwind_table *table;
	size_t bad;
	uint8_t kind; /* the kind every row of the function has: CFA, or GO_PREEMPT */
};

static int check_rule(void *ctx, uint64_t start, uint64_t end, int32_t delta)
{
	struct rule_check *rc = ctx;
	uint64_t pc;

	for (pc = start; pc < end; pc++) {
		const struct unwind_row *r = unwind_table__find(rc->table, pc);

		/* the return address popped into a register (syscall.rawVforkSyscall): no rule */
		if (delta < 0) {
			if (r && r->rule.kind != UNWIND_RULE_INVALID)
				rc->bad++;
			continue;
		}
		if (!r || r->rule.kind != rc->kind || r->rule.cfa_reg != DWARF_RSP ||
		    r->rule.cfa_off != delta + 8 ||
		    (delta > 0 &&
		     (r->rule.rbp_rule != UNWIND_RBP_CFA_OFF || r->rule.rbp_off != -16))) {
			if (rc->bad++ < 5)
				printf("  0x%llx: delta %d, rule %d cfa %d+%d rbp %d %d\n",
				       (unsigned long long)pc, (int)delta, r ? r->rule.kind : -1,
				       r ? r->rule.cfa_reg : -1, r ? r->rule.cfa_off : -1,
				       r ? r->rule.rbp_rule : -1, r ? r->rule.rbp_off : -1);
		}
	}
	return 0;
}

/* The stripped binary has no CFI at all: its table is the stack deltas, pc by pc. */
TEST(unwind_rows_from_pcsp)
{
	struct go_fixture fx;
	struct unwind_table *t = NULL;
	const struct unwind_table_stats *st;
	struct go_func gf;
	struct rule_check rc = { 0 };
	const struct unwind_row *r;
	size_t i, signal_funcs = 0, g0_switches = 0, preempt_funcs = 0, no_table;
	long idx;

	need_go_fixtures();
	REQUIRE(fixture_open("wl_go", &fx));
	REQUIRE(unwind_table__build(fx.ef, NULL, &t) == 0);
	st = unwind_table__stats(t);
	CHECK_EQ_INT(st->sources & UNWIND_SRC_GOPCLNTAB, UNWIND_SRC_GOPCLNTAB);
	CHECK_EQ_INT(st->fde_cnt, 0);
	/* functions without a pcsp table get no rows (Go 1.24+: go:textfipsstart and
	 * go:textfipsend, padding that marks the FIPS module's code), and are not malformed
	 */
	CHECK_EQ_INT(check_sp_tables(fx.t, &no_table), 0);
	CHECK(no_table <= 2);
	CHECK_EQ_INT(st->go_func_cnt, gopclntab__func_cnt(fx.t) - no_table);
	CHECK_EQ_INT(st->bad_go_func_cnt, 0);
	rc.table = t;
	for (i = 0; i < gopclntab__func_cnt(fx.t); i++) {
		REQUIRE(!gopclntab__func(fx.t, i, &gf));
		if (!strcmp(gf.name, "runtime.sigtramp")) {
			r = unwind_table__find(t, gf.entry);
			CHECK(r && r->rule.kind == UNWIND_RULE_CFA); /* on to the restorer */
			continue;
		}
		if (gf.flags & (GO_FUNC_TOPFRAME | GO_FUNC_SPWRITE)) {
			r = unwind_table__find(t, gf.entry);
			CHECK(r && (r->rule.kind == UNWIND_RULE_STOP ||
				    r->rule.kind == UNWIND_RULE_FP_SWITCH ||
				    r->rule.kind == UNWIND_RULE_GO_G0 ||
				    r->rule.kind == UNWIND_RULE_GO_CGO));
			if (gf.flags & GO_FUNC_TOPFRAME)
				CHECK(r && r->rule.kind == UNWIND_RULE_STOP);
			/* the g0 switches continue in the goroutine's stack */
			if (!strcmp(gf.name, "runtime.systemstack") ||
			    !strcmp(gf.name, "runtime.morestack")) {
				CHECK(r && r->rule.kind == UNWIND_RULE_GO_G0);
				g0_switches++;
			}
			continue;
		}
		r = unwind_table__find(t, gf.entry);
		if (r && r->rule.kind == UNWIND_RULE_SIGNAL) { /* the signal restorer */
			CHECK(strstr(gf.name, "runtime.sigreturn") == gf.name);
			r = unwind_table__find(t, gf.entry - 1);
			CHECK(r && r->rule.kind == UNWIND_RULE_SIGNAL);
			signal_funcs++;
			continue;
		}
		/* asynchronous preemption: the CFA rule, its caller at the interrupted pc */
		rc.kind = strcmp(gf.name, "runtime.asyncPreempt") ? UNWIND_RULE_CFA
								  : UNWIND_RULE_GO_PREEMPT;
		preempt_funcs += rc.kind == UNWIND_RULE_GO_PREEMPT;
		gopclntab__sp_deltas(fx.t, i, check_rule, &rc);
	}
	CHECK_EQ_INT(rc.bad, 0);
	CHECK_EQ_INT(preempt_funcs, 1);
	CHECK_EQ_INT(signal_funcs, 1);
	CHECK_EQ_INT(g0_switches, 2);
	/* the frameless leaf (sp_deltas) */
	idx = func_named(fx.t, go_minor_of(fx.ef) < 16 ? "main.churn" : "main.gamma", &gf);
	REQUIRE(idx >= 0);
	r = unwind_table__find(t, gf.entry + 8);
	CHECK(r && r->rule.kind == UNWIND_RULE_CFA && r->rule.cfa_off == 8 &&
	      r->rule.rbp_rule == UNWIND_RBP_SAME);
	unwind_table__free(t);
	fixture_close(&fx);
}

/* arm64 (GOARCH=arm64 build of the same source): the instructions themselves are the oracle.
 * Every `MOVD.W R30, -N(RSP)` (a prologue storing the caller's x30 at the bottom of a new
 * N-byte frame, x29 then right below it) must be followed by the rule CFA = sp + N, x30 at
 * CFA - N, x29 at CFA - N - 8; every main.* function's entry (nothing stored yet) and the
 * frameless leaf main.gamma take the return address from x30.
 */
TEST(unwind_rows_from_pcsp_arm64)
{
	struct go_fixture fx;
	struct unwind_table *t = NULL;
	const struct unwind_row *r;
	char line[512], fn[256] = "";
	size_t prologues = 0, entries = 0, bad = 0;
	unsigned long long addr, next = 0;
	int want = 0;
	FILE *f;

	if (access(test_fixture("arm64_wl_go.objdump"), R_OK))
		SKIP_SETUP("no arm64_wl_go.objdump (golang-go)");
	REQUIRE(fixture_open("arm64_wl_go", &fx));
	CHECK_EQ_INT(elf_file__machine(fx.ef), EM_AARCH64);
	REQUIRE(unwind_table__build(fx.ef, NULL, &t) == 0);
	CHECK_EQ_INT(unwind_table__stats(t)->bad_go_func_cnt, 0);
	f = fopen(test_fixture("arm64_wl_go.objdump"), "r");
	REQUIRE(f);
	while (fgets(line, sizeof(line), f)) {
		char pos[256], enc[16], op[64];
		int n;

		if (sscanf(line, "TEXT %255s", fn) == 1) {
			want = -1; /* the next instruction is the entry */
			continue;
		}
		if (sscanf(line, " %255s 0x%llx %15s %63s", pos, &addr, enc, op) != 4)
			continue;
		r = want > 0 && addr == next ? unwind_table__find(t, addr) : NULL;
		/* the functions that end the walk or switch stacks have one rule of their own */
		if (r &&
		    (r->rule.kind == UNWIND_RULE_STOP || r->rule.kind == UNWIND_RULE_FP_SWITCH ||
		     r->rule.kind == UNWIND_RULE_GO_G0 || r->rule.kind == UNWIND_RULE_GO_CGO))
			want = 0;
		if (want > 0 && addr == next) {
			if (!r || r->rule.kind != UNWIND_RULE_CFA ||
			    r->rule.cfa_reg != DWARF_ARM64_SP || r->rule.cfa_off != want ||
			    r->rule.ra_rule != UNWIND_RA_CFA_OFF || r->rule.ra_off != -want ||
			    r->rule.rbp_rule != UNWIND_RBP_CFA_OFF ||
			    r->rule.rbp_off != -want - 8) {
				if (bad++ < 5)
					printf("  %s 0x%llx after a %d-byte frame: rule %d cfa %d+%d ra %d\n",
					       fn, addr, want, r ? r->rule.kind : -1,
					       r ? r->rule.cfa_reg : -1, r ? r->rule.cfa_off : -1,
					       r ? r->rule.ra_off : 0);
			}
			prologues++;
		}
		if (want < 0 && !strncmp(fn, "main.", 5)) {
			r = unwind_table__find(t, addr);
			if (!r || r->rule.kind != UNWIND_RULE_CFA ||
			    r->rule.cfa_reg != DWARF_ARM64_SP || r->rule.cfa_off != 0 ||
			    r->rule.ra_rule != UNWIND_RA_LINK_REG)
				bad++;
			entries++;
		}
		want = 0;
		if (!strcmp(op, "MOVD.W") && strstr(line, "R30, -") &&
		    sscanf(strstr(line, "R30, -"), "R30, -%d(RSP)", &n) == 1) {
			want = n;
			next = addr + 4;
		}
		if (!strcmp(fn, "main.gamma")) { /* frameless: x30 throughout */
			r = unwind_table__find(t, addr);
			if (!r || r->rule.ra_rule != UNWIND_RA_LINK_REG || r->rule.cfa_off != 0)
				bad++;
		}
	}
	fclose(f);
	CHECK_EQ_INT(bad, 0);
	CHECK(prologues >= 100); /* the runtime's functions with small frames too */
	CHECK(entries >= 5);     /* main.main, alpha, beta, gamma, handle */
	unwind_table__free(t);
	fixture_close(&fx);
}

/* The note as `go tool buildid` prints it; a C binary has none. */
TEST(go_build_id)
{
	char id[GO_BUILD_ID_MAX + 1], cmd[1024], want[256] = "";
	struct elf_file *ef;
	FILE *p;

	need_go_fixtures();
	/* the Go that built the fixture (tests/data/go.mk: Debian's when it is there) */
	snprintf(cmd, sizeof(cmd), "GOCACHE=%s/fixtures/go/cache %s tool buildid %s 2>/dev/null",
		 getenv("BUILD") ? getenv("BUILD") : "build",
		 access("/usr/lib/go/bin/go", X_OK) == 0 ? "/usr/lib/go/bin/go" : "go",
		 test_fixture("wl_go"));
	p = popen(cmd, "r");
	REQUIRE(p);
	if (!fgets(want, sizeof(want), p))
		want[0] = '\0';
	pclose(p);
	want[strcspn(want, "\n")] = '\0';
	REQUIRE(want[0]);
	ef = elf_file__open(test_fixture("wl_go"));
	REQUIRE(ef);
	CHECK_EQ_INT(go_build_id__read(ef, id, sizeof(id)), (int)strlen(want));
	CHECK_STR(id, want);
	elf_file__free(ef);
	ef = elf_file__open(test_fixture("wl_chain_fp"));
	REQUIRE(ef);
	CHECK_EQ_INT(go_build_id__read(ef, id, sizeof(id)), -ENOENT);
	elf_file__free(ef);
}

int main(void)
{
	RUN(objdump_every_instruction);
	RUN(addr2line_every_function);
	RUN(inlined_call_expanded);
	RUN(sp_deltas);
	RUN(esbuild_go120_format);
	RUN(esbuild_go116_format);
	RUN(hostile_headers);
	RUN(go12_format);
	RUN(go12_hostile);
	RUN(unwind_rows_from_pcsp);
	RUN(unwind_rows_from_pcsp_arm64);
	RUN(go_build_id);
	return test_summary();
}
