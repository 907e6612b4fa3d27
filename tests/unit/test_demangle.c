/* Tests for src/formats/demangle.c. The truth is binutils' c++filt (which knows C++ and both
 * Rust manglings) on every mangled symbol of the C++ and Rust fixtures, with its output put in
 * this module's form: no Rust crate hashes `[...]`, no legacy `::h<hash>`, const generics
 * without their `: type`. Plus hand-written v0 names (checked with c++filt when written; one
 * with a punycode identifier), and bad names that must fail cleanly.
 */
#include <errno.h>
#include <unistd.h>

#include "test.h"
#include "formats/demangle.h"

#define NORMALIZE                                              \
	"sed -E 's/\\[[0-9a-f]+\\]//g; s/::h[0-9a-f]{16}$//; " \
	"s/: (u|i)(8|16|32|64|128|size)//g'"

/* Demangles every _Z/_R symbol of a fixture and compares with c++filt; returns the number of
 * symbols compared (and fails the test on any difference).
 */
static size_t compare_with_cxxfilt(const char *fixture, enum demangle_kind want_kind,
				   size_t *kind_cnt)
{
	char list[] = "/tmp/test_demangle_XXXXXX", cmd[1024], mangled[4096], truth[8192];
	FILE *names, *filt;
	size_t n = 0, bad = 0;
	char *got;
	int fd;

	*kind_cnt = 0;
	fd = mkstemp(list);
	if (fd < 0)
		return 0;
	close(fd);
	snprintf(cmd, sizeof(cmd), "nm '%s' | awk '{print $NF}' | grep -E '^_[RZ]' | sort -u > %s",
		 fixture, list);
	if (system(cmd)) {
		unlink(list);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "c++filt < %s | " NORMALIZE, list);
	names = fopen(list, "r");
	filt = popen(cmd, "r");
	while (names && filt && fgets(mangled, sizeof(mangled), names) &&
	       fgets(truth, sizeof(truth), filt)) {
		mangled[strcspn(mangled, "\n")] = '\0';
		truth[strcspn(truth, "\n")] = '\0';
		if (demangle__kind(mangled) == want_kind)
			(*kind_cnt)++;
		got = demangle__symbol(mangled);
		if (strcmp(got ? got : mangled, truth) && bad++ < 5)
			test__fail("%s: \"%s\" != c++filt \"%s\"", mangled, got ? got : "(null)",
				   truth);
		free(got);
		n++;
	}
	if (names)
		fclose(names);
	if (filt)
		pclose(filt);
	unlink(list);
	return n;
}

TEST(cxx_matches_cxxfilt)
{
	size_t kind = 0;

	CHECK(compare_with_cxxfilt(test_fixture("dwarf_cxx"), DEMANGLE_CXX, &kind) >= 5);
	CHECK(kind >= 5);
}

TEST(rust_matches_cxxfilt)
{
	size_t kind = 0;

	/* rustc is not among what scripts/setup.sh installs: a plain skip without it */
	if (access(test_fixture("dwarf_rust_v0"), R_OK))
		SKIP("no dwarf_rust_v0 fixture (rustc was not found when the fixtures were built)");
	CHECK(compare_with_cxxfilt(test_fixture("dwarf_rust_v0"), DEMANGLE_RUST_V0, &kind) >= 100);
	CHECK(kind >= 100);
	CHECK(compare_with_cxxfilt(test_fixture("dwarf_rust_legacy"), DEMANGLE_RUST, &kind) >= 100);
	CHECK(kind >= 3); /* the fixture's own functions; std's are v0 */
}

TEST(rust_v0_known_names)
{
	static const struct {
		const char *mangled, *want;
	} cases[] = {
		{ "_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar" },
		{ "_RINvCs1234_7mycrate3fooNtB2_3BarE", "mycrate::foo::<mycrate::Bar>" },
		{ "_RNCNvCs1234_7mycrate4main0B3_", "mycrate::main::{closure#0}" },
		{ "_RNCNvCs1234_7mycrate4mains_0B3_", "mycrate::main::{closure#1}" },
		{ "_RINvCs1234_7mycrate3fooFG0_RL0_hEuE",
		  "mycrate::foo::<for<'a, 'b> fn(&'b u8)>" },
		{ "_RINvCs1234_7mycrate3fooDNtB2_3BazEL_E", "mycrate::foo::<dyn mycrate::Baz>" },
		{ "_RINvCs1234_7mycrate3fooKj7_E", "mycrate::foo::<7>" },
		{ "_RNvXs_NtCs1234_7mycrate3fooNtB4_3BarNtB4_5Trait1f",
		  "<mycrate::foo::Bar as mycrate::foo::Trait>::f" },
		{ "_RINvCs1234_7mycrate3fooTlReEAhj4_SmQhE",
		  "mycrate::foo::<(i32, &str), [u8; 4], [u32], &mut u8>" },
		{ "_RNvMNtCs1234_7mycrate3fooNtB2_3Bar3new", "<mycrate::foo::Bar>::new" },
		{ "_RINvCs1234_7mycrate3fooTmEE", "mycrate::foo::<(u32,)>" },
		{ "_RINvCs1234_7mycrate3fooFKCmEyE",
		  "mycrate::foo::<extern \"C\" fn(u32) -> u64>" },
		{ "_RNvCs1234_7mycrate3foo.llvm.1234", "mycrate::foo" },
		{ "_ZN10dwarf_rust8dyn_area17h06d98aaafb67a32cE", "dwarf_rust::dyn_area" },
		{ "_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$"
		  "closure$u7d$$u7d$$GT$17h0123456789abcdefE",
		  "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>" },
		{ "_ZN3foo3BarC2Ev", "foo::Bar::Bar()" },
		/* punycode: a module named "café" (c++filt: mycrate[3c1c0]::café::foo) */
		{ "_RNvNtCs1234_7mycrateu7caf_dma3foo", "mycrate::café::foo" },
		/* an overlong crate disambiguator is not printed anyway (c++filt agrees) */
		{ "_RNvCszzzzzzzzzzzzzzzzzzzzzzzz_1a1b", "a::b" },
	};
	size_t i;
	char *got;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got = demangle__symbol(cases[i].mangled);
		CHECK_STR(got, cases[i].want);
		free(got);
	}
}

TEST(bad_names_fail_cleanly)
{
	static const char *const bad[] = {
		"_RNvB0_3foo",                   /* back-reference to itself */
		"_RNvCs1234_7myc",               /* truncated identifier */
		"_RNvCs1234_7mycrate",           /* truncated path */
		"_RINvCs1234_7mycrate3fooKe3_E", /* a str const generic cut short */
		"_R3foo",                        /* unknown encoding version */
		"_RNvCs1234_u8caf_dma3foo",      /* punycode longer than the name */
	};
	char deep[3000], small[8];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		CHECK(demangle__symbol(bad[i]) == NULL);
		CHECK_EQ_INT(errno, EINVAL);
	}
	/* nesting past the depth bound */
	memcpy(deep, "_RINvC1a1b", 10);
	for (i = 10; i < sizeof(deep) - 3; i++)
		deep[i] = 'S';
	deep[i++] = 'u';
	deep[i++] = 'E';
	deep[i] = '\0';
	CHECK(demangle__symbol(deep) == NULL);
	/* not mangled at all */
	CHECK(demangle__symbol("main") == NULL);
	CHECK_EQ_INT(demangle__kind("main"), DEMANGLE_NONE);
	CHECK_EQ_INT(demangle__kind(NULL), DEMANGLE_NONE);
	CHECK_EQ_INT(demangle__kind("_ZN3foo3barEv"), DEMANGLE_CXX);
	CHECK_EQ_INT(demangle__kind("_ZN3foo17h0123456789abcdefE"), DEMANGLE_RUST);
	CHECK_EQ_INT(demangle__kind("_RNvC1a1b"), DEMANGLE_RUST_V0);
	/* a caller buffer too small */
	CHECK_EQ_INT(demangle__rust("_RNvNtCs1234_7mycrate3foo3bar", small, sizeof(small)),
		     -ENOSPC);
}

int main(void)
{
	RUN(cxx_matches_cxxfilt);
	RUN(rust_matches_cxxfilt);
	RUN(rust_v0_known_names);
	RUN(bad_names_fail_cleanly);
	return test_summary();
}
