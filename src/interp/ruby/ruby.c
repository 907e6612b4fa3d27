/* CRuby, as a runtime of src/interp/interp.h: finds libruby among the mapped files, tells the
 * eBPF walk (bpf/interp/ruby/walk.h) where its vm_exec_core is, how its structures are laid
 * out and how each thread's execution context is found, and turns the frames it emits
 * (instruction sequence + pc index + method entry, or a C function's method entry) into
 * `Class#method`, `block in Class#method`, `Class.singleton`, file and line by reading the
 * process's memory.
 *
 * Versions: CRuby 2.7, 3.1 and 3.3 on x86-64 (glibc): Debian 11's libruby-2.7 (2.7.4), 12's
 * libruby-3.1 (3.1.2), 13's and unstable's libruby-3.3 (3.3.8), all stripped to .dynsym, and
 * other builds of those versions; on arm64 3.1 (Debian 12's arm64 libruby-3.1: its code read by
 * ruby_code_arm64.c, the context through a TLS descriptor, RB_EC_TLSDESC; C functions' names
 * are not read there). What the file itself gives (ruby_code.h reads the code):
 *  - the version: the exported string `ruby_version` ("3.3.8");
 *  - vm_exec_core, the direct-threaded interpreter loop (a static function): of the functions
 *    the exported rb_vm_exec calls (2.7, 3.1), or of those two calls away from the exported
 *    rb_iseq_eval_main (3.3 exports no rb_vm_exec), their extents from .eh_frame, the one with
 *    the most indirect jumps (one per instruction handler: 132 in Debian's 3.1.2);
 *  - the running thread's execution context, from rb_errinfo's code (`GET_EC()->errinfo`):
 *    3.x reads the thread-local ruby_current_ec through a __tls_get_addr GOT pair, whose
 *    R_X86_64_DTPMOD64 slot eBPF reads the module id from every sample (written by ld.so when
 *    it relocates libruby) and whose offset word (a DTPOFF64 relocation's symbol + addend, or
 *    the word itself for a hidden variable, 3.3) plus the displacement of the load after the
 *    call is its offset in libruby's TLS block; 2.7 has no thread-local: its
 *    ruby_current_execution_context_ptr names only the thread holding the GVL, so each
 *    thread's rb_thread_t is taken from its pthread key ruby_native_thread_key (read from
 *    ruby_native_thread_p's code), then its ec. The errinfo offset the code uses is checked
 *    against the table's;
 *  - the VM and its GC state, from rb_during_gc's code (`GET_VM()->objspace->flags.during_gc`):
 *    ruby_current_vm_ptr, the objspace's offset in rb_vm_t, the flags word and bit;
 *  - the symbol table (cfunc names): `ruby_global_symbols` is not exported; the exported
 *    rb_id2str jumps to the lookup, whose first `cmp reg, disp32(%rip)` compares with its
 *    last_id: the table's address.
 * Where a symbol is exported too (ruby_current_ec in 3.1, ruby_current_vm_ptr in 2.7 and 3.1)
 * it must agree with the code. The other structure offsets are a table per version (below),
 * from vm_core.h, iseq.h, method.h, internal/class.h (2.7: internal.h), symbol.h, st.h,
 * thread_pthread.h and include/ruby/internal/core/r{string,array}.h (2.7: ruby.h) of the
 * ruby/ruby sources at v2_7_4, v3_1_2 and v3_3_8 (offsets as bindgen laid those headers out in
 * rbspy's ruby-structs, ruby_2_7_4.rs, ruby_3_1_2.rs, ruby_3_3_8.rs; tLAST_OP_ID from id.h
 * generated from each tag's template/id.h.tmpl). Each process is checked against them once
 * it is initialised (its main thread reached from the VM, its context back through the
 * thread-local or pthread-key path eBPF uses, its control frames inside its VM stack, every
 * frame's iseq an instruction sequence object); a process that fails gets native frames only,
 * counted and warned once. Other versions get a `[ruby: unsupported version X.Y]` marker, a
 * known version whose code is not shaped as expected `[ruby: X.Y build not understood]`.
 *
 * YJIT (3.3): Debian builds 3.3 with --disable-yjit (`ruby --yjit` warns and interprets).
 *
 * Invariants: the iseq cache (../common/symbol_cache.h) and the method-entry cache (a
 * set-associative table, base/lru_sets.h) have fixed sizes, keyed by (pid, attach generation,
 * address); an iseq entry is re-read when the eBPF cookie disagrees (freed and reused), a method
 * entry when its called_id does. An iseq's line table is read with it, once, at most
 * INSNS_INFO_MAX entries and SUCC_BYTES_MAX bytes of index, and kept in its entry: what it holds
 * counts in the cache's byte cap (key.bytes). Every read of the process, iseqs and method
 * entries alike, is on the process's read budget: a frame it cannot afford is the cache's
 * "over the process's read budget" marker, counted.
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
#include "interp/common/glibc_tsd.h"
#include "interp/common/runtime_counters.h"
#include "interp/common/proc_memory.h"
#include "interp/interp.h"
#include "interp/common/interp_elf.h"
#include "interp/common/symbol_cache.h"
#include "interp/ruby/ruby_code.h"
#include "interp/ruby/ruby_lines.h"
#include "interp/ruby/ruby_objects.h"
#include "proc/executable.h"

#define RUBY_ISEQ_CACHE_CAP 4096
#define RUBY_ME_CACHE_CAP 4096
#define NAME_MAX_LEN 256
#define PATH_MAX_LEN 512
#define INSNS_INFO_MAX (1u << 16) /* line entries read per iseq */
#define SUCC_BYTES_MAX (1u << 17) /* succinct table bytes read per iseq */
#define VERIFY_INTERVAL_NS (100 * 1000 * 1000ULL)
#define VERIFY_TRIES 100 /* 10 s for an interpreter to finish initialising */
#define FRAMES_CHECKED 256
#define CORE_MIN_JUMPS 32 /* indirect jumps that make a function a threaded interpreter */
#define CORE_MAX_SZ (1u << 24)
#define CALLS_MAX 512      /* distinct call targets followed per level */
#define ACCESSOR_SZ 64     /* bytes of rb_errinfo, rb_during_gc, ruby_native_thread_p read */
#define CLASSPATH_TRIES 64 /* lookups of __classpath__'s id before giving up */

/* Everything known about one version's layout (x86-64). */
struct rb_layout {
	uint8_t major, minor;
	uint8_t ec_src;        /* enum rb_ec_src */
	bool first_lineno_int; /* location.first_lineno is an int (3.3), else a Fixnum VALUE */
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
	uint16_t ec_errinfo;       /* rb_execution_context_t.errinfo (checked with rb_errinfo) */
	uint16_t ec_thread;        /* .thread_ptr */
	uint16_t th_vm;            /* rb_thread_t.vm */
	uint16_t th_nt;            /* rb_thread_t.nt (struct rb_native_thread *, 3.3), 0: none */
	uint16_t th_thread_id;     /* pthread_t (the TCB on glibc x86-64): in *nt, or in th */
	uint16_t vm_main_thread;   /* rb_vm_t.main_thread (2.7), .ractor.main_thread (3.x) */
};

/* clang-format off */
static const struct rb_layout layouts[] = {
	/* 2.7 (v2_7_4; checked live on Debian's 2.7.4):
	 * ec { vm_stack 0, vm_stack_size 8, cfp 16, tag 24, protect_tag 32, interrupt_flag 40,
	 *   interrupt_mask 44, fiber_ptr 48, thread_ptr 56, ..., errinfo 120 };
	 * control frame { pc 0, sp 8, iseq 16, self 24, ep 32, block_code 40, __bp__ 48 } = 56;
	 * iseq { flags 0, wrapper 8, body 16 }; body { type 0, iseq_size 4, iseq_encoded 8,
	 *   param 16-64, location { pathobj 64, base_label 72, label 80, first_lineno 88 (a
	 *   Fixnum) }, insns_info { body 120, positions 128, size 136, succ_index_table 144 },
	 *   local_table 152, catch_table 160, parent_iseq 168, local_iseq 176 };
	 *   iseq_insn_info_entry { line_no, events } = 8;
	 * method entries and definitions as 3.1; thread { vmlt_node 0, self 16, vm 24, ec 32,
	 *   last_status 40, calling 48, top_self 56, top_wrapper 64, thread_id 72 };
	 * vm { self 0, gvl 8-192, main_thread 192, ..., objspace 1152 }; objspace flags as 3.1;
	 * RString, RArray, RClass { RBasic, super 16, ptr 24 }, rb_classext_t { iv_index_tbl 0,
	 *   iv_tbl 8 }, st_table, rb_symbols_t: as 3.1; tLAST_OP_ID 168.
	 */
	{ 2, 7, RB_EC_TSD, false,
	  { .ec_vm_stack = 0, .ec_vm_stack_size = 8, .ec_cfp = 16, .cfp_size = 56, .cfp_pc = 0,
	    .cfp_iseq = 16, .cfp_ep = 32, .cfp_read_sz = 40, .iseq_body = 16,
	    .body_iseq_size = 4, .body_encoded = 8, .body_first_line = 88, .body_read_sz = 96,
	    .me_called_id = 24, .vm_objspace = 1152, .objspace_flags = 16,
	    .gc_running = 1u << 5, .th_ec = 32 },
	  { .str_noembed_flag = 1ULL << 13, .str_embed_shift = 14, .str_embed_mask = 0x1f,
	    .str_embed = 16, .str_heap_len = 16, .str_heap_ptr = 24,
	    .ary_embed_flag = 1ULL << 13, .ary_embed_shift = 15, .ary_embed_mask = 0x3,
	    .ary_embed = 16, .ary_heap_len = 16, .ary_heap_ptr = 32,
	    .class_ext = 24, .ext_iv_tbl = 8,
	    .st_entries_start = 32, .st_entries_bound = 40, .st_entries = 48,
	    .sym_last_id = 0, .sym_ids = 16, .last_op_id = 168 },
	  .body_type = 0, .body_path = 64, .body_base_label = 72, .body_label = 80,
	  .body_insns_body = 120, .body_insns_pos = 128, .body_insns_size = 136,
	  .body_insns_succ = 144, .body_local_iseq = 176, .body_sz = 184, .insn_info_sz = 8,
	  .me_def = 16, .me_owner = 32, .def_iseqptr = 8,
	  .ec_errinfo = 120, .ec_thread = 56, .th_vm = 24, .th_nt = 0, .th_thread_id = 72,
	  .vm_main_thread = 192 },
	/* 3.1 (v3_1_2; checked live on Debian's 3.1.2):
	 * ec { vm_stack 0, vm_stack_size 8, cfp 16, ..., thread_ptr 48, ..., errinfo 112 };
	 * control frame { pc 0, sp 8, iseq 16, self 24, ep 32, block_code 40, __bp__ 48,
	 *                 jit_return 56 } = 64;
	 * iseq { flags 0, wrapper 8, body 16 }; body { type 0, iseq_size 4, iseq_encoded 8,
	 *   param 16-64, location { pathobj 64, base_label 72, label 80, first_lineno 88 (a
	 *   Fixnum) }, insns_info { body 120, positions 128, size 136, succ_index_table 144 },
	 *   local_table 152, catch_table 160, parent_iseq 168, local_iseq 176 };
	 *   iseq_insn_info_entry { line_no, node_id, events } = 12;
	 * callable method entry { flags 0, defined_class 8, def 16, called_id 24, owner 32 };
	 * method definition { type:4 bits at 0, body.iseq.iseqptr 8, original_id 32 };
	 * thread { lt_node 0, self 16, ractor 24, vm 32, ec 40, ..., thread_id 80 };
	 * vm { self 0, ractor { set 8, cnt 24, blocking_cnt 28, main_ractor 32, main_thread 40,
	 *   sync 48-216 }, ..., objspace 1104 };
	 * objspace (gc.c) { malloc_params { limit 0, increase 8 }, flags 16: mode:2,
	 *   immediate_sweep:1, dont_gc:1, dont_incremental:1, during_gc:1 (bit 5), ... };
	 * RString { flags, klass, as.heap { len 16, ptr 24 } | as.embed.ary 16 }, NOEMBED =
	 *   FL_USER1, embedded length in FL_USER2..6 (bits 14-18);
	 * RArray { as.heap { len 16, aux 24, ptr 32 } | as.ary 16 }, EMBED = FL_USER1, embedded
	 *   length in FL_USER3..4 (bits 15-16; 3 VALUEs inline);
	 * RClass { RBasic, super 16, ptr 24 } (3.1 builds without RVARGC); rb_classext_t
	 *   { iv_index_tbl 0, iv_tbl 8 }; st_table { entries_start 32, entries_bound 40,
	 *   entries 48 }; rb_symbols_t { last_id 0, str_sym 8, ids 16 }; tLAST_OP_ID 169.
	 */
	{ 3, 1, RB_EC_TLS, false,
	  { .ec_vm_stack = 0, .ec_vm_stack_size = 8, .ec_cfp = 16, .cfp_size = 64, .cfp_pc = 0,
	    .cfp_iseq = 16, .cfp_ep = 32, .cfp_read_sz = 40, .iseq_body = 16,
	    .body_iseq_size = 4, .body_encoded = 8, .body_first_line = 88, .body_read_sz = 96,
	    .me_called_id = 24, .vm_objspace = 1104, .objspace_flags = 16,
	    .gc_running = 1u << 5, .th_ec = 40 },
	  { .str_noembed_flag = 1ULL << 13, .str_embed_shift = 14, .str_embed_mask = 0x1f,
	    .str_embed = 16, .str_heap_len = 16, .str_heap_ptr = 24,
	    .ary_embed_flag = 1ULL << 13, .ary_embed_shift = 15, .ary_embed_mask = 0x3,
	    .ary_embed = 16, .ary_heap_len = 16, .ary_heap_ptr = 32,
	    .class_ext = 24, .ext_iv_tbl = 8,
	    .st_entries_start = 32, .st_entries_bound = 40, .st_entries = 48,
	    .sym_last_id = 0, .sym_ids = 16, .last_op_id = 169 },
	  .body_type = 0, .body_path = 64, .body_base_label = 72, .body_label = 80,
	  .body_insns_body = 120, .body_insns_pos = 128, .body_insns_size = 136,
	  .body_insns_succ = 144, .body_local_iseq = 176, .body_sz = 184, .insn_info_sz = 12,
	  .me_def = 16, .me_owner = 32, .def_iseqptr = 8,
	  .ec_errinfo = 112, .ec_thread = 48, .th_vm = 32, .th_nt = 0, .th_thread_id = 80,
	  .vm_main_thread = 40 },
	/* 3.3 (v3_3_8; checked live on Debian's 3.3.8):
	 * ec { vm_stack 0, vm_stack_size 8, cfp 16, tag 24, interrupt_flag 32, interrupt_mask 36,
	 *   fiber_ptr 40, thread_ptr 48, local_storage 56, ..., storage 80, ..., errinfo 120 };
	 * control frame { pc 0, sp 8, iseq 16, self 24, ep 32, block_code 40, jit_return 48 }
	 *   = 56 (no __bp__);
	 * body { type 0, iseq_size 4, iseq_encoded 8, param 16-64, location { pathobj 64,
	 *   base_label 72, label 80, first_lineno 88 (an int), node_id 92 }, insns_info
	 *   { body 112, positions 120, size 128, succ_index_table 136 }, ..., local_iseq 168 };
	 *   iseq_insn_info_entry = 12; method entries and definitions as 3.1;
	 * thread { lt_node 0, self 16, ractor 24, vm 32, nt 40, ec 48 }; rb_native_thread
	 *   { serial 0, vm 8, thread_id 16 }; vm { ractor.main_thread 40, ..., objspace 1304 };
	 * RString { flags, klass, len 16, as.heap.ptr 24 | as.embed.ary 24 } (variable width
	 *   allocation: embedded contents up to the slot's size);
	 * RArray as 3.1, embedded length in FL_USER3..9 (bits 15-21);
	 * RClass { RBasic, super 16, m_tbl 24 } = 32, its rb_classext_t right after it:
	 *   { iv_ptr 0, ..., as.singleton_class.attached_object 96, ..., classpath 120 };
	 * st_table and rb_symbols_t as 3.1; tLAST_OP_ID 169.
	 */
	{ 3, 3, RB_EC_TLS, true,
	  { .ec_vm_stack = 0, .ec_vm_stack_size = 8, .ec_cfp = 16, .cfp_size = 56, .cfp_pc = 0,
	    .cfp_iseq = 16, .cfp_ep = 32, .cfp_read_sz = 40, .iseq_body = 16,
	    .body_iseq_size = 4, .body_encoded = 8, .body_first_line = 88, .body_read_sz = 96,
	    .me_called_id = 24, .vm_objspace = 1304, .objspace_flags = 16,
	    .gc_running = 1u << 5, .th_ec = 48 },
	  { .str_noembed_flag = 1ULL << 13, .str_len = 16, .str_embed = 24,
	    .str_heap_len = 16, .str_heap_ptr = 24,
	    .ary_embed_flag = 1ULL << 13, .ary_embed_shift = 15, .ary_embed_mask = 0x7f,
	    .ary_embed = 16, .ary_heap_len = 16, .ary_heap_ptr = 32,
	    .class_ext = 32, .class_ext_inline = true, .ext_classpath = 120,
	    .ext_attached = 96,
	    .st_entries_start = 32, .st_entries_bound = 40, .st_entries = 48,
	    .sym_last_id = 0, .sym_ids = 16, .last_op_id = 169 },
	  .body_type = 0, .body_path = 64, .body_base_label = 72, .body_label = 80,
	  .body_insns_body = 112, .body_insns_pos = 120, .body_insns_size = 128,
	  .body_insns_succ = 136, .body_local_iseq = 168, .body_sz = 176, .insn_info_sz = 12,
	  .me_def = 16, .me_owner = 32, .def_iseqptr = 8,
	  .ec_errinfo = 120, .ec_thread = 48, .th_vm = 32, .th_nt = 40, .th_thread_id = 16,
	  .vm_main_thread = 40 },
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
	uint64_t vm_ptr_vaddr;    /* ruby_current_vm_ptr (a pointer variable) */
	uint64_t object_vaddr;    /* rb_cObject (a VALUE variable) */
	uint64_t symbols_vaddr;   /* ruby_global_symbols, 0 when not found */
	uint64_t modid_got_vaddr; /* RB_EC_TLS: the GOT slot of libruby's TLS module id;
				   * RB_EC_TLSDESC: ruby_current_ec's TLS descriptor */
	uint64_t tsd_key_vaddr;   /* RB_EC_TSD: ruby_native_thread_key */
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
	uint64_t classpath_id; /* the ID of `__classpath__`, 0 until found (ivar layouts) */
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
	struct line_src src; /* where its line table is */
	struct line_tab tab; /* read with the iseq (empty: none, or over the caps) */
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
#define RB_STATS(X)                                                            \
	/* layouts checked against the live VM */                              \
	X(RB_STAT_VERIFIED, "layouts verified")                                \
	/* instruction sequences read from process memory */                   \
	X(RB_STAT_ISEQ_READS, "iseqs read")                                    \
	/* frames whose iseq or method entry could not be read */              \
	X(RB_STAT_UNREADABLE, "frames unreadable")                             \
	/* cookie mismatch: freed and reused */                                \
	X(RB_STAT_STALE, "iseqs stale")                                        \
	/* method entries read */                                              \
	X(RB_STAT_ME_READS, "method entries read")                             \
	/* frames shown without their class (anonymous, unknown) */            \
	X(RB_STAT_NO_CLASS, "frames without class")                            \
	/* iseqs / method entries not read: the process's read budget spent */ \
	X(RB_STAT_OVER_BUDGET, "reads over budget")

enum rb_stat { RB_STATS(INTERP_LIST_ENUM) RB_STAT_CNT };

struct ruby {
	struct symbol_cache iseqs;
	struct me_entry *mes;
	struct lru_sets me_slots; /* which entry of mes holds an address */
	uint64_t stats[RB_STAT_CNT];
	char text[3 * NAME_MAX_LEN];
};

static void line_tab__clear(struct line_tab *t)
{
	free(t->lines);
	free(t->succ);
	free(t->positions);
	memset(t, 0, sizeof(*t));
}

/* Free what an iseq entry holds (symbol_cache zeroes it). */
static void iseq_entry__clear(void *ctx, void *entry)
{
	struct iseq_entry *e = entry;

	(void)ctx;
	free(e->label);
	free(e->base_label);
	free(e->path);
	line_tab__clear(&e->tab);
}

/* What the cache counts (stats[]) and the markers it gives. */
static const struct symbol_cache_report cache_report = {
	RB_STAT_ISEQ_READS, RB_STAT_UNREADABLE, RB_STAT_STALE, RB_STAT_OVER_BUDGET, -1,
	"iseq unreadable",  "iseq reused"
};

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
#define RB_SYMS(X)                                                                           \
	X(SYM_VERSION, "ruby_version")                                                       \
	X(SYM_VM_EXEC, "rb_vm_exec")                   /* 2.7, 3.1: vm_exec_core's caller */ \
	X(SYM_EVAL_MAIN, "rb_iseq_eval_main")          /* 3.3: two calls above it */         \
	X(SYM_ERRINFO, "rb_errinfo")                   /* how the ec is reached */           \
	X(SYM_DURING_GC, "rb_during_gc")               /* the VM and its GC flag */          \
	X(SYM_NATIVE_THREAD_P, "ruby_native_thread_p") /* 2.7: the thread's pthread key */   \
	X(SYM_CURRENT_EC, "ruby_current_ec")           /* where exported: a cross-check */   \
	X(SYM_VM_PTR, "ruby_current_vm_ptr")           /* likewise */                        \
	X(SYM_OBJECT, "rb_cObject")                                                          \
	X(SYM_ID2STR, "rb_id2str")

enum rb_sym { RB_SYMS(INTERP_LIST_ENUM) SYM_CNT };

static const char *const sym_names[SYM_CNT] = { RB_SYMS(INTERP_LIST_TEXT) };

/* The entry of relocation section `name` that relocates `where`; 0 or -ENOENT. */
static int rela_in(struct elf_file *ef, const char *name, uint64_t where, Elf64_Rela *out)
{
	struct elf_section rela;
	size_t i, n;

	if (elf_file__section(ef, name, &rela) || !rela.data)
		return -ENOENT;
	n = rela.size / sizeof(Elf64_Rela);
	for (i = 0; i < n; i++) {
		memcpy(out, (const uint8_t *)rela.data + i * sizeof(*out), sizeof(*out));
		if (out->r_offset == where)
			return 0;
	}
	return -ENOENT;
}

/* The .rela.dyn entry that relocates `where`; 0 or -ENOENT. */
static int rela_at(struct elf_file *ef, uint64_t where, Elf64_Rela *out)
{
	return rela_in(ef, ".rela.dyn", where, out);
}

/* st_value of .dynsym symbol `index` when this file defines it; 0 or -ENOENT. */
static int dynsym_value(struct elf_file *ef, size_t index, uint64_t *value)
{
	struct elf_section dynsym;
	Elf64_Sym sym;

	if (elf_file__section(ef, ".dynsym", &dynsym) || !dynsym.data ||
	    index >= dynsym.size / sizeof(sym))
		return -ENOENT;
	memcpy(&sym, (const uint8_t *)dynsym.data + index * sizeof(sym), sizeof(sym));
	if (sym.st_shndx == SHN_UNDEF)
		return -ENOENT;
	*value = sym.st_value;
	return 0;
}

/* What the GOT slot `slot` holds once ld.so relocated it: the address of a variable of this
 * file (R_X86_64_RELATIVE, or GLOB_DAT/64 of a symbol it defines; their R_AARCH64_ kin);
 * 0 or -ENOENT.
 */
static int got_value(struct elf_file *ef, uint64_t slot, uint64_t *value)
{
	Elf64_Rela r;
	uint64_t sym;

	if (rela_at(ef, slot, &r))
		return -ENOENT;
	switch (ELF64_R_TYPE(r.r_info)) {
	case R_X86_64_RELATIVE:
	case R_AARCH64_RELATIVE:
		*value = (uint64_t)r.r_addend;
		return 0;
	case R_X86_64_GLOB_DAT:
	case R_X86_64_64:
	case R_AARCH64_GLOB_DAT:
	case R_AARCH64_ABS64:
		if (dynsym_value(ef, ELF64_R_SYM(r.r_info), &sym))
			return -ENOENT;
		*value = sym + (uint64_t)r.r_addend;
		return 0;
	default:
		return -ENOENT;
	}
}

/* A variable reference found in code, as the variable's address. */
static int code_ref_value(struct elf_file *ef, const struct ruby_code_ref *ref, uint64_t *value)
{
	if (!ref->via_got) {
		*value = ref->vaddr;
		return 0;
	}
	return got_value(ef, ref->vaddr, value);
}

/* The __tls_get_addr GOT pair at `pair` ({ module id, offset }): its module must be this file
 * (an R_X86_64_DTPMOD64 of no symbol or of one defined here); its offset in this module's TLS
 * block is the DTPOFF64's symbol + addend, or the word itself when no relocation (a hidden
 * variable, or local-dynamic's base); 0 or -ENOENT.
 */
static int tls_pair_offset(struct elf_file *ef, uint64_t pair, uint64_t *off)
{
	const uint8_t *word;
	Elf64_Rela r;
	uint64_t sym;

	if (rela_at(ef, pair, &r) || ELF64_R_TYPE(r.r_info) != R_X86_64_DTPMOD64 ||
	    (ELF64_R_SYM(r.r_info) && dynsym_value(ef, ELF64_R_SYM(r.r_info), &sym)))
		return -ENOENT;
	if (!rela_at(ef, pair + 8, &r)) {
		if (ELF64_R_TYPE(r.r_info) != R_X86_64_DTPOFF64)
			return -ENOENT;
		sym = 0;
		if (ELF64_R_SYM(r.r_info) && dynsym_value(ef, ELF64_R_SYM(r.r_info), &sym))
			return -ENOENT;
		*off = sym + (uint64_t)r.r_addend;
		return 0;
	}
	if (!(word = interp_elf__bytes(ef, pair + 8, 8)))
		return -ENOENT;
	memcpy(off, word, 8);
	return 0;
}

/* arm64: ruby_current_ec's TLS descriptor at `desc` (an R_AARCH64_TLSDESC of a symbol defined
 * here, in .rela.plt where GNU ld puts descriptors, or .rela.dyn): the variable's offset in
 * this module's TLS block, symbol + addend; 0 or -ENOENT.
 */
static int tls_desc_offset(struct elf_file *ef, uint64_t desc, uint64_t *off)
{
	Elf64_Rela r;
	uint64_t sym;

	if ((rela_in(ef, ".rela.plt", desc, &r) && rela_at(ef, desc, &r)) ||
	    ELF64_R_TYPE(r.r_info) != R_AARCH64_TLSDESC || !ELF64_R_SYM(r.r_info) ||
	    dynsym_value(ef, ELF64_R_SYM(r.r_info), &sym))
		return -ENOENT;
	*off = sym + (uint64_t)r.r_addend;
	return 0;
}

/* Functions by their start, and the FDE extent of each (end 0: none starts there). */
struct fde_search {
	uint64_t start[CALLS_MAX], end[CALLS_MAX];
	size_t cnt;
	uint64_t plt_start[2], plt_end[2]; /* .plt and .plt.sec: stubs, not functions */
};

static int fde_of_starts(void *ctx, const struct cfi_fde *fde)
{
	struct fde_search *fs = ctx;
	size_t i;

	for (i = 0; i < fs->cnt; i++)
		if (fs->start[i] == fde->pc_begin)
			fs->end[i] = fde->pc_end;
	return 0;
}

static void fde_search__add(struct fde_search *fs, uint64_t target)
{
	size_t i;

	for (i = 0; i < 2; i++)
		if (target >= fs->plt_start[i] && target < fs->plt_end[i])
			return;
	for (i = 0; i < fs->cnt; i++)
		if (fs->start[i] == target)
			return;
	if (fs->cnt < CALLS_MAX) {
		fs->start[fs->cnt] = target;
		fs->end[fs->cnt++] = 0;
	}
}

/* vm_exec_core: of the functions up to `depth` direct calls or jumps (e8/e9 rel32) away from
 * the function [root, root + size), the one with the most indirect jumps, at least
 * CORE_MIN_JUMPS. 0 with its extent, or -ENOENT.
 */
static int find_exec_core(struct elf_file *ef, uint64_t root, uint64_t size, int depth,
			  uint64_t *start, uint64_t *end)
{
	struct fde_search *fs = calloc(1, sizeof(*fs)), *next = calloc(1, sizeof(*next));
	uint64_t *targets = calloc(CALLS_MAX, sizeof(*targets));
	const char *const plts[2] = { ".plt", ".plt.sec" };
	size_t i, j, n, best_jumps = 0;
	int err = -ENOENT, d;
	bool arm64 = elf_file__machine(ef) == EM_AARCH64;

	if (!fs || !next || !targets)
		goto cleanup;
	for (i = 0; i < 2; i++) {
		struct elf_section sec;

		if (!elf_file__section(ef, plts[i], &sec)) {
			fs->plt_start[i] = next->plt_start[i] = sec.addr;
			fs->plt_end[i] = next->plt_end[i] = sec.addr + sec.size;
		}
	}
	fs->start[0] = root;
	fs->end[0] = root + size;
	fs->cnt = 1;
	for (d = 0; d < depth; d++) {
		struct fde_search *t;

		next->cnt = 0;
		for (i = 0; i < fs->cnt; i++) {
			const uint8_t *code;

			if (fs->end[i] <= fs->start[i] || fs->end[i] - fs->start[i] > CORE_MAX_SZ ||
			    !(code = interp_elf__bytes(ef, fs->start[i],
						       fs->end[i] - fs->start[i])))
				continue;
			n = (arm64 ? ruby_code__branch_targets_arm64 : ruby_code__branch_targets)(
				code, fs->end[i] - fs->start[i], fs->start[i], targets, CALLS_MAX);
			for (j = 0; j < n; j++)
				fde_search__add(next, targets[j]);
		}
		if (!next->cnt || interp_elf__walk_fdes(ef, fde_of_starts, next))
			break;
		for (i = 0; i < next->cnt; i++) {
			const uint8_t *body;
			size_t jumps;

			/* a call into the middle of a function is not a call of it */
			if (next->end[i] <= next->start[i] ||
			    next->end[i] - next->start[i] > CORE_MAX_SZ)
				continue;
			body = interp_elf__bytes(ef, next->start[i], next->end[i] - next->start[i]);
			if (!body)
				continue;
			jumps = (arm64 ? ruby_code__indirect_jumps_arm64
				       : ruby_code__indirect_jumps)(body,
								    next->end[i] - next->start[i]);
			if (jumps > best_jumps) {
				best_jumps = jumps;
				*start = next->start[i];
				*end = next->end[i];
			}
		}
		t = fs;
		fs = next;
		next = t;
	}
	if (best_jumps >= CORE_MIN_JUMPS)
		err = 0;
cleanup:
	free(fs);
	free(next);
	free(targets);
	return err;
}

/* The first `cmp r32, disp32(%rip)` (39 or 3b /r, modrm mod 00 rm 101, optional REX) in
 * code[0..size) at vaddr addr: the address compared with, or 0.
 */
static uint64_t rip_compare(const uint8_t *code, size_t size, uint64_t addr)
{
	size_t j;

	for (j = 0; j + 7 <= size; j++) {
		size_t op = j + ((code[j] & 0xf0) == 0x40 ? 1 : 0);
		int32_t disp;

		if ((code[op] != 0x39 && code[op] != 0x3b) || (code[op + 1] & 0xc7) != 0x05)
			continue;
		memcpy(&disp, code + op + 2, 4);
		return addr + op + 6 + (int64_t)disp;
	}
	return 0;
}

/* ruby_global_symbols through rb_id2str: the id lookup first compares the serial with the
 * table's last_id (`cmp r32, disp32(%rip)`), in rb_id2str itself (2.7) or in the function it
 * jumps (or calls) to (3.x). The table address, or 0.
 */
static uint64_t find_global_symbols(struct elf_file *ef, const struct interp_sym *id2str)
{
	const uint8_t *code = interp_elf__bytes(ef, id2str->addr, 32), *fn;
	uint64_t found;
	size_t i;

	if (!code)
		return 0;
	if ((found = rip_compare(code, 32, id2str->addr)))
		return found;
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
		if ((fn = interp_elf__bytes(ef, target, 128)) &&
		    (found = rip_compare(fn, 128, target)))
			return found;
	}
	return 0;
}

/* The code of an exported accessor, at most ACCESSOR_SZ bytes; NULL when absent. */
static const uint8_t *accessor(struct elf_file *ef, const struct interp_sym *sym, size_t *size)
{
	if (!sym->found || !sym->size)
		return NULL;
	*size = sym->size < ACCESSOR_SZ ? (size_t)sym->size : ACCESSOR_SZ;
	return interp_elf__bytes(ef, sym->addr, *size);
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

/* "X.Y[.Z]" at the start of ruby_version; 0 or -ENOENT. */
static int parse_version(const uint8_t *v, size_t n, int *major, int *minor)
{
	size_t i = 0;
	int part[2] = { 0, 0 }, k;

	for (k = 0; k < 2; k++) {
		size_t digits = 0;

		for (; i < n && v[i] >= '0' && v[i] <= '9' && digits < 3; i++, digits++)
			part[k] = part[k] * 10 + (v[i] - '0');
		if (!digits || (k == 0 && (i >= n || v[i++] != '.')))
			return -ENOENT;
	}
	*major = part[0];
	*minor = part[1];
	return 0;
}

/* How this build reaches the thread's execution context (rb_errinfo's code, and 2.7's pthread
 * key); 0, or -ENOENT when its code is not what this version's is.
 */
static int find_ec(struct elf_file *ef, const struct interp_sym *syms, const struct rb_layout *l,
		   struct rb_file *f)
{
	struct ruby_ec_access ec;
	const uint8_t *code;
	uint64_t off;
	size_t size;

	if (!(code = accessor(ef, &syms[SYM_ERRINFO], &size)) ||
	    (elf_file__machine(ef) == EM_AARCH64 ? ruby_code__errinfo_arm64 : ruby_code__errinfo)(
		    code, size, syms[SYM_ERRINFO].addr, &ec)) {
		pr_debug("ruby: %s: rb_errinfo not understood\n", f->base.path);
		return -ENOENT;
	}
	if (ec.errinfo != l->ec_errinfo) {
		pr_debug("ruby: %s: errinfo at %u in rb_errinfo, %u in the %u.%u table\n",
			 f->base.path, ec.errinfo, l->ec_errinfo, l->major, l->minor);
		return -ENOENT;
	}
	if (l->ec_src == RB_EC_TSD) {
		if (!(code = accessor(ef, &syms[SYM_NATIVE_THREAD_P], &size)) ||
		    ruby_code__native_thread_key(code, size, syms[SYM_NATIVE_THREAD_P].addr,
						 &f->tsd_key_vaddr)) {
			pr_debug("ruby: %s: ruby_native_thread_p not understood\n", f->base.path);
			return -ENOENT;
		}
		return 0;
	}
	if (ec.kind == RUBY_EC_TLSDESC && l->ec_src == RB_EC_TLS) {
		if (tls_desc_offset(ef, ec.tls_pair, &off)) {
			pr_debug("ruby: %s: ruby_current_ec's TLS descriptor not found\n",
				 f->base.path);
			return -ENOENT;
		}
		f->bpf.rb.ec_src = RB_EC_TLSDESC;
	} else if (ec.kind != RUBY_EC_TLS || tls_pair_offset(ef, ec.tls_pair, &off)) {
		pr_debug("ruby: %s: ruby_current_ec's TLS pair not found\n", f->base.path);
		return -ENOENT;
	}
	off += (uint64_t)(int64_t)ec.tls_add;
	/* the exported symbol (3.1): its st_value is its offset in the TLS block */
	if (syms[SYM_CURRENT_EC].found &&
	    (syms[SYM_CURRENT_EC].type != STT_TLS || syms[SYM_CURRENT_EC].addr != off)) {
		pr_debug("ruby: %s: ruby_current_ec at %#llx, rb_errinfo reads %#llx\n",
			 f->base.path, (unsigned long long)syms[SYM_CURRENT_EC].addr,
			 (unsigned long long)off);
		return -ENOENT;
	}
	f->modid_got_vaddr = ec.tls_pair;
	f->bpf.rb.tls_off = off;
	return 0;
}

/* ruby_current_vm_ptr and the GC flag (rb_during_gc's code; the symbol and the table where it
 * says nothing); 0 or -ENOENT.
 */
static int find_vm(struct elf_file *ef, const struct interp_sym *syms, struct rb_file *f)
{
	struct ruby_gc_access gc;
	const uint8_t *code;
	uint64_t vm_ptr;
	size_t size;

	/* (arm64: rb_objspace follows three mutexes in rb_vm_t, 48 bytes each there, 40 on
	 * x86-64: its offset is the code's, 1128 in Debian's arm64 3.1.2, 1104 in the table)
	 */
	if ((code = accessor(ef, &syms[SYM_DURING_GC], &size)) &&
	    !(elf_file__machine(ef) == EM_AARCH64
		      ? ruby_code__during_gc_arm64
		      : ruby_code__during_gc)(code, size, syms[SYM_DURING_GC].addr, &gc) &&
	    !code_ref_value(ef, &gc.vm_ptr, &vm_ptr) && gc.vm_objspace < 0xffff &&
	    gc.flags_off < 0xffff) {
		if (syms[SYM_VM_PTR].found && syms[SYM_VM_PTR].addr != vm_ptr) {
			pr_debug(
				"ruby: %s: ruby_current_vm_ptr at %#llx, rb_during_gc reads %#llx\n",
				f->base.path, (unsigned long long)syms[SYM_VM_PTR].addr,
				(unsigned long long)vm_ptr);
			return -ENOENT;
		}
		if (gc.vm_objspace != f->layout.bpf.vm_objspace)
			pr_debug("ruby: %s: objspace at %u in rb_during_gc, %u in the table\n",
				 f->base.path, gc.vm_objspace, f->layout.bpf.vm_objspace);
		f->vm_ptr_vaddr = vm_ptr;
		f->layout.bpf.vm_objspace = (uint16_t)gc.vm_objspace;
		f->layout.bpf.objspace_flags = (uint16_t)gc.flags_off;
		f->layout.bpf.gc_running = gc.gc_running;
		return 0;
	}
	pr_debug("ruby: %s: rb_during_gc not understood\n", f->base.path);
	if (!syms[SYM_VM_PTR].found)
		return -ENOENT;
	f->vm_ptr_vaddr = syms[SYM_VM_PTR].addr;
	return 0;
}

static int detect(const struct executable *exe, struct rb_file *f)
{
	struct interp_sym syms[SYM_CNT];
	const struct interp_sym *root;
	const struct rb_layout *known;
	const uint8_t *v;
	int major = 0, minor = 0;
	uint64_t start, end;

	if (!exe->elf || !name_is_ruby(exe->path))
		return -ENOENT;
	interp_elf__symbols(exe->elf, sym_names, SYM_CNT, syms);
	/* a ruby binary linked against libruby imports these: the library is the one */
	root = syms[SYM_VM_EXEC].found ? &syms[SYM_VM_EXEC] : &syms[SYM_EVAL_MAIN];
	if (!root->found || !root->size || !syms[SYM_VERSION].found)
		return -ENOENT;
	v = interp_elf__bytes(exe->elf, syms[SYM_VERSION].addr, 8);
	if (v)
		parse_version(v, 8, &major, &minor);
	f->bpf.major = (uint8_t)(major < 256 ? major : 255);
	f->bpf.minor = (uint8_t)(minor < 256 ? minor : 255);
	f->bpf.supported = 0;
	f->bpf.rb.refusal = RB_REFUSED_VERSION;
	if (find_exec_core(exe->elf, root->addr, root->size, root == &syms[SYM_VM_EXEC] ? 1 : 2,
			   &start, &end)) {
		pr_debug("ruby: %s: no vm_exec_core found: native frames only\n", exe->path);
		return 0;
	}
	f->bpf.range_start[0] = start;
	f->bpf.range_end[0] = end;
	if (!(known = layout_for(major, minor)))
		return 0;
	f->layout = *known;
	f->bpf.rb.refusal = RB_REFUSED_BUILD;
	f->bpf.rb.ec_src = known->ec_src; /* find_ec: RB_EC_TLSDESC on arm64 */
	if (find_ec(exe->elf, syms, known, f) || find_vm(exe->elf, syms, f))
		return 0;
	f->object_vaddr = syms[SYM_OBJECT].found ? syms[SYM_OBJECT].addr : 0;
	/* (x86-64 code only: on arm64 C functions' names are not read, their frames unnamed) */
	if (syms[SYM_ID2STR].found && elf_file__machine(exe->elf) != EM_AARCH64) {
		const uint8_t *code;
		size_t size;
		uint32_t last_op;

		f->symbols_vaddr = find_global_symbols(exe->elf, &syms[SYM_ID2STR]);
		/* operator ids (their own serial) end where rb_id2str says */
		if ((code = accessor(exe->elf, &syms[SYM_ID2STR], &size)) &&
		    !ruby_code__last_op_id(code, size, &last_op) &&
		    last_op != f->layout.obj.last_op_id) {
			pr_debug("ruby: %s: tLAST_OP_ID %u in rb_id2str, %u in the table\n",
				 exe->path, last_op, f->layout.obj.last_op_id);
			f->layout.obj.last_op_id = (uint16_t)last_op;
		}
	}
	f->bpf.rb.off = f->layout.bpf;
	f->bpf.rb.refusal = 0;
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
		pr_debug("ruby: %s: CRuby %u.%u, vm_exec_core %#llx-%#llx, %s, vm %#llx, "
			 "symbols %#llx\n",
			 f->base.path, f->bpf.major, f->bpf.minor,
			 (unsigned long long)f->bpf.range_start[0],
			 (unsigned long long)f->bpf.range_end[0],
			 f->bpf.rb.ec_src == RB_EC_TSD       ? "ec through a pthread key"
			 : f->bpf.rb.ec_src == RB_EC_TLSDESC ? "ec thread-local (TLS descriptor)"
							     : "ec thread-local",
			 (unsigned long long)f->vm_ptr_vaddr, (unsigned long long)f->symbols_vaddr);
	else if (f->bpf.range_end[0])
		pr_debug("ruby: %s: CRuby %u.%u: %s\n", f->base.path, f->bpf.major, f->bpf.minor,
			 f->bpf.rb.refusal == RB_REFUSED_BUILD ? "build not understood"
							       : "no layout for this version");
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

/* The ID of `__classpath__`: the instance variable of Object whose value is "Object" (layouts
 * whose class names are instance variables).
 */
static void find_classpath_id(struct rb_proc *rp)
{
	struct ruby_reader r = { .pid = rp->base.pid, .l = &rp->file->layout.obj };
	struct ivar_match m = { .r = &r, .want = "Object" };
	uint64_t object;

	if (rp->file->layout.obj.ext_classpath || !rp->file->object_vaddr ||
	    interp__read_u64(rp->base.pid, rp->bias + rp->file->object_vaddr, &object))
		return;
	if (ruby_obj__class_ivars(&r, object, ivar_match, &m) == 1)
		rp->classpath_id = m.id;
}

/* Can class names be read yet (a method entry read now may be cached)? */
static bool names_ready(const struct rb_proc *rp)
{
	return rp->file->layout.obj.ext_classpath || rp->classpath_id;
}

/* The thread's execution context as eBPF finds it, from its pthread_t (its TCB on glibc
 * x86-64) and its rb_thread_t: 1 when it is `ec`, 0 not set yet, < 0 another, -EFAULT.
 */
static int ec_path_check(struct rb_proc *rp, uint64_t tcb, uint64_t th, uint64_t ec)
{
	const struct rb_file *f = rp->file;
	pid_t pid = rp->base.pid;
	uint64_t modid, dtv, block, v;
	uint32_t key;

	if (f->bpf.rb.ec_src == RB_EC_TSD) {
		if (interp__read_mem(pid, rp->bias + f->tsd_key_vaddr, &key, sizeof(key)))
			return -EFAULT;
		if (key >= RB_TSD_KEYS)
			return -ENOTSUP; /* beyond glibc's first block: eBPF does not go there */
		if (interp__read_u64(pid, tcb + GLIBC_TSD_FROM_PTHREAD + 16 * (uint64_t)key, &v))
			return -EFAULT;
		return v == th ? 1 : -EINVAL;
	}
	if (f->bpf.rb.ec_src == RB_EC_TLSDESC) {
		/* the descriptor's argument: the variable's offset from the thread pointer (static
		 * TLS), 0 until ld.so relocated it
		 */
		if (interp__read_u64(pid, rp->bias + f->modid_got_vaddr + 8, &v))
			return -EFAULT;
		if (!v)
			return 0;
		if (v >= RB_TLSDESC_STATIC_MAX ||
		    interp__read_u64(pid, tcb - GLIBC_PTHREAD_FROM_TP + v, &v))
			return -EINVAL;
		return v == ec ? 1 : -EINVAL;
	}
	if (interp__read_u64(pid, rp->bias + f->modid_got_vaddr, &modid))
		return -EFAULT;
	if (!modid)
		return 0;
	if (modid > 0xffff || interp__read_u64(pid, tcb + RB_TCB_DTV, &dtv) ||
	    interp__read_u64(pid, dtv + 16 * modid, &block) ||
	    interp__read_u64(pid, block + f->bpf.rb.tls_off, &v))
		return -EINVAL;
	return v == ec ? 1 : -EINVAL;
}

/* Check the layout against the live VM: the VM's main thread belongs to it and its execution
 * context names it back, the same context is reached through the path eBPF uses (thread-local
 * or pthread key), the objspace looks like one, the context's newest control frame lies in its
 * VM stack, and every frame with an iseq holds an instruction sequence object. 1 verified,
 * 0 not initialised yet, < 0 wrong layout.
 */
static int proc_check(struct rb_proc *rp)
{
	const struct rb_layout *l = &rp->file->layout;
	uint64_t th, v, ec, nt, tcb, stack, size, cfp, end, vm, objspace;
	uint32_t gc_flags;
	int frames = 0, iseqs = 0, r;
	pid_t pid = rp->base.pid;

	if (interp__read_u64(pid, rp->bias + rp->file->vm_ptr_vaddr, &vm))
		return -EFAULT;
	if (!vm)
		return 0;
	if (interp__read_u64(pid, vm + l->vm_main_thread, &th))
		return -EFAULT;
	if (!th)
		return 0;
	if (interp__read_u64(pid, th + l->th_vm, &v) || v != vm ||
	    interp__read_u64(pid, th + l->bpf.th_ec, &ec) || !ec ||
	    interp__read_u64(pid, ec + l->ec_thread, &v) || v != th)
		return -EINVAL;
	nt = th;
	if (l->th_nt && (interp__read_u64(pid, th + l->th_nt, &nt) || !nt))
		return -EINVAL;
	if (interp__read_u64(pid, nt + l->th_thread_id, &tcb) || !tcb)
		return -EINVAL;
	if ((r = ec_path_check(rp, tcb, th, ec)) <= 0)
		return r;
	/* its objspace's malloc limit is a real one (16 MiB at start, grown by GC) and its GC
	 * mode one of none/marking/sweeping
	 */
	if (interp__read_u64(pid, vm + l->bpf.vm_objspace, &objspace) || !objspace ||
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
		(int)rp->base.pid, rp->file->base.path,
		r == -ENOTSUP ? "pthread key beyond glibc's first block"
		: r           ? strerror(-r)
			      : "never initialised");
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
	bpf->rb.vm_ptr = bias + f->vm_ptr_vaddr;
	if (f->bpf.rb.ec_src == RB_EC_TSD) {
		bpf->rb.tsd_key = bias + f->tsd_key_vaddr;
		bpf->rb.tsd_off = GLIBC_TSD_FROM_TP;
	} else {
		bpf->rb.modid_got = bias + f->modid_got_vaddr;
	}
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
	if (l->first_lineno_int)
		e->first_lineno = (int)(uint32_t)first;
	else
		e->first_lineno = (first & 1) ? (int)((int64_t)first >> 1) : 0;
	e->key.cookie = iseq_size ^ ((uint32_t)first << 16);
	memcpy(&e->src.entries, body + l->body_insns_body, 8);
	memcpy(&e->src.positions, body + l->body_insns_pos, 8);
	memcpy(&e->src.cnt, body + l->body_insns_size, 4);
	memcpy(&e->src.succ, body + l->body_insns_succ, 8);
	e->src.iseq_size = iseq_size;
	if (!e->label)
		return -EFAULT;
	/* the line table, once per iseq: its bytes and the names' count in the cache's cap */
	read_lines(pid, l, &e->src, &e->tab);
	e->key.bytes = (uint32_t)(e->tab.bytes + strlen(e->label) + 1 +
				  (e->base_label ? strlen(e->base_label) + 1 : 0) +
				  (e->path ? strlen(e->path) + 1 : 0));
	return 0;
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

/* The name of class or module klass into out (cap - 1 bytes at most); 0 or < 0. */
static int class_name(const struct ruby_reader *r, uint64_t classpath_id, uint64_t klass, char *out,
		      size_t cap)
{
	struct class_name cn = { .r = r, .classpath_id = classpath_id, .out = out, .cap = cap - 1 };

	if (r->l->ext_classpath)
		return ruby_obj__class_path(r, klass, out, cap - 1);
	if (!classpath_id)
		return -ENOENT;
	return ruby_obj__class_ivars(r, klass, classpath_ivar, &cn) == 1 ? 0 : -ENOENT;
}

/* The class or module a singleton class is attached to; 0 or < 0 (another object's). */
static int singleton_owner(const struct ruby_reader *r, uint64_t singleton, uint64_t *owner)
{
	/* an ivar (__attached__) whose klass is this singleton */
	struct ivar_match m = { .r = r, .want_klass = singleton };
	uint64_t flags;

	if (!r->l->ext_classpath) {
		if (ruby_obj__class_ivars(r, singleton, ivar_match, &m) != 1)
			return -ENOENT;
		*owner = m.value;
		return 0;
	}
	if (ruby_obj__attached(r, singleton, owner) || ruby_obj__flags(r, *owner, &flags) ||
	    ((flags & 0x1f) != RUBY_T_CLASS && (flags & 0x1f) != RUBY_T_MODULE))
		return -ENOENT;
	return 0;
}

/* The qualifier of a method owned by `owner`: "Name#" or, for a singleton class, "Name.". */
static void method_qualifier(const struct ruby_reader *r, uint64_t classpath_id, uint64_t owner,
			     char *out, size_t cap)
{
	uint64_t flags;
	bool singleton;
	size_t n;

	out[0] = '\0';
	if (ruby_obj__flags(r, owner, &flags))
		return;
	singleton = (flags & 0x1f) == RUBY_T_CLASS && (flags & RUBY_FL_SINGLETON);
	if (singleton && singleton_owner(r, owner, &owner))
		return;
	if (class_name(r, classpath_id, owner, out, cap)) {
		out[0] = '\0';
		return;
	}
	n = strlen(out);
	out[n] = singleton ? '.' : '#';
	out[n + 1] = '\0';
}

/* Read the method entry me of process rp from reader into e (zeroed); 0 or -ENOENT (not
 * one, or not the called_id `cookie` when check_cookie).
 */
static int read_method_entry(struct rb_proc *rp, pid_t reader, uint64_t me, uint32_t cookie,
			     bool check_cookie, struct me_entry *e)
{
	const struct rb_layout *l = &rp->file->layout;
	struct ruby_reader r = { .pid = reader, .l = &l->obj };
	uint64_t head[5], def_head;

	/* { flags, defined_class, def, called_id, owner } */
	if (!me || me & 7 || interp__read_mem(reader, me, head, sizeof(head)) ||
	    (head[0] & RB_T_MASK) != RB_T_IMEMO || IMEMO_TYPE(head[0]) != RB_IMEMO_MENT ||
	    (check_cookie && (uint32_t)head[3] != cookie))
		return -ENOENT;
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
	e->cookie = (uint32_t)head[3];
	return 0;
}

/* The method entry me of process rp (cached, else read from reader, then from rp itself, on
 * rp's read budget) in *out: 0, -ENOENT (not one: *out NULL) or -EAGAIN (not read: rp's budget
 * spent, counted).
 */
static int method_entry(struct ruby *rb, struct rb_proc *rp, pid_t reader, uint64_t me,
			uint32_t cookie, bool check_cookie, const struct me_entry **out)
{
	uint64_t slot = lru_sets__slot(
		&rb->me_slots,
		u64_hash(me ^ u64_hash((uint64_t)rp->base.pid << 32 | rp->base.gen)));
	struct me_entry *e = &rb->mes[slot];
	uint64_t start;
	int err;

	*out = NULL;
	if (e->pid == rp->base.pid && e->gen == rp->base.gen && e->me == me &&
	    (!check_cookie || e->cookie == cookie)) {
		*out = e;
		return 0;
	}
	if (!symbol_cache__budget_begin(&rp->base, &start)) {
		rb->stats[RB_STAT_OVER_BUDGET]++;
		return -EAGAIN;
	}
	/* frames may come before the check that finds it (a young process) */
	if (!names_ready(rp) && rp->classpath_tries < CLASSPATH_TRIES) {
		rp->classpath_tries++;
		find_classpath_id(rp);
	}
	rb->stats[RB_STAT_ME_READS]++;
	memset(e, 0, sizeof(*e));
	err = read_method_entry(rp, reader, me, cookie, check_cookie, e);
	if (err && reader != rp->base.pid) { /* the child is gone: its parent has the same */
		memset(e, 0, sizeof(*e));
		err = read_method_entry(rp, rp->base.pid, me, cookie, check_cookie, e);
	}
	symbol_cache__budget_end(&rp->base, start);
	if (err) {
		memset(e, 0, sizeof(*e));
		return err;
	}
	e->pid = names_ready(rp) ? rp->base.pid : 0; /* cached once names can be complete */
	e->gen = rp->base.gen;
	e->me = me;
	*out = e;
	return 0;
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
	int line;

	if (!uf->addr && RB_MARKER_CODE(uf->file_id) == RB_MARKER_UNSUPPORTED) {
		/* the version and why in the code (RB_MARKER_VERSION) */
		unsigned int major = (uf->file_id >> 16) & 0xff, minor = (uf->file_id >> 8) & 0xff;

		if ((uf->file_id >> 24) == RB_REFUSED_BUILD)
			snprintf(rb->text, sizeof(rb->text), "%u.%u build not understood", major,
				 minor);
		else
			snprintf(rb->text, sizeof(rb->text), "unsupported version %u.%u", major,
				 minor);
		return interp__marker(out, rb->text);
	}
	if (!uf->addr)
		return interp__code_marker(out, INTERP_MARKERS(marker_texts), uf->file_id);
	if (pos == RB_POS_CFUNC) {
		if (method_entry(rb, rp, reader, uf->addr, cookie, true, &me) == -EAGAIN)
			return interp__marker(out, SYMBOL_CACHE_OVER_BUDGET);
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
			      &rp->file->layout, out, NULL);
	if (!e)
		return;
	line = e->first_lineno;
	if (pos !=
	    RB_POS_NONE) /* a saved pc points past its instruction (vm_backtrace.c calc_pos) */
		line = tab_line(&e->tab, pos ? pos - 1 : 0);
	me = NULL;
	if (me_addr && method_entry(rb, rp, reader, me_addr, 0, false, &me) == -EAGAIN)
		return interp__marker(out, SYMBOL_CACHE_OVER_BUDGET);
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
