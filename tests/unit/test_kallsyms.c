/* Tests for src/formats/kallsyms.c on kallsyms-format text written here, plus a smoke check
 * against the running kernel's /proc/kallsyms when its addresses are visible.
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "formats/kallsyms.h"

/* Write text to a new temporary file; its path goes to path (cap >= 64). */
static int write_tmp(const char *text, char *path, size_t cap)
{
	const char *dir = getenv("TMPDIR");
	size_t len = strlen(text);
	int fd;

	snprintf(path, cap, "%s/stackscope-kallsyms-XXXXXX", dir ? dir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	return 0;
}

static struct kallsyms *load_text(const char *text)
{
	char path[512];
	struct kallsyms *ks;
	int err;

	if (write_tmp(text, path, sizeof(path)))
		return NULL;
	ks = kallsyms__load(path);
	err = errno;
	unlink(path);
	errno = err;
	return ks;
}

static const char fixture[] = "ffffffff81000000 T _stext\n"
			      "ffffffff81000000 T startup_64\n"
			      "ffffffff81000100 t helper\n"
			      "ffffffff81000200 D some_data\n"
			      "ffffffff81000300 W weak_fn\n"
			      "this line is garbage\n"
			      "ffffffff81000400 T\n"
			      "ffffffff81000380 t after_weak\n"
			      "ffffffff81000500 r rodata_end\n"
			      "ffffffffc0000000 t mod_fn\t[my_mod]\n"
			      "ffffffffc0000040 T mod_fn2\t[my_mod]\n"
			      "ffffffffc0001000 d mod_data\t[my_mod]\n"
			      "ffffffffc0400000 t bpf_prog_0123456789abcdef_handler\t[bpf]\n"
			      "ffffffff80ffff00 T early_unsorted\n"
			      "ffffffff81000000 d data_alias_at_stext"; /* no final newline */

TEST(lookup_rules)
{
	struct kallsyms *ks = load_text(fixture);
	const char *mod = "unset", *name;
	uint64_t off = 0;

	REQUIRE(ks);
	/* 12 distinct addresses; garbage and the nameless line are skipped */
	CHECK_EQ_INT(kallsyms__cnt(ks), 11);

	/* first text name at an address, in file order; core kernel has no module */
	CHECK_STR(kallsyms__lookup(ks, 0xffffffff81000000, &off, &mod), "_stext");
	CHECK_EQ_U64(off, 0);
	CHECK(mod == NULL);
	CHECK_STR(kallsyms__lookup(ks, 0xffffffff810000ff, &off, NULL), "_stext");
	CHECK_EQ_U64(off, 0xff);
	CHECK_STR(kallsyms__lookup(ks, 0xffffffff81000100, &off, NULL), "helper");
	CHECK_STR(kallsyms__lookup(ks, 0xffffffff810001ff, &off, NULL), "helper");
	CHECK_EQ_U64(off, 0xff);
	/* a data symbol ends the text symbol before it and is not a name itself */
	CHECK(kallsyms__lookup(ks, 0xffffffff81000200, &off, NULL) == NULL);
	CHECK(kallsyms__lookup(ks, 0xffffffff810002ff, &off, NULL) == NULL);
	CHECK_STR(kallsyms__lookup(ks, 0xffffffff81000300, &off, NULL), "weak_fn");
	/* an out-of-order line is sorted into place */
	CHECK_STR(kallsyms__lookup(ks, 0xffffffff80ffff10, &off, NULL), "early_unsorted");
	CHECK_EQ_U64(off, 0x10);
	CHECK_STR(kallsyms__lookup(ks, 0xffffffff810003ff, &off, NULL), "after_weak");
	CHECK(kallsyms__lookup(ks, 0xffffffff80fffeff, &off, NULL) == NULL);
	CHECK(kallsyms__lookup(ks, 0, &off, NULL) == NULL);

	/* modules */
	name = kallsyms__lookup(ks, 0xffffffffc0000010, &off, &mod);
	CHECK_STR(name, "mod_fn");
	CHECK_STR(mod, "my_mod");
	CHECK_EQ_U64(off, 0x10);
	CHECK_STR(kallsyms__lookup(ks, 0xffffffffc0000fff, &off, &mod), "mod_fn2");
	CHECK_STR(mod, "my_mod");
	CHECK(kallsyms__lookup(ks, 0xffffffffc0001000, &off, &mod) == NULL);

	/* the last symbol (a BPF program) is capped at KALLSYMS_MODULE_SYM_MAX */
	CHECK_STR(kallsyms__lookup(ks, 0xffffffffc0400000 + KALLSYMS_MODULE_SYM_MAX - 1, &off,
				   &mod),
		  "bpf_prog_0123456789abcdef_handler");
	CHECK_STR(mod, "bpf");
	CHECK(kallsyms__lookup(ks, 0xffffffffc0400000 + KALLSYMS_MODULE_SYM_MAX, &off, &mod) ==
	      NULL);
	CHECK(kallsyms__lookup(ks, UINT64_MAX, &off, &mod) == NULL);
	kallsyms__free(ks);
}

TEST(module_gap_is_capped)
{
	/* a module's last function followed by another module far away */
	struct kallsyms *ks = load_text("ffffffffc0000000 t a_fn\t[a]\n"
					"ffffffffc1000000 t b_fn\t[b]\n");
	uint64_t off;

	REQUIRE(ks);
	CHECK_STR(kallsyms__lookup(ks, 0xffffffffc0000000 + KALLSYMS_MODULE_SYM_MAX - 1, &off,
				   NULL),
		  "a_fn");
	CHECK(kallsyms__lookup(ks, 0xffffffffc0000000 + KALLSYMS_MODULE_SYM_MAX, &off, NULL) ==
	      NULL);
	kallsyms__free(ks);
}

TEST(text_preferred_in_sorted_input)
{
	/* sorted input (no qsort): the data symbol listed first at an address loses to text */
	struct kallsyms *ks = load_text("ffffffff81000000 D d_first\n"
					"ffffffff81000000 T t_second\n"
					"ffffffff81000000 T t_third\n"
					"ffffffff81000010 d end\n");
	uint64_t off;

	REQUIRE(ks);
	CHECK_EQ_INT(kallsyms__cnt(ks), 2);
	CHECK_STR(kallsyms__lookup(ks, 0xffffffff81000004, &off, NULL), "t_second");
	CHECK_EQ_U64(off, 4);
	kallsyms__free(ks);
}

TEST(long_lines_and_module_runs)
{
	/* a line longer than the reader's 64 KiB chunk is malformed (skipped), the lines around
	 * it are not; a module's name is kept per run, each symbol gets its own module back
	 */
	size_t long_len = 70000, i;
	char *text = malloc(long_len + 512), *p = text;
	const char *mod = NULL;
	struct kallsyms *ks;
	uint64_t off;

	REQUIRE(text);
	p += sprintf(p, "ffffffff81000000 T before\nffffffff81000100 T ");
	for (i = 0; i < long_len; i++)
		*p++ = 'x';
	p += sprintf(p, "\nffffffff81000200 T after\n"
			"ffffffffc0000000 t a1\t[mod_a]\nffffffffc0000010 t a2\t[mod_a]\n"
			"ffffffffc0000020 t b1\t[mod_b]\nffffffffc0000030 t a3\t[mod_a]\n"
			"ffffffffc0000040 t c1\t[mod_ab]\n");
	ks = load_text(text);
	free(text);
	REQUIRE(ks);
	CHECK_EQ_INT(kallsyms__cnt(ks), 7);
	CHECK_STR(kallsyms__lookup(ks, 0xffffffff81000150, &off, NULL), "before");
	CHECK_EQ_U64(off, 0x150);
	CHECK_STR(kallsyms__lookup(ks, 0xffffffff81000204, &off, &mod), "after");
	CHECK(mod == NULL);
	CHECK_STR(kallsyms__lookup(ks, 0xffffffffc0000014, &off, &mod), "a2");
	CHECK_STR(mod, "mod_a");
	CHECK_STR(kallsyms__lookup(ks, 0xffffffffc0000024, &off, &mod), "b1");
	CHECK_STR(mod, "mod_b");
	CHECK_STR(kallsyms__lookup(ks, 0xffffffffc0000034, &off, &mod), "a3");
	CHECK_STR(mod, "mod_a");
	CHECK_STR(kallsyms__lookup(ks, 0xffffffffc0000044, &off, &mod), "c1");
	CHECK_STR(mod, "mod_ab");
	kallsyms__free(ks);
}

TEST(errors)
{
	errno = 0;
	CHECK(kallsyms__load("/nonexistent/stackscope-kallsyms") == NULL);
	CHECK_EQ_INT(errno, ENOENT);

	/* kptr_restrict: every address reads as zero */
	errno = 0;
	CHECK(load_text("0000000000000000 T _stext\n"
			"0000000000000000 t helper\n"
			"0000000000000000 t mod_fn\t[my_mod]\n") == NULL);
	CHECK_EQ_INT(errno, EPERM);

	errno = 0;
	CHECK(load_text("") == NULL);
	CHECK_EQ_INT(errno, ENOEXEC);
	errno = 0;
	CHECK(load_text("not kallsyms at all\n\n\n") == NULL);
	CHECK_EQ_INT(errno, ENOEXEC);
	/* more than 16 hex digits is not an address */
	errno = 0;
	CHECK(load_text("1ffffffffffffffff T too_long\n") == NULL);
	CHECK_EQ_INT(errno, ENOEXEC);

	kallsyms__free(NULL);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Find a core "T name" line in the real file, independently of the parser. */
static int real_symbol(const char *want, uint64_t *addr)
{
	FILE *f = fopen(KALLSYMS_PATH, "r");
	char line[512];
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *end, *p;

		p = strchr(line, ' ');
		if (!p || strncmp(p, " T ", 3) || strncmp(p + 3, want, strlen(want)) ||
		    p[3 + strlen(want)] != '\n')
			continue;
		*addr = strtoull(line, &end, 16);
		ret = end == p ? 0 : -1;
		break;
	}
	fclose(f);
	return ret;
}

TEST(real_kallsyms_smoke)
{
	struct kallsyms *ks;
	const char *mod = "unset", *name;
	uint64_t addr, off;
	double t0, t1;

	t0 = now_ms();
	ks = kallsyms__load(KALLSYMS_PATH);
	t1 = now_ms();
	if (!ks) {
		int err = errno;

		CHECK(err == EPERM || err == EACCES || err == ENOENT);
		SKIP("%s: %s", KALLSYMS_PATH, strerror(err));
	}
	printf("  %zu addresses loaded in %.1f ms\n", kallsyms__cnt(ks), t1 - t0);
	CHECK(kallsyms__cnt(ks) > 1000);
	if (real_symbol("schedule", &addr) == 0 && addr) {
		name = kallsyms__lookup(ks, addr, &off, &mod);
		REQUIRE(name);
		CHECK_EQ_U64(off, 0);
		CHECK(mod == NULL);
		name = kallsyms__lookup(ks, addr + 1, &off, NULL);
		CHECK_STR(name, "schedule");
		CHECK_EQ_U64(off, 1);
	}
	kallsyms__free(ks);
}

int main(void)
{
	RUN(lookup_rules);
	RUN(module_gap_is_capped);
	RUN(text_preferred_in_sorted_input);
	RUN(long_lines_and_module_runs);
	RUN(errors);
	RUN(real_kallsyms_smoke);
	return test_summary();
}
