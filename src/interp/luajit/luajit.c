/* LuaJIT 2.1 (Debian's luajit and libluajit-5.1, OpenResty's builds): finds the VM in a mapped
 * file, tells the eBPF walk (bpf/interp/luajit/walk.h) where its code is and how its C frame
 * links to its lua_State, and reports the process's JIT trace code (anonymous executable
 * memory) as its code ranges; names the Lua frames the walk emits (GCproto: chunk name, first
 * line, line of the bytecode index; the function's name as its caller's call instruction gives
 * it, luajit_callsite.h, else "<chunk:firstline>", the main chunk "<main>").
 *
 * Detection: a file exporting luaJIT_setmode whose .eh_frame holds the VM's FDE (buildvm's: CFA
 * = rsp + 80 from its first byte, then rbp, rbx, r15, r14 saved at CFA - 16 .. - 40: the
 * instructions 0e 50 86 02 83 03 8f 04 8e 05). The layout (GC64: 64-bit SAVE_L at rsp + 16,
 * lua_State.cframe at 80; 32-bit references: SAVE_L a dword at rsp + 24, cframe at 48) from the
 * VM's own `mov L:RB->cframe, rsp` (48 89 65 50 or 48 89 65 30), which lj_vm_pcall and
 * lj_vm_cpcall hold; a VM holding neither or both is refused (a marker, native frames only).
 * Traces: global_State's vmstate, jit_base and J->trace from the VM's own code
 * (BC_JLOOP's `mov rcx, [DISPATCH+J.trace]; mov rax, [rcx+rax*8]; mov rax, [rax+mcode]; mov
 * rbp, SAVE_L; mov [DISPATCH+jit_base], BASE`, set_vmstate's `mov dword
 * [DISPATCH+vmstate], -1` and vm_resume's `mov DISPATCH, L->glref; add DISPATCH, GG_G2DISP`);
 * without them a trace gets its marker only.
 * arm64 (by the file's e_machine): buildvm's arm64 FDE (x30, x29, x19..x28 saved at CFA - 8 ..
 * - 96 under a CIE of CFA = x29 + 16), always GC64 (checked: lua_State.cframe at 80 in the
 * C-frame entries' stores), J->trace, jit_base and GCtrace.mcode from BC_JLOOP's arm64 code
 * (luajit_vm_arm64.h); no vmstate (arm64 traces leave it 0).
 *
 * Invariants: the code range is fixed per process (LJ_CODE_NEAR around the VM); functions are
 * cached by GCproto address and checked by their cookie (LJ_CACHE_CAP, symbol_cache.h), call
 * sites' names by the call instruction's address and checked by the called function's cookie
 * (LJ_SITE_CAP: a call site that calls several functions is read again for each change).
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "formats/elf_file.h"
#include "interp/common/interp_elf.h"
#include "interp/common/proc_memory.h"
#include "interp/common/runtime_counters.h"
#include "interp/common/symbol_cache.h"
#include "interp/interp.h"
#include "interp/luajit/luajit_callsite.h"
#include "interp/luajit/luajit_vm_arm64.h"
#include "proc/executable.h"

#define LJ_CODE_NEAR (2ULL << 30)           /* trace code lies within 2 GiB of the VM */
#define LJ_USER_MAX 0x7ffffffff000ULL       /* the top of x86-64 user space */
#define LJ_USER_MAX_ARM64 0xfffffffff000ULL /* arm64's, 48-bit addresses */

static const uint8_t vm_fde_insns[] = { 0x0e, 0x50, 0x86, 0x02, 0x83, 0x03, 0x8f, 0x04, 0x8e, 0x05 };
/* arm64: x30, x29, x19..x28 saved at CFA - 8 .. - 96 from the first byte, under a CIE whose CFA
 * is x29 + 16 (0c 1d 10) */
static const uint8_t vm_fde_insns_arm64[] = { 0x9e, 0x01, 0x9d, 0x02, 0x93, 0x03, 0x94, 0x04,
					      0x95, 0x05, 0x96, 0x06, 0x97, 0x07, 0x98, 0x08,
					      0x99, 0x09, 0x9a, 0x0a, 0x9b, 0x0b, 0x9c, 0x0c };
static const uint8_t vm_cie_insns_arm64[] = { 0x0c, 0x1d, 0x10 };
static const uint8_t cframe_gc64[] = { 0x48, 0x89, 0x65, 0x50 }; /* mov [rbp+80], rsp */
static const uint8_t cframe_gc32[] = { 0x48, 0x89, 0x65, 0x30 }; /* mov [rbp+48], rsp */

#define LJ_CHUNK_MAX 512             /* bytes of a chunk name read */
#define LJ_LINEINFO_MAX (256u << 10) /* bytes of a function's line table kept */
#define LJ_CACHE_CAP 4096            /* functions (GCproto) cached */
#define LJ_CACHE_BYTES (8u << 20)    /* what their names and line tables may hold */
#define LJ_SITE_CAP 4096             /* call sites' names cached */

/* A function as read (symbol_cache.h: keyed by its GCproto, checked by luajit_cookie). */
struct proto_entry {
	struct symbol_cache_key key;
	char *file;        /* the chunk name without its '@' or '=' */
	uint8_t *lineinfo; /* its line table (esz bytes an instruction from index 1 on), or NULL */
	uint32_t firstline, numline, sizebc;
	uint8_t esz;
};

/* A call site's name (keyed by the call instruction's address, checked by the called
 * function's cookie): name "" when its bytecode names none.
 */
struct site_entry {
	struct symbol_cache_key key;
	char *name;
};

/* Our own counters (luajit_runtime.stat_names). */
#define LJ_STATS(X)                                                 \
	/* GCprotos read from process memory */                     \
	X(LJ_STAT_READS, "functions read")                          \
	/* frames whose function could not be read */               \
	X(LJ_STAT_UNREADABLE, "functions unreadable")               \
	/* cookie mismatch: function freed and its memory reused */ \
	X(LJ_STAT_STALE, "functions stale")                         \
	/* functions not read: the process's read budget spent */   \
	X(LJ_STAT_OVER_BUDGET, "reads over budget")                 \
	/* call sites read (their callee's name) */                 \
	X(LJ_STAT_SITE_READS, "call sites read")                    \
	/* frames with a caller whose call site names nothing */    \
	X(LJ_STAT_SITE_UNNAMED, "frames unnamed by their call site")

enum lj_stat { LJ_STATS(INTERP_LIST_ENUM) LJ_STAT_CNT };

struct lj {
	struct symbol_cache protos;
	struct symbol_cache sites;
	uint64_t stats[LJ_STAT_CNT];
	char name[64 + LJ_CHUNK_MAX]; /* the last frame's function name */
};

struct lj_file {
	struct interp_file_base base;
	uint64_t vm_lo, vm_hi;                     /* ELF vaddrs */
	uint64_t user_max;                         /* the top of the architecture's user space */
	struct luajit_proc_abi abi;                /* vm_lo/hi relative to the file */
	uint8_t pt_numline, pt_lineinfo, str_data; /* GCproto, GCstr: what symbolize reads */
	struct lj_callsite_layout site;            /* what a call site's name reads */
};

struct lj_proc {
	struct interp_proc_base base;
	const struct lj_file *file;
	uint64_t bias;
	struct interp_code_range code; /* where trace code is (end 0: not reported yet) */
};

struct vm_fde {
	uint64_t lo, hi;
	int cnt;
	bool arm64; /* which VM's FDE is looked for */
};

static bool starts_with(const uint8_t *insns, size_t sz, const uint8_t *pat, size_t pat_sz)
{
	return sz >= pat_sz && !memcmp(insns, pat, pat_sz);
}

static int find_vm_fde(void *ctx, const struct cfi_fde *fde)
{
	struct vm_fde *v = ctx;

	if (v->arm64 ? !starts_with(fde->insns, fde->insns_sz, vm_fde_insns_arm64,
				    sizeof(vm_fde_insns_arm64)) ||
			       !fde->cie ||
			       !starts_with(fde->cie->insns, fde->cie->insns_sz, vm_cie_insns_arm64,
					    sizeof(vm_cie_insns_arm64))
		     : !starts_with(fde->insns, fde->insns_sz, vm_fde_insns, sizeof(vm_fde_insns)))
		return 0;
	v->lo = fde->pc_begin;
	v->hi = fde->pc_end;
	v->cnt++;
	return 0;
}

static bool has_bytes(const uint8_t *code, size_t sz, const uint8_t *pat, size_t pat_sz)
{
	size_t i;

	for (i = 0; i + pat_sz <= sz; i++)
		if (!memcmp(code + i, pat, pat_sz))
			return true;
	return false;
}

/* The 32-bit displacement or immediate at code[at]. */
static int32_t le32(const uint8_t *code, size_t at)
{
	return (int32_t)((uint32_t)code[at] | (uint32_t)code[at + 1] << 8 |
			 (uint32_t)code[at + 2] << 16 | (uint32_t)code[at + 3] << 24);
}

/* A byte pattern where 0x100 matches any byte; the offset of its first match, or -1. */
static long find_pattern(const uint8_t *code, size_t sz, const uint16_t *pat, size_t n)
{
	size_t i, j;

	for (i = 0; i + n <= sz; i++) {
		for (j = 0; j < n && (pat[j] == 0x100 || pat[j] == code[i + j]); j++)
			;
		if (j == n)
			return (long)i;
	}
	return -1;
}

#define ANY 0x100
#define ANY4 ANY, ANY, ANY, ANY

/* The VM's global_State and GCtrace offsets the trace walk needs (the top comment says from
 * where; with 32-bit references the same instructions on 32-bit registers, SAVE_L at rsp + 24,
 * 4-byte trace slots) into f->abi; left 0 when a pattern is missing or they make no sense.
 */
static void trace_offsets(struct lj_file *f, const uint8_t *code, size_t sz, bool gc64)
{
	static const uint16_t jloop64[] = { 0x49, 0x8b, 0x8e, ANY4, 0x48, 0x8b, 0x04,
					    0xc1, 0x48, 0x8b, 0x40, ANY,  0x48, 0x8b,
					    0x6c, 0x24, 0x10, 0x49, 0x89, 0x96, ANY4 };
	static const uint16_t jloop32[] = { 0x41, 0x8b, 0x8e, ANY4, 0x8b, 0x04, 0x81,
					    0x48, 0x8b, 0x40, ANY,  0x8b, 0x6c, 0x24,
					    0x18, 0x41, 0x89, 0x96, ANY4 };
	static const uint16_t g2disp64[] = { 0x4c, 0x8b, 0x75, 0x10, 0x49, 0x81, 0xc6, ANY4 };
	static const uint16_t g2disp32[] = { 0x44, 0x8b, 0x75, 0x08, 0x41, 0x81, 0xc6, ANY4 };
	static const uint8_t vmst[] = { 0x41, 0xc7, 0x86 };
	int32_t cand[8] = { 0 }, g2d, trace, jit_base, vmstate = 0;
	int cnt[8] = { 0 }, best = 0;
	long at, g;
	size_t i, k, mcode_at = gc64 ? 14 : 13, base_at = gc64 ? 23 : 21;
	int mcode;

	if ((at = gc64 ? find_pattern(code, sz, jloop64, sizeof(jloop64) / 2)
		       : find_pattern(code, sz, jloop32, sizeof(jloop32) / 2)) < 0 ||
	    (g = gc64 ? find_pattern(code, sz, g2disp64, sizeof(g2disp64) / 2)
		      : find_pattern(code, sz, g2disp32, sizeof(g2disp32) / 2)) < 0)
		return;
	trace = le32(code, (size_t)at + 3);
	mcode = code[(size_t)at + mcode_at];
	jit_base = le32(code, (size_t)at + base_at);
	g2d = le32(code, (size_t)g + 7);
	for (i = 0; i + 11 <= sz; i++) { /* set_vmstate INTERP (~0): the most frequent target */
		if (memcmp(code + i, vmst, 3) || le32(code, i + 7) != -1)
			continue;
		for (k = 0; k < 8 && cnt[k] && cand[k] != le32(code, i + 3); k++)
			;
		if (k < 8) {
			cand[k] = le32(code, i + 3);
			cnt[k]++;
		}
	}
	for (k = 0; k < 8; k++)
		if (cnt[k] > best)
			best = cnt[k], vmstate = cand[k];
	if (best < 2 || mcode < 16 || (int64_t)g2d + trace <= 0 || (int64_t)g2d + trace > 0xffff ||
	    (int64_t)g2d + jit_base <= 0 || (int64_t)g2d + jit_base > 0xffff ||
	    (int64_t)g2d + vmstate <= 0 || (int64_t)g2d + vmstate > 0xffff)
		return;
	f->abi.g_trace = (uint16_t)(g2d + trace);
	f->abi.g_jit_base = (uint16_t)(g2d + jit_base);
	f->abi.g_vmstate = (uint16_t)(g2d + vmstate);
	/* GCtrace: startpc, startins, szmcode, then mcode (a native pointer) */
	f->abi.tr_startpc = (uint8_t)(mcode - (gc64 ? 16 : 12));
}

/* arm64 (luajit_vm_arm64.h): vmstate is not used there (traces leave it 0: eBPF finds the
 * running trace by its machine code) */
static void trace_offsets_arm64(struct lj_file *f, const uint8_t *code, size_t sz)
{
	struct lj_trace_offsets_arm64 o;

	if (lj_vm_arm64__trace_offsets(code, sz, &o))
		return;
	f->abi.g_trace = o.g_trace;
	f->abi.g_jit_base = o.g_jit_base;
	f->abi.tr_startpc = (uint8_t)(o.tr_mcode - 16);
}

static int lj_file_detect(void *rt, const struct executable *exe, void *file_state,
			  struct interp_file *bpf)
{
	static const char *const names[] = { "luaJIT_setmode" };
	struct interp_sym sym = { 0 };
	struct lj_file *f = file_state;
	struct vm_fde v = { 0 };
	const uint8_t *code;
	bool gc64, gc32;

	(void)rt;
	if (!exe->elf)
		return -ENOENT;
	interp_elf__symbols(exe->elf, names, 1, &sym);
	if (!sym.found)
		return -ENOENT;
	v.arm64 = elf_file__machine(exe->elf) == EM_AARCH64;
	if (interp_elf__walk_fdes(exe->elf, find_vm_fde, &v) || v.cnt != 1 || v.hi <= v.lo ||
	    v.hi - v.lo > (16u << 20)) {
		pr_debug("luajit: %s: no VM FDE (%d found)\n", exe->path, v.cnt);
		return -ENOENT;
	}
	f->vm_lo = v.lo;
	f->vm_hi = v.hi;
	code = interp_elf__bytes(exe->elf, v.lo, v.hi - v.lo);
	f->user_max = v.arm64 ? LJ_USER_MAX_ARM64 : LJ_USER_MAX;
	if (v.arm64) { /* GC64 always; the C frame's SAVE_L at sp + 16 as x86-64 GC64's */
		gc64 = code && lj_vm_arm64__cframe_offset(code, v.hi - v.lo) == 80;
		gc32 = false;
	} else {
		gc64 = code && has_bytes(code, v.hi - v.lo, cframe_gc64, sizeof(cframe_gc64));
		gc32 = code && has_bytes(code, v.hi - v.lo, cframe_gc32, sizeof(cframe_gc32));
	}
	f->abi.supported = gc64 != gc32;
	f->abi.l_slot = gc64 ? 16 : 24;
	f->abi.l_size = gc64 ? 8 : 4;
	f->abi.l_cframe = gc64 ? 80 : 48;
	/* lj_obj.h's lua_State, GCfuncL, GCproto and GCstr, the same through 2.1's history */
	f->abi.gc64 = gc64;
	f->abi.l_base = gc64 ? 32 : 16;
	f->abi.l_glref = gc64 ? 16 : 8;
	f->abi.fn_ffid = gc64 ? 10 : 6;
	f->abi.fn_pc = gc64 ? 32 : 16;
	f->abi.pt_size = gc64 ? 104 : 64;
	f->abi.pt_sizebc = gc64 ? 12 : 8;
	f->abi.pt_chunkname = gc64 ? 64 : 40;
	f->abi.pt_firstline = gc64 ? 72 : 44;
	f->pt_numline = gc64 ? 76 : 48;
	f->pt_lineinfo = gc64 ? 80 : 52;
	f->str_data = gc64 ? 24 : 16;
	lj_callsite_layout__init(&f->site, gc64);
	if (f->abi.supported && v.arm64)
		trace_offsets_arm64(f, code, v.hi - v.lo);
	else if (f->abi.supported)
		trace_offsets(f, code, v.hi - v.lo, gc64);
	bpf->supported = f->abi.supported;
	bpf->major = 2;
	bpf->minor = 1;
	bpf->range_start[0] = v.lo;
	bpf->range_end[0] = v.hi;
	pr_debug("luajit: %s: VM %#llx-%#llx, %s; traces: vmstate %u, jit_base %u, trace %u, "
		 "startpc %u\n",
		 exe->path, (unsigned long long)v.lo, (unsigned long long)v.hi,
		 !f->abi.supported ? "layout unknown"
		 : gc64            ? "GC64"
				   : "32-bit references",
		 f->abi.g_vmstate, f->abi.g_jit_base, f->abi.g_trace, f->abi.tr_startpc);
	return 0;
}

static int lj_proc_attach(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			  void *proc_state, struct interp_proc *bpf)
{
	struct lj_proc *p = proc_state;

	(void)rt, (void)now_ns;
	p->file = file_state;
	p->bias = bias;
	bpf->luajit = p->file->abi;
	bpf->luajit.vm_lo = bias + p->file->vm_lo;
	bpf->luajit.vm_hi = bias + p->file->vm_hi;
	return 0;
}

static int lj_proc_refresh(void *rt, void *proc_state, uint64_t now_ns, struct interp_proc *bpf,
			   struct interp_code_range *code)
{
	struct lj_proc *p = proc_state;
	uint64_t lo = p->bias + p->file->vm_lo, hi = p->bias + p->file->vm_hi;

	(void)rt, (void)now_ns, (void)bpf;
	if (!p->file->abi.supported || p->code.end)
		return 0;
	/* LuaJIT allocates trace code within a 32-bit jump of the VM (mcode_alloc): reported
	 * whole at once, no trace is ever missed for a refresh that has not come yet; a pc there
	 * in no mapped file is trace code or garbage (which the walk refuses: no VM frame)
	 */
	p->code.start = lo > LJ_CODE_NEAR + 0x10000 ? lo - LJ_CODE_NEAR : 0x10000;
	p->code.end = hi < p->file->user_max - LJ_CODE_NEAR ? hi + LJ_CODE_NEAR : p->file->user_max;
	code[0] = p->code;
	pr_debug("luajit: pid %d: trace code in %#llx-%#llx\n", (int)p->base.pid,
		 (unsigned long long)p->code.start, (unsigned long long)p->code.end);
	return 1;
}

static const char *lj_code_name(void *rt, void *file_state, uint64_t vaddr)
{
	const struct lj_file *f = file_state;

	(void)rt;
	return vaddr >= f->vm_lo && vaddr < f->vm_hi ? "lj_vm" : NULL;
}

static void proto_entry__clear(void *ctx, void *entry)
{
	struct proto_entry *e = entry;

	(void)ctx;
	free(e->file);
	free(e->lineinfo);
}

static const struct symbol_cache_report cache_report = {
	LJ_STAT_READS,         LJ_STAT_UNREADABLE, LJ_STAT_STALE, LJ_STAT_OVER_BUDGET, -1,
	"function unreadable", "function reused",
};

static void site_entry__clear(void *ctx, void *entry)
{
	(void)ctx;
	free(((struct site_entry *)entry)->name);
}

static const struct symbol_cache_report site_report = {
	LJ_STAT_SITE_READS, -1, -1, LJ_STAT_OVER_BUDGET, -1, "call site unreadable",
	"call site reused",
};

static int lj_init(void *rt)
{
	struct lj *lj = rt;
	int err;

	err = symbol_cache__init(&lj->protos, LJ_CACHE_CAP, sizeof(struct proto_entry), false,
				 proto_entry__clear, NULL, &cache_report, lj->stats);
	lj->protos.bytes_max = LJ_CACHE_BYTES;
	if (!err)
		err = symbol_cache__init(&lj->sites, LJ_SITE_CAP, sizeof(struct site_entry), false,
					 site_entry__clear, NULL, &site_report, lj->stats);
	return err;
}

static void lj_fini(void *rt)
{
	symbol_cache__free(&((struct lj *)rt)->protos);
	symbol_cache__free(&((struct lj *)rt)->sites);
}

static const struct interp_marker_text marker_texts[] = {
	{ LUAJIT_MARKER_UNSUPPORTED, "unsupported VM layout" },
	{ LUAJIT_MARKER_LUA, "Lua" },
	{ LUAJIT_MARKER_TRACE, "JIT trace" },
	{ LUAJIT_MARKER_NO_FRAME, "trace without a VM frame" },
	{ LUAJIT_MARKER_BAD_STACK, "bad Lua stack" },
	{ LUAJIT_MARKER_TRUNCATED, "more frames truncated" },
};

static uint64_t get_ref(const uint8_t *b, size_t off, bool gc64)
{
	uint64_t v = 0;

	memcpy(&v, b + off, gc64 ? 8 : 4);
	return v;
}

/* The GCproto at addr of process `from` (symbol_cache_read_fn; ctx: its file): its chunk
 * name and line table.
 */
static int read_proto(const void *ctx, pid_t from, uint64_t addr, void *entry)
{
	const struct lj_file *f = ctx;
	struct proto_entry *e = entry;
	uint8_t pt[128];
	uint64_t chunk, lineinfo;
	size_t lsz;
	char *name;
	int err;

	if (f->abi.pt_size > sizeof(pt) || (err = interp__read_mem(from, addr, pt, f->abi.pt_size)))
		return -EFAULT;
	chunk = get_ref(pt, f->abi.pt_chunkname, f->abi.gc64);
	lineinfo = get_ref(pt, f->pt_lineinfo, f->abi.gc64);
	memcpy(&e->sizebc, pt + f->abi.pt_sizebc, 4);
	memcpy(&e->firstline, pt + f->abi.pt_firstline, 4);
	memcpy(&e->numline, pt + f->pt_numline, 4);
	e->key.cookie = luajit_cookie(chunk, e->firstline);
	name = interp__read_cstr(from, chunk + f->str_data, LJ_CHUNK_MAX);
	if (!name)
		return -EFAULT;
	if (name[0] == '@' || name[0] == '=')
		memmove(name, name + 1, strlen(name));
	e->file = name;
	e->key.bytes = (uint32_t)strlen(name) + 1;
	e->esz = e->numline < 256 ? 1 : e->numline < 65536 ? 2 : 4;
	lsz = e->sizebc > 1 ? (size_t)(e->sizebc - 1) * e->esz : 0;
	if (lineinfo && lsz && lsz <= LJ_LINEINFO_MAX) {
		e->lineinfo = malloc(lsz);
		if (e->lineinfo && interp__read_mem(from, lineinfo, e->lineinfo, lsz)) {
			free(e->lineinfo);
			e->lineinfo = NULL;
		}
		if (e->lineinfo)
			e->key.bytes += (uint32_t)lsz;
	}
	return 0;
}

/* The line of bytecode index pos (lj_debug_line: index 0, the function header, is its first
 * line, sizebc its last; the line table holds the others', firstline-relative), or 0.
 */
static int proto_line(const struct proto_entry *e, uint64_t pos)
{
	uint32_t d = 0;

	if (pos > e->sizebc)
		return 0;
	if (pos == 0)
		return (int)e->firstline;
	if (pos == e->sizebc)
		return (int)(e->firstline + e->numline);
	if (!e->lineinfo)
		return 0;
	memcpy(&d, e->lineinfo + (pos - 1) * e->esz, e->esz); /* little-endian */
	return (int)(e->firstline + d);
}

/* What read_site needs: the caller's GCproto, its instruction, the callee's cookie. */
struct site_ctx {
	const struct lj_file *file;
	uint64_t caller;
	uint32_t pos, cookie;
};

static int read_pid_mem(void *ctx, uint64_t addr, void *buf, size_t size)
{
	return interp__read_mem(*(pid_t *)ctx, addr, buf, size);
}

/* A call site's name (symbol_cache_read_fn; addr: the call instruction's). */
static int read_site(const void *ctx, pid_t from, uint64_t addr, void *entry)
{
	const struct site_ctx *c = ctx;
	struct site_entry *e = entry;
	char name[LJ_CALLSITE_NAME_MAX];

	(void)addr;
	if (lj_callsite__name(&c->file->site, read_pid_mem, &from, c->caller, c->pos, name,
			      sizeof(name)))
		name[0] = 0;
	interp__scrub(name, strlen(name));
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	e->key.cookie = c->cookie;
	e->key.bytes = (uint32_t)strlen(name) + 1;
	return 0;
}

/* The name the frame's caller gives it (bpf_abi.h: its flags and address's top bits), or
 * NULL.
 */
static const struct site_entry *caller_name(struct lj *lj, struct lj_proc *p, pid_t pid,
					    const struct user_frame *uf)
{
	uint64_t caller_pos = uf->addr >> 47, proto = uf->addr & LUAJIT_PROTO_MASK;
	struct site_ctx c = { p->file, 0, 0, (uint32_t)uf->file_id };
	struct interp_symbol ignored = { 0 };
	const struct site_entry *e;

	if (!caller_pos)
		return NULL;
	c.caller = proto + 8 * (uint64_t)(int64_t)(int32_t)uf->flags;
	c.pos = (uint32_t)caller_pos - 1;
	e = symbol_cache__get(&lj->sites, &p->base, pid,
			      c.caller + p->file->abi.pt_size + 4 * (uint64_t)c.pos, c.cookie, 0,
			      read_site, &c, &ignored, NULL);
	if (!e || !e->name[0]) {
		lj->stats[LJ_STAT_SITE_UNNAMED]++;
		return NULL;
	}
	return e;
}

/* The memo of a frame named from proto read `proto` and call-site read `site` (0: none): what
 * the two reads gave never changes (symbol_cache.h); the frame's address and file id carry the
 * rest (the call site's index, the bytecode position, the cookie). 0 (no memo) past 2^32 reads.
 */
static uint64_t lj_memo(uint64_t proto, uint64_t site)
{
	if (proto >> 32 || site >> 31)
		return 0;
	return (site + 1) << 32 | proto;
}

static void lj_symbolize(void *rt, void *proc_state, pid_t pid, const struct user_frame *uf,
			 struct interp_symbol *out)
{
	struct lj_proc *p = proc_state;
	uint64_t pos = uf->file_id >> 32 & LUAJIT_POS_NONE;
	const struct proto_entry *e;
	const struct site_entry *called;
	const char *base;
	struct lj *lj = rt;

	if (!uf->addr)
		return interp__code_marker(out, INTERP_MARKERS(marker_texts), uf->file_id);
	e = symbol_cache__get(&lj->protos, &p->base, pid, uf->addr & LUAJIT_PROTO_MASK,
			      (uint32_t)uf->file_id, 0, read_proto, p->file, out, NULL);
	if (!e)
		return;
	/* the proto cache's entry stays borrowed: the name lives in another cache */
	called = caller_name(lj, p, pid, uf);
	base = strrchr(e->file, '/') ? strrchr(e->file, '/') + 1 : e->file;
	if (called)
		snprintf(lj->name, sizeof(lj->name), "%s", called->name);
	else if (e->firstline == 0)
		snprintf(lj->name, sizeof(lj->name), "<main>");
	else
		snprintf(lj->name, sizeof(lj->name), "<%s:%u>", base, e->firstline);
	*out = (struct interp_symbol){
		.function = lj->name,
		.file = e->file,
		.line = pos == LUAJIT_POS_NONE ? 0 : proto_line(e, pos),
		.memo = lj_memo(e->key.serial, called ? called->key.serial : 0),
	};
}

const struct interp_runtime luajit_runtime = {
	.name = "luajit",
	.frame_type = "luajit",
	.frame_kind = FRAME_KIND_LUAJIT,
	INTERP_RUNTIME_COUNTERS(LUAJIT_COUNTERS, LUAJIT_COUNTER_CNT, LJ_STATS, struct lj),
	.init = lj_init,
	.fini = lj_fini,
	.file_state_sz = sizeof(struct lj_file),
	.file_detect = lj_file_detect,
	.code_name = lj_code_name,
	.proc_state_sz = sizeof(struct lj_proc),
	.proc_attach = lj_proc_attach,
	.proc_refresh = lj_proc_refresh,
	.symbolize = lj_symbolize,
};
