/* Replay tests of the eBPF native unwinder (bpf/native_unwind.h), without a kernel.
 *
 * The fixtures of tests/data/replay.mk walk a known call chain and write a snapshot of
 * themselves (tests/data/replay_snapshot.c): the registers of the interrupted leaf, the stack
 * bytes from its rsp to the top of [stack], and /proc/self/maps. Here the unwinder step is
 * compiled as ordinary C, unchanged, over that snapshot:
 *   - ss_read_user() serves the captured stack bytes only; every other address fails like an
 *     unreadable page;
 *   - ss_lookup_mapping() finds the executable mapping of the snapshot's maps, with the bias
 *     process.c would compute;
 *   - the tables are built from the real files on disk (unwind_table__build) and laid out by
 *     the production loader, unwind_maps__load_table(): its entry and rule arrays are memfds
 *     instead of BPF array maps, and its hash-map writes land in the stand-ins of
 *     tests/unit/replay_maps.h (shared with test_replay_interp.c). So the pages, entries
 *     and rules the unwinder reads are byte for byte what the kernel maps would hold.
 * The step is driven like sampler.bpf.c drives it (regs_valid = 1, at most 513 steps), and
 * the frames, symbolized with elf_symbols (return addresses at addr - 1), must match the
 * chain each fixture documents, leaf to _start.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi.h"
#include "formats/elf_file.h"
#include "proc/file_id.h"
#include "proc/maps.h"
#include "formats/elf_symbols.h"
#include "test.h"
#include "unwind/stack_replay.h"

#define REPLAY_OWN_TABLE_HOOKS /* files hidden, rules overridden: below */
#include "replay_maps.h"

/* ---- snapshots (format: tests/data/replay_snapshot.c) ---- */

#define SNAP_REG_CNT 17
#define SNAP_EXEC_CAP 64
#define SNAP_CACHE_CAP 16

struct snap_file_header {
	char magic[8];
	uint32_t version;
	uint32_t reg_cnt;
	uint64_t regs[SNAP_REG_CNT];
	uint64_t stack_sz;
	uint64_t maps_sz;
};

/* A file mapped executable by the fixture, with its table loaded and symbols read. */
struct replay_file {
	char *path;
	uint64_t file_id;
	struct elf_symbols *syms; /* NULL: no symbols */
	int table_err;            /* unwind_table__build() / load result */
};

struct snapshot {
	char name[64];
	char exe_path[PATH_MAX];
	uint64_t regs[SNAP_REG_CNT];
	uint64_t stack_addr;
	uint8_t *stack;
	size_t stack_sz;
	struct proc_maps maps;
	struct mapping_info exec[SNAP_EXEC_CAP];
	struct replay_file *exec_file[SNAP_EXEC_CAP];
	size_t exec_cnt;
};

static struct replay_file *loaded_files[REPLAY_FILE_CAP];
static size_t loaded_cnt;
static struct snapshot *snap_cache[SNAP_CACHE_CAP];
static size_t snap_cache_cnt;

/* What the ss_* functions serve; knobs for the negative tests (reset by replay_run's caller). */
static struct {
	const struct snapshot *snap;
	size_t readable_sz;       /* stack bytes readable from stack_addr (<= stack_sz) */
	uint64_t hidden_file_id;  /* ss_lookup_file() says "not loaded" for it */
	uint64_t waiting_file_id; /* deferred replays: its table "is being built" */
	bool rule_override;
	__u32 override_id; /* this rule id reads as override_rule */
	struct unwind_rule override_rule;
	uint64_t interp_lookups; /* files the runtimes' dispatch asked about */
} world;

static uint64_t replay_file_id(const char *path)
{
	uint64_t id = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		file_id__of_fd(fd, &id);
	if (fd >= 0)
		close(fd);
	return id;
}

/* The file at path (opened, table built and loaded once for the whole run), or NULL. */
static struct replay_file *replay_file_get(const char *path)
{
	struct replay_file *rf = NULL;
	struct elf_file *ef;
	size_t i;

	for (i = 0; i < loaded_cnt; i++)
		if (!strcmp(loaded_files[i]->path, path))
			return loaded_files[i];
	if (loaded_cnt == REPLAY_FILE_CAP)
		return NULL;
	ef = elf_file__open(path);
	if (!ef)
		return NULL;
	rf = calloc(1, sizeof(*rf));
	if (!rf || !(rf->path = strdup(path))) {
		free(rf);
		elf_file__free(ef);
		return NULL;
	}
	rf->file_id = replay_file_id(path);
	rf->syms = elf_symbols__load(ef);
	rf->table_err = kmaps_load_table(ef, rf->file_id);
	elf_file__free(ef);
	loaded_files[loaded_cnt++] = rf;
	return rf;
}

static void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	free(s->stack);
	proc_maps__free(&s->maps);
	free(s);
}

static int read_file(const char *path, uint8_t **out, size_t *out_sz)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0, r;
	int err = 0;

	if (!f)
		return -errno;
	do {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r);
	if (ferror(f))
		err = -EIO;
out:
	fclose(f);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_sz = n;
	return 0;
}

/* Run fixture `name` and load its snapshot (cached: each fixture runs once). */
static const struct snapshot *snapshot_get(const char *name)
{
	char tmp[] = "/tmp/stackscope_replay_XXXXXX", cmd[PATH_MAX * 2 + 16];
	struct snap_file_header h;
	struct snapshot *s = NULL;
	uint8_t *raw = NULL;
	size_t raw_sz = 0, i;
	char *maps_text = NULL;
	int fd, rc;

	for (i = 0; i < snap_cache_cnt; i++)
		if (!strcmp(snap_cache[i]->name, name))
			return snap_cache[i];
	REQUIRE(snap_cache_cnt < SNAP_CACHE_CAP);
	s = calloc(1, sizeof(*s));
	REQUIRE(s);
	snprintf(s->name, sizeof(s->name), "%s", name);
	if (!realpath(test_fixture(name), s->exe_path)) {
		test__fail("fixture %s missing (make fixtures)", test_fixture(name));
		goto fail;
	}
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail;
	close(fd);
	snprintf(cmd, sizeof(cmd), "'%s' '%s'", s->exe_path, tmp);
	rc = system(cmd);
	if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc)) {
		test__fail("%s exited with status %d", name, rc);
		unlink(tmp);
		goto fail;
	}
	rc = read_file(tmp, &raw, &raw_sz);
	unlink(tmp);
	if (rc || raw_sz < sizeof(h)) {
		test__fail("%s: cannot read its snapshot (%d)", name, rc);
		goto fail;
	}
	memcpy(&h, raw, sizeof(h));
	if (memcmp(h.magic, "SSREPLAY", 8) || h.version != 1 || h.reg_cnt != SNAP_REG_CNT ||
	    h.stack_sz > raw_sz - sizeof(h) || h.maps_sz != raw_sz - sizeof(h) - h.stack_sz) {
		test__fail("%s: bad snapshot", name);
		goto fail;
	}
	memcpy(s->regs, h.regs, sizeof(s->regs));
	s->stack_addr = h.regs[DWARF_RSP];
	s->stack_sz = h.stack_sz;
	s->stack = malloc(s->stack_sz ? s->stack_sz : 1);
	maps_text = malloc(h.maps_sz + 1);
	if (!s->stack || !maps_text)
		goto fail;
	memcpy(s->stack, raw + sizeof(h), s->stack_sz);
	memcpy(maps_text, raw + sizeof(h) + s->stack_sz, h.maps_sz);
	maps_text[h.maps_sz] = '\0';
	if (proc_maps__parse(maps_text, &s->maps)) {
		test__fail("%s: bad maps text", name);
		goto fail;
	}
	/* The executable mappings, as process.c turns them into "mappings" entries. */
	for (i = 0; i < s->maps.cnt; i++) {
		const struct proc_map *m = &s->maps.maps[i];
		struct replay_file *rf;
		struct elf_file *ef;
		uint64_t vaddr;
		int err;

		if (!(m->perms & PROC_MAP_EXEC) || m->path[0] != '/')
			continue;
		REQUIRE(s->exec_cnt < SNAP_EXEC_CAP);
		rf = replay_file_get(m->path);
		ef = elf_file__open(m->path);
		if (!rf || !ef) {
			elf_file__free(ef);
			test__fail("%s: cannot open %s", name, m->path);
			goto fail;
		}
		err = elf_file__offset_to_vaddr(ef, m->offset, &vaddr);
		elf_file__free(ef);
		if (err) {
			test__fail("%s: %s: no segment at offset 0x%" PRIx64, name, m->path,
				   m->offset);
			goto fail;
		}
		s->exec[s->exec_cnt] = (struct mapping_info){
			.file_id = rf->file_id,
			.bias = m->start - vaddr,
			.start = m->start,
			.end = m->end,
		};
		s->exec_file[s->exec_cnt++] = rf;
	}
	free(maps_text);
	free(raw);
	snap_cache[snap_cache_cnt++] = s;
	return s;
fail:
	free(maps_text);
	free(raw);
	snapshot_free(s);
	longjmp(test__abort, 1);
}

/* ---- the world as native_unwind.h sees it ---- */

static int ss_read_user(void *dst, __u32 size, __u64 addr)
{
	const struct snapshot *s = world.snap;

	if (addr < s->stack_addr || addr - s->stack_addr > world.readable_sz ||
	    size > world.readable_sz - (addr - s->stack_addr)) {
		memset(dst, 0, size); /* bpf_probe_read_user() zeroes on failure */
		return -EFAULT;
	}
	memcpy(dst, s->stack + (addr - s->stack_addr), size);
	return 0;
}

static struct mapping_info *ss_lookup_mapping(__u32 pid, __u64 pc)
{
	static struct mapping_info found;
	const struct snapshot *s = world.snap;
	size_t i;

	(void)pid;
	for (i = 0; i < s->exec_cnt; i++) {
		if (pc >= s->exec[i].start && pc < s->exec[i].end) {
			found = s->exec[i];
			return &found;
		}
	}
	return NULL;
}

static struct file_info *ss_lookup_file(__u64 file_id)
{
	return file_id == world.hidden_file_id ? NULL : kmaps_file(file_id);
}

/* A file without a table has no pages either (the unwinder reads its flags only then). */
static struct unwind_page *ss_lookup_page(__u64 file_id, __u64 page)
{
	return file_id == world.hidden_file_id ? NULL : kmaps_page(file_id, page);
}

static struct unwind_rule *ss_lookup_rule(__u32 index)
{
	static struct unwind_rule r;

	if (world.rule_override && index == world.override_id) {
		r = world.override_rule;
		return &r;
	}
	return kmaps_rule(index);
}

#include "native_unwind.h"

/* The runtimes' dispatch (bpf/interp/dispatch.h) runs in front of every native step, as in
 * sampler.bpf.c; the native fixtures map no interpreter (the runtimes' maps stay empty), so it
 * must leave their walks exactly as they are.
 */
static struct interp_file *ss_interp_file(__u64 file_id)
{
	world.interp_lookups++;
	return kmaps_interp_file(file_id);
}

static void ss_interp_count(__u32 runtime, __u32 which)
{
	(void)runtime;
	(void)which;
}

#include "interp/dispatch.h"

/* ---- running and checking ---- */

struct replay_result {
	struct unwind_cursor st;
	struct interp_cursor ic;
	struct user_frame frames[SS_MAX_USER_FRAMES];
	uint64_t sp[SS_MAX_USER_FRAMES]; /* rsp of each frame as the step saw it */
	int steps;
	bool sp_rose; /* every step that went on moved rsp up */
};

/* Frame i, symbolized: its file's short name ("exe" for the fixture) and function. */
struct named_frame {
	char obj[64];
	const char *sym; /* NULL: no symbol */
	uint64_t off;
};

static void world_reset(const struct snapshot *s)
{
	memset(&world, 0, sizeof(world));
	world.snap = s;
	world.readable_sz = s->stack_sz;
	kmaps_interp_clear(); /* native fixtures: no runtime in the maps */
}

/* Unwind like on_sample(): all registers valid at the start, at most 513 steps. */
static void replay_run(struct replay_result *res)
{
	const struct snapshot *s = world.snap;
	int i;

	memset(res, 0, sizeof(*res));
	res->st.pid = 4242;
	memcpy(res->st.regs, s->regs, sizeof(res->st.regs));
	res->st.regs_valid = 1;
	res->sp_rose = true;
	ss_interp_reset(&res->ic, 0, 0);
	for (i = 0; i < SS_MAX_USER_FRAMES + 1 && !res->st.done; i++) {
		uint64_t sp = res->st.regs[DWARF_RSP];
		__u32 before = res->st.frame_cnt;

		if (ss_interp_step(&res->st, &res->ic, res->frames))
			continue; /* a runtime frame: the native step waits */
		ss_unwind_step(&res->st, res->frames);
		if (res->st.frame_cnt > before && before < SS_MAX_USER_FRAMES)
			res->sp[before] = sp;
		if (!res->st.done && res->st.regs[DWARF_RSP] <= sp)
			res->sp_rose = false;
		res->steps++;
	}
}

static const struct replay_file *file_of(uint64_t file_id)
{
	size_t i;

	for (i = 0; i < loaded_cnt; i++)
		if (loaded_files[i]->file_id == file_id)
			return loaded_files[i];
	return NULL;
}

static void name_frame(const struct snapshot *s, const struct user_frame *fr,
		       struct named_frame *out)
{
	const struct replay_file *rf = file_of(fr->file_id);
	const char *base, *so;
	uint64_t addr = fr->addr - ((fr->flags & USER_FRAME_RETURN) ? 1 : 0);

	memset(out, 0, sizeof(*out));
	if (!fr->file_id || !rf) {
		snprintf(out->obj, sizeof(out->obj), "?");
		return;
	}
	if (!strcmp(rf->path, s->exe_path)) {
		snprintf(out->obj, sizeof(out->obj), "exe");
	} else {
		base = strrchr(rf->path, '/');
		base = base ? base + 1 : rf->path;
		so = strstr(base, ".so");
		snprintf(out->obj, sizeof(out->obj), "%.*s", (int)(so ? so - base : 63), base);
	}
	out->sym = rf->syms ? elf_symbols__lookup(rf->syms, addr, &out->off) : NULL;
}

static const char *end_name(unsigned int end)
{
	static const char *const names[] = {
		"ok",     "truncated",   "no cfi",   "unknown file", "read failed",
		"bad pc", "unsupported", "unmapped", "bad frame",    "no user",
	};

	return end < sizeof(names) / sizeof(names[0]) ? names[end] : "?";
}

static void print_frames(const struct replay_result *res)
{
	const struct snapshot *s = world.snap;
	__u32 i;

	printf("  %s: %u frames, end %s, %u via frame pointer\n", s->name, res->st.frame_cnt,
	       end_name(res->st.end), res->st.fp_frame_cnt);
	for (i = 0; i < res->st.frame_cnt; i++) {
		struct named_frame nf;
		const struct user_frame *fr = &res->frames[i];
		__u32 same = 0;

		while (i + same + 1 < res->st.frame_cnt &&
		       !memcmp(&res->frames[i + same + 1], fr, sizeof(*fr)))
			same++;
		if (i > 0 && same > 1 && !memcmp(&res->frames[i - 1], fr, sizeof(*fr))) {
			printf("    ... %u more\n", same);
			i += same - 1;
			continue;
		}
		name_frame(s, fr, &nf);
		printf("    #%-3u %s:%s+0x%" PRIx64 " [%#" PRIx64 "]%s%s%s%s\n", i, nf.obj,
		       nf.sym ? nf.sym : "?", nf.off, (uint64_t)fr->addr,
		       fr->flags & USER_FRAME_RETURN ? " ret" : "",
		       fr->flags & USER_FRAME_FP ? " FP" : "",
		       fr->flags & USER_FRAME_SIGNAL ? " SIGNAL" : "",
		       fr->flags & USER_FRAME_UNMAPPED ? " UNMAPPED" : "");
	}
}

/* One element of an expected chain: "obj:sym" or "obj:sym{n}" or "obj:sym{min,max}";
 * sym may be "*" (anything, also no symbol) or alternatives "a|b", where "?" is no symbol.
 */
struct chain_item {
	char obj[64];
	char sym[256];
	unsigned int min, max;
};

static int parse_chain(const char *spec, struct chain_item *items, size_t cap)
{
	size_t n = 0;
	const char *p = spec;

	while (*p) {
		const char *tok_end, *colon, *brace;
		struct chain_item *it;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (n == cap)
			return -1;
		it = &items[n++];
		tok_end = strchr(p, ' ');
		if (!tok_end)
			tok_end = p + strlen(p);
		colon = memchr(p, ':', (size_t)(tok_end - p));
		if (!colon)
			return -1;
		brace = memchr(colon, '{', (size_t)(tok_end - colon));
		snprintf(it->obj, sizeof(it->obj), "%.*s", (int)(colon - p), p);
		snprintf(it->sym, sizeof(it->sym), "%.*s",
			 (int)((brace ? brace : tok_end) - colon - 1), colon + 1);
		it->min = it->max = 1;
		if (brace) {
			char *e;

			it->min = it->max = (unsigned int)strtoul(brace + 1, &e, 10);
			if (*e == ',')
				it->max = (unsigned int)strtoul(e + 1, &e, 10);
			if (*e != '}' || it->max < it->min)
				return -1;
		}
		p = tok_end;
	}
	return (int)n;
}

static bool item_matches(const struct chain_item *it, const struct named_frame *nf)
{
	const char *alt = it->sym;

	if (strcmp(it->obj, nf->obj))
		return false;
	if (!strcmp(alt, "*"))
		return true;
	while (*alt) {
		const char *bar = strchr(alt, '|');
		size_t len = bar ? (size_t)(bar - alt) : strlen(alt);

		if (len == 1 && *alt == '?' && !nf->sym)
			return true;
		if (nf->sym && strlen(nf->sym) == len && !memcmp(nf->sym, alt, len))
			return true;
		if (!bar)
			break;
		alt = bar + 1;
	}
	return false;
}

/* Backtracking match of frames[fi..] against items[ii..]; shortest repetitions first. */
static bool chain_match(const struct chain_item *items, size_t item_cnt, size_t ii,
			const struct named_frame *frames, size_t frame_cnt, size_t fi)
{
	unsigned int k;

	if (ii == item_cnt)
		return fi == frame_cnt;
	for (k = 0; k < items[ii].min; k++)
		if (fi + k >= frame_cnt || !item_matches(&items[ii], &frames[fi + k]))
			return false;
	for (k = items[ii].min;; k++) {
		if (chain_match(items, item_cnt, ii + 1, frames, frame_cnt, fi + k))
			return true;
		if (k == items[ii].max || fi + k >= frame_cnt ||
		    !item_matches(&items[ii], &frames[fi + k]))
			return false;
	}
}

/* The frames of res, leaf first, must be exactly `spec`. */
static bool check_chain(const struct replay_result *res, const char *spec)
{
	static struct named_frame named[SS_MAX_USER_FRAMES];
	struct chain_item items[32];
	int item_cnt = parse_chain(spec, items, 32);
	__u32 i;

	REQUIRE(item_cnt > 0);
	for (i = 0; i < res->st.frame_cnt; i++)
		name_frame(world.snap, &res->frames[i], &named[i]);
	if (chain_match(items, (size_t)item_cnt, 0, named, res->st.frame_cnt, 0))
		return true;
	test__fail("%s: frames do not match \"%s\"", world.snap->name, spec);
	print_frames(res);
	return false;
}

/* Index of the first frame in `obj` named `sym`, or -1. */
static int find_frame(const struct replay_result *res, const char *obj, const char *sym)
{
	__u32 i;

	for (i = 0; i < res->st.frame_cnt; i++) {
		struct named_frame nf;

		name_frame(world.snap, &res->frames[i], &nf);
		if (!strcmp(nf.obj, obj) && nf.sym && !strcmp(nf.sym, sym))
			return (int)i;
	}
	return -1;
}

/* How every fixture's stack ends (glibc >= 2.34): main's caller in libc,
 * __libc_start_call_main (a local symbol, absent from a stripped libc), __libc_start_main,
 * then the executable's _start, whose STOP rule ends the unwind.
 */
#define LIBC_ROOT                                                                      \
	"libc:__libc_start_call_main|? libc:__libc_start_main|__libc_start_main_impl " \
	"exe:_start"

/* The common checks of a successful CFI unwind: complete, no frame-pointer step, the leaf
 * exact (flags 0, the pc the registers had), every other frame a return address unless the
 * caller of a signal frame, rsp rising at every step.
 */
static void check_cfi_unwind(const struct replay_result *res)
{
	const struct snapshot *s = world.snap;
	struct mapping_info *m;
	__u32 i;
	bool ok = true;

	CHECK_EQ_INT(res->st.done, 1);
	CHECK_EQ_INT(res->st.end, UNWIND_END_OK);
	CHECK_EQ_INT(res->st.fp_frame_cnt, 0);
	CHECK(res->sp_rose);
	CHECK(res->steps <= SS_MAX_USER_FRAMES + 1);
	REQUIRE(res->st.frame_cnt > 0);
	m = ss_lookup_mapping(0, s->regs[DWARF_RIP]);
	REQUIRE(m);
	CHECK_EQ_U64(res->frames[0].addr, s->regs[DWARF_RIP] - m->bias);
	CHECK_EQ_INT(res->frames[0].flags, 0);
	for (i = 0; i < res->st.frame_cnt; i++) {
		__u32 fl = res->frames[i].flags;

		if (fl & (USER_FRAME_FP | USER_FRAME_UNMAPPED)) {
			test__fail("frame %u has flags %#x", i, fl);
			ok = false;
		}
		if (i > 0 && !(fl & USER_FRAME_SIGNAL) && !(fl & USER_FRAME_RETURN)) {
			test__fail("frame %u is not a return address", i);
			ok = false;
		}
	}
	if (!ok)
		print_frames(res);
}

/* The rule the unwinder used for frame i (NULL: none). */
static const struct unwind_rule *rule_of_frame(const struct replay_result *r, __u32 i)
{
	const struct user_frame *fr = &r->frames[i];

	return ss_find_rule(fr->file_id, fr->addr - ((fr->flags & USER_FRAME_RETURN) ? 1 : 0));
}

static struct replay_result res; /* 16 KiB: not on the stack */

static void replay_fixture(const char *name)
{
	world_reset(snapshot_get(name));
	replay_run(&res);
	if (getenv("REPLAY_VERBOSE"))
		print_frames(&res);
}

/* ---- tests ---- */

TEST(tables_loaded)
{
	const struct snapshot *s = snapshot_get("replay_cxx");
	size_t i;
	bool libc = false, libstdcxx = false, ld = false;

	/* Every executable file mapping got its table through the production loader. */
	for (i = 0; i < s->exec_cnt; i++) {
		const struct replay_file *rf = s->exec_file[i];
		const char *base = strrchr(rf->path, '/') + 1;

		if (rf->table_err)
			test__fail("%s: table: %s", rf->path, strerror(-rf->table_err));
		libc |= !strncmp(base, "libc.so", 7);
		libstdcxx |= !strncmp(base, "libstdc++", 9);
		ld |= !strncmp(base, "ld-linux", 8);
	}
	CHECK(libc);
	CHECK(libstdcxx);
	CHECK(ld);
	CHECK(kmaps.pages.cnt > 0);
	for (i = 0; i < kmaps.pages.cnt; i++) {
		const struct unwind_page *p =
			(const struct unwind_page *)(kmaps.pages.vals + i * kmaps.pages.val_sz);

		/* A lookup never leaves its page, nor the page its segment: entry `first` is the
		 * page start.
		 */
		REQUIRE(p->cnt > 0 && kmaps_entry(p->first + p->cnt - 1));
		CHECK_EQ_INT(p->first >> UNWIND_SEGMENT_SHIFT,
			     (p->first + p->cnt - 1) >> UNWIND_SEGMENT_SHIFT);
		CHECK_EQ_INT(kmaps_entry(p->first)->page_off, 0);
	}
}

/* The rule of the last of a page's entries whose page_off <= off, read one by one. */
static int page_rule_linear(const struct unwind_page *p, __u32 off)
{
	__u32 i;

	for (i = p->first; i + 1 < p->first + p->cnt && kmaps_entry(i + 1)->page_off <= off; i++)
		;
	return kmaps_entry(i)->rule;
}

/* The entry pool grows a segment at a time (bpf/abi.h): the tables that no longer fit in the
 * segments made open the next one, never crossing into it, and a page search there finds what
 * its entries say, as in the first.
 */
TEST(pool_segments)
{
	const struct snapshot *s = snapshot_get("replay_cxx");
	const struct unwind_maps_stats *st = unwind_maps__stats(kmaps.um);
	const char *libc = NULL;
	struct unwind_table *t = NULL;
	struct elf_file *ef = NULL;
	const uint64_t base_id = 0x5e67000000000000ull;
	uint64_t segs = st->segments;
	uint32_t first = 0, cnt = 0, off, seq_first = 0, seq_last = 0, seq_again = 0;
	size_t i, n, pages = 0;

	for (i = 0; i < s->exec_cnt; i++)
		if (strstr(s->exec_file[i]->path, "/libc.so"))
			libc = s->exec_file[i]->path;
	REQUIRE(libc);
	/* the fixtures' tables fit in the first segment: nothing more was made */
	CHECK_EQ_INT(segs, 1);
	CHECK_EQ_INT(st->entries_created, UNWIND_SEGMENT_ENTRIES);
	ef = elf_file__open(libc);
	REQUIRE(ef && !unwind_table__build(ef, NULL, &t));
	for (n = 0; st->segments == segs && n < 256; n++)
		if (unwind_maps__load_table(kmaps.um, base_id + n, t, &first, &cnt)) {
			test__fail("copy %zu of libc's table: not loaded", n);
			break;
		}
	CHECK_EQ_INT(st->segments, segs + 1);
	CHECK_EQ_INT(st->entries_created, (segs + 1) * UNWIND_SEGMENT_ENTRIES);
	CHECK_EQ_INT(first,
		     segs << UNWIND_SEGMENT_SHIFT); /* the last copy: the new segment's start */
	for (i = 0; i < kmaps.pages.cnt; i++) {
		const struct unwind_page *p =
			(const struct unwind_page *)(kmaps.pages.vals + i * kmaps.pages.val_sz);
		const struct unwind_page_key *k =
			(const struct unwind_page_key *)(kmaps.pages.keys + i * kmaps.pages.key_sz);

		if (k->file_id == base_id)
			seq_first = p->load_seq;
		if (k->file_id != base_id + n - 1)
			continue;
		pages++;
		/* one number for every page of a load (eBPF keys its remembered searches by it) */
		CHECK(p->load_seq && (!seq_last || p->load_seq == seq_last));
		seq_last = p->load_seq;
		CHECK_EQ_INT(p->first >> UNWIND_SEGMENT_SHIFT, segs);
		for (off = 0; off < (1u << UNWIND_PAGE_SHIFT); off += 0x1000)
			CHECK_EQ_INT(ss_page_entry_rule(p->first, p->cnt, off),
				     page_rule_linear(p, off));
	}
	CHECK(pages > 0);
	/* each load a new number, also a file's load after its unload */
	CHECK(seq_first && seq_first != seq_last);
	unwind_maps__unload_file(kmaps.um, base_id);
	REQUIRE(!unwind_maps__load_table(kmaps.um, base_id, t, &first, &cnt));
	for (i = 0; i < kmaps.pages.cnt; i++)
		if (((const struct unwind_page_key *)(kmaps.pages.keys + i * kmaps.pages.key_sz))
			    ->file_id == base_id)
			seq_again = ((const struct unwind_page *)(kmaps.pages.vals +
								  i * kmaps.pages.val_sz))
					    ->load_seq;
	CHECK(seq_again && seq_again != seq_first && seq_again != seq_last);
	for (i = 0; i < n; i++)
		unwind_maps__unload_file(kmaps.um, base_id + i);
	unwind_table__free(t);
	elf_file__free(ef);
}

/* A table larger than a segment (wl_huge_cfi: 1.2M rows, the CFA moving at every byte) is
 * split at its pages across segments: each page's entries in one segment, and at every
 * 256th byte the page search gives the CFA offset the table has there.
 */
TEST(huge_table)
{
	const struct unwind_maps_stats *st = unwind_maps__stats(kmaps.um);
	const uint64_t file_id = 0x4a6e000000000000ull;
	uint64_t split = st->tables_split, used = st->entries_used;
	struct unwind_table *t = NULL;
	struct elf_file *ef = elf_file__open(test_fixture("wl_huge_cfi"));
	uint32_t first = 0, cnt = 0, off, seg_seen = 0, checked = 0, wrong = 0;
	size_t i, pages = 0;

	REQUIRE(ef && !unwind_table__build(ef, NULL, &t));
	CHECK(unwind_table__row_cnt(t) > UNWIND_SEGMENT_ENTRIES);
	REQUIRE(!unwind_maps__load_table(kmaps.um, file_id, t, &first, &cnt));
	CHECK(cnt > UNWIND_SEGMENT_ENTRIES);
	CHECK_EQ_INT(st->tables_split, split + 1);
	CHECK_EQ_INT(st->entries_used, used + cnt);
	for (i = 0; i < kmaps.pages.cnt; i++) {
		const struct unwind_page *p =
			(const struct unwind_page *)(kmaps.pages.vals + i * kmaps.pages.val_sz);
		const struct unwind_page_key *k =
			(const struct unwind_page_key *)(kmaps.pages.keys + i * kmaps.pages.key_sz);

		if (k->file_id != file_id)
			continue;
		pages++;
		seg_seen |= 1u << (p->first >> UNWIND_SEGMENT_SHIFT);
		CHECK((p->first & UNWIND_SEGMENT_INDEX_MASK) + p->cnt <= UNWIND_SEGMENT_ENTRIES);
		for (off = 0; off < (1u << UNWIND_PAGE_SHIFT); off += 256) {
			uint64_t addr = (k->page << UNWIND_PAGE_SHIFT) + off;
			const struct unwind_row *row = unwind_table__find(t, addr);
			int rule = ss_page_entry_rule(p->first, p->cnt, off);
			const struct unwind_rule *r = rule >= 0 ? kmaps_rule((__u32)rule) : NULL;

			if (!row || row->rule.kind == UNWIND_RULE_INVALID)
				continue;
			checked++;
			if (!r || r->kind != row->rule.kind || r->cfa_off != row->rule.cfa_off)
				wrong++;
		}
	}
	CHECK(pages >= 18);
	CHECK(__builtin_popcount(seg_seen) >= 2); /* the pages in more than one segment */
	CHECK(checked > 4000);
	CHECK_EQ_INT(wrong, 0);
	unwind_maps__unload_file(kmaps.um, file_id);
	CHECK_EQ_INT(st->entries_used, used);
	unwind_table__free(t);
	elf_file__free(ef);
}

#define CHAIN "exe:take_snapshot exe:replay_c exe:replay_b exe:replay_a exe:main " LIBC_ROOT

TEST(chain_gcc)
{
	const struct unwind_rule *r;

	replay_fixture("replay_chain_gcc");
	check_cfi_unwind(&res);
	if (!check_chain(&res, CHAIN))
		return;
	/* replay_b's realigned frame: CFA = *(rbp - 8), the DRAP slot; rbp saved at [rbp]. */
	r = rule_of_frame(&res, 2);
	REQUIRE(r);
	CHECK_EQ_INT(r->kind, UNWIND_RULE_CFA_DEREF);
	CHECK_EQ_INT(r->cfa_reg, DWARF_RBP);
	CHECK_EQ_INT(r->rbp_rule, UNWIND_RBP_RBP_OFF);
}

TEST(chain_clang)
{
	replay_fixture("replay_chain_clang");
	check_cfi_unwind(&res);
	check_chain(&res, CHAIN);
	/* the runtimes' dispatch looked at the files of the walk (and found no interpreter) */
	CHECK(world.interp_lookups > 0);
}

TEST(qsort_callback)
{
	replay_fixture("replay_qsort");
	check_cfi_unwind(&res);
	/* qsort's internal frames (msort_with_tmp, qsort_r) are local symbols in libc. */
	check_chain(&res, "exe:take_snapshot exe:replay_cmp libc:*{1,16} exe:replay_sort "
			  "exe:replay_a exe:main " LIBC_ROOT);
}

TEST(recursion_300)
{
	replay_fixture("replay_recurse");
	check_cfi_unwind(&res);
	CHECK(res.st.frame_cnt >= 300);
	check_chain(&res,
		    "exe:take_snapshot exe:replay_recurse{301} exe:replay_a exe:main " LIBC_ROOT);
}

static void check_signal(const char *fixture)
{
	int hot;

	replay_fixture(fixture);
	check_cfi_unwind(&res);
	/* __restore_rt is a local symbol of libc. */
	check_chain(&res, "exe:take_snapshot exe:replay_in_handler exe:on_alarm "
			  "libc:__restore_rt|? exe:hot_loop exe:replay_a exe:main " LIBC_ROOT);
	hot = find_frame(&res, "exe", "hot_loop");
	REQUIRE(hot > 0);
	/* The interrupted frame: an exact pc, flagged, looked up without the -1. */
	CHECK_EQ_INT(res.frames[hot].flags, USER_FRAME_SIGNAL);
	CHECK(res.frames[hot - 1].flags & USER_FRAME_RETURN);
}

TEST(signal_frame_gcc)
{
	check_signal("replay_signal");
}

TEST(signal_frame_clang)
{
	check_signal("replay_signal_clang");
}

/* Through C++ template code in the executable, libc's pthread_once (std::call_once) and
 * libstdc++'s ostream inserter calling a virtual function of the executable.
 */
TEST(cxx_sort_ostream)
{
	__u32 i;
	bool insert = false;

	replay_fixture("replay_cxx");
	check_cfi_unwind(&res);
	check_chain(&res, "exe:take_snapshot exe:_ZN9ReplayBuf6xsputnEPKcl libstdc++:*{1,3} "
			  "exe:_Z11replay_oncei libc:*{1,3} exe:*{0,2} exe:_Z10replay_cmpii "
			  "exe:*{1,4} exe:_Z11replay_sorti exe:_Z8replay_ai exe:main " LIBC_ROOT);
	for (i = 0; i < res.st.frame_cnt; i++) {
		struct named_frame nf;

		name_frame(world.snap, &res.frames[i], &nf);
		if (!strcmp(nf.obj, "libstdc++") && nf.sym &&
		    !strncmp(nf.sym, "_ZSt16__ostream_insert", 22))
			insert = true;
	}
	CHECK(insert);
}

/* replay_b's last instruction calls replay_c (noreturn): the return address is past its end,
 * and only the lookup at address - 1 finds replay_b's rule.
 */
TEST(noreturn_call)
{
	replay_fixture("replay_noreturn");
	check_cfi_unwind(&res);
	check_chain(&res, CHAIN);
}

/* A pc in a lazy-binding PLT entry, as if replay_c had just called through it: rsp points at
 * the return address into replay_c (the captured slot below take_snapshot's CFA); at offset
 * 11 of the entry `push $n` has run and one more word is on the stack. The entry's CFI is
 * the linker's expression, UNWIND_RULE_PLT: CFA = rsp + 8, + 8 from offset 11.
 */
TEST(plt_entry)
{
	static const struct {
		unsigned int off;   /* in the 16-byte entry */
		unsigned int below; /* bytes pushed below the return address */
	} at[] = { { 0, 0 }, { 6, 0 }, { 11, 8 } };
	const struct snapshot *s = snapshot_get("replay_chain_gcc");
	struct snapshot fake;
	struct elf_section plt;
	struct elf_file *ef;
	const struct mapping_info *m;
	uint64_t sp_c;
	size_t i;
	int err;

	world_reset(s);
	replay_run(&res);
	REQUIRE(res.st.frame_cnt > 2);
	sp_c = res.sp[1]; /* replay_c's rsp: its return address is at sp_c - 8 */
	m = ss_lookup_mapping(0, s->regs[DWARF_RIP]);
	REQUIRE(m);
	ef = elf_file__open(s->exe_path);
	REQUIRE(ef);
	err = elf_file__section(ef, ".plt", &plt);
	elf_file__free(ef);
	REQUIRE(!err && plt.size >= 32);

	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		const struct unwind_rule *r;

		fake = *s;
		snprintf(fake.name, sizeof(fake.name), "%.40s, plt+%u", s->name, 16 + at[i].off);
		fake.regs[DWARF_RIP] = m->bias + plt.addr + 16 + at[i].off;
		fake.regs[DWARF_RSP] = sp_c - 8 - at[i].below;
		world_reset(&fake);
		replay_run(&res);
		check_cfi_unwind(&res);
		check_chain(&res,
			    "exe:* exe:replay_c exe:replay_b exe:replay_a exe:main " LIBC_ROOT);
		r = rule_of_frame(&res, 0);
		REQUIRE(r);
		CHECK_EQ_INT(r->kind, UNWIND_RULE_PLT);
	}
}

/* With the executable's table missing, its frames fall back to the frame pointer (flagged
 * FP); libc's frames still use CFI, and the chain comes out whole.
 */
TEST(no_table_frame_pointers)
{
	const struct snapshot *s;
	const struct replay_file *exe;
	__u32 i;

	replay_fixture("replay_chain_fp");
	check_cfi_unwind(&res);
	if (!check_chain(&res, CHAIN))
		return;
	/* replay_a's CFA is rbp-based: it needs the rbp replay_b's DRAP frame saved at [rbp]. */
	REQUIRE(rule_of_frame(&res, 2) && rule_of_frame(&res, 3));
	CHECK_EQ_INT(rule_of_frame(&res, 2)->kind, UNWIND_RULE_CFA_DEREF);
	CHECK_EQ_INT(rule_of_frame(&res, 2)->rbp_rule, UNWIND_RBP_RBP_OFF);
	CHECK_EQ_INT(rule_of_frame(&res, 3)->cfa_reg, DWARF_RBP);

	s = world.snap;
	exe = s->exec_file[0];
	REQUIRE(!strcmp(exe->path, s->exe_path));
	world_reset(s);
	world.hidden_file_id = exe->file_id;
	replay_run(&res);
	CHECK_EQ_INT(res.st.end, UNWIND_END_OK);
	CHECK(res.sp_rose);
	check_chain(&res, CHAIN);
	for (i = 0; i < res.st.frame_cnt; i++) {
		bool in_exe = res.frames[i].file_id == exe->file_id;

		if (!!(res.frames[i].flags & USER_FRAME_FP) != in_exe) {
			test__fail("frame %u: flags %#x", i, res.frames[i].flags);
			print_frames(&res);
			break;
		}
	}
	CHECK(res.st.fp_frame_cnt >= 5);
}

/* Without frame pointers, the fallback cannot find the callers: the leaf is flagged FP and
 * the stack stops early, within the step bound.
 */
TEST(no_table_without_frame_pointers)
{
	const struct snapshot *s = snapshot_get("replay_chain_gcc");

	world_reset(s);
	world.hidden_file_id = s->exec_file[0]->file_id;
	REQUIRE(!strcmp(s->exec_file[0]->path, s->exe_path));
	replay_run(&res);
	CHECK_EQ_INT(res.st.done, 1);
	CHECK(res.st.frame_cnt >= 1);
	CHECK(res.frames[0].flags & USER_FRAME_FP);
	CHECK(find_frame(&res, "exe", "main") < 0);
	/* rbp is a general register here; 0 would read as the end of an FP chain (OK). */
	if (s->regs[DWARF_RBP] != 0)
		CHECK(res.st.end != UNWIND_END_OK);
	CHECK(res.sp_rose);
	if (getenv("REPLAY_VERBOSE"))
		print_frames(&res);
}

/* The stack ends being readable inside replay_b's frame: the unwind stops there with
 * READ_FAILED, after the frames it could prove.
 */
TEST(corrupt_unreadable_stack)
{
	const struct snapshot *s = snapshot_get("replay_chain_gcc");
	int b;

	world_reset(s);
	replay_run(&res);
	b = find_frame(&res, "exe", "replay_b");
	REQUIRE(b == 2);
	world.readable_sz = res.sp[b] - s->stack_addr;
	replay_run(&res);
	CHECK_EQ_INT(res.st.done, 1);
	CHECK_EQ_INT(res.st.end, UNWIND_END_READ_FAILED);
	CHECK(res.sp_rose);
	check_chain(&res, "exe:take_snapshot exe:replay_c exe:replay_b");
}

/* Replay s with its stack bytes overwritten from the rsp of frame `depth` up (zeroes or
 * garbage) into res; the snapshot is restored afterwards.
 */
static void overwrite_run(struct snapshot *s, int depth, bool garbage)
{
	static uint8_t saved[1 << 20];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	size_t from, n, i;

	world_reset(s);
	replay_run(&res);
	REQUIRE(check_chain(&res, CHAIN));
	from = res.sp[depth] - s->stack_addr;
	n = s->stack_sz - from;
	REQUIRE(n <= sizeof(saved));
	memcpy(saved, s->stack + from, n);
	for (i = 0; i + 8 <= n; i += 8) {
		if (garbage) { /* xorshift: the same bytes every run */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		memcpy(s->stack + from + i, garbage ? &x : &(uint64_t){ 0 }, 8);
	}
	replay_run(&res);
	memcpy(s->stack + from, saved, n);
	CHECK_EQ_INT(res.st.done, 1);
	CHECK(res.sp_rose);
	CHECK(find_frame(&res, "exe", "main") < 0);
}

/* Stack bytes overwritten past some depth end the stack there, never in a loop. Garbage
 * ends with a non-OK reason. Zeroes: replay_b (gcc) finds its CFA through a zeroed DRAP slot
 * and fails (BAD_FRAME); a plain frame reads a zero return address, which native_unwind.h
 * takes for the end of a hand-written thread root (UNWIND_END_OK, the stack cut short).
 */
TEST(corrupt_overwritten_stack)
{
	struct snapshot *s = (struct snapshot *)snapshot_get("replay_chain_gcc");

	overwrite_run(s, 2, true);
	CHECK(res.st.end != UNWIND_END_OK);
	CHECK(find_frame(&res, "exe", "replay_a") < 0);

	overwrite_run(s, 2, false);
	CHECK_EQ_INT(res.st.end, UNWIND_END_BAD_FRAME);
	check_chain(&res, "exe:take_snapshot exe:replay_c exe:replay_b");

	overwrite_run(s, 3, false);
	CHECK_EQ_INT(res.st.end, UNWIND_END_OK);
	check_chain(&res, "exe:take_snapshot exe:replay_c exe:replay_b exe:replay_a");
}

/* Every slot past some depth holds a valid return address (into replay_a, after its call of
 * replay_b; replay_a's CFA is rsp + constant): each step finds a rule and goes on, but only
 * upwards, so the walk ends at the top of the readable stack or at the frame cap, never in
 * a loop.
 */
TEST(corrupt_repeated_return_address)
{
	static uint8_t saved[1 << 20];
	struct snapshot *s = (struct snapshot *)snapshot_get("replay_chain_gcc");
	const struct unwind_rule *r;
	size_t from, n, i;
	uint64_t ra;

	world_reset(s);
	replay_run(&res);
	REQUIRE(check_chain(&res, CHAIN));
	r = rule_of_frame(&res, 3);
	REQUIRE(r && r->kind == UNWIND_RULE_CFA && r->cfa_reg == DWARF_RSP);
	ra = res.frames[3].addr + ss_lookup_mapping(0, s->regs[DWARF_RIP])->bias;
	from = res.sp[3] - s->stack_addr;
	n = s->stack_sz - from;
	REQUIRE(n <= sizeof(saved));
	memcpy(saved, s->stack + from, n);
	for (i = 0; i + 8 <= n; i += 8)
		memcpy(s->stack + from + i, &ra, 8);
	replay_run(&res);
	memcpy(s->stack + from, saved, n);
	CHECK_EQ_INT(res.st.done, 1);
	CHECK(res.sp_rose);
	CHECK(res.steps <= SS_MAX_USER_FRAMES + 1);
	CHECK(res.st.end == UNWIND_END_READ_FAILED || res.st.end == UNWIND_END_TRUNCATED);
	/* One replay_a frame per (CFA offset) bytes of the rest of the stack, up to the cap. */
	if (getenv("REPLAY_VERBOSE"))
		printf("  %u frames, %zu bytes, cfa_off %d\n", res.st.frame_cnt, n, r->cfa_off);
	CHECK(res.st.frame_cnt >= SS_MAX_USER_FRAMES ||
	      res.st.frame_cnt + 1 >= 4 + n / (size_t)r->cfa_off);
}

/* Id of the rule in force at the snapshot's leaf pc, found like ss_find_rule() does. */
static __u32 leaf_rule_id(const struct snapshot *s)
{
	struct mapping_info *m = ss_lookup_mapping(0, s->regs[DWARF_RIP]);
	struct unwind_page *p;
	uint64_t elf_addr;
	__u32 off;

	REQUIRE(m);
	elf_addr = s->regs[DWARF_RIP] - m->bias;
	off = elf_addr & ((1u << UNWIND_PAGE_SHIFT) - 1);
	p = ss_lookup_page(m->file_id, elf_addr >> UNWIND_PAGE_SHIFT);
	REQUIRE(p && p->cnt);
	return page_rule_linear(p, off);
}

/* A corrupt rule whose CFA does not move up ends the stack with BAD_FRAME at the first step
 * instead of looping.
 */
TEST(corrupt_rule)
{
	const struct snapshot *s = snapshot_get("replay_chain_gcc");
	static const struct unwind_rule bad[] = {
		{ .kind = UNWIND_RULE_CFA, .cfa_reg = DWARF_RSP, .cfa_off = 0 },
		{ .kind = UNWIND_RULE_CFA, .cfa_reg = DWARF_RSP, .cfa_off = -8 },
		{ .kind = UNWIND_RULE_PLT, .cfa_reg = DWARF_RSP, .cfa_off = -4096 }, /* PLT: fine */
	};
	size_t i;

	world_reset(s);
	world.override_id = leaf_rule_id(s);
	CHECK_EQ_INT(ss_lookup_rule(world.override_id)->kind, UNWIND_RULE_CFA);
	CHECK_EQ_INT(ss_lookup_rule(world.override_id)->cfa_reg, DWARF_RSP);
	world.rule_override = true;
	for (i = 0; i < 2; i++) {
		world.override_rule = bad[i];
		replay_run(&res);
		CHECK_EQ_INT(res.st.done, 1);
		CHECK_EQ_INT(res.st.frame_cnt, 1);
		CHECK_EQ_INT(res.st.end, UNWIND_END_BAD_FRAME);
	}
	/* A PLT rule ignores cfa_off and reads the slot at rsp: a bogus caller, still bounded. */
	world.override_rule = bad[2];
	replay_run(&res);
	CHECK_EQ_INT(res.st.done, 1);
	CHECK(res.sp_rose);
}

/* ---- deferred unwinding: src/unwind/stack_replay.c ----
 *
 * eBPF meets a frame whose file has no table yet (hidden_file_id): its walk saves the defer
 * point and goes on by frame pointers. The sample carries that point and a copy of the stack
 * (struct stack_copy_record); once the table exists, stack_replay__run() must give, from the
 * defer point on, exactly the frames the eBPF walk gives when the table was there all along.
 * The world it sees here is the harness's ss_* functions (the kernel maps' stand-ins).
 */

static const struct mapping_info *defer_mapping(void *ctx, uint32_t pid, uint64_t pc, bool *wait)
{
	return ss_lookup_mapping(pid, pc);
}

static const struct file_info *defer_file(void *ctx, uint64_t file_id, bool *wait)
{
	if (file_id == world.waiting_file_id) {
		*wait = true;
		return NULL;
	}
	return ss_lookup_file(file_id);
}

static const struct unwind_page *defer_page(void *ctx, uint64_t file_id, uint64_t page)
{
	if (file_id == world.waiting_file_id)
		return NULL;
	return ss_lookup_page(file_id, page);
}

static bool defer_segment(void *ctx, uint32_t segment)
{
	return ss_lookup_segment(segment) != NULL;
}

static const struct unwind_entry *defer_entry(void *ctx, uint32_t segment, uint32_t index)
{
	void *seg = ss_lookup_segment(segment);

	return seg ? ss_lookup_entry(seg, index) : NULL;
}

static const struct unwind_rule *defer_rule(void *ctx, uint32_t index)
{
	return ss_lookup_rule(index);
}

static const struct replay_world defer_world = {
	.mapping = defer_mapping,
	.file = defer_file,
	.page = defer_page,
	.segment = defer_segment,
	.entry = defer_entry,
	.rule = defer_rule,
};

static struct replay_result full_res;
static struct stack_copy_record copy; /* 28 KiB: not on the stack */

/* Walk fixture `name` with the table of its file `hidden` (an exec_file index) not loaded:
 * like eBPF, the walk must save a defer point. Fill `copy` as bpf/deferred.h would (the
 * defer point, the stack from the snapshot's rsp). Returns the defer point's frame index.
 */
static int defer_capture(const struct snapshot *s, size_t hidden, bool signal_ok)
{
	world_reset(s);
	world.hidden_file_id = s->exec_file[hidden]->file_id;
	replay_run(&res);
	REQUIRE(res.st.defer_cnt >= 1);
	CHECK_EQ_INT(res.st.defer.why, UNWIND_END_UNKNOWN_FILE);
	if (!signal_ok)
		CHECK_EQ_INT(res.st.defer.after_signal, 0);
	memset(&copy, 0, sizeof(copy));
	copy.hdr.kind = RECORD_STACK;
	copy.at = res.st.defer;
	copy.stack_addr = s->stack_addr;
	copy.stack_len =
		(uint32_t)(s->stack_sz < sizeof(copy.stack) ? s->stack_sz : sizeof(copy.stack));
	memcpy(copy.stack, s->stack, copy.stack_len);
	return (int)copy.at.frame_idx;
}

/* Replay `copy` with every table loaded: eBPF's frames when the tables were there. */
static void check_deferred_replay(const char *fixture, size_t hidden, bool signal_ok)
{
	const struct snapshot *s = snapshot_get(fixture);
	struct user_frame frames[SS_MAX_USER_FRAMES];
	uint32_t cnt = 0, end = 0;
	int idx;

	REQUIRE(hidden < s->exec_cnt);
	world_reset(s);
	replay_run(&full_res);
	REQUIRE(full_res.st.end == UNWIND_END_OK);
	idx = defer_capture(s, hidden, signal_ok);
	REQUIRE(idx >= 0 && idx < (int)full_res.st.frame_cnt);
	/* The frames before the defer point are eBPF's; the replay writes from there on. */
	memcpy(frames, res.frames, sizeof(frames));
	world.hidden_file_id = 0;
	CHECK_EQ_INT(stack_replay__run(&defer_world, &copy, copy.stack_len, 4242, frames, &cnt,
				       &end),
		     REPLAY_DONE);
	CHECK_EQ_INT(end, full_res.st.end);
	REQUIRE(cnt == full_res.st.frame_cnt);
	CHECK(!memcmp(frames, full_res.frames, cnt * sizeof(frames[0])));
}

static size_t exec_index(const struct snapshot *s, const char *base_prefix)
{
	size_t i;

	for (i = 0; i < s->exec_cnt; i++) {
		const char *base = strrchr(s->exec_file[i]->path, '/');

		if (base && !strncmp(base + 1, base_prefix, strlen(base_prefix)))
			return i;
	}
	return SIZE_MAX;
}

/* The leaf's own file not loaded: the defer point is frame 0, every register valid. */
TEST(deferred_leaf_file)
{
	const struct snapshot *s = snapshot_get("replay_chain_gcc");

	check_deferred_replay("replay_chain_gcc", 0, false);
	REQUIRE(!strcmp(s->exec_file[0]->path, s->exe_path));
	CHECK_EQ_INT(copy.at.frame_idx, 0);
	CHECK_EQ_INT(copy.at.regs_valid, 1);
	check_deferred_replay("replay_chain_clang", 0, false);
	check_deferred_replay("replay_qsort", 0, false);
}

/* libc not loaded: the defer point is mid-stack (main's caller), only rip/rsp/rbp known. */
TEST(deferred_mid_stack)
{
	const char *fixtures[] = { "replay_chain_gcc", "replay_qsort", "replay_cxx" };
	size_t i;

	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		const struct snapshot *s = snapshot_get(fixtures[i]);

		check_deferred_replay(fixtures[i], exec_index(s, "libc.so"), false);
		CHECK(copy.at.frame_idx > 0);
		CHECK_EQ_INT(copy.at.regs_valid, 0);
	}
}

/* Through a signal frame: the handler's frames, __restore_rt, the interrupted code. */
TEST(deferred_signal)
{
	check_deferred_replay("replay_signal", 0, true);
	check_deferred_replay("replay_signal_clang", 0, true);
}

/* A table still being built: the replay waits and leaves the frames before the point alone. */
TEST(deferred_wait)
{
	const struct snapshot *s = snapshot_get("replay_chain_gcc");
	struct user_frame frames[SS_MAX_USER_FRAMES];
	uint32_t cnt = 77, end = 77;

	defer_capture(s, exec_index(s, "libc.so"), false);
	memcpy(frames, res.frames, sizeof(frames));
	world.hidden_file_id = 0;
	world.waiting_file_id = s->exec_file[exec_index(s, "libc.so")]->file_id;
	CHECK_EQ_INT(stack_replay__run(&defer_world, &copy, copy.stack_len, 4242, frames, &cnt,
				       &end),
		     REPLAY_WAIT);
	CHECK_EQ_INT(cnt, 77);
	CHECK(!memcmp(frames, res.frames, copy.at.frame_idx * sizeof(frames[0])));
	/* A defer point past the record's frames is refused. */
	copy.at.frame_idx = SS_MAX_USER_FRAMES;
	CHECK_EQ_INT(stack_replay__run(&defer_world, &copy, copy.stack_len, 4242, frames, &cnt,
				       &end),
		     -EINVAL);
}

/* The copy ends inside the stack: a read right past a copy that stopped early is the top of
 * the stack (eBPF could not read it either: READ_FAILED); past a full copy (every page it
 * could hold was read), the copy was too short (STACK_COPY, "stack copy too short").
 */
TEST(deferred_short_copy)
{
	const struct snapshot *s = snapshot_get("replay_chain_gcc");
	struct user_frame frames[SS_MAX_USER_FRAMES];
	uint32_t cnt = 0, end = 0;
	int b;

	world_reset(s);
	replay_run(&full_res);
	b = find_frame(&full_res, "exe", "replay_b");
	REQUIRE(b == 2);
	defer_capture(s, 0, false);
	world.hidden_file_id = 0;
	/* Stop the copy where replay_b's frame starts: its return address is not in it. */
	copy.stack_len = (uint32_t)(full_res.sp[b] - s->stack_addr);
	CHECK_EQ_INT(stack_replay__run(&defer_world, &copy, copy.stack_len, 4242, frames, &cnt,
				       &end),
		     REPLAY_DONE);
	CHECK_EQ_INT(end, UNWIND_END_READ_FAILED);
	CHECK(cnt >= 2 && !memcmp(frames, full_res.frames, 2 * sizeof(frames[0])));
	/* The same bytes from a copy of the full size (eBPF read every page it may): the
	 * stack went on, the walk ended where the copy did.
	 */
	copy.full = 1;
	CHECK_EQ_INT(stack_replay__run(&defer_world, &copy, copy.stack_len, 4242, frames, &cnt,
				       &end),
		     REPLAY_DONE);
	CHECK_EQ_INT(end, UNWIND_END_STACK_COPY);
	CHECK(cnt >= 2 && !memcmp(frames, full_res.frames, 2 * sizeof(frames[0])));
}

/* A copy sent in parts is joined in one allocation whose stack bytes run on past stack[]
 * (src/unwind/deferred.c): the replay must read there. Here the snapshot's stack sits at the
 * top of a three-part copy, its first two parts filler below the snapshot's sp, so every read
 * of the walk is past the first part; a copy longer than three parts is refused.
 */
TEST(deferred_joined_parts)
{
	const struct snapshot *s = snapshot_get("replay_chain_gcc");
	const size_t head = offsetof(struct stack_copy_record, stack);
	const size_t part = sizeof(copy.stack), pad = 2 * part;
	struct user_frame frames[SS_MAX_USER_FRAMES];
	struct stack_copy_record *joined;
	uint32_t cnt = 0, end = 0;
	size_t top;
	int idx;

	world_reset(s);
	replay_run(&full_res);
	REQUIRE(full_res.st.end == UNWIND_END_OK);
	idx = defer_capture(s, 0, false);
	REQUIRE(idx >= 0);
	top = copy.stack_len;
	joined = calloc(1, head + SS_DEFER_STACK_PARTS * part + 1);
	REQUIRE(joined);
	memcpy(joined, &copy, head);
	memset((uint8_t *)joined + head, 0xa5, pad);
	memcpy((uint8_t *)joined + head + pad, s->stack, top);
	joined->stack_addr = copy.stack_addr - pad;
	joined->stack_len = (uint32_t)(pad + top);
	joined->part = SS_DEFER_STACK_PARTS - 1;
	memcpy(frames, res.frames, sizeof(frames));
	world.hidden_file_id = 0;
	CHECK_EQ_INT(stack_replay__run(&defer_world, joined, joined->stack_len, 4242, frames, &cnt,
				       &end),
		     REPLAY_DONE);
	CHECK_EQ_INT(end, full_res.st.end);
	CHECK_EQ_INT(cnt, full_res.st.frame_cnt);
	CHECK(!memcmp(frames, full_res.frames, cnt * sizeof(frames[0])));
	CHECK_EQ_INT(stack_replay__run(&defer_world, joined, SS_DEFER_STACK_PARTS * part + 1, 4242,
				       frames, &cnt, &end),
		     -EINVAL);
	free(joined);
}

int main(void)
{
	size_t i;

	RUN(tables_loaded);
	RUN(pool_segments);
	RUN(huge_table);
	RUN(chain_gcc);
	RUN(chain_clang);
	RUN(qsort_callback);
	RUN(recursion_300);
	RUN(signal_frame_gcc);
	RUN(signal_frame_clang);
	RUN(cxx_sort_ostream);
	RUN(noreturn_call);
	RUN(plt_entry);
	RUN(no_table_frame_pointers);
	RUN(no_table_without_frame_pointers);
	RUN(corrupt_unreadable_stack);
	RUN(corrupt_overwritten_stack);
	RUN(corrupt_repeated_return_address);
	RUN(corrupt_rule);
	RUN(deferred_leaf_file);
	RUN(deferred_mid_stack);
	RUN(deferred_signal);
	RUN(deferred_wait);
	RUN(deferred_short_copy);
	RUN(deferred_joined_parts);

	for (i = 0; i < snap_cache_cnt; i++)
		snapshot_free(snap_cache[i]);
	for (i = 0; i < loaded_cnt; i++) {
		elf_symbols__free(loaded_files[i]->syms);
		free(loaded_files[i]->path);
		free(loaded_files[i]);
	}
	kmaps_free();
	return test_summary();
}
