/* The offline symbolizer behind `stackscope symbolize IN -o OUT` (its options: cli/): fills in
 * functions, source lines and inline chains for the native frames of a pprof profile that were
 * written as addresses (record --no-symbolize, or a host without the debug files), from debug
 * files found here.
 *
 * What is touched: only Locations whose Mapping says has_functions = false and names a build
 * id or a file (not "[...]" pseudo files, which may still be found by build id). Their lines
 * are replaced by the DWARF inline chain (innermost first, demangled names), or by the
 * symbol-table name when that is all there is; a Location the debug info does not cover keeps
 * its lines. Such a Mapping's has_* flags are then recomputed from its Locations, the way the
 * pprof writer sets them. Samples, values, labels, other Locations, Mappings and Functions are
 * written back unchanged (new Functions and strings are appended).
 *
 * Where the debug info of a mapping comes from, first DWARF wins (a symbols-only file is
 * kept as a fallback while looking on):
 *  1. by build id (debuginfo.h: /usr/lib/debug/.build-id, DIR/.build-id of every --debug-dir,
 *     debuginfod);
 *  2. the mapping's file, if it exists here with the same build id (itself, then its debug
 *     files through debuginfo__find(): .build-id, .gnu_debuglink, debuginfod, MiniDebugInfo);
 *  3. for every --debug-dir: DIR/<build id>/<basename>, DIR/<basename> (as 2, build id
 *     checked).
 * debuginfod fetches run in the background; the command waits for them once, bounded by
 * --debuginfod-timeout, and then asks again.
 *
 * Addresses: stackscope writes ELF virtual addresses (the Mapping's start/offset are the text
 * segment's p_vaddr/p_offset). A profile with runtime addresses is recognised when the
 * executable itself is at hand: its PT_LOAD maps file_offset to a vaddr other than
 * memory_start, and addresses are moved by the difference. A Location that appears as a
 * caller in any sample (below a frame that is not kernel code) holds a return address: the
 * address minus one is looked up (a location that is also a leaf elsewhere is taken as a
 * caller: the profile has one set of lines per location).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/id_index.h"
#include "base/log.h"
#include "base/output_file.h"
#include "base/u64_map.h"
#include "formats/elf_file.h"
#include "export/pprof_read.h"
#include "formats/debuginfo.h"
#include "formats/dwarf.h"
#include "pipeline/offline_symbolizer.h"

/* Why a location stayed an address. */
enum sym_reason {
	SYM_NO_FILE,      /* no mapping, or a mapping with neither file nor build id */
	SYM_NO_DEBUGINFO, /* nothing found for the file */
	SYM_MISMATCH,     /* only files with another build id found */
	SYM_PENDING,      /* debuginfod did not answer in time */
	SYM_NOT_IN_DEBUG, /* the debug info does not cover the address */
	SYM_CORRUPT,      /* the debug info is corrupt at the address */
	SYM_REASON_CNT,
};

static const char *const sym_reason_names[SYM_REASON_CNT] = {
	[SYM_NO_FILE] = "no file mapping",
	[SYM_NO_DEBUGINFO] = "no debug info",
	[SYM_MISMATCH] = "only files of another build",
	[SYM_PENDING] = "debuginfod timed out",
	[SYM_NOT_IN_DEBUG] = "address not in debug info",
	[SYM_CORRUPT] = "corrupt debug info",
};

/* One binary (by build id, else by file name), shared by the mappings that name it. */
struct sym_file {
	const char *build_id; /* borrowed from the profile's strings; "" if none */
	const char *filename;
	struct dwarf_file *df; /* NULL: nothing found (yet) */
	bool has_dwarf;
	char source[PATH_MAX + 32]; /* where df came from, for -v */
	struct elf_file *exe;       /* the executable itself, when found here (for its PT_LOADs) */
	bool pending;               /* a debuginfod fetch was running */
	bool mismatch;              /* a file by that name had another build id */
};

struct sym_stats {
	uint64_t symbolized, with_lines, with_inline, symbols_only;
	uint64_t left[SYM_REASON_CNT];
	uint64_t unchanged; /* already symbolized, or named frames that needed nothing */
	uint64_t files_dwarf, files_symbols, files_none;
};

struct symbolizer {
	const struct offline_symbolizer_opts *o;
	struct pprof_profile *p;
	struct debuginfo *di;
	struct sym_file *files;
	size_t file_cnt;
	struct u64_map file_by_key; /* hash of "build_id\0filename" -> file index + 1 */
	size_t *mapping_file;       /* by mapping array index: file index + 1, 0 = not ours */
	uint64_t *mapping_bias;     /* added to a location address to get the ELF vaddr */
	bool *is_caller;            /* by location array index */
	struct sym_stats stats;
};

/* ---- finding debug info ---- */

static const char *path__basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Takes the file a debuginfo result names (or its MiniDebugInfo image) when it is better than
 * what f has: DWARF beats symbols only beats nothing. Releases res.
 */
static void sym_file__take(struct sym_file *f, struct debuginfo_result *res)
{
	static const char *const src_names[] = {
		[DEBUGINFO_SELF] = "the file itself",        [DEBUGINFO_BUILD_ID] = "build-id tree",
		[DEBUGINFO_DEBUGLINK] = "debuglink",         [DEBUGINFO_DEBUGINFOD] = "debuginfod",
		[DEBUGINFO_MINIDEBUGINFO] = "MiniDebugInfo",
	};
	struct dwarf_opts dopts = { .demangle = true };
	struct dwarf_file *df;
	bool dwarf;

	if (res->source == DEBUGINFO_MINIDEBUGINFO)
		df = dwarf_file__open_mem(res->image, res->image_sz, &dopts);
	else if (res->fd >= 0)
		df = dwarf_file__open_fd(res->fd, res->path, &dopts);
	else
		df = dwarf_file__open(res->path, &dopts);
	if (df) {
		dwarf = dwarf_file__has_dwarf(df);
		if (!f->df || (dwarf && !f->has_dwarf)) {
			dwarf_file__free(f->df);
			f->df = df;
			f->has_dwarf = dwarf;
			snprintf(f->source, sizeof(f->source), "%s (%s)", res->path,
				 res->source <= DEBUGINFO_MINIDEBUGINFO && src_names[res->source]
					 ? src_names[res->source]
					 : "?");
		} else {
			dwarf_file__free(df);
		}
	}
	debuginfo_result__release(res);
}

/* A candidate executable at path: used when its build id matches (or f has none). */
static void sym_file__try_exe(struct symbolizer *s, struct sym_file *f, const char *path)
{
	struct debuginfo_result res;
	char id[2 * ELF_BUILD_ID_MAX + 1];
	struct elf_file *ef;
	struct stat st;
	int err;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	ef = elf_file__open(path);
	if (!ef)
		return;
	if (f->build_id[0] &&
	    (elf_file__build_id_hex(ef, id, sizeof(id)) < 0 || strcmp(id, f->build_id))) {
		pr_debug("symbolize: %s is another build than %s\n", path, f->build_id);
		f->mismatch = true;
		elf_file__free(ef);
		return;
	}
	if (!f->exe)
		f->exe = ef;
	else
		elf_file__free(ef);
	err = debuginfo__find(s->di, path, NULL, &res);
	if (!err) {
		sym_file__take(f, &res);
		return;
	}
	if (err == -EAGAIN)
		f->pending = true;
	/* no debug file: the executable's own symbol tables, if nothing better turns up */
	if (!f->df) {
		res.source = DEBUGINFO_SELF;
		snprintf(res.path, sizeof(res.path), "%s", path);
		sym_file__take(f, &res);
	}
}

static void sym_file__resolve(struct symbolizer *s, struct sym_file *f)
{
	const char *base = path__basename(f->filename);
	struct debuginfo_result res;
	char path[PATH_MAX];
	size_t i;
	int err;

	f->pending = false;
	if (f->build_id[0]) {
		memset(&res, 0, sizeof(res));
		err = debuginfo__find_build_id(s->di, f->build_id, NULL, &res);
		if (!err)
			sym_file__take(f, &res);
		else if (err == -EAGAIN)
			f->pending = true;
	}
	if (f->has_dwarf)
		return;
	if (f->filename[0] && f->filename[0] != '[')
		sym_file__try_exe(s, f, f->filename);
	for (i = 0; i < s->o->debug_dir_cnt && !f->has_dwarf && *base && *base != '['; i++) {
		const char *dir = s->o->debug_dirs[i];

		if (f->build_id[0] && snprintf(path, sizeof(path), "%s/%s/%s", dir, f->build_id,
					       base) < (int)sizeof(path))
			sym_file__try_exe(s, f, path);
		if (!f->has_dwarf &&
		    snprintf(path, sizeof(path), "%s/%s", dir, base) < (int)sizeof(path))
			sym_file__try_exe(s, f, path);
	}
}

/* The file entry for a mapping (added if new); index + 1, or 0 on ENOMEM. */
static size_t symbolizer__file_of(struct symbolizer *s, const char *build_id, const char *filename)
{
	static const unsigned char end_of_id = 0xff;
	uint64_t h = fnv64(build_id, strlen(build_id), FNV64_INIT);
	size_t idx;
	void *v;

	h = fnv64(&end_of_id, 1, h);
	if (!build_id[0]) /* without a build id, the file name is the identity */
		h = fnv64(filename, strlen(filename), h);
	h = h ? h : 1;
	v = u64_map__get(&s->file_by_key, h);
	if (v) {
		idx = (size_t)(uintptr_t)v - 1;
		if (!strcmp(s->files[idx].build_id, build_id) &&
		    (build_id[0] || !strcmp(s->files[idx].filename, filename)))
			return idx + 1;
		/* a hash collision: a separate entry, not indexed */
	}
	idx = s->file_cnt++;
	memset(&s->files[idx], 0, sizeof(s->files[idx]));
	s->files[idx].build_id = build_id;
	s->files[idx].filename = filename;
	if (!v && u64_map__set(&s->file_by_key, h, (void *)(uintptr_t)(idx + 1)))
		return 0;
	return idx + 1;
}

static int symbolizer__find_files(struct symbolizer *s)
{
	struct pprof_profile *p = s->p;
	size_t i, idx;
	uint64_t v;
	bool any_pending = false;

	s->files = calloc(p->mapping_cnt ? p->mapping_cnt : 1, sizeof(*s->files));
	s->mapping_file = calloc(p->mapping_cnt ? p->mapping_cnt : 1, sizeof(*s->mapping_file));
	s->mapping_bias = calloc(p->mapping_cnt ? p->mapping_cnt : 1, sizeof(*s->mapping_bias));
	if (!s->files || !s->mapping_file || !s->mapping_bias)
		return -ENOMEM;
	for (i = 0; i < p->mapping_cnt; i++) {
		const struct pprof_mapping *m = &p->mappings[i];
		const char *build_id = pprof_profile__string(p, m->build_id);
		const char *filename = pprof_profile__string(p, m->filename);

		if (m->has_functions || (!build_id[0] && (!filename[0] || filename[0] == '[')))
			continue;
		idx = symbolizer__file_of(s, build_id, filename);
		if (!idx)
			return -ENOMEM;
		s->mapping_file[i] = idx;
	}
	for (i = 0; i < s->file_cnt; i++) {
		sym_file__resolve(s, &s->files[i]);
		any_pending |= s->files[i].pending && !s->files[i].has_dwarf;
	}
	if (any_pending) {
		pr_info("symbolize: waiting up to %d s for debuginfod\n",
			s->o->debuginfod_timeout_s);
		debuginfo__wait(s->di, s->o->debuginfod_timeout_s * 1000 + 1000);
		for (i = 0; i < s->file_cnt; i++) {
			if (s->files[i].pending && !s->files[i].has_dwarf)
				sym_file__resolve(s, &s->files[i]);
		}
	}
	for (i = 0; i < s->file_cnt; i++) {
		const struct sym_file *f = &s->files[i];

		if (f->has_dwarf)
			s->stats.files_dwarf++;
		else if (f->df)
			s->stats.files_symbols++;
		else
			s->stats.files_none++;
		if (s->o->verbose)
			fprintf(stderr, "  %s%s%s: %s%s\n", f->filename,
				f->build_id[0] ? " build id " : "", f->build_id,
				f->df ? (f->has_dwarf ? "DWARF from " : "symbols only from ")
				      : (f->pending    ? "debuginfod timed out"
					 : f->mismatch ? "only files of another build"
						       : "no debug info"),
				f->df ? f->source : "");
	}
	/* profiles with runtime addresses: move them to ELF vaddrs via the executable */
	for (i = 0; i < p->mapping_cnt; i++) {
		const struct pprof_mapping *m = &p->mappings[i];
		const struct sym_file *f;

		if (!s->mapping_file[i])
			continue;
		f = &s->files[s->mapping_file[i] - 1];
		if (!f->exe || (!m->memory_start && !m->memory_limit))
			continue;
		if (!elf_file__offset_to_vaddr(f->exe, m->file_offset, &v) && v != m->memory_start)
			s->mapping_bias[i] = v - m->memory_start;
	}
	return 0;
}

/* ---- rewriting locations ---- */

/* Whether loc's lines are the writer's "basename+0xADDR" stand-in (or absent): ADDR is the
 * location's own address, or the start of the function holding it (at or below it).
 */
static bool location__is_placeholder(const struct pprof_profile *p,
				     const struct pprof_location *loc)
{
	const struct pprof_function *fn;
	const char *name, *plus;
	unsigned long long v;
	char *end;

	if (!loc->line_cnt)
		return true;
	if (loc->line_cnt != 1 || loc->lines[0].line)
		return false;
	fn = pprof_profile__function(p, loc->lines[0].function_id);
	if (!fn)
		return true;
	if (fn->filename)
		return false;
	name = pprof_profile__string(p, fn->name);
	plus = strrchr(name, '+');
	if (!plus || strncmp(plus, "+0x", 3))
		return !*name;
	errno = 0;
	v = strtoull(plus + 3, &end, 16);
	return !errno && end != plus + 3 && !*end && v <= loc->address;
}

/* Whether loc is kernel code (its frames are above the interrupted user frame). */
static bool location__is_kernel(const struct pprof_profile *p, const struct pprof_location *loc)
{
	const struct pprof_mapping *m = pprof_profile__mapping(p, loc->mapping_id);

	if (m)
		return !strncmp(pprof_profile__string(p, m->filename), "[kernel", 7);
	return loc->address >= 0xffff800000000000ULL;
}

/* A location below a non-kernel frame holds a return address; one right below kernel frames
 * is the interrupted instruction, like a leaf.
 */
static int symbolizer__mark_callers(struct symbolizer *s)
{
	struct pprof_profile *p = s->p;
	struct pprof_location *loc, *prev;
	size_t i, j;

	s->is_caller = calloc(p->location_cnt ? p->location_cnt : 1, sizeof(*s->is_caller));
	if (!s->is_caller)
		return -ENOMEM;
	for (i = 0; i < p->sample_cnt; i++) {
		prev = NULL;
		for (j = 0; j < p->samples[i].location_cnt; j++) {
			loc = pprof_profile__location(p, p->samples[i].location_ids[j]);
			if (prev && !location__is_kernel(p, prev))
				s->is_caller[loc - p->locations] = true;
			prev = loc;
		}
	}
	return 0;
}

/* New lines for loc from f. 0 (done or left, counted) or -ENOMEM. */
static int symbolizer__location(struct symbolizer *s, struct pprof_location *loc,
				size_t mapping_idx, bool placeholder)
{
	struct pprof_line out[DWARF_MAX_LINES];
	struct pprof_profile *p = s->p;
	const struct sym_file *f = &s->files[s->mapping_file[mapping_idx] - 1];
	const struct dwarf_line *lines;
	enum sym_reason why;
	uint64_t addr = loc->address + s->mapping_bias[mapping_idx];
	int64_t name, file;
	bool any_file = false;
	int n, i;

	if (!f->df) {
		why = f->pending ? SYM_PENDING : f->mismatch ? SYM_MISMATCH : SYM_NO_DEBUGINFO;
		goto left;
	}
	if (s->is_caller[loc - p->locations] && addr)
		addr--;
	n = dwarf_file__lookup(f->df, addr, &lines);
	if (n == -ENOMEM)
		return n;
	if (n <= 0 && n == -ENOEXEC) {
		why = SYM_CORRUPT;
		goto left;
	}
	if (n <= 0) { /* with only symbol tables, say why there was no DWARF */
		why = f->has_dwarf  ? SYM_NOT_IN_DEBUG
		      : f->pending  ? SYM_PENDING
		      : f->mismatch ? SYM_MISMATCH
				    : SYM_NO_DEBUGINFO;
		goto left;
	}
	if (n > DWARF_MAX_LINES)
		n = DWARF_MAX_LINES;
	for (i = 0; i < n; i++) {
		name = pprof_profile__intern(p, lines[i].function ? lines[i].function : "??");
		file = lines[i].file ? pprof_profile__intern(p, lines[i].file) : 0;
		if (name < 0 || file < 0)
			return -ENOMEM;
		any_file |= file > 0;
		out[i].function_id = pprof_profile__add_function(p, name, name, file, 0);
		if (!out[i].function_id)
			return -ENOMEM;
		out[i].line = lines[i].line;
		out[i].column = 0;
	}
	if (pprof_profile__set_lines(p, loc, out, (size_t)n))
		return -ENOMEM;
	s->stats.symbolized++;
	if (any_file)
		s->stats.with_lines++;
	else
		s->stats.symbols_only++;
	if (n > 1)
		s->stats.with_inline++;
	return 0;
left:
	if (placeholder)
		s->stats.left[why]++;
	else
		s->stats.unchanged++;
	return 0;
}

struct mapping_flags {
	bool used, all_functions, all_filenames, all_line_numbers, any_inline;
};

static void mapping_flags__add(struct mapping_flags *fl, const struct pprof_profile *p,
			       const struct pprof_location *loc)
{
	const struct pprof_function *fn;
	size_t i;

	if (!fl->used) {
		fl->used = true;
		fl->all_functions = fl->all_filenames = fl->all_line_numbers = true;
	}
	if (location__is_placeholder(p, loc)) {
		fl->all_functions = fl->all_filenames = fl->all_line_numbers = false;
		return;
	}
	if (loc->line_cnt > 1)
		fl->any_inline = true;
	for (i = 0; i < loc->line_cnt; i++) {
		fn = pprof_profile__function(p, loc->lines[i].function_id);
		if (!fn || !fn->filename)
			fl->all_filenames = false;
		if (!loc->lines[i].line)
			fl->all_line_numbers = false;
	}
}

static int symbolizer__locations(struct symbolizer *s)
{
	struct pprof_profile *p = s->p;
	struct mapping_flags *flags;
	struct pprof_mapping *m;
	struct pprof_location *loc;
	size_t i, mi;
	bool placeholder;
	int err = 0;

	flags = calloc(p->mapping_cnt ? p->mapping_cnt : 1, sizeof(*flags));
	if (!flags)
		return -ENOMEM;
	for (i = 0; i < p->location_cnt && !err; i++) {
		loc = &p->locations[i];
		m = pprof_profile__mapping(p, loc->mapping_id);
		placeholder = location__is_placeholder(p, loc);
		mi = m ? (size_t)(m - p->mappings) : 0;
		if (!m || !s->mapping_file[mi]) {
			if (placeholder && (!m || !m->has_functions))
				s->stats.left[SYM_NO_FILE]++;
			else
				s->stats.unchanged++;
			continue;
		}
		err = symbolizer__location(s, loc, mi, placeholder);
		mapping_flags__add(&flags[mi], p, loc);
	}
	for (mi = 0; mi < p->mapping_cnt && !err; mi++) {
		const struct mapping_flags *fl = &flags[mi];

		if (!s->mapping_file[mi] || !fl->used)
			continue;
		m = &p->mappings[mi];
		m->has_functions = fl->all_functions;
		m->has_filenames = m->has_functions && fl->all_filenames;
		m->has_line_numbers = m->has_functions && fl->all_line_numbers;
		m->has_inline_frames = m->has_functions && fl->any_inline;
	}
	free(flags);
	return err;
}

static void symbolizer__summary(const struct symbolizer *s)
{
	const struct sym_stats *st = &s->stats;
	uint64_t left = 0;
	size_t i;
	int n = 0;

	for (i = 0; i < SYM_REASON_CNT; i++)
		left += st->left[i];
	fprintf(stderr,
		"locations         %llu symbolized (%llu with source lines, %llu symbols only, "
		"%llu with inlined frames), %llu unchanged\n",
		(unsigned long long)st->symbolized, (unsigned long long)st->with_lines,
		(unsigned long long)st->symbols_only, (unsigned long long)st->with_inline,
		(unsigned long long)st->unchanged);
	fprintf(stderr, "left as addresses %llu", (unsigned long long)left);
	for (i = 0; i < SYM_REASON_CNT; i++) {
		if (st->left[i])
			fprintf(stderr, "%s %s %llu", n++ ? "," : ":", sym_reason_names[i],
				(unsigned long long)st->left[i]);
	}
	fprintf(stderr, "\nfiles             %llu with DWARF, %llu symbols only, %llu without\n",
		(unsigned long long)st->files_dwarf, (unsigned long long)st->files_symbols,
		(unsigned long long)st->files_none);
}

static void symbolizer__free(struct symbolizer *s)
{
	size_t i;

	for (i = 0; s->files && i < s->file_cnt; i++) {
		dwarf_file__free(s->files[i].df);
		elf_file__free(s->files[i].exe);
	}
	free(s->files);
	free(s->mapping_file);
	free(s->mapping_bias);
	free(s->is_caller);
	u64_map__free(&s->file_by_key);
	debuginfo__free(s->di);
	pprof_profile__free(s->p);
}

int offline_symbolizer__run(const struct offline_symbolizer_opts *o)
{
	struct symbolizer s;
	struct debuginfo_opts dopts;
	int err, ret = 1;

	memset(&s, 0, sizeof(s));
	s.o = o;
	err = pprof_profile__read(o->in, 0, &s.p);
	if (err) {
		fprintf(stderr, "stackscope symbolize: cannot read %s: %s\n", o->in,
			err == -EBADMSG ? "not a pprof profile (corrupt or truncated)"
			: err == -EFBIG ? "too large"
					: strerror(-err));
		goto cleanup;
	}
	memset(&dopts, 0, sizeof(dopts));
	dopts.debug_dirs = o->debug_dirs;
	dopts.debug_dir_cnt = o->debug_dir_cnt;
	dopts.debuginfod = o->debuginfod;
	dopts.debuginfod_timeout_s = o->debuginfod_timeout_s;
	s.di = debuginfo__new(&dopts);
	if (!s.di) {
		fprintf(stderr, "stackscope symbolize: cannot start debug-file lookup: %s\n",
			strerror(errno));
		goto cleanup;
	}
	err = symbolizer__find_files(&s);
	err = err ?: symbolizer__mark_callers(&s);
	err = err ?: symbolizer__locations(&s);
	if (err) {
		fprintf(stderr, "stackscope symbolize: %s\n", strerror(-err));
		goto cleanup;
	}
	signal(SIGPIPE, SIG_IGN); /* a FIFO's reader that left is an error, reported */
	err = pprof_profile__write(s.p, o->out);
	if (err) {
		fprintf(stderr, "stackscope symbolize: cannot write %s: %s\n", o->out,
			output_file__strerror(err));
		goto cleanup;
	}
	symbolizer__summary(&s);
	ret = 0;
cleanup:
	symbolizer__free(&s);
	return ret;
}
