/* Sample record -> profile sample. See trace_handler.h. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "base/array.h"
#include "base/u64_map.h"
#include "base/utf8.h"
#include "export/process_context_pb.h"
#include "formats/gopclntab.h"
#include "interp/interp.h"
#include "proc/executable.h"
#include "proc/process.h"
#include "profile/profile.h"
#include "sampler/mem_alloc.h"
#include "sampler/mem_growth.h"
#include "sampler/off_cpu.h"
#include "sampler/sampler.h"
#include "pipeline/trace_handler.h"
#include "pipeline/sample_trace.h"
#include "formats/dwarf.h"
#include "formats/kallsyms.h"
#include "symbolize/file_symbols.h"
#include "symbolize/symbol_name.h"
#include "unwind/unwind_maps.h"

#define RESCAN_MIN_INTERVAL_NS (100 * 1000 * 1000ULL)
#define FRAME_CACHE_CAP 4096 /* direct-mapped; a power of two */
#define FRAME_CACHE_KERNEL 0 /* the file_id of kernel frames' slots (no file has id 0) */

/* A native or kernel frame of the current profile, by where it is. The same frames recur in
 * every sample, and a miss costs a mapping (four strings interned), a symbol search and a
 * frame lookup, or for Go the walk of .gopclntab's pc-value tables (microseconds).
 */
struct frame_slot {
	uint64_t file_id;
	uint64_t addr;  /* the frame's address */
	uint32_t frame; /* profile frame id, 0 = empty */
	bool is_return;
	bool go;    /* counted as a Go frame */
	bool unsym; /* counted as unsymbolized */
};

/* A runtime's frame of the current profile, by the symbol its runtime gave (interp_symbol's
 * memo) and the frame's raw fields: a deep interpreter stack repeats the same few hundred
 * frames in every sample, and each would otherwise intern its strings and hash its lines
 * again (most of the agent's time under a 480-deep Python at 99 Hz). The runtime is still
 * asked for every frame (its cache, budget and counters see every one); only the profile's
 * part is skipped.
 */
struct runtime_slot {
	uint64_t memo; /* 0 = empty */
	uint64_t addr;
	uint64_t file_id;
	uint32_t frame; /* profile frame id */
	uint8_t kind;
};
#define RUNTIME_CACHE_CAP 16384 /* direct-mapped; a power of two */
#define MAX_FRAMES (SS_MAX_KERNEL_FRAMES + SS_MAX_USER_FRAMES + 2) /* + end, off-CPU leaf */

struct trace_handler {
	struct profile *prof;
	struct profile_sample last; /* trace_handler__last_sample(): labels not kept */
	bool has_last;
	struct exe_registry *reg;
	struct process_table *pt;
	const struct kallsyms *ks;
	struct interp_registry *interp;
	struct unwind_maps *um;     /* told which files samples land in; may be NULL */
	struct file_symbols *files; /* symbols and lines of the registry's files */
	struct trace_handler_opts opts;
	struct trace_handler_stats stats;
	uint32_t kernel_mapping;
	uint32_t frames[MAX_FRAMES];
	/* Native frames of the current profile, indexed by frame id, for the line pass. */
	struct native_frame_ref *native;
	size_t native_cap;
	struct frame_slot *frame_cache;     /* FRAME_CACHE_CAP slots, allocated on first use */
	struct runtime_slot *runtime_cache; /* RUNTIME_CACHE_CAP slots, the same */
	/* The last runtime marker's frame and text (a process over its read budget: every one
	 * of its frames the same marker); 0: none in this profile.
	 */
	uint32_t marker_frame;
	char marker[128];
	/* pid -> (void *)(mapping owner + 1) for samples whose stack was resolved with another
	 * process's mappings: a child forked without exec (a pre-fork server's worker), which the
	 * process table may never see; it inherits its parent's executable and container.
	 */
	struct u64_map owners;
};

#define OWNERS_MAX 65536 /* then the map starts over: each worker's next sample adds it again */

struct native_frame_ref {
	struct executable *exe; /* NULL: not a native frame */
	uint64_t lookup_addr;   /* ELF vaddr to symbolize (return addresses minus 1) */
};

struct trace_handler *trace_handler__new(struct profile *prof, struct exe_registry *reg,
					 struct process_table *pt, const struct kallsyms *ks,
					 const struct trace_handler_opts *opts)
{
	struct trace_handler *th = calloc(1, sizeof(*th));

	if (!th)
		return NULL;
	th->files = file_symbols__new(0);
	if (!th->files) {
		free(th);
		return NULL;
	}
	th->prof = prof;
	th->reg = reg;
	th->pt = pt;
	th->ks = ks;
	th->opts = *opts;
	return th;
}

int trace_handler__set_profile(struct trace_handler *th, struct profile *prof)
{
	if (th->native)
		memset(th->native, 0, th->native_cap * sizeof(*th->native));
	if (th->frame_cache) /* frame ids are per profile */
		memset(th->frame_cache, 0, FRAME_CACHE_CAP * sizeof(*th->frame_cache));
	if (th->runtime_cache)
		memset(th->runtime_cache, 0, RUNTIME_CACHE_CAP * sizeof(*th->runtime_cache));
	th->prof = prof;
	th->marker_frame = 0;
	th->kernel_mapping = 0; /* added with the first kernel frame: pprof readers take the
				 * first mapping for the main binary */
	return 0;
}

void trace_handler__set_interp(struct trace_handler *th, struct interp_registry *interp)
{
	if (th->runtime_cache) /* memos are the registry's */
		memset(th->runtime_cache, 0, RUNTIME_CACHE_CAP * sizeof(*th->runtime_cache));
	th->interp = interp;
}

void trace_handler__set_unwind_maps(struct trace_handler *th, struct unwind_maps *um)
{
	th->um = um;
}

void trace_handler__free(struct trace_handler *th)
{
	if (th) {
		free(th->native);
		free(th->frame_cache);
		free(th->runtime_cache);
		file_symbols__free(th->files);
		u64_map__free(&th->owners);
	}
	free(th);
}

pid_t trace_handler__owner(const struct trace_handler *th, pid_t pid)
{
	uintptr_t v = (uintptr_t)u64_map__get(&th->owners, (uint64_t)pid);

	return v ? (pid_t)(v - 1) : 0;
}

void trace_handler__forget_file(struct trace_handler *th, uint64_t file_id)
{
	if (th)
		file_symbols__forget(th->files, file_id);
}

const struct trace_handler_stats *trace_handler__stats(const struct trace_handler *th)
{
	return &th->stats;
}

static uint32_t frame_at(struct trace_handler *th, enum frame_kind kind, uint32_t mapping,
			 uint64_t addr, bool call_site, const char *name)
{
	struct profile_line line = { .function = name };
	struct profile_frame f = {
		.kind = kind,
		.mapping = mapping,
		.address = addr,
		.call_site = call_site,
		.lines = name ? &line : NULL,
		.line_cnt = name ? 1 : 0,
	};

	return profile__add_frame(th->prof, &f);
}

static uint32_t named_frame(struct trace_handler *th, enum frame_kind kind, uint32_t mapping,
			    uint64_t addr, const char *name)
{
	return frame_at(th, kind, mapping, addr, false, name);
}

/* The cache slot of the frame at addr of file_id (FRAME_CACHE_KERNEL: the kernel's); NULL
 * when there is no cache (allocation failed: every frame is looked up).
 */
static struct frame_slot *frame_slot(struct trace_handler *th, uint64_t file_id, uint64_t addr,
				     bool is_return)
{
	if (!th->frame_cache &&
	    !(th->frame_cache = calloc(FRAME_CACHE_CAP, sizeof(*th->frame_cache))))
		return NULL;
	return &th->frame_cache[u64_hash(file_id ^ (addr << 1 | is_return)) & (FRAME_CACHE_CAP - 1)];
}

static bool frame_slot__is(const struct frame_slot *slot, uint64_t file_id, uint64_t addr,
			   bool is_return)
{
	return slot && slot->frame && slot->file_id == file_id && slot->addr == addr &&
	       slot->is_return == is_return;
}

static uint32_t kernel_frame(struct trace_handler *th, uint64_t ip, bool is_return)
{
	struct frame_slot *slot = frame_slot(th, FRAME_CACHE_KERNEL, ip, is_return);
	const char *name = NULL;
	uint32_t id;

	th->stats.kernel_frames++;
	if (frame_slot__is(slot, FRAME_CACHE_KERNEL, ip, is_return)) {
		th->stats.kernel_unsymbolized += slot->unsym;
		return slot->frame;
	}
	if (!th->kernel_mapping) {
		struct profile_mapping km = { .path = "[kernel.kallsyms]" };

		th->kernel_mapping = profile__add_mapping(th->prof, &km);
		if (!th->kernel_mapping)
			return 0;
	}
	if (th->ks && th->opts.symbolize)
		name = kallsyms__lookup(th->ks, is_return ? ip - 1 : ip, NULL, NULL);
	if (!name)
		th->stats.kernel_unsymbolized++;
	id = named_frame(th, FRAME_KERNEL, th->kernel_mapping, ip, name);
	if (slot && id)
		*slot = (struct frame_slot){ FRAME_CACHE_KERNEL, ip, id, is_return, false, !name };
	return id;
}

static uint32_t exe_mapping(struct trace_handler *th, const struct executable *exe)
{
	struct profile_mapping m = {
		.path = exe->path,
		.build_id = exe->build_id[0] ? exe->build_id : NULL,
		.file_hash = exe->file_hash[0] ? exe->file_hash : NULL,
		.go_build_id = exe->go_build_id[0] ? exe->go_build_id : NULL,
		.start = exe->text_start,
		.limit = exe->text_end,
		.file_offset = exe->text_offset,
	};

	return profile__add_mapping(th->prof, &m);
}

/* A frame of Go code: function, file and line, and the calls inlined at addr as lines of their
 * own, from the executable's .gopclntab (stripped binaries keep it); 0 when addr is not Go.
 * The chain is complete here, so the line pass does not visit the frame.
 */
static uint32_t go_frame(struct trace_handler *th, struct executable *exe, uint32_t mapping,
			 uint64_t addr, bool is_return)
{
	struct go_frame gf[GO_MAX_FRAMES];
	struct profile_line lines[GO_MAX_FRAMES];
	struct profile_frame f = {
		.kind = FRAME_NATIVE, .mapping = mapping, .address = addr, .runtime = "go"
	};
	int n, i;

	n = file_symbols__go_lines(th->files, exe, is_return ? addr - 1 : addr, gf, GO_MAX_FRAMES);
	if (n <= 0)
		return 0;
	for (i = 0; i < n; i++) {
		lines[i].function = gf[i].function;
		lines[i].file = gf[i].file;
		lines[i].line = gf[i].line;
		lines[i].column = 0;
	}
	f.lines = lines;
	f.line_cnt = (uint32_t)n;
	th->stats.user_go++;
	return profile__add_frame(th->prof, &f);
}

/* The name of a frame no symbol names: its file and the start of the function that contains
 * it ("libruby-3.1.so.3.1.2+0xb8000", from the .eh_frame FDE), so every pc of one function
 * is one frame by name; the profile frame keeps the pc as its address. NULL when no FDE covers
 * addr (the frame is then named by its own address).
 */
static const char *function_start_name(struct trace_handler *th, const struct executable *exe,
				       uint64_t addr, char *buf, size_t buf_sz)
{
	const char *slash = strrchr(exe->path, '/');
	const char *base = slash ? slash + 1 : exe->path;
	uint64_t start;
	int n;

	if (!*base || file_symbols__function_start(th->files, exe, addr, &start))
		return NULL;
	n = snprintf(buf, buf_sz, "%s+0x%" PRIx64, base, start);
	return n > 0 && (size_t)n < buf_sz ? buf : NULL;
}

static uint32_t native_frame(struct trace_handler *th, struct executable *exe, uint64_t addr,
			     bool is_return)
{
	struct frame_slot *slot = frame_slot(th, exe->file_id, addr, is_return);
	const char *name = NULL;
	char start_name[PATH_MAX + 24];
	bool unsym = true;
	uint32_t mapping, id;

	if (frame_slot__is(slot, exe->file_id, addr, is_return)) {
		th->stats.user_go += slot->go;
		th->stats.user_unsymbolized += slot->unsym;
		return slot->frame;
	}
	mapping = exe_mapping(th, exe);
	if (!mapping)
		return 0;
	if (th->opts.symbolize && (id = go_frame(th, exe, mapping, addr, is_return))) {
		if (slot)
			*slot = (struct frame_slot){
				exe->file_id, addr, id, is_return, true, false
			};
		return id;
	}
	if (th->opts.symbolize) {
		uint64_t lookup = is_return ? addr - 1 : addr;

		name = file_symbols__symbol(th->files, exe, lookup, NULL);
		if (!name && th->interp)
			name = interp_registry__code_name(th->interp, exe->file_id, lookup);
		if (!name)
			name = function_start_name(th, exe, lookup, start_name, sizeof(start_name));
		unsym = !name || name == start_name;
	}
	if (unsym)
		th->stats.user_unsymbolized++;
	/* Source lines come later (trace_handler__symbolize_lines()) from lookup_addr: a return
	 * address and a leaf pc at the same address are two frames.
	 */
	id = frame_at(th, FRAME_NATIVE, mapping, addr, is_return, name);
	if (id >= th->native_cap) {
		size_t old = th->native_cap;

		if (array__reserve_bounded((void **)&th->native, &th->native_cap, (size_t)id + 1,
					   sizeof(*th->native), 1024, SIZE_MAX / 2))
			return id; /* symbolized by name only */
		memset(th->native + old, 0, (th->native_cap - old) * sizeof(*th->native));
	}
	if (id) {
		th->native[id].exe = exe;
		th->native[id].lookup_addr = is_return ? addr - 1 : addr;
		if (slot)
			*slot = (struct frame_slot){
				exe->file_id, addr, id, is_return, false, unsym
			};
	}
	return id;
}

int trace_handler__symbolize_lines(struct trace_handler *th, struct debuginfo *di)
{
	size_t id, cnt = profile__frame_cnt(th->prof);
	int pending = 0;

	for (id = 1; id <= cnt && id < th->native_cap; id++) {
		const struct native_frame_ref *ref = &th->native[id];
		const struct dwarf_line *dl = NULL;
		struct profile_line lines[DWARF_MAX_LINES];
		const struct profile_frame *f;
		int n = -ENOENT, i;

		if (!ref->exe)
			continue;
		if (di)
			n = file_symbols__dwarf_lines(th->files, ref->exe, di, ref->lookup_addr,
						      &dl);
		if (n == -EAGAIN)
			pending++;
		if (n > 0) {
			if (n > DWARF_MAX_LINES)
				n = DWARF_MAX_LINES;
			char *v8 = n == 1 && dl[0].function
					   ? symbol_name__v8_builtin(dl[0].function)
					   : NULL;

			for (i = 0; i < n; i++) {
				lines[i].function = dl[i].function;
				lines[i].file = dl[i].file;
				lines[i].line = dl[i].line;
				lines[i].column = 0;
			}
			if (v8)
				lines[0].function = v8;
			if (!profile__set_frame_lines(th->prof, (uint32_t)id, lines, (uint32_t)n))
				th->stats.user_lines++;
			free(v8);
			continue;
		}
		/* No DWARF: at least demangle the symbol-table name. */
		f = profile__frame(th->prof, (uint32_t)id);
		if (f && f->line_cnt == 1) {
			char *name = symbol_name__readable(f->lines[0].function);

			if (name) {
				lines[0] = (struct profile_line){ .function = name };
				profile__set_frame_lines(th->prof, (uint32_t)id, lines, 1);
				free(name);
			}
		}
	}
	return pending;
}

/* The cache slot of a runtime's frame whose symbol has this memo; NULL when there is no
 * cache (allocation failed).
 */
static struct runtime_slot *runtime_slot(struct trace_handler *th, const struct user_frame *uf,
					 uint64_t memo)
{
	uint64_t h;

	if (!th->runtime_cache &&
	    !(th->runtime_cache = calloc(RUNTIME_CACHE_CAP, sizeof(*th->runtime_cache))))
		return NULL;
	h = u64_hash(memo ^ u64_hash(uf->addr ^ u64_hash(uf->file_id ^ (uint64_t)uf->kind << 56)));
	return &th->runtime_cache[h & (RUNTIME_CACHE_CAP - 1)];
}

/* A runtime's marker frame ("[python: ...]"), the last one's again without a lookup. */
static uint32_t marker_frame(struct trace_handler *th, const char *text)
{
	uint32_t id;

	if (th->marker_frame && !strcmp(text, th->marker))
		return th->marker_frame;
	id = named_frame(th, FRAME_ERROR, 0, 0, text);
	th->marker_frame = 0;
	if (id && (size_t)snprintf(th->marker, sizeof(th->marker), "%s", text) < sizeof(th->marker))
		th->marker_frame = id;
	return id;
}

/* A runtime's frame (uf->kind): symbolized by its runtime (src/interp/). */
static uint32_t runtime_frame(struct trace_handler *th, const struct sample_record *rec,
			      const struct user_frame *uf)
{
	const struct interp_runtime *rt =
		th->interp ? interp_registry__runtime(th->interp, uf->kind) : NULL;
	struct interp_symbol sym = { .function = "[runtime frame]", .marker = true };
	struct profile_line lines[INTERP_INLINED_MAX + 1];
	struct profile_frame f = { .kind = FRAME_RUNTIME,
				   .lines = lines,
				   .runtime = rt ? rt->frame_type : NULL };
	struct runtime_slot *slot = NULL;
	uint32_t i, n, id;

	if (rt && th->opts.symbolize)
		interp_registry__symbolize(th->interp, (pid_t)rec->hdr.pid, (pid_t)rec->map_pid, uf,
					   &sym);
	if (sym.marker)
		return marker_frame(th, sym.function);
	if (sym.memo && (slot = runtime_slot(th, uf, sym.memo)) && slot->memo == sym.memo &&
	    slot->addr == uf->addr && slot->file_id == uf->file_id && slot->kind == uf->kind)
		return slot->frame;
	/* Inlined calls first (innermost), the frame's own function last, as pprof wants. */
	n = sym.inlined ? sym.inlined_cnt : 0;
	if (n > INTERP_INLINED_MAX)
		n = INTERP_INLINED_MAX;
	for (i = 0; i < n; i++)
		lines[i] = (struct profile_line){
			.function = sym.inlined[i].function,
			.file = sym.inlined[i].file,
			.line = sym.inlined[i].line > 0 ? (uint32_t)sym.inlined[i].line : 0,
			.column = sym.inlined[i].column > 0 ? (uint32_t)sym.inlined[i].column : 0,
		};
	lines[n] = (struct profile_line){ .function = sym.function,
					  .file = sym.file,
					  .line = sym.line > 0 ? (uint32_t)sym.line : 0,
					  .column = sym.column > 0 ? (uint32_t)sym.column : 0 };
	f.line_cnt = n + 1;
	id = profile__add_frame(th->prof, &f);
	if (slot && id)
		*slot = (struct runtime_slot){ sym.memo, uf->addr, uf->file_id, id, uf->kind };
	return id;
}

static uint32_t user_frame(struct trace_handler *th, const struct sample_record *rec,
			   const struct user_frame *uf, uint64_t now_ns)
{
	bool is_return = uf->flags & USER_FRAME_RETURN;
	struct executable *exe;
	struct process *p;
	const struct exec_mapping *m;
	uint64_t lookup, seq;

	th->stats.user_frames++;
	if (uf->kind != FRAME_KIND_NATIVE)
		return runtime_frame(th, rec, uf);
	if (!(uf->flags & USER_FRAME_UNMAPPED)) {
		exe = exe_registry__find(th->reg, uf->file_id);
		if (exe) {
			unwind_maps__note_sampled(th->um, exe->file_id, now_ns);
			return native_frame(th, exe, uf->addr, is_return);
		}
	}
	/* eBPF did not know this address: a new process or mapping. Ask /proc (rate-limited). */
	lookup = is_return ? uf->addr - 1 : uf->addr;
	seq = rec->map_pid == rec->hdr.pid ? rec->map_seq : 0;
	p = process_table__find(th->pt, (pid_t)rec->hdr.pid);
	if (!p || !process__mapping_at(p, lookup) || !process__view_fits(th->pt, p, lookup, seq))
		p = process_table__refresh(th->pt, (pid_t)rec->hdr.pid, now_ns,
					   RESCAN_MIN_INTERVAL_NS);
	m = p ? process__mapping_at(p, lookup) : NULL;
	if (m && !process__view_fits(th->pt, p, lookup, seq)) {
		/* The process mapped something else there between our view of it and the
		 * sample: the view may name a file the sample never ran.
		 */
		th->stats.user_replaced++;
		return named_frame(th, FRAME_NATIVE, 0, uf->addr, "[unknown: mapping replaced]");
	}
	if (m) {
		unwind_maps__note_sampled(th->um, m->exe->file_id, now_ns);
		th->stats.user_late_resolved++;
		return native_frame(th, m->exe, uf->addr - m->bias, is_return);
	}
	th->stats.user_unresolved++;
	return named_frame(th, FRAME_NATIVE, 0, uf->addr, "[unknown]");
}

/* One label string of a record (the program's bytes, size bytes with a NUL somewhere when
 * eBPF wrote it) as a C string in out[size]: cut at the first NUL, invalid UTF-8 and control
 * bytes replaced by '?'. True when something was replaced.
 */
static bool label_text(const char *in, size_t size, char *out)
{
	size_t len = strnlen(in, size - 1), i = 0, n, bad;
	bool repaired = false;

	while (i < len) {
		n = utf8__seq_len(in + i, len - i, &bad);
		if (!n || (n == 1 && ((unsigned char)in[i] < 0x20 || in[i] == 0x7f))) {
			n = n ? n : bad;
			memset(out + i, '?', n);
			repaired = true;
		} else {
			memcpy(out + i, in + i, n);
		}
		i += n;
	}
	out[len] = '\0';
	return repaired;
}

/* The record's goroutine labels into labels[] (texts in text[]); returns how many. */
static uint32_t sample_labels(struct trace_handler *th, const struct sample_record *rec,
			      struct profile_label *labels, struct sample_label *text)
{
	uint32_t i, cnt = rec->label_cnt < SS_MAX_LABELS ? rec->label_cnt : SS_MAX_LABELS;

	for (i = 0; i < cnt; i++) {
		if (label_text(rec->labels[i].key, sizeof(text[i].key), text[i].key) |
		    label_text(rec->labels[i].value, sizeof(text[i].value), text[i].value))
			th->stats.labels_repaired++;
		labels[i].key = text[i].key;
		labels[i].value = text[i].value;
	}
	if (cnt)
		th->stats.labeled++;
	return cnt;
}

/* An off-CPU stack is taken inside the sched_switch tracepoint: its first kernel frames are
 * the tracing machinery (bpf_trace_run4, the program). The stack starts at __schedule (all of
 * it when that is not found).
 */
static uint32_t off_cpu_kernel_start(struct trace_handler *th, const struct sample_record *rec,
				     uint32_t kcnt)
{
	const char *name;
	uint32_t i;

	for (i = 0; th->ks && i < kcnt && i < 8; i++) {
		name = kallsyms__lookup(th->ks, i ? rec->kernel_ips[i] - 1 : rec->kernel_ips[i],
					NULL, NULL);
		if (name && !strcmp(name, "__schedule"))
			return i;
	}
	return 0;
}

void trace_handler__bad_record(struct trace_handler *th)
{
	th->stats.bad_records++;
}

int trace_handler__sample(struct trace_handler *th, const struct sample_record *rec, size_t size,
			  uint64_t now_ns)
{
	struct profile_label labels[SS_MAX_LABELS + SAMPLE_TRACE_LABELS + 1];
	const char *const *key_map = NULL;
	const char *service, *refused = NULL;
	size_t key_cnt = 0;
	struct sample_label text[SS_MAX_LABELS];
	struct sample_trace_text trace_text;
	size_t head = offsetof(struct sample_record, user);
	struct profile_sample s = { 0 };
	uint32_t n = 0, i, k0 = 0, kcnt, ucnt;
	char reason[64];
	int err;

	th->has_last = false;
	if (size < head || rec->user_frame_cnt > SS_MAX_USER_FRAMES ||
	    size < head + rec->user_frame_cnt * sizeof(struct user_frame)) {
		th->stats.bad_records++;
		return -EINVAL;
	}
	kcnt = rec->kernel_frame_cnt > 0 ? (uint32_t)rec->kernel_frame_cnt : 0;
	if (kcnt > SS_MAX_KERNEL_FRAMES)
		kcnt = SS_MAX_KERNEL_FRAMES;
	ucnt = rec->user_frame_cnt;
	if (rec->map_pid && rec->map_pid != rec->hdr.pid &&
	    u64_map__get(&th->owners, rec->hdr.pid) != (void *)((uintptr_t)rec->map_pid + 1)) {
		if (th->owners.cnt >= OWNERS_MAX)
			u64_map__free(&th->owners);
		u64_map__set(&th->owners, rec->hdr.pid, (void *)((uintptr_t)rec->map_pid + 1));
	}
	if (rec->off_cpu_ns) { /* where it waited, and why: a leaf of its own */
		snprintf(reason, sizeof(reason), "[off-cpu: %s]",
			 off_cpu_state__name(rec->off_cpu_state));
		if ((th->frames[n] = named_frame(th, FRAME_ERROR, 0, 0, reason)))
			n++;
		th->stats.off_cpu++;
		k0 = off_cpu_kernel_start(th, rec, kcnt);
	} else if (rec->mem_kind ==
		   MEM_SAMPLED_ALLOC) { /* the function called: a leaf of its own */
		snprintf(reason, sizeof(reason), "[alloc: %s]", alloc_fn__name(rec->mem_fn));
		if ((th->frames[n] = named_frame(th, FRAME_ERROR, 0, 0, reason)))
			n++;
	} else if (rec->mem_kind) { /* what grew memory here: a leaf of its own */
		snprintf(reason, sizeof(reason), "[mem: %s]", mem_kind__name(rec->mem_kind));
		if ((th->frames[n] = named_frame(th, FRAME_ERROR, 0, 0, reason)))
			n++;
	}
	for (i = k0; i < kcnt; i++)
		if ((th->frames[n] = kernel_frame(th, rec->kernel_ips[i], i > 0)))
			n++;
	for (i = 0; i < ucnt; i++)
		if ((th->frames[n] = user_frame(th, rec, &rec->user[i], now_ns)))
			n++;
	if (unwind_end__incomplete(rec->user_end)) {
		const char *why = unwind_end__name(rec->user_end); /* one table: sampler.c */

		snprintf(reason, sizeof(reason),
			 rec->user_end == UNWIND_END_TRUNCATED ? "[%s]" : "[unwind: %s]", why);
		if ((th->frames[n] = named_frame(th, FRAME_ERROR, 0, 0, reason)))
			n++;
		th->stats.incomplete_stacks++;
	}
	if (n == (rec->off_cpu_ns || rec->mem_kind ? 1u : 0u) &&
	    (th->frames[n] = named_frame(th, FRAME_ERROR, 0, 0, "[no stack]")))
		n++;
	s.frames = th->frames;
	s.frame_cnt = n;
	s.pid = rec->hdr.pid;
	s.tid = rec->hdr.tid;
	s.comm = rec->comm;
	s.thread_comm = rec->thread_comm;
	s.cpu = rec->hdr.cpu;
	s.time_ns = rec->hdr.time_ns + (uint64_t)th->opts.mono_to_wall_ns;
	s.count = 1;
	s.off_cpu_ns = rec->off_cpu_ns;
	if (rec->mem_kind == MEM_SAMPLED_ALLOC) {
		s.mem_kind = PROFILE_MEM_ALLOC;
		mem_alloc__weights(rec->mem_weight, th->opts.alloc_rate, &s.mem_objects,
				   &s.mem_value);
	} else if (rec->mem_kind) {
		s.mem_kind = rec->mem_kind == MEM_FAULT ? PROFILE_MEM_FAULTS : PROFILE_MEM_MAPPED;
		s.mem_value = rec->mem_weight;
	}
	s.labels = labels;
	s.label_cnt = sample_labels(th, rec, labels, text);
	if (rec->trace.state == OTEL_TRACE_SET && rec->trace.attrs_sz && th->opts.key_map_of)
		key_map = th->opts.key_map_of(th->opts.published_ctx, s.pid, &key_cnt);
	s.label_cnt += sample_trace__labels_keyed(&rec->trace, key_map, key_cnt, &trace_text,
						  labels + s.label_cnt);
	if (th->opts.service_of &&
	    (service = th->opts.service_of(th->opts.published_ctx, s.pid, &refused)))
		labels[s.label_cnt++] = (struct profile_label){ PCTX_SERVICE_LABEL, service };
	else if (th->opts.service_of && refused)
		labels[s.label_cnt++] = (struct profile_label){ PCTX_REFUSED_LABEL, refused };
	th->stats.samples++;
	err = profile__add_sample(th->prof, &s);
	if (err)
		return err;
	th->last = s;
	th->last.labels = NULL;
	th->last.label_cnt = 0;
	th->has_last = true;
	return 0;
}

const struct profile_sample *trace_handler__last_sample(const struct trace_handler *th)
{
	return th->has_last ? &th->last : NULL;
}
