/* The in-memory profile: interned strings, mappings, frames, stacks and samples, shared by
 * every exporter (pprof, folded, SVG flamegraph, OTLP).
 *
 * Invariants:
 *  - strings passed in are copied (interned); pointers returned by the profile stay valid until
 *    profile__free().
 *  - mapping, frame and stack ids are dense, start at 1, and 0 means "none".
 *  - identical frames (same kind, mapping, address and lines, columns included) get the same id; identical
 *    samples keys (stack, pid, tid, comm, thread_comm, labels) are aggregated: their counts add up and
 *    their timestamps are kept (for OTLP), up to timestamps_cap per key.
 *  - stacks are stored leaf first.
 * Not thread-safe: one owner.
 */
#ifndef STACKSCOPE_PROFILE_H
#define STACKSCOPE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum frame_kind {
	FRAME_KERNEL = 1, /* kernel code: address is a kernel VA */
	FRAME_NATIVE,     /* user native code: address is an ELF virtual address in `mapping` */
	FRAME_ERROR,      /* pseudo-frame ("[unwind: no CFI]"...): lines[0].function is the text */
	FRAME_RUNTIME,    /* a language runtime's frame (src/interp/): lines[0] = function, source
			   * file, line; no mapping, address 0; `runtime` is its OTLP
			   * profile.frame.type ("cpython") */
};

/* One source position; a frame has one per inlining level, innermost first, the last being
 * the function that contains the address (pprof Location.line order).
 */
struct profile_line {
	const char *function; /* may be NULL only when the frame has no lines at all */
	const char *file;     /* source file or NULL */
	uint32_t line;        /* 0 = unknown */
	uint32_t column;      /* 1-based column of the position on its line; 0 = unknown */
};

struct profile_frame {
	enum frame_kind kind;
	uint32_t mapping; /* profile__add_mapping() id; 0 for none */
	uint64_t address;
	const struct profile_line *lines; /* line_cnt entries; 0 = not symbolized */
	uint32_t line_cnt;
	const char *runtime; /* FRAME_RUNTIME: the runtime's frame type ("cpython"); FRAME_NATIVE:
			      * "go" for Go code named from .gopclntab, else NULL (OTLP
			      * profile.frame.type) */
	bool call_site; /* address is a return address: the lines describe the call before it (a
			 * frame of its own, apart from a leaf at the same address) */
};

struct profile_mapping {
	const char *path; /* file path as the process saw it, or "[kernel.kallsyms]", "[vdso]" */
	const char *build_id; /* lowercase hex GNU build id, or NULL */
	uint64_t start;       /* ELF address range covered, and its file offset */
	uint64_t limit;
	uint64_t file_offset;
	const char *file_hash;   /* OTLP htlhash (32 hex digits) of the file's content, or NULL */
	const char *go_build_id; /* a Go executable's build id (go/go_build_id.h), or NULL */
};

/* A label of a sample: a goroutine's pprof label (key "route", value "/api"). */
struct profile_label {
	const char *key;
	const char *value;
};

#define PROFILE_MAX_LABELS 16 /* per sample */

struct profile_sample {
	const uint32_t *frames; /* frame ids, leaf first */
	uint32_t frame_cnt;
	uint32_t pid;
	uint32_t tid;
	const char *comm;        /* process name */
	const char *thread_comm; /* thread name */
	uint32_t cpu;
	uint64_t time_ns;                   /* wall clock, ns since the epoch */
	uint64_t count;                     /* number of samples this stands for (usually 1) */
	const struct profile_label *labels; /* label_cnt entries, in the order given */
	uint32_t label_cnt;                 /* <= PROFILE_MAX_LABELS */
	uint64_t off_cpu_ns;  /* an off-CPU sample: time off CPU it stands for (0: CPU sample) */
	uint32_t mem_kind;    /* enum profile_mem_kind: a memory-growth sample (0: not) */
	uint64_t mem_value;   /* ... what it stands for: faults (FAULTS) or bytes (MAPPED, ALLOC) */
	uint64_t mem_objects; /* ALLOC: the allocations it stands for */
	uint64_t mem_freed;   /* ALLOC: of the bytes of this stack's samples, freed */
	uint64_t mem_freed_objects;   /* ALLOC: ... and their allocations */
	uint64_t mem_carried;         /* ALLOC: bytes of earlier profiles' allocations still live
				       * at this one's start (the agent: in use, not allocated) */
	uint64_t mem_carried_objects; /* ALLOC: ... and their allocations */
};

/* Memory-growth samples (`--faults`): their stacks end in a leaf of their own ("[mem: ...]"),
 * so they are apart from CPU and off-CPU ones; count is then samples, not CPU time.
 */
enum profile_mem_kind {
	PROFILE_MEM_NONE = 0,
	PROFILE_MEM_FAULTS, /* page faults (sample types faults/count, fault_bytes/bytes) */
	PROFILE_MEM_MAPPED, /* bytes asked of brk() and anonymous mmap() (mapped_bytes/bytes) */
	PROFILE_MEM_ALLOC,  /* sampled allocations, unbiased weights (alloc_objects/count,
			     * alloc_space/bytes; less what was freed: inuse_objects, inuse_space);
			     * a free is a sample of count 0 with the allocation's stack */
};

#define PROFILE_PAGE_BYTES 4096 /* fault_bytes = faults x base page (huge pages: more) */

/* Counts and times from outside (imports, store rows, a hostile pprof) add up and scale
 * saturating: a sum past UINT64_MAX stays UINT64_MAX, never wraps to a small number.
 */
static inline uint64_t profile__count_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline uint64_t profile__count_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

struct profile_opts {
	uint64_t period_ns;     /* 1e9 / sampling frequency */
	uint64_t start_time_ns; /* wall clock, ns since the epoch */
	size_t timestamps_cap;  /* per aggregated key; 0 = keep none */
	bool off_cpu;           /* off-CPU samples are recorded (sample type off_cpu/nanoseconds) */
	bool no_cpu;            /* CPU samples are not (off-CPU only) */
	bool mem_growth;        /* memory-growth samples are recorded (faults, mapped bytes) */
	bool mem_alloc;         /* allocation samples are recorded (alloc_*, inuse_*) */
};

struct profile;

/* Returns NULL with errno set on allocation failure. */
struct profile *profile__new(const struct profile_opts *opts);
void profile__free(struct profile *p);

/* A copy of src that stands alone (strings, frames, samples, kept events, window): what the
 * readers below see is the same, ids included unless src had frames made equal by
 * profile__set_frame_lines(). NULL with errno ENOMEM.
 */
struct profile *profile__copy(const struct profile *src);
/* Heap bytes the profile holds (its tables at their capacity), for caps on what is kept. */
size_t profile__mem_sz(const struct profile *p);

/* Register a mapping (deduplicated on all fields); returns its id (>= 1), 0 on ENOMEM. */
uint32_t profile__add_mapping(struct profile *p, const struct profile_mapping *m);
/* Register a frame (deduplicated); returns its id (>= 1), 0 on ENOMEM. Also 0 with errno
 * EINVAL for a mapping id not yet registered. Lines with a NULL function get "[unknown]".
 */
uint32_t profile__add_frame(struct profile *p, const struct profile_frame *f);
/* Replace the lines of a frame (symbolization after the fact: DWARF lines and inline chains
 * for the unique frames of a finished profile). After the first call the frame set is final:
 * profile__add_frame() fails with EBUSY (samples may still be added with existing frames).
 * 0, -EINVAL or -ENOMEM.
 */
int profile__set_frame_lines(struct profile *p, uint32_t frame_id, const struct profile_line *lines,
			     uint32_t line_cnt);
/* Add a sample; returns 0 or -ENOMEM / -EINVAL (bad frame id). */
int profile__add_sample(struct profile *p, const struct profile_sample *s);
/* Sets the end of the profile window (wall clock ns). */
void profile__set_end_time(struct profile *p, uint64_t end_time_ns);

/* ---- Read access, for the exporters ----
 * Every pointer returned below is borrowed from the profile and stays valid until
 * profile__free() or the next profile__add_*() call (which may grow the tables), except
 * strings, which stay valid until profile__free(). Ids out of range return NULL / 0.
 * Nothing here allocates or fails.
 */

/* Interned strings: ids 1..profile__string_cnt(); every string the profile hands out
 * (function, file, path, build id, comm, display name) is one of them, so two such pointers
 * are equal iff the strings are equal.
 */
size_t profile__string_cnt(const struct profile *p);
const char *profile__string(const struct profile *p, uint32_t id);

/* Mappings and frames: ids 1..cnt; the returned structs hold interned strings. */
size_t profile__mapping_cnt(const struct profile *p);
const struct profile_mapping *profile__mapping(const struct profile *p, uint32_t id);
size_t profile__frame_cnt(const struct profile *p);
const struct profile_frame *profile__frame(const struct profile *p, uint32_t id);

/* Distinct stacks: ids 1..cnt; returns the frame ids, leaf first, and their count. */
size_t profile__stack_cnt(const struct profile *p);
const uint32_t *profile__stack(const struct profile *p, uint32_t id, uint32_t *frame_cnt);

/* Label sets (profile_agg_sample.labels): how many labels set id has (0 for id 0 or a bad
 * id), and label i of it, in the order they were added, with interned strings (false: none).
 */
uint32_t profile__label_cnt(const struct profile *p, uint32_t id);
bool profile__label(const struct profile *p, uint32_t id, uint32_t i, struct profile_label *out);

/* One raw sample kept for an aggregated key (first timestamps_cap of them, in arrival
 * order).
 */
struct profile_event {
	uint64_t time_ns;
	uint64_t count;
	uint32_t cpu;
	uint64_t off_cpu_ns; /* an off-CPU stay: its length */
	uint64_t mem_value;  /* a memory-growth sample: its faults or bytes */
};

/* One aggregated sample: every profile__add_sample() with this key added up. */
struct profile_agg_sample {
	uint32_t stack; /* profile__stack() id */
	uint32_t pid;
	uint32_t tid;
	const char *comm;
	const char *thread_comm;
	uint32_t labels;                    /* label set: profile__labels(); 0 = none */
	uint64_t count;                     /* sum of the added counts */
	const struct profile_event *events; /* event_cnt <= timestamps_cap entries */
	uint32_t event_cnt;
	uint64_t off_cpu_ns; /* sum of the added off_cpu_ns: > 0 for an off-CPU sample (whose
			      * stacks are apart from CPU ones: they end in an "[off-cpu: ...]"
			      * leaf), count then being switches */
	uint32_t mem_kind;   /* enum profile_mem_kind of its samples (0: none) */
	uint64_t mem_value;  /* sum of the added mem_value */
	uint64_t mem_objects, mem_freed, mem_freed_objects; /* sums of the added ones */
	uint64_t mem_carried, mem_carried_objects;          /* ... */
};

/* Aggregated samples: indices 0..cnt-1, in order of first appearance. */
size_t profile__sample_cnt(const struct profile *p);
const struct profile_agg_sample *profile__sample(const struct profile *p, size_t idx);

uint64_t profile__period_ns(const struct profile *p);
uint64_t profile__start_time_ns(const struct profile *p);
/* 0 when profile__set_end_time() was never called. */
uint64_t profile__end_time_ns(const struct profile *p);

/* The sample types recorded (profile_opts.off_cpu, !profile_opts.no_cpu). */
bool profile__has_off_cpu(const struct profile *p);
bool profile__has_cpu(const struct profile *p);
/* profile_opts.mem_growth: the sample types faults, fault_bytes, mapped_bytes. */
bool profile__has_mem_growth(const struct profile *p);
/* A sample's value for the memory-growth types (0 for a sample of another kind). */
uint64_t profile__sample_faults(const struct profile_agg_sample *s);
uint64_t profile__sample_fault_bytes(const struct profile_agg_sample *s);
uint64_t profile__sample_mapped_bytes(const struct profile_agg_sample *s);
/* profile_opts.mem_alloc: the sample types alloc_objects, alloc_space, inuse_objects,
 * inuse_space; a sample's four values in that order (0 for a sample of another kind). In use:
 * allocated + carried - freed.
 */
bool profile__has_mem_alloc(const struct profile *p);
void profile__sample_alloc(const struct profile_agg_sample *s, uint64_t out[4]);
/* A sample's time in ns: off CPU for an off-CPU sample, else count * period (on CPU). */
uint64_t profile__sample_ns(const struct profile *p, const struct profile_agg_sample *s);

/* Sum of the counts of all samples. */
uint64_t profile__total_samples(const struct profile *p);
/* Number of distinct pids among the samples. */
size_t profile__process_cnt(const struct profile *p);

/* The one place display names are made. For a frame with lines, line_idx < line_cnt gives
 * lines[line_idx].function (0 = innermost); error frames carry their text there. For a frame
 * without lines, line_idx 0 gives a name made from the address: native
 * "basename(mapping path)+0x<hex address>" ("[unknown]+0x..." without a mapping), kernel
 * "[kernel]+0x<hex>", error "[unknown error]". Returns an interned string (valid until
 * profile__free()), or NULL for a bad frame id or line_idx past the end.
 */
const char *profile__frame_name(const struct profile *p, uint32_t frame_id, size_t line_idx);

struct profile_top_entry {
	const char *name; /* interned, valid until profile__free() */
	uint64_t self;    /* samples in which this function was the leaf (innermost) */
};

/* Fills out[0..n) with the functions with the most self samples, descending (ties by name).
 * Returns the number of entries written (<= n). Functions are the leaf frame's display name
 * for line 0. Returns 0 on allocation failure.
 */
size_t profile__top_self(const struct profile *p, struct profile_top_entry *out, size_t n);

#endif
