/* Builds a file's unwind table from its CFI sections and symbols; see unwind_table.h.
 *
 * Two passes: (1) every FDE of every source is interpreted in section order, its rows
 * converted to unwind rules and appended to `raw` (consecutive equal rules collapsed inside
 * the FDE), and the FDE recorded as a block; (2) blocks are sorted by (pc_begin, source
 * priority, order) and swept once, clipping overlaps (the earlier block wins), writing an
 * INVALID row at every gap and after the last block, and collapsing equal neighbours.
 * Symbol rules are spliced in afterwards, in place. Memory is bounded by opts.max_rows. A giant
 * file (libLLVM: 950k rows) is built in about the size of its table: raw rows take half of it
 * (12 bytes: the address and the index of the rule in a set of the distinct rules, a few
 * hundred), and the sweep gives back the pages of raw rows and blocks no later block reads
 * (FDEs come nearly in address order), so the two do not add up; the pages of a mapped CFI
 * section are dropped behind the walk, a window at a time (they stay in the page cache).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/array.h"
#include "base/cmp.h"
#include "formats/elf_file.h"
#include "formats/gopclntab.h"
#include "unwind/cfi.h"
#include "unwind/unwind_table.h"

/* A built table's row: the rule is an index into the table's rule set. */
struct raw_row {
	uint32_t addr_lo, addr_hi;
	uint32_t rule;
};

/* A row before the merge (8 bytes: a giant has a million): its address relative to the start
 * of its block (fde_block.pc_begin), the rule an index into the builder's rule set.
 */
struct fde_row {
	int32_t off;
	uint32_t rule;
};

/* Its rows are in one of three forms (unwind_table__read_rows() reads them all):
 *  - packed (a build): 12 bytes a row, the rule an index into `rules` (a build has a few
 *    thousand distinct rules for a million rows: half the memory of whole rows);
 *  - whole rows (unwind_table__from_rows(), _adopt_rows());
 *  - in a file (unwind_table__from_file(): the on-disk cache), read a window at a time.
 * `rows` is also where unwind_table__rows() expands the other two, once, on demand.
 */
struct unwind_table {
	size_t cnt;
	struct unwind_row *rows;
	struct raw_row *packed;
	struct unwind_rule *rules;
	int fd; /* >= 0: the rows are in this file, from fd_off on */
	uint64_t fd_off;
	struct unwind_table_stats stats;
};

/* The distinct rules of a build (open addressing over their hashes). */
struct rule_set {
	struct unwind_rule *rules;
	size_t cnt, cap;
	uint32_t *slots; /* rule index + 1, 0 = empty; a power of two, at most half full */
	size_t slot_cnt;
};

struct fde_block {
	uint64_t pc_begin, pc_end;
	size_t first, cnt; /* rows in builder.raw */
	uint32_t prio;     /* index of the source: lower wins */
	uint32_t seq;      /* order within the source */
};

/* Bytes of executable sections, to recognise signal trampolines by their code. */
struct text_view {
	const uint8_t *data;
	size_t size;
	uint64_t addr;
};

#define TEXT_VIEW_MAX 16

struct builder {
	size_t max_rows;
	bool arm64; /* AArch64 rules (cfi__to_unwind_rule_arm64) */
	struct unwind_table_stats *stats;
	struct cfi_interp *ci;
	const struct cfi_section *sec;
	const struct cfi_fde *fde;
	uint32_t prio, seq;
	size_t fde_first;  /* raw index of the current FDE's first row */
	uint64_t row_base; /* the address raw rows are relative to: the block's pc_begin */

	struct fde_row *raw;
	size_t raw_cnt, raw_cap;
	struct rule_set set;
	struct fde_block *blocks;
	size_t blk_cnt, blk_cap;

	struct text_view text[TEXT_VIEW_MAX];
	size_t text_cnt;
	uint64_t go_end; /* end of the current Go function's last pcsp run */
	bool go_preempt; /* the current Go function is runtime.asyncPreempt */

	struct elf_file *text_file; /* the file mapping the text views (nullable) */
	size_t text_reads;          /* since the text pages were last dropped */
	struct elf_file *sec_file;  /* the file mapping the current section's bytes (nullable) */
	uint64_t sec_dropped;       /* its bytes before this offset were given back */
};

/* Bytes walked between two page drops of a mapped CFI section, and the least bytes of dead
 * raw rows or blocks worth a drop.
 */
#define DROP_WINDOW ((size_t)4 << 20)
#define DROP_MIN ((size_t)1 << 20)

static struct unwind_table *table_new(void)
{
	struct unwind_table *t = calloc(1, sizeof(*t));

	if (t)
		t->fd = -1;
	return t;
}

static bool rule_eq(const struct unwind_rule *a, const struct unwind_rule *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static uint64_t rule_hash(const struct unwind_rule *r);

/* The index of rule in the set, added if new. */
static int rule_set__id(struct rule_set *rs, const struct unwind_rule *rule, size_t max,
			uint32_t *id)
{
	size_t mask, i;
	int err;

	if ((rs->cnt + 1) * 2 > rs->slot_cnt) {
		size_t n = rs->slot_cnt ? rs->slot_cnt * 2 : 256, j;
		uint32_t *slots = calloc(n, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		for (j = 0; j < rs->cnt; j++) {
			for (i = rule_hash(&rs->rules[j]) & (n - 1); slots[i];
			     i = (i + 1) & (n - 1))
				;
			slots[i] = (uint32_t)j + 1;
		}
		free(rs->slots);
		rs->slots = slots;
		rs->slot_cnt = n;
	}
	mask = rs->slot_cnt - 1;
	for (i = rule_hash(rule) & mask; rs->slots[i]; i = (i + 1) & mask) {
		if (rule_eq(&rs->rules[rs->slots[i] - 1], rule)) {
			*id = rs->slots[i] - 1;
			return 0;
		}
	}
	err = array__reserve_bounded((void **)&rs->rules, &rs->cap, rs->cnt + 1, sizeof(*rs->rules),
				     64, max < UINT32_MAX ? max : UINT32_MAX);
	if (err)
		return err;
	rs->rules[rs->cnt] = *rule;
	rs->slots[i] = (uint32_t)++rs->cnt;
	*id = (uint32_t)rs->cnt - 1;
	return 0;
}

static void rule_set__free(struct rule_set *rs)
{
	free(rs->rules);
	free(rs->slots);
}

static uint64_t raw_addr(const struct raw_row *r)
{
	return (uint64_t)r->addr_hi << 32 | r->addr_lo;
}

static void raw_set_addr(struct raw_row *r, uint64_t addr)
{
	r->addr_lo = (uint32_t)addr;
	r->addr_hi = (uint32_t)(addr >> 32);
}

/* Append a row of the current FDE (a rule equal to the one before is dropped). rule's padding
 * must be zero (rules are compared and hashed as bytes).
 */
static int raw_push(struct builder *b, uint64_t addr, const struct unwind_rule *rule)
{
	int64_t off = (int64_t)(addr - b->row_base);
	uint32_t id;
	int err;

	/* No real FDE or Go function spans 2 GiB: a row that far from its start is corrupt. */
	if (off < INT32_MIN || off > INT32_MAX)
		return -ERANGE;
	err = rule_set__id(&b->set, rule, b->max_rows, &id);
	if (err)
		return err;
	if (b->raw_cnt > b->fde_first && b->raw[b->raw_cnt - 1].rule == id)
		return 0;
	err = array__reserve_bounded((void **)&b->raw, &b->raw_cap, b->raw_cnt + 1, sizeof(*b->raw),
				     1024, b->max_rows);
	if (err)
		return err;
	b->raw[b->raw_cnt].off = (int32_t)off;
	b->raw[b->raw_cnt++].rule = id;
	return 0;
}

static int on_row(void *ctx, uint64_t addr, const struct cfi_state *st)
{
	struct builder *b = ctx;
	struct unwind_rule rule;
	unsigned int lost = 0;

	memset(&rule, 0, sizeof(rule));
	if (b->arm64)
		cfi__to_unwind_rule_arm64(st, b->fde->cie, &rule, &lost);
	else
		cfi__to_unwind_rule(st, b->fde->cie, &rule, &lost);
	if (lost)
		b->stats->rbp_lost_cnt++;
	return raw_push(b, addr, &rule);
}

static const uint8_t *text_bytes(const struct builder *b, uint64_t addr, size_t n)
{
	size_t i;

	for (i = 0; i < b->text_cnt; i++) {
		const struct text_view *t = &b->text[i];

		if (addr >= t->addr && addr - t->addr <= t->size && t->size - (addr - t->addr) >= n)
			return t->data + (addr - t->addr);
	}
	return NULL;
}

/* mov $15,%rax; syscall: rt_sigreturn, the body of every x86-64 sa_restorer. */
static const uint8_t sigreturn_code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };

/* The kernel maps a file's pages around a fault (fault_around_bytes, 64 KiB by default). */
#define FAULT_AROUND ((uintptr_t)64 << 10)

static void drop_text(struct builder *b)
{
	size_t i;

	for (i = 0; b->text_file && i < b->text_cnt; i++)
		elf_file__drop_range(b->text_file, b->text[i].data, b->text[i].size);
	b->text_reads = 0;
}

static bool is_sigreturn_at(struct builder *b, uint64_t addr)
{
	const uint8_t *p = text_bytes(b, addr, sizeof(sigreturn_code));
	bool yes = p && !memcmp(p, sigreturn_code, sizeof(sigreturn_code));

	/* A giant's short FDEs are spread over all of its code: give back the pages these reads
	 * brought in now and then, or the whole .text ends up resident for a few bytes of each
	 * (not after each read: a drop is a TLB flush on every CPU the agent runs on).
	 */
	if (p && b->text_file && ++b->text_reads * FAULT_AROUND >= DROP_WINDOW)
		drop_text(b);
	return yes;
}

/* The rows raw[fde_first..] become one block over [begin, end). */
static int push_block(struct builder *b, uint64_t begin, uint64_t end)
{
	struct fde_block *blk;
	int err = array__reserve_bounded((void **)&b->blocks, &b->blk_cap, b->blk_cnt + 1,
					 sizeof(*b->blocks), 1024, b->max_rows);

	if (err)
		return err;
	blk = &b->blocks[b->blk_cnt++];
	blk->pc_begin = begin;
	blk->pc_end = end;
	blk->first = b->fde_first;
	blk->cnt = b->raw_cnt - b->fde_first;
	blk->prio = b->prio;
	blk->seq = b->seq++;
	return 0;
}

static int on_fde(void *ctx, const struct cfi_fde *fde)
{
	struct builder *b = ctx;
	uint64_t len = fde->pc_end - fde->pc_begin, begin = fde->pc_begin;
	int err;

	b->fde = fde;
	b->fde_first = b->raw_cnt;
	b->row_base = fde->pc_begin;
	if (b->sec_file && fde->offset - b->sec_dropped >= DROP_WINDOW) {
		elf_file__drop_range(b->sec_file, (const uint8_t *)b->sec->data + b->sec_dropped,
				     fde->offset - b->sec_dropped);
		b->sec_dropped = fde->offset;
	}
	err = cfi_interp__run(b->ci, b->sec, fde, on_row, b);
	if (err == -ENOMEM || (err == -E2BIG && b->raw_cnt >= b->max_rows))
		return err;
	if (err) {
		b->raw_cnt = b->fde_first;
		b->stats->bad_fde_cnt++;
		b->stats->bad_insn_fde_cnt++;
		return 0;
	}
	/* An FDE around exactly the sigreturn sequence (optionally after the one-byte pad that
	 * makes return-address-minus-one lookups land inside it) is a trampoline even without
	 * the 'S' augmentation.
	 */
	if (!fde->cie->signal_frame && b->text_cnt && len >= 9 && len <= 10 &&
	    is_sigreturn_at(b, fde->pc_end - sizeof(sigreturn_code))) {
		static const struct unwind_rule sig = { .kind = UNWIND_RULE_SIGNAL };

		/* Without the pad, claim the byte before (lost on overlap: earlier FDE wins). */
		if (len == 9 && begin > 1)
			begin--;
		b->raw_cnt = b->fde_first;
		b->row_base = begin;
		err = raw_push(b, begin, &sig);
		if (err)
			return err;
	}
	err = push_block(b, begin, fde->pc_end);
	if (!err)
		b->stats->fde_cnt++;
	return err;
}

static int block_cmp(const void *pa, const void *pb)
{
	const struct fde_block *a = pa, *b = pb;

	return cmp_u64(a->pc_begin, b->pc_begin) ?: cmp_u64(a->prio, b->prio) ?:
							cmp_u64(a->seq, b->seq);
}

static int add_section(struct builder *b, const struct cfi_section *sec, uint32_t prio,
		       struct elf_file *file)
{
	struct eh_frame_stats es = { 0 };
	int err;

	b->sec = sec;
	b->prio = prio;
	b->seq = 0;
	b->sec_file = file;
	b->sec_dropped = 0;
	err = eh_frame__walk(sec, on_fde, b, &es);
	if (file && sec->size > DROP_WINDOW)
		elf_file__drop_range(file, (const uint8_t *)sec->data + b->sec_dropped,
				     sec->size - b->sec_dropped);
	b->sec_file = NULL;
	b->stats->cie_cnt += es.cie_cnt;
	b->stats->bad_cie_cnt += es.bad_cie_cnt;
	b->stats->bad_fde_cnt += es.bad_fde_cnt;
	if (es.truncated)
		b->stats->truncated_section_cnt++;
	return err;
}

/* ---- Go: stack deltas from .gopclntab (pcsp) ---- */

/* One pcsp run on arm64: the caller's sp is sp + sp_delta (no return address on the stack
 * above the frame). A function with a frame stores its caller's x30 at the bottom of its frame
 * (`MOVD.W R30, -N(RSP)`: 0(RSP) = CFA - sp_delta) and x29 right below it (`MOVD R29,
 * -8(RSP)`); while sp_delta is 0 (no frame, a prologue before its store, an epilogue after
 * the frame's release) the return address is still in x30. ra_off is 16 bits: larger frames
 * have no rule.
 */
static struct unwind_rule go_rule_arm64(int32_t sp_delta)
{
	struct unwind_rule rule = { .kind = UNWIND_RULE_INVALID };

	if (sp_delta < 0 || sp_delta > -(INT16_MIN + 8))
		return rule;
	rule.kind = UNWIND_RULE_CFA;
	rule.cfa_reg = DWARF_ARM64_SP;
	rule.cfa_off = sp_delta;
	if (!sp_delta) {
		rule.ra_rule = UNWIND_RA_LINK_REG;
		return rule;
	}
	rule.ra_rule = UNWIND_RA_CFA_OFF;
	rule.ra_off = (int16_t)-sp_delta;
	rule.rbp_rule = UNWIND_RBP_CFA_OFF;
	rule.rbp_off = (int16_t)(-sp_delta - 8);
	return rule;
}

/* One pcsp run: the function has pushed sp_delta bytes above its return address, so
 * CFA = rsp + sp_delta + 8. Go saves the caller's rbp right below the return address in
 * every function with a frame (amd64 frame pointers); a frameless one leaves it alone. A
 * negative delta (a popped return address: syscall.rawVforkSyscall) has no rule.
 */
static int on_go_delta(void *ctx, uint64_t start, uint64_t end, int32_t sp_delta)
{
	struct builder *b = ctx;
	struct unwind_rule rule = { .kind = UNWIND_RULE_INVALID };

	if (b->arm64) {
		rule = go_rule_arm64(sp_delta);
	} else if (sp_delta >= 0 && sp_delta <= INT32_MAX - 8) {
		rule.kind = UNWIND_RULE_CFA;
		rule.cfa_reg = DWARF_RSP;
		rule.cfa_off = sp_delta + 8;
		if (sp_delta > 0) {
			rule.rbp_rule = UNWIND_RBP_CFA_OFF;
			rule.rbp_off = -16;
		}
	}
	if (b->go_preempt && rule.kind == UNWIND_RULE_CFA)
		rule.kind = UNWIND_RULE_GO_PREEMPT;
	b->go_end = end;
	return raw_push(b, start, &rule);
}

/* Go functions that switch stacks (funcFlag SPWRITE) but whose callers the frame pointer
 * finds (UNWIND_RULE_FP_SWITCH: rbp points into the goroutine's stack, below g0's): the vDSO
 * callers time.now and runtime.nanotime1 push rbp before moving to the g0 stack.
 * runtime.asmcgocall (C code runs on g0 above it) is UNWIND_RULE_GO_CGO: the walk goes on
 * in runtime.cgocall from the pc and sp entersyscall saved (m.curg.syscallpc/sp), so the
 * stack reads caller;_Cfunc_f;runtime.cgocall;runtime.asmcgocall;C frames, as Go's own
 * tracebacks place cgocall; without the goroutine (no Go entry for the process, or a replay
 * of a deferred sample) asmcgocall's rbp, cgocall's frame pointer, finds cgocall's caller,
 * one frame short, as FP_SWITCH does.
 */
static const char *const go_fp_switches[] = { "time.now", "runtime.nanotime1" };
/* Go functions that call their callee on g0's stack and come back to the same goroutine:
 * above them on g0 lies no caller, and UNWIND_RULE_GO_G0 continues in the goroutine's stack
 * from where the switch saved it (m.curg.sched, read by eBPF through the runtime's g:
 * bpf/interp/go/goroutine.h). Not runtime.mcall: its callees (park_m, goexit0, gosched_m)
 * drop the goroutine and schedule another, so m.curg soon names the next one (seen in
 * esbuild: a scheduler sample under a goroutine that had not run yet). A preemption through
 * morestack (newstack -> gopreempt_m -> schedule) has that window too, but only between
 * execute() setting the next m.curg and gogo (before it, m.curg is nil: the walk ends). In
 * every other SPWRITE function (mcall, gogo, rt0_go, ...) the walk ends.
 */
static const char *const go_g0_switches[] = { "runtime.systemstack", "runtime.morestack" };

static struct unwind_rule go_switch_rule(const char *name)
{
	struct unwind_rule rule = { .kind = UNWIND_RULE_STOP };
	size_t i;

	for (i = 0; name && i < sizeof(go_fp_switches) / sizeof(go_fp_switches[0]); i++)
		if (!strcmp(name, go_fp_switches[i]))
			rule.kind = UNWIND_RULE_FP_SWITCH;
	for (i = 0; name && i < sizeof(go_g0_switches) / sizeof(go_g0_switches[0]); i++)
		if (!strcmp(name, go_g0_switches[i]))
			rule.kind = UNWIND_RULE_GO_G0;
	if (name && !strcmp(name, "runtime.asmcgocall"))
		rule.kind = UNWIND_RULE_GO_CGO;
	return rule;
}

/* Go's signal handler entry is marked TOPFRAME (the runtime's tracebacks stop there), but its
 * return address is the restorer: unwound by its pcsp table, the walk reaches the SIGNAL rule
 * of runtime.sigreturn and goes on in the interrupted code.
 */
static bool is_go_sigtramp(const char *name)
{
	return name && (!strcmp(name, "runtime.sigtramp") || !strcmp(name, "runtime.cgoSigtramp"));
}

/* Go's asynchronous preemption: the signal handler makes the interrupted goroutine look as if
 * it had called runtime.asyncPreempt at the interrupted pc (sigctxt.pushCall). Every row of
 * asyncPreempt is UNWIND_RULE_GO_PREEMPT: its caller's pc is that pc itself, not a return
 * address, and on arm64 the handler also pushed the caller's x30 in 16 bytes of its own
 * (bpf/native_unwind.h).
 */
static bool is_go_async_preempt(const char *name)
{
	return name && !strcmp(name, "runtime.asyncPreempt");
}

/* Every Go function becomes a block (below every CFI section in priority: C code linked into
 * a cgo binary keeps its own .eh_frame). The outermost frames (funcFlag TOPFRAME: goexit,
 * mstart, rt0_go) end the walk; the signal restorer (recognised by its code) is SIGNAL. A function whose table is corrupt is skipped and counted.
 */
static int add_gopclntab(struct builder *b, const struct gopclntab *go, uint32_t prio)
{
	static const struct unwind_rule stop = { .kind = UNWIND_RULE_STOP };
	size_t i, cnt = gopclntab__func_cnt(go);
	int err = 0;

	b->prio = prio;
	b->seq = 0;
	for (i = 0; i < cnt && !err; i++) {
		struct go_func gf;

		b->fde_first = b->raw_cnt;
		if (gopclntab__func(go, i, &gf) || gf.entry >= gf.end) {
			b->stats->bad_go_func_cnt++;
			continue;
		}
		b->row_base = gf.entry;
		if ((gf.flags & GO_FUNC_TOPFRAME) && !is_go_sigtramp(gf.name)) {
			b->go_end = gf.end;
			err = raw_push(b, gf.entry, &stop);
		} else if (b->text_cnt && gf.entry > 1 && is_sigreturn_at(b, gf.entry)) {
			/* runtime.sigreturn(__sigaction): the restorer of Go's signal handlers;
			 * claim the byte before it for return-address-minus-one lookups.
			 */
			static const struct unwind_rule sig = { .kind = UNWIND_RULE_SIGNAL };

			b->go_end = gf.entry + sizeof(sigreturn_code);
			b->row_base = gf.entry - 1;
			err = raw_push(b, gf.entry - 1, &sig);
			if (!err)
				err = push_block(b, gf.entry - 1, b->go_end);
			b->stats->go_func_cnt++;
			continue;
		} else {
			b->go_end = gf.entry;
			b->go_preempt = is_go_async_preempt(gf.name);
			err = gopclntab__sp_deltas(go, i, on_go_delta, b);
			b->go_preempt = false;
			if (err == -ENOMEM || (err == -E2BIG && b->raw_cnt >= b->max_rows))
				return err;
			if (err == -ENOENT) {
				/* no stack table at all: the linker's markers (go:textfipsstart,
				 * go:textfipsend since Go 1.24), no code of a frame; not corrupt
				 */
				b->raw_cnt = b->fde_first;
				err = 0;
				continue;
			}
			if (err) {
				b->raw_cnt = b->fde_first;
				b->stats->bad_go_func_cnt++;
				err = 0;
				continue;
			}
			if (!err && (gf.flags & GO_FUNC_SPWRITE)) {
				struct unwind_rule sw = go_switch_rule(gf.name);

				b->raw_cnt = b->fde_first;
				err = raw_push(b, gf.entry, &sw);
			}
		}
		if (!err && b->raw_cnt > b->fde_first) {
			err = push_block(b, gf.entry, b->go_end);
			b->stats->go_func_cnt++;
		}
	}
	return err;
}

/* Append a row to the output, keeping the invariants (increasing addr, no equal
 * neighbours; a later row at the same addr replaces the earlier one).
 */
static int out_push(struct unwind_table *t, const struct rule_set *rs, size_t *cap, size_t max,
		    uint64_t addr, uint32_t rule)
{
	int err;

	while (t->cnt && raw_addr(&t->packed[t->cnt - 1]) >= addr)
		t->cnt--;
	/* The set holds each rule once: equal rules have equal indexes. */
	if (t->cnt && t->packed[t->cnt - 1].rule == rule)
		return 0;
	if (!t->cnt && rs->rules[rule].kind == UNWIND_RULE_INVALID)
		return 0;
	err = array__reserve_bounded((void **)&t->packed, cap, t->cnt + 1, sizeof(*t->packed), 1024,
				     max);
	if (err)
		return err;
	raw_set_addr(&t->packed[t->cnt], addr);
	t->packed[t->cnt++].rule = rule;
	return 0;
}

/* Give back the whole pages of [p, p + len): memory of a live allocation that is never read
 * again (they read as zeros if it ever is; free() and realloc() only touch its ends).
 */
static void drop_dead(const void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo, hi;

	lo = ((uintptr_t)p + page - 1) & ~(page - 1);
	hi = ((uintptr_t)p + len) & ~(page - 1);
	if (lo < hi)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* After the sort: live[i] = the least raw index blocks i.. read (the raw rows below it are
 * dead once block i - 1 is merged). NULL for a build too small to be worth it.
 */
static size_t *raw_low_marks(const struct builder *b)
{
	size_t *live, i;

	if (b->raw_cnt * sizeof(*b->raw) < 2 * DROP_MIN)
		return NULL;
	live = malloc((b->blk_cnt + 1) * sizeof(*live));
	if (!live)
		return NULL; /* only memory given back later: not an error */
	live[b->blk_cnt] = b->raw_cnt;
	for (i = b->blk_cnt; i-- > 0;)
		live[i] = b->blocks[i].first < live[i + 1] ? b->blocks[i].first : live[i + 1];
	return live;
}

static uint64_t fde_row_addr(const struct fde_block *blk, const struct fde_row *r)
{
	return blk->pc_begin + (uint64_t)(int64_t)r->off;
}

static int merge_blocks(struct builder *b, struct unwind_table *t, size_t *cap)
{
	static const struct unwind_rule none = { .kind = UNWIND_RULE_INVALID };
	uint64_t covered = 0;
	bool any = false;
	size_t i, j, *live = NULL, raw_dropped = 0, blk_dropped = 0;
	uint32_t invalid;
	int err = rule_set__id(&b->set, &none, b->max_rows, &invalid);

	if (err)
		return err;
	if (b->blk_cnt)
		qsort(b->blocks, b->blk_cnt, sizeof(*b->blocks), block_cmp);
	live = raw_low_marks(b);
	for (i = 0; i < b->blk_cnt; i++) {
		const struct fde_block *blk = &b->blocks[i];
		const struct fde_row *rows = b->raw + blk->first;
		uint64_t start = blk->pc_begin;

		if (any && start < covered) {
			b->stats->overlap_fde_cnt++;
			if (blk->pc_end <= covered)
				continue;
			start = covered;
		}
		if (any && start > covered) {
			err = out_push(t, &b->set, cap, b->max_rows, covered, invalid);
			if (err)
				goto cleanup;
		}
		/* The rule in force at start, then the rows after it. */
		for (j = 0; j + 1 < blk->cnt && fde_row_addr(blk, &rows[j + 1]) <= start; j++)
			;
		err = out_push(t, &b->set, cap, b->max_rows, start, rows[j].rule);
		for (j++; !err && j < blk->cnt; j++)
			err = out_push(t, &b->set, cap, b->max_rows, fde_row_addr(blk, &rows[j]),
				       rows[j].rule);
		if (err)
			goto cleanup;
		covered = blk->pc_end;
		any = true;
		/* What no later block reads goes back while the table grows. */
		if (live && (live[i + 1] - raw_dropped) * sizeof(*b->raw) >= DROP_MIN) {
			drop_dead(b->raw + raw_dropped,
				  (live[i + 1] - raw_dropped) * sizeof(*b->raw));
			raw_dropped = live[i + 1];
		}
		if (live && (i + 1 - blk_dropped) * sizeof(*b->blocks) >= DROP_MIN) {
			drop_dead(b->blocks + blk_dropped,
				  (i + 1 - blk_dropped) * sizeof(*b->blocks));
			blk_dropped = i + 1;
		}
	}
	if (any)
		err = out_push(t, &b->set, cap, b->max_rows, covered, invalid);
cleanup:
	free(live);
	return err;
}

/* Index of the last row at or below addr; cnt when addr is below the first row. */
static size_t packed_find(const struct unwind_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->cnt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (raw_addr(&t->packed[mid]) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : t->cnt;
}

/* The rule in force at addr (`invalid` below the first row). */
static uint32_t rule_at(const struct unwind_table *t, uint64_t addr, uint32_t invalid)
{
	size_t i = packed_find(t, addr);

	return i < t->cnt ? t->packed[i].rule : invalid;
}

/* Make t normal again (out_push()'s invariants) in place, after rows were spliced in. */
static void normalize(struct unwind_table *t, const struct rule_set *rs)
{
	size_t i, w = 0;

	for (i = 0; i < t->cnt; i++) {
		struct raw_row r = t->packed[i];

		while (w && raw_addr(&t->packed[w - 1]) >= raw_addr(&r))
			w--;
		if ((w && t->packed[w - 1].rule == r.rule) ||
		    (!w && rs->rules[r.rule].kind == UNWIND_RULE_INVALID))
			continue;
		t->packed[w++] = r;
	}
	t->cnt = w;
}

/* Put `rule` over [addr, end): everywhere, or only where the table says INVALID.
 * The rows in [addr, end] are replaced by the mark's in place (no second copy of the table).
 */
static int apply_mark(struct unwind_table *t, struct rule_set *rs, size_t *cap, size_t max,
		      uint64_t addr, uint64_t end, const struct unwind_rule *rule, bool gaps_only)
{
	struct unwind_rule mark_rule, none;
	struct raw_row *seg = NULL;
	size_t seg_cnt = 0, lo, hi, i;
	uint32_t mark, invalid, tail, cur;
	int err;

	if (addr >= end)
		return 0;
	mark_rule = *rule;
	memset(&none, 0, sizeof(none));
	none.kind = UNWIND_RULE_INVALID;
	err = rule_set__id(rs, &mark_rule, max, &mark);
	if (!err)
		err = rule_set__id(rs, &none, max, &invalid);
	if (err)
		return err;
	tail = rule_at(t, end, invalid);
	cur = rule_at(t, addr, invalid);
	/* lo: first row with addr > mark start; hi: first row with addr > end. */
	for (lo = 0; lo < t->cnt && raw_addr(&t->packed[lo]) <= addr; lo++)
		;
	for (hi = lo; hi < t->cnt && raw_addr(&t->packed[hi]) <= end; hi++)
		;
	seg = calloc(hi - lo + 2, sizeof(*seg));
	if (!seg)
		return -ENOMEM;
	raw_set_addr(&seg[seg_cnt], addr);
	seg[seg_cnt++].rule = gaps_only && rs->rules[cur].kind != UNWIND_RULE_INVALID ? cur : mark;
	for (i = lo; gaps_only && i < hi && raw_addr(&t->packed[i]) < end; i++) {
		seg[seg_cnt] = t->packed[i];
		if (rs->rules[t->packed[i].rule].kind == UNWIND_RULE_INVALID)
			seg[seg_cnt].rule = mark;
		seg_cnt++;
	}
	raw_set_addr(&seg[seg_cnt], end);
	seg[seg_cnt++].rule = tail;

	/* Splice: rows before the mark, the segment, rows after end; then normal again. */
	if (seg_cnt > hi - lo) {
		err = array__reserve_bounded((void **)&t->packed, cap, t->cnt + seg_cnt - (hi - lo),
					     sizeof(*t->packed), 1024, max);
		if (err)
			goto cleanup;
	}
	memmove(t->packed + lo + seg_cnt, t->packed + hi, (t->cnt - hi) * sizeof(*t->packed));
	memcpy(t->packed + lo, seg, seg_cnt * sizeof(*seg));
	t->cnt = t->cnt - (hi - lo) + seg_cnt;
	normalize(t, rs);
cleanup:
	free(seg);
	return err;
}

static uint64_t rule_hash(const struct unwind_rule *r)
{
	uint64_t a, c = 0; /* 4 bytes go into c: its upper half must be zero */

	memcpy(&a, r, 8);
	memcpy(&c, (const uint8_t *)r + 8, 4);
	a ^= c * 0x9e3779b97f4a7c15ull;
	a ^= a >> 31;
	a *= 0xbf58476d1ce4e5b9ull;
	a ^= a >> 29;
	return a;
}

/* Row counts by kind and the distinct rules among the rows (rules the set holds but no row
 * uses, e.g. of an FDE hidden by another, are not counted).
 */
static int count_rules(struct unwind_table *t, const struct rule_set *rs)
{
	struct unwind_table_stats *s = &t->stats;
	/* the kinds counted apart (by enum unwind_rule_kind) */
	size_t *const kind_cnt[UNWIND_RULE_GO_PREEMPT + 1] = {
		[UNWIND_RULE_UNSUPPORTED] = &s->unsupported_row_cnt,
		[UNWIND_RULE_STOP] = &s->stop_row_cnt,
		[UNWIND_RULE_SIGNAL] = &s->signal_row_cnt,
		[UNWIND_RULE_PLT] = &s->plt_row_cnt,
		[UNWIND_RULE_CFA_DEREF] = &s->deref_row_cnt,
	};
	bool *used = calloc(rs->cnt ? rs->cnt : 1, sizeof(*used));
	size_t i;

	if (!used)
		return -ENOMEM;
	for (i = 0; i < t->cnt; i++) {
		uint32_t id = t->packed[i].rule;
		uint8_t kind = rs->rules[id].kind;

		if (kind < sizeof(kind_cnt) / sizeof(kind_cnt[0]) && kind_cnt[kind])
			(*kind_cnt[kind])++;
		if (!used[id]) {
			used[id] = true;
			s->unique_rule_cnt++;
		}
	}
	s->row_cnt = t->cnt;
	free(used);
	return 0;
}

static void builder_fini(struct builder *b)
{
	cfi_interp__free(b->ci);
	free(b->raw);
	free(b->blocks);
	rule_set__free(&b->set);
}

/* Code without CFI that a pattern says the rule of (x86-64), found in the gaps of the merged
 * table before the symbol marks go on, applied after them:
 *
 * - Function entries. crtstuff's functions (deregister_tm_clones, register_tm_clones,
 *   __do_global_dtors_aux, frame_dummy) have no FDE in Debian's builds, nor a symbol in a
 *   stripped library, and are mostly sampled at their first instruction, on the page fault of
 *   its fetch (at exit: 7 of ~1,100 samples of a bash subshell loop ended "[unwind: no CFI]"
 *   at libtinfo's __do_global_dtors_aux). A CET build starts every function reached
 *   indirectly with endbr64, and nothing is pushed there: CFA = rsp + 8, the return address at
 *   [rsp]. So an endbr64 at a 16-byte boundary (where compilers align functions) in a gap of 16
 *   bytes or more (smaller ones are padding) gets that rule for its 4 bytes, where no symbol
 *   mark (a STOP at _start) says otherwise.
 * - The parent's return from glibc's clone() and clone3(): their FDE ends before the syscall
 *   ("in the child the unwind info will be wrong"), and the parent goes on with
 *   `test %rax,%rax; jl; je; ret` and nothing pushed: CFA = rsp + 8 from the syscall's end to
 *   the ret. A parent waiting for a vfork child there (posix_spawn(), system(), popen()) ended
 *   at "[unknown]" under __clone3, and under clone at a STOP mark (a thread root: a stack
 *   cut short that said it was complete); this rule goes over that mark. A child sampled on
 *   the same few bytes before its jump to its thread root gets a wrong caller instead.
 *
 * Only the gaps' bytes are read; at most CODE_MARK_MAX per file.
 */
#define ENTRY_GAP_MIN 16
#define CODE_MARK_MAX 1024
static const uint8_t endbr64_code[] = { 0xf3, 0x0f, 0x1e, 0xfa };
/* syscall; test %rax,%rax; jl rel8; je rel8; ret (0: any byte) */
static const uint8_t clone_return_code[] = { 0x0f, 0x05, 0x48, 0x85, 0xc0, 0x7c, 0, 0x74, 0, 0xc3 };
static const bool clone_return_any[sizeof(clone_return_code)] = { [6] = true, [8] = true };

struct code_mark {
	uint64_t addr, end;
	bool over_marks; /* applied over symbol marks too (else only where the table has no rule) */
};

struct code_marks {
	struct code_mark *m;
	size_t cnt;
};

static bool is_clone_return_at(const struct builder *b, uint64_t addr)
{
	const uint8_t *code = text_bytes(b, addr, sizeof(clone_return_code));
	size_t i;

	for (i = 0; code && i < sizeof(clone_return_code); i++)
		if (!clone_return_any[i] && code[i] != clone_return_code[i])
			return false;
	return code != NULL;
}

/* Entries in [lo, hi) read from the text views only: a gap of a hostile table may span the
 * whole address space (the fuzzer's timeout), the code it covers cannot.
 */
static void gap_entries(const struct builder *b, uint64_t lo, uint64_t hi, struct code_marks *cm)
{
	size_t v;

	for (v = 0; v < b->text_cnt && cm->cnt < CODE_MARK_MAX; v++) {
		const struct text_view *t = &b->text[v];
		uint64_t from = lo > t->addr ? lo : t->addr, to = t->addr + t->size, p;

		if (to > hi)
			to = hi;
		for (p = (from + 15) & ~15ull;
		     p >= from && p + sizeof(endbr64_code) <= to && cm->cnt < CODE_MARK_MAX;
		     p += 16)
			if (!memcmp(t->data + (p - t->addr), endbr64_code, sizeof(endbr64_code)))
				cm->m[cm->cnt++] =
					(struct code_mark){ p, p + sizeof(endbr64_code), false };
	}
}

static void gap_code_marks(const struct builder *b, uint64_t lo, uint64_t hi, struct code_marks *cm)
{
	if (cm->cnt < CODE_MARK_MAX && hi - lo >= sizeof(clone_return_code) &&
	    is_clone_return_at(b, lo))
		cm->m[cm->cnt++] =
			(struct code_mark){ lo + 2, lo + sizeof(clone_return_code), true };
	if (hi - lo >= ENTRY_GAP_MIN)
		gap_entries(b, lo, hi, cm);
}

static int find_code_marks(struct builder *b, const struct unwind_table *t, struct code_marks *cm)
{
	uint64_t first, lo;
	size_t i;

	cm->cnt = 0;
	cm->m = NULL;
	if (b->arm64 || !t->cnt || !b->text_cnt)
		return 0;
	cm->m = malloc(CODE_MARK_MAX * sizeof(*cm->m));
	if (!cm->m)
		return -ENOMEM;
	/* before the first row: from the lowest text view (once: gap_entries() reads them all) */
	first = raw_addr(&t->packed[0]);
	for (i = 0, lo = first; i < b->text_cnt; i++)
		if (b->text[i].addr < lo)
			lo = b->text[i].addr;
	if (lo < first)
		gap_code_marks(b, lo, first, cm);
	for (i = 0; i + 1 < t->cnt; i++)
		if (b->set.rules[t->packed[i].rule].kind == UNWIND_RULE_INVALID)
			gap_code_marks(b, raw_addr(&t->packed[i]), raw_addr(&t->packed[i + 1]), cm);
	if (b->text_reads || cm->cnt)
		drop_text(b);
	return 0;
}

static int apply_code_marks(struct builder *b, struct unwind_table *t, size_t *cap,
			    const struct code_marks *cm)
{
	const struct unwind_rule rule = { .kind = UNWIND_RULE_CFA,
					  .cfa_reg = DWARF_RSP,
					  .cfa_off = 8,
					  .rbp_rule = UNWIND_RBP_SAME,
					  .ra_rule = UNWIND_RA_CFA_MINUS_8,
					  .rbx_rule = UNWIND_RBX_SAME };
	size_t i;
	int err = 0;

	/* apply_mark() shifts rows: the addresses were all taken first */
	for (i = 0; i < cm->cnt && !err; i++) {
		err = apply_mark(t, &b->set, cap, b->max_rows, cm->m[i].addr, cm->m[i].end, &rule,
				 !cm->m[i].over_marks);
		if (cm->m[i].over_marks)
			t->stats.clone_return_cnt++;
		else
			t->stats.entry_mark_cnt++;
	}
	return err;
}

struct symbol_mark {
	uint64_t addr, end;
	uint8_t kind;
	bool gaps_only;
};

#define SYMBOL_MARK_MAX 32

struct build_input {
	const struct cfi_section *secs;
	size_t sec_cnt;
	const unsigned int *sec_src; /* enum unwind_source of each section (nullable) */
	const struct symbol_mark *marks;
	size_t mark_cnt;
	const struct text_view *text;
	size_t text_cnt;
	const struct gopclntab *go; /* nullable: a Go executable's table, after every section */
	struct elf_file *const *sec_file; /* per section: the file it maps (nullable) */
	struct elf_file *text_file;       /* the file the text views map (nullable) */
	uint16_t machine;                 /* EM_AARCH64: arm64 rules; anything else: x86-64 */
};

static int build(const struct build_input *in, const struct unwind_table_opts *opts,
		 struct unwind_table **out)
{
	struct code_marks code = { 0 };
	struct builder b = { 0 };
	struct unwind_table *t;
	size_t cap = 0, i;
	int err = 0;

	*out = NULL;
	t = table_new();
	if (!t)
		return -ENOMEM;
	b.max_rows = opts && opts->max_rows ? opts->max_rows : UNWIND_TABLE_MAX_ROWS;
	b.arm64 = in->machine == EM_AARCH64;
	b.stats = &t->stats;
	b.ci = cfi_interp__new();
	if (!b.ci) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < in->text_cnt && i < TEXT_VIEW_MAX; i++)
		b.text[b.text_cnt++] = in->text[i];
	b.text_file = in->text_file;
	for (i = 0; i < in->sec_cnt; i++) {
		size_t before = t->stats.fde_cnt;

		err = add_section(&b, &in->secs[i], (uint32_t)i,
				  in->sec_file ? in->sec_file[i] : NULL);
		if (err)
			goto cleanup;
		if (t->stats.fde_cnt > before && in->sec_src)
			t->stats.sources |= in->sec_src[i];
	}
	if (in->go) {
		err = add_gopclntab(&b, in->go, (uint32_t)in->sec_cnt);
		if (err)
			goto cleanup;
		if (t->stats.go_func_cnt)
			t->stats.sources |= UNWIND_SRC_GOPCLNTAB;
	}
	if (b.text_reads)
		drop_text(&b);
	err = merge_blocks(&b, t, &cap);
	if (err)
		goto cleanup;
	/* The per-FDE rows are merged: give them back before the marks. */
	free(b.raw);
	free(b.blocks);
	b.raw = NULL;
	b.blocks = NULL;
	err = find_code_marks(&b, t, &code);
	if (err)
		goto cleanup;
	for (i = 0; i < in->mark_cnt; i++) {
		const struct symbol_mark *m = &in->marks[i];

		err = apply_mark(t, &b.set, &cap, b.max_rows, m->addr, m->end,
				 &(struct unwind_rule){ .kind = m->kind }, m->gaps_only);
		if (err)
			goto cleanup;
		t->stats.sources |= UNWIND_SRC_SYMBOLS;
	}
	err = apply_code_marks(&b, t, &cap, &code);
	if (err)
		goto cleanup;
	err = count_rules(t, &b.set);
	if (err)
		goto cleanup;
	/* The table keeps the rules its rows index (the slots only served the build). */
	t->rules = b.set.rules;
	b.set.rules = NULL;
	if (cap > t->cnt && t->cnt) {
		struct raw_row *fit = realloc(t->packed, t->cnt * sizeof(*fit));

		if (fit)
			t->packed = fit;
	}
	{
		const struct cfi_stats *cs = cfi_interp__stats(b.ci);

		t->stats.args_size_cnt = cs->args_size_cnt;
		t->stats.max_remember_depth = cs->max_depth;
	}
cleanup:
	free(code.m);
	builder_fini(&b);
	if (err) {
		unwind_table__free(t);
		return err;
	}
	*out = t;
	return 0;
}

int unwind_table__from_sections(const struct cfi_section *secs, size_t sec_cnt,
				const struct unwind_table_opts *opts, struct unwind_table **out)
{
	struct build_input in = { .secs = secs, .sec_cnt = sec_cnt };

	if (opts)
		in.machine = opts->machine;

	if (!out || (sec_cnt && !secs))
		return -EINVAL;
	return build(&in, opts, out);
}

/* ---- ELF sources ---- */

struct elf_sources {
	struct cfi_section secs[3];
	unsigned int src[3];
	struct elf_file *file[3];
	size_t sec_cnt;
	struct symbol_mark marks[SYMBOL_MARK_MAX];
	size_t mark_cnt;
	struct text_view text[TEXT_VIEW_MAX];
	size_t text_cnt;
};

static uint64_t section_addr(struct elf_file *ef, const char *name)
{
	struct elf_section s;

	return elf_file__section(ef, name, &s) ? 0 : s.addr;
}

static int add_cfi(struct elf_sources *src, struct elf_file *ef, const char *name,
		   enum cfi_section_kind kind, unsigned int source)
{
	struct cfi_section *c;
	struct elf_section s;

	if (elf_file__section(ef, name, &s) || !s.data || !s.size || s.type == SHT_NOBITS)
		return -ENOENT;
	c = &src->secs[src->sec_cnt];
	memset(c, 0, sizeof(*c));
	c->data = s.data;
	c->size = s.size;
	c->vaddr = s.addr;
	c->kind = kind;
	c->text_vaddr = section_addr(ef, ".text");
	c->data_vaddr = section_addr(ef, ".got");
	src->file[src->sec_cnt] = ef;
	src->src[src->sec_cnt++] = source;
	return 0;
}

/* A file without section headers (or without an .eh_frame section header) still tells the
 * loader where its unwind info is: PT_GNU_EH_FRAME points at .eh_frame_hdr, which holds the
 * address of .eh_frame. The section's end is unknown, so the walk stops at its terminator.
 */
static int add_eh_frame_from_hdr(struct elf_sources *src, struct elf_file *ef)
{
	size_t i, n = elf_file__segment_cnt(ef), avail;
	uint64_t eh_vaddr, fde_cnt;
	const void *hdr, *data;
	struct cfi_section *c;

	for (i = 0; i < n; i++) {
		const struct elf_segment *seg = elf_file__segment(ef, i);

		if (seg->type != PT_GNU_EH_FRAME)
			continue;
		if (elf_file__bytes_at_vaddr(ef, seg->vaddr, &hdr, &avail) ||
		    eh_frame_hdr__parse(hdr, avail, seg->vaddr, &eh_vaddr, &fde_cnt) ||
		    elf_file__bytes_at_vaddr(ef, eh_vaddr, &data, &avail))
			return -ENOENT;
		c = &src->secs[src->sec_cnt];
		memset(c, 0, sizeof(*c));
		c->data = data;
		c->size = avail;
		c->vaddr = eh_vaddr;
		c->kind = CFI_SECTION_EH_FRAME;
		c->stop_at_terminator = true;
		src->file[src->sec_cnt] = ef;
		src->src[src->sec_cnt++] = UNWIND_SRC_EH_FRAME | UNWIND_SRC_EH_FRAME_HDR_ONLY;
		return 0;
	}
	return -ENOENT;
}

static void collect_text(struct elf_sources *src, struct elf_file *ef)
{
	size_t i, n = elf_file__section_cnt(ef);

	for (i = 0; i < n && src->text_cnt < TEXT_VIEW_MAX; i++) {
		struct elf_section s;

		if (elf_file__section_at(ef, i, &s, NULL, NULL) || !s.data ||
		    s.type != SHT_PROGBITS || !(s.flags & SHF_EXECINSTR))
			continue;
		src->text[src->text_cnt].data = s.data;
		src->text[src->text_cnt].size = s.size;
		src->text[src->text_cnt].addr = s.addr;
		src->text_cnt++;
	}
	/* No section headers (stripped of them, as CFI through PT_GNU_EH_FRAME is read): the
	 * executable segments' file images.
	 */
	for (i = 0; !n && i < elf_file__segment_cnt(ef) && src->text_cnt < TEXT_VIEW_MAX; i++) {
		const struct elf_segment *sg = elf_file__segment(ef, i);
		const void *data;
		size_t avail;

		if (sg->type != PT_LOAD || !(sg->flags & PF_X) || !sg->filesz ||
		    elf_file__bytes_at_vaddr(ef, sg->vaddr, &data, &avail))
			continue;
		src->text[src->text_cnt].data = data;
		src->text[src->text_cnt].size = avail < sg->filesz ? avail : sg->filesz;
		src->text[src->text_cnt].addr = sg->vaddr;
		src->text_cnt++;
	}
}

struct root_symbol {
	const char *name;
	uint8_t kind;
	bool gaps_only;
};

static const struct root_symbol root_symbols[] = {
	{ "_start", UNWIND_RULE_STOP, false },
	{ "start_thread", UNWIND_RULE_STOP, false },
	{ "clone", UNWIND_RULE_STOP, true },
	{ "__clone", UNWIND_RULE_STOP, true },
	{ "clone3", UNWIND_RULE_STOP, true },
	{ "__clone3", UNWIND_RULE_STOP, true },
	{ "__restore_rt", UNWIND_RULE_SIGNAL, true },
	{ "__kernel_rt_sigreturn", UNWIND_RULE_SIGNAL, true }, /* arm64 vDSO */
};

/* arm64: the vDSO's sa_restorer, `mov x8, #139 (rt_sigreturn); svc #0`, after the nop that
 * return-address lookups (pc - 1) land in.
 */
static const uint32_t arm64_sigreturn_code[] = { 0xd2801168, 0xd4000001 };

static bool is_arm64_sigreturn_at(const struct elf_sources *src, uint64_t addr)
{
	struct builder tmp = { 0 };
	const uint8_t *p;
	uint8_t want[sizeof(arm64_sigreturn_code)];
	size_t i;

	memcpy(tmp.text, src->text, sizeof(src->text));
	tmp.text_cnt = src->text_cnt;
	p = text_bytes(&tmp, addr, sizeof(want));
	for (i = 0; i < sizeof(want); i++)
		want[i] =
			(uint8_t)(arm64_sigreturn_code[i / 4] >> (8 * (i % 4))); /* little endian */
	return p && !memcmp(p, want, sizeof(want));
}

static void add_mark(struct elf_sources *src, uint64_t addr, uint64_t end, uint8_t kind,
		     bool gaps_only)
{
	size_t i;

	for (i = 0; i < src->mark_cnt; i++)
		if (src->marks[i].addr == addr && src->marks[i].end == end)
			return; /* aliases (clone/__clone) and .dynsym+.symtab duplicates */
	if (src->mark_cnt == SYMBOL_MARK_MAX)
		return;
	src->marks[src->mark_cnt++] = (struct symbol_mark){ addr, end, kind, gaps_only };
}

/* arm64: PLT stubs leave sp and the link register alone, and carry no CFI. */
static void add_arm64_plt(struct elf_sources *src, struct elf_file *ef)
{
	struct elf_section s;

	if (!elf_file__section(ef, ".plt", &s) && s.size && (s.flags & SHF_EXECINSTR))
		add_mark(src, s.addr, s.addr + s.size, UNWIND_RULE_PLT, true);
}

static bool name_is(const char *strtab, size_t strsz, uint32_t off, const char *name)
{
	size_t len = strlen(name);

	/* Exact match: symbol versions live in .gnu.version, not in the name. */
	return off < strsz && strsz - off > len && !memcmp(strtab + off, name, len) &&
	       strtab[off + len] == '\0';
}

static void scan_symbols(struct elf_sources *src, struct elf_file *ef, const char *symtab,
			 const char *strtab)
{
	struct elf_section sy, st;
	const Elf64_Sym *syms;
	size_t i, n, k;

	if (elf_file__section(ef, symtab, &sy) || elf_file__section(ef, strtab, &st) || !sy.data ||
	    !st.data || sy.type == SHT_NOBITS)
		return;
	syms = sy.data;
	n = sy.size / sizeof(Elf64_Sym);
	for (i = 0; i < n; i++) {
		Elf64_Sym s;
		uint64_t end;

		memcpy(&s, &syms[i], sizeof(s));
		if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value || s.st_shndx == SHN_UNDEF)
			continue;
		for (k = 0; k < sizeof(root_symbols) / sizeof(root_symbols[0]); k++) {
			const struct root_symbol *rs = &root_symbols[k];

			if (!name_is(st.data, st.size, s.st_name, rs->name))
				continue;
			if (rs->kind == UNWIND_RULE_SIGNAL) {
				/* Trust the name only with the code; cover the pad byte before
				 * it for return-address-minus-one lookups.
				 */
				struct builder tmp = { 0 };

				if (s.st_value >= 4 && is_arm64_sigreturn_at(src, s.st_value)) {
					add_mark(src, s.st_value - 4,
						 s.st_value + sizeof(arm64_sigreturn_code),
						 rs->kind, true);
					continue;
				}
				memcpy(tmp.text, src->text, sizeof(src->text));
				tmp.text_cnt = src->text_cnt;
				if (!is_sigreturn_at(&tmp, s.st_value))
					continue;
				add_mark(src, s.st_value - 1, s.st_value + sizeof(sigreturn_code),
					 rs->kind, true);
				continue;
			}
			if (__builtin_add_overflow(s.st_value, s.st_size ? s.st_size : 1, &end))
				continue;
			add_mark(src, s.st_value, end, rs->kind, rs->gaps_only || !s.st_size);
		}
	}
	/* read once here: a giant's names need not stay resident (symbolization reads its own) */
	elf_file__drop_range(ef, sy.data, sy.size);
	elf_file__drop_range(ef, st.data, st.size);
}

int unwind_table__build_opts(struct elf_file *ef, struct elf_file *debug_ef,
			     const struct unwind_table_opts *opts, struct unwind_table **out)
{
	struct elf_sources *src;
	struct build_input in = { 0 };
	struct gopclntab *go = NULL;
	int err;

	if (!ef || !out)
		return -EINVAL;
	*out = NULL;
	src = calloc(1, sizeof(*src));
	if (!src)
		return -ENOMEM;
	if (!opts || !opts->no_gopclntab)
		go = gopclntab__open(ef);
	if (add_cfi(src, ef, ".eh_frame", CFI_SECTION_EH_FRAME, UNWIND_SRC_EH_FRAME))
		add_eh_frame_from_hdr(src, ef);
	add_cfi(src, ef, ".debug_frame", CFI_SECTION_DEBUG_FRAME, UNWIND_SRC_DEBUG_FRAME);
	if (debug_ef)
		add_cfi(src, debug_ef, ".debug_frame", CFI_SECTION_DEBUG_FRAME,
			UNWIND_SRC_DEBUG_FILE);
	collect_text(src, ef);
	if (!opts || !opts->no_symbols) {
		/* The entry point runs with no caller (the dynamic loader's `_start` has no
		 * CFI and, stripped, no symbol): its first bytes end a stack where no CFI
		 * says otherwise.
		 */
		if (elf_file__entry(ef) && elf_file__type(ef) != ET_REL)
			add_mark(src, elf_file__entry(ef), elf_file__entry(ef) + ELF_ENTRY_ROOT_SZ,
				 UNWIND_RULE_STOP, true);
		scan_symbols(src, ef, ".symtab", ".strtab");
		scan_symbols(src, ef, ".dynsym", ".dynstr");
		if (debug_ef)
			scan_symbols(src, debug_ef, ".symtab", ".strtab");
		if (elf_file__machine(ef) == EM_AARCH64)
			add_arm64_plt(src, ef);
	}
	if (!src->sec_cnt && !src->mark_cnt && !go) {
		err = -ENOENT;
		goto cleanup;
	}
	in.go = go;
	in.secs = src->secs;
	in.sec_cnt = src->sec_cnt;
	in.sec_src = src->src;
	in.sec_file = src->file;
	in.text_file = ef;
	in.marks = src->marks;
	in.mark_cnt = src->mark_cnt;
	in.text = src->text;
	in.text_cnt = src->text_cnt;
	in.machine = elf_file__machine(ef);
	err = build(&in, opts, out);
	if (!err && !(*out)->cnt) {
		unwind_table__free(*out);
		*out = NULL;
		err = -ENOENT;
	}
cleanup:
	gopclntab__free(go);
	free(src);
	return err;
}

int unwind_table__build(struct elf_file *ef, struct elf_file *debug_ef, struct unwind_table **out)
{
	return unwind_table__build_opts(ef, debug_ef, NULL, out);
}

int unwind_rows__check(const struct unwind_row *rows, size_t cnt, size_t done, uint64_t *last_addr)
{
	size_t i;

	if (done + cnt > UNWIND_TABLE_MAX_ROWS)
		return -E2BIG;
	for (i = 0; i < cnt; i++) {
		if (((done || i) && rows[i].addr <= *last_addr) ||
		    rows[i].rule.kind > UNWIND_RULE_GO_PREEMPT ||
		    rows[i].rule.rbp_rule > UNWIND_RBP_RBP_OFF ||
		    rows[i].rule.ra_rule > UNWIND_RA_REG ||
		    rows[i].rule.rbx_rule > UNWIND_RBX_CFA_OFF)
			return -EINVAL;
		*last_addr = rows[i].addr;
	}
	return 0;
}

static int check_rows(const struct unwind_row *rows, size_t cnt)
{
	uint64_t last = 0;

	return unwind_rows__check(rows, cnt, 0, &last);
}

int unwind_table__adopt_rows(struct unwind_row *rows, size_t cnt, struct unwind_table **out)
{
	struct unwind_table *t;
	int err = check_rows(rows, cnt);

	*out = NULL;
	if (err)
		return err;
	t = table_new();
	if (!t)
		return -ENOMEM;
	t->rows = rows;
	t->cnt = cnt;
	t->stats.row_cnt = cnt;
	*out = t;
	return 0;
}

int unwind_table__from_rows(const struct unwind_row *rows, size_t cnt, struct unwind_table **out)
{
	struct unwind_row *copy;
	int err = check_rows(rows, cnt);

	*out = NULL;
	if (err)
		return err;
	copy = malloc((cnt ? cnt : 1) * sizeof(*rows));
	if (!copy)
		return -ENOMEM;
	if (cnt) /* rows may be NULL for an empty table */
		memcpy(copy, rows, cnt * sizeof(*rows));
	err = unwind_table__adopt_rows(copy, cnt, out);
	if (err)
		free(copy);
	return err;
}

int unwind_table__from_file(int fd, uint64_t offset, size_t cnt, struct unwind_table **out)
{
	struct unwind_table *t;

	*out = NULL;
	if (cnt > UNWIND_TABLE_MAX_ROWS)
		return -E2BIG;
	t = table_new();
	if (!t)
		return -ENOMEM;
	t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (t->fd < 0) {
		int err = -errno;

		free(t);
		return err;
	}
	t->fd_off = offset;
	t->cnt = cnt;
	t->stats.row_cnt = cnt;
	*out = t;
	return 0;
}

size_t unwind_table_stats__malformed(const struct unwind_table_stats *st)
{
	return st->bad_cie_cnt + st->bad_fde_cnt + st->truncated_section_cnt + st->bad_go_func_cnt;
}

void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->packed);
	free(t->rules);
	if (t->fd >= 0)
		close(t->fd);
	free(t);
}

size_t unwind_table__row_cnt(const struct unwind_table *t)
{
	return t->cnt;
}

int unwind_table__read_rows(const struct unwind_table *t, size_t first, size_t cnt,
			    struct unwind_row *buf)
{
	size_t i;

	if (first > t->cnt || cnt > t->cnt - first)
		return -ERANGE;
	if (t->rows) {
		memcpy(buf, t->rows + first, cnt * sizeof(*buf));
	} else if (t->packed) {
		for (i = 0; i < cnt; i++) {
			buf[i].addr = raw_addr(&t->packed[first + i]);
			buf[i].rule = t->rules[t->packed[first + i].rule];
		}
	} else if (t->fd >= 0) {
		char *p = (char *)buf;
		size_t left = cnt * sizeof(*buf);
		off_t off = (off_t)(t->fd_off + first * sizeof(*buf));

		while (left) {
			ssize_t r = pread(t->fd, p, left, off);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return -EIO; /* the file is shorter than its header said */
			p += r;
			off += r;
			left -= (size_t)r;
		}
	} else if (cnt) {
		return -ERANGE;
	}
	return 0;
}

/* Whole rows of a packed or file table, made once on demand (tests, fuzzing). */
static const struct unwind_row *whole_rows(const struct unwind_table *ct)
{
	struct unwind_table *t = (struct unwind_table *)ct; /* a cache of the same rows */
	struct unwind_row *rows;

	if (t->rows || !t->cnt)
		return t->rows;
	rows = malloc(t->cnt * sizeof(*rows));
	if (!rows)
		return NULL;
	if (unwind_table__read_rows(t, 0, t->cnt, rows)) {
		free(rows);
		return NULL;
	}
	t->rows = rows;
	return rows;
}

const struct unwind_row *unwind_table__rows(const struct unwind_table *t, size_t *cnt)
{
	const struct unwind_row *rows = whole_rows(t);

	*cnt = rows ? t->cnt : 0;
	return rows;
}

const struct unwind_table_stats *unwind_table__stats(const struct unwind_table *t)
{
	return &t->stats;
}

const struct unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t addr)
{
	const struct unwind_row *rows = whole_rows(t);
	/* the last row with row.addr <= addr is the one before */
	size_t lo = rows ? upper_bound_u64(rows, t->cnt, sizeof(*rows),
					   offsetof(struct unwind_row, addr), addr)
			 : 0;

	return lo ? &rows[lo - 1] : NULL;
}

void unwind_row_cursor__init(struct unwind_row_cursor *c, const struct unwind_table *t)
{
	c->t = t;
	c->first = c->cnt = 0;
	c->err = 0;
}

const struct unwind_row *unwind_row_cursor__get(struct unwind_row_cursor *c, size_t i)
{
	size_t n;

	if (i - c->first < c->cnt && i >= c->first)
		return &c->buf[i - c->first];
	if (c->err || i >= c->t->cnt)
		return NULL;
	n = c->t->cnt - i < UNWIND_ROW_WINDOW ? c->t->cnt - i : UNWIND_ROW_WINDOW;
	c->err = unwind_table__read_rows(c->t, i, n, c->buf);
	if (c->err) {
		c->cnt = 0;
		return NULL;
	}
	c->first = i;
	c->cnt = n;
	return &c->buf[0];
}
