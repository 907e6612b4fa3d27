/* CRuby, as a runtime of src/interp/interp.h: finds libruby among the mapped files, tells the
 * eBPF walk (bpf/interp/ruby/walk.h) where its vm_exec_core is, how its structures are laid
 * out and where each process's thread-local execution context lives, and turns the frames it
 * emits (instruction sequence + pc index + method entry, or a C function's method entry) into
 * `Class#method`, `block in Class#method`, `Class.singleton`, file and line by reading the
 * process's memory.
 *
 * Versions: CRuby 3.1 on x86-64 (glibc), Debian's libruby-3.1.so (stripped to .dynsym) and
 * any other build of the same version. What the file itself gives:
 *  - the version: the exported string `ruby_version` ("3.1.2");
 *  - vm_exec_core, the direct-threaded interpreter loop (a static function, not exported):
 *    of the functions the exported rb_vm_exec calls (their extent from .eh_frame), the one
 *    with the most indirect jumps (one per instruction handler: 124 in Debian's 3.1.2);
 *  - the execution context: the general-dynamic TLS variable `ruby_current_ec` (its st_value
 *    is its offset in libruby's TLS block); the module id is what ld.so writes into the GOT
 *    slot of its R_X86_64_DTPMOD64 relocation, read by eBPF every sample (so a process
 *    attached before ld.so relocated it works as soon as it has);
 *  - the symbol table (cfunc names): `ruby_global_symbols` is not exported; the exported
 *    rb_id2str jumps to the lookup, whose first `cmp reg, disp32(%rip)` compares with its
 *    last_id: the table's address.
 * The structure offsets are a table per version (below), taken from Ruby 3.1.2's own headers
 * as bindgen laid them out (rbspy's ruby-structs/src/ruby_3_1_2.rs: vm_core.h, iseq.h,
 * method.h, ractor_core.h, include/ruby/internal/core/r{string,array}.h) and from iseq.c,
 * internal/class.h, st.h and symbol.c of the 3.1 sources; each process is checked against
 * them once it is initialised (its main thread's context reached both through the main ractor
 * and through the TLS path, its control frames inside its VM stack, every frame's iseq an
 * instruction sequence object); a process that fails gets native frames only, counted and
 * warned once. Other versions get a `[ruby: unsupported version]` marker.
 *
 * Invariants: the iseq cache (../common/symbol_cache.h) and the method-entry cache (a
 * set-associative table, base/lru_sets.h) have fixed sizes, keyed by (pid, attach generation,
 * address); an iseq entry is re-read when the eBPF cookie disagrees (freed and reused), a method
 * entry when its called_id does.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/lru_sets.h"
#include "base/u64_map.h"
#include "formats/elf_file.h"
#include "interp/common/runtime_counters.h"
#include "interp/common/proc_memory.h"
#include "interp/interp.h"
#include "interp/common/interp_elf.h"
#include "interp/common/symbol_cache.h"
#include "interp/ruby/ruby_lines.h"
#include "interp/ruby/ruby_objects.h"
#include "proc/executable.h"

#define RUBY_ISEQ_CACHE_CAP 4096
#define RUBY_ME_CACHE_CAP 1024
#define NAME_MAX_LEN 256
#define PATH_MAX_LEN 512
#define INSNS_INFO_MAX (1u << 16)        /* line entries read per iseq */
#define SUCC_BYTES_MAX (1u << 17)        /* succinct table bytes read per iseq */
#define RUBY_TABLE_BYTES_MAX (32u << 20) /* line tables the iseq cache keeps, in all */
#define VERIFY_INTERVAL_NS (100 * 1000 * 1000ULL)
#define VERIFY_TRIES 100 /* 10 s for an interpreter to finish initialising */
#define FRAMES_CHECKED 256
#define CORE_MIN_JUMPS 32 /* indirect jumps that make a function a threaded interpreter */
#define CALLS_MAX 256
#define CLASSPATH_TRIES 64 /* lookups of __classpath__'s id before giving up */

/* Everything known about one version's layout (x86-64). */
struct rb_layout {
	uint8_t major, minor;
	struct rb_offsets bpf;
	struct ruby_obj_layout obj;
	uint16_t body_type;        /* rb_iseq_constant_body.type (enum iseq_type) */
	uint16_t body_path;        /* .location.pathobj: String, or [path, realpath] */
	uint16_t body_base_label;  /* .location.base_label */
	uint16_t body_label;       /* .location.label */
	uint16_t body_insns_body;  /* .insns_info.body: iseq_insn_info_entry[] */
	uint16_t body_insns_pos;   /* .insns_info.positions (NULL once encoded) */
	uint16_t body_insns_size;  /* .insns_info.size (unsigned int) */
	uint16_t body_insns_succ;  /* .insns_info.succ_index_table */
	uint16_t body_local_iseq;  /* .local_iseq: the method's iseq of a block */
	uint16_t body_sz;          /* bytes read: past the last of these */
	uint16_t insn_info_sz;     /* sizeof(struct iseq_insn_info_entry); line_no first */
	uint16_t me_def, me_owner; /* rb_callable_method_entry_t */
	uint16_t def_iseqptr;      /* rb_method_definition_t.body.iseq.iseqptr */
	uint16_t ractor_main;      /* rb_ractor_t.threads.main */
	uint16_t th_ractor, th_ec; /* rb_thread_t */
	uint16_t th_thread_id;     /* rb_thread_t.thread_id: pthread_t, the TCB on glibc x86-64 */
	uint16_t ec_thread;        /* rb_execution_context_t.thread_ptr */
	uint16_t vm_main_ractor;   /* rb_vm_t.ractor.main_ractor */
};

/* clang-format off */
static const struct rb_layout layouts[] = {
	/* 3.1 (3.1.2 headers through rbspy's bindgen output; checked live on Debian's 3.1.2):
	 * ec { vm_stack 0, vm_stack_size 8, cfp 16, ..., thread_ptr 48 };
	 * control frame { pc 0, sp 8, iseq 16, self 24, ep 32, block_code 40, __bp__ 48,
	 *                 jit_return 56 } = 64;
	 * iseq { flags 0, wrapper 8, body 16 }; body { type 0, iseq_size 4, iseq_encoded 8,
	 *   param 16-64, location { pathobj 64, base_label 72, label 80, first_lineno 88 },
	 *   insns_info { body 120, positions 128, size 136, succ_index_table 144 },
	 *   local_table 152, catch_table 160, parent_iseq 168, local_iseq 176 };
	 * callable method entry { flags 0, defined_class 8, def 16, called_id 24, owner 32 };
	 * method definition { type:4 bits at 0, body.iseq.iseqptr 8, original_id 32 };
	 * ractor.threads.main 528 (0x210); thread { ractor 24, ec 40, thread_id 80 };
	 * vm { self 0, ractor { set 8, cnt 24, blocking_cnt 28, main_ractor 32, main_thread 40,
	 *   sync 48-216 }, ..., trap_list 456-976, ..., defined_module_hash 1096, objspace 1104 };
	 * objspace (gc.c) { malloc_params { limit 0, increase 8 }, flags 16: mode:2,
	 *   immediate_sweep:1, dont_gc:1, dont_incremental:1, during_gc:1 (bit 5), ... };
	 * RString { flags, klass, as.heap { len 16, ptr 24 } | as.embed.ary 16 }, NOEMBED =
	 *   FL_USER1, embedded length in FL_USER2..6 (bits 14-18);
	 * RArray { as.heap { len 16, aux 24, ptr 32 } | as.ary 16 }, EMBED = FL_USER1, embedded
	 *   length in FL_USER3..4 (bits 15-16; 3 VALUEs inline);
	 * RClass { RBasic, super 16, ptr 24 } (3.1 builds without RVARGC); rb_classext_t
	 *   { iv_index_tbl 0, iv_tbl 8 }; st_table { entries_start 32, entries_bound 40,
	 *   entries 48 }; rb_symbols_t { last_id 0, str_sym 8, ids 16 }.
	 */
	{ 3, 1,
	  { .ec_vm_stack = 0, .ec_vm_stack_size = 8, .ec_cfp = 16, .cfp_size = 64, .cfp_pc = 0,
	    .cfp_iseq = 16, .cfp_ep = 32, .cfp_read_sz = 40, .iseq_body = 16,
	    .body_iseq_size = 4, .body_encoded = 8, .body_first_line = 88, .body_read_sz = 96,
	    .me_called_id = 24, .vm_objspace = 1104, .objspace_flags = 16,
	    .gc_running = 1u << 5 },
	  { .str_noembed_flag = 1ULL << 13, .str_embed_shift = 14, .str_embed_mask = 0x1f,
	    .str_embed = 16, .str_heap_len = 16, .str_heap_ptr = 24,
	    .ary_embed_flag = 1ULL << 13, .ary_embed_shift = 15, .ary_embed_mask = 0x3,
	    .ary_embed = 16, .ary_heap_len = 16, .ary_heap_ptr = 32,
	    .class_ext = 24, .ext_iv_tbl = 8,
	    .st_entries_start = 32, .st_entries_bound = 40, .st_entries = 48,
	    .sym_last_id = 0, .sym_ids = 16 },
	  .body_type = 0, .body_path = 64, .body_base_label = 72, .body_label = 80,
	  .body_insns_body = 120, .body_insns_pos = 128, .body_insns_size = 136,
	  .body_insns_succ = 144, .body_local_iseq = 176, .body_sz = 184, .insn_info_sz = 12,
	  .me_def = 16, .me_owner = 32, .def_iseqptr = 8,
	  .ractor_main = 0x210, .th_ractor = 24, .th_ec = 40, .th_thread_id = 80,
	  .ec_thread = 48, .vm_main_ractor = 32 },
};
/* clang-format on */

/* enum rb_iseq_type and rb_method_type_t values used here (vm_core.h, method.h). */
#define ISEQ_TYPE_METHOD 1
#define ISEQ_TYPE_BLOCK 2
#define METHOD_TYPE_ISEQ 0
#define METHOD_TYPE_BMETHOD 4
#define IMEMO_TYPE(flags) (((flags) >> 12) & 0xf)

struct rb_file {
	struct interp_file_base base;
	struct interp_file bpf; /* what detect() found: range, version, offsets */
	struct rb_layout layout;
	uint64_t main_ractor_vaddr; /* ruby_single_main_ractor (a pointer variable) */
	uint64_t vm_ptr_vaddr;      /* ruby_current_vm_ptr (a pointer variable) */
	uint64_t object_vaddr;      /* rb_cObject (a VALUE variable) */
	uint64_t symbols_vaddr;     /* ruby_global_symbols, 0 when not found */
	uint64_t modid_got_vaddr;   /* the GOT slot of ruby_current_ec's DTPMOD64 */
};

enum rb_proc_state {
	RB_PROC_PENDING = 0, /* attached, VM not initialised yet: checked again later */
	RB_PROC_VERIFIED,
	RB_PROC_REJECTED, /* layout check failed */
};

struct rb_proc {
	struct interp_proc_base base;
	struct rb_file *file;
	uint64_t bias;
	uint64_t classpath_id; /* the ID of `__classpath__`, 0 until found */
	unsigned int classpath_tries;
	enum rb_proc_state state;
	unsigned int tries;
	uint64_t next_check_ns;
};

/* Where an iseq's line table lives in the process. */
struct line_src {
	uint64_t entries, positions, succ; /* insns_info.body, .positions, .succ_index_table */
	uint32_t cnt;                      /* insns_info.size */
	uint32_t iseq_size;
};

/* A line table read out of the process (NULL parts: absent). */
struct line_tab {
	int32_t *lines;
	size_t line_cnt;
	uint8_t *succ;
	size_t succ_sz;
	uint32_t *positions;
	size_t bytes; /* what it holds */
};

struct iseq_entry {
	struct symbol_cache_key key; /* addr: the iseq */
	uint32_t type;
	int first_lineno;
	uint64_t local_iseq;
	char *label, *base_label, *path;
	struct line_src src; /* where its line table is (re-read when not kept) */
	struct line_tab tab; /* kept while the caches' table budget allows */
};

struct me_entry {
	pid_t pid; /* 0: empty slot */
	uint32_t gen;
	uint64_t me;
	uint32_t cookie; /* low 32 bits of called_id */
	uint32_t def_type;
	uint64_t iseqptr;        /* the method's iseq (iseq methods) */
	char qual[NAME_MAX_LEN]; /* "Worker#", "Worker.", "" when unknown */
	char name[NAME_MAX_LEN]; /* called name; "" when unknown */
};

/* Our own counters (ruby_runtime.stat_names). */
#define RB_STATS(X)                                                 \
	/* layouts checked against the live VM */                   \
	X(RB_STAT_VERIFIED, "layouts verified")                     \
	/* instruction sequences read from process memory */        \
	X(RB_STAT_ISEQ_READS, "iseqs read")                         \
	/* frames whose iseq or method entry could not be read */   \
	X(RB_STAT_UNREADABLE, "frames unreadable")                  \
	/* cookie mismatch: freed and reused */                     \
	X(RB_STAT_STALE, "iseqs stale")                             \
	/* method entries read */                                   \
	X(RB_STAT_ME_READS, "method entries read")                  \
	/* frames shown without their class (anonymous, unknown) */ \
	X(RB_STAT_NO_CLASS, "frames without class")

enum rb_stat { RB_STATS(INTERP_LIST_ENUM) RB_STAT_CNT };

struct ruby {
	struct symbol_cache iseqs;
	struct me_entry *mes;
	struct lru_sets me_slots; /* which entry of mes holds an address */
	uint64_t stats[RB_STAT_CNT];
	size_t table_bytes; /* line tables kept by the iseq cache (<= RUBY_TABLE_BYTES_MAX) */
	char text[3 * NAME_MAX_LEN];
};

static void line_tab__clear(struct line_tab *t)
{
	free(t->lines);
	free(t->succ);
	free(t->positions);
	memset(t, 0, sizeof(*t));
}

/* Free what an iseq entry holds (symbol_cache zeroes it), giving its table's bytes back to
 * the budget.
 */
static void iseq_entry__clear(void *ctx, void *entry)
{
	struct ruby *rb = ctx;
	struct iseq_entry *e = entry;

	rb->table_bytes -= e->tab.bytes;
	free(e->label);
	free(e->base_label);
	free(e->path);
	line_tab__clear(&e->tab);
}

/* What the cache counts (stats[]) and the markers it gives. */
static const struct symbol_cache_report cache_report = { RB_STAT_ISEQ_READS, RB_STAT_UNREADABLE,
							 RB_STAT_STALE, "iseq unreadable",
							 "iseq reused" };

static int rb_init(void *rt)
{
	struct ruby *rb = rt;

	rb->mes = calloc(RUBY_ME_CACHE_CAP, sizeof(*rb->mes));
	if (!rb->mes || lru_sets__init(&rb->me_slots, RUBY_ME_CACHE_CAP))
		return -ENOMEM;
	return symbol_cache__init(&rb->iseqs, RUBY_ISEQ_CACHE_CAP, sizeof(struct iseq_entry), false,
				  iseq_entry__clear, rb, &cache_report, rb->stats);
}

static void rb_fini(void *rt)
{
	struct ruby *rb = rt;

	symbol_cache__free(&rb->iseqs);
	free(rb->mes);
	lru_sets__free(&rb->me_slots);
}

/* ---- ELF: symbols, relocations, code ---- */

/* The symbols detection looks up (interp_elf__symbols): X(ID, "name") entries that make the
 * enum and sym_names (INTERP_LIST_ENUM / INTERP_LIST_TEXT).
 */
#define RB_SYMS(X)                                    \
	X(SYM_VM_EXEC, "rb_vm_exec")                  \
	X(SYM_VERSION, "ruby_version")                \
	X(SYM_CURRENT_EC, "ruby_current_ec")          \
	X(SYM_MAIN_RACTOR, "ruby_single_main_ractor") \
	X(SYM_VM_PTR, "ruby_current_vm_ptr")          \
	X(SYM_OBJECT, "rb_cObject")                   \
	X(SYM_ID2STR, "rb_id2str")

enum rb_sym { RB_SYMS(INTERP_LIST_ENUM) SYM_CNT };

static const char *const sym_names[SYM_CNT] = { RB_SYMS(INTERP_LIST_TEXT) };

/* The GOT slot ld.so fills with the TLS module id of dynsym symbol `index`: the r_offset of its
 * R_X86_64_DTPMOD64 relocation in .rela.dyn; 0 when none.
 */
static uint64_t dtpmod_slot(struct elf_file *ef, size_t index)
{
	struct elf_section rela;
	size_t i, n;

	if (elf_file__section(ef, ".rela.dyn", &rela) || !rela.data)
		return 0;
	n = rela.size / sizeof(Elf64_Rela);
	for (i = 0; i < n; i++) {
		Elf64_Rela r;

		memcpy(&r, (const uint8_t *)rela.data + i * sizeof(r), sizeof(r));
		if (ELF64_R_TYPE(r.r_info) == R_X86_64_DTPMOD64 && ELF64_R_SYM(r.r_info) == index)
			return r.r_offset;
	}
	return 0;
}

struct fde_search {
	uint64_t targets[CALLS_MAX];
	size_t cnt;
	uint64_t start[CALLS_MAX], end[CALLS_MAX]; /* the FDE holding each target */
};

static int fde_of_targets(void *ctx, const struct cfi_fde *fde)
{
	struct fde_search *fs = ctx;
	size_t i;

	for (i = 0; i < fs->cnt; i++)
		if (fs->targets[i] >= fde->pc_begin && fs->targets[i] < fde->pc_end) {
			fs->start[i] = fde->pc_begin;
			fs->end[i] = fde->pc_end;
		}
	return 0;
}

/* Indirect jumps (ff /4) in [start, end): counted by their bytes, without decoding; a threaded
 * interpreter has one per instruction handler, other functions a few at most.
 */
static size_t indirect_jumps(const uint8_t *code, size_t size)
{
	size_t i, n = 0;

	for (i = 0; i + 1 < size; i++)
		n += code[i] == 0xff && ((code[i + 1] >> 3) & 7) == 4;
	return n;
}

/* vm_exec_core: of the functions rb_vm_exec calls directly (e8 rel32), the one with the most
 * indirect jumps, at least CORE_MIN_JUMPS. 0 with its extent, or -ENOENT.
 */
static int find_exec_core(struct elf_file *ef, const struct interp_sym *vm_exec, uint64_t *start,
			  uint64_t *end)
{
	const uint8_t *code = interp_elf__bytes(ef, vm_exec->addr, vm_exec->size);
	struct fde_search *fs = calloc(1, sizeof(*fs));
	size_t i, best_jumps = 0;
	int err = -ENOENT;

	if (!code || !fs)
		goto cleanup;
	for (i = 0; i + 5 <= vm_exec->size && fs->cnt < CALLS_MAX; i++) {
		int32_t rel;
		uint64_t target;

		if (code[i] != 0xe8)
			continue;
		memcpy(&rel, code + i + 1, 4);
		target = vm_exec->addr + i + 5 + (int64_t)rel;
		if (target < vm_exec->addr || target >= vm_exec->addr + vm_exec->size)
			fs->targets[fs->cnt++] = target;
	}
	if (!fs->cnt || interp_elf__walk_fdes(ef, fde_of_targets, fs))
		goto cleanup;
	for (i = 0; i < fs->cnt; i++) {
		const uint8_t *body;
		size_t jumps;

		/* a call into the middle of a function is not a call of it */
		if (fs->start[i] != fs->targets[i] || fs->end[i] <= fs->start[i] ||
		    fs->end[i] - fs->start[i] > (1u << 24))
			continue;
		body = interp_elf__bytes(ef, fs->start[i], fs->end[i] - fs->start[i]);
		if (!body)
			continue;
		jumps = indirect_jumps(body, fs->end[i] - fs->start[i]);
		if (jumps > best_jumps) {
			best_jumps = jumps;
			*start = fs->start[i];
			*end = fs->end[i];
		}
	}
	if (best_jumps >= CORE_MIN_JUMPS)
		err = 0;
cleanup:
	free(fs);
	return err;
}

/* ruby_global_symbols through rb_id2str: it jumps (or calls) to the id lookup, which first
 * compares the serial with the table's last_id: `cmp r32, disp32(%rip)` (39 or 3b /r, modrm
 * mod 00 rm 101, optional REX). The table address, or 0.
 */
static uint64_t find_global_symbols(struct elf_file *ef, const struct interp_sym *id2str)
{
	const uint8_t *code = interp_elf__bytes(ef, id2str->addr, 32), *fn;
	size_t i, j;

	if (!code)
		return 0;
	/* e8/e9 bytes inside other instructions (shr $4 is 48 c1 e8 04) are tried too: only a
	 * target holding the comparison is taken
	 */
	for (i = 0; i + 5 <= 32; i++) {
		uint64_t target;
		int32_t rel;

		if (code[i] != 0xe9 && code[i] != 0xe8)
			continue;
		memcpy(&rel, code + i + 1, 4);
		target = id2str->addr + i + 5 + (int64_t)rel;
		if (!(fn = interp_elf__bytes(ef, target, 128)))
			continue;
		for (j = 0; j + 7 <= 128; j++) {
			size_t op = j + ((fn[j] & 0xf0) == 0x40 ? 1 : 0);
			int32_t disp;

			if ((fn[op] != 0x39 && fn[op] != 0x3b) || (fn[op + 1] & 0xc7) != 0x05)
				continue;
			memcpy(&disp, fn + op + 2, 4);
			return target + op + 6 + (int64_t)disp;
		}
	}
	return 0;
}

/* ---- detection ---- */

static bool name_is_ruby(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libruby", 7) || !strncmp(base, "ruby", 4);
}

static const struct rb_layout *layout_for(int major, int minor)
{
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

static int detect(const struct executable *exe, struct rb_file *f)
{
	struct interp_sym syms[SYM_CNT];
	const struct rb_layout *known;
	const uint8_t *v;
	int major = 0, minor = 0;
	uint64_t start, end;

	if (!exe->elf || !name_is_ruby(exe->path))
		return -ENOENT;
	interp_elf__symbols(exe->elf, sym_names, SYM_CNT, syms);
	/* a ruby binary linked against libruby imports these: the library is the one */
	if (!syms[SYM_VM_EXEC].found || !syms[SYM_VM_EXEC].size || !syms[SYM_VERSION].found)
		return -ENOENT;
	v = interp_elf__bytes(exe->elf, syms[SYM_VERSION].addr, 4);
	if (v && v[0] >= '1' && v[0] <= '9' && v[1] == '.' && v[2] >= '0' && v[2] <= '9') {
		major = v[0] - '0';
		minor = v[2] - '0';
	}
	f->bpf.major = (uint8_t)major;
	f->bpf.minor = (uint8_t)minor;
	f->bpf.supported = 0;
	known = layout_for(major, minor);
	if (find_exec_core(exe->elf, &syms[SYM_VM_EXEC], &start, &end)) {
		pr_debug("ruby: %s: no vm_exec_core found: native frames only\n", exe->path);
		return 0;
	}
	f->bpf.range_start[0] = start;
	f->bpf.range_end[0] = end;
	if (!known || !syms[SYM_CURRENT_EC].found || syms[SYM_CURRENT_EC].type != STT_TLS ||
	    !syms[SYM_CURRENT_EC].in_dynsym || !syms[SYM_MAIN_RACTOR].found ||
	    !syms[SYM_VM_PTR].found)
		return 0;
	f->modid_got_vaddr = dtpmod_slot(exe->elf, syms[SYM_CURRENT_EC].index);
	if (!f->modid_got_vaddr)
		return 0;
	f->layout = *known;
	f->main_ractor_vaddr = syms[SYM_MAIN_RACTOR].addr;
	f->vm_ptr_vaddr = syms[SYM_VM_PTR].addr;
	f->object_vaddr = syms[SYM_OBJECT].found ? syms[SYM_OBJECT].addr : 0;
	f->symbols_vaddr = syms[SYM_ID2STR].found ? find_global_symbols(exe->elf, &syms[SYM_ID2STR])
						  : 0;
	f->bpf.rb.off = known->bpf;
	f->bpf.rb.tls_off = syms[SYM_CURRENT_EC].addr;
	f->bpf.supported = 1;
	return 0;
}

static int rb_file_detect(void *rt, const struct executable *exe, void *file_state,
			  struct interp_file *bpf)
{
	struct rb_file *f = file_state;

	(void)rt;
	if (detect(exe, f))
		return -ENOENT;
	if (f->bpf.supported)
		pr_debug("ruby: %s: CRuby %u.%u, vm_exec_core %#llx-%#llx, symbols %#llx\n",
			 f->base.path, f->bpf.major, f->bpf.minor,
			 (unsigned long long)f->bpf.range_start[0],
			 (unsigned long long)f->bpf.range_end[0],
			 (unsigned long long)f->symbols_vaddr);
	*bpf = f->bpf;
	return 0;
}

/* ---- per-process attach and layout check ---- */

struct ivar_match {
	const struct ruby_reader *r;
	const char *want;    /* a String value equal to this */
	uint64_t want_klass; /* or a class/module whose klass is this (a singleton's owner) */
	uint64_t id, value;
};

static int ivar_match(void *ctx, uint64_t id, uint64_t value)
{
	struct ivar_match *m = ctx;
	char buf[64];
	uint64_t flags, klass;

	if (m->want && !ruby_obj__string(m->r, value, buf, sizeof(buf)) && !strcmp(buf, m->want)) {
		m->id = id;
		m->value = value;
		return 1;
	}
	if (m->want_klass && !ruby_obj__flags(m->r, value, &flags) &&
	    ((flags & 0x1f) == RUBY_T_CLASS || (flags & 0x1f) == RUBY_T_MODULE) &&
	    !interp__read_u64(m->r->pid, value + 8, &klass) && klass == m->want_klass) {
		m->id = id;
		m->value = value;
		return 1;
	}
	return 0;
}

/* The ID of `__classpath__`: the instance variable of Object whose value is "Object". */
static void find_classpath_id(struct rb_proc *rp)
{
	struct ruby_reader r = { .pid = rp->base.pid, .l = &rp->file->layout.obj };
	struct ivar_match m = { .r = &r, .want = "Object" };
	uint64_t object;

	if (!rp->file->object_vaddr ||
	    interp__read_u64(rp->base.pid, rp->bias + rp->file->object_vaddr, &object))
		return;
	if (ruby_obj__class_ivars(&r, object, ivar_match, &m) == 1)
		rp->classpath_id = m.id;
}

/* Check the layout against the live VM: the main thread's execution context is the same
 * through the main ractor and through the TLS path eBPF uses, its newest control frame lies in
 * its VM stack, and every frame with an iseq holds an instruction sequence object. 1 verified,
 * 0 not initialised yet, < 0 wrong layout.
 */
static int proc_check(struct rb_proc *rp)
{
	const struct rb_layout *l = &rp->file->layout;
	uint64_t ractor, th, v, ec, tcb, modid, dtv, block, stack, size, cfp, end, vm, objspace;
	uint32_t gc_flags;
	int frames = 0, iseqs = 0;
	pid_t pid = rp->base.pid;

	if (interp__read_u64(pid, rp->bias + rp->file->main_ractor_vaddr, &ractor) ||
	    interp__read_u64(pid, rp->bias + rp->file->modid_got_vaddr, &modid))
		return -EFAULT;
	if (!ractor || !modid)
		return 0;
	if (interp__read_u64(pid, ractor + l->ractor_main, &th))
		return -EFAULT;
	if (!th)
		return 0;
	if (interp__read_u64(pid, th + l->th_ractor, &v) || v != ractor ||
	    interp__read_u64(pid, th + l->th_ec, &ec) || !ec ||
	    interp__read_u64(pid, ec + l->ec_thread, &v) || v != th)
		return -EINVAL;
	if (modid > 0xffff || interp__read_u64(pid, th + l->th_thread_id, &tcb) ||
	    interp__read_u64(pid, tcb + RB_TCB_DTV, &dtv) ||
	    interp__read_u64(pid, dtv + 16 * modid, &block) ||
	    interp__read_u64(pid, block + rp->file->bpf.rb.tls_off, &v) || v != ec)
		return -EINVAL;
	/* the VM names the same main ractor; its objspace's malloc limit is a real one (16 MiB
	 * at start, grown by GC) and its GC mode one of none/marking/sweeping
	 */
	if (interp__read_u64(pid, rp->bias + rp->file->vm_ptr_vaddr, &vm) || !vm ||
	    interp__read_u64(pid, vm + l->vm_main_ractor, &v) || v != ractor ||
	    interp__read_u64(pid, vm + l->bpf.vm_objspace, &objspace) || !objspace ||
	    interp__read_u64(pid, objspace, &v) || v < (1u << 20) || v > (1ULL << 40) ||
	    interp__read_mem(pid, objspace + l->bpf.objspace_flags, &gc_flags, 4) ||
	    (gc_flags & 3) == 3)
		return -EINVAL;
	if (interp__read_u64(pid, ec + l->bpf.ec_vm_stack, &stack) ||
	    interp__read_u64(pid, ec + l->bpf.ec_vm_stack_size, &size) ||
	    interp__read_u64(pid, ec + l->bpf.ec_cfp, &cfp))
		return -EFAULT;
	end = stack + size * 8;
	if (!stack || size >= (1ULL << 28) || cfp < stack || cfp >= end ||
	    (end - cfp) % l->bpf.cfp_size)
		return -EINVAL;
	for (; cfp < end && frames < FRAMES_CHECKED; cfp += l->bpf.cfp_size, frames++) {
		uint64_t iseq, ep, flags, head;

		if (interp__read_u64(pid, cfp + l->bpf.cfp_iseq, &iseq) ||
		    interp__read_u64(pid, cfp + l->bpf.cfp_ep, &ep) ||
		    interp__read_u64(pid, ep, &flags))
			return -EFAULT;
		if ((flags & RB_FRAME_MAGIC_MASK) == RB_FRAME_MAGIC_CFUNC ||
		    (flags & RB_FRAME_MAGIC_MASK) == RB_FRAME_MAGIC_IFUNC || !iseq)
			continue;
		if (interp__read_u64(pid, iseq, &head) || (head & RB_T_MASK) != RB_T_IMEMO ||
		    IMEMO_TYPE(head) != RB_IMEMO_ISEQ)
			return -EINVAL;
		iseqs++;
	}
	return iseqs ? 1 : 0;
}

/* 0: keep (verified, or not initialised yet and checked again later), < 0: reject. */
static int proc_verify(struct ruby *rb, struct rb_proc *rp, uint64_t now_ns)
{
	int r = proc_check(rp);

	if (r > 0) {
		rp->state = RB_PROC_VERIFIED;
		rb->stats[RB_STAT_VERIFIED]++;
		find_classpath_id(rp);
		pr_debug("ruby: pid %d: layout verified, __classpath__ id %#llx\n",
			 (int)rp->base.pid, (unsigned long long)rp->classpath_id);
		return 0;
	}
	if (r == 0 && ++rp->tries < VERIFY_TRIES) {
		rp->next_check_ns = now_ns + VERIFY_INTERVAL_NS;
		return 0;
	}
	if (r == -EFAULT || r == -ESRCH) {
		rp->next_check_ns = now_ns + VERIFY_INTERVAL_NS;
		return 0; /* gone, or memory unreadable right now: eBPF checks every sample anyway */
	}
	rp->state = RB_PROC_REJECTED;
	pr_warn("ruby: pid %d (%s): VM layout check failed (%s): native frames only\n",
		(int)rp->base.pid, rp->file->base.path, r ? strerror(-r) : "never initialised");
	return -EINVAL;
}

static int rb_proc_attach(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			  void *proc_state, struct interp_proc *bpf)
{
	struct rb_file *f = file_state;
	struct rb_proc *rp = proc_state;

	(void)rt;
	rp->file = f;
	rp->bias = bias;
	rp->state = RB_PROC_PENDING;
	rp->next_check_ns = now_ns;
	bpf->rb.modid_got = bias + f->modid_got_vaddr;
	bpf->rb.vm_ptr = bias + f->vm_ptr_vaddr;
	pr_debug("ruby: pid %d: %s at %#llx\n", (int)rp->base.pid, f->base.path,
		 (unsigned long long)bias);
	return 0;
}

static int rb_proc_tick(void *rt, void *proc_state, uint64_t now_ns)
{
	struct rb_proc *rp = proc_state;

	if (rp->state == RB_PROC_REJECTED)
		return -EINVAL;
	if (rp->state == RB_PROC_PENDING && rp->next_check_ns <= now_ns)
		return proc_verify(rt, rp, now_ns);
	return 0;
}

/* ---- symbolization ---- */

static char *read_string(const struct ruby_reader *r, uint64_t str, size_t cap)
{
	char *buf = malloc(cap);

	if (buf && ruby_obj__string(r, str, buf, cap)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Read the line table src describes into t (absent parts stay NULL). */
static void read_lines(pid_t pid, const struct rb_layout *l, const struct line_src *src,
		       struct line_tab *t)
{
	uint8_t *raw = NULL;
	uint32_t i;

	memset(t, 0, sizeof(*t));
	if (!src->entries || !src->cnt || src->cnt > INSNS_INFO_MAX)
		return;
	raw = malloc((size_t)src->cnt * l->insn_info_sz);
	t->lines = malloc((size_t)src->cnt * sizeof(*t->lines));
	if (!raw || !t->lines ||
	    interp__read_mem(pid, src->entries, raw, (size_t)src->cnt * l->insn_info_sz)) {
		line_tab__clear(t);
		goto cleanup;
	}
	for (i = 0; i < src->cnt; i++)
		memcpy(&t->lines[i], raw + (size_t)i * l->insn_info_sz, 4);
	t->line_cnt = src->cnt;
	t->bytes = (size_t)src->cnt * sizeof(*t->lines);
	if (src->succ) {
		size_t sz = ruby_lines__succ_bytes(src->iseq_size);

		if (sz && sz <= SUCC_BYTES_MAX && (t->succ = malloc(sz)) &&
		    !interp__read_mem(pid, src->succ, t->succ, sz)) {
			t->succ_sz = sz;
			t->bytes += sz;
		} else {
			free(t->succ);
			t->succ = NULL;
		}
	} else if (src->positions) {
		size_t sz = (size_t)src->cnt * sizeof(*t->positions);

		t->positions = malloc(sz);
		if (t->positions && !interp__read_mem(pid, src->positions, t->positions, sz)) {
			t->bytes += sz;
		} else {
			free(t->positions);
			t->positions = NULL;
		}
	}
cleanup:
	free(raw);
}

static int tab_line(const struct line_tab *tab, uint32_t pos)
{
	struct ruby_line_table t = { .lines = tab->lines,
				     .cnt = tab->line_cnt,
				     .succ = tab->succ,
				     .succ_sz = tab->succ_sz,
				     .positions = tab->positions };

	return ruby_lines__line(&t, pos);
}

/* Read an instruction sequence into entry (symbol_cache_read_fn; ctx: the layout); 0 or
 * -errno.
 */
static int read_iseq(const void *ctx, pid_t pid, uint64_t iseq, void *entry)
{
	const struct rb_layout *l = ctx;
	const struct ruby_reader reader = { .pid = pid, .l = &l->obj }, *r = &reader;
	struct iseq_entry *e = entry;
	uint8_t body[256];
	uint64_t head, body_addr, path, first, v;
	uint32_t iseq_size, type;

	if (interp__read_u64(r->pid, iseq, &head) || (head & RB_T_MASK) != RB_T_IMEMO ||
	    IMEMO_TYPE(head) != RB_IMEMO_ISEQ ||
	    interp__read_u64(r->pid, iseq + l->bpf.iseq_body, &body_addr) ||
	    l->body_sz > sizeof(body) || interp__read_mem(r->pid, body_addr, body, l->body_sz))
		return -EFAULT;
	memcpy(&type, body + l->body_type, 4);
	memcpy(&iseq_size, body + l->bpf.body_iseq_size, 4);
	memcpy(&first, body + l->bpf.body_first_line, 8);
	memcpy(&path, body + l->body_path, 8);
	memcpy(&v, body + l->body_label, 8);
	e->label = read_string(r, v, NAME_MAX_LEN);
	memcpy(&v, body + l->body_base_label, 8);
	e->base_label = read_string(r, v, NAME_MAX_LEN);
	e->path = read_string(r, path, PATH_MAX_LEN);
	if (!e->path && !ruby_obj__array_at(r, path, 0, &v)) /* [path, realpath] */
		e->path = read_string(r, v, PATH_MAX_LEN);
	memcpy(&e->local_iseq, body + l->body_local_iseq, 8);
	e->type = type;
	e->first_lineno = (first & 1) ? (int)((int64_t)first >> 1) : 0;
	e->key.cookie = iseq_size ^ ((uint32_t)first << 16);
	memcpy(&e->src.entries, body + l->body_insns_body, 8);
	memcpy(&e->src.positions, body + l->body_insns_pos, 8);
	memcpy(&e->src.cnt, body + l->body_insns_size, 4);
	memcpy(&e->src.succ, body + l->body_insns_succ, 8);
	e->src.iseq_size = iseq_size;
	return e->label ? 0 : -EFAULT;
}

struct class_name {
	const struct ruby_reader *r;
	uint64_t classpath_id;
	char *out;
	size_t cap;
};

static int classpath_ivar(void *ctx, uint64_t id, uint64_t value)
{
	struct class_name *cn = ctx;

	if (id != cn->classpath_id)
		return 0;
	return ruby_obj__string(cn->r, value, cn->out, cn->cap) ? 0 : 1;
}

/* The qualifier of a method owned by `owner`: "Name#" or, for a singleton class, "Name.". */
static void method_qualifier(const struct ruby_reader *r, uint64_t classpath_id, uint64_t owner,
			     char *out, size_t cap)
{
	struct class_name cn = { .r = r, .classpath_id = classpath_id, .out = out, .cap = cap - 1 };
	uint64_t flags;
	bool singleton;
	size_t n;

	out[0] = '\0';
	if (!classpath_id || ruby_obj__flags(r, owner, &flags))
		return;
	singleton = (flags & 0x1f) == RUBY_T_CLASS && (flags & RUBY_FL_SINGLETON);
	if (singleton) {
		/* the attached class: an ivar (__attached__) whose klass is this singleton */
		struct ivar_match m = { .r = r, .want_klass = owner };

		if (ruby_obj__class_ivars(r, owner, ivar_match, &m) != 1)
			return;
		owner = m.value;
	}
	if (ruby_obj__class_ivars(r, owner, classpath_ivar, &cn) != 1) {
		out[0] = '\0';
		return;
	}
	n = strlen(out);
	out[n] = singleton ? '.' : '#';
	out[n + 1] = '\0';
}

/* The method entry me of process rp (cached); NULL when it is not one. */
static struct me_entry *method_entry(struct ruby *rb, struct rb_proc *rp, pid_t reader, uint64_t me,
				     uint32_t cookie, bool check_cookie)
{
	const struct rb_layout *l = &rp->file->layout;
	struct ruby_reader r = { .pid = reader, .l = &l->obj };
	uint64_t slot = lru_sets__slot(
		&rb->me_slots,
		u64_hash(me ^ u64_hash((uint64_t)rp->base.pid << 32 | rp->base.gen)));
	struct me_entry *e = &rb->mes[slot];
	uint64_t head[5], def_head;

	if (e->pid == rp->base.pid && e->gen == rp->base.gen && e->me == me &&
	    (!check_cookie || e->cookie == cookie))
		return e;
	/* frames may come before the check that finds it (a young process) */
	if (!rp->classpath_id && rp->classpath_tries < CLASSPATH_TRIES) {
		rp->classpath_tries++;
		find_classpath_id(rp);
	}
	rb->stats[RB_STAT_ME_READS]++;
	memset(e, 0, sizeof(*e));
	/* { flags, defined_class, def, called_id, owner } */
	if (!me || me & 7 || interp__read_mem(reader, me, head, sizeof(head)) ||
	    (head[0] & RB_T_MASK) != RB_T_IMEMO || IMEMO_TYPE(head[0]) != RB_IMEMO_MENT ||
	    (check_cookie && (uint32_t)head[3] != cookie))
		return NULL;
	if (!interp__read_u64(reader, head[l->me_def / 8], &def_head)) {
		e->def_type = (uint32_t)def_head & 0xf;
		if (e->def_type == METHOD_TYPE_ISEQ)
			interp__read_u64(reader, head[l->me_def / 8] + l->def_iseqptr, &e->iseqptr);
	} else {
		e->def_type = ~0u;
	}
	method_qualifier(&r, rp->classpath_id, head[l->me_owner / 8], e->qual, sizeof(e->qual));
	if (rp->file->symbols_vaddr)
		ruby_obj__id_name(&r, rp->bias + rp->file->symbols_vaddr, head[3], e->name,
				  sizeof(e->name));
	e->pid = rp->classpath_id ? rp->base.pid : 0; /* cached once names can be complete */
	e->gen = rp->base.gen;
	e->me = me;
	e->cookie = (uint32_t)head[3];
	return e;
}

static const struct interp_marker_text marker_texts[] = {
	{ RB_MARKER_UNSUPPORTED, "unsupported version" },
	{ RB_MARKER_TRUNCATED, "more frames truncated" },
	{ RB_MARKER_READ_FAILED, "frame unreadable" },
	{ RB_MARKER_GC, "gc" },
	{ RB_MARKER_NO_PROC, "process not attached" },
};

/* The name of an iseq frame: the label, with the class where the method entry gives it. */
static const char *iseq_name(struct ruby *rb, const struct iseq_entry *e, uint64_t iseq,
			     const struct me_entry *me)
{
	size_t label_len, base_len;

	if (!me || !me->qual[0]) {
		if (e->type == ISEQ_TYPE_METHOD || e->type == ISEQ_TYPE_BLOCK)
			rb->stats[RB_STAT_NO_CLASS]++;
		return e->label;
	}
	if (e->type == ISEQ_TYPE_METHOD && me->def_type == METHOD_TYPE_ISEQ &&
	    me->iseqptr == iseq) {
		snprintf(rb->text, sizeof(rb->text), "%s%s", me->qual, e->label);
		return rb->text;
	}
	if (e->type == ISEQ_TYPE_BLOCK && me->def_type == METHOD_TYPE_BMETHOD && me->name[0]) {
		/* only a define_method block's own frame carries its bmethod entry */
		snprintf(rb->text, sizeof(rb->text), "%s%s", me->qual, me->name);
		return rb->text;
	}
	if (e->type == ISEQ_TYPE_BLOCK && me->def_type == METHOD_TYPE_ISEQ &&
	    me->iseqptr == e->local_iseq && e->base_label) {
		/* "block in beta", "block (2 levels) in beta": qualify the method at the end */
		label_len = strlen(e->label);
		base_len = strlen(e->base_label);
		if (base_len <= label_len &&
		    !strcmp(e->label + label_len - base_len, e->base_label)) {
			snprintf(rb->text, sizeof(rb->text), "%.*s%s%s",
				 (int)(label_len - base_len), e->label, me->qual, e->base_label);
			return rb->text;
		}
	}
	rb->stats[RB_STAT_NO_CLASS]++;
	return e->label;
}

static void rb_symbolize(void *rt, void *proc_state, pid_t reader, const struct user_frame *uf,
			 struct interp_symbol *out)
{
	uint32_t pos = (uint32_t)(uf->file_id >> RB_POS_SHIFT), cookie = uf->flags;
	uint64_t me_addr = (uf->file_id & RB_ME_MASK) << 3;
	struct ruby *rb = rt;
	struct rb_proc *rp = proc_state;
	const struct me_entry *me;
	struct iseq_entry *e;
	pid_t from;
	int line;

	if (!uf->addr)
		return interp__code_marker(out, INTERP_MARKERS(marker_texts), uf->file_id);
	if (pos == RB_POS_CFUNC) {
		me = method_entry(rb, rp, reader, uf->addr, cookie, true);
		if (!me && reader != rp->base.pid)
			me = method_entry(rb, rp, rp->base.pid, uf->addr, cookie, true);
		if (!me || !me->name[0]) {
			rb->stats[RB_STAT_UNREADABLE]++;
			return interp__marker(out, "C function unreadable");
		}
		if (!me->qual[0])
			rb->stats[RB_STAT_NO_CLASS]++;
		snprintf(rb->text, sizeof(rb->text), "%s%s", me->qual, me->name);
		*out = (struct interp_symbol){ .function = rb->text };
		return;
	}
	e = symbol_cache__get(&rb->iseqs, &rp->base, reader, uf->addr, cookie, 0, read_iseq,
			      &rp->file->layout, out, &from);
	if (!e)
		return;
	if (from) { /* read now: its line table too, while the budget allows */
		read_lines(from, &rp->file->layout, &e->src, &e->tab);
		if (rb->table_bytes + e->tab.bytes > RUBY_TABLE_BYTES_MAX)
			line_tab__clear(&e->tab); /* over budget: read again when asked */
		rb->table_bytes += e->tab.bytes;
	}
	line = e->first_lineno;
	if (pos != RB_POS_NONE) {
		/* a saved pc points past its instruction (vm_backtrace.c calc_pos) */
		pos = pos ? pos - 1 : 0;
		if (e->tab.lines) {
			line = tab_line(&e->tab, pos);
		} else {
			struct line_tab once;

			read_lines(reader, &rp->file->layout, &e->src, &once);
			line = tab_line(&once, pos);
			line_tab__clear(&once);
		}
	}
	me = me_addr ? method_entry(rb, rp, reader, me_addr, 0, false) : NULL;
	out->function = iseq_name(rb, e, uf->addr, me);
	out->file = e->path;
	out->line = line > 0 ? line : 0;
	out->marker = false;
}

const struct interp_runtime ruby_runtime = {
	.name = "ruby",
	.frame_type = "ruby", /* the reference agent's value for Ruby frames */
	.frame_kind = FRAME_KIND_RUBY,
	INTERP_RUNTIME_COUNTERS(RB_COUNTERS, RB_COUNTER_CNT, RB_STATS, struct ruby),
	.init = rb_init,
	.fini = rb_fini,
	.file_state_sz = sizeof(struct rb_file),
	.file_detect = rb_file_detect,
	.proc_state_sz = sizeof(struct rb_proc),
	.proc_attach = rb_proc_attach,
	.proc_tick = rb_proc_tick,
	.symbolize = rb_symbolize,
};
