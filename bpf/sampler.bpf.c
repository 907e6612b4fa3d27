// SPDX-License-Identifier: GPL-2.0
/* The sampler: one perf cpu-clock event per CPU runs on_sample(), which captures who was
 * running (pid, tid, names, cpu, time), the kernel stack, and the user stack unwound by
 * native_unwind.h, and sends one variable-length record through the "events" ring buffer.
 * Process lifecycle tracepoints send exec/exit records and keep the pid filter current.
 *
 * Never prints: every loss is counted in the per-CPU "counters" array (enum counter).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "abi.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct sampler_config sampler_cfg = {};

/* This CPU's entry of a one-entry BPF_MAP_TYPE_PERCPU_ARRAY ("scratch", "page_rule_memos"...):
 * NULL only in the verifier's eyes.
 */
static __always_inline void *this_cpu_entry(void *percpu_array)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(percpu_array, &zero);
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by userspace before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTER_CNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory only for what is used */
	__type(key, __u32);                   /* tgid */
	__type(value, __u8);
} pid_filter SEC(".maps"); /* never deleted from: pid_wanted()'s slots and cache rely on it */

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1 << 18); /* resized by userspace */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct mapping_key);
	__type(value, struct mapping_info);
} mappings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory only for what is used */
	__type(key, __u64);                   /* file_id */
	__type(value, struct file_info);
} files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 16);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory only for what is used */
	__type(key, struct unwind_page_key);
	__type(value, struct unwind_page);
} unwind_pages SEC(".maps");

/* A segment of the entry pool (bpf/abi.h): the template userspace's segments match, sized by
 * userspace before the load (every segment the same: the lookups in them are inlined).
 */
struct unwind_segment {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UNWIND_SEGMENT_ENTRIES / 2);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	/* by size: as the pointee of a pointee, the pair is only a forward declaration in BTF */
	__uint(value_size, sizeof(struct unwind_entry_pair));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, UNWIND_SEGMENT_MAX);
	__type(key, __u32);
	__array(values, struct unwind_segment);
} unwind_segments SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 16);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unwind_rule);
} unwind_rules SEC(".maps");

/* Processes forked and not (yet) exec'd: child tgid -> the parent tgid at fork. Until userspace
 * has written the child's own entries into "mappings", the child shares its parent's address
 * space layout (fork copies it; vfork shares it), so its samples are resolved through the
 * parent's entries. LRU: a fork storm evicts the oldest children, which then wait for userspace
 * like any unknown process.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 15);
	__type(key, __u32);   /* child tgid */
	__type(value, __u32); /* parent tgid */
} forked SEC(".maps");

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

/* A record of sz bytes (struct record_header first) reserved in "events", its header stamped
 * with kind, this CPU, now and the thread; NULL, counted, when the ring buffer is full.
 */
static __always_inline void *reserve_record(__u64 sz, __u32 kind, __u32 tgid, __u32 tid)
{
	struct record_header *hdr = bpf_ringbuf_reserve(&events, sz, 0);

	if (!hdr) {
		count(COUNTER_EVENTS_LOST, 1);
		return NULL;
	}
	hdr->kind = kind;
	hdr->cpu = bpf_get_smp_processor_id();
	hdr->time_ns = bpf_ktime_get_ns();
	hdr->pid = tgid;
	hdr->tid = tid;
	return hdr;
}

/* ---- the world as native_unwind.h sees it ---- */

static __always_inline int ss_read_user(void *dst, __u32 size, __u64 addr)
{
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

/* Mappings entered by eBPF as they appear (struct new_mappings), and the files it can enter
 * them for.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32); /* tgid */
	__type(value, struct new_mappings);
} new_mappings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 16);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct known_file_key);
	__type(value, struct known_file);
} known_files SEC(".maps");

/* pid_slots[tgid % PID_SLOTS].new_mappings: at least the number of "new_mappings" entries
 * whose tgid falls there, raised before an entry is created and lowered after one is deleted
 * (new_mappings_create(), new_mappings_delete(): the only writers, eBPF's; userspace reads). A
 * zero slot answers "no entry" with one load instead of a hash lookup that misses: a process
 * that has not exec'd since the recording began (735 ns of a sample at load 9, docs/BENCHMARKS.md
 * 51-cost). Counts, not flags, so that slots empty again as processes go.
 */
#define PID_SLOTS 2048
struct pid_slot pid_slots[PID_SLOTS]; /* both read by a sample: one line */

static __always_inline __u32 *new_mappings_slot(__u32 tgid)
{
	return &pid_slots[tgid & (PID_SLOTS - 1)].new_mappings;
}

/* tgid's "new_mappings" entry, or NULL. */
static __always_inline struct new_mappings *new_mappings_lookup(__u32 tgid)
{
	if (!*(volatile __u32 *)new_mappings_slot(tgid))
		return NULL;
	return bpf_map_lookup_elem(&new_mappings, &tgid);
}

/* Create tgid's entry from nm unless there is one: 0, created. */
static __always_inline long new_mappings_create(__u32 tgid, struct new_mappings *nm)
{
	long err;

	__sync_fetch_and_add(new_mappings_slot(tgid), 1);
	err = bpf_map_update_elem(&new_mappings, &tgid, nm, BPF_NOEXIST);
	if (err)
		__sync_fetch_and_add(new_mappings_slot(tgid), -1);
	return err;
}

static __always_inline void new_mappings_delete(__u32 tgid)
{
	if (!bpf_map_delete_elem(&new_mappings, &tgid))
		__sync_fetch_and_add(new_mappings_slot(tgid), -1);
}

/* A zeroed struct new_mappings to create entries from (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct new_mappings);
} new_mappings_blank SEC(".maps");

/* The sampled process's sequence numbers, set once per sample by mapping_owner(). */
struct mapping_seqs {
	__u32 pid;      /* whose (the mapping owner) */
	__u32 has_new;  /* it has a "new_mappings" entry */
	__u64 exec_seq; /* LPM entries tagged below this are of an older image */
	__u64 new_seq;  /* LPM entries tagged at or above this are newer than every new mapping */
	__u64 tag;      /* the frame memo's tag of its address space now (frame_memo_tag()) */
	/* The last process this CPU found known by its (pid, 0) marker alone, and when: a marker
	 * goes only when its process has gone (its generation) or with maps_epoch, so while both stand
	 * the marker's LPM walk is not done again.
	 */
	__u32 known_pid;
	__u32 known_gen;
	__u64 known_epoch;
};

/* The frame memo's invalidation. A pc's mapping (and so its rule: file ids are content ids)
 * changes only with the address space: a new executable mapping or an exec bumps the process's
 * "new_mappings" seq; an exec, and the exit of its last thread (before its pid can be another
 * process's), bump its pid's generation (pid_slots); userspace bumps maps_epoch when it changes
 * or removes an entry of a live process in "mappings" (src/proc/process.c), which its inserts
 * of new ranges never do (blocks of mappings that do not overlap never overlap).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} maps_epoch SEC(".maps"); /* written by userspace (process.c), read by process_known() */

static __always_inline __u32 *pid_gen_slot(__u32 tgid)
{
	return &pid_slots[tgid & (PID_SLOTS - 1)].gen;
}

static __always_inline __u64 ss_mix64(__u64 x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dULL;
	x ^= x >> 33;
	return x;
}

/* What a frame memo answer is tagged with: the owner's address space as of its generation, its
 * "new_mappings" seq and userspace's epoch, mixed into 64 bits (never 0: 0 is "no memo").
 */
static __always_inline __u64 frame_memo_tag(__u32 owner, __u32 gen, __u64 seq, __u64 epoch)
{
	return ss_mix64(ss_mix64(ss_mix64(((__u64)gen << 32) | owner) ^ seq) ^ epoch) | 1;
}

/* This CPU's, in its scratch (struct unwind_scratch, below). */
static __always_inline struct mapping_seqs *this_cpu_seqs(void);

/* The newest entry of nm covering pc, or NULL. */
static __always_inline struct mapping_info *newest_mapping(struct new_mappings *nm, __u64 pc)
{
	__u32 i, cnt = nm->cnt, next = nm->next;
	struct mapping_info *e;

	for (i = 0; i < NEW_MAPPINGS_CAP; i++) {
		if (i >= cnt)
			break;
		e = &nm->m[(next - 1 - i) & (NEW_MAPPINGS_CAP - 1)];
		if (e->seq && pc >= e->start && pc < e->end)
			return e;
	}
	return NULL;
}

/* Where pc lies in pid's address space: the LPM entry userspace wrote, unless it is of an
 * image older than the last exec or a newer mapping entered by eBPF covers pc (see struct
 * new_mappings). NULL: unknown (a hole entry, file_id 0 with seq != 0, counts as unknown).
 */
static __always_inline struct mapping_info *ss_lookup_mapping(__u32 pid, __u64 pc)
{
	struct mapping_key key = {
		.prefixlen = 32 + 64,
		.pid = bpf_htonl(pid),
		.addr = bpf_cpu_to_be64(pc),
	};
	struct mapping_info *m, *e;
	struct mapping_seqs *ms;
	struct new_mappings *nm;

	m = bpf_map_lookup_elem(&mappings, &key);
	ms = this_cpu_seqs();
	if (!ms || ms->pid != pid || !ms->has_new)
		return m;
	if (m && m->seq >= ms->exec_seq && m->seq >= ms->new_seq)
		return m;
	if (m && m->seq < ms->exec_seq)
		m = NULL;
	nm = bpf_map_lookup_elem(&new_mappings, &pid);
	if (!nm)
		return m;
	e = newest_mapping(nm, pc);
	if (!e || (m && m->seq >= e->seq))
		return m;
	count(COUNTER_NEW_MAPPING_USED, 1);
	return e->file_id ? e : NULL;
}

static __always_inline struct file_info *ss_lookup_file(__u64 file_id)
{
	return bpf_map_lookup_elem(&files, &file_id);
}

static __always_inline struct unwind_page *ss_lookup_page(__u64 file_id, __u64 page)
{
	struct unwind_page_key key = { .file_id = file_id, .page = page };

	return bpf_map_lookup_elem(&unwind_pages, &key);
}

static __always_inline void *ss_lookup_segment(__u32 segment)
{
	return bpf_map_lookup_elem(&unwind_segments, &segment);
}

static __always_inline struct unwind_entry *ss_lookup_entry(void *segment, __u32 index)
{
	__u32 pair = index / 2;
	struct unwind_entry_pair *p = bpf_map_lookup_elem(segment, &pair);

	return p ? &p->e[index & 1] : NULL;
}

static __always_inline struct unwind_rule *ss_lookup_rule(__u32 index)
{
	return bpf_map_lookup_elem(&unwind_rules, &index);
}

/* the page's entry search a global function, verified once (native_unwind.h) */
#define SS_ENTRY_SEARCH_LINKAGE __noinline
/* and its answers remembered (page_rule_remembered(), below) */
__noinline int page_rule_remembered(__u32 load_seq, __u32 first, __u32 cnt, __u32 off);
#define SS_PAGE_RULE(page, off) \
	page_rule_remembered((page)->load_seq, (page)->first, (page)->cnt, off)
/* the frame memo (below): a pc's mapping and rule, remembered across samples */
__noinline int frame_memo_fetch(__u64 tag, __u64 pc);
__noinline int frame_memo_keep(__u64 tag, __u64 pc);
/* The runtime step asks first when a frame leaves last_map; the native step then finds the
 * answer, or the miss (memo_for_tag 0), in the cursor and does not ask again.
 */
#define SS_FRAME_MEMO(st, lookup_pc)                                                               \
	((st)->memo_tag && ((st)->memo_pc == (lookup_pc) && (lookup_pc) >= (st)->last_map.start && \
					    (lookup_pc) < (st)->last_map.end                       \
				    ? (st)->memo_for_tag == (st)->memo_tag                         \
				    : frame_memo_fetch((st)->memo_tag, lookup_pc)))
#define SS_FRAME_MEMO_KEEP(st, lookup_pc, r)                        \
	do {                                                        \
		if ((st)->memo_tag) {                               \
			(st)->memo_rule = *(r);                     \
			frame_memo_keep((st)->memo_tag, lookup_pc); \
		}                                                   \
	} while (0)
#include "native_unwind.h"

/* The entry searches' answers, per CPU: (load_seq, first, off) -> the rule index. A page of one
 * table load points to entries that never change while the page exists, and a load's number is
 * never another's (struct unwind_page), so an answer stays true as long as anything can ask
 * for it: nothing to invalidate, no writer to keep in step. A hot pc, or the same return address
 * sample after sample, skips the search (its lines: a cache miss each at a low rate, 0.9 us of a
 * first frame at load 9, docs/BENCHMARKS.md 51-cost); a collision only costs a search.
 */
#define PAGE_RULE_MEMO_SLOTS 256
struct page_rule_memo {
	__u32 load_seq; /* 0: empty (written last: an interrupted write reads as empty) */
	__u32 first;
	__u32 off;
	__s32 rule;
};

struct page_rule_memos {
	struct page_rule_memo m[PAGE_RULE_MEMO_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct page_rule_memos);
} page_rule_memos SEC(".maps");

/* native_unwind.h's ss_page_entry_rule(first, cnt, off), remembered for the page's load. */
__noinline int page_rule_remembered(__u32 load_seq, __u32 first, __u32 cnt, __u32 off)
{
	struct page_rule_memos *pm = this_cpu_entry(&page_rule_memos);
	volatile struct page_rule_memo *m;
	int rule;

	if (!pm || !load_seq)
		return ss_page_entry_rule(first, cnt, off);
	m = &pm->m[((first * 0x9e3779b1u) ^ (off * 0x85ebca6bu)) >> 24 & (PAGE_RULE_MEMO_SLOTS - 1)];
	if (m->load_seq == load_seq && m->first == first && m->off == off)
		return m->rule;
	rule = ss_page_entry_rule(first, cnt, off);
	if (rule < 0)
		return rule; /* an entry unreadable: not an answer to keep */
	m->load_seq = 0;
	m->first = first;
	m->off = off;
	m->rule = rule;
	m->load_seq = load_seq;
	return rule;
}
#include "arch/sample_regs.h"

/* ---- runtimes (bpf/interp/): their maps and the hooks their walks use ---- */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64); /* file_id */
	__type(value, struct interp_file);
} interp_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct interp_bits);
} interp_file_bits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct interp_bits);
} interp_proc_bits SEC(".maps");

/* May x be in the map whose bits these are? (bpf/abi.h, struct interp_bits) */
static __always_inline bool interp_bit(void *bits_map, __u64 x)
{
	__u32 zero = 0;
	struct interp_bits *b = bpf_map_lookup_elem(bits_map, &zero);

	return !b || (b->w[INTERP_BIT_WORD(x)] & INTERP_BIT_MASK(x));
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);           /* resized by userspace */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* written by userspace only */
	__type(key, struct interp_proc_key);
	__type(value, struct interp_proc);
} interp_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FRAME_KIND_CNT *INTERP_COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} interp_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);           /* resized by userspace */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* written by userspace only */
	__type(key, __u32);                   /* tgid */
	__type(value, struct interp_code);
} interp_code SEC(".maps");

static __always_inline struct interp_code *ss_interp_code(__u32 pid)
{
	return bpf_map_lookup_elem(&interp_code, &pid);
}

static __always_inline struct interp_file *ss_interp_file(__u64 file_id)
{
	if (!interp_bit(&interp_file_bits, file_id))
		return NULL;
	return bpf_map_lookup_elem(&interp_files, &file_id);
}

static __always_inline struct interp_proc *ss_interp_proc(__u32 pid, __u32 runtime)
{
	struct interp_proc_key key = { .pid = pid, .kind = runtime };

	if (!interp_bit(&interp_proc_bits, pid))
		return NULL;
	return bpf_map_lookup_elem(&interp_procs, &key);
}

static __always_inline void ss_interp_count(__u32 runtime, __u32 which)
{
	__u32 idx = runtime * INTERP_COUNTER_MAX + (which & (INTERP_COUNTER_MAX - 1));
	__u64 *c = bpf_map_lookup_elem(&interp_counters, &idx);

	if (c)
		*c += 1;
}

/* A GCRA budget (*tat: the theoretical arrival time of the next event, per CPU): one event
 * per interval_ns on average, up to burst_ns / interval_ns at once. false: over the budget.
 */
static __always_inline bool gcra_take(__u64 *tat, __u64 now, __u64 interval_ns, __u64 burst_ns)
{
	__u64 next;

	if (!tat)
		return false;
	next = (*tat > now ? *tat : now) + interval_ns;
	if (next > now + burst_ns)
		return false;
	*tat = next;
	return true;
}

#include "interp/dispatch.h"
#include "deferred.h"
#include "interp/go/labels.h"
#include "interp/otel/thread_ctx.h"
#include "interp/otel/obi_map.h"

/* Kernels before bpf_get_current_task_btf (5.11): the current task as a plain pointer, which
 * the programs that may run there (the tail-call walker's) only read through CO-RE reads. Set by
 * userspace from a helper probe (sampler/kernel_features.c); the helper the kernel lacks is
 * then in a branch the verifier never walks.
 */
const volatile __u32 no_task_btf = 0;

static __always_inline struct task_struct *current_task(void)
{
	if (no_task_btf)
		return (struct task_struct *)bpf_get_current_task();
	return bpf_get_current_task_btf();
}

/* native_unwind.h's UNWIND_RULE_GO_G0: the goroutine of the sampled thread (go/goroutine.h). */
static __always_inline int ss_go_goroutine(struct unwind_cursor *st, __u32 which,
					   struct go_sched *ctx)
{
	struct task_struct *task = current_task();

	return go_goroutine_context(st->pid, ss_task_tls_base(task), st->regs[DWARF_RSP], which,
				    ctx);
}

struct unwind_scratch {
	struct unwind_cursor st;
	struct interp_cursor interp; /* interp/dispatch.h */
	__u64 t0;                    /* when on_sample started (COUNTER_SAMPLE_NS) */
	__u32 chunks;                /* tail-call unwinder: runs so far */
	__u32 sent;                  /* finish_sample(): the record went into the ring buffer */
	__u64 user_regs; /* sampled in the kernel: its saved user registers (struct pt_regs *) */
	__u32 wake;      /* send_sample(): wake the reader (wake_reader()) */
	/* Per CPU, next to the fields every sample writes (their own per-CPU maps cost a sample
	 * two cache lines each: the map's pointer and the value):
	 */
	__u32 wanted_pid;           /* pid_wanted(): the last pid found in "pid_filter" */
	struct mapping_seqs seqs;   /* this_cpu_seqs() */
	struct go_label_strings go; /* interp/go/labels.h */
	struct sample_record rec;
	/* send_sample(): kernel ips and labels behind user[], as many as its masks let through */
	__u8 wire_tail[(SS_MAX_KERNEL_FRAMES * 2 - 1) * sizeof(__u64) +
		       (SS_MAX_LABELS * 2 - 1) * sizeof(struct sample_label) +
		       sizeof(struct sample_trace)];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_scratch);
} scratch SEC(".maps");

static __always_inline struct mapping_seqs *this_cpu_seqs(void)
{
	struct unwind_scratch *s = this_cpu_entry(&scratch);

	return s ? &s->seqs : NULL;
}

/* ---- the frame memo ---- */

/* Per CPU, a direct-mapped memo of native frames: (tag, lookup pc) -> the mapping and the rule
 * the walk found there. A hit costs one line instead of the mapping's LPM walk (a cache miss a
 * node), the page's hash lookup, the entry search's memo and the rule: the frames of a busy
 * process repeat sample after sample. Only answers with a table rule are kept (no unknown
 * mapping, no missing table: those defer or fall back, and change as userspace loads). The tag
 * says whose address space as of when (frame_memo_tag()); a pc's rule never changes for the
 * same file, whose id is its content's. A slot is written pc last; a reader checks pc and tag
 * again after its copy, so a slot rewritten meanwhile (a nested program) is a miss.
 */
#define FRAME_MEMO_SLOTS 512
struct frame_memo {
	__u64 pc; /* the lookup pc (0: empty) */
	__u64 tag;
	__u64 file_id;
	__u64 bias;
	__u64 start; /* the mapping [start, end) */
	__u64 end;
	struct unwind_rule rule;
};

struct frame_memos {
	struct frame_memo m[FRAME_MEMO_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frame_memos);
} frame_memos SEC(".maps");

static __always_inline __u32 frame_memo_slot(__u64 pc)
{
	return (__u32)((pc * 0x9e3779b97f4a7c15ULL) >> 40) & (FRAME_MEMO_SLOTS - 1);
}

/* pc's slot of this CPU's memo, and this CPU's cursor (the walk's: every walker's scratch). */
static __always_inline volatile struct frame_memo *frame_memo_of(__u64 pc,
								 struct unwind_cursor **st)
{
	struct frame_memos *fm = this_cpu_entry(&frame_memos);
	struct unwind_scratch *s = this_cpu_entry(&scratch);

	if (!fm || !s || !pc)
		return NULL;
	*st = &s->st;
	return &fm->m[frame_memo_slot(pc)];
}

/* The memo's answer for pc under tag into this CPU's cursor (last_map, memo_rule): 1, or 0
 * with the miss noted (memo_pc, memo_for_tag 0).
 */
__noinline int frame_memo_fetch(__u64 tag, __u64 pc)
{
	struct unwind_cursor *st = NULL;
	volatile struct frame_memo *m = frame_memo_of(pc, &st);

	if (!m || !st)
		return 0;
	st->memo_pc = pc;
	st->memo_for_tag = 0;
	if (m->pc != pc || m->tag != tag)
		return 0;
	st->last_map.file_id = m->file_id;
	st->last_map.bias = m->bias;
	st->last_map.start = m->start;
	st->last_map.end = m->end;
	st->last_map.seq = 0;
	__builtin_memcpy(&st->memo_rule, (const void *)&m->rule, sizeof(st->memo_rule));
	if (m->pc != pc || m->tag != tag) {
		st->last_map.start = st->last_map.end = 0;
		return 0;
	}
	st->last_file_flags = FILE_FLAGS_UNREAD;
	st->memo_for_tag = tag;
	return 1;
}

/* Remember this CPU's cursor's last_map and memo_rule as the answer for pc under tag. */
__noinline int frame_memo_keep(__u64 tag, __u64 pc)
{
	struct unwind_cursor *st = NULL;
	volatile struct frame_memo *m = frame_memo_of(pc, &st);

	if (!m || !st)
		return 0;
	m->pc = 0;
	m->tag = tag;
	m->file_id = st->last_map.file_id;
	m->bias = st->last_map.bias;
	m->start = st->last_map.start;
	m->end = st->last_map.end;
	__builtin_memcpy((void *)&m->rule, &st->memo_rule, sizeof(st->memo_rule));
	m->pc = pc;
	st->memo_pc = pc;
	st->memo_for_tag = tag;
	return 0;
}

/* The tail-call walker's chunk program (runtime_chunk, or unwind_chunk with native frames
 * only), set by userspace when it is used.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} unwind_progs SEC(".maps");

/* bpf_loop wants its context on the stack: it carries the per-CPU scratch pointer. */
struct unwind_loop_ctx {
	struct unwind_scratch *s;
};

/* The walk's step, a runtime's frame else a native one, as two global functions: the
 * verifier checks each once, on its own, with s any per-CPU scratch. Inlined into bpf_loop's
 * callback, the step was checked as the body of a loop, where 6.18.44's verifier merges no
 * two states whose unknown values differ in range: it refused on_sample ("BPF program is too
 * large. Processed 1000001 insn"; 71,371 before). Two, not one: a call costs 6.1 32 bytes of
 * its 512 on the deepest chain, on_switch -> unwind_loop_cb -> the native step -> Go's
 * goroutine context, and the native step's frame is far smaller than the runtimes' 320.
 */
__noinline int unwind_interp_step(struct unwind_scratch *s)
{
	if (!s)
		return 0;
	return ss_interp_step(&s->st, &s->interp, s->rec.user) ? 1 : 0;
}

__noinline int unwind_native_step(struct unwind_scratch *s)
{
	if (!s)
		return 0;
	ss_unwind_step(&s->st, s->rec.user);
	return 0;
}

static long unwind_loop_cb(__u64 i, void *ctx)
{
	struct unwind_scratch *s = ((struct unwind_loop_ctx *)ctx)->s;

	if (!s)
		return 1;
	if (!unwind_interp_step(s))
		unwind_native_step(s);
	return s->st.done ? 1 : 0;
}

/* ---- process filter ---- */

#include "selection.h"

__u8 pid_maybe[PID_MAYBE_SLOTS]; /* bpf/abi.h */

/* The scratch's wanted_pid is the last pid this CPU found in "pid_filter". Its entries are never
 * deleted, so a pid found once stays wanted: a CPU sampling the same process again skips the
 * hash lookup.
 */
static __always_inline bool pid_wanted(__u32 tgid)
{
	struct unwind_scratch *s;

	if (sampler_cfg.filter_mode == FILTER_OFF)
		return true;
	if (!pid_maybe[tgid & (PID_MAYBE_SLOTS - 1)])
		return false;
	s = this_cpu_entry(&scratch);
	if (s && s->wanted_pid == tgid && tgid)
		return true;
	if (!bpf_map_lookup_elem(&pid_filter, &tgid))
		return false;
	if (s)
		s->wanted_pid = tgid;
	return true;
}

/* ---- sampling ---- */

/* Does eBPF know tgid's address space: userspace wrote its (tgid, 0) marker in "mappings", or
 * eBPF entered its mappings since its exec? Sets the per-CPU mapping_seqs for its lookups.
 */
static __always_inline bool process_known(__u32 tgid)
{
	struct mapping_key marker = { .prefixlen = 32 + 64, .pid = bpf_htonl(tgid) };
	struct new_mappings *nm = new_mappings_lookup(tgid);
	struct mapping_seqs *ms = this_cpu_seqs();
	__u32 gen = *(volatile __u32 *)pid_gen_slot(tgid), zero = 0;
	__u64 *epoch_p = bpf_map_lookup_elem(&maps_epoch, &zero);
	__u64 epoch = epoch_p ? *(volatile __u64 *)epoch_p : 0;

	if (!nm &&
	    !(ms && ms->known_pid == tgid && ms->known_gen == gen && ms->known_epoch == epoch)) {
		if (!bpf_map_lookup_elem(&mappings, &marker))
			return false;
		if (ms) {
			ms->known_pid = tgid;
			ms->known_gen = gen;
			ms->known_epoch = epoch;
		}
	}
	if (ms) {
		ms->pid = tgid;
		ms->has_new = nm != NULL;
		ms->exec_seq = nm ? nm->exec_seq : 0;
		ms->new_seq = nm ? nm->seq : 0;
		ms->tag = sampler_cfg.frame_memo ? frame_memo_tag(tgid, gen, ms->new_seq, epoch)
						 : 0;
	}
	return true;
}

/* Whose entries in "mappings" (and "interp_procs") describe the address space of tgid: its own
 * once userspace wrote them (the (tgid, 0) marker) or eBPF entered them at exec, else, for a
 * process forked and not exec'd since, its parent's (or the nearest known ancestor's, up to
 * FORK_HOPS generations) — but only while the parent that forked it is still its parent: a
 * reparented child (its parent died, the pid may be reused) gets nothing. Counted: resolved
 * through an ancestor, or not known at all.
 */
#define FORK_HOPS 4
static __always_inline __u32 mapping_owner(struct task_struct *task, __u32 tgid)
{
	struct task_struct *cur = NULL;
	__u32 owner = tgid, *parent;
	struct mapping_seqs *ms;
	int hop;

	/* unrolled: as a loop (clang made one once process_known() took a load more), 5.10's and
	 * 6.1's verifiers met its back edge on a fall-through ("back-edge from insn 649 to 650")
	 */
#pragma unroll
	for (hop = 0; hop < FORK_HOPS; hop++) {
		if (process_known(owner)) {
			if (hop)
				count(COUNTER_FORK_INHERITED, 1);
			return owner;
		}
		parent = bpf_map_lookup_elem(&forked, &owner);
		if (!parent)
			break;
		/* read only for a process not known itself (a sample's one helper call less) */
		if (!hop)
			cur = BPF_CORE_READ(task, group_leader);
		cur = BPF_CORE_READ(cur, real_parent);
		if (!cur || BPF_CORE_READ(cur, tgid) != *parent)
			break;
		owner = *parent;
		cur = BPF_CORE_READ(cur, group_leader);
	}
	ms = this_cpu_seqs();
	if (ms)
		ms->pid = 0;
	count(COUNTER_UNKNOWN_PID, 1);
	return tgid;
}

/* Kernels before bpf_task_pt_regs (5.15): the user registers are at the top of the task's
 * kernel stack (x86-64: THREAD_SIZE 16 KiB, no padding before FRED), as task_pt_regs() finds
 * them. Set by userspace from a helper probe.
 */
const volatile __u32 no_task_pt_regs = 0;
#define SS_THREAD_SIZE 16384

static __always_inline struct pt_regs *task_user_regs(struct task_struct *task)
{
	if (no_task_pt_regs)
		return (struct pt_regs *)(BPF_CORE_READ(task, stack) + SS_THREAD_SIZE) - 1;
	return (struct pt_regs *)bpf_task_pt_regs(task);
}

/* The bpf_loop walker's deferral in a frame of its own: inlined, its locals took on_sample's
 * stack to 112 bytes, and with unwind_loop_cb's and Go's goroutine context's frames above it
 * past the 512 bytes a call chain may use (6.1 refuses it).
 */
static __noinline int defer_sample_subprog(struct unwind_cursor *st, struct sample_record *rec,
					   bool replayable)
{
	defer_sample(st, rec, replayable, true);
	return 0;
}

/* And the tail-call walker's, which has no bpf_find_vma(): inlined, it took runtime_chunk's
 * frame past 96 bytes, and its chain (the runtime step, the page memo, the entry search) past the
 * 512 bytes 5.10's and 6.1's verifiers allow.
 */
static __noinline int defer_sample_tc_subprog(struct unwind_cursor *st, struct sample_record *rec,
					      bool replayable)
{
	defer_sample(st, rec, replayable, false);
	return 0;
}

/* Samples seldom wake the reader: it comes by on its timer (record 10 ms, agent 250 ms). But a
 * runtime's frames are named from the process's memory when the sample is read, and a young
 * process frees what it ran (Python's module code after its import) or exits within that
 * wait: a short `pip3 --version` under the agent lost 7.5 % of its Python frames to markers.
 * So a sample with runtime frames of a process younger than WAKE_YOUNG_NS wakes the reader,
 * at most once every WAKE_GAP_NS over all CPUs (a long-running service never does).
 */
#define WAKE_YOUNG_NS (2 * 1000000000ULL)
#define WAKE_GAP_NS (5 * 1000000ULL)

__u64 last_wake_ns; /* racy between CPUs: a wake-up more or less */

static __always_inline __u32 wake_reader(const struct unwind_scratch *s)
{
	if (s->t0 - last_wake_ns < WAKE_GAP_NS)
		return 0;
	/* A burst (allocation samples of a malloc-heavy process, off-CPU switches): the ring is
	 * sized for a second of CPU samples, and the agent reads it every 250 ms; past half
	 * full, the reader is woken (2 GiB of allocations in a second lost 7,522 samples).
	 */
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > sampler_cfg.defer_ring_max) {
		last_wake_ns = s->t0;
		return 1;
	}
	/* the sampled task is current; its process's start is read only for such a sample */
	if (s->rec.off_cpu || !s->interp.is.started ||
	    s->t0 - BPF_CORE_READ(current_task(), group_leader, start_time) >= WAKE_YOUNG_NS)
		return 0;
	last_wake_ns = s->t0;
	return 1;
}

/* The record in its wire form (bpf/abi.h) into the ring buffer, from where it is: the kernel ips
 * and labels it has are copied behind its user frames, which follow its head. A sample copies
 * what it uses, not the whole struct: every cache line it touches is a miss at a low sampling
 * rate. true: sent.
 */
static __always_inline bool send_sample(struct unwind_scratch *s)
{
	struct sample_record *rec = &s->rec;
	__u32 u = rec->user_frame_cnt, k = 0, l = rec->label_cnt, t;
	__u8 *tail;

	if (rec->kernel_frame_cnt > 0)
		k = rec->kernel_frame_cnt;
	if (u > SS_MAX_USER_FRAMES)
		u = SS_MAX_USER_FRAMES;
	if (k > SS_MAX_KERNEL_FRAMES)
		k = SS_MAX_KERNEL_FRAMES;
	if (l > SS_MAX_LABELS)
		l = SS_MAX_LABELS;
	tail = (__u8 *)&rec->user[u];
	barrier_var(k); /* the masks stay: the verifier bounds the copies by them */
	k &= SS_MAX_KERNEL_FRAMES * 2 - 1;
	if (k && bpf_probe_read_kernel(tail, k * sizeof(__u64), rec->kernel_ips))
		return false;
	barrier_var(l);
	l &= SS_MAX_LABELS * 2 - 1;
	if (l && bpf_probe_read_kernel(tail + k * sizeof(__u64), l * sizeof(struct sample_label),
				       rec->labels))
		return false;
	t = rec->trace.state != OTEL_TRACE_NONE;
	rec->trace_cnt = t;
	if (t && bpf_probe_read_kernel(tail + k * sizeof(__u64) + l * sizeof(struct sample_label),
				       sizeof(struct sample_trace), &rec->trace))
		return false;
	return !bpf_ringbuf_output(&events, &rec->hdr,
				   SAMPLE_WIRE_HEAD + u * sizeof(struct user_frame) +
					   k * sizeof(__u64) + l * sizeof(struct sample_label) +
					   t * sizeof(struct sample_trace),
				   s->wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* send_sample() in a frame of its own for the bpf_loop walker: inlined, its locals took the
 * off-CPU program's chain (with unwind_loop_cb's and Go's goroutine context's frames) past
 * the 512 bytes 6.1 allows. The tail-call walker's programs keep it inline.
 */
static __noinline int send_sample_subprog(struct unwind_scratch *s)
{
	return send_sample(s);
}

/* The sample's user stack is done: send the record, count how it ended. tail_walker: a program
 * of the tail-call walker, which 5.10 must take: no bpf_find_vma() (5.17; older kernels refuse
 * even an unreachable reference to its callback), Go's labels by the static function.
 */
static __always_inline int finish_sample(struct unwind_scratch *s, bool tail_walker)
{
	struct sample_record *rec = &s->rec;
	struct mapping_seqs *ms;

	if (s->user_regs && s->st.end != UNWIND_END_OK && s->st.end != UNWIND_END_NO_USER &&
	    ss_pt_regs_in_execve((struct pt_regs *)s->user_regs)) {
		/* Past exec's point of no return the registers are the old image's (or the new
		 * entry point's, before on_exec entered its mappings) and the old memory is gone:
		 * the thread has no user stack, whatever a walk found of it.
		 */
		s->st.frame_cnt = 0;
		s->st.end = UNWIND_END_IN_EXEC;
		s->st.defer_cnt = 0;
	}
	rec->user_frame_cnt = s->st.frame_cnt;
	rec->user_end = s->st.end;
	rec->map_pid = s->st.pid;
	ms = &s->seqs;
	rec->map_seq = ms->pid == s->st.pid && ms->has_new ? ms->new_seq : 0;
	/* Go's labels and the thread context need the process's "interp_procs" entry: a process
	 * whose bit is clear has none, and its sample skips both calls (their code is cold).
	 */
	if (s->st.end != UNWIND_END_NO_USER && interp_bit(&interp_proc_bits, s->st.pid)) {
		if (!tail_walker) {
			ss_go_labels(rec, &s->go, s->st.pid, s->interp.is.fsbase);
			ss_otel_thread_ctx(rec, s->st.pid, s->interp.is.fsbase);
		} else {
			ss_go_labels_static(rec, &s->go, s->st.pid, s->interp.is.fsbase);
			ss_otel_thread_ctx_static(rec, s->st.pid, s->interp.is.fsbase);
		}
	}
	obi_map_span(rec); /* when the thread context left none */
	/* joined in userspace as they arrive (off_cpu.h; mem_alloc.h: a free may follow at once):
	 * no deferral; nor for a walk without a defer point (defer_sample()'s first test) */
	if (rec->off_cpu || rec->mem_kind == MEM_SAMPLED_ALLOC || !s->st.defer_cnt)
		rec->deferred = DEFER_NONE;
	else if (tail_walker)
		defer_sample_tc_subprog(&s->st, rec, defer_replayable(&s->interp.is));
	else
		defer_sample_subprog(&s->st, rec, defer_replayable(&s->interp.is));
	count(COUNTER_USER_FRAMES, s->st.frame_cnt);
	count(COUNTER_FP_FRAMES, s->st.fp_frame_cnt);
	count(COUNTER_MEMO_FRAMES, s->st.memo_hits);
	count(COUNTER_UNWIND_END_BASE + (s->st.end < UNWIND_END_CNT ? s->st.end : 0), 1);

	s->wake = wake_reader(s);
	s->sent = tail_walker ? send_sample(s) : send_sample_subprog(s);
	if (!s->sent)
		count(COUNTER_RINGBUF_FULL, 1);
	count(rec->off_cpu ? COUNTER_OFF_CPU_PROG_NS : COUNTER_SAMPLE_NS,
	      bpf_ktime_get_ns() - s->t0);
	return 0;
}

/* begin_sample() resets the cursor's fields after its frame window one by one: a new field
 * there must be reset there too (or go before win).
 */
#define SS_CURSOR_AT(f) __builtin_offsetof(struct unwind_cursor, f)
_Static_assert(SS_CURSOR_AT(win_start) == SS_CURSOR_AT(win) + SS_FRAME_WINDOW &&
		       SS_CURSOR_AT(defer_cnt) == SS_CURSOR_AT(win_start) + 16 &&
		       SS_CURSOR_AT(memo_hits) == SS_CURSOR_AT(defer_cnt) + 4 &&
		       SS_CURSOR_AT(defer) <= SS_CURSOR_AT(memo_hits) + 8 &&
		       SS_CURSOR_AT(memo_tag) >= SS_CURSOR_AT(defer) + sizeof(struct defer_point) &&
		       sizeof(struct unwind_cursor) ==
			       SS_CURSOR_AT(memo_rule) + sizeof(struct unwind_rule),
	       "after win: win_start, win_len, lookups, defer_cnt, memo_hits, defer, then the "
	       "memo's fields (memo_tag set per sample, the answer's tagged)");

/* The per-CPU scratch with a fresh record header for the current task (tgid, tid). */
static __always_inline struct unwind_scratch *begin_sample(struct task_struct *task, __u32 tgid,
							   __u32 tid, __u64 t0)
{
	struct unwind_scratch *s;
	struct sample_record *rec;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return NULL;
	rec = &s->rec;
	rec->hdr.kind = RECORD_SAMPLE;
	rec->hdr.cpu = bpf_get_smp_processor_id();
	rec->hdr.time_ns = t0;
	rec->hdr.pid = tgid;
	rec->hdr.tid = tid;
	bpf_get_current_comm(rec->thread_comm, sizeof(rec->thread_comm));
	/* task is current (every caller's): its group leader's name is its own when it leads */
	if (tid == tgid)
		__builtin_memcpy(rec->comm, rec->thread_comm, sizeof(rec->comm));
	else
		BPF_CORE_READ_STR_INTO(&rec->comm, task, group_leader, comm);
	rec->kernel_frame_cnt = 0;
	rec->label_cnt = 0;
	/* the trace's ids, flags, state and attrs_sz (its writers fill the rest they set) */
	__builtin_memset(&rec->trace, 0, __builtin_offsetof(struct sample_trace, attrs));
	rec->off_cpu = 0;
	rec->off_cpu_state = 0;
	rec->off_cpu_ns = 0;
	rec->mem_kind = MEM_NONE;
	rec->mem_weight = 0;
	rec->mem_fn = 0;
	rec->mem_addr = 0;
	/* The cursor up to its frame window; the window and the defer point are written before
	 * they are read (win_len, defer_cnt say what they hold): 216 bytes a sample not stored.
	 */
	__builtin_memset(&s->st, 0, __builtin_offsetof(struct unwind_cursor, win));
	s->st.win_len = 0;
	s->st.lookups = 0;
	s->st.defer_cnt = 0;
	s->st.memo_hits = 0;
	s->st.memo_tag = 0;
	s->st.pid = tgid;
	/* Fresh runtime cursors; the thread's TLS base finds a runtime's thread state. */
	ss_interp_reset(&s->interp, ss_task_tls_base(task), tid == tgid ? tgid : 0);
	s->t0 = t0;
	s->chunks = 0;
	s->user_regs = 0;
	return s;
}

/* The kernel stack of ctx (a perf or kprobe context) into rec, failures counted. */
static __always_inline void sample_kernel_stack(void *ctx, struct sample_record *rec)
{
	long n = bpf_get_stack(ctx, rec->kernel_ips, sizeof(rec->kernel_ips), 0);

	if (n < 0) {
		rec->kernel_frame_cnt = n;
		count(COUNTER_KSTACK_FAILED, 1);
	} else {
		rec->kernel_frame_cnt = n / sizeof(__u64);
		if (rec->kernel_frame_cnt >= SS_MAX_KERNEL_FRAMES)
			count(COUNTER_KSTACK_TRUNCATED, 1);
	}
}

/* The user registers are in s->st (or it is done): whose mappings resolve the walk. */
static __always_inline void prepare_walk(struct unwind_scratch *s, struct task_struct *task,
					 __u32 tgid)
{
	s->st.regs_valid = 1;
	if (!s->st.done) {
		s->st.pid = mapping_owner(task, tgid);
		/* an exiting task's process may have gone (on_exit bumped its generation): its
		 * frames are not remembered under the next one (a task in user mode is not exiting)
		 */
		if (s->seqs.pid == s->st.pid &&
		    !(s->user_regs && (BPF_CORE_READ(task, flags) & 0x4 /* PF_EXITING */)))
			s->st.memo_tag = s->seqs.tag;
	}
	if (!s->st.done && sampler_cfg.defer_mode == DEFER_VERIFY)
		ss_defer_save(&s->st, 0, 0, UNWIND_END_OK); /* replay the whole walk (tests) */
}

/* The whole user walk by bpf_loop. */
static __always_inline void walk_user_stack(struct unwind_scratch *s, struct task_struct *task,
					    __u32 tgid)
{
	struct unwind_loop_ctx lc = { .s = s };

	prepare_walk(s, task, tgid);
	if (s->st.done)
		return;
	/* Runtime steps (interp/dispatch.h) take iterations too: each emits a frame, or skips
	 * one shim frame per native eval frame.
	 */
	bpf_loop(SS_MAX_USER_FRAMES * 2 + 1, unwind_loop_cb, &lc, 0);
}

/* The start of a CPU sample: who runs (idle and filtered tasks end here: NULL), the record's
 * header, the kernel stack, the user registers.
 */
static __always_inline struct unwind_scratch *
start_sample(struct bpf_perf_event_data *ctx, struct task_struct *task, __u32 *tgid_out)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct unwind_scratch *s;
	bool user_mode;
	__u64 t0, t_in;

	if (tgid == 0) {
		count(COUNTER_IDLE, 1);
		return NULL;
	}
	if (!pid_wanted(tgid)) {
		count(COUNTER_FILTERED, 1);
		return NULL;
	}
	/* a selection's rejection costs (COUNTER_SEL_NS) from here: the pid filter's rejections,
	 * every other CPU's run when one process is recorded, touch no selection state
	 */
	t_in = sel_state.active ? bpf_ktime_get_ns() : 0;
	if (!sel_wanted(tgid, true, t_in))
		return NULL;
	count(COUNTER_SAMPLES, 1);
	t0 = bpf_ktime_get_ns();

	s = begin_sample(task, tgid, tid, t0);
	if (!s)
		return NULL;
	user_mode = ss_ctx_user_mode(ctx);
	if (!user_mode)
		sample_kernel_stack(ctx, &s->rec);

	if (user_mode) {
		regs_from_ctx(&s->st, ctx);
	} else if (BPF_CORE_READ(task, mm) &&
		   !(BPF_CORE_READ(task, flags) & 0x00200000 /* PF_KTHREAD */)) {
		struct pt_regs *regs = task_user_regs(task);

		regs_from_pt_regs(&s->st, regs);
		s->user_regs = (__u64)regs;
	} else {
		s->st.done = 1;
		s->st.end = UNWIND_END_NO_USER;
	}
	*tgid_out = tgid;
	return s;
}

/* The sampling program where bpf_loop exists (5.17): the whole walk in one run. */
SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct unwind_scratch *s;
	__u32 tgid;

	s = start_sample(ctx, task, &tgid);
	if (!s)
		return 0;
	walk_user_stack(s, task, tgid);
	return finish_sample(s, false);
}

/* The sampling program of the tail-call walker (kernels without bpf_loop, or
 * STACKSCOPE_TAIL_CALLS=1): no bpf_loop callback, no BTF task pointer (current_task()), no
 * bpf_find_vma, so that 5.10's verifier takes it. The walk goes on in "unwind_progs"[0]:
 * runtime_chunk (runtime and native frames) or unwind_chunk (native frames only).
 */
SEC("perf_event")
int on_sample_tc(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = current_task();
	struct unwind_scratch *s;
	__u32 tgid;

	s = start_sample(ctx, task, &tgid);
	if (!s)
		return 0;
	prepare_walk(s, task, tgid);
	if (!s->st.done) {
		bpf_tail_call(ctx, &unwind_progs, 0);
		/* no program in the array: the stack ends here, counted */
		s->st.done = 1;
		s->st.end = UNWIND_END_TRUNCATED;
	}
	return finish_sample(s, true);
}

/* The end of a tail-call walker's run: on into the next run while steps remain, else send. */
static __always_inline int chunk_done(struct bpf_perf_event_data *ctx)
{
	struct unwind_scratch *s = this_cpu_entry(&scratch);

	if (!s)
		return 0;
	if (!s->st.done && s->chunks < UNWIND_MAX_CHUNKS) {
		s->chunks++;
		bpf_tail_call(ctx, &unwind_progs, 0);
	}
	if (!s->st.done) {
		s->st.done = 1;
		s->st.end = UNWIND_END_TRUNCATED;
	}
	return finish_sample(s, true);
}

/* One step of the tail-call walker: with runtimes, a runtime's frame, else a native one (as
 * unwind_loop_cb); without, a native one. A global function, which the verifier checks once,
 * on its own, not once per unrolled step (runtime_chunk, 4 runtime steps inlined, was 545,625
 * instructions of 5.10's 1M; unwind_chunk, 16 native ones, 779,681). Before 5.12 a global
 * function takes no pointer to memory: it finds this CPU's scratch itself (a per-CPU array
 * lookup a step, on the kernels without bpf_loop only). Returns whether the walk is done.
 */
__noinline int unwind_step_tc(int runtimes)
{
	struct unwind_scratch *s = this_cpu_entry(&scratch);

	if (!s)
		return 1;
	if (!runtimes || !ss_interp_step(&s->st, &s->interp, s->rec.user))
		ss_unwind_step(&s->st, s->rec.user);
	return s->st.done ? 1 : 0;
}

/* A run of the tail-call walker: UNWIND_CHUNK steps, then on into the next run or send. */
static __always_inline int walk_chunk(struct bpf_perf_event_data *ctx, int runtimes)
{
	int i;

	for (i = 0; i < UNWIND_CHUNK; i++)
		if (unwind_step_tc(runtimes))
			break;
	return chunk_done(ctx);
}

/* Without bpf_loop, with runtime frames: each step the bpf_loop walker's (a runtime's frame,
 * else a native one).
 */
SEC("perf_event")
int runtime_chunk(struct bpf_perf_event_data *ctx)
{
	return walk_chunk(ctx, 1);
}

/* Without bpf_loop, native frames only (STACKSCOPE_TAIL_CALLS=native). */
SEC("perf_event")
int unwind_chunk(struct bpf_perf_event_data *ctx)
{
	return walk_chunk(ctx, 0);
}

#include "off_cpu.h"
#include "mem_growth.h"
#include "mem_alloc.h"

/* ---- mappings entered as they appear (struct new_mappings in abi.h) ---- */

/* The inode's ctime, whichever way this kernel stores it (inode: a BTF pointer, read with
 * direct loads).
 */
struct inode___ctime_ts { /* before 6.6 */
	struct timespec64 i_ctime;
} __attribute__((preserve_access_index));
struct inode___ctime_priv { /* 6.6 - 6.10 */
	struct timespec64 __i_ctime;
} __attribute__((preserve_access_index));
struct inode___ctime_split { /* 6.11 on (named so headers of older kernels compile: arm64) */
	time64_t i_ctime_sec;
	u32 i_ctime_nsec;
} __attribute__((preserve_access_index));

static __always_inline void inode_ctime(struct inode *inode, __s64 *sec, __u32 *nsec)
{
	if (bpf_core_field_exists(struct inode___ctime_split, i_ctime_sec)) {
		struct inode___ctime_split *i = (void *)inode;

		*sec = i->i_ctime_sec;
		/* bit 31: I_CTIME_QUERIED (multigrain timestamps, 6.13), not part of the time */
		*nsec = i->i_ctime_nsec & 0x7fffffff;
	} else if (bpf_core_field_exists(struct inode___ctime_priv, __i_ctime)) {
		struct inode___ctime_priv *i = (void *)inode;

		*sec = i->__i_ctime.tv_sec;
		*nsec = i->__i_ctime.tv_nsec;
	} else {
		struct inode___ctime_ts *i = (void *)inode;

		*sec = i->i_ctime.tv_sec;
		*nsec = i->i_ctime.tv_nsec;
	}
}

/* A mapped file as "known_files" names it, with the size and ctime its entry must match. Read
 * where the kernel hands out a BTF pointer to the file (direct loads, no helper calls).
 */
struct file_ident {
	struct known_file_key key;
	__u64 size;
	__s64 ctime_sec;
	__u32 ctime_nsec;
	__u32 valid; /* 0: no file (or no inode) */
};

static __always_inline void file_ident_of(struct file *file, struct file_ident *id)
{
	struct inode *inode = file ? file->f_inode : NULL;

	id->valid = 0;
	if (!inode)
		return;
	id->key.dev = inode->i_sb->s_dev;
	id->key.ino = inode->i_ino;
	id->size = inode->i_size;
	inode_ctime(inode, &id->ctime_sec, &id->ctime_nsec);
	id->valid = 1;
}

/* The file's "known_files" entry, unless it changed since it was identified; NULL when unknown
 * (counted if count_miss).
 */
static __always_inline struct known_file *known_file_of(const struct file_ident *id,
							bool count_miss)
{
	struct known_file *kf;

	if (!id->valid)
		return NULL;
	kf = bpf_map_lookup_elem(&known_files, &id->key);
	if (!kf) {
		if (count_miss)
			count(COUNTER_NEW_MAPPING_UNKNOWN, 1);
		return NULL;
	}
	if (kf->size != id->size || kf->ctime_sec != id->ctime_sec ||
	    kf->ctime_nsec != id->ctime_nsec) {
		if (count_miss)
			count(COUNTER_NEW_MAPPING_CHANGED, 1);
		return NULL;
	}
	return kf;
}

/* The file_id and load bias of an executable mapping at start of the file kf at page offset
 * pgoff; 0 when the offset is in none of its executable segments (counted).
 */
static __always_inline __u64 known_mapping(const struct known_file *kf, __u64 start, __u64 pgoff,
					   __u64 *bias)
{
	__u64 off = pgoff << 12;
	__u32 i;

	for (i = 0; i < KNOWN_FILE_SEGS; i++) {
		if (i >= kf->seg_cnt)
			break;
		if (off >= kf->seg[i].off_start && off < kf->seg[i].off_end) {
			*bias = start - (off + kf->seg[i].delta);
			return kf->file_id;
		}
	}
	count(COUNTER_NEW_MAPPING_UNKNOWN, 1);
	return 0;
}

/* The process's struct new_mappings for the address space mm, reset at exec (a new mm).
 * Created only at exec or for a process userspace knows: a process forked before we saw it
 * has inherited mappings nobody entered, so its own few would be a wrong picture.
 */
static __always_inline struct new_mappings *new_mappings_of(struct task_struct *task, __u32 tgid,
							    bool exec)
{
	__u64 mm = (__u64)task->mm, leader = (__u64)task->group_leader;
	struct mapping_key marker = { .prefixlen = 32 + 64, .pid = bpf_htonl(tgid) };
	struct new_mappings *nm = NULL, *blank;
	__u32 zero = 0;

	/* At exec the pid rarely has an entry (a new process): no lookup before creating it. */
	if (!exec) {
		nm = new_mappings_lookup(tgid);
		if (nm && nm->mm == mm)
			return nm;
		if (!nm && !bpf_map_lookup_elem(&mappings, &marker))
			return NULL;
	}
	if (!nm) {
		blank = bpf_map_lookup_elem(&new_mappings_blank, &zero);
		if (!blank)
			return NULL;
		blank->mm = mm;
		blank->leader = leader;
		blank->seq = 1;
		blank->exec_seq = exec ? 1 : 0;
		blank->cnt = blank->next = 0;
		if (!new_mappings_create(tgid, blank))
			return bpf_map_lookup_elem(&new_mappings, &tgid);
		nm = bpf_map_lookup_elem(&new_mappings, &tgid); /* there already: reset below */
		if (!nm)
			return NULL;
	}
	/* Another address space under the same tgid: an exec (or a reused pid). */
	nm->mm = mm;
	nm->leader = leader;
	nm->seq++;
	nm->exec_seq = nm->seq;
	nm->cnt = 0;
	nm->next = 0;
	return nm;
}

static __always_inline void send_mmap_record(__u32 tgid, __u32 tid, __u64 addr, __u64 len,
					     bool wake)
{
	struct mmap_record *rec = reserve_record(sizeof(*rec), RECORD_MMAP, tgid, tid);

	if (!rec)
		return;
	rec->addr = addr;
	rec->len = len;
	bpf_ringbuf_submit(rec, wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* Append a mapping to nm's ring (the oldest entry goes when it is full). */
static __always_inline void append_mapping(struct new_mappings *nm, __u64 file_id, __u64 bias,
					   __u64 start, __u64 end)
{
	struct mapping_info *e;
	__u32 slot;

	if (nm->cnt >= NEW_MAPPINGS_CAP)
		count(COUNTER_NEW_MAPPING_EVICTED, 1);
	else
		nm->cnt++;
	slot = nm->next & (NEW_MAPPINGS_CAP - 1);
	nm->next = slot + 1;
	e = &nm->m[slot];
	e->seq = 0; /* invalid while it is rewritten */
	e->file_id = file_id;
	e->bias = bias;
	e->start = start;
	e->end = end;
	e->seq = ++nm->seq;
	if (file_id)
		count(COUNTER_NEW_MAPPINGS, 1);
}

/* What bpf_find_vma() found at an address: the VMA, and its file if it is an executable
 * mapping of one.
 */
struct found_vma {
	__u64 file; /* struct file * (0: anonymous) */
	__u64 start, end, pgoff, flags;
	struct file_ident id;
};

static long found_vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	struct found_vma *f = ctx;
	struct file *file = vma->vm_file;

	f->file = (__u64)file;
	f->start = vma->vm_start;
	f->end = vma->vm_end;
	f->pgoff = vma->vm_pgoff;
	f->flags = vma->vm_flags;
	if (file && (f->flags & 4 /* VM_EXEC */))
		file_ident_of(file, &f->id);
	else
		f->id.valid = 0;
	return 0;
}

/* Enter the executable file mapping f. A file eBPF does not know is entered as a hole
 * (file_id 0), so no older mapping at that address (ours, or userspace's LPM entry) answers
 * for it. *kfp: the file's "known_files" entry (NULL: unknown). false: userspace has work to
 * do (identify the file, or attach the process to a runtime's).
 */
static __always_inline bool enter_found(struct new_mappings *nm, const struct found_vma *f,
					struct known_file **kfp)
{
	struct known_file *kf = known_file_of(&f->id, true);
	__u64 bias = 0, file_id = kf ? known_mapping(kf, f->start, f->pgoff, &bias) : 0;

	*kfp = kf;
	append_mapping(nm, file_id, bias, f->start, f->end);
	return file_id && !(kf->flags & KNOWN_FILE_ATTACH);
}

/* The vDSO mapped at [start, end) ("known_files" (0, 0)). */
static __always_inline void enter_vdso(struct new_mappings *nm, __u64 start, __u64 end)
{
	struct known_file_key key = {};
	struct known_file *kf = bpf_map_lookup_elem(&known_files, &key);

	if (kf)
		append_mapping(nm, kf->file_id, start - kf->seg[0].delta, start, end);
}

/* What on_exec entered of the new image. */
struct exec_entered {
	struct known_file *exe_kf; /* the executable's "known_files" entry (NULL: unknown) */
	bool exe_seen;             /* exe_kf was looked up */
	bool known; /* every mapping is of a file eBPF knows: no hurry for userspace */
};

/* One executable VMA of the code range at *addr (below end): entered, *addr moved past it,
 * *all cleared when userspace has to look. false when the range is done or has a gap.
 */
static __always_inline bool enter_text_vma(struct task_struct *task, struct new_mappings *nm,
					   __u64 *addr, __u64 end, bool *all,
					   struct exec_entered *x)
{
	struct known_file *kf;
	struct found_vma f;

	if (*addr >= end || bpf_find_vma(task, *addr, found_vma_cb, &f, 0))
		return false;
	if (f.id.valid) {
		*all &= enter_found(nm, &f, &kf);
		if (!x->exe_seen) {
			x->exe_kf = kf;
			x->exe_seen = true;
		}
	}
	*addr = f.end;
	return true;
}

/* At exec: enter the new image's executable mappings, each found with one bpf_find_vma()
 * (not a walk over all of them: most are data, stack, vvar): the executable's, in
 * [start_code, end_code), the dynamic loader's at the entry point the registers hold (when
 * it is outside that range), the vDSO's at mm->context.vdso.
 */
static __always_inline void enter_exec_mappings(struct task_struct *task, __u32 tgid,
						struct exec_entered *x)
{
	struct mm_struct *mm = task->mm;
	__u64 addr, start_code, end_code, ip, vdso;
	struct new_mappings *nm;
	struct known_file *kf;
	struct found_vma f;
	bool all = true;

	if (!sampler_cfg.new_mappings || !mm)
		return;
	nm = new_mappings_of(task, tgid, true);
	if (!nm)
		return;
	start_code = mm->start_code;
	end_code = mm->end_code;
	addr = start_code;
	/* Up to four VMAs in the code range (one unless the executable has several executable
	 * segments), unrolled: 6.18.44's verifier never merged the states of a loop around
	 * bpf_find_vma's callback (on_exec refused at 1,000,001 instructions)
	 */
	if (enter_text_vma(task, nm, &addr, end_code, &all, x) &&
	    enter_text_vma(task, nm, &addr, end_code, &all, x) &&
	    enter_text_vma(task, nm, &addr, end_code, &all, x))
		enter_text_vma(task, nm, &addr, end_code, &all, x);
	if (addr < end_code)
		all = false; /* not all seen: userspace reads the rest at once */
	ip = PT_REGS_IP_CORE((struct pt_regs *)bpf_task_pt_regs(task));
	if (ip < start_code || ip >= end_code) {
		/* A loader with more executable segments than the one at its entry: the others are
		 * left to userspace, at once.
		 */
		if (!bpf_find_vma(task, ip, found_vma_cb, &f, 0) && f.id.valid)
			all &= enter_found(nm, &f, &kf) && kf->seg_cnt == 1;
		else
			all = false;
	}
	vdso = (__u64)mm->context.vdso;
	if (vdso && !bpf_find_vma(task, vdso, found_vma_cb, &f, 0) && (f.flags & 4 /* VM_EXEC */))
		enter_vdso(nm, f.start, f.end);
	x->known = all;
}

/* After an executable mmap at addr: enter the mapping there. false when userspace has to
 * look now: the process is not followed by eBPF yet, the file is unknown or a runtime's, or
 * anonymous memory.
 */
static __always_inline bool enter_mmap(__u32 tgid, __u64 addr)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct new_mappings *nm;
	struct known_file *kf;
	struct found_vma f;

	if (!sampler_cfg.new_mappings)
		return false;
	nm = new_mappings_of(task, tgid, false);
	if (!nm)
		return false;
	if (bpf_find_vma(task, addr, found_vma_cb, &f, 0) || !(f.flags & 4 /* VM_EXEC */))
		return false;
	if (f.file)
		return enter_found(nm, &f, &kf);
	if (newest_mapping(nm, f.start)) /* anonymous (JIT code): only over our own entry */
		append_mapping(nm, 0, 0, f.start, f.end);
	return false;
}

/* ---- process lifecycle ---- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (child->pid != ctgid)
		return 0; /* a thread: it shares its process's entries */
	if (sampler_cfg.filter_mode == FILTER_FOLLOW_CHILDREN && pid_wanted(ptgid)) {
		pid_maybe[ctgid & (PID_MAYBE_SLOTS - 1)] = 1; /* before the entry */
		bpf_map_update_elem(&pid_filter, &ctgid, &one, BPF_ANY);
		/* Allocation probes are bound to each process: userspace attaches the child's
		 * now (the wake-up), until then its calls go unseen.
		 */
		if (sampler_cfg.alloc_rate) {
			struct record_header *rec;

			rec = reserve_record(sizeof(*rec), RECORD_FORK, ctgid, ptgid);
			if (rec)
				bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
		}
	}
	if (pid_wanted(ctgid))
		bpf_map_update_elem(&forked, &ctgid, &ptgid, BPF_ANY);
	sel_fork(ptgid, ctgid);
	return 0;
}

/* The exec record; known: eBPF entered every mapping of the new image (no hurry for
 * userspace); exe_seen: exe_kf is the new image's "known_files" entry (else looked up here).
 */
static __always_inline int send_exec(struct task_struct *p, struct linux_binprm *bprm, __u32 tgid,
				     bool known, struct known_file *exe_kf, bool exe_seen)
{
	struct exec_record *rec;

	/* reserve_record() by hand: through it on_exec and on_exec_plain take 1 and 3
	 * instructions more (the compiler keeps p->pid across the reservation)
	 */
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(COUNTER_EVENTS_LOST, 1);
		return 0;
	}
	rec->hdr.kind = RECORD_EXEC;
	rec->hdr.cpu = bpf_get_smp_processor_id();
	rec->hdr.time_ns = bpf_ktime_get_ns();
	rec->hdr.pid = tgid;
	rec->hdr.tid = p->pid;
	bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), p->comm);
	bpf_probe_read_kernel_str(rec->filename, sizeof(rec->filename), bprm->filename);
	rec->cgroup_id = bpf_get_current_cgroup_id();
	if (sampler_cfg.new_mappings && !exe_seen) {
		struct mm_struct *mm = p->mm;
		struct file_ident id;

		/* entered (and counted) as a mapping too */
		file_ident_of(mm ? mm->exe_file : NULL, &id);
		exe_kf = known_file_of(&id, false);
	}
	rec->exe_file_id = exe_kf ? exe_kf->file_id : 0;
	/* Wake the reader now when the new process's mappings need it (a file eBPF does not
	 * know): they should be known before its samples. Otherwise eBPF answers for them, and
	 * the record waits for the reader's next poll (a wake-up costs more than the record).
	 */
	/* Under name rules the new image waits for its verdict (bpf/selection.h): now too. */
	bpf_ringbuf_submit(rec, known && !(sel_state.active && sel_state.name_rules)
					? BPF_RB_NO_WAKEUP
					: BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct exec_entered x = {};
	__u32 tgid = p->tgid;

	/* A new address space: the parent's no longer. Deleted now, while the entry written at
	 * fork is likely still cached (on_free does not look again after an exec).
	 */
	bpf_map_delete_elem(&forked, &tgid);
	__sync_fetch_and_add(pid_gen_slot(tgid), 1); /* another image: no frame memo answer holds */
	sel_exec(tgid);
	if (!pid_wanted(tgid))
		return 0;
	enter_exec_mappings(p, tgid, &x);
	return send_exec(p, bprm, tgid, x.known, x.exe_kf, x.exe_seen);
}

/* on_exec without entering the new image's mappings (kernels without the new-mappings
 * programs: sampler.c's new_mappings_supported()): the record only, and userspace reads the
 * mappings from /proc at once (a forced wake-up).
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec_plain, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	bpf_map_delete_elem(&forked, &tgid);
	__sync_fetch_and_add(pid_gen_slot(tgid), 1);
	sel_exec(tgid);
	if (!pid_wanted(tgid))
		return 0;
	return send_exec(p, bprm, tgid, false, NULL, false);
}

/* The exit of a thread. eBPF's own entries for the process ("forked", "new_mappings") go when its
 * address space does: here when this is its last thread and exit_mm() already ran (older
 * kernels trace the exit after it), else when the group leader is freed (on_free): on 6.18
 * the rest of the exit is sampled with the process's user stack still there, and the other
 * threads run on when the leader exits first (pthread_exit()).
 * The exit record goes to userspace at the exit of the process's last thread (do_exit()
 * counts the thread out of signal->live before this tracepoint), not at its leader's: a
 * main thread's pthread_exit() took the process's mappings from the threads that ran on
 * (97 % of their samples "[unwind: unmapped pc]").
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct exit_record *rec;
	__u32 tgid = p->tgid;

	if (p->signal->live.counter)
		return 0; /* other threads run on */
	/* every thread is exiting (PF_EXITING: no frame memo for their samples, prepare_walk()),
	 * and the pid is another process's only after this: its memo answers are never its own
	 */
	__sync_fetch_and_add(pid_gen_slot(tgid), 1);
	if (!p->mm) {
		bpf_map_delete_elem(&forked, &tgid);
		new_mappings_delete(tgid);
	}
	if (!pid_wanted(tgid))
		return 0;
	rec = reserve_record(sizeof(*rec), RECORD_EXIT, tgid, p->pid);
	if (!rec)
		return 0;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}

/* A task's struct goes (after its exit and reaping): a group leader's takes eBPF's entries of its
 * process with it if on_exit left them. The pid may already be another process's (freed at
 * reaping, this is an RCU grace period later): its "new_mappings" are told apart by their leader;
 * a child it forked meanwhile loses its link to its parent ("forked") and waits for userspace.
 * A process whose "new_mappings" were made at an exec lost its "forked" entry there
 * (on_exec): none to delete here.
 */
SEC("tp_btf/sched_process_free")
int BPF_PROG(on_free, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	struct new_mappings *nm;
	__u64 exec_seq;

	if (p->pid != tgid)
		return 0;
	nm = bpf_map_lookup_elem(&new_mappings, &tgid);
	if (nm) {
		if (nm->leader != (__u64)p)
			return 0;
		exec_seq = nm->exec_seq;
		new_mappings_delete(tgid);
		if (exec_seq)
			return 0; /* its "forked" entry went at its exec (on_exec) */
	}
	bpf_map_delete_elem(&forked, &tgid);
	return 0;
}

/* Executable file mappings made by the mmap syscall (the dynamic loader, dlopen): tell
 * userspace at once, so the mapping is in "mappings" before the process runs code in it.
 * The executable itself is mapped by exec, which on_exec() reports.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);   /* tid */
	__type(value, __u64); /* len */
} mmap_pending SEC(".maps");

/* At least the number of entries in mmap_pending (an update over a left-over entry counts
 * twice, an LRU eviction is never subtracted: both only cost lookups). Zero nearly always,
 * which spares the hash lookup at every mmap's exit on the machine.
 */
__u64 mmap_pending_cnt;

SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id, len = ctx->args[1];
	__u32 tid;

	/* Every mmap on the machine comes here: the arguments first, no helper call before. */
	if (!(ctx->args[2] & 4 /* PROT_EXEC */) || (long)ctx->args[4] < 0)
		return 0;
	id = bpf_get_current_pid_tgid();
	tid = (__u32)id;
	if (!pid_wanted(id >> 32))
		return 0;
	if (!bpf_map_update_elem(&mmap_pending, &tid, &len, BPF_ANY))
		__sync_fetch_and_add(&mmap_pending_cnt, 1);
	return 0;
}

/* After a tracked executable mmap: enter the mapping (enter: eBPF can, bpf_find_vma) and tell
 * userspace, at once when eBPF could not.
 */
static __always_inline int mmap_exit(struct trace_event_raw_sys_exit *ctx, bool enter)
{
	__u64 id, *len;
	bool entered;
	__u32 tid;

	if (!mmap_pending_cnt)
		return 0;
	id = bpf_get_current_pid_tgid();
	tid = (__u32)id;
	len = bpf_map_lookup_elem(&mmap_pending, &tid);
	if (!len)
		return 0;
	if (ctx->ret < 0 && ctx->ret >= -4095)
		goto out;
	entered = enter && enter_mmap(id >> 32, ctx->ret);
	/* Userspace rescans at once only for what eBPF could not enter. */
	send_mmap_record(id >> 32, tid, ctx->ret, *len, !entered);
out:
	if (!bpf_map_delete_elem(&mmap_pending, &tid))
		__sync_fetch_and_add(&mmap_pending_cnt, -1);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int on_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	return mmap_exit(ctx, true);
}

/* on_mmap_exit without bpf_find_vma (5.17): every executable mmap is left to a rescan. */
SEC("tracepoint/syscalls/sys_exit_mmap")
int on_mmap_exit_plain(struct trace_event_raw_sys_exit *ctx)
{
	return mmap_exit(ctx, false);
}
