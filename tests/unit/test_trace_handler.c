/* The symbolization stage (src/pipeline/trace_handler.c) on synthetic sample records, as the
 * eBPF side would send them: kernel addresses resolved through a kallsyms file written here,
 * user frames in the elf_pie fixture (addresses from nm, never from its source), frames eBPF
 * could not place resolved late through /proc (this test's own process), Python frames, and
 * the "[unwind: ...]" pseudo-frame of every way a user stack can end. The profile that comes
 * out is read back frame by frame.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "abi.h"
#include "interp/interp.h"
#include "proc/executable.h"
#include "proc/process.h"
#include "profile/profile.h"
#include "pipeline/trace_handler.h"
#include "formats/kallsyms.h"
#include "test.h"

#define KERNEL_TEXT 0xffffffff81000000ULL

static const char kallsyms_text[] = "ffffffff81000000 T _stext\n"
				    "ffffffff81000100 T do_syscall_64\n"
				    "ffffffff81000200 t asm_exc_page_fault\n";

/* One handler over a fresh profile, with the registry, process table and kallsyms it needs. */
struct world {
	struct exe_registry *reg;
	struct process_table *pt;
	struct kallsyms *ks;
	struct profile *prof;
	struct trace_handler *th;
	struct executable *pie;       /* the elf_pie fixture */
	uint64_t alpha, beta, helper; /* its symbols (ELF vaddrs, from nm) */
};

static struct sample_record rec;

static struct kallsyms *kallsyms_from_text(const char *text)
{
	char path[] = "/tmp/stackscope-th-kallsyms-XXXXXX";
	int fd = mkstemp(path);
	struct kallsyms *ks = NULL;
	size_t len = strlen(text);

	if (fd < 0)
		return NULL;
	if (write(fd, text, len) == (ssize_t)len)
		ks = kallsyms__load(path);
	close(fd);
	unlink(path);
	return ks;
}

/* The registry's executable for a file this process does not map (opened by its absolute
 * path: the fake mapping's /proc/self/map_files entry does not exist).
 */
static struct executable *exe_of_file(struct exe_registry *reg, const char *path)
{
	struct stat st;
	struct proc_map m = { 0 };

	if (stat(path, &st))
		return NULL;
	m.start = 0x1000;
	m.end = 0x2000;
	m.ino = st.st_ino;
	m.dev_major = major(st.st_dev);
	m.dev_minor = minor(st.st_dev);
	m.path = path;
	return exe_registry__get(reg, getpid(), &m);
}

static void world_init(struct world *w, bool symbolize)
{
	struct trace_handler_opts opts = { .symbolize = symbolize, .mono_to_wall_ns = 1000 };
	struct profile_opts popts = { .period_ns = 10000000, .timestamps_cap = 4 };
	static char pie[PATH_MAX];

	memset(w, 0, sizeof(*w));
	REQUIRE(realpath(test_fixture("elf_pie"), pie)); /* run 'make fixtures' */
	w->reg = exe_registry__new(NULL);
	REQUIRE(w->reg);
	w->pt = process_table__new(w->reg, -1, -1);
	w->ks = kallsyms_from_text(kallsyms_text);
	w->prof = profile__new(&popts);
	REQUIRE(w->pt && w->ks && w->prof);
	w->th = trace_handler__new(w->prof, w->reg, w->pt, w->ks, &opts);
	REQUIRE(w->th);
	w->pie = exe_of_file(w->reg, pie);
	REQUIRE(w->pie);
	w->alpha = test_nm_addr(pie, "ss_alpha");
	w->beta = test_nm_addr(pie, "ss_beta");
	w->helper = test_nm_addr(pie, "ss_local_helper");
	REQUIRE(w->alpha && w->beta && w->helper);
}

static void world_free(struct world *w)
{
	trace_handler__free(w->th);
	profile__free(w->prof);
	kallsyms__free(w->ks);
	process_table__free(w->pt);
	exe_registry__free(w->reg);
}

/* A record of pid with the given kernel ips and user frames; its size. */
static size_t make_record(pid_t pid, const uint64_t *kips, int kcnt, const struct user_frame *uf,
			  int ucnt, enum unwind_end end)
{
	memset(&rec, 0, sizeof(rec));
	rec.hdr.kind = RECORD_SAMPLE;
	rec.hdr.pid = rec.hdr.tid = (uint32_t)pid;
	rec.hdr.cpu = 1;
	rec.hdr.time_ns = 5000;
	snprintf(rec.comm, sizeof(rec.comm), "fixture");
	snprintf(rec.thread_comm, sizeof(rec.thread_comm), "fixture-t");
	rec.kernel_frame_cnt = kcnt;
	if (kcnt > 0)
		memcpy(rec.kernel_ips, kips, (size_t)kcnt * sizeof(*kips));
	rec.user_frame_cnt = (uint16_t)ucnt;
	if (ucnt)
		memcpy(rec.user, uf, (size_t)ucnt * sizeof(*uf));
	rec.user_end = (uint16_t)end;
	rec.map_pid = (uint32_t)pid;
	return offsetof(struct sample_record, user) + (size_t)ucnt * sizeof(*uf);
}

/* The frames of the profile's last sample, leaf first, as display names joined by ";". */
static const char *last_stack(const struct world *w, enum frame_kind *kinds, size_t kinds_cap)
{
	static char out[4096];
	size_t n = profile__sample_cnt(w->prof), len = 0;
	const struct profile_agg_sample *s;
	const uint32_t *ids;
	uint32_t cnt, i;

	out[0] = '\0';
	if (!n)
		return out;
	s = profile__sample(w->prof, n - 1);
	ids = profile__stack(w->prof, s->stack, &cnt);
	for (i = 0; ids && i < cnt; i++) {
		const struct profile_frame *f = profile__frame(w->prof, ids[i]);
		const char *name = f && f->line_cnt ? f->lines[0].function : "(no name)";

		if (kinds && i < kinds_cap)
			kinds[i] = f ? f->kind : 0;
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s", i ? ";" : "", name);
		if (len >= sizeof(out))
			break;
	}
	return out;
}

static struct user_frame native(const struct world *w, uint64_t addr, uint32_t flags)
{
	struct user_frame uf = { .addr = addr, .file_id = w->pie->file_id, .flags = flags };

	return uf;
}

TEST(kernel_and_native)
{
	struct world w;
	uint64_t kips[] = { KERNEL_TEXT + 0x204, KERNEL_TEXT + 0x110, 0xffffffff90000000ULL };
	struct user_frame uf[3];
	enum frame_kind kinds[8] = { 0 };
	const struct profile_agg_sample *s;
	const struct trace_handler_stats *st;
	size_t size;

	world_init(&w, true);
	/* leaf ss_local_helper (the pc itself), then return addresses just past a call: the
	 * lookup is at addr - 1, so a return address at a function's first byte + 1 names it
	 */
	uf[0] = native(&w, w.helper + 4, 0);
	uf[1] = native(&w, w.alpha + 1, USER_FRAME_RETURN);
	uf[2] = native(&w, w.beta + 1, USER_FRAME_RETURN);
	size = make_record(4242, kips, 3, uf, 3, UNWIND_END_OK);
	REQUIRE(trace_handler__sample(w.th, &rec, size, 0) == 0);
	/* kips[1] is a return address: do_syscall_64 + 0x10 - 1 is still do_syscall_64; the
	 * last one is far past the table's last symbol: no name, an address-only frame
	 */
	CHECK_STR(last_stack(&w, kinds, 8),
		  "asm_exc_page_fault;do_syscall_64;(no name);ss_local_helper;ss_alpha;ss_beta");
	CHECK_EQ_INT(kinds[0], FRAME_KERNEL);
	CHECK_EQ_INT(kinds[3], FRAME_NATIVE);
	CHECK_EQ_INT(kinds[5], FRAME_NATIVE);
	s = profile__sample(w.prof, 0);
	REQUIRE(s);
	CHECK_EQ_INT(s->pid, 4242);
	CHECK_STR(s->comm, "fixture");
	CHECK_STR(s->thread_comm, "fixture-t");
	REQUIRE(s->event_cnt == 1);
	CHECK_EQ_U64(s->events[0].time_ns, 6000); /* + mono_to_wall_ns */
	/* the mappings: the kernel's, then the fixture's with its path and build id */
	REQUIRE(profile__mapping_cnt(w.prof) == 2);
	CHECK_STR(profile__mapping(w.prof, 1)->path, "[kernel.kallsyms]");
	CHECK_STR(profile__mapping(w.prof, 2)->path, w.pie->path);
	CHECK(profile__mapping(w.prof, 2)->build_id && w.pie->build_id[0]);
	st = trace_handler__stats(w.th);
	CHECK_EQ_INT(st->samples, 1);
	CHECK_EQ_INT(st->kernel_frames, 3);
	CHECK_EQ_INT(st->kernel_unsymbolized, 1);
	CHECK_EQ_INT(st->user_frames, 3);
	CHECK_EQ_INT(st->user_unsymbolized, 0);
	CHECK_EQ_INT(st->incomplete_stacks, 0);
	/* the same record again: one aggregated sample counting 2 */
	REQUIRE(trace_handler__sample(w.th, &rec, size, 0) == 0);
	CHECK_EQ_INT(profile__sample_cnt(w.prof), 1);
	CHECK_EQ_INT(profile__sample(w.prof, 0)->count, 2);
	world_free(&w);
}

/* Every way a user stack can end early gets its own visible pseudo-frame, root side. */
TEST(unwind_pseudo_frames)
{
	static const struct {
		enum unwind_end end;
		const char *frame; /* NULL: none */
	} cases[] = {
		{ UNWIND_END_OK, NULL },
		{ UNWIND_END_NO_USER, NULL },
		{ UNWIND_END_TRUNCATED, "[truncated]" },
		{ UNWIND_END_NO_CFI, "[unwind: no CFI]" },
		{ UNWIND_END_UNKNOWN_FILE, "[unwind: file not loaded]" },
		{ UNWIND_END_READ_FAILED, "[unwind: stack unreadable]" },
		{ UNWIND_END_BAD_PC, "[unwind: bad pc]" },
		{ UNWIND_END_UNSUPPORTED, "[unwind: unsupported CFI]" },
		{ UNWIND_END_UNMAPPED, "[unwind: unmapped pc]" },
		{ UNWIND_END_BAD_FRAME, "[unwind: bad frame]" },
		{ UNWIND_END_CNT, "[unwind: ?]" },
	};
	struct world w;
	size_t i, incomplete = 0;

	world_init(&w, true);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct user_frame uf = native(&w, w.alpha + 2, 0);
		enum frame_kind kinds[2] = { 0 };
		char want[128];
		size_t size = make_record(100 + (pid_t)i, NULL, 0, &uf, 1, cases[i].end);

		REQUIRE(trace_handler__sample(w.th, &rec, size, 0) == 0);
		snprintf(want, sizeof(want), "ss_alpha%s%s", cases[i].frame ? ";" : "",
			 cases[i].frame ? cases[i].frame : "");
		CHECK_STR(last_stack(&w, kinds, 2), want);
		if (cases[i].frame) {
			CHECK_EQ_INT(kinds[1], FRAME_ERROR);
			incomplete++;
		}
	}
	CHECK_EQ_INT(trace_handler__stats(w.th)->incomplete_stacks, incomplete);
	/* nothing at all (a kernel thread whose kernel stack failed): one "[no stack]" */
	REQUIRE(trace_handler__sample(w.th, &rec,
				      make_record(7, NULL, -14, NULL, 0, UNWIND_END_NO_USER),
				      0) == 0);
	CHECK_STR(last_stack(&w, NULL, 0), "[no stack]");
	world_free(&w);
}

/* Records the ring buffer could have cut: refused, counted, nothing added. */
TEST(malformed_records)
{
	struct world w;
	struct user_frame uf = { 0 };
	size_t size;

	world_init(&w, true);
	size = make_record(1, NULL, 0, &uf, 1, UNWIND_END_OK);
	CHECK_EQ_INT(trace_handler__sample(w.th, &rec, size - 1, 0), -EINVAL);
	CHECK_EQ_INT(trace_handler__sample(w.th, &rec, 8, 0), -EINVAL);
	rec.user_frame_cnt = SS_MAX_USER_FRAMES + 1;
	CHECK_EQ_INT(trace_handler__sample(w.th, &rec, sizeof(rec), 0), -EINVAL);
	CHECK_EQ_INT(trace_handler__stats(w.th)->bad_records, 3);
	CHECK_EQ_INT(trace_handler__stats(w.th)->samples, 0);
	CHECK_EQ_INT(profile__sample_cnt(w.prof), 0);
	/* more kernel frames than the record holds: capped, not read past the array */
	size = make_record(1, NULL, 0, NULL, 0, UNWIND_END_NO_USER);
	rec.kernel_frame_cnt = SS_MAX_KERNEL_FRAMES + 50;
	CHECK_EQ_INT(trace_handler__sample(w.th, &rec, size, 0), 0);
	CHECK_EQ_INT(trace_handler__stats(w.th)->kernel_frames, SS_MAX_KERNEL_FRAMES);
	world_free(&w);
}

static __attribute__((noinline, used)) int th_marker_function(int x)
{
	return x * 3 + 1;
}

/* Frames eBPF could not place: resolved through /proc when the process is there (this one),
 * "[unknown]" when it is not; an unknown file_id is resolved the same way.
 */
TEST(late_resolution)
{
	struct world w;
	struct user_frame uf[2];
	const struct trace_handler_stats *st;
	pid_t absent = (pid_t)(INT_MAX - 1);
	uint64_t own = (uint64_t)(uintptr_t)&th_marker_function;

	world_init(&w, true);
	st = trace_handler__stats(w.th);
	uf[0] = (struct user_frame){ .addr = own + 1, .flags = USER_FRAME_UNMAPPED };
	uf[1] = (struct user_frame){ .addr = own + 1, .file_id = 12345 };
	REQUIRE(trace_handler__sample(
			w.th, &rec, make_record(getpid(), NULL, 0, uf, 2, UNWIND_END_OK), 0) == 0);
	CHECK_STR(last_stack(&w, NULL, 0), "th_marker_function;th_marker_function");
	CHECK_EQ_INT(st->user_late_resolved, 2);
	if (kill(absent, 0) && errno == ESRCH) {
		REQUIRE(trace_handler__sample(w.th, &rec,
					      make_record(absent, NULL, 0, uf, 1, UNWIND_END_OK),
					      0) == 0);
		CHECK_STR(last_stack(&w, NULL, 0), "[unknown]");
		CHECK_EQ_INT(st->user_unresolved, 1);
	}
	world_free(&w);
}

/* symbolize = false: addresses and mappings only, names made at display time. */
TEST(unsymbolized)
{
	struct world w;
	uint64_t kip = KERNEL_TEXT + 0x110;
	struct user_frame uf;
	const struct profile_frame *f;
	const struct profile_agg_sample *s;
	const uint32_t *ids;
	uint32_t cnt;

	world_init(&w, false);
	uf = native(&w, w.alpha + 2, 0);
	REQUIRE(trace_handler__sample(w.th, &rec, make_record(9, &kip, 1, &uf, 1, UNWIND_END_OK),
				      0) == 0);
	s = profile__sample(w.prof, 0);
	REQUIRE(s);
	ids = profile__stack(w.prof, s->stack, &cnt);
	REQUIRE(ids && cnt == 2);
	f = profile__frame(w.prof, ids[0]);
	CHECK(f->kind == FRAME_KERNEL && f->line_cnt == 0 && f->address == kip);
	f = profile__frame(w.prof, ids[1]);
	CHECK(f->kind == FRAME_NATIVE && f->line_cnt == 0 && f->address == w.alpha + 2);
	CHECK_EQ_INT(trace_handler__stats(w.th)->kernel_unsymbolized, 1);
	CHECK_EQ_INT(trace_handler__stats(w.th)->user_unsymbolized, 1);
	world_free(&w);
}

/* Runtime (CPython) frames: without the runtime registry a "[runtime frame]" marker; with it,
 * the runtime's markers.
 */
TEST(python_frames)
{
	struct world w;
	struct user_frame uf[2] = {
		{ .addr = 0, .file_id = PY_MARKER_TRUNCATED, .kind = FRAME_KIND_CPYTHON },
		{ .addr = 0x7f0000001000ULL, .file_id = 3, .kind = FRAME_KIND_CPYTHON },
	};
	enum frame_kind kinds[3] = { 0 };
	struct interp_registry *py;

	world_init(&w, true);
	uf[1].addr = 0x7f0000001000ULL;
	REQUIRE(trace_handler__sample(w.th, &rec, make_record(55, NULL, 0, uf, 2, UNWIND_END_OK),
				      0) == 0);
	CHECK_STR(last_stack(&w, kinds, 3), "[runtime frame];[runtime frame]");
	CHECK_EQ_INT(kinds[0], FRAME_ERROR);
	py = interp_registry__new(-1, -1);
	REQUIRE(py);
	trace_handler__set_interp(w.th, py);
	REQUIRE(trace_handler__sample(w.th, &rec, make_record(55, NULL, 0, uf, 2, UNWIND_END_OK),
				      0) == 0);
	CHECK_STR(last_stack(&w, NULL, 0),
		  "[python: more frames truncated];[python: unknown process]");
	interp_registry__free(py);
	world_free(&w);
}

/* A new interval's profile: frames and mappings are added to it from scratch. */
TEST(set_profile)
{
	struct world w;
	struct profile_opts popts = { .period_ns = 10000000 };
	struct profile *next;
	struct user_frame uf;

	world_init(&w, true);
	uf = native(&w, w.beta + 3, 0);
	REQUIRE(trace_handler__sample(w.th, &rec, make_record(3, NULL, 0, &uf, 1, UNWIND_END_OK),
				      0) == 0);
	next = profile__new(&popts);
	REQUIRE(next);
	CHECK_EQ_INT(trace_handler__set_profile(w.th, next), 0);
	REQUIRE(trace_handler__sample(w.th, &rec, make_record(3, NULL, 0, &uf, 1, UNWIND_END_OK),
				      0) == 0);
	CHECK_EQ_INT(profile__sample_cnt(w.prof), 1);
	CHECK_EQ_INT(profile__sample_cnt(next), 1);
	CHECK_EQ_INT(profile__mapping_cnt(next), 1);
	CHECK_STR(profile__mapping(next, 1)->path, w.pie->path);
	profile__free(w.prof);
	w.prof = next;
	CHECK_STR(last_stack(&w, NULL, 0), "ss_beta");
	world_free(&w);
}

int main(void)
{
	RUN(kernel_and_native);
	RUN(unwind_pseudo_frames);
	RUN(malformed_records);
	RUN(late_resolution);
	RUN(unsymbolized);
	RUN(python_frames);
	RUN(set_profile);
	return test_summary();
}
