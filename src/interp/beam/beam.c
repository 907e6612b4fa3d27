/* The BEAM (Erlang/OTP emulator, beam.smp) as a runtime of src/interp/interp.h: finds the
 * emulator among the mapped files and tells eBPF, per process, where its JIT code is and how to
 * get from Erlang code back to the scheduler's native frames (bpf/interp/beam/bpf_abi.h has the
 * layout, bpf/interp/beam/walk.h the walk).
 *
 * Per file (beam.smp, JIT flavour: OTP 24 and later on x86-64; on arm64, Debian 12's OTP 25,
 * process_main by its symbol and its calls as `bl`, walked in part: docs/ARCHITECTURE.md "BEAM"):
 *  - process_main, the C wrapper every normal scheduler calls once and which jumps to the JIT's
 *    own process_main: its .dynsym symbol (OTP 24-27), else the one function in .text shaped
 *    as that wrapper ends (`mov %rbx,%rdi`, `mov (%rax),%rax`, `jmp *%rax` within a few bytes,
 *    after the lookup of the JIT's label: OTP 29, whose .dynsym keeps the NIF API only);
 *  - the return addresses of its calls (`call rel32` in .text whose target is process_main):
 *    one in every build measured, sched_thread_func's;
 *  - beam_normal_exit (.dynsym, OTP 24-27), the variable holding the CP at the bottom of every
 *    process's stack, read from the process once the emulator has set it.
 * Measured on Debian's builds (OTP 25.2.3, 27.3.4.1, 29.1.2): the return address lies 0x40c8
 * (25) or 0x40b8 (27, 29) bytes above rbx (the registers' x register array), so the window
 * searched is 32 words from rbx + 0x4000. The emulator flavour (`emu`, OTP 23) runs Erlang
 * code in C (process_main is native code with its own unwind information): no code range;
 * its process_main (.dynsym, with its size) is the file range where eBPF walks the Erlang
 * frames from the loop's registers (OTP 23 on x86-64, its layout found in the file:
 * beam_emu.h) or puts a marker (other releases: refused), and the native walk goes on.
 *
 * Per process: the JIT's process_main (the scheduler loop, whose native calls have no Erlang
 * caller), the range "global::process_main" of the shared code's debugger record ("global"),
 * looked for at every refresh (BEAM_RETRY_NS) until found: eBPF walks the process (ready) only
 * once it is known, so that no call of the loop is taken for Erlang code's native call (OTP
 * 27's boot runs the loop most in its first 200 ms);
 * the JIT code, the executable views of its memfd ("/memfd:vmem") or anonymous
 * executable mappings, read from /proc/PID/maps at attach and every BEAM_MAPS_NS after (the
 * JIT maps more as modules load), at most INTERP_CODE_RANGES ranges.
 *
 * Untrusted input: the file's bytes are read through elf_file, bounded by .text; the process's
 * maps are parsed line by line with bounded fields.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "formats/elf_file.h"
#include "interp/beam/beam_debug.h"
#include "interp/beam/beam_elixir.h"
#include "interp/beam/beam_emu.h"
#include "interp/common/interp_elf.h"
#include "interp/common/proc_memory.h"
#include "interp/common/runtime_counters.h"
#include "interp/common/symbol_cache.h"
#include "interp/interp.h"
#include "proc/executable.h"

#if defined(__aarch64__)
/* arm64: from x19, the registers' struct itself (16.5 KiB: aux, x and f register arrays),
 * which the JIT's process_main placed 64-127 bytes below its frame record
 */
#define BEAM_SCHED_WIN 0x40c0
#else
#define BEAM_SCHED_WIN 0x4000 /* bytes from rbx to the window searched */
#endif
#define BEAM_MAPS_NS (1000 * 1000000ULL) /* a JIT process's maps read again this often */
#define BEAM_RETRY_NS (50 * 1000000ULL)  /* ... and its records looked for, until found */
#define BEAM_SCHED_TRIES \
	200                  /* reads of the records looking for process_main
					   * (every BEAM_RETRY_NS: 10 s) */
#define BEAM_WRAPPER_BACK 64 /* bytes before the wrapper's tail to its start */
#define BEAM_EMU_LOOP_MIN \
	4096 /* bytes of the emulator flavour's process_main, at
					  * least (OTP 23's: 48 KiB; the JIT's wrapper: tens) */

#define BEAM_MODULES_CAP 16384                  /* modules per process */
#define BEAM_RECORD_MAX (8u << 20)              /* bytes of one module's debugger record */
#define BEAM_RESCAN_NS (200 * 1000000ULL)       /* a pc in no module: the list read again after */
#define BEAM_DESC_SCAN_MAX (4u << 20)           /* bytes of .data searched for the descriptor */
#define BEAM_PLACE_CACHE 4096                   /* symbolized pcs kept (direct-mapped) */
#define BEAM_RECORD_KEEP_NS (1000 * 1000000ULL) /* the last module record reused for this long */
#define BEAM_SHARED_MODULE "global"             /* the record of the JIT's shared code */
#define BEAM_SCHEDULER_RANGE "global::process_main" /* ... and its scheduler loop */
#define BEAM_NAME_MAX 128
#define BEAM_FILE_MAX 128

enum beam_sym {
	BEAM_SYM_PROCESS_MAIN,
	BEAM_SYM_NORMAL_EXIT,
	BEAM_SYM_JIT_DESCRIPTOR,
	BEAM_SYM_LOOKUP_FUNCTION, /* the emulator flavour's layout (beam_emu.h) */
	BEAM_SYM_CODE_IX,
	BEAM_SYM_ATOM_TABLE,
	BEAM_SYM_APPLY,
	BEAM_SYM_CNT,
};

static const char *const beam_sym_names[BEAM_SYM_CNT] = {
	[BEAM_SYM_PROCESS_MAIN] = "process_main",
	[BEAM_SYM_NORMAL_EXIT] = "beam_normal_exit",
	[BEAM_SYM_JIT_DESCRIPTOR] = "__jit_debug_descriptor",
	[BEAM_SYM_LOOKUP_FUNCTION] = "erts_lookup_function_info",
	[BEAM_SYM_CODE_IX] = "the_active_code_index",
	[BEAM_SYM_ATOM_TABLE] = "erts_atom_table",
	[BEAM_SYM_APPLY] = "beam_apply",
};

struct beam_file {
	struct interp_file_base base;
	int otp;  /* OTP release from the erts version in the path (0: unknown) */
	bool jit; /* process_main is the JIT's wrapper */
	uint64_t sched_ret[BEAM_SCHED_RET_MAX]; /* ELF vaddrs (0: none) */
	uint64_t normal_exit_var;               /* ELF vaddr of beam_normal_exit (0: unknown) */
	uint64_t descriptor;       /* ELF vaddr of __jit_debug_descriptor (0: search) */
	uint64_t data_lo, data_hi; /* ELF vaddrs of .data (the search's bounds) */
	bool emu;                  /* the emulator flavour, its layout known: */
	struct beam_emu_layout emu_layout;
};

/* One module's code and its debugger record, in the process. */
struct beam_module {
	uint64_t start, end;
	uint64_t record, record_sz;
};

struct beam_proc {
	struct interp_proc_base base;
	struct beam_file *file;
	uint64_t bias;
	uint64_t maps_at; /* last /proc/PID/maps read (0: never) */
	struct interp_code_range code[INTERP_CODE_RANGES];
	uint64_t descriptor;         /* __jit_debug_descriptor in the process (0: not found yet) */
	uint64_t normal_exit;        /* from the emulator's record (0: not read yet) */
	struct beam_module *modules; /* sorted by start */
	size_t module_cnt;
	uint64_t modules_at;               /* last read of the list (0: never) */
	uint64_t sched_lo, sched_hi;       /* the JIT's process_main (0, 0: not found yet) */
	uint64_t shared_lo, shared_hi;     /* the JIT's shared code, whole (found with it) */
	unsigned sched_tries;              /* reads of the list looking for it (BEAM_SCHED_TRIES) */
	struct beam_emu_range *emu_ranges; /* the emulator flavour's modules, sorted */
	size_t emu_range_cnt;
	uint64_t emu_table[3]; /* ... where its range table was at the last read of the span */
	uint64_t emu_table_at; /* ... looked at last (0: never) */
};

#define BEAM_STATS(X)                                                               \
	/* beam.smp files of the JIT flavour whose scheduler entry was not found */ \
	X(BEAM_STAT_NO_ENTRY, "JIT emulators without scheduler entry")              \
	/* JIT code ranges past INTERP_CODE_RANGES in a process */                  \
	X(BEAM_STAT_RANGES_DROPPED, "JIT code ranges dropped")                      \
	/* reads of a process's module list */                                      \
	X(BEAM_STAT_MODULE_SCANS, "module list reads")                              \
	/* Erlang frames whose pc lies in no module the list names */               \
	X(BEAM_STAT_NO_MODULE, "frames in no module")                               \
	/* module records unreadable or corrupt */                                  \
	X(BEAM_STAT_BAD_RECORD, "module records unreadable")                        \
	/* frames answered from the cache */                                        \
	X(BEAM_STAT_CACHED, "frames cached")                                        \
	/* frames not read: the process's read budget spent */                      \
	X(BEAM_STAT_OVER_BUDGET, "reads over budget")

enum beam_stat { BEAM_STATS(INTERP_LIST_ENUM) BEAM_STAT_CNT };

/* A symbolized pc (direct-mapped by pid, attach generation and pc). */
struct beam_place {
	pid_t pid;
	uint32_t gen;
	uint64_t pc;
	int line;
	char function[BEAM_NAME_MAX];
	char file[BEAM_FILE_MAX]; /* "" when the module has no line for it */
};

struct beam_rt {
	struct beam_place *places; /* BEAM_PLACE_CACHE */
	uint8_t *record;           /* the last module record read */
	size_t record_cap;
	/* whose it is: read from record_addr (record_sz bytes) of (record_pid, record_gen) at
	 * record_at, reused for the frames of that module until BEAM_RECORD_KEEP_NS later (a
	 * module purged and its record's memory reused is then read again)
	 */
	pid_t record_pid;
	uint32_t record_gen;
	uint64_t record_addr, record_at;
	size_t record_sz;
	uint64_t stats[BEAM_STAT_CNT];
};

static const struct interp_marker_text marker_texts[] = {
	{ BEAM_MARKER_UNSUPPORTED, "unsupported emulator" },
	{ BEAM_MARKER_TRUNCATED, "truncated" },
	{ BEAM_MARKER_NO_SCHEDULER, "scheduler frames not found" },
	{ BEAM_MARKER_STACK_LOST, "process stack lost" },
	{ BEAM_MARKER_FROM_NATIVE, "frames of a native call not read" },
	{ BEAM_MARKER_INTERPRETER, "interpreter (emu flavour) not walked" },
	{ BEAM_MARKER_NO_IP, "interpreter pc not found" },
};

static int beam_init(void *rt)
{
	struct beam_rt *b = rt;

	b->places = calloc(BEAM_PLACE_CACHE, sizeof(*b->places));
	return b->places ? 0 : -ENOMEM;
}

static void beam_fini(void *rt)
{
	struct beam_rt *b = rt;

	free(b->places);
	free(b->record);
}

/* ---- files ---- */

static bool name_is_beam(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strcmp(base, "beam.smp") || !strcmp(base, "beam");
}

/* The OTP release from ".../erts-X.Y.Z/bin/beam.smp" (erts 11 is OTP 23, ... 17 is 29). */
static int otp_from_path(const char *path)
{
	const char *e = strstr(path, "/erts-");
	int major = 0;

	if (!e)
		return 0;
	for (e += 6; *e >= '0' && *e <= '9' && major < 1000; e++)
		major = major * 10 + (*e - '0');
	return major >= 5 ? major + 12 : 0;
}

#if !defined(__aarch64__) /* (arm64: the wrapper by its symbol) */
/* Is the wrapper's tail (`mov %rbx,%rdi`; `mov (%rax),%rax` within 6 bytes; `jmp *%rax` within
 * 8 more) at t[i]? Then its start: the nearest endbr64, or `push %rbx; mov %rdi,%rbx`, within
 * BEAM_WRAPPER_BACK bytes before; -1 when not.
 */
static int64_t wrapper_at(const uint8_t *t, size_t n, size_t i)
{
	static const uint8_t mov_rdi[3] = { 0x48, 0x89, 0xdf }, load[3] = { 0x48, 0x8b, 0x00 },
			     endbr[4] = { 0xf3, 0x0f, 0x1e, 0xfa },
			     push[4] = { 0x53, 0x48, 0x89, 0xfb };
	size_t j, k, b;

	if (i + 3 + 6 + 3 + 8 + 2 > n || memcmp(t + i, mov_rdi, 3))
		return -1;
	for (j = i + 3; j <= i + 3 + 6; j++)
		if (!memcmp(t + j, load, 3))
			break;
	if (j > i + 3 + 6)
		return -1;
	for (k = j + 3; k <= j + 3 + 8; k++)
		if (t[k] == 0xff && t[k + 1] == 0xe0)
			break;
	if (k > j + 3 + 8)
		return -1;
	for (b = i; b > 0 && i - b < BEAM_WRAPPER_BACK; b--) {
		if (b >= 4 && !memcmp(t + b - 4, endbr, 4))
			return (int64_t)(b - 4);
		if (b >= 4 && !memcmp(t + b - 4, push, 4) &&
		    !(b >= 8 && !memcmp(t + b - 8, endbr, 4)))
			return (int64_t)(b - 4);
	}
	return -1;
}

/* process_main by its shape in .text (sec): its vaddr, or 0 when not exactly one matches. */
static uint64_t find_wrapper(const struct elf_section *sec)
{
	const uint8_t *t = sec->data;
	uint64_t found = 0;
	int64_t s;
	size_t i;

	for (i = 0; i + 3 <= sec->size; i++) {
		if (t[i] != 0x48)
			continue;
		s = wrapper_at(t, sec->size, i);
		if (s < 0)
			continue;
		if (found)
			return 0; /* ambiguous */
		found = sec->addr + (uint64_t)s;
	}
	return found;
}
#endif

#if defined(__aarch64__)
#define BEAM_CALL_STEP 4 /* arm64: `bl` (imm26, words from the instruction), aligned */
/* The direct call at t[i] of a section at addr: 1 with its target and return address. */
static int call_at(const uint8_t *t, size_t size, size_t i, uint64_t addr, uint64_t *target,
		   uint64_t *ret)
{
	uint32_t insn;

	if (i + 4 > size)
		return 0;
	memcpy(&insn, t + i, sizeof(insn));
	if ((insn & 0xfc000000U) != 0x94000000U)
		return 0;
	*target = addr + i + (uint64_t)((int64_t)(int32_t)((insn & 0x03ffffffU) << 6) >> 6) * 4;
	*ret = addr + i + 4;
	return 1;
}
#else
#define BEAM_CALL_STEP 1 /* x86-64: `call rel32` at any byte */
static int call_at(const uint8_t *t, size_t size, size_t i, uint64_t addr, uint64_t *target,
		   uint64_t *ret)
{
	int32_t rel;

	if (i + 5 > size || t[i] != 0xe8)
		return 0;
	memcpy(&rel, t + i + 1, sizeof(rel));
	*target = addr + i + 5 + (uint64_t)(int64_t)rel;
	*ret = addr + i + 5;
	return 1;
}
#endif

/* The return addresses of the direct calls in sec aimed at target, into out[cap]: how many. */
static size_t find_calls(const struct elf_section *sec, uint64_t target, uint64_t *out, size_t cap)
{
	uint64_t to, ret;
	size_t i, n = 0;

	for (i = 0; i < sec->size; i += BEAM_CALL_STEP) {
		if (!call_at(sec->data, sec->size, i, sec->addr, &to, &ret) || to != target)
			continue;
		if (n == cap)
			return cap + 1; /* more call sites than expected: refuse */
		out[n++] = ret;
	}
	return n;
}

static int beam_file_detect(void *rt, const struct executable *exe, void *file_state,
			    struct interp_file *bpf)
{
	struct beam_rt *b = rt;
	struct beam_file *f = file_state;
	struct interp_sym syms[BEAM_SYM_CNT];
	struct elf_section text, data;
	uint64_t pm;
	size_t n;

	if (!exe->elf || !name_is_beam(exe->path))
		return -ENOENT;
	f->otp = otp_from_path(exe->path);
	bpf->major = (uint8_t)f->otp;
	bpf->supported = 0;
	interp_elf__symbols(exe->elf, beam_sym_names, BEAM_SYM_CNT, syms);
	if (elf_file__section(exe->elf, ".text", &text) || !text.data) {
		pr_debug("beam: %s: no .text\n", exe->path);
		return 0;
	}
#if defined(__aarch64__)
	/* arm64 (Debian 12's OTP 25): the wrapper by its .dynsym symbol, a few instructions ending
	 * in `br x16` (the emulator flavour's loop of the same name is kilobytes)
	 */
	pm = syms[BEAM_SYM_PROCESS_MAIN].found && syms[BEAM_SYM_PROCESS_MAIN].size &&
			     syms[BEAM_SYM_PROCESS_MAIN].size < BEAM_EMU_LOOP_MIN
		     ? syms[BEAM_SYM_PROCESS_MAIN].addr
		     : 0;
#else
	pm = find_wrapper(&text);
#endif
	if (!pm) {
		/* the emulator flavour (or an unknown build): no JIT code; its interpreter loop,
		 * process_main, is walked where it runs (OTP 23 on x86-64, its layout checked),
		 * else gets a marker (refused)
		 */
		const struct interp_sym *loop = &syms[BEAM_SYM_PROCESS_MAIN];

		if (loop->found && loop->size >= BEAM_EMU_LOOP_MIN && loop->addr >= text.addr &&
		    loop->addr - text.addr < text.size &&
		    loop->size <= text.size - (loop->addr - text.addr)) {
			bpf->range_start[0] = loop->addr;
			bpf->range_end[0] = loop->addr + loop->size;
		}
#if defined(__x86_64__) /* the loop's registers: beam_emu.c's for x86-64 */
		f->emu = f->otp == 23 && bpf->range_end[0] &&
			 !beam_emu__layout(exe->elf, &text, &syms[BEAM_SYM_LOOKUP_FUNCTION],
					   &syms[BEAM_SYM_CODE_IX], &syms[BEAM_SYM_ATOM_TABLE],
					   &syms[BEAM_SYM_APPLY], &f->emu_layout);
#endif
		bpf->supported = f->emu;
		pr_debug("beam: %s (OTP %d): no JIT entry: emulator flavour, loop %s\n", exe->path,
			 f->otp,
			 f->emu              ? "walked"
			 : bpf->range_end[0] ? "marked"
					     : "not found");
		return 0;
	}
	if (syms[BEAM_SYM_PROCESS_MAIN].found && syms[BEAM_SYM_PROCESS_MAIN].addr != pm)
		pm = 0; /* the symbol and the shape disagree: refuse */
	f->jit = true;
	n = pm ? find_calls(&text, pm, f->sched_ret, BEAM_SCHED_RET_MAX) : 0;
	if (n == 0 || n > BEAM_SCHED_RET_MAX) {
		memset(f->sched_ret, 0, sizeof(f->sched_ret));
		b->stats[BEAM_STAT_NO_ENTRY]++;
		pr_debug("beam: %s (OTP %d): JIT, scheduler entry not found: refused\n", exe->path,
			 f->otp);
		return 0;
	}
	if (syms[BEAM_SYM_NORMAL_EXIT].found)
		f->normal_exit_var = syms[BEAM_SYM_NORMAL_EXIT].addr;
	if (syms[BEAM_SYM_JIT_DESCRIPTOR].found)
		f->descriptor = syms[BEAM_SYM_JIT_DESCRIPTOR].addr;
	if (!elf_file__section(exe->elf, ".data", &data)) {
		f->data_lo = data.addr;
		f->data_hi = data.addr + data.size;
	}
	bpf->supported = 1;
	pr_debug("beam: %s (OTP %d): JIT, process_main %#" PRIx64 " called from %#" PRIx64
		 ", normal exit %s\n",
		 exe->path, f->otp, pm, f->sched_ret[0],
		 f->normal_exit_var ? "exported" : "not exported");
	return 0;
}

/* ---- processes ---- */

static int beam_proc_attach(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			    void *proc_state, struct interp_proc *bpf)
{
	struct beam_file *f = file_state;
	struct beam_proc *p = proc_state;
	size_t i;

	(void)rt;
	(void)now_ns;
	if (!f->jit && !f->emu)
		return -ENOENT; /* nothing of it to walk */
	p->file = f;
	p->bias = bias;
	memset(&bpf->beam, 0, sizeof(bpf->beam));
	if (f->emu) { /* ready once the code's span is read (beam_proc_refresh) */
		bpf->beam.emu = 1;
		bpf->beam.supported = 1;
		bpf->beam.normal_exit = f->emu_layout.first_cp + bias;
		return 0;
	}
	bpf->beam.supported = f->sched_ret[0] ? 1 : 0;
	for (i = 0; i < BEAM_SCHED_RET_MAX; i++)
		if (f->sched_ret[i])
			bpf->beam.sched_ret[i] = f->sched_ret[i] + bias;
	bpf->beam.sched_win = BEAM_SCHED_WIN;
	return 0;
}

/* The process's JIT code: executable mappings of no file but its memfd views, into code[]
 * (sorted as /proc lists them); how many, or -errno.
 */
static int read_jit_ranges(struct beam_rt *b, pid_t pid, struct interp_code_range *code)
{
	char path[64], line[512];
	unsigned long long lo, hi;
	int n = 0, fields, name_at;
	char perms[8];
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		const char *name;

		name_at = 0;
		fields = sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &lo, &hi, perms, &name_at);
		if (fields < 3 || perms[2] != 'x' || lo >= hi)
			continue;
		name = name_at > 0 ? line + name_at : "";
		if (*name && *name != '\n' && strncmp(name, "/memfd:", 7))
			continue; /* a file, or [vdso] / [vsyscall] */
		if (n == INTERP_CODE_RANGES) {
			b->stats[BEAM_STAT_RANGES_DROPPED]++;
			continue;
		}
		memset(&code[n], 0, sizeof(code[n]));
		code[n].start = lo;
		code[n].end = hi;
		n++;
	}
	fclose(fp);
	return n;
}

/* A jit_descriptor at addr in the process: {u32 version 1, u32 action, relevant entry, first
 * entry}, whose first entry (required unless exported: a symbol names it before the JIT
 * registers anything) has no previous one and a record of a plausible size and kind.
 */
static bool descriptor_at(pid_t pid, uint64_t addr, bool exported)
{
	uint64_t d[3], e[4];
	uint32_t kind;

	if (interp__read_mem(pid, addr, d, sizeof(d)) || (uint32_t)d[0] != 1 ||
	    (uint32_t)(d[0] >> 32) > 2)
		return false;
	if (!d[2])
		return exported;
	if (interp__read_mem(pid, d[2], e, sizeof(e)) || e[1] != 0 || !e[2] ||
	    e[3] < BEAM_DEBUG_HDR_SZ || e[3] > BEAM_RECORD_MAX)
		return false;
	return !interp__read_mem(pid, e[2], &kind, sizeof(kind)) &&
	       (kind == BEAM_DEBUG_EMULATOR || kind == BEAM_DEBUG_MODULE);
}

/* __jit_debug_descriptor in the process: the exported symbol, else the one place in .data that
 * holds one (OTP 29 exports the NIF API only). 0 when not found (yet: the JIT registers its
 * first record at start-up).
 */
static uint64_t find_descriptor(const struct beam_proc *p)
{
	const struct beam_file *f = p->file;
	uint64_t lo, hi, found = 0, a;
	uint64_t *buf;
	size_t n, i;

	if (f->descriptor)
		return descriptor_at(p->base.pid, f->descriptor + p->bias, true)
			       ? f->descriptor + p->bias
			       : 0;
	if (!f->data_lo || f->data_hi <= f->data_lo || f->data_hi - f->data_lo > BEAM_DESC_SCAN_MAX)
		return 0;
	lo = (f->data_lo + 7) & ~7ULL;
	hi = f->data_hi & ~7ULL;
	n = (size_t)(hi - lo) / 8;
	buf = malloc(n * 8);
	if (!buf || interp__read_mem(p->base.pid, lo + p->bias, buf, n * 8))
		goto out;
	for (i = 0; i + 3 <= n; i++) {
		if ((uint32_t)buf[i] != 1 || (uint32_t)(buf[i] >> 32) > 2 || !buf[i + 2])
			continue;
		a = lo + 8 * i + p->bias;
		if (!descriptor_at(p->base.pid, a, false))
			continue;
		if (found) {
			found = 0; /* two: refuse */
			break;
		}
		found = a;
	}
out:
	free(buf);
	return found;
}

static int module_cmp(const void *a, const void *b)
{
	const struct beam_module *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The JIT's process_main in the record at rec[sz] when it is the shared code's ("global"),
 * into p->sched_lo/hi, and that code's whole range into p->shared_lo/hi (absolute).
 */
static void find_scheduler_code(struct beam_rt *b, struct beam_proc *p, pid_t reader, uint64_t rec,
				uint64_t sz)
{
	uint8_t head[BEAM_DEBUG_HDR_SZ + sizeof(BEAM_SHARED_MODULE)];
	struct beam_debug_header h;
	const char *module;
	uint32_t lo, hi;

	if (sz < sizeof(head) || sz > BEAM_RECORD_MAX ||
	    interp__read_mem(reader, rec, head, sizeof(head)))
		return;
	module = beam_debug__module(head, sizeof(head));
	if (!module || strcmp(module, BEAM_SHARED_MODULE))
		return;
	if (sz > b->record_cap) {
		uint8_t *nb = realloc(b->record, sz);

		if (!nb)
			return;
		b->record = nb;
		b->record_cap = sz;
	}
	b->record_sz = 0; /* the buffer no longer holds the module record place_of kept */
	if (interp__read_mem(reader, rec, b->record, sz) || beam_debug__header(b->record, sz, &h) ||
	    beam_debug__range(b->record, sz, BEAM_SCHEDULER_RANGE, &lo, &hi) || lo >= hi ||
	    hi > h.code_size) {
		b->stats[BEAM_STAT_BAD_RECORD]++;
		return;
	}
	p->sched_lo = h.base + lo;
	p->sched_hi = h.base + hi;
	p->shared_lo = h.base;
	p->shared_hi = h.base + h.code_size;
	pr_debug("beam: pid %d: scheduler loop %#" PRIx64 "-%#" PRIx64 " (read %u)\n",
		 (int)p->base.pid, p->sched_lo, p->sched_hi, p->sched_tries);
}

/* Read the list of records: the modules (sorted) and the emulator's normal_exit. 0 or -errno. */
static int read_modules(struct beam_rt *b, struct beam_proc *p, pid_t reader)
{
	struct beam_module *m = NULL;
	uint64_t e, d[3];
	size_t n = 0, cap = 0, steps;
	int err = -EIO;

	b->stats[BEAM_STAT_MODULE_SCANS]++;
	if (interp__read_mem(reader, p->descriptor, d, sizeof(d)))
		return -EIO;
	for (e = d[2], steps = 0; e && steps < BEAM_MODULES_CAP; steps++) {
		uint64_t ent[4];
		uint8_t hdr[BEAM_DEBUG_HDR_SZ];
		struct beam_debug_header h;

		if (interp__read_mem(reader, e, ent, sizeof(ent)))
			goto out;
		e = ent[0];
		if (ent[3] < BEAM_DEBUG_HDR_SZ || ent[3] > BEAM_RECORD_MAX ||
		    interp__read_mem(reader, ent[2], hdr, sizeof(hdr)) ||
		    beam_debug__header(hdr, sizeof(hdr), &h))
			continue;
		if (h.kind == BEAM_DEBUG_EMULATOR) {
			p->normal_exit = h.normal_exit;
			continue;
		}
		if (!h.code_size || h.base + h.code_size < h.base)
			continue;
		if (!p->sched_hi)
			find_scheduler_code(b, p, reader, ent[2], ent[3]);
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct beam_module *nm = realloc(m, ncap * sizeof(*m));

			if (!nm) {
				err = -ENOMEM;
				goto out;
			}
			m = nm;
			cap = ncap;
		}
		m[n++] = (struct beam_module){ .start = h.base,
					       .end = h.base + h.code_size,
					       .record = ent[2],
					       .record_sz = ent[3] };
	}
	qsort(m, n, sizeof(*m), module_cmp);
	free(p->modules);
	p->modules = m;
	p->module_cnt = n;
	m = NULL;
	err = 0;
out:
	free(m);
	return err;
}

static const struct beam_module *module_of(const struct beam_proc *p, uint64_t pc)
{
	size_t lo = 0, hi = p->module_cnt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pc < p->modules[mid].start)
			hi = mid;
		else if (pc >= p->modules[mid].end)
			lo = mid + 1;
		else
			return &p->modules[mid];
	}
	return NULL;
}

/* The emulator flavour's code span (its modules' lowest start, highest end) into bpf: it
 * bounds the loop's instruction pointer and CPs in eBPF (its code is in the heap: no code
 * ranges). The table's place and count looked at every BEAM_RETRY_NS, the span read again
 * when they change (a module loaded: its code may lie outside the span, and every sample in it
 * would miss its instruction pointer until then; 0-1 s of a 15 s run, 6.5 % once, when read
 * every second) or every BEAM_MAPS_NS: 1 when changed.
 */
static int emu_refresh(struct beam_proc *p, uint64_t now_ns, struct interp_proc *bpf)
{
	struct beam_emu_range *r = NULL;
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t n = 0, i;

	uint64_t table[3];

	if (p->emu_table_at && now_ns - p->emu_table_at < BEAM_RETRY_NS)
		return 0;
	p->emu_table_at = now_ns;
	if (beam_emu__table(p->base.pid, &p->file->emu_layout, p->bias, table))
		return 0;
	if (bpf->beam.ready && !memcmp(table, p->emu_table, sizeof(table)) &&
	    now_ns - p->maps_at < BEAM_MAPS_NS)
		return 0;
	memcpy(p->emu_table, table, sizeof(table));
	p->maps_at = now_ns;
	if (beam_emu__ranges(p->base.pid, &p->file->emu_layout, p->bias, &r, &n))
		return 0;
	for (i = 0; i < n; i++) {
		if (r[i].start < lo)
			lo = r[i].start;
		if (r[i].end > hi)
			hi = r[i].end;
	}
	free(r);
	if (!n || (bpf->beam.ready && bpf->beam.code_lo == lo && bpf->beam.code_hi == hi))
		return 0;
	bpf->beam.code_lo = lo;
	bpf->beam.code_hi = hi;
	bpf->beam.ready = 1;
	pr_debug("beam: pid %d: emulator flavour, %zu modules in %#" PRIx64 "-%#" PRIx64 "\n",
		 (int)p->base.pid, n, lo, hi);
	return 1;
}

static int beam_proc_refresh(void *rt, void *proc_state, uint64_t now_ns, struct interp_proc *bpf,
			     struct interp_code_range *code)
{
	struct beam_rt *b = rt;
	struct beam_proc *p = proc_state;
	struct interp_code_range now[INTERP_CODE_RANGES] = { 0 };
	int changed = 0, n;
	uint64_t v = 0;
	bool settled;

	if (p->file->emu)
		return emu_refresh(p, now_ns, bpf);
	settled = bpf->beam.ready;
	if (p->maps_at && now_ns - p->maps_at < (settled ? BEAM_MAPS_NS : BEAM_RETRY_NS))
		return 0;
	p->maps_at = now_ns;
	if (!p->descriptor)
		p->descriptor = find_descriptor(p);
	if (!bpf->beam.ready) {
		if (p->file->normal_exit_var && !p->normal_exit)
			interp__read_u64(p->base.pid, p->file->normal_exit_var + p->bias,
					 &p->normal_exit);
		/* the records: normal_exit when not exported, and the scheduler loop, read at
		 * every refresh until found (the emulator registers them at start-up)
		 */
		if ((!p->normal_exit || !p->sched_hi) && p->sched_tries < BEAM_SCHED_TRIES) {
			p->sched_tries++;
			if (p->descriptor && !read_modules(b, p, p->base.pid))
				p->modules_at = now_ns;
		}
		v = p->normal_exit;
		/* Ready once the scheduler loop is known too: before, its calls (erts_schedule)
		 * would look like native calls from Erlang code (a marker); a build whose records
		 * never name it is walked without (BEAM_SCHED_TRIES).
		 */
		if (v && (p->sched_hi || p->sched_tries >= BEAM_SCHED_TRIES)) {
			bpf->beam.normal_exit = v;
			bpf->beam.ready = 1;
			changed = 1;
		}
	}
	if (p->sched_hi && bpf->beam.sched_hi != p->sched_hi) {
		bpf->beam.sched_lo = p->sched_lo;
		bpf->beam.sched_hi = p->sched_hi;
		bpf->beam.shared_lo = p->shared_lo;
		bpf->beam.shared_hi = p->shared_hi;
		changed = 1;
	}
	n = read_jit_ranges(b, p->base.pid, now);
	if (n < 0)
		return changed;
	if (memcmp(now, p->code, sizeof(now))) {
		memcpy(p->code, now, sizeof(now));
		changed = 1;
	}
	memcpy(code, p->code, sizeof(p->code));
	if (changed)
		pr_debug("beam: pid %d: %d JIT code ranges, first %#" PRIx64 "-%#" PRIx64
			 ", normal exit %#" PRIx64 ", debugger records at %#" PRIx64 "\n",
			 (int)p->base.pid, n, (uint64_t)p->code[0].start, (uint64_t)p->code[0].end,
			 (uint64_t)bpf->beam.normal_exit, p->descriptor);
	return changed;
}

static void beam_proc_free(void *rt, void *proc_state)
{
	struct beam_proc *p = proc_state;

	(void)rt;
	free(p->modules);
	p->modules = NULL;
	free(p->emu_ranges);
	p->emu_ranges = NULL;
}

/* ---- symbolization ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void copy_text(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The emulator flavour's module of pc: its code header, 0 when none (the ranges read again
 * when not found, at most every BEAM_RESCAN_NS).
 */
static uint64_t emu_module_of(struct beam_proc *p, pid_t reader, uint64_t pc, uint64_t now)
{
	size_t lo, hi, mid;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		lo = 0;
		hi = p->emu_range_cnt;
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (pc < p->emu_ranges[mid].start)
				hi = mid;
			else if (pc >= p->emu_ranges[mid].end)
				lo = mid + 1;
			else
				return p->emu_ranges[mid].start;
		}
		if (pass || (p->modules_at && now - p->modules_at < BEAM_RESCAN_NS))
			break;
		p->modules_at = now;
		free(p->emu_ranges);
		p->emu_ranges = NULL;
		p->emu_range_cnt = 0;
		if (beam_emu__ranges(reader, &p->file->emu_layout, p->bias, &p->emu_ranges,
				     &p->emu_range_cnt))
			break;
	}
	return 0;
}

/* The emulator flavour's place of pc, as place_of. */
static int emu_place_of(struct beam_rt *b, struct beam_proc *p, pid_t reader, uint64_t pc,
			struct beam_place *pl, const char **why)
{
	struct beam_emu_place ep;
	uint64_t hdr;
	int err;

	hdr = emu_module_of(p, reader, pc, now_ns());
	if (!hdr) {
		b->stats[BEAM_STAT_NO_MODULE]++;
		*why = "code in no module";
		return -ENOENT;
	}
	err = beam_emu__place(reader, &p->file->emu_layout, p->bias, hdr, pc, &ep, why);
	if (err) {
		b->stats[BEAM_STAT_BAD_RECORD]++;
		return err;
	}
	copy_text(pl->function, sizeof(pl->function), ep.function);
	beam_elixir__name(pl->function, sizeof(pl->function));
	copy_text(pl->file, sizeof(pl->file), ep.file);
	pl->line = ep.line;
	return 0;
}

/* The place of pc into *pl (pid, gen, pc set by the caller): 0, or < 0 with a marker's reason. */
static int place_of(struct beam_rt *b, struct beam_proc *p, pid_t reader, uint64_t pc,
		    struct beam_place *pl, const char **why)
{
	const struct beam_module *m;
	struct beam_debug_place dp;
	uint64_t now;
	char *suffix;

	m = module_of(p, pc);
	now = now_ns();
	if (!m && (!p->modules_at || now - p->modules_at >= BEAM_RESCAN_NS)) {
		p->modules_at = now;
		if (!p->descriptor)
			p->descriptor = find_descriptor(p);
		if (p->descriptor && !read_modules(b, p, reader))
			m = module_of(p, pc);
	}
	if (!m) {
		b->stats[BEAM_STAT_NO_MODULE]++;
		*why = p->descriptor ? "code in no module" : "no debugger records";
		return -ENOENT;
	}
	if (m->record_sz > b->record_cap) {
		uint8_t *nb = realloc(b->record, m->record_sz);

		if (!nb) {
			*why = "module record unreadable";
			return -ENOMEM;
		}
		b->record = nb;
		b->record_cap = m->record_sz;
		b->record_sz = 0;
	}
	if (b->record_pid != p->base.pid || b->record_gen != p->base.gen ||
	    b->record_addr != m->record || b->record_sz != m->record_sz ||
	    now - b->record_at >= BEAM_RECORD_KEEP_NS) {
		b->record_sz = 0;
		if (interp__read_mem(reader, m->record, b->record, m->record_sz)) {
			b->stats[BEAM_STAT_BAD_RECORD]++;
			*why = "module record unreadable";
			return -EIO;
		}
		b->record_pid = p->base.pid;
		b->record_gen = p->base.gen;
		b->record_addr = m->record;
		b->record_sz = m->record_sz;
		b->record_at = now;
	}
	if (beam_debug__lookup(b->record, m->record_sz, pc - m->start, &dp)) {
		b->stats[BEAM_STAT_BAD_RECORD]++;
		*why = "module record unreadable";
		return -EIO;
	}
	copy_text(pl->function, sizeof(pl->function), dp.function);
	/* a function's entry (code info, trampoline, reduction check) is the function's */
	if (dp.prologue) {
		suffix = strstr(pl->function, BEAM_DEBUG_PROLOGUE);
		if (suffix)
			*suffix = '\0';
	}
	beam_elixir__name(pl->function, sizeof(pl->function));
	copy_text(pl->file, sizeof(pl->file), dp.file ? dp.file : "");
	pl->line = dp.line;
	return 0;
}

static void beam_symbolize(void *rt, void *proc_state, pid_t reader, const struct user_frame *uf,
			   struct interp_symbol *out)
{
	struct beam_rt *b = rt;
	struct beam_proc *p = proc_state;
	uint64_t pc = uf->addr;
	struct beam_place *pl;
	const char *why = "?";
	uint64_t t0;
	size_t slot;
	int err;

	if (!uf->addr)
		return interp__code_marker(out, INTERP_MARKERS(marker_texts), uf->file_id);
	if (!p)
		return interp__marker(out, "unknown process");
	if (uf->flags & USER_FRAME_RETURN)
		pc--;
	slot = (size_t)((pc >> 2) ^ (uint64_t)p->base.pid * 0x9e3779b1u) % BEAM_PLACE_CACHE;
	pl = &b->places[slot];
	if (pl->pid == p->base.pid && pl->gen == p->base.gen && pl->pc == pc && pl->function[0]) {
		b->stats[BEAM_STAT_CACHED]++;
	} else {
		/* a module's record may be megabytes, its list thousands of reads: on the
		 * process's read budget, as the other runtimes' reads
		 */
		if (!symbol_cache__budget_begin(&p->base, &t0)) {
			b->stats[BEAM_STAT_OVER_BUDGET]++;
			return interp__marker(out, SYMBOL_CACHE_OVER_BUDGET);
		}
		pl->pid = p->base.pid;
		pl->gen = p->base.gen;
		pl->pc = pc;
		pl->function[0] = '\0';
		if (uf->file_id >> 60 == BEAM_SUB_EMU && p->file->emu)
			err = emu_place_of(b, p, reader, pc, pl, &why);
		else
			err = place_of(b, p, reader, pc, pl, &why);
		symbol_cache__budget_end(&p->base, t0);
		if (err) {
			pl->pid = 0;
			return interp__marker(out, why);
		}
	}
	*out = (struct interp_symbol){
		.function = pl->function,
		.file = pl->file[0] ? pl->file : NULL,
		.line = pl->line,
	};
}

const struct interp_runtime beam_runtime = {
	.name = "beam",
	.frame_type = "beam",
	.frame_kind = FRAME_KIND_BEAM,
	INTERP_RUNTIME_COUNTERS(BEAM_COUNTERS, BEAM_COUNTER_CNT, BEAM_STATS, struct beam_rt),
	.init = beam_init,
	.fini = beam_fini,
	.file_state_sz = sizeof(struct beam_file),
	.file_detect = beam_file_detect,
	.proc_state_sz = sizeof(struct beam_proc),
	.proc_attach = beam_proc_attach,
	.proc_refresh = beam_proc_refresh,
	.proc_free = beam_proc_free,
	.symbolize = beam_symbolize,
};
