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
 * 0 mismatches allowed.
 */
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
		if (*pcln++ != *sym++)
			return false;
	}
	return !*pcln && !*sym;
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
	FILE *f;

	need_go_fixtures();
	REQUIRE(fixture_open("wl_go", &fx));
	CHECK_EQ_INT(gopclntab__version(fx.t), GOPCLNTAB_V118);
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
		if (n < 1 || !same_func(fr[n - 1].function, func) || !fr[0].file ||
		    strcmp(base_name(fr[0].file), pos) ||
		    fr[0].line != strtoul(colon + 1, NULL, 10)) {
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

TEST(addr2line_every_function)
{
	struct go_fixture fx;
	char line[2048];
	size_t checked = 0, mismatches = 0;
	FILE *f;

	need_go_fixtures();
	REQUIRE(fixture_open("wl_go", &fx));
	f = fopen(test_fixture("wl_go.addr2line"), "r");
	REQUIRE(f);
	while (fgets(line, sizeof(line), f)) {
		char func[512], file[1024], *colon;
		unsigned long long addr;
		struct go_frame fr[GO_MAX_FRAMES];
		int n;

		if (sscanf(line, "0x%llx\t%511[^\t]\t%1023[^\n]", &addr, func, file) != 3 ||
		    !(colon = strrchr(file, ':')))
			continue;
		*colon = '\0';
		n = gopclntab__lookup(fx.t, addr, fr, GO_MAX_FRAMES);
		checked++;
		if (n < 1 || strcmp(fr[n - 1].function, func) || !fr[0].file ||
		    strcmp(fr[0].file, file) || fr[0].line != strtoul(colon + 1, NULL, 10)) {
			if (mismatches++ < 10)
				test__fail("0x%llx: addr2line %s %s:%s, pclntab %s %s:%u", addr,
					   func, file, colon + 1, n > 0 ? fr[n - 1].function : "-",
					   n > 0 && fr[0].file ? fr[0].file : "-",
					   n > 0 ? fr[0].line : 0);
		}
	}
	fclose(f);
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
	size_t no_table;
	long idx;

	need_go_fixtures();
	REQUIRE(fixture_open("wl_go", &fx));
	CHECK_EQ_INT(check_sp_tables(fx.t, &no_table), 0);
	printf("  %zu functions without a pcsp table\n", no_table);
	idx = func_named(fx.t, "main.gamma", &gf);
	REQUIRE(idx >= 0);
	w.next = gf.entry;
	CHECK_EQ_INT(gopclntab__sp_deltas(fx.t, (size_t)idx, on_sp, &w), 0);
	CHECK_EQ_INT(w.max, 0); /* frameless leaf */
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

TEST(hostile_headers)
{
	uint8_t buf[256];
	struct gopclntab_image img = { .pcln = buf, .pcln_sz = sizeof(buf) };
	struct gopclntab *t;

	memset(buf, 0, sizeof(buf));
	errno = 0;
	CHECK(!gopclntab__open_image(&img) && errno == ENOEXEC);
	memcpy(buf, "\xfa\xff\xff\xff\0\0\1\x08", 8); /* Go 1.16 */
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
};

static int check_rule(void *ctx, uint64_t start, uint64_t end, int32_t delta)
{
	struct rule_check *rc = ctx;
	uint64_t pc;

	for (pc = start; pc < end; pc++) {
		const struct unwind_row *r = unwind_table__find(rc->table, pc);

		if (!r || r->rule.kind != UNWIND_RULE_CFA || r->rule.cfa_reg != DWARF_RSP ||
		    r->rule.cfa_off != delta + 8 ||
		    (delta > 0 &&
		     (r->rule.rbp_rule != UNWIND_RBP_CFA_OFF || r->rule.rbp_off != -16)))
			rc->bad++;
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
	size_t i, signal_funcs = 0, g0_switches = 0;
	long idx;

	need_go_fixtures();
	REQUIRE(fixture_open("wl_go", &fx));
	REQUIRE(unwind_table__build(fx.ef, NULL, &t) == 0);
	st = unwind_table__stats(t);
	CHECK_EQ_INT(st->sources & UNWIND_SRC_GOPCLNTAB, UNWIND_SRC_GOPCLNTAB);
	CHECK_EQ_INT(st->fde_cnt, 0);
	CHECK_EQ_INT(st->go_func_cnt, gopclntab__func_cnt(fx.t));
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
		gopclntab__sp_deltas(fx.t, i, check_rule, &rc);
	}
	CHECK_EQ_INT(rc.bad, 0);
	CHECK_EQ_INT(signal_funcs, 1);
	CHECK_EQ_INT(g0_switches, 2);
	idx = func_named(fx.t, "main.gamma", &gf);
	REQUIRE(idx >= 0);
	r = unwind_table__find(t, gf.entry + 8);
	CHECK(r && r->rule.kind == UNWIND_RULE_CFA && r->rule.cfa_off == 8 &&
	      r->rule.rbp_rule == UNWIND_RBP_SAME);
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
	RUN(hostile_headers);
	RUN(unwind_rows_from_pcsp);
	RUN(go_build_id);
	return test_summary();
}
