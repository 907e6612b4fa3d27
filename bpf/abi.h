/* The only types shared between the eBPF programs and userspace.
 *
 * Everything here is fixed-size, naturally aligned, and uses __u* types so the same header
 * compiles against vmlinux.h (BPF) and <linux/types.h> (userspace). A change here changes
 * both sides: bump nothing, rebuild both (they ship in one binary).
 *
 * Ring buffer records start with struct record_header; `kind` tells the rest.
 */
#ifndef STACKSCOPE_ABI_H
#define STACKSCOPE_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "counter_list.h"

/* An index checked against a bound keeps its mask (older verifiers, 6.1, lose the bound of
 * a spilled index when the compiler drops the mask as redundant); as libbpf's barrier_var.
 */
#ifndef barrier_var
#define barrier_var(var) asm volatile("" : "=r"(var) : "0"(var))
#endif

#define SS_MAX_KERNEL_FRAMES 128
#define SS_MAX_USER_FRAMES 512
#define SS_COMM_LEN 16
#define SS_PATH_LEN 256
#define SS_MAX_FILTER_PIDS 64
#define SS_MAX_LABELS 4       /* goroutine pprof labels kept per sample */
#define SS_LABEL_KEY_LEN 16   /* bytes of a label key kept, NUL included */
#define SS_LABEL_VALUE_LEN 48 /* bytes of a label value kept, NUL included */
#define SS_TRACE_ATTRS_LEN 64 /* bytes of a thread context's attrs-data kept (OTEP 4947) */

enum record_kind {
	RECORD_SAMPLE = 1,
	RECORD_EXEC = 2,    /* a task called execve(): pid, new binary's path */
	RECORD_EXIT = 3,    /* a thread-group leader exited */
	RECORD_MMAP = 4,    /* a process mapped a file executable (dlopen, the dynamic loader) */
	RECORD_STACK = 5,   /* registers + a copy of the user stack for a deferred sample: sent
			   * right before that sample's RECORD_SAMPLE, from the same CPU */
	RECORD_OFF_CPU = 6, /* a thread came back on CPU after a stay off it long enough: joins
			     * the off-CPU RECORD_SAMPLE it sent when it left (struct
			     * off_cpu_record) */
	RECORD_FREE = 7,    /* a sampled allocation was freed (struct free_record) */
	RECORD_FORK = 8,    /* --alloc with a COMMAND: a process of its tree forked hdr.pid;
			     * hdr.tid is the parent's pid (its allocator probes are the
			     * child's to copy) */
};

struct record_header {
	__u32 kind; /* enum record_kind */
	__u32 cpu;
	__u64 time_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 pid;     /* thread-group id */
	__u32 tid;
};

/* Flags of one user frame. */
enum user_frame_flag {
	USER_FRAME_RETURN = 1 << 0, /* addr is a return address: symbolize and look up at addr-1 */
	USER_FRAME_FP = 1 << 1,     /* this frame's caller was found through the frame pointer */
	USER_FRAME_UNMAPPED = 1 << 2, /* pc in no known mapping (JIT, or the process/mapping is not
				       * known yet): addr is the absolute pc, file_id is 0 */
	USER_FRAME_SIGNAL = 1 << 3,   /* this frame was interrupted by a signal (caller of a
				       * signal trampoline): addr is an exact pc */
};

/* One user-space frame, identified by the file it is in so that it can be symbolized after
 * the process is gone: file_id names the file (userspace keeps file_id -> path, build id,
 * symbols), addr is the ELF virtual address of the pc in that file (pc - load bias).
 */
struct user_frame {
	__u64 addr;
	__u64 file_id;
	__u32 flags; /* enum user_frame_flag */
	__u8 kind; /* enum user_frame_kind: native, or the runtime whose frame this is (see "Runtime
		      * frames" below for what addr and file_id hold then) */
	__u8 pad[3];
};

/* Why the user stack of a sample ends where it ends. UNWIND_END_OK means a thread root was
 * reached: a STOP rule (CFI with the return address undefined, `_start`, `start_thread`), a
 * zero return address, or a frame-pointer chain ending in a zero frame pointer above the
 * interrupted frame. Userspace appends an explicit
 * "[unwind: ...]" pseudo-frame for every other reason, so CPU totals stay right.
 */
#define UNWIND_ENDS(X)                                                                           \
	X(UNWIND_END_OK, "complete")                                                             \
	/* SS_MAX_USER_FRAMES reached */                                                         \
	X(UNWIND_END_TRUNCATED, "truncated")                                                     \
	/* no unwind rule for the pc, and the FP fallback failed */                              \
	X(UNWIND_END_NO_CFI, "no CFI")                                                           \
	/* file's unwind table not loaded yet, FP fallback failed */                             \
	X(UNWIND_END_UNKNOWN_FILE, "file not loaded")                                            \
	/* stack memory could not be read */                                                     \
	X(UNWIND_END_READ_FAILED, "stack unreadable")                                            \
	/* pc is 0 or a kernel address */                                                        \
	X(UNWIND_END_BAD_PC, "bad pc")                                                           \
	/* the CFI rule at pc cannot be evaluated in eBPF */                                     \
	X(UNWIND_END_UNSUPPORTED, "unsupported CFI")                                             \
	/* pc in no known mapping (JIT, or not loaded yet), FP failed */                         \
	X(UNWIND_END_UNMAPPED, "unmapped pc")                                                    \
	/* the unwound sp did not move up the stack */                                           \
	X(UNWIND_END_BAD_FRAME, "bad frame")                                                     \
	/* kernel thread, or no user registers */                                                \
	X(UNWIND_END_NO_USER, "kernel thread")                                                   \
	/* deferred walk only (userspace): the next frame's memory lies outside the stack copy \
	 * the sample carried */ \
	X(UNWIND_END_STACK_COPY, "stack copy too short")                                         \
	/* inside execve() past its point of no return: the old image's stack is gone and the  \
	 * new one has not run (no user frames) */ \
	X(UNWIND_END_IN_EXEC, "in execve, no user stack")

enum unwind_end {
	UNWIND_ENDS(SS_COUNTER_ENUM) UNWIND_END_CNT,
};

/* One label of the sampled goroutine (bpf/interp/go/labels.h): NUL-terminated, cut to size
 * (counted). Bytes are the program's: userspace checks them before use.
 */
struct sample_label {
	char key[SS_LABEL_KEY_LEN];
	char value[SS_LABEL_VALUE_LEN];
};

/* The span the sampled thread was running (OpenTelemetry's thread context, OTEP 4947;
 * bpf/interp/otel/): ids as published (W3C byte order), state an enum otel_trace_state.
 */
struct sample_trace {
	__u8 trace_id[16];
	__u8 span_id[8];
	__u8 flags;     /* W3C trace-flags */
	__u8 state;     /* enum otel_trace_state: 0, none */
	__u16 attrs_sz; /* bytes of attrs: the record's attrs-data, up to SS_TRACE_ATTRS_LEN */
	__u8 pad[4];
	__u8 attrs[SS_TRACE_ATTRS_LEN]; /* its first attrs_sz bytes (pipeline/sample_trace.c) */
};

/* A sample, as eBPF builds it and userspace reads it. The labels and kernel ips come first, so that
 * the head (hdr to mem_addr) and the user frames are one run of bytes, as they go on the wire
 * (below): eBPF sends the record from where it is.
 */
struct sample_record {
	struct sample_label labels[SS_MAX_LABELS];
	__u64 kernel_ips[SS_MAX_KERNEL_FRAMES];
	struct sample_trace trace; /* the thread's span (bpf/interp/otel/thread_ctx.h): sent when
				    * its state is not OTEL_TRACE_NONE (trace_cnt) */
	struct record_header hdr;
	char comm[SS_COMM_LEN];        /* process (thread-group leader) name */
	char thread_comm[SS_COMM_LEN]; /* thread name */
	__s32 kernel_frame_cnt;        /* < 0: -errno from bpf_get_stack */
	__u16 user_frame_cnt;
	__u16 user_end;  /* enum unwind_end */
	__u32 map_pid;   /* whose mappings resolved the user stack: pid, or for a
					* forked child not known yet, its parent's (or ancestor's) */
	__u32 deferred;  /* enum defer_kind: a RECORD_STACK for this sample precedes it */
	__u32 label_cnt; /* labels[] entries used (<= SS_MAX_LABELS) */
	__u32 trace_cnt; /* 1: trace holds a span (or a bad one's state), 0: none */
	__u64 map_seq;   /* map_pid's "new_mappings" seq when sampled (0: none): userspace places
			  * a frame eBPF could not only where no mapping entered since covers it */
	__u32 off_cpu;   /* 1: the stack of a thread going off CPU (bpf/off_cpu.h), sent when
			      * it leaves; its RECORD_OFF_CPU says how long it stayed off */
	__u32 off_cpu_state; /* userspace: enum off_cpu_state of the joined stay */
	__u64 off_cpu_ns;    /* userspace: how long it stayed off CPU (0 for a CPU sample) */
	__u32 mem_kind;      /* enum mem_kind: a memory-growth sample (bpf/mem_growth.h), 0: not */
	__u32 mem_fn;        /* MEM_SAMPLED_ALLOC: enum alloc_fn, the function called */
	__u64 mem_weight;    /* MEM_FAULT: faults it stands for; MEM_BRK/MEM_MMAP: bytes asked;
			      * MEM_SAMPLED_ALLOC: the bytes allocated (the weights: userspace) */
	__u64 mem_addr; /* MEM_SAMPLED_ALLOC: the pointer returned (its free is a RECORD_FREE) */
	struct user_frame user[SS_MAX_USER_FRAMES];
};

/* On the wire (the ring buffer), a RECORD_SAMPLE is shorter than the struct: its head (hdr to
 * mem_addr, SAMPLE_WIRE_HEAD bytes from SAMPLE_WIRE_START), then user[user_frame_cnt], then
 * kernel_ips[kernel_frame_cnt] (none when negative), then labels[label_cnt], then the trace
 * when trace_cnt is 1. What a sample does not use is not sent: a sample taken in user mode
 * sends no kernel stack, and most send no labels and no trace (96 bytes, two cache lines of
 * the ring and of the head's reset, every sample before). Userspace expands it into the struct (src/sampler/sample_wire.c) before anything else
 * reads it.
 */
#define SAMPLE_WIRE_START __builtin_offsetof(struct sample_record, hdr)
#define SAMPLE_WIRE_HEAD (__builtin_offsetof(struct sample_record, user) - SAMPLE_WIRE_START)

/* ---- Deferred unwinding (bpf/deferred.h, src/unwind/deferred.c) ----
 *
 * A walk that reaches a frame whose pc is in no known mapping (but in a file-backed one) or in
 * a file whose table is not loaded yet has a "defer point": the cursor at that frame. Within a
 * global budget, such a sample is sent as RECORD_STACKs (the defer point and up to
 * SS_DEFER_STACK_PARTS parts of SS_DEFER_STACK_PAGES pages of user stack from the page holding
 * its sp: part 0 first, part k only when part k - 1 was full, each with the same header), then
 * the usual RECORD_SAMPLE with everything eBPF walked (deferred != 0). Userspace joins the parts
 * and continues the walk from the defer point, with the same step code, once the mapping and
 * table exist.
 */
#define SS_DEFER_STACK_PAGES \
	7 /* 28 KiB per part: a per-CPU
				* map value holds at most 32 KiB */
/* 84 KiB from sp's page: clang-14 -O2's deepest stacks (the optimizer under cc1_main) need
 * 30-50 KiB, more than one part (bench/clang_cold.sh).
 */
#define SS_DEFER_STACK_PARTS 3
#define SS_DEFER_PAGE 4096

enum defer_kind {
	DEFER_NONE = 0,
	DEFER_UNKNOWN = 1, /* a frame was in an unknown mapping or a file without a table yet */
	DEFER_VERIFY = 2,  /* test mode: defer point at the first frame of every sample; the
			    * record holds eBPF's whole walk, to compare with the replay */
};

/* The cursor state at the defer point: enough to run the step from that frame again. */
struct defer_point {
	__u64 regs[17];  /* DWARF numbering, DWARF_RAX..DWARF_RIP */
	__u32 frame_idx; /* the frame at the defer point (frames before it stay as sent) */
	__u8 regs_valid;
	__u8 pc_is_return;
	__u8 after_signal;
	__u8 why; /* enum unwind_end: UNWIND_END_UNMAPPED or UNWIND_END_UNKNOWN_FILE (VERIFY: OK) */
};

struct stack_copy_record {
	struct record_header hdr; /* same cpu, time, pid, tid as the sample that follows */
	struct defer_point at;
	__u8 natural;     /* VERIFY: eBPF's own walk also met an unknown mapping or table */
	__u8 part;        /* 0 .. SS_DEFER_STACK_PARTS - 1: the part of the copy this is */
	__u16 full;       /* every page was read: the stack may go on past the part (else the
			* page after it could not be read: the top of the stack, or not present) */
	__u32 stack_len;  /* bytes of stack[] sent: whole pages */
	__u64 stack_addr; /* user address of stack[0] (part 0: sp rounded down to its page;
			   * part k: right after part k - 1) */
	/* Variable length: stack_len bytes are sent. */
	__u8 stack[SS_DEFER_STACK_PAGES * SS_DEFER_PAGE];
};

/* RECORD_OFF_CPU: hdr.time_ns is the switch back in; hdr.pid, hdr.tid the thread's. */
struct off_cpu_record {
	struct record_header hdr;
	__u64 out_time_ns; /* hdr.time_ns of the off-CPU RECORD_SAMPLE sent when it left */
	__u64 off_ns;      /* time off CPU */
	__u32 state;       /* enum off_cpu_state */
	__u32 pad;
};

struct exec_record {
	struct record_header hdr;
	char comm[SS_COMM_LEN];
	char filename[SS_PATH_LEN];
	__u64 cgroup_id;   /* the task's cgroup (v2) after exec */
	__u64 exe_file_id; /* the new image's executable ("known_files"), 0 when not known */
};

struct exit_record {
	struct record_header hdr;
};

struct mmap_record {
	struct record_header hdr;
	__u64 addr;
	__u64 len;
};

/* Per-CPU counters (BPF_MAP_TYPE_PERCPU_ARRAY "counters"), summed by userspace. Those every
 * sampling run counts come first, the ends of user stacks right after them (enum counter below):
 * a sample's counters sit together, in one line of the map's per-CPU pointers and of their
 * values, where spread over the list they took four of each (a miss each at a low sampling rate).
 */
#define SS_SAMPLE_COUNTERS(X)                                                                     \
	/* perf events handled (after the pid filter) */                                          \
	X(COUNTER_SAMPLES, "samples")                                                             \
	/* samples of tasks outside the -p / command filter */                                    \
	X(COUNTER_FILTERED, "filtered out")                                                       \
	/* samples of the idle task (pid 0): not recorded */                                      \
	X(COUNTER_IDLE, "idle")                                                                   \
	/* user frames produced */                                                                \
	X(COUNTER_USER_FRAMES, "user frames")                                                     \
	/* of which found through the frame pointer */                                            \
	X(COUNTER_FP_FRAMES, "user frames via frame pointer")                                     \
	/* of which answered by the frame memo (mapping and rule of a pc seen before) */          \
	X(COUNTER_MEMO_FRAMES, "user frames from the frame memo")                                 \
	/* ns spent in on_sample for recorded samples (own clock: filtered-out runs excluded,   \
	 * unlike the kernel's run_time) */ \
	X(COUNTER_SAMPLE_NS, "ns in the sampling program")

#define SS_COUNTERS(X)                                                                               \
	/* samples lost: ring buffer full */                                                         \
	X(COUNTER_RINGBUF_FULL, "lost: ring buffer full")                                            \
	/* exec/exit records lost: ring buffer full */                                               \
	X(COUNTER_EVENTS_LOST, "process events lost: ring buffer full")                              \
	/* bpf_get_stack(kernel) failed; sample kept without kstack */                               \
	X(COUNTER_KSTACK_FAILED, "kernel stack unreadable")                                          \
	/* kernel stack filled SS_MAX_KERNEL_FRAMES */                                               \
	X(COUNTER_KSTACK_TRUNCATED, "kernel stack truncated")                                        \
	/* samples of processes with no mappings loaded yet */                                       \
	X(COUNTER_UNKNOWN_PID, "samples of processes not yet known")                                 \
	/* samples of forked children resolved through their parent's mappings (not known to    \
	 * userspace yet) */    \
	X(COUNTER_FORK_INHERITED, "samples of forked children resolved through their parent")        \
	/* executable mappings of known files entered by eBPF */                                     \
	X(COUNTER_NEW_MAPPINGS, "mappings entered by eBPF")                                          \
	/* ... of files eBPF does not know: left to userspace */                                     \
	X(COUNTER_NEW_MAPPING_UNKNOWN, "mappings of files eBPF did not know")                        \
	/* ... of a known (dev, ino) whose size or ctime changed */                                  \
	X(COUNTER_NEW_MAPPING_CHANGED, "mappings of files changed since identified")                 \
	/* entries overwritten before userspace took over */                                         \
	X(COUNTER_NEW_MAPPING_EVICTED, "eBPF-entered mappings overwritten")                          \
	/* mapping lookups answered by eBPF-entered mappings */                                      \
	X(COUNTER_NEW_MAPPING_USED, "lookups answered by eBPF-entered mappings")                     \
	/* samples sent with a stack copy (RECORD_STACK) */                                          \
	X(COUNTER_DEFERRED, "deferred with a stack copy")                                            \
	/* would have been deferred: over the per-second budget */                                   \
	X(COUNTER_DEFER_OVER_BUDGET, "not deferred: over budget")                                    \
	/* stack copy lost: ring buffer full (the sample is kept) */                                 \
	X(COUNTER_DEFER_LOST, "stack copies lost: ring buffer full")                                 \
	/* parts after the first sent (deep stacks) */                                               \
	X(COUNTER_DEFER_MORE_PARTS, "stack copy parts after the first")                              \
	/* a further part not sent (ring buffer half full, or full): the sample keeps the parts \
	 * before it */    \
	X(COUNTER_DEFER_PART_REFUSED, "stack copy parts not sent: ring buffer busy")                 \
	/* stays off CPU joined to their stack (bpf/off_cpu.h) */                                    \
	X(COUNTER_OFF_CPU, "off-CPU stays sent")                                                     \
	/* ... and the off-CPU time they stand for */                                                \
	X(COUNTER_OFF_CPU_NS, "off-CPU ns sent")                                                     \
	/* stacks walked at a switch out */                                                          \
	X(COUNTER_OFF_CPU_WALKS, "off-CPU stacks walked")                                            \
	/* stays shorter than the minimum (walked or not): skipped */                                \
	X(COUNTER_OFF_CPU_SHORT, "off-CPU stays below the minimum")                                  \
	/* long stays whose stack was not taken: predicted short */                                  \
	X(COUNTER_OFF_CPU_NOT_WALKED, "off-CPU stays predicted short: no stack")                     \
	/* ... and their time */                                                                     \
	X(COUNTER_OFF_CPU_NOT_WALKED_NS, "off-CPU ns predicted short: no stack")                     \
	/* long stays not walked: over the per-second walk budget */                                 \
	X(COUNTER_OFF_CPU_OVER_BUDGET, "off-CPU stays over the walk budget")                         \
	/* ... and their time */                                                                     \
	X(COUNTER_OFF_CPU_OVER_BUDGET_NS, "off-CPU ns over the walk budget")                         \
	/* long stays lost: ring buffer full (their stack or end) */                                 \
	X(COUNTER_OFF_CPU_LOST, "off-CPU stays lost: ring buffer full")                              \
	/* ... and their time */                                                                     \
	X(COUNTER_OFF_CPU_LOST_NS, "off-CPU ns lost: ring buffer full")                              \
	/* ns spent walking stacks at switches out */                                                \
	X(COUNTER_OFF_CPU_PROG_NS, "ns walking off-CPU stacks")                                      \
	/* memory growth (bpf/mem_growth.h): page-fault samples taken */                             \
	X(COUNTER_MEM_FAULTS, "page-fault samples")                                                  \
	/* brk() calls that grew the heap, anonymous mmap() calls: stacks taken */                   \
	X(COUNTER_MEM_BRK, "brk growths sampled")                                                    \
	X(COUNTER_MEM_MMAP, "anonymous mmaps sampled")                                               \
	/* allocations (bpf/mem_alloc.h): sampled by bytes, stacks taken */                          \
	X(COUNTER_ALLOC_SAMPLED, "allocations sampled")                                              \
	/* sampled allocations whose returned pointer was NULL (failed): no sample */                \
	X(COUNTER_ALLOC_FAILED, "sampled allocations that failed")                                   \
	/* sampled allocations not remembered: the live map full (never in the in-use view) */       \
	X(COUNTER_ALLOC_LIVE_FULL, "sampled allocations not tracked: live map full")                 \
	/* a pointer sampled again while its entry was live (a free not seen): replaced */           \
	X(COUNTER_ALLOC_REPLACED, "live allocations replaced (free not seen)")                       \
	/* frees of sampled allocations sent */                                                      \
	X(COUNTER_ALLOC_FREED, "sampled allocations freed")                                          \
	/* free records lost: ring buffer full (that allocation stays in use) */                     \
	X(COUNTER_ALLOC_FREE_LOST, "frees lost: ring buffer full")                                   \
	/* samples not taken: the process is not selected (bpf/selection.h; not a loss) */           \
	X(COUNTER_SEL_DROPPED, "not selected")                                                       \
	/* ns in the sampling program for those (the cost of a rejected sample) */                   \
	X(COUNTER_SEL_NS, "ns in the sampling program for samples not selected")                     \
	/* samples of processes not classified yet: walked, userspace decides */                     \
	X(COUNTER_SEL_UNCLASSIFIED, "samples of processes not classified yet")                       \
	/* samples not taken: probabilistic profiling is off this interval (not a loss) */           \
	X(COUNTER_PROB_OFF, "not sampled: probabilistic interval off")                               \
	/* allocator calls inside another allocator call (PyObject_Malloc -> malloc): not counted */ \
	X(COUNTER_ALLOC_NESTED, "allocator calls nested in another")

enum counter {
	SS_SAMPLE_COUNTERS(SS_COUNTER_ENUM)
	/* + enum unwind_end: how user stacks ended (UNWIND_END_OK in the sample's line) */
	COUNTER_UNWIND_END_BASE,
	COUNTER_UNWIND_END_LAST = COUNTER_UNWIND_END_BASE + UNWIND_END_CNT - 1,
	SS_COUNTERS(SS_COUNTER_ENUM) COUNTER_CNT,
};
_Static_assert(COUNTER_UNWIND_END_BASE + UNWIND_END_OK < 8, "a sample's counters in one line");

/* Process filter: a pid is sampled when filter_mode is off, or the pid is in pid_filter.
 * With FILTER_FOLLOW_CHILDREN, children forked by a filtered process are added by eBPF.
 */
enum filter_mode {
	FILTER_OFF = 0,
	FILTER_PIDS = 1,
	FILTER_FOLLOW_CHILDREN = 2,
};

/* The sampler's global pid_maybe[pid % PID_MAYBE_SLOTS] is 1 when a pid of "pid_filter" may
 * fall there: set before the pid's entry is written (userspace, on_fork), never cleared
 * ("pid_filter" entries stay). A clear slot rejects a pid with one load instead of a hash
 * lookup: 860 ns of a filtered run's 1,200 on this box, cold (docs/BENCHMARKS.md, 49-cost).
 */
#define PID_MAYBE_SLOTS 4096

/* Selection (bpf/selection.h, src/proc/selection.c): per-process verdicts userspace writes,
 * per-cgroup ones for processes not classified yet, and the switches.
 */
#define SEL_PROCS_CAP (1 << 14) /* LRU: preallocated, ~1 MiB */
#define SEL_CGROUPS_CAP (1 << 14)

enum sel_verdict_kind {
	SEL_UNCLASSIFIED = 0,
	SEL_KEEP = 1,
	SEL_DROP = 2,
};

enum sel_cgroup {
	SEL_CG_NONE = 0,    /* no cgroup rule names it */
	SEL_CG_INCLUDE = 1, /* an include rule names it (or an ancestor), no exclude rule */
	SEL_CG_EXCLUDE = 2, /* an exclude rule names it (or an ancestor) */
};

struct sel_verdict {
	__u64 cgroup_id; /* the cgroup the process was in when classified */
	__u32 verdict;   /* SEL_KEEP or SEL_DROP */
	__u32 pad;
};

/* Written live by userspace (the skeleton's .bss). */
struct selection_state {
	__u32 active;       /* selection rules are in force */
	__u32 has_include;  /* some include rule: a process no include rule names is dropped */
	__u32 user_rules;   /* some rule only userspace can decide (pid, name, container) */
	__u32 name_rules;   /* some name rule: exec drops the verdict */
	__u32 prob_enabled; /* probabilistic profiling is on: samples only while prob_on */
	__u32 prob_on;      /* this probabilistic interval profiles */
};

/* ---- Native unwinding tables (see src/unwind/ and docs/ARCHITECTURE.md) ---- */

/* Where a user pc is: the LPM trie "mappings" maps (pid, address) to the file mapped there.
 * Userspace inserts one entry per aligned power-of-two block of each executable mapping.
 */
struct mapping_key {
	__u32 prefixlen; /* 32 (pid) + bits of address prefix */
	__u32 pid;       /* big endian */
	__u64 addr;      /* big endian */
};

struct mapping_info {
	__u64 file_id; /* content-derived id of the mapped file (0: anonymous executable memory) */
	__u64 bias;    /* ELF vaddr = pc - bias */
	__u64 start;   /* the whole mapping [start, end), so the unwinder can reuse a lookup */
	__u64 end;
	__u64 seq; /* "new_mappings" sequence: see struct new_mappings */
};

/* Mappings known in eBPF the moment they appear ("new_mappings": tgid -> this).
 *
 * eBPF enters every executable file mapping here as it appears: at exec (on_exec: the
 * executable, its dynamic loader, the vDSO) and at an executable mmap (on_mmap_exit: the
 * loader or dlopen mapping libraries), resolved through "known_files" when userspace has seen
 * the file before (else a hole, file_id 0, so no older entry answers for that range). Userspace still scans /proc/PID/maps and writes the
 * LPM entries, each tagged with the seq it read before its scan. A lookup takes the LPM
 * answer unless it predates the process's last exec (seq < exec_seq: another image) or a
 * newer entry here covers the pc (seq greater than the LPM entry's): munmap and MAP_FIXED
 * followed by a new mapping, dlclose then dlopen at the same address, and exec over a live
 * process all resolve to the newest mapping. `mm` tells a new address space (exec) from
 * more mappings of the same one. Entries are a ring: the oldest is overwritten (counted).
 * Writers are serialised by the process's mmap lock; a sample reading an entry being
 * overwritten may see one wrong frame, never a crash.
 */
#define NEW_MAPPINGS_CAP 32

struct new_mappings {
	__u64 mm;       /* the address space these describe (struct mm_struct *) */
	__u64 leader;   /* its group leader's struct task_struct *: whose they are (on_free) */
	__u64 seq;      /* last seq handed out (monotonic over the process's life) */
	__u64 exec_seq; /* seq at its last exec: LPM entries tagged below it are stale */
	__u32 cnt;      /* valid entries, at most NEW_MAPPINGS_CAP */
	__u32 next;     /* ring slot the next entry goes to */
	struct mapping_info m[NEW_MAPPINGS_CAP];
};

/* A slot of eBPF's per-pid table ("pid_slots" in the .bss, sampler.bpf.c: pid % its size): how
 * many "new_mappings" entries have pids there, and their frame-memo generation. One line for
 * the two a sample reads.
 */
struct pid_slot {
	__u32 new_mappings;
	__u32 gen;
};

/* Files userspace has identified, as the kernel names them ("known_files"): what eBPF needs to
 * enter a new mapping of the file. The size and ctime guard against a file rewritten in place
 * (same inode, new content). Written when a file is identified, removed when it is forgotten.
 */
struct known_file_key {
	__u64 dev; /* the kernel's dev_t of the inode's superblock (MAJOR << 20 | MINOR) */
	__u64 ino; /* (0, 0): the vDSO (size and ctime unused) */
};

#define KNOWN_FILE_SEGS 4

struct known_file {
	__u64 file_id;
	__u64 size;
	__s64 ctime_sec;
	__u32 ctime_nsec;
	__u32 seg_cnt;
	__u32 flags; /* enum known_file_flag */
	__u32 pad;
	struct { /* executable PT_LOADs: ELF vaddr = file offset + delta within [start, end) */
		__u64 off_start; /* page-aligned, as the kernel maps it */
		__u64 off_end;
		__u64 delta;
	} seg[KNOWN_FILE_SEGS];
};

enum known_file_flag {
	/* A runtime's file (an interpreter, a JVM, a Go program): userspace attaches the
	 * processes that map it, so their exec or mmap wakes the reader at once.
	 */
	KNOWN_FILE_ATTACH = 1 << 0,
};

/* Per-file unwinding state, keyed by file_id ("files" hash). */
struct file_info {
	__u32 flags; /* enum file_flag */
	__u32 pad;
};

enum file_flag {
	FILE_HAS_TABLE = 1 << 0, /* unwind pages are loaded */
	FILE_NO_CFI = 1 << 1,    /* the file has no CFI at all: use frame pointers */
	FILE_NO_TABLE = 1 << 2,  /* its table could not be built or loaded: frame pointers,
				  * and no deferred unwinding waits for it */
};
#define FILE_FLAGS_UNREAD 0x80000000u /* the unwinder's: not looked up yet (never in the map) */

/* Unwind tables are split into 64 KiB pages of ELF address space. */
#define UNWIND_PAGE_SHIFT 16

struct unwind_page_key {
	__u64 file_id;
	__u64 page; /* ELF vaddr >> UNWIND_PAGE_SHIFT */
};

/* Entries [first, first + cnt) of the global entry pool, sorted by page_off; entry `first`
 * always has page_off 0 (the rule in force at the start of the page). load_seq numbers the
 * table's load (from 1; 2^32 loads before one repeats): the entries a page of one load points to
 * never change while that page exists, so (load_seq, first, page_off) names one search's
 * answer for good (sampler.bpf.c remembers them per CPU: no generation to keep).
 */
struct unwind_page {
	__u32 first;
	__u32 cnt;
	__u32 load_seq;
};

struct unwind_entry {
	__u16 page_off; /* address & 0xffff */
	__u16 rule;     /* index into the global rule table */
};

/* The pool array holds entries in pairs: BPF array elements are 8-byte aligned, so a lone
 * 4-byte entry would take 8 bytes. Entry i is pool[i / 2].e[i % 2].
 */
struct unwind_entry_pair {
	struct unwind_entry e[2];
};

/* The entry pool is made of segments, BPF arrays of pairs that userspace creates as tables need
 * them (the array of maps "unwind_segments"): a quiet machine holds one. An entry's index
 * (unwind_page.first and what follows) is its segment's slot << UNWIND_SEGMENT_SHIFT plus its
 * index in that segment; a page's entries never cross a segment (a table larger than one, or
 * meeting a fragmented pool, is split at its pages), so one lookup of the segment serves a
 * page's whole search. Every segment has the same size, UNWIND_SEGMENT_ENTRIES_OF(the
 * pool's cap): only then does the verifier inline the lookups in it (with BPF_F_INNER_MAP,
 * sizes may differ but each lookup is a helper call: 1.37x the ns per sample of a 305-frame stack).
 */
#define UNWIND_SEGMENT_SHIFT 23
#define UNWIND_SEGMENT_INDEX_MASK ((1u << UNWIND_SEGMENT_SHIFT) - 1)
#define UNWIND_SEGMENT_MAX 512            /* slots: 512 << 23 is every u32 index */
#define UNWIND_SEGMENT_ENTRIES (1u << 20) /* libclang-cpp 14's table: 1,003,184 */
#define UNWIND_SEGMENT_ENTRIES_OF(cap) \
	((cap) < UNWIND_SEGMENT_ENTRIES ? ((cap) & ~1u) : UNWIND_SEGMENT_ENTRIES)

enum unwind_rule_kind {
	UNWIND_RULE_INVALID = 0, /* no CFI here (a gap between FDEs) */
	UNWIND_RULE_CFA,         /* CFA = reg + cfa_off; RA at CFA-8 */
	UNWIND_RULE_CFA_DEREF,   /* CFA = *(reg + cfa_off) + deref_add; RA at CFA-8 */
	UNWIND_RULE_PLT,         /* GCC PLT: CFA = rsp + 8 + ((pc & 15) >= cfa_off ? 8 : 0);
				  * cfa_off is the expression's threshold (11, or 10). arm64:
				  * a stub that leaves sp and the link register alone */
	UNWIND_RULE_STOP,        /* thread root / entry point: unwinding ends successfully */
	UNWIND_RULE_SIGNAL,      /* signal trampoline: restore registers from the rt_sigframe */
	UNWIND_RULE_FP,          /* use the frame pointer */
	UNWIND_RULE_UNSUPPORTED, /* CFI exists but cannot be represented */
	UNWIND_RULE_FP_SWITCH,   /* frame pointer of a function that switched stacks (Go's
				  * asmcgocall, time.now): rbp may lie below rsp, once a walk */
	UNWIND_RULE_GO_G0,       /* a Go function that runs its callee on g0's stack
				  * (systemstack, morestack): the caller is the goroutine's
				  * saved context (m.curg.sched), once a walk; else STOP */
	UNWIND_RULE_GO_CGO,      /* Go's asmcgocall (C code runs on g0 above it): the caller is
				  * the goroutine in runtime.cgocall (m.curg.syscallpc/sp), once
				  * a walk; else as UNWIND_RULE_FP_SWITCH */
	UNWIND_RULE_GO_PREEMPT,  /* Go's runtime.asyncPreempt, a call the signal handler made
				  * look taken at the interrupted pc: as UNWIND_RULE_CFA, but its
				  * caller's pc is that pc (no return address) and, on arm64, the
				  * caller's x30 is at the CFA and its sp 16 bytes above */
};

enum unwind_rbp_rule {
	UNWIND_RBP_SAME = 0,  /* rbp unchanged in this frame */
	UNWIND_RBP_CFA_OFF,   /* rbp saved at CFA + rbp_off */
	UNWIND_RBP_UNDEFINED, /* rbp not recoverable */
	UNWIND_RBP_RBP_OFF,   /* rbp saved at [rbp + rbp_off] (GCC's realigned "DRAP" frames) */
};

/* x86-64: how rbx is recovered in the caller. Only a CFA based on rbx needs it (the dynamic
 * loader's lazy-binding trampoline, _dl_runtime_resolve_*, realigns its stack and keeps the
 * CFA in rbx): tracked from the interrupted frame through the frames that save it.
 */
enum unwind_rbx_rule {
	UNWIND_RBX_UNKNOWN = 0, /* not recoverable (or the rule does not say) */
	UNWIND_RBX_SAME,        /* unchanged in this frame (callee-saved, not saved here) */
	UNWIND_RBX_CFA_OFF,     /* saved at CFA + rbx_off */
};

/* x86-64 DWARF register numbers used by the rules. */
enum dwarf_reg_x86_64 {
	DWARF_RAX = 0,
	DWARF_RDX,
	DWARF_RCX,
	DWARF_RBX,
	DWARF_RSI,
	DWARF_RDI,
	DWARF_RBP = 6,
	DWARF_RSP = 7,
	DWARF_R8,
	DWARF_R9,
	DWARF_R10,
	DWARF_R11,
	DWARF_R12,
	DWARF_R13,
	DWARF_R14,
	DWARF_R15,
	DWARF_RIP = 16,
};

/* How the return address is recovered (x86-64: at CFA-8, ra_rule 0, or UNWIND_RA_REG). */
enum unwind_ra_rule {
	UNWIND_RA_CFA_MINUS_8 = 0, /* x86-64 */
	UNWIND_RA_CFA_OFF,         /* saved at CFA + ra_off */
	UNWIND_RA_LINK_REG,        /* still in the link register (x30): the frame has not saved
				    * it (leaf, prologue, epilogue); known only where regs_valid */
	UNWIND_RA_REG,             /* x86-64: in register ra_off, known only where regs_valid
				    * (glibc's __vfork pops it into rdi around the syscall) */
};

/* arm64 DWARF register numbers used by the rules (the cursor keeps pc, sp, x29 in the slots
 * DWARF_RIP, DWARF_RSP, DWARF_RBP and x30 in SS_ARM64_LR_SLOT: bpf/arch/arm64.h).
 */
enum dwarf_reg_arm64 {
	DWARF_ARM64_X29 = 29, /* frame pointer */
	DWARF_ARM64_X30 = 30, /* link register */
	DWARF_ARM64_SP = 31,
};

struct unwind_rule {
	__u8 kind;     /* enum unwind_rule_kind */
	__u8 cfa_reg;  /* enum dwarf_reg_x86_64 (arm64: dwarf_reg_arm64): base of the CFA */
	__u8 rbp_rule; /* enum unwind_rbp_rule (arm64: of x29) */
	__u8 ra_rule;  /* enum unwind_ra_rule */
	__s32 cfa_off;
	__s16 rbp_off;
	union {
		__s16 deref_add; /* CFA_DEREF (x86-64) */
		__s16 ra_off;    /* UNWIND_RA_CFA_OFF (arm64, which has no CFA_DEREF rules) */
	};
	__u8 rbx_rule; /* enum unwind_rbx_rule (x86-64; 0 on arm64) */
	__u8 rbx_pad;
	__s16 rbx_off;
};

/* Read-only configuration, set by userspace before load. */
struct sampler_config {
	__u32 filter_mode;  /* enum filter_mode */
	__u32 self_pid;     /* stackscope itself: never sampled */
	__u32 tail_calls;   /* unwind by tail calls (kernels before bpf_loop, 5.17) */
	__u32 new_mappings; /* enter mappings at exec and mmap ("new_mappings"; needs the task
			     * VMA iterator, 6.7, and bpf_find_vma, 5.17) */
	__u32 defer_mode;   /* enum defer_kind: DEFER_NONE off, DEFER_UNKNOWN on, DEFER_VERIFY */
	__u32 frame_memo; /* remember a pc's mapping and rule per CPU (STACKSCOPE_FRAME_MEMO=0: off) */
	__u64 defer_interval_ns;   /* deferral budget: one stack copy per interval on average, */
	__u64 defer_burst_ns;      /* with up to burst_ns / interval_ns at once (all CPUs) */
	__u64 defer_ring_max;      /* no stack copy while the ring buffer holds more than this */
	__u64 off_cpu_min_ns;      /* off-CPU: shorter stays off CPU are skipped (counted) */
	__u64 off_cpu_interval_ns; /* off-CPU walk budget: one walk per interval on average, */
	__u64 off_cpu_burst_ns;    /* with up to burst_ns / interval_ns at once (per CPU) */
	__u64 fault_period;        /* memory growth: page faults per page-fault sample */
	__u64 alloc_rate;          /* allocations: mean bytes between samples */
};

/* What a memory-growth sample stands for (bpf/mem_growth.h; sample_record.mem_kind). */
enum mem_kind {
	MEM_NONE = 0,
	MEM_FAULT,         /* page faults of the thread (mem_weight: how many) */
	MEM_BRK,           /* the heap grown by brk() (mem_weight: bytes) */
	MEM_MMAP,          /* an anonymous mmap() (mem_weight: bytes) */
	MEM_SAMPLED_ALLOC, /* a sampled allocation (bpf/mem_alloc.h; mem_weight: its bytes) */
	MEM_KIND_CNT,
};

/* The allocator functions probed (bpf/mem_alloc.h). */
enum alloc_fn {
	ALLOC_MALLOC = 0,
	ALLOC_CALLOC,
	ALLOC_REALLOC,
	ALLOC_POSIX_MEMALIGN,
	ALLOC_ALIGNED_ALLOC,
	ALLOC_MEMALIGN,
	ALLOC_VALLOC,        /* valloc, pvalloc */
	ALLOC_MALLOCX,       /* jemalloc's mallocx */
	ALLOC_RALLOCX,       /* jemalloc's rallocx */
	ALLOC_NEW,           /* C++ operator new (tcmalloc's and jemalloc's own) */
	ALLOC_NEW_ARRAY,     /* operator new[] */
	ALLOC_PY_MALLOC,     /* pymalloc: PyObject_Malloc */
	ALLOC_PY_CALLOC,     /* PyObject_Calloc */
	ALLOC_PY_REALLOC,    /* PyObject_Realloc */
	ALLOC_PYMEM_MALLOC,  /* PyMem_Malloc (pymalloc too since Python 3.6) */
	ALLOC_PYMEM_CALLOC,  /* PyMem_Calloc */
	ALLOC_PYMEM_REALLOC, /* PyMem_Realloc */
	ALLOC_FN_CNT,
};

/* RECORD_FREE: hdr.pid freed addr, a sampled allocation's pointer still live in eBPF. */
struct free_record {
	struct record_header hdr;
	__u64 addr;
};

/* Live sampled allocations ("alloc_live"): key. */
struct alloc_key {
	__u32 tgid;
	__u32 pad;
	__u64 addr;
};

/* Why a thread went off CPU, from the scheduler's prev_state at the switch (bpf/off_cpu.h). */
enum off_cpu_state {
	OFF_CPU_PREEMPTED = 0,   /* still runnable (TASK_RUNNING): preempted, or yielded */
	OFF_CPU_SLEEP,           /* TASK_INTERRUPTIBLE: sleeps, waits on pipes, sockets, futexes */
	OFF_CPU_UNINTERRUPTIBLE, /* TASK_UNINTERRUPTIBLE ("D"): disk I/O, kernel locks */
	OFF_CPU_IDLE,            /* TASK_IDLE: uninterruptible without load (kernel waits) */
	OFF_CPU_STOPPED,         /* stopped or traced */
	OFF_CPU_OTHER,
	OFF_CPU_STATE_CNT,
};

/* The tail-call walker (kernels without bpf_loop): UNWIND_CHUNK steps per run of its chunk
 * program (runtime_chunk, or unwind_chunk for native frames only), which tail-calls itself
 * ("unwind_progs"[0]) for at most UNWIND_MAX_CHUNKS more runs (the kernel allows 33 tail
 * calls): 528 steps, each able to take a runtime's frame.
 */
#define UNWIND_CHUNK 16
#define UNWIND_MAX_CHUNKS 32
#define UNWIND_STEPS_TAIL_CALLS (UNWIND_CHUNK * (UNWIND_MAX_CHUNKS + 1))

/* ---- Runtime frames (high-level language runtimes; bpf/interp/, src/interp/) ----
 *
 * A runtime's eBPF walk (bpf/interp/<runtime>/walk.h) emits its frames into the same user
 * stack as the native walk, each marked with its frame kind; what addr and file_id hold is
 * the runtime's own business (its bpf_abi.h says). addr == 0 marks a pseudo-frame: file_id is
 * then the runtime's marker code. A runtime is found through "interp_files" (a mapped file is
 * its interpreter: the native frames in its ranges are where its frames interleave) and
 * "interp_procs" (its per-process state, keyed by tgid and runtime).
 */
#include "interp/python/bpf_abi.h" /* with a line in INTERP_RUNTIMES */
#include "interp/hotspot/bpf_abi.h"
#include "interp/v8/bpf_abi.h"
#include "interp/ruby/bpf_abi.h"
#include "interp/php/bpf_abi.h"
#include "interp/perl/bpf_abi.h"
#include "interp/go/bpf_abi.h"
#include "interp/luajit/bpf_abi.h"
#include "interp/beam/bpf_abi.h"
#include "interp/otel/bpf_abi.h"

/* The runtimes, one line each (with its bpf_abi.h's include above), in frame kind order (a new
 * one goes last). X(kind, p, name, file):
 *   FRAME_KIND_<kind>, numbered from 1 in list order;
 *   its members `p` of the unions below: struct p_proc_abi in interp_proc, and when file is 1,
 *     struct p_file_abi in interp_file;
 *   its userspace descriptor, name##_runtime (src/interp/interp.h), which the registry
 *     (src/interp/registry.c) runs in list order.
 * Its eBPF walk, if it has one, is a line of INTERP_WALKS (bpf/interp/dispatch.h).
 */
/* clang-format off */
#define INTERP_RUNTIMES(X)                       \
	X(CPYTHON, py,   python,  1)             \
	X(HOTSPOT, hs,   hotspot, 0)             \
	X(V8,      v8,   v8,      0)             \
	X(RUBY,    rb,   ruby,    1)             \
	X(PHP,     php,  php,     1)             \
	X(PERL,    perl, perl,    1)             \
	/* Go emits no frames (Go code is native): its labels (go/bpf_abi.h) */ \
	X(GO,      go,   go,      0)             \
	X(LUAJIT,  luajit, luajit, 0)           \
	X(BEAM,    beam, beam,    0)             \
	/* OpenTelemetry's thread context: no frames, the span (otel/bpf_abi.h) */ \
	X(OTEL,    otel, otel,    0)             \
	/* one line per runtime, with its include above */

#define INTERP_FRAME_KIND(kind, p, name, file) FRAME_KIND_##kind,
#define INTERP_FILE_ABI(kind, p, name, file) INTERP_FILE_ABI_##file(p)
#define INTERP_FILE_ABI_0(p)
#define INTERP_FILE_ABI_1(p) struct p##_file_abi p;
#define INTERP_PROC_ABI(kind, p, name, file) struct p##_proc_abi p;
/* clang-format on */

enum user_frame_kind {
	FRAME_KIND_NATIVE = 0,
	INTERP_RUNTIMES(INTERP_FRAME_KIND) FRAME_KIND_CNT,
};

/* Counters per runtime in the per-CPU "interp_counters": [runtime * INTERP_COUNTER_MAX + i],
 * runtime being its user_frame_kind.
 */
#define INTERP_COUNTER_MAX 16

/* "interp_file_bits" and "interp_proc_bits" (one value each): bit x % INTERP_BITS is set for every
 * file_id in "interp_files" and every pid in "interp_procs" (a proc's bit is cleared when no
 * attached process has it any more; a file's stays: their count is capped). A clear bit answers
 * "no runtime's" with one cache line instead of a hash lookup: the unwinder asks it for every
 * file a stack passes through, and Go's labels for every sample.
 */
#define INTERP_BITS 4096
struct interp_bits {
	__u64 w[INTERP_BITS / 64];
};
#define INTERP_BIT_WORD(x) (((x) / 64) % (INTERP_BITS / 64))
#define INTERP_BIT_MASK(x) (1ull << ((x) % 64))

/* "interp_files": file_id -> what eBPF needs to know about a runtime's interpreter binary. */
struct interp_file {
	__u8 runtime;      /* enum user_frame_kind of the runtime */
	__u8 supported;    /* 0: a version we cannot walk: a marker frame, native frames only */
	__u8 major, minor; /* its version, for messages */
	__u8 pad[4];
	__u64 range_start[2]; /* ELF vaddr ranges of the native code that runs runtime frames */
	__u64 range_end[2];   /* (CPython: the eval loop and its split-off cold part) */
	union {               /* its runtime's (INTERP_RUNTIMES) */
		INTERP_RUNTIMES(INTERP_FILE_ABI)
	};
};

/* "interp_procs": (tgid, runtime) -> where that runtime lives in that process. */
struct interp_proc_key {
	__u32 pid;
	__u32 kind; /* enum user_frame_kind of the runtime */
};

struct interp_proc {
	__u64 file_id; /* the interpreter file */
	union {        /* its runtime's (INTERP_RUNTIMES) */
		INTERP_RUNTIMES(INTERP_PROC_ABI)
	};
};

/* "interp_code": tgid -> code in anonymous memory that runtimes own (JIT code, HotSpot's code
 * cache, V8's code space): when the native walk meets a pc in no mapped file, a pc inside one
 * of these ranges is unwound by that runtime's code-range walker (bpf/interp/dispatch.h).
 * Unused slots have start == end == 0. Written by the registry from what the runtimes report.
 */
#define INTERP_CODE_RANGES 4

struct interp_code_range {
	__u64 start, end; /* absolute addresses, [start, end) */
	__u8 runtime;     /* enum user_frame_kind of the owner */
	__u8 pad[7];
};

struct interp_code {
	struct interp_code_range r[INTERP_CODE_RANGES];
};

#endif
