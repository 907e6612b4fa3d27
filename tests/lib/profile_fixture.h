/* One small profile with every kind of frame, for the tests of what writes and reads profiles
 * (test_pprof.c, test_pprof_read.c): two mappings (libfoo, app), a native frame with one line
 * (main), one with an inlined pair (inner in outer), one without lines (in libfoo), a kernel
 * frame with a name and one without, an error frame; three stacks (the first added twice) in
 * two processes (app: its threads app and worker; sh). The ids the profile gave are kept for
 * the checks; the caller frees p.
 */
#ifndef STACKSCOPE_TEST_PROFILE_FIXTURE_H
#define STACKSCOPE_TEST_PROFILE_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "profile/profile.h"
#include "test.h"

struct profile_fixture {
	struct profile *p;
	uint32_t m_foo, m_app;
	uint32_t main_fn, inl, foo, kern, kern_raw, err;
};

static inline void profile_fixture__build(struct profile_fixture *fx)
{
	struct profile_opts opts = { .period_ns = 1000000,
				     .start_time_ns = 1700000000000000000ULL,
				     .timestamps_cap = 4 };
	struct profile_mapping libfoo = { "/usr/lib/libfoo.so", "abcdef0123", 0x1000, 0x5000,
					  0x1000 };
	struct profile_mapping app = { "/usr/bin/app", "1234", 0x400000, 0x401000, 0 };
	struct profile_line main_line[] = { { "main", "app.c", 10 } };
	struct profile_line inl_lines[] = { { "inner", "app.c", 20 }, { "outer", "app.c", 30 } };
	struct profile_line k_line[] = { { "do_syscall_64", NULL, 0 } };
	struct profile_line err_line[] = { { "[unwind: no CFI]", NULL, 0 } };

	memset(fx, 0, sizeof(*fx));
	fx->p = profile__new(&opts);
	REQUIRE(fx->p);
	fx->m_foo = profile__add_mapping(fx->p, &libfoo);
	fx->m_app = profile__add_mapping(fx->p, &app);
	REQUIRE(fx->m_foo == 1 && fx->m_app == 2);
	fx->main_fn = profile__add_frame(fx->p, &(struct profile_frame){ FRAME_NATIVE, fx->m_app,
									 0x400100, main_line, 1 });
	fx->inl = profile__add_frame(fx->p, &(struct profile_frame){ FRAME_NATIVE, fx->m_app,
								     0x400200, inl_lines, 2 });
	fx->foo = profile__add_frame(fx->p, &(struct profile_frame){ FRAME_NATIVE, fx->m_foo,
								     0x1234, NULL, 0 });
	fx->kern = profile__add_frame(fx->p,
				      &(struct profile_frame){ FRAME_KERNEL, 0,
							       0xffffffff81000010ULL, k_line, 1 });
	fx->kern_raw = profile__add_frame(
		fx->p, &(struct profile_frame){ FRAME_KERNEL, 0, 0xffffffff81000020ULL, NULL, 0 });
	fx->err = profile__add_frame(fx->p,
				     &(struct profile_frame){ FRAME_ERROR, 0, 0, err_line, 1 });
	REQUIRE(fx->main_fn && fx->inl && fx->foo && fx->kern && fx->kern_raw && fx->err);
	{
		uint32_t a[] = { fx->kern, fx->foo, fx->inl, fx->main_fn };
		uint32_t b[] = { fx->inl, fx->main_fn };
		uint32_t c[] = { fx->kern_raw, fx->foo, fx->err };
		struct profile_sample s = { a, 4, 100, 101, "app", "worker", 0, 1, 1 };

		REQUIRE(profile__add_sample(fx->p, &s) == 0);
		s.count = 2;
		REQUIRE(profile__add_sample(fx->p, &s) == 0);
		s = (struct profile_sample){ b, 2, 100, 100, "app", "app", 1, 2, 5 };
		REQUIRE(profile__add_sample(fx->p, &s) == 0);
		s = (struct profile_sample){ c, 3, 200, 200, "sh", "sh", 1, 3, 1 };
		REQUIRE(profile__add_sample(fx->p, &s) == 0);
	}
	profile__set_end_time(fx->p, 1700000002000000000ULL);
}

#endif
