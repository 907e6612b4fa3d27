/* Deferred unwinding, the userspace half: samples that eBPF could not unwind yet (bpf/deferred.h
 * sent them with their registers and a copy of their user stack) wait here until the mappings
 * and unwind tables they need exist, then their walk is finished by stack_replay.c and the
 * completed sample goes to the profile like any other.
 *
 * Flow: the session hands over every RECORD_STACK (deferred__stack_copy) and every sample
 * marked deferred (deferred__sample); the parts of a stack copy are joined (part k after part
 * k - 1, same CPU and sample), and the copy is paired with the next sample of its CPU (eBPF
 * sends them back to back). A sample is replayed at once; when a lookup says "not known
 * yet" it is queued, and tried again after anything changed (deferred__changed: a process
 * scanned, a table loaded) or at deferred__flush(). After DEFERRED_WAIT_NS (or when the queue
 * is full) it is emitted as eBPF walked it (with its "[unwind: ...]" marker).
 *
 * Lookups: mappings from the process table (which keeps an exited process's mappings), file
 * flags from the executable registry (a table still to be built means "wait"), table pages,
 * entries and rules from the BPF maps themselves (read-only): what eBPF reads.
 *
 * Bounded: at most DEFERRED_QUEUE_CAP samples and DEFERRED_QUEUE_BYTES bytes queued; one
 * pending stack copy per CPU. Single-threaded (the session's thread).
 */
#ifndef STACKSCOPE_DEFERRED_H
#define STACKSCOPE_DEFERRED_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"

/* 30 s: a giant's table (libLLVM, libclang-cpp) is built on the worker in 0.3 s alone but
 * 2-10 s on a loaded box behind the other giants; a 5 s wait still expired copies of a cold
 * clang loop there (bench/clang_cold.sh). The queue's bounds below cap what waiting costs.
 */
#define DEFERRED_WAIT_NS (30000ULL * 1000 * 1000)
#define DEFERRED_QUEUE_CAP 1024
#define DEFERRED_QUEUE_BYTES (16u << 20)

struct process_table;
struct exe_registry;
struct unwind_maps;

struct deferred_stats {
	uint64_t received;    /* samples with a stack copy */
	uint64_t completed;   /* replayed: the walk finished from the copy */
	uint64_t expired;     /* emitted as eBPF walked them: what they needed never came */
	uint64_t gone;        /* emitted as eBPF walked them: the process exited before any
			       * scan, its mappings cannot be known */
	uint64_t queue_full;  /* emitted as eBPF walked them at once: queue bound reached */
	uint64_t no_room;     /* emitted as eBPF walked them: a table they need found no room in
			       * the pool (or was evicted) and is not retried before they expire */
	uint64_t stack_short; /* completed, but ended where the copy did (UNWIND_END_STACK_COPY) */
	uint64_t unpaired;    /* a stack copy (or a part) without its sample, or the reverse */
	uint64_t more_parts;  /* parts after the first joined to their copy (deep stacks) */
	uint64_t verified;    /* verify mode: replay identical to eBPF's walk */
	uint64_t verify_mismatch; /* verify mode: replay differs from eBPF's walk */
	uint64_t verify_short;    /* verify mode: identical until the copy ended */
	uint64_t verify_skipped;  /* verify mode: not comparable (eBPF met a file not loaded) */
	uint64_t queued;          /* waiting now */
	uint64_t queued_bytes;
	/* completed, with eBPF's runtime frames (those past the defer point placed in the
	 * replay: replay_runtime.h) */
	uint64_t runtime_kept;
	/* emitted as eBPF walked them: a run of their runtime frames found no place in the replay */
	uint64_t runtime_unplaced;
};

/* Emit one sample record to the profile (the trace handler): 0, or -ENOMEM (fatal). */
typedef int (*deferred_emit_fn)(const struct sample_record *rec, size_t size, uint64_t now_ns,
				void *ctx);

/* A sample with runtime frames is about to wait for its replay: its runtime frames are named
 * from the process's memory, which may be gone (the process exited, the code freed) by the time
 * it is emitted; the hook reads what naming them needs now (it must not emit anything).
 */
typedef void (*deferred_hold_fn)(const struct sample_record *rec, void *ctx);

struct deferred_maps {
	int pages_fd;
	int rules_fd;
	struct unwind_maps *um; /* borrowed: the files' table status and the entry pool's segments
				 * (unwind_maps.h) */
};

struct deferred;

/* NULL with errno (the BPF arrays cannot be mapped). pt, reg borrowed. */
struct deferred *deferred__new(const struct deferred_maps *maps, struct process_table *pt,
			       struct exe_registry *reg, deferred_emit_fn emit, void *ctx);
void deferred__free(struct deferred *d);
/* Call hold (with deferred__new's ctx) for each sample with runtime frames that starts to wait. */
void deferred__set_hold(struct deferred *d, deferred_hold_fn hold);

/* A RECORD_STACK (one part of a copy) of size bytes (borrowed). */
void deferred__stack_copy(struct deferred *d, const struct stack_copy_record *sr, size_t size);
/* A RECORD_SAMPLE marked deferred: completed now, queued, or emitted as is. 0 or -ENOMEM. */
int deferred__sample(struct deferred *d, const struct sample_record *rec, size_t size,
		     uint64_t now_ns);
/* Something deferred samples may wait for appeared (a process scan, a table load). */
void deferred__changed(struct deferred *d);
/* Retry after changes, emit what waited too long. 0 or -ENOMEM. */
int deferred__tick(struct deferred *d, uint64_t now_ns);
/* Retry everything once more, then emit the rest as eBPF walked them (end of a recording). */
int deferred__flush(struct deferred *d, uint64_t now_ns);
const struct deferred_stats *deferred__stats(struct deferred *d);

#endif
