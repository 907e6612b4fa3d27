/* HotSpot (OpenJDK) JVMs, as a runtime of src/interp/interp.h: finds libjvm.so among the
 * mapped files, reads each JVM's own serviceability tables (vmstructs.h) for every layout it
 * needs, registers the code cache as the JVM's code range (its eBPF code-range walker,
 * bpf/interp/hotspot/walk.h, unwinds the Java frames there) and turns the frames eBPF emits
 * (Method* + bytecode index, nmethod + pc offset, stub + pc offset) into Java names
 * (`com.example.Foo.bar`), source files and lines by reading the process's memory.
 *
 * Versions: any HotSpot whose tables export the fields below (checked: OpenJDK 11, 17, 21, 26,
 * Temurin 25; x86-64); where a member was renamed or moved (GenericGrowableArray in 11,
 * GrowableArrayBase later; the source file's index in InstanceKlass in 11, in ConstantPool
 * later) the first name the tables know is taken. A JVM whose tables lack one is refused: its
 * code cache is still registered when its bounds are known, and a Java frame there is one
 * "[jvm: unsupported JVM]" marker (counted) that ends the stack under the native frames it
 * called. Layouts are read once per libjvm file (the first process attached) and
 * reused for every JVM of that file; what moves per process (code heaps, the interpreter) is
 * read once the JVM has initialised them (proc_refresh, until found).
 *
 * Invariants: the caches have fixed sizes (HS_METHOD_CACHE_CAP: ../common/symbol_cache.h,
 * HS_BLOB_CACHE_CAP: base/lru_sets.h), keyed by (pid, attach generation, address) and checked
 * against the frame's cookie (ConstMethod* for methods, compile id for nmethods): code freed
 * and its memory reused shows as "[jvm: stale code]", never as another method's name. All reads of
 * process memory are bounded (names HS_NAME_MAX, line tables HS_LINES_MAX, an nmethod's debug
 * information as nmethod_scopes.h caps it: at most ~40 KiB per blob entry, a few KiB in
 * practice) and on the process's read budget (../common/symbol_cache.h: past it, a frame is a
 * counted "over the process's read budget" marker); a method's line table is decoded once,
 * when read, into an index a frame's line is searched in; what the caches hold is capped in
 * bytes (HS_METHOD_BYTES_MAX, HS_BLOB_BYTES_MAX: older entries dropped to make room). A
 * process made hostile (thousands of huge methods, deep recursion) costs a bounded time per
 * frame and a bounded memory in all.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/lru_sets.h"
#include "base/utf8.h"
#include "base/u64_map.h"
#include "formats/elf_file.h"
#include "interp/hotspot/hotspot_lines.h"
#include "interp/hotspot/nmethod_scopes.h"
#include "interp/common/interp_elf.h"
#include "interp/common/symbol_cache.h"
#include "interp/hotspot/vmstructs.h"
#include "interp/common/runtime_counters.h"
#include "interp/common/proc_memory.h"
#include "interp/interp.h"
#include "proc/executable.h"

#define HS_METHOD_CACHE_CAP 4096
#define HS_BLOB_CACHE_CAP 1024
#define HS_METHOD_BYTES_MAX (8u << 20)  /* names and line indexes the method cache holds */
#define HS_BLOB_BYTES_MAX (8u << 20)    /* nmethods' debug information the blob cache holds */
#define HS_NAME_MAX 512                 /* bytes of a class, method or file name */
#define HS_LINES_MAX 8192               /* bytes of a line-number table */
#define HS_INLINED_TEXT 8192            /* bytes of the inlined methods' names, per frame */
#define HS_TABLE_TRIES 20               /* attach attempts while a libjvm's tables are unreadable */
#define HS_REFRESH_NS (10 * 1000000ULL) /* retries until the code cache is known */
#define HS_CODE_CACHE_MAX (4ULL << 30)  /* bytes: ReservedCodeCacheSize is at most 2 GiB */

/* Everything read from one libjvm's tables: the eBPF part and what symbolization needs. */
struct hs_layout {
	struct hs_proc_abi bpf; /* without the per-process members (heaps, interpreter) */
	int major;              /* Abstract_VM_Version::_vm_major_version (0: unknown) */
	unsigned u5_excluded;   /* UNSIGNED5: 1 from JDK 20 on */
	/* Static fields, as ELF vaddrs (add the process's bias). */
	uint64_t heaps, low_bound, high_bound, interp_code;
	uint64_t heap_memory, heap_segmap, heap_log2; /* CodeHeap */
	uint64_t vs_low, vs_high;                     /* VirtualSpace bounds (reserved) */
	uint64_t ga_len, ga_data;                     /* GrowableArray<CodeHeap*> */
	uint64_t sq_buffer, sq_limit;                 /* StubQueue */
	uint64_t const_constants, const_flags, const_code_size, const_name, const_sig;
	uint32_t const_flags_size, lnt_flag;
	uint64_t cp_holder, cp_length, cp_size;
	uint64_t src_index; /* u2: the source file's constant-pool index, in ... */
	bool src_in_klass;  /* ... the holder InstanceKlass (11), not the ConstantPool (17) */
	uint64_t klass_name, sym_length, sym_body;
	struct nm_layout nm; /* compiled code's debug information (lines, inlined methods) */
};

struct hs_file {
	struct interp_file_base base;
	struct elf_file *elf; /* borrowed: the executable keeps it open */
	uint64_t syms[VM_SYM_CNT];
	bool tried, loaded; /* tables read (once), and complete enough */
	unsigned read_failures;
	struct hs_layout l;
};

struct hs_proc {
	struct interp_proc_base base;
	uint64_t bias;
	struct hs_file *file;
	bool ready;
	uint64_t last_try_ns;
};

struct method_entry {
	struct symbol_cache_key key; /* addr: the Method*; cookie: its ConstMethod* >> 3 */
	char *name, *file;
	struct hotspot_line *lines; /* the line table decoded once (NULL: no lines) */
	size_t line_cnt;
};

struct blob_entry {
	pid_t pid;
	uint32_t gen;
	uint64_t blob;
	int32_t compile_id;
	uint64_t method;     /* nmethod: its Method*; stub: 0 */
	char *name;          /* stub: its name */
	struct nm_debug dbg; /* nmethod: its pc descriptors, scopes and metadata */
	size_t bytes;        /* what name and dbg hold */
};

#define HS_STATS(X)                                             \
	X(HS_STAT_TABLES_READ, "tables read")                   \
	X(HS_STAT_TABLES_INCOMPLETE, "tables incomplete")       \
	X(HS_STAT_METHOD_READS, "methods read")                 \
	X(HS_STAT_UNREADABLE, "unreadable")                     \
	X(HS_STAT_STALE, "stale code")                          \
	X(HS_STAT_INLINED, "inlined frames")                    \
	X(HS_STAT_INLINED_DROPPED, "inlined frames dropped")    \
	/* methods not read: the process's read budget spent */ \
	X(HS_STAT_OVER_BUDGET, "reads over budget")             \
	/* methods dropped for room (HS_METHOD_BYTES_MAX) */    \
	X(HS_STAT_EVICTED, "methods evicted")

enum hs_stat { HS_STATS(INTERP_LIST_ENUM) HS_STAT_CNT };

struct hotspot {
	struct symbol_cache methods;
	struct blob_entry blobs[HS_BLOB_CACHE_CAP];
	struct lru_sets blob_slots; /* which entry of blobs holds one */
	size_t blob_bytes;          /* the nmethods' debug information held, at most ... */
	size_t blob_hand;           /* ... HS_BLOB_BYTES_MAX: entries dropped in clock order */
	uint64_t stats[HS_STAT_CNT];
	char text[HS_NAME_MAX * 2 + 32];
	/* The current frame's inlined methods (interp_symbol.inlined): names copied here, the
	 * method cache may evict an entry while the next inlined method is read.
	 */
	struct interp_inlined inlined[INTERP_INLINED_MAX];
	char inlined_text[HS_INLINED_TEXT];
};

static void method_entry__clear(void *ctx, void *entry)
{
	struct method_entry *e = entry;

	(void)ctx;
	free(e->name);
	free(e->file);
	free(e->lines);
}

/* What the cache counts (stats[]) and the markers it gives. */
static const struct symbol_cache_report cache_report = { HS_STAT_METHOD_READS, HS_STAT_UNREADABLE,
							 HS_STAT_STALE,        HS_STAT_OVER_BUDGET,
							 HS_STAT_EVICTED,      "method unreadable",
							 "stale code" };

static int hs_init(void *rt)
{
	struct hotspot *hs = rt;
	int err;

	if (lru_sets__init(&hs->blob_slots, HS_BLOB_CACHE_CAP))
		return -ENOMEM;
	err = symbol_cache__init(&hs->methods, HS_METHOD_CACHE_CAP, sizeof(struct method_entry),
				 true, method_entry__clear, NULL, &cache_report, hs->stats);
	hs->methods.bytes_max = HS_METHOD_BYTES_MAX;
	return err;
}

static void hs_fini(void *rt)
{
	struct hotspot *hs = rt;
	size_t i;

	symbol_cache__free(&hs->methods);
	for (i = 0; i < HS_BLOB_CACHE_CAP; i++) {
		free(hs->blobs[i].name);
		nm_debug__free(&hs->blobs[i].dbg);
	}
	lru_sets__free(&hs->blob_slots);
}

/* ---- files ---- */

static bool name_is_libjvm(const char *path)
{
	size_t n = strlen(path);

	return n >= 9 && !strcmp(path + n - 9, "libjvm.so") && (n == 9 || path[n - 10] == '/');
}

static int hs_file_detect(void *rt, const struct executable *exe, void *file_state,
			  struct interp_file *bpf)
{
	struct interp_sym syms[VM_SYM_CNT];
	struct hs_file *f = file_state;
	size_t k;

	(void)rt;
	if (!exe->elf || !name_is_libjvm(exe->path))
		return -ENOENT;
	f->elf = exe->elf;
	interp_elf__symbols(exe->elf, vm_sym_names, VM_SYM_CNT, syms);
	for (k = 0; k < VM_SYM_CNT; k++)
		f->syms[k] = syms[k].found ? syms[k].addr : 0;
	/* No native range: Java frames are found through the code cache (proc_refresh). */
	bpf->supported = f->syms[VM_SYM_STRUCTS] && f->syms[VM_SYM_TYPES] ? 1 : 0;
	pr_debug("jvm: %s: HotSpot tables %s\n", f->base.path,
		 bpf->supported ? "exported" : "absent");
	return 0;
}

/* ---- layouts from the tables ---- */

struct want {
	const char *type, *field;
	uint64_t *out;
};

static int field_width(const struct vmstructs *vs, const char *type, const char *field)
{
	const char *t = vmstructs__field_type(vs, type, field);

	if (!t)
		return 4;
	if (strstr(t, "16") || !strcmp(t, "u2") || !strcmp(t, "jushort") || !strcmp(t, "short"))
		return 2;
	if (strstr(t, "8_t") || !strcmp(t, "u1") || !strcmp(t, "bool"))
		return 1;
	return 4;
}

/* Fill l from the tables; 0, or -ENOENT naming the first missing entry in *missing. */
static int layout_from(const struct vmstructs *vs, uint64_t bias, struct hs_layout *l,
		       const char **missing)
{
	struct hs_proc_abi *b = &l->bpf;
	uint64_t blob_name, blob_fs, blob_fc, blob_code, nm_method, nm_id, m_const, c_size;
	uint64_t v, heap_block, kind_off;
	int32_t iv;
	const struct want fields[] = {
		{ "CodeHeap", "_memory", &l->heap_memory },
		{ "CodeHeap", "_segmap", &l->heap_segmap },
		{ "CodeHeap", "_log2_segment_size", &l->heap_log2 },
		{ "VirtualSpace", "_low_boundary", &l->vs_low },
		{ "VirtualSpace", "_high_boundary", &l->vs_high },
		{ "GrowableArray<int>", "_data", &l->ga_data },
		{ "StubQueue", "_stub_buffer", &l->sq_buffer },
		{ "StubQueue", "_buffer_limit", &l->sq_limit },
		{ "CodeBlob", "_name", &blob_name },
		{ "CodeBlob", "_frame_size", &blob_fs },
		{ "CodeBlob", "_frame_complete_offset", &blob_fc },
		{ "nmethod", "_compile_id", &nm_id },
		{ "Method", "_constMethod", &m_const },
		{ "ConstMethod", "_constants", &l->const_constants },
		{ "ConstMethod", "_code_size", &l->const_code_size },
		{ "ConstMethod", "_name_index", &l->const_name },
		{ "ConstMethod", "_signature_index", &l->const_sig },
		{ "ConstantPool", "_pool_holder", &l->cp_holder },
		{ "ConstantPool", "_length", &l->cp_length },
		{ "Klass", "_name", &l->klass_name },
		{ "Symbol", "_length", &l->sym_length },
		{ "Symbol", "_body", &l->sym_body },
	};
	/* The code cache's bounds first: a JVM refused for what follows still has its code
	 * range registered (hs_proc_refresh), so its Java frames end in a marker.
	 */
	const struct want statics[] = {
		{ "CodeCache", "_low_bound", &l->low_bound },
		{ "CodeCache", "_high_bound", &l->high_bound },
		{ "CodeCache", "_heaps", &l->heaps },
		{ "AbstractInterpreter", "_code", &l->interp_code },
	};
	size_t i;

	for (i = 0; i < sizeof(statics) / sizeof(statics[0]); i++) {
		if (vmstructs__address(vs, statics[i].type, statics[i].field, &v) || v < bias) {
			*missing = statics[i].field;
			return -ENOENT;
		}
		*statics[i].out = v - bias;
	}
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (vmstructs__offset(vs, fields[i].type, fields[i].field, fields[i].out)) {
			*missing = fields[i].field;
			return -ENOENT;
		}
	/* Members that moved between releases: the first name the tables know. */
	if (vmstructs__offset(vs, "GrowableArrayBase", "_len", &l->ga_len) &&
	    vmstructs__offset(vs, "GenericGrowableArray", "_len", &l->ga_len)) {
		*missing = "GrowableArrayBase::_len";
		return -ENOENT;
	}
	if (!vmstructs__offset(vs, "ConstantPool", "_source_file_name_index", &l->src_index)) {
		l->src_in_klass = false;
	} else if (!vmstructs__offset(vs, "InstanceKlass", "_source_file_name_index",
				      &l->src_index)) {
		l->src_in_klass = true;
	} else {
		*missing = "_source_file_name_index";
		return -ENOENT;
	}
	if (!vmstructs__offset(vs, "CodeBlob", "_code_offset", &blob_code)) {
		b->code_is_offset = 1;
	} else if (vmstructs__offset(vs, "CodeBlob", "_code_begin", &blob_code)) {
		*missing = "_code_begin";
		return -ENOENT;
	}
	if (vmstructs__offset(vs, "nmethod", "_method", &nm_method) &&
	    vmstructs__offset(vs, "CompiledMethod", "_method", &nm_method)) {
		*missing = "_method";
		return -ENOENT;
	}
	if (!vmstructs__offset(vs, "ConstMethod", "_flags._flags", &l->const_flags)) {
		l->const_flags_size = 4;
	} else if (!vmstructs__offset(vs, "ConstMethod", "_flags", &l->const_flags)) {
		l->const_flags_size = (uint32_t)field_width(vs, "ConstMethod", "_flags");
	} else {
		*missing = "ConstMethod::_flags";
		return -ENOENT;
	}
	if (vmstructs__int(vs, "ConstMethodFlags::_misc_has_linenumber_table", &iv) &&
	    vmstructs__int(vs, "ConstMethod::_has_linenumber_table", &iv))
		iv = 0; /* no lines */
	l->lnt_flag = (uint32_t)iv;
	if (vmstructs__size(vs, "ConstMethod", &c_size) ||
	    vmstructs__size(vs, "ConstantPool", &l->cp_size) ||
	    vmstructs__size(vs, "HeapBlock", &heap_block)) {
		*missing = "type sizes";
		return -ENOENT;
	}
	b->blob_kind = HS_NO_OFFSET;
	if (!vmstructs__offset(vs, "CodeBlob", "_kind", &kind_off) &&
	    !vmstructs__int(vs, "CodeBlobKind::Nmethod", &iv)) {
		b->blob_kind = (uint16_t)kind_off;
		b->kind_nmethod = (uint8_t)iv;
	}
	b->blob_name = (uint16_t)blob_name;
	b->blob_frame_size = (uint16_t)blob_fs;
	b->blob_frame_complete = (uint16_t)blob_fc;
	b->frame_complete_16 = field_width(vs, "CodeBlob", "_frame_complete_offset") == 2;
	b->blob_code = (uint16_t)blob_code;
	b->nm_method = (uint16_t)nm_method;
	b->nm_compile_id = (uint16_t)nm_id;
	b->method_const = (uint16_t)m_const;
	b->const_size = (uint16_t)c_size;
	b->block_hdr = (uint16_t)heap_block;
	/* Interpreter frame slots (frame_x86.hpp, frame_aarch64.hpp): sender sp and last sp are
	 * exported; Method* is the next slot below last sp, the bytecode pointer five below that
	 * (method, mirror, mdp, cache, locals, bcp) on x86-64, six on arm64 (a padding slot
	 * after mdp keeps its stack 16-byte aligned).
	 */
	if (vmstructs__int(vs, "frame::interpreter_frame_sender_sp_offset", &iv))
		iv = -1;
	b->slot_sender_sp = (int8_t)iv;
	if (vmstructs__int(vs, "frame::interpreter_frame_last_sp_offset", &iv))
		iv = -2;
	b->slot_method = (int8_t)(iv - 1);
#if defined(__aarch64__)
	b->slot_bcp = (int8_t)(iv - 7);
#else
	b->slot_bcp = (int8_t)(iv - 6);
#endif
	/* A deoptimised frame's original return address (optional: without, no line). */
	b->nm_deopt = HS_NO_OFFSET;
	if (!vmstructs__offset(vs, "nmethod", "_orig_pc_offset", &v)) {
		b->nm_orig_pc = (uint16_t)v;
		if (!vmstructs__offset(vs, "nmethod", "_deopt_handler_offset", &v)) {
			b->nm_deopt = (uint16_t)v;
			b->deopt_is_offset = 1;
		} else if (!vmstructs__offset(vs, "CompiledMethod", "_deopt_handler_begin", &v)) {
			b->nm_deopt = (uint16_t)v;
		}
	}
	b->supported = 1;
	return 0;
}

static void read_layout(struct hotspot *hs, struct hs_file *f, pid_t pid, uint64_t bias)
{
	struct vmstructs vs;
	const char *missing = "?";
	uint64_t major_addr;
	int32_t major = 0;
	int err;

	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = vmstructs__read(&vs, pid, f->elf, bias, f->syms);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (err) {
		/* A libjvm just mapped has not run its static constructors yet (the tables'
		 * descriptors are zero): tried again at the process's next scans.
		 */
		if (++f->read_failures < HS_TABLE_TRIES)
			return;
		f->tried = true;
		pr_info("jvm: %s (pid %d): HotSpot tables unreadable (%s): native frames only\n",
			f->base.path, (int)pid, strerror(-err));
		return;
	}
	f->tried = true;
	hs->stats[HS_STAT_TABLES_READ]++;
	if (layout_from(&vs, bias, &f->l, &missing)) {
		hs->stats[HS_STAT_TABLES_INCOMPLETE]++;
		pr_info("jvm: %s: HotSpot tables lack %s: Java frames shown as markers\n",
			f->base.path, missing);
	} else {
		f->loaded = true;
	}
	if (!vmstructs__address(&vs, "Abstract_VM_Version", "_vm_major_version", &major_addr))
		interp__read_mem(pid, major_addr, &major, sizeof(major));
	f->l.major = major > 0 && major < 1000 ? major : 0;
	f->l.u5_excluded = f->l.major >= 20 ? 1 : 0;
	nm_layout__from(&vs, f->l.u5_excluded, &f->l.nm);
	pr_debug("jvm: %s: JDK %d, %zu fields, %zu types, %zu constants, read in %lld us\n",
		 f->base.path, f->l.major, vs.field_cnt, vs.types.cnt, vs.ints.cnt,
		 (long long)((t1.tv_sec - t0.tv_sec) * 1000000LL +
			     (t1.tv_nsec - t0.tv_nsec) / 1000));
	vmstructs__free(&vs);
}

/* ---- processes ---- */

static int hs_proc_attach(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			  void *proc_state, struct interp_proc *bpf)
{
	struct hotspot *hs = rt;
	struct hs_file *f = file_state;
	struct hs_proc *p = proc_state;

	(void)now_ns;
	if (!f->tried)
		read_layout(hs, f, p->base.pid, bias);
	if (!f->tried)
		return -EAGAIN;
	p->bias = bias;
	p->file = f;
	bpf->hs = f->l.bpf; /* supported = 0 when the tables lacked something */
	bpf->hs.ready = 0;
	return 0;
}

/* The code cache's bounds [*low, *high), once the JVM has reserved it; 0 when read. */
static int read_code_bounds(const struct hs_proc *p, uint64_t *low, uint64_t *high)
{
	const struct hs_layout *l = &p->file->l;

	if (!l->low_bound || !l->high_bound ||
	    interp__read_u64(p->base.pid, l->low_bound + p->bias, low) ||
	    interp__read_u64(p->base.pid, l->high_bound + p->bias, high) || !*low ||
	    *low >= *high || *high - *low > HS_CODE_CACHE_MAX)
		return -EAGAIN;
	return 0;
}

/* The JVM's code heaps and interpreter, once it has created them; 0 when read. */
static int read_code_cache(const struct hs_proc *p, struct hs_proc_abi *b, uint64_t *low,
			   uint64_t *high)
{
	const struct hs_layout *l = &p->file->l;
	uint64_t arr, data, heap, queue, buf;
	int32_t len = 0, log2 = 0, limit = 0;
	int i, n = 0;

	if (interp__read_u64(p->base.pid, l->heaps + p->bias, &arr) || !arr ||
	    interp__read_mem(p->base.pid, arr + l->ga_len, &len, sizeof(len)) || len <= 0 ||
	    interp__read_u64(p->base.pid, arr + l->ga_data, &data) || !data)
		return -EAGAIN;
	for (i = 0; i < len && n < HS_MAX_HEAPS; i++) {
		uint64_t hlow, hhigh, segmap;

		if (interp__read_u64(p->base.pid, data + 8 * (uint64_t)i, &heap) || !heap ||
		    interp__read_u64(p->base.pid, heap + l->heap_memory + l->vs_low, &hlow) ||
		    interp__read_u64(p->base.pid, heap + l->heap_memory + l->vs_high, &hhigh) ||
		    interp__read_u64(p->base.pid, heap + l->heap_segmap + l->vs_low, &segmap) ||
		    interp__read_mem(p->base.pid, heap + l->heap_log2, &log2, sizeof(log2)))
			return -EAGAIN;
		if (hlow >= hhigh || !segmap || log2 < 4 || log2 > 16)
			return -EAGAIN;
		b->heap[n] = (struct hs_heap){ .low = hlow, .high = hhigh, .segmap = segmap };
		b->log2_seg[n++] = (uint8_t)log2;
	}
	if (interp__read_u64(p->base.pid, l->interp_code + p->bias, &queue) || !queue ||
	    interp__read_u64(p->base.pid, queue + l->sq_buffer, &buf) || !buf ||
	    interp__read_mem(p->base.pid, queue + l->sq_limit, &limit, sizeof(limit)) || limit <= 0)
		return -EAGAIN;
	if (read_code_bounds(p, low, high))
		return -EAGAIN;
	b->heap_cnt = (uint8_t)n;
	b->interp_lo = buf;
	b->interp_hi = buf + (uint64_t)limit;
	return 0;
}

static int hs_proc_refresh(void *rt, void *proc_state, uint64_t now_ns, struct interp_proc *bpf,
			   struct interp_code_range *code)
{
	struct hs_proc *p = proc_state;
	struct hs_proc_abi b;
	uint64_t low, high;

	(void)rt;
	if (p->ready || (p->last_try_ns && now_ns - p->last_try_ns < HS_REFRESH_NS))
		return 0;
	p->last_try_ns = now_ns;
	b = bpf->hs;
	if (!p->file->loaded) {
		/* Refused (tables incomplete): its code cache is still its own range, so that a
		 * Java frame ends the stack in the "unsupported JVM" marker (counted), not in a
		 * native step through code that has no unwind information.
		 */
		if (read_code_bounds(p, &low, &high))
			return 0;
		p->ready = true;
		code[0] = (struct interp_code_range){ .start = low, .end = high };
		pr_debug("jvm: pid %d: refused, its code cache %#llx-%#llx shown as a marker\n",
			 (int)p->base.pid, (unsigned long long)low, (unsigned long long)high);
		return 1;
	}
	if (read_code_cache(p, &b, &low, &high))
		return 0;
	p->ready = true;
	b.ready = 1;
	bpf->hs = b;
	code[0] = (struct interp_code_range){ .start = low, .end = high };
	pr_debug("jvm: pid %d: code cache %#llx-%#llx (%u heaps), interpreter %#llx-%#llx\n",
		 (int)p->base.pid, (unsigned long long)low, (unsigned long long)high, b.heap_cnt,
		 (unsigned long long)b.interp_lo, (unsigned long long)b.interp_hi);
	return 1;
}

/* ---- symbolization ---- */

/* A Symbol's text (modified UTF-8, bounded) into out; 0 or -EFAULT. */
static int read_symbol(pid_t pid, const struct hs_layout *l, uint64_t sym, char *out, size_t cap)
{
	uint16_t len = 0;

	if (!sym || interp__read_mem(pid, sym + l->sym_length, &len, sizeof(len)))
		return -EFAULT;
	if (len >= cap)
		len = (uint16_t)(cap - 1);
	if (len && interp__read_mem(pid, sym + l->sym_body, out, len))
		return -EFAULT;
	out[len] = 0;
	/* A Symbol freed and its memory reused (class unloading) reads as bytes that are not
	 * text: unreadable rather than a wrong name.
	 */
	if (!len || memchr(out, 0, len) || !utf8__valid(out, len))
		return -EFAULT;
	return 0;
}

/* The Symbol* at constant-pool index idx. */
static int cp_symbol(pid_t pid, const struct hs_layout *l, uint64_t cp, int32_t cp_len,
		     uint16_t idx, uint64_t *sym)
{
	if (!idx || idx >= cp_len)
		return -ERANGE;
	return interp__read_u64(pid, cp + l->cp_size + 8 * (uint64_t)idx, sym);
}

static uint32_t read_uint(const uint8_t *buf, uint64_t off, uint32_t size)
{
	uint32_t v = 0;

	memcpy(&v, buf + off, size);
	return v;
}

/* Read method's names and line table into entry (symbol_cache_read_fn; ctx: the layout); 0
 * or -errno.
 */
static int read_method(const void *ctx, pid_t pid, uint64_t method, void *entry)
{
	const struct hs_layout *l = ctx;
	struct method_entry *e = entry;
	uint8_t cm_buf[256];
	uint64_t cm, cp, holder, sym, lnt;
	uint16_t name_idx, src_idx = 0;
	int32_t cp_len = 0;
	uint32_t code_size, flags;
	char klass[HS_NAME_MAX], name[HS_NAME_MAX], file[HS_NAME_MAX];
	size_t i;

	if (l->bpf.const_size > sizeof(cm_buf) || l->const_constants + 8 > sizeof(cm_buf) ||
	    l->const_flags + l->const_flags_size > sizeof(cm_buf) ||
	    l->const_code_size + 2 > sizeof(cm_buf) || l->const_name + 2 > sizeof(cm_buf))
		return -EINVAL;
	if (interp__read_u64(pid, method + l->bpf.method_const, &cm) || !cm ||
	    interp__read_mem(pid, cm, cm_buf, l->bpf.const_size))
		return -EFAULT;
	e->key.cookie = (uint32_t)(cm >> 3);
	memcpy(&cp, cm_buf + l->const_constants, 8);
	flags = read_uint(cm_buf, l->const_flags, l->const_flags_size);
	code_size = read_uint(cm_buf, l->const_code_size, 2);
	name_idx = (uint16_t)read_uint(cm_buf, l->const_name, 2);
	if (!cp || interp__read_u64(pid, cp + l->cp_holder, &holder) ||
	    interp__read_mem(pid, cp + l->cp_length, &cp_len, sizeof(cp_len)) ||
	    interp__read_mem(pid, (l->src_in_klass ? holder : cp) + l->src_index, &src_idx,
			     sizeof(src_idx)))
		return -EFAULT;
	if (interp__read_u64(pid, holder + l->klass_name, &sym) ||
	    read_symbol(pid, l, sym, klass, sizeof(klass)) ||
	    cp_symbol(pid, l, cp, cp_len, name_idx, &sym) ||
	    read_symbol(pid, l, sym, name, sizeof(name)))
		return -EFAULT;
	file[0] = 0;
	if (src_idx && !cp_symbol(pid, l, cp, cp_len, src_idx, &sym))
		read_symbol(pid, l, sym, file, sizeof(file));
	for (i = 0; klass[i]; i++)
		if (klass[i] == '/')
			klass[i] = '.';
	if (asprintf(&e->name, "%s.%s", klass, name) < 0) {
		e->name = NULL;
		return -ENOMEM;
	}
	e->file = file[0] ? strdup(file) : NULL;
	/* Decoded here, once: a frame's line is then a binary search, whatever the table. */
	if (l->lnt_flag && (flags & l->lnt_flag)) {
		uint8_t buf[HS_LINES_MAX];
		size_t len = sizeof(buf);

		lnt = cm + l->bpf.const_size + code_size;
		while (len >= 64 && interp__read_mem(pid, lnt, buf, len))
			len /= 2;
		if (len < 64 ||
		    hotspot_lines__index(buf, len, l->u5_excluded, &e->lines, &e->line_cnt))
			e->line_cnt = 0;
	}
	/* What the entry holds, counted against the cache's byte cap. */
	e->key.bytes = (uint32_t)(strlen(e->name) + 1 + (e->file ? strlen(e->file) + 1 : 0) +
				  e->line_cnt * sizeof(*e->lines));
	return 0;
}

static const struct interp_marker_text marker_texts[] = {
	{ HS_MARKER_UNSUPPORTED, "unsupported JVM" },
	{ HS_MARKER_TRUNCATED, "more frames truncated" },
	{ HS_MARKER_NO_BLOB, "unknown code" },
	{ HS_MARKER_BAD_FRAME, "bad frame" },
};

/* The cached method, read if needed; NULL with a marker in *out. */
static struct method_entry *method_get(struct hotspot *hs, struct hs_proc *p, pid_t reader,
				       uint64_t method, uint32_t cookie, struct interp_symbol *out)
{
	return symbol_cache__get(&hs->methods, &p->base, reader, method, cookie, 0, read_method,
				 &p->file->l, out, NULL);
}

/* e emptied, what it held given back. */
static void blob_entry__drop(struct hotspot *hs, struct blob_entry *e)
{
	hs->blob_bytes -= e->bytes <= hs->blob_bytes ? e->bytes : hs->blob_bytes;
	free(e->name);
	nm_debug__free(&e->dbg);
	memset(e, 0, sizeof(*e));
}

/* Entries dropped in clock order, never keep, until what they hold fits the cap. */
static void blob_make_room(struct hotspot *hs, const struct blob_entry *keep)
{
	size_t tries;

	for (tries = 0; hs->blob_bytes > HS_BLOB_BYTES_MAX && tries < HS_BLOB_CACHE_CAP; tries++) {
		struct blob_entry *e = &hs->blobs[hs->blob_hand];

		hs->blob_hand = (hs->blob_hand + 1) % HS_BLOB_CACHE_CAP;
		if (e != keep && e->pid)
			blob_entry__drop(hs, e);
	}
}

/* The cached blob (nmethod: compile id and Method*; stub: name); NULL with a marker. Its
 * reads are on the process's read budget, what it holds within HS_BLOB_BYTES_MAX.
 */
static struct blob_entry *blob_get(struct hotspot *hs, struct hs_proc *p, pid_t reader,
				   uint64_t blob, bool compiled, int32_t compile_id,
				   struct interp_symbol *out)
{
	const struct hs_proc_abi *b = &p->file->l.bpf;
	uint64_t slot = lru_sets__slot(
		&hs->blob_slots,
		u64_hash(blob ^ u64_hash((uint64_t)p->base.pid << 32 | p->base.gen)));
	struct blob_entry *e = &hs->blobs[slot];
	uint64_t method = 0, name_ptr;
	int32_t id = 0;
	char name[128];
	uint64_t start;

	if (e->pid == p->base.pid && e->gen == p->base.gen && e->blob == blob &&
	    (!compiled || (e->method && e->compile_id == compile_id)))
		return e;
	if (!symbol_cache__budget_begin(&p->base, &start)) {
		hs->stats[HS_STAT_OVER_BUDGET]++;
		interp__marker(out, SYMBOL_CACHE_OVER_BUDGET);
		return NULL;
	}
	if (compiled) {
		if (interp__read_u64(reader, blob + b->nm_method, &method) ||
		    interp__read_mem(reader, blob + b->nm_compile_id, &id, sizeof(id))) {
			symbol_cache__budget_end(&p->base, start);
			hs->stats[HS_STAT_UNREADABLE]++;
			interp__marker(out, "code unreadable");
			return NULL;
		}
		if (id != compile_id || !method) {
			symbol_cache__budget_end(&p->base, start);
			hs->stats[HS_STAT_STALE]++;
			interp__marker(out, "stale code");
			return NULL;
		}
		name[0] = 0;
	} else {
		if (interp__read_u64(reader, blob + b->blob_name, &name_ptr) ||
		    interp__read_mem(reader, name_ptr, name, sizeof(name))) {
			symbol_cache__budget_end(&p->base, start);
			hs->stats[HS_STAT_UNREADABLE]++;
			interp__marker(out, "code unreadable");
			return NULL;
		}
		name[sizeof(name) - 1] = 0;
	}
	blob_entry__drop(hs, e);
	*e = (struct blob_entry){ .pid = p->base.pid,
				  .gen = p->base.gen,
				  .blob = blob,
				  .compile_id = compile_id,
				  .method = method };
	e->name = compiled ? NULL : strdup(name);
	if (compiled)
		nm_debug__read(reader, &p->file->l.nm, blob, &e->dbg);
	symbol_cache__budget_end(&p->base, start);
	e->bytes = e->dbg.pcs_cnt * p->file->l.nm.pcdesc_size + e->dbg.scopes_len +
		   e->dbg.metadata_cnt * sizeof(uint64_t) + (e->name ? strlen(e->name) + 1 : 0);
	hs->blob_bytes += e->bytes;
	blob_make_room(hs, e);
	return e;
}

/* The line of bytecode index bci in method m; 0 when unknown. */
static int method_line(const struct hs_proc *p, const struct method_entry *m, uint32_t bci)
{
	(void)p;
	if (bci == HS_BCI_NONE || bci == UINT32_MAX || !m->lines)
		return 0;
	return hotspot_lines__index_line(m->lines, m->line_cnt, bci);
}

/* s copied into hs->inlined_text at *used; NULL when s is NULL or the space is spent. */
static const char *inlined_copy(struct hotspot *hs, size_t *used, const char *s)
{
	size_t n = s ? strlen(s) + 1 : 0;
	char *at = hs->inlined_text + *used;

	if (!n || n > sizeof(hs->inlined_text) - *used)
		return NULL;
	memcpy(at, s, n);
	*used += n;
	return at;
}

/* The methods compiled code inlined at the pc: scopes sc[0..n-2] (innermost first) into
 * out->inlined. Read from the outermost inward; the first one unreadable drops it and every
 * scope inside it (counted), so the frames shown always call each other.
 */
static void inlined_frames(struct hotspot *hs, struct hs_proc *p, pid_t reader,
			   const struct nm_scope *sc, int n, struct interp_symbol *out)
{
	struct interp_symbol unused;
	struct method_entry *m;
	size_t used = 0;
	int i, first = n - 1;

	for (i = n - 2; i >= 0; i--) {
		struct interp_inlined *in = &hs->inlined[i];

		m = method_get(hs, p, reader, sc[i].method, 0, &unused);
		if (!m || !(in->function = inlined_copy(hs, &used, m->name)))
			break;
		in->file = inlined_copy(hs, &used, m->file);
		in->line = method_line(p, m, sc[i].bci);
		first = i;
	}
	hs->stats[HS_STAT_INLINED_DROPPED] += (uint64_t)first;
	hs->stats[HS_STAT_INLINED] += (uint64_t)(n - 1 - first);
	if (first < n - 1) {
		out->inlined = &hs->inlined[first];
		out->inlined_cnt = (uint32_t)(n - 1 - first);
	}
}

/* A compiled frame: the nmethod's method at the outermost scope of its pc, and the methods
 * inlined there.
 */
static void compiled_frame(struct hotspot *hs, struct hs_proc *p, pid_t reader,
			   const struct blob_entry *be, uint32_t pos, bool exact,
			   struct interp_symbol *out)
{
	struct nm_scope sc[INTERP_INLINED_MAX + 1];
	struct method_entry *m;
	int n, dropped;

	n = nm_debug__scopes(&p->file->l.nm, &be->dbg, be->method, pos, exact, sc,
			     INTERP_INLINED_MAX + 1, &dropped);
	hs->stats[HS_STAT_INLINED_DROPPED] += (uint64_t)dropped;
	if (n > 1)
		inlined_frames(hs, p, reader, sc, n, out);
	/* Last: the entries of the inlined methods may have evicted it from the cache. */
	m = method_get(hs, p, reader, be->method, 0, out);
	if (!m) {
		out->inlined = NULL;
		out->inlined_cnt = 0;
		return;
	}
	out->function = m->name;
	out->file = m->file;
	out->line = n > 0 ? method_line(p, m, sc[n - 1].bci) : 0;
	out->marker = false;
}

static void hs_symbolize(void *rt, void *proc_state, pid_t reader, const struct user_frame *uf,
			 struct interp_symbol *out)
{
	struct hotspot *hs = rt;
	struct hs_proc *p = proc_state;
	uint32_t sub = (uint32_t)(uf->file_id >> 60), cookie = (uint32_t)uf->file_id;
	uint32_t pos = (uint32_t)(uf->file_id >> 32) & HS_BCI_NONE;
	struct method_entry *m;
	struct blob_entry *be;

	if (!uf->addr)
		return interp__code_marker(out, INTERP_MARKERS(marker_texts), uf->file_id);
	if (!p || !p->file->loaded)
		return interp__marker(out, "unknown process");
	switch (sub) {
	case HS_SUB_INTERPRETED:
		m = method_get(hs, p, reader, uf->addr, cookie, out);
		if (!m)
			return;
		out->function = m->name;
		out->file = m->file;
		out->line = method_line(p, m, pos);
		out->marker = false;
		return;
	case HS_SUB_COMPILED:
		be = blob_get(hs, p, reader, uf->addr, true, (int32_t)cookie, out);
		if (be)
			compiled_frame(hs, p, reader, be, pos, uf->flags & USER_FRAME_RETURN, out);
		return;
	case HS_SUB_STUB:
		be = blob_get(hs, p, reader, uf->addr, false, 0, out);
		if (!be)
			return;
		snprintf(hs->text, sizeof(hs->text), "[jvm stub] %s", be->name ? be->name : "?");
		*out = (struct interp_symbol){ .function = hs->text };
		return;
	default:
		return interp__marker(out, "?");
	}
}

const struct interp_runtime hotspot_runtime = {
	.name = "jvm",
	.frame_type = "jvm",
	.frame_kind = FRAME_KIND_HOTSPOT,
	INTERP_RUNTIME_COUNTERS(HS_COUNTERS, HS_COUNTER_CNT, HS_STATS, struct hotspot),
	.init = hs_init,
	.fini = hs_fini,
	.file_state_sz = sizeof(struct hs_file),
	.file_detect = hs_file_detect,
	.proc_state_sz = sizeof(struct hs_proc),
	.proc_attach = hs_proc_attach,
	.proc_refresh = hs_proc_refresh,
	.symbolize = hs_symbolize,
};
