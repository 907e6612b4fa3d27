/* src/interp/common/glibc_tsd.h against glibc itself: tests/data/glibc_tsd.c sets a pthread key's
 * value in two threads and reads it back at the offsets the header gives (and each thread's
 * tid), natively (x86-64)
 * and cross-built under qemu-aarch64 with Debian's arm64 libc (the loader and libraries of the
 * host's :arm64 multiarch packages, scripts/setup.sh). A wrong offset there costs CPython and
 * Perl frames on that architecture (issue 19: Python came out with no frames on arm64).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "interp/common/glibc_tsd.h"
#include "test.h"

#define QEMU_AARCH64 "/usr/bin/qemu-aarch64-static"

/* Run the fixture (under QEMU when qemu is not NULL) with the offsets; both threads must find
 * their value at both, and their tid at tid_off. */
static void check_offsets(const char *qemu, const char *exe, long from_pthread, long from_tp,
			  long tid_off)
{
	char cmd[1024], line[256];
	int lines = 0, ok = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s%s%s %ld %ld %ld 2>&1", qemu ? qemu : "",
		 qemu ? " -L / " : "", exe, from_pthread, from_tp, tid_off);
	p = popen(cmd, "r");
	REQUIRE(p);
	while (fgets(line, sizeof(line), p)) {
		printf("  %s", line);
		lines++;
		if (strstr(line, " pthread=ok tp=ok tid=ok"))
			ok++;
	}
	CHECK_EQ_INT(pclose(p), 0);
	CHECK_EQ_INT(lines, 2);
	CHECK_EQ_INT(ok, 2);
}

TEST(x86_64_offsets)
{
	const char *exe = test_fixture("glibc_tsd");

#if !defined(__x86_64__)
	SKIP("not an x86-64 host");
#endif
	REQUIRE(!access(exe, X_OK));
	check_offsets(NULL, exe, GLIBC_TSD_FROM_PTHREAD_X86_64,
		      GLIBC_PTHREAD_FROM_TP_X86_64 + GLIBC_TSD_FROM_PTHREAD_X86_64,
		      GLIBC_TID_FROM_PTHREAD_X86_64);
}

TEST(aarch64_offsets)
{
	const char *exe = test_fixture("arm64_glibc_tsd");

	if (access(exe, X_OK)) /* gcc-aarch64-linux-gnu: scripts/setup.sh */
		SKIP_SETUP("no %s", exe);
	if (access(QEMU_AARCH64, X_OK))
		SKIP_SETUP("no %s (qemu-user-static)", QEMU_AARCH64);
	if (access("/lib/ld-linux-aarch64.so.1", R_OK)) /* libc6:arm64 */
		SKIP_SETUP("no /lib/ld-linux-aarch64.so.1 (Debian's arm64 libc6)");
	check_offsets(QEMU_AARCH64, exe, GLIBC_TSD_FROM_PTHREAD_AARCH64,
		      GLIBC_PTHREAD_FROM_TP_AARCH64 + GLIBC_TSD_FROM_PTHREAD_AARCH64,
		      GLIBC_TID_FROM_PTHREAD_AARCH64);
}

int main(void)
{
	RUN(x86_64_offsets);
	RUN(aarch64_offsets);
	return test_summary();
}
