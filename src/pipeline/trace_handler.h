/* The trace handler: turns one eBPF sample record into one profile sample — kernel frames
 * symbolized through kallsyms, user frames found in the executable registry (resolving
 * frames the eBPF side could not place, through the process tracker) and named from their
 * files' symbols and lines (symbolize/file_symbols.h, a table the handler owns), runtime
 * frames by their runtimes (interp/), and an explicit "[unwind: reason]" pseudo-frame where a
 * user stack ends early.
 *
 * Borrowed: the profile, registry, process table and kallsyms outlive the handler.
 */
#ifndef STACKSCOPE_TRACE_HANDLER_H
#define STACKSCOPE_TRACE_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile;
struct exe_registry;
struct process_table;
struct kallsyms;
struct sample_record;

struct trace_handler_stats {
	uint64_t samples;     /* records turned into profile samples */
	uint64_t bad_records; /* malformed records (size mismatch) */
	uint64_t kernel_frames;
	uint64_t kernel_unsymbolized;
	uint64_t user_frames;
	uint64_t user_unsymbolized;  /* in a known file, no symbol covering the address */
	uint64_t user_unresolved;    /* in no known mapping at all */
	uint64_t user_late_resolved; /* placed by userspace after eBPF could not */
	uint64_t user_replaced;      /* not placed: the process mapped another file there since */
	uint64_t incomplete_stacks;  /* ended in an "[unwind: ...]" pseudo-frame */
	uint64_t user_lines;         /* unique native frames given DWARF lines / inline chains */
	uint64_t user_go;            /* user frames named (with lines) from a Go .gopclntab */
	uint64_t labeled;            /* samples with goroutine labels */
	uint64_t labels_repaired;    /* labels with invalid UTF-8 or control bytes replaced */
	uint64_t off_cpu;            /* of the samples: off-CPU ones */
};

struct trace_handler_opts {
	bool symbolize;          /* false: addresses + build ids only */
	int64_t mono_to_wall_ns; /* added to record times (CLOCK_MONOTONIC -> wall clock) */
	uint64_t alloc_rate;     /* allocation samples' mean bytes apart (their weights) */
	/* The service.name pid published (OTel process context), as the sample label
	 * PCTX_SERVICE_LABEL; NULL: none, and then *refused, when not NULL, why what pid published
	 * is not used ("payload too big"), the sample's marker label PCTX_REFUSED_LABEL. The
	 * strings are borrowed for the call.
	 */
	const char *(*service_of)(void *ctx, pid_t pid, const char **refused);
	/* The names pid published for its thread context's attribute key indexes (OTEP 4947's
	 * threadlocal.attribute_key_map, in its process context): *cnt of them, NULL entries
	 * unnamed; NULL: no map (attributes then named "thread.attr.<index>"). Borrowed for the
	 * call; asked only for samples whose span has attributes.
	 */
	const char *const *(*key_map_of)(void *ctx, pid_t pid, size_t *cnt);
	void *published_ctx; /* ctx of service_of and key_map_of */
};

struct trace_handler;

struct trace_handler *trace_handler__new(struct profile *prof, struct exe_registry *reg,
					 struct process_table *pt, const struct kallsyms *ks,
					 const struct trace_handler_opts *opts);
void trace_handler__free(struct trace_handler *th);
/* The registry is about to free file_id's executable (exe_registry_ops.forget): drop its
 * symbols and lines.
 */
/* The process whose mappings resolved pid's last sampled stack when that was another's (pid
 * forked without exec), else 0.
 */
pid_t trace_handler__owner(const struct trace_handler *th, pid_t pid);
/* The profile sample the last trace_handler__sample() added (frames and strings borrowed until
 * the next call), or NULL when it added none.
 */
const struct profile_sample *trace_handler__last_sample(const struct trace_handler *th);
void trace_handler__forget_file(struct trace_handler *th, uint64_t file_id);
/* Symbolize runtime frames through interp (borrowed; NULL: shown as markers). */
struct interp_registry;
void trace_handler__set_interp(struct trace_handler *th, struct interp_registry *interp);
/* Tell um's table queue which files samples land in (borrowed; NULL: nobody). */
struct unwind_maps;
void trace_handler__set_unwind_maps(struct trace_handler *th, struct unwind_maps *um);
/* From now on add samples to prof (a new interval's profile); 0 or -ENOMEM. */
int trace_handler__set_profile(struct trace_handler *th, struct profile *prof);

/* The line pass over the current profile's unique native frames: DWARF function, file, line
 * and inline chain where debug info is found through di (NULL: none), else the demangled
 * symbol name. Returns how many frames wait for a pending debuginfod fetch (run the pass again
 * later to fill them). After it, the profile takes no new frames (profile__set_frame_lines):
 * call it on a finished profile.
 */
struct debuginfo;
int trace_handler__symbolize_lines(struct trace_handler *th, struct debuginfo *di);

/* Add one RECORD_SAMPLE record of `size` bytes. 0, -EINVAL (malformed), -ENOMEM. */
/* A record that could not be read (counted as stats.bad_records). */
void trace_handler__bad_record(struct trace_handler *th);

int trace_handler__sample(struct trace_handler *th, const struct sample_record *rec, size_t size,
			  uint64_t now_ns);
const struct trace_handler_stats *trace_handler__stats(const struct trace_handler *th);

#endif
