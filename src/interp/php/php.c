/* PHP (the Zend engine), as a runtime of src/interp/interp.h: finds PHP binaries among the
 * mapped files (the CLI phpX.Y, php-fpmX.Y, php-cgiX.Y, libphp*.so), tells the eBPF walk
 * (bpf/interp/php/walk.h) where execute_ex is and how the engine's structures are laid out,
 * tells it where each process's executor_globals are, and turns the (zend_function, line,
 * cookie) frames it emits into `Class::method` / `function` / `{main}`, file and line by reading
 * the process's memory. With opcache's JIT on (PHP 8), the JIT buffer is the process's code
 * range and execute_ex's dispatch frame tells eBPF how a pc there unwinds (php_jit.c).
 *
 * Versions: PHP 7.4, 8.2 and 8.4 (those of Debian 11, 12, 13 and unstable), NTS builds (the
 * executor globals are a plain exported symbol; ZTS builds keep them in TLS) on x86-64. The
 * version is the binary's own ("X-Powered-By: PHP/8.4.27", the header text its SAPIs send), its
 * offsets a table per major.minor (`layouts` below says where they come from); they are checked
 * against every process once its engine has started (executor globals against the compiler
 * globals and the VM stack's page size, the running frames' functions) and a process that
 * fails gets native frames only. On arm64 the same tables (LP64: checked with Debian 12's arm64
 * 8.2), and 8.2's JIT frames (php_jit_arm64.c, the layout's arm64_jit_*). Other versions and ZTS builds get a marker frame that names
 * the version ("[php: unsupported version 8.1]").
 *
 * Invariants: the function cache holds PHP_FUNC_CACHE_CAP entries (../common/symbol_cache.h)
 * keyed by (pid, attach generation, zend_function address), read on the process's read budget,
 * their names (PHP_NAME_MAX bytes each at most) counted in its byte cap; an entry
 * is re-read when the eBPF cookie disagrees with it (a function freed and its memory reused:
 * closures, the per-request functions of FPM without opcache). Each attach gets a new
 * generation.
 */
#include <assert.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "formats/elf_file.h"
#include "interp/common/interp_elf.h"
#include "interp/common/symbol_cache.h"
#include "interp/common/runtime_counters.h"
#include "interp/common/proc_memory.h"
#include "interp/interp.h"
#include "interp/php/php_jit.h"
#include "proc/executable.h"

#define PHP_FUNC_CACHE_CAP 4096
#define PHP_NAME_MAX 512 /* bytes of a function, class or file name kept */
#define PHP_FRAMES_CHECKED 32
#define CHECK_INTERVAL_NS (100 * 1000 * 1000ULL)
#define CHECK_INTERVAL_IDLE_NS (1000 * 1000 * 1000ULL) /* after CHECK_FAST_TRIES */
#define CHECK_FAST_TRIES 100
/* The JIT buffer is looked for this often in the first JIT_FAST_LOOKS looks (a second) before
 * the engine starts: opcache makes it at start-up, some 50 ms after the exec that attached the
 * process, and JIT code runs right after; until it is known, its pcs cannot be placed. In a
 * started engine, opcache's segment without an executable part JIT_OFF_LOOKS looks in a row
 * says "JIT off" (while the JIT compiles, that part is writable instead, for milliseconds).
 */
#define JIT_LOOK_INTERVAL_NS (10 * 1000 * 1000ULL)
#define JIT_FAST_LOOKS 100
#define JIT_OFF_LOOKS 5
#define FRAME_CHECK_FAILS 3 /* consecutive failed checks of the running frames that reject */
/* zend_execute.c: ZEND_VM_STACK_PAGE_SLOTS (16 * 1024) zvals of 16 bytes. */
#define ZEND_VM_STACK_PAGE_SIZE (16 * 1024 * 16)
#define ZEND_VM_KIND_CALL 1
#define ZEND_VM_KIND_HYBRID 4
#define PHP_OP_READ_MAX 192 /* bytes of a zend_op_array read, the most of any layout's op_size */
#define FUNC_FILE_CODE 0xff /* a func_entry of file-level code, keyed by its file name */
#define FUNC_KIND_FILE 1    /* its cache key's kind: addr is a file name, not a function */

/* Everything known about one version's layout (x86-64, NTS). */
struct php_layout {
	uint8_t major, minor;
	struct php_offsets bpf;
	uint16_t eg_vm_stack_page_size; /* zend_executor_globals.vm_stack_page_size */
	uint16_t eg_function_table;     /* zend_executor_globals.function_table */
	uint16_t cg_function_table;     /* zend_compiler_globals.function_table */
	uint16_t fn_scope;              /* zend_function.common.scope */
	uint16_t op_line_start;         /* zend_function.op_array.line_start */
	uint16_t op_size;               /* bytes of a zend_op_array to read (through line_start) */
	uint16_t ce_name;               /* zend_class_entry.name */
	uint16_t str_len, str_val;      /* zend_string.len, .val */
	uint16_t jit_exit_save;         /* bpf_abi.h php_proc_abi.jit_exit_save (0: no JIT) */
	/* arm64's JIT (0: its frames not placed there): php_proc_abi.jit_spad, jit_exit_save */
	uint16_t arm64_jit_spad, arm64_jit_exit_save;
};

/* The layouts of the versions walked, as the compiler lays out the structs of
 * Zend/zend_globals.h (_zend_executor_globals, _zend_compiler_globals), Zend/zend_compile.h
 * (_zend_execute_data, _zend_op_array, zend_function's common part, _zend_op) and
 * Zend/zend_types.h (_zend_string, _zend_class_entry): offsetof() over Debian's phpX.Y-dev
 * headers, the headers each binary was built from (7.4.33-1+deb11u5 /usr/include/php/20190902,
 * 8.2.32-1~deb12u1 .../20220829, 8.4.27-1~deb13u1 .../20240924; the same structs as php-src's
 * tags php-7.4.33, php-8.2.x and php-8.4.x). The same values as the otel profiler's tables where
 * it has them (EG.current_execute_data 488, execute_data 0/24/40/48, zend_op.lineno 24,
 * op_array.filename 136/152/168).
 *
 * Between the versions only zend_op_array's own part moves, as the common part before it grows:
 * 7.4's ends with arg_info (`last` at 60, opcodes 64), 8.0 adds attributes, T and
 * run_time_cache to it (8.2: 80, 88), 8.4 doc_comment and prop_info (96, 104). The offsets
 * the walk reads in the executor globals, zend_execute_data, the common part's type, name and
 * scope, zend_op, zend_string and zend_class_entry.name are the same in the three.
 */
/* ex_type_info: This (32) + zval.u1.type_info (8) */
#define PHP_COMMON_OFFSETS                                                                 \
	.eg_current_execute_data = 488, .ex_opline = 0, .ex_func = 24, .ex_type_info = 40, \
	.ex_prev = 48, .fn_type = 0, .fn_name = 8, .zop_lineno = 24, .zop_size = 32
#define PHP_COMMON_LAYOUT                                                                \
	.eg_vm_stack_page_size = 480, .eg_function_table = 432, .cg_function_table = 56, \
	.fn_scope = 16, .ce_name = 8, .str_len = 16, .str_val = 24

static const struct php_layout layouts[] = {
	{
		.major = 7,
		.minor = 4,
		.bpf = { PHP_COMMON_OFFSETS, .op_last = 60, .op_opcodes = 64, .op_filename = 136 },
		PHP_COMMON_LAYOUT,
		.op_line_start = 144,
		.op_size = 148,
	},
	{
		.major = 8,
		.minor = 2,
		.bpf = { PHP_COMMON_OFFSETS, .op_last = 80, .op_opcodes = 88, .op_filename = 152 },
		PHP_COMMON_LAYOUT,
		.op_line_start = 160,
		.op_size = 164,
		/* zend_jit_x86.dasc's trace exit: the exit point's push, then the stub's
		 * `sub r4, 16*8+16*8-8` (seen in FPM workers compiling traces)
		 */
		.jit_exit_save = 256,
		/* zend_jit_arm64.dasc's, read in Debian 12's arm64 8.2.x JIT buffer (opcache.jit_debug's
		 * perf map names the code): traces and functions start with `sub sp, sp, #0x20` and
		 * leave with `add sp, sp, #0x20; br`; an exit point is a `bl` (no push) to the
		 * trace_exit stub, which stores 32 general and 32 FP registers (0x200) before its
		 * call of zend_jit_trace_exit
		 */
		.arm64_jit_spad = 32,
		.arm64_jit_exit_save = 512,
	},
	{
		.major = 8,
		.minor = 4,
		.bpf = { PHP_COMMON_OFFSETS, .op_last = 96, .op_opcodes = 104, .op_filename = 168 },
		PHP_COMMON_LAYOUT,
		.op_line_start = 176,
		.op_size = 180,
		/* the IR JIT's trace exit (ir_x86.dasc EXITCALL): the exit point's push, then
		 * `sub $0x108, %rsp` (16 + 16 slots of 8 and 8 of alignment), read in trixie's
		 * 8.4.27 JIT buffer before its call of zend_jit_trace_exit
		 */
		.jit_exit_save = 272,
	},
};

struct php_file {
	struct interp_file_base base;
	struct interp_file bpf; /* ranges, version, offsets */
	struct php_layout layout;
	uint64_t eg_vaddr;    /* executor_globals */
	uint64_t cg_vaddr;    /* compiler_globals, 0 when not exported */
	uint64_t vm_dispatch; /* execute_ex's dispatch jump (php_jit.h), 0: JIT frames not placed */
	uint32_t vm_frame;    /* execute_ex's frame size there (sp to CFA) */
	uint32_t vm_ra;       /* sp there to its saved return address */
	uint16_t jit_spad, jit_exit_save; /* this architecture's (php_proc_abi) */
};

enum php_proc_state {
	PHP_PROC_PENDING = 0, /* the engine has not started yet (an FPM master never runs PHP) */
	PHP_PROC_GLOBALS_OK,  /* executor globals checked; frames not seen yet */
	PHP_PROC_VERIFIED,    /* running frames checked too */
	PHP_PROC_REJECTED,
};

struct php_proc {
	struct interp_proc_base base;
	struct php_file *file;
	uint64_t eg, cg; /* absolute executor_globals, compiler_globals (0: unknown) */
	enum php_proc_state state;
	unsigned int tries;
	unsigned int frame_failures; /* consecutive failed frame checks */
	uint64_t next_check_ns;
	bool jit_done;               /* the JIT buffer was found, or cannot be any more */
	unsigned int jit_looks;      /* times it was looked for */
	unsigned int jit_off_looks;  /* ... in a row in a started engine, found not executable */
	uint64_t next_jit_ns;        /* when to look for it again */
	uint64_t jit_start, jit_end; /* the JIT buffer (opcache.jit on), the code range */
};

struct func_entry {
	struct symbol_cache_key key; /* addr: the zend_function (or file name) */
	uint8_t type;                /* zend_function.type, or FUNC_FILE_CODE */
	char *name;                  /* "Class::method", "function"; NULL for file-level code */
	char *file;                  /* NULL for internal functions */
};

/* Our own counters (php_runtime.stat_names). */
#define PHP_STATS(X)                                              \
	/* layouts checked against running frames */              \
	X(PHP_STAT_VERIFIED, "layouts verified")                  \
	/* zend_functions read from process memory */             \
	X(PHP_STAT_FUNC_READS, "functions read")                  \
	/* frames whose function could not be read */             \
	X(PHP_STAT_UNREADABLE, "functions unreadable")            \
	/* cookie mismatch: function freed and reused */          \
	X(PHP_STAT_STALE, "functions stale")                      \
	/* functions not read: the process's read budget spent */ \
	X(PHP_STAT_OVER_BUDGET, "reads over budget")

enum php_stat { PHP_STATS(INTERP_LIST_ENUM) PHP_STAT_CNT };

struct php {
	struct symbol_cache funcs;
	uint64_t stats[PHP_STAT_CNT];
	char marker[48]; /* the last "unsupported version X.Y" marker's text */
};

static void func_entry__clear(void *ctx, void *entry)
{
	struct func_entry *e = entry;

	(void)ctx;
	free(e->name);
	free(e->file);
}

/* What the cache counts (stats[]) and the markers it gives. */
static const struct symbol_cache_report cache_report = {
	PHP_STAT_FUNC_READS,   PHP_STAT_UNREADABLE, PHP_STAT_STALE, PHP_STAT_OVER_BUDGET, -1,
	"function unreadable", "function reused"
};

static int php_init(void *rt)
{
	struct php *php = rt;

	return symbol_cache__init(&php->funcs, PHP_FUNC_CACHE_CAP, sizeof(struct func_entry), false,
				  func_entry__clear, NULL, &cache_report, php->stats);
}

static void php_fini(void *rt)
{
	symbol_cache__free(&((struct php *)rt)->funcs);
}

/* ---- detection ---- */

/* The symbols detection looks up (interp_elf__symbols): X(ID, "name") entries that make the
 * enum and sym_names (INTERP_LIST_ENUM / INTERP_LIST_TEXT).
 */
#define PHP_SYMS(X)                                                   \
	X(SYM_EG, "executor_globals")               /* NTS */         \
	X(SYM_EG_OFFSET, "executor_globals_offset") /* a ZTS build */ \
	X(SYM_CG, "compiler_globals")                                 \
	X(SYM_EXECUTE_EX, "execute_ex")                               \
	X(SYM_CALL_FUNCTION, "zend_call_function")                    \
	X(SYM_VM_KIND, "zend_vm_kind")

enum php_sym { PHP_SYMS(INTERP_LIST_ENUM) SYM_CNT };

static const char *const sym_names[SYM_CNT] = { PHP_SYMS(INTERP_LIST_TEXT) };

static bool name_is_php(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "php", 3) || !strncmp(base, "libphp", 6);
}

/* The version from the "X-Powered-By: PHP/8.2.36" header text the SAPIs send; 0 or -ENOENT. */
static int find_version(struct elf_file *ef, int *major, int *minor)
{
	static const char tag[] = "X-Powered-By: PHP/";
	struct elf_section ro;
	const char *p;

	if (elf_file__section(ef, ".rodata", &ro) || !ro.data || ro.size < sizeof(tag) + 4)
		return -ENOENT;
	p = memmem(ro.data, ro.size - 4, tag, sizeof(tag) - 1);
	if (!p)
		return -ENOENT;
	p += sizeof(tag) - 1;
	if (p[0] < '5' || p[0] > '9' || p[1] != '.' || p[2] < '0' || p[2] > '9')
		return -ENOENT;
	*major = p[0] - '0';
	*minor = p[2] - '0';
	return 0;
}

/* The layout of PHP major.minor, or NULL. */
static const struct php_layout *find_layout(int major, int minor)
{
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		assert(layouts[i].op_size <= PHP_OP_READ_MAX &&
		       layouts[i].bpf.op_opcodes + 8 <= PHP_FN_READ_SZ);
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	}
	return NULL;
}

/* ZEND_VM_KIND from zend_vm_kind()'s code, `mov $kind, %eax; ret` (after an endbr64 in a CET
 * build: Debian 13's 8.4); arm64: `mov w0, #kind; ret` (movz, Debian 12's arm64 8.2); 0 when
 * unknown.
 */
static int vm_kind(struct elf_file *ef, const struct interp_sym *sym)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	const uint8_t *b;
	size_t avail;
	uint32_t kind, insn[2];

	if (!sym->found || elf_file__bytes_at_vaddr(ef, sym->addr, (const void **)&b, &avail))
		return 0;
	if (elf_file__machine(ef) == EM_AARCH64) {
		if (avail < sizeof(insn))
			return 0;
		memcpy(insn, b, sizeof(insn));
		/* movz w0, #imm16 (0x52800000 | imm16 << 5), then ret (0xd65f03c0) */
		if ((insn[0] & 0xffe0001fu) != 0x52800000u || insn[1] != 0xd65f03c0u)
			return 0;
		kind = (insn[0] >> 5) & 0xffff;
		return kind <= 4 ? (int)kind : 0;
	}
	if (avail >= 10 && !memcmp(b, endbr64, sizeof(endbr64))) {
		b += sizeof(endbr64);
		avail -= sizeof(endbr64);
	}
	if (avail < 6 || b[0] != 0xb8 || b[5] != 0xc3)
		return 0;
	memcpy(&kind, b + 1, 4);
	return kind <= 4 ? (int)kind : 0;
}

/* execute_ex's dispatch frame and the JIT's stack use for f's architecture; f->vm_dispatch
 * stays 0 (JIT frames not placed) where the code is not understood.
 */
static void find_vm_frame(struct elf_file *ef, const struct interp_sym *ex, struct php_file *f)
{
	const uint8_t *code;
	size_t avail;

	f->vm_dispatch = 0;
	if (elf_file__machine(ef) == EM_X86_64 &&
	    !php_jit__vm_frame(ef, ex->addr, ex->size, &f->vm_dispatch, &f->vm_frame)) {
		f->vm_ra = f->vm_frame - 8; /* pushed by the call, at the CFA's edge */
		f->jit_exit_save = f->layout.jit_exit_save;
	} else if (elf_file__machine(ef) == EM_AARCH64 && f->layout.arm64_jit_spad &&
		   !elf_file__bytes_at_vaddr(ef, ex->addr, (const void **)&code, &avail) &&
		   !php_jit__vm_frame_arm64(code, avail < ex->size ? avail : ex->size, ex->addr,
					    &f->vm_dispatch, &f->vm_frame, &f->vm_ra)) {
		f->jit_spad = f->layout.arm64_jit_spad;
		f->jit_exit_save = f->layout.arm64_jit_exit_save;
	} else {
		f->vm_dispatch = 0;
	}
}

static int detect(const struct executable *exe, struct php_file *f)
{
	struct interp_sym syms[SYM_CNT];
	const struct php_layout *l;
	int major = 0, minor = 0, kind;

	if (!exe->elf || !name_is_php(exe->path))
		return -ENOENT;
	interp_elf__symbols(exe->elf, sym_names, SYM_CNT, syms);
	if (!syms[SYM_EXECUTE_EX].found || !syms[SYM_EXECUTE_EX].size ||
	    (!syms[SYM_EG].found && !syms[SYM_EG_OFFSET].found))
		return -ENOENT; /* not the engine (a php wrapper script's interpreter, a tool) */
	find_version(exe->elf, &major, &minor);
	kind = vm_kind(exe->elf, &syms[SYM_VM_KIND]);
	f->bpf.major = (uint8_t)major;
	f->bpf.minor = (uint8_t)minor;
	f->bpf.range_start[0] = syms[SYM_EXECUTE_EX].addr;
	f->bpf.range_end[0] = syms[SYM_EXECUTE_EX].addr + syms[SYM_EXECUTE_EX].size;
	if (syms[SYM_CALL_FUNCTION].found && syms[SYM_CALL_FUNCTION].size) {
		f->bpf.range_start[1] = syms[SYM_CALL_FUNCTION].addr;
		f->bpf.range_end[1] = syms[SYM_CALL_FUNCTION].addr + syms[SYM_CALL_FUNCTION].size;
	}
	f->eg_vaddr = syms[SYM_EG].addr;
	f->cg_vaddr = syms[SYM_CG].found ? syms[SYM_CG].addr : 0;
	f->bpf.supported = 0;
	f->bpf.php.zts = !syms[SYM_EG].found;
	l = find_layout(major, minor);
	if (l && syms[SYM_EG].found) {
		f->layout = *l;
		/* HYBRID needs GCC's global registers (Zend/zend_vm_opcodes.h); on x86-64 they are
		 * r14 (execute_data) and r15 (opline), on arm64 x27 and x28 (Zend/zend_execute.c),
		 * which eBPF reads into the same cursor slots (bpf/arch/sample_regs.h).
		 */
		f->layout.bpf.vm_regs = kind == ZEND_VM_KIND_HYBRID;
		f->bpf.supported = 1;
		f->bpf.php.off = f->layout.bpf;
		/* opcache's JIT: PHP 8.0 on, its dispatch frame read from execute_ex's code (arm64:
		 * where the layout has its JIT's stack use, 8.2)
		 */
		if (kind == ZEND_VM_KIND_HYBRID && major >= 8)
			find_vm_frame(exe->elf, &syms[SYM_EXECUTE_EX], f);
	}
	pr_debug("php: %s: PHP %d.%d%s, execute_ex %#llx-%#llx, VM kind %d, dispatch %#llx (frame "
		 "%u, return address at sp + %u)\n",
		 exe->path, major, minor, syms[SYM_EG].found ? "" : " (ZTS)",
		 (unsigned long long)f->bpf.range_start[0], (unsigned long long)f->bpf.range_end[0],
		 kind, (unsigned long long)f->vm_dispatch, f->vm_frame, f->vm_ra);
	return 0;
}

static int php_file_detect(void *rt, const struct executable *exe, void *file_state,
			   struct interp_file *bpf)
{
	struct php_file *f = file_state;

	(void)rt;
	if (detect(exe, f))
		return -ENOENT;
	*bpf = f->bpf;
	return 0;
}

/* A zend_string's text (malloc'ed, scrubbed), or NULL. */
static char *read_zstr(pid_t pid, uint64_t addr, const struct php_layout *l)
{
	uint64_t len;

	if (!addr || interp__read_u64(pid, addr + l->str_len, &len))
		return NULL;
	return interp__read_text(pid, addr + l->str_val, len > PHP_NAME_MAX ? PHP_NAME_MAX : len);
}

/* ---- per-process attach and layout check ---- */

/* The executor globals of a started engine: its VM stack pages have Zend's size and its
 * function table is the compiler's. 1 checked, 0 not started yet, < 0 wrong layout.
 */
static int check_globals(struct php_proc *pp)
{
	const struct php_layout *l = &pp->file->layout;
	uint64_t page, eg_ft, cg_ft = 0;

	if (interp__read_u64(pp->base.pid, pp->eg + l->eg_vm_stack_page_size, &page) ||
	    interp__read_u64(pp->base.pid, pp->eg + l->eg_function_table, &eg_ft) ||
	    (pp->cg && interp__read_u64(pp->base.pid, pp->cg + l->cg_function_table, &cg_ft)))
		return -EFAULT;
	if (!page)
		return 0;
	if (page != ZEND_VM_STACK_PAGE_SIZE || !eg_ft || (pp->cg && eg_ft != cg_ft))
		return -EINVAL;
	return 1;
}

/* The running frames, if any: every function has a possible type, user code a file name and
 * an opline inside its opcodes. 1 checked, 0 no frame running, < 0 wrong layout.
 */
static int check_frames(struct php_proc *pp)
{
	const struct php_layout *l = &pp->file->layout;
	const struct php_offsets *o = &l->bpf;
	uint8_t ex[PHP_EX_READ_SZ], fn[PHP_OP_READ_MAX];
	uint64_t cur, func, opline, opcodes, file, len;
	uint32_t last;
	int n = 0, steps = 0;

	if (interp__read_u64(pp->base.pid, pp->eg + o->eg_current_execute_data, &cur))
		return -EFAULT;
	while (cur && steps++ < PHP_FRAMES_CHECKED) {
		if (interp__read_mem(pp->base.pid, cur, ex, sizeof(ex)))
			return -EFAULT;
		memcpy(&func, ex + o->ex_func, 8);
		memcpy(&opline, ex + o->ex_opline, 8);
		memcpy(&cur, ex + o->ex_prev, 8);
		if (!func)
			continue;
		if (interp__read_mem(pp->base.pid, func, fn, PHP_FN_READ_SZ))
			return -EINVAL;
		n++;
		if (fn[o->fn_type] == PHP_ZEND_INTERNAL_FUNCTION)
			continue;
		if (fn[o->fn_type] != PHP_ZEND_USER_FUNCTION &&
		    fn[o->fn_type] != PHP_ZEND_EVAL_CODE)
			return -EINVAL;
		if (interp__read_mem(pp->base.pid, func, fn, l->op_size))
			return -EINVAL;
		memcpy(&opcodes, fn + o->op_opcodes, 8);
		memcpy(&last, fn + o->op_last, 4);
		memcpy(&file, fn + o->op_filename, 8);
		if (!opcodes || !last || !file ||
		    interp__read_u64(pp->base.pid, file + l->str_len, &len) || !len || len > 4096)
			return -EINVAL;
		/* The innermost frame's saved opline may predate its first SAVE_OPLINE. */
		if (n > 1 && (opline < opcodes || opline - opcodes >= (uint64_t)last * o->zop_size))
			return -EINVAL;
	}
	return n ? 1 : 0;
}

static int proc_check(struct php *php, struct php_proc *pp, uint64_t now_ns)
{
	int r = 0;

	if (pp->state == PHP_PROC_PENDING) {
		r = check_globals(pp);
		if (r > 0) {
			pp->state = PHP_PROC_GLOBALS_OK;
			pr_debug("php: pid %d: executor globals checked\n", (int)pp->base.pid);
		}
	}
	if (pp->state == PHP_PROC_GLOBALS_OK) {
		r = check_frames(pp);
		if (r > 0) {
			pp->state = PHP_PROC_VERIFIED;
			php->stats[PHP_STAT_VERIFIED]++;
			pr_debug("php: pid %d: layout verified on running frames\n",
				 (int)pp->base.pid);
			return 0;
		}
		/* Frames change while they are read (a closure freed between two reads): only a
		 * failure that repeats rejects.
		 */
		if (r == -EINVAL && ++pp->frame_failures < FRAME_CHECK_FAILS)
			r = 0;
		else if (r != -EINVAL)
			pp->frame_failures = 0;
	}
	if (r == -EINVAL) {
		pp->state = PHP_PROC_REJECTED;
		pr_warn("php: pid %d (%s): engine layout check failed: native frames only\n",
			(int)pp->base.pid, pp->file->base.path);
		return -EINVAL;
	}
	/* Not started, no frame yet, or unreadable right now (exiting): eBPF checks each frame's
	 * function type anyway. Checked again, less often after a while (idle FPM workers).
	 */
	pp->tries++;
	pp->next_check_ns = now_ns + (pp->tries < CHECK_FAST_TRIES ? CHECK_INTERVAL_NS
								   : CHECK_INTERVAL_IDLE_NS);
	return 0;
}

static int php_proc_attach(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			   void *proc_state, struct interp_proc *bpf)
{
	struct php_file *f = file_state;
	struct php_proc *pp = proc_state;

	(void)rt;
	pp->file = f;
	pp->eg = bias + f->eg_vaddr;
	pp->cg = f->cg_vaddr ? bias + f->cg_vaddr : 0;
	pp->next_check_ns = now_ns;
	bpf->php.executor_globals = pp->eg;
	if (f->vm_dispatch) {
		bpf->php.vm_entry = bias + f->bpf.range_start[0];
		bpf->php.vm_dispatch = bias + f->vm_dispatch;
		bpf->php.vm_frame = f->vm_frame;
		bpf->php.vm_ra = f->vm_ra;
		bpf->php.jit_spad = f->jit_spad;
		bpf->php.jit_exit_save = f->jit_exit_save;
	}
	pp->jit_done = !f->vm_dispatch;
	pr_debug("php: pid %d: %s, executor_globals at %#llx\n", (int)pp->base.pid, f->base.path,
		 (unsigned long long)pp->eg);
	return 0;
}

static int php_proc_tick(void *rt, void *proc_state, uint64_t now_ns)
{
	struct php_proc *pp = proc_state;

	if (pp->state == PHP_PROC_REJECTED)
		return -EINVAL;
	if (pp->state != PHP_PROC_VERIFIED && pp->next_check_ns <= now_ns)
		return proc_check(rt, pp, now_ns);
	return 0;
}

/* The JIT buffer as the process's code range, once opcache has mapped it (at its module
 * start-up, before the engine runs a script: a started engine without opcache's segment, or
 * with it but without an executable part JIT_OFF_LOOKS times in a row, or a segment without one
 * 10 s after attach, has no JIT). Looked for every JIT_LOOK_INTERVAL_NS for a second until the
 * engine starts, then at the check intervals.
 */
static int php_proc_refresh(void *rt, void *proc_state, uint64_t now_ns, struct interp_proc *bpf,
			    struct interp_code_range *code)
{
	struct php_proc *pp = proc_state;
	bool started = pp->state == PHP_PROC_GLOBALS_OK || pp->state == PHP_PROC_VERIFIED;
	uint64_t interval = CHECK_INTERVAL_IDLE_NS;
	int err;

	(void)rt;
	(void)bpf;
	if (pp->jit_done || pp->next_jit_ns > now_ns)
		return 0;
	if (++pp->jit_looks < JIT_FAST_LOOKS && !started)
		interval = JIT_LOOK_INTERVAL_NS;
	else if (pp->tries < CHECK_FAST_TRIES)
		interval = CHECK_INTERVAL_NS;
	pp->next_jit_ns = now_ns + interval;
	err = php_jit__find_buffer(pp->base.pid, &pp->jit_start, &pp->jit_end);
	if (err) {
		/* the segment is mapped before its JIT part is made executable (and that part is
		 * writable instead while the JIT compiles): before the engine starts, a segment
		 * without one says "JIT off" only once start-up is long over (an FPM master never
		 * starts its engine); no segment in a started engine, "no opcache"
		 */
		if (err == -ENODATA && started)
			pp->jit_done = ++pp->jit_off_looks >= JIT_OFF_LOOKS;
		else if (err == -ENODATA)
			pp->jit_done = pp->tries >= CHECK_FAST_TRIES;
		else
			pp->jit_done = started;
		return 0;
	}
	pp->jit_done = true;
	code[0] = (struct interp_code_range){ .start = pp->jit_start, .end = pp->jit_end };
	pr_debug("php: pid %d: JIT buffer %#llx-%#llx\n", (int)pp->base.pid,
		 (unsigned long long)pp->jit_start, (unsigned long long)pp->jit_end);
	return 1;
}

/* ---- symbolization ---- */

/* Read the zend_function at func into e; 0 or -errno. */
static int read_func(pid_t pid, uint64_t func, const struct php_layout *l, struct func_entry *e)
{
	const struct php_offsets *o = &l->bpf;
	uint8_t fn[PHP_OP_READ_MAX];
	uint64_t name, scope, cls = 0, opcodes, file;
	char *fname, *cname = NULL;

	if (interp__read_mem(pid, func, fn, PHP_FN_READ_SZ))
		return -EFAULT;
	e->type = fn[o->fn_type];
	memcpy(&name, fn + o->fn_name, 8);
	memcpy(&scope, fn + l->fn_scope, 8);
	if (e->type == PHP_ZEND_INTERNAL_FUNCTION) {
		e->key.cookie = (uint32_t)name;
	} else if (e->type == PHP_ZEND_USER_FUNCTION || e->type == PHP_ZEND_EVAL_CODE) {
		if (interp__read_mem(pid, func, fn, l->op_size))
			return -EFAULT;
		memcpy(&opcodes, fn + o->op_opcodes, 8);
		memcpy(&file, fn + o->op_filename, 8);
		e->key.cookie = (uint32_t)opcodes;
		e->file = read_zstr(pid, file, l);
	} else {
		return -EINVAL;
	}
	if (!name)
		return 0; /* file-level code (eBPF emits those as PHP_FRAME_FILE) */
	fname = read_zstr(pid, name, l);
	if (!fname)
		return -EFAULT;
	if (scope && !interp__read_u64(pid, scope + l->ce_name, &cls))
		cname = read_zstr(pid, cls, l);
	if (cname) {
		size_t n = strlen(cname) + strlen(fname) + 3;

		e->name = malloc(n);
		if (e->name)
			snprintf(e->name, n, "%s::%s", cname, fname);
		free(cname);
		free(fname);
		return e->name ? 0 : -ENOMEM;
	}
	e->name = fname;
	return 0;
}

/* What an entry holds beyond itself (its key.bytes: counted in the cache's byte cap). */
static uint32_t func_entry__bytes(const struct func_entry *e)
{
	return (uint32_t)((e->name ? strlen(e->name) + 1 : 0) +
			  (e->file ? strlen(e->file) + 1 : 0));
}

static int read_function(const void *ctx, pid_t pid, uint64_t addr, void *entry)
{
	struct func_entry *e = entry;
	int err = read_func(pid, addr, ctx, e);

	e->key.bytes = func_entry__bytes(e);
	return err;
}

/* The file name of file-level code at addr (symbol_cache_read_fn; ctx: the layout). */
static int read_file_code(const void *ctx, pid_t pid, uint64_t addr, void *entry)
{
	const struct php_layout *l = ctx;
	struct func_entry *e = entry;

	e->type = FUNC_FILE_CODE;
	e->key.cookie = 0;
	e->file = read_zstr(pid, addr, l);
	e->key.bytes = func_entry__bytes(e);
	return e->file ? 0 : -EFAULT;
}

static const struct interp_marker_text marker_texts[] = {
	{ PHP_MARKER_TRUNCATED, "more frames truncated" },
	{ PHP_MARKER_READ_FAILED, "frame unreadable" },
	{ PHP_MARKER_BAD_FRAME, "bad frame" },
	{ PHP_MARKER_JIT_FRAME, "JIT frame not placed" },
	{ PHP_MARKER_MIXED, "below another interpreter" },
};

static const char *code_name(uint32_t flags)
{
	if (flags & PHP_FRAME_EVAL)
		return "{eval}";
	if ((flags & PHP_FRAME_CODE) && !(flags & PHP_FRAME_TOP))
		return "{include}";
	return "{main}";
}

static void php_symbolize(void *rt, void *proc_state, pid_t reader, const struct user_frame *uf,
			  struct interp_symbol *out)
{
	uint32_t cookie = (uint32_t)uf->file_id;
	uint32_t flags = (uint32_t)(uf->file_id >> PHP_FRAME_FLAGS_SHIFT) & 0xff;
	bool file = flags & PHP_FRAME_FILE;
	struct php *php = rt;
	struct php_proc *pp = proc_state;
	const struct func_entry *e;

	if (!uf->addr && PHP_MARKER_CODE(uf->file_id) == PHP_MARKER_UNSUPPORTED) {
		snprintf(php->marker, sizeof(php->marker), "unsupported version %u.%u%s",
			 (unsigned)(uf->file_id >> 16) & 0xff, (unsigned)(uf->file_id >> 8) & 0xff,
			 (uf->file_id >> 24) & 1 ? " ZTS" : "");
		return interp__marker(out, php->marker);
	}
	if (!uf->addr)
		return interp__code_marker(out, INTERP_MARKERS(marker_texts), uf->file_id);
	/* A forked FPM worker shares its parent's functions at the same addresses until it
	 * compiles its own (the cookie tells). A file name string is the whole entry: cookie 0.
	 */
	e = symbol_cache__get(&php->funcs, &pp->base, reader, uf->addr, file ? 0 : cookie,
			      file ? FUNC_KIND_FILE : 0, file ? read_file_code : read_function,
			      &pp->file->layout, out, NULL);
	if (!e)
		return;
	*out = (struct interp_symbol){
		.function = e->name ? e->name : code_name(flags),
		.file = e->file,
		.line = (int)(uf->file_id >> PHP_FRAME_LINE_SHIFT),
	};
}

const struct interp_runtime php_runtime = {
	.name = "php",
	.frame_type = "php", /* the reference agent's value for PHP frames */
	.frame_kind = FRAME_KIND_PHP,
	INTERP_RUNTIME_COUNTERS(PHP_COUNTERS, PHP_COUNTER_CNT, PHP_STATS, struct php),
	.init = php_init,
	.fini = php_fini,
	.file_state_sz = sizeof(struct php_file),
	.file_detect = php_file_detect,
	.proc_state_sz = sizeof(struct php_proc),
	.proc_attach = php_proc_attach,
	.proc_tick = php_proc_tick,
	.proc_refresh = php_proc_refresh,
	.symbolize = php_symbolize,
};
