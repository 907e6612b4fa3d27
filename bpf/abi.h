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

#define SS_MAX_KERNEL_FRAMES 128
#define SS_MAX_USER_FRAMES 512
#define SS_COMM_LEN 16
#define SS_PATH_LEN 256
#define SS_MAX_FILTER_PIDS 64

enum record_kind {
	RECORD_SAMPLE = 1,
	RECORD_EXEC = 2, /* a task called execve(): pid, new binary's path */
	RECORD_EXIT = 3, /* a thread-group leader exited */
	RECORD_MMAP = 4, /* a process mapped a file executable (dlopen, the dynamic loader) */
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
enum unwind_end {
	UNWIND_END_OK = 0,
	UNWIND_END_TRUNCATED,    /* SS_MAX_USER_FRAMES reached */
	UNWIND_END_NO_CFI,       /* no unwind rule for the pc, and the FP fallback failed */
	UNWIND_END_UNKNOWN_FILE, /* file's unwind table not loaded yet, FP fallback failed */
	UNWIND_END_READ_FAILED,  /* stack memory could not be read */
	UNWIND_END_BAD_PC,       /* pc is 0 or a kernel address */
	UNWIND_END_UNSUPPORTED,  /* the CFI rule at pc cannot be evaluated in eBPF */
	UNWIND_END_UNMAPPED,     /* pc in no known mapping (JIT, or not loaded yet), FP failed */
	UNWIND_END_BAD_FRAME,    /* the unwound sp did not move up the stack */
	UNWIND_END_NO_USER,      /* kernel thread, or no user registers */
	UNWIND_END_CNT,
};

struct sample_record {
	struct record_header hdr;
	char comm[SS_COMM_LEN];        /* process (thread-group leader) name */
	char thread_comm[SS_COMM_LEN]; /* thread name */
	__s32 kernel_frame_cnt;        /* < 0: -errno from bpf_get_stack */
	__u16 user_frame_cnt;
	__u16 user_end; /* enum unwind_end */
	__u32 map_pid;  /* whose mappings resolved the user stack: pid, or for a
					* forked child not known yet, its parent's (or ancestor's) */
	__u32 pad;
	__u64 kernel_ips[SS_MAX_KERNEL_FRAMES];
	/* Variable length: only user_frame_cnt entries are sent. */
	struct user_frame user[SS_MAX_USER_FRAMES];
};

struct exec_record {
	struct record_header hdr;
	char comm[SS_COMM_LEN];
	char filename[SS_PATH_LEN];
};

struct exit_record {
	struct record_header hdr;
};

struct mmap_record {
	struct record_header hdr;
	__u64 addr;
	__u64 len;
};

/* Per-CPU counters (BPF_MAP_TYPE_PERCPU_ARRAY "counters"), summed by userspace. */
enum counter {
	COUNTER_SAMPLES = 0,      /* perf events handled (after the pid filter) */
	COUNTER_FILTERED,         /* samples of tasks outside the -p / command filter */
	COUNTER_IDLE,             /* samples of the idle task (pid 0): not recorded */
	COUNTER_RINGBUF_FULL,     /* samples lost: ring buffer full */
	COUNTER_EVENTS_LOST,      /* exec/exit records lost: ring buffer full */
	COUNTER_KSTACK_FAILED,    /* bpf_get_stack(kernel) failed; sample kept without kstack */
	COUNTER_KSTACK_TRUNCATED, /* kernel stack filled SS_MAX_KERNEL_FRAMES */
	COUNTER_USER_FRAMES,      /* user frames produced */
	COUNTER_FP_FRAMES,        /* of which found through the frame pointer */
	COUNTER_UNKNOWN_PID,      /* samples of processes with no mappings loaded yet */
	COUNTER_FORK_INHERITED,   /* samples of forked children resolved through their
				    * parent's mappings (not known to userspace yet) */
	COUNTER_SAMPLE_NS,        /* ns spent in on_sample for recorded samples (own clock:
				    * filtered-out runs excluded, unlike the kernel's run_time) */
	COUNTER_UNWIND_END_BASE,  /* + enum unwind_end: how user stacks ended */
	COUNTER_CNT = COUNTER_UNWIND_END_BASE + UNWIND_END_CNT,
};

/* Process filter: a pid is sampled when filter_mode is off, or the pid is in pid_filter.
 * With FILTER_FOLLOW_CHILDREN, children forked by a filtered process are added by eBPF.
 */
enum filter_mode {
	FILTER_OFF = 0,
	FILTER_PIDS = 1,
	FILTER_FOLLOW_CHILDREN = 2,
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
};

/* Per-file unwinding state, keyed by file_id ("files" hash). */
struct file_info {
	__u32 flags; /* enum file_flag */
	__u32 pad;
};

enum file_flag {
	FILE_HAS_TABLE = 1 << 0, /* unwind pages are loaded */
	FILE_NO_CFI = 1 << 1,    /* the file has no CFI at all: use frame pointers */
};

/* Unwind tables are split into 64 KiB pages of ELF address space. */
#define UNWIND_PAGE_SHIFT 16

struct unwind_page_key {
	__u64 file_id;
	__u64 page; /* ELF vaddr >> UNWIND_PAGE_SHIFT */
};

/* Entries [first, first + cnt) of the global entry pool, sorted by page_off; entry `first`
 * always has page_off 0 (the rule in force at the start of the page).
 */
struct unwind_page {
	__u32 first;
	__u32 cnt;
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

enum unwind_rule_kind {
	UNWIND_RULE_INVALID = 0, /* no CFI here (a gap between FDEs) */
	UNWIND_RULE_CFA,         /* CFA = reg + cfa_off; RA at CFA-8 */
	UNWIND_RULE_CFA_DEREF,   /* CFA = *(reg + cfa_off) + deref_add; RA at CFA-8 */
	UNWIND_RULE_PLT,         /* GCC PLT: CFA = rsp + 8 + ((pc & 15) >= cfa_off ? 8 : 0);
				  * cfa_off is the expression's threshold (11, or 10) */
	UNWIND_RULE_STOP,        /* thread root / entry point: unwinding ends successfully */
	UNWIND_RULE_SIGNAL,      /* signal trampoline: restore registers from the rt_sigframe */
	UNWIND_RULE_FP,          /* use the frame pointer */
	UNWIND_RULE_UNSUPPORTED, /* CFI exists but cannot be represented */
};

enum unwind_rbp_rule {
	UNWIND_RBP_SAME = 0,  /* rbp unchanged in this frame */
	UNWIND_RBP_CFA_OFF,   /* rbp saved at CFA + rbp_off */
	UNWIND_RBP_UNDEFINED, /* rbp not recoverable */
	UNWIND_RBP_RBP_OFF,   /* rbp saved at [rbp + rbp_off] (GCC's realigned "DRAP" frames) */
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

struct unwind_rule {
	__u8 kind;     /* enum unwind_rule_kind */
	__u8 cfa_reg;  /* enum dwarf_reg_x86_64: base of the CFA */
	__u8 rbp_rule; /* enum unwind_rbp_rule */
	__u8 pad;
	__s32 cfa_off;
	__s16 rbp_off;
	__s16 deref_add;
};

/* Read-only configuration, set by userspace before load. */
struct sampler_config {
	__u32 filter_mode; /* enum filter_mode */
	__u32 self_pid;    /* stackscope itself: never sampled */
	__u32 tail_calls;  /* unwind by tail calls (kernels before bpf_loop, 5.17) */
	__u32 pad;
};

/* The tail-call unwinder: UNWIND_CHUNK steps per program run, at most UNWIND_MAX_CHUNKS runs
 * (the kernel allows 33 tail calls).
 */
#define UNWIND_CHUNK 16
#define UNWIND_MAX_CHUNKS 32

/* ---- Runtime frames (high-level language runtimes; bpf/interp/, src/interp/) ----
 *
 * A runtime's eBPF walk (bpf/interp/<runtime>_walk.h) emits its frames into the same user
 * stack as the native walk, each marked with its frame kind; what addr and file_id hold is
 * the runtime's own business (its *_abi.h says). addr == 0 marks a pseudo-frame: file_id is
 * then the runtime's marker code. A runtime is found through "interp_files" (a mapped file is
 * its interpreter: the native frames in its ranges are where its frames interleave) and
 * "interp_procs" (its per-process state, keyed by tgid and runtime).
 */
enum user_frame_kind {
	FRAME_KIND_NATIVE = 0,
	FRAME_KIND_CPYTHON = 1,
	FRAME_KIND_HOTSPOT = 2,
	FRAME_KIND_CNT,
};

/* Counters per runtime in the per-CPU "interp_counters": [runtime * INTERP_COUNTER_MAX + i],
 * runtime being its user_frame_kind.
 */
#define INTERP_COUNTER_MAX 16

#include "interp/python_abi.h"
#include "interp/hotspot_abi.h"

/* "interp_files": file_id -> what eBPF needs to know about a runtime's interpreter binary. */
struct interp_file {
	__u8 runtime;      /* enum user_frame_kind of the runtime */
	__u8 supported;    /* 0: a version we cannot walk: a marker frame, native frames only */
	__u8 major, minor; /* its version, for messages */
	__u8 pad[4];
	__u64 range_start[2]; /* ELF vaddr ranges of the native code that runs runtime frames */
	__u64 range_end[2];   /* (CPython: the eval loop and its split-off cold part) */
	union {
		struct py_file_abi py;
	};
};

/* "interp_procs": (tgid, runtime) -> where that runtime lives in that process. */
struct interp_proc_key {
	__u32 pid;
	__u32 kind; /* enum user_frame_kind of the runtime */
};

struct interp_proc {
	__u64 file_id; /* the interpreter file */
	union {
		struct py_proc_abi py;
		struct hs_proc_abi hs;
	};
};

/* "interp_code": tgid -> code in anonymous memory that runtimes own (JIT code, HotSpot's code
 * cache, V8's code space): when the native walk meets a pc in no mapped file, a pc inside one
 * of these ranges is unwound by that runtime's code-range walker (bpf/interp/interp_walk.h).
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
