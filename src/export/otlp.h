/* OTLP profiles export: one profile as one ExportProfilesServiceRequest (protobuf), the
 * message an OTLP receiver gets over HTTP or gRPC (otlp_client.h sends it).
 *
 * Schema: opentelemetry-proto v1.11.0, package opentelemetry.proto.profiles.v1development
 * (Alpha). Field numbers changed between releases (Sample was renumbered in v1.10), so the
 * encoder is pinned to v1.11 and proto/ holds the matching schema the tests decode with.
 *
 * What a request holds:
 *  - one ResourceProfiles per process (pid), ascending pid order, each with one ScopeProfiles
 *    (scope "stackscope" + version) holding one Profile: sample_type samples/count,
 *    period_type cpu/nanoseconds, period = the profile's period; then (with samples of them)
 *    off_cpu/nanoseconds and one Profile per memory type (profile/mem_types.h: faults/count,
 *    fault_bytes/bytes, mapped_bytes/bytes, alloc_objects/count, alloc_space/bytes,
 *    inuse_objects/count, inuse_space/bytes), no period, each Sample one aggregated value
 *    without cpu.logical_number; memory samples are never in the CPU Profile.
 *  - resource attributes (plain KeyValue): process.pid, process.executable.path and .name,
 *    container.id, k8s.pod.uid (when the lookup gives them), the resource attributes the
 *    process published (OTel process context, typed as published), the lookup's extra attributes,
 *    then the host's extra attributes (OTEL_RESOURCE_ATTRIBUTES), then host.name, host.id,
 *    host.arch, os.type, os.description. A key already written is skipped, so earlier
 *    sources win and a resource never repeats a key.
 *  - sample attributes thread.name, thread.id, cpu.logical_number. A profile sample
 *    aggregates events from several CPUs; since the CPU is part of an OTLP sample's identity,
 *    each profile sample becomes one OTLP Sample per distinct CPU among its events.
 *  - sample shape: when every profile sample kept all its events (timestamps_cap large
 *    enough), shape "timestamps only": one timestamp per sampled event, as upstream sends.
 *    Otherwise the whole Profile uses shape "one aggregated value, no timestamps" (mixing
 *    shapes is discouraged): the per-CPU counts as values, and the count whose CPU was not
 *    kept goes to a Sample without cpu.logical_number. Size timestamps_cap to at least
 *    Hz * interval so the first shape is the one used.
 *  - every Location has profile.frame.type: "kernel", "native", or "abort-marker" for
 *    FRAME_ERROR pseudo-frames (the unwinder stopped there; upstream's value for its abort
 *    error frame). An abort marker has no mapping and address 0, and one Line whose
 *    Function name is the reason ("[unwind: no CFI]"), so backends show why the stack ends.
 *  - native locations: mapping + address (ELF virtual address, as the profile stores it)
 *    and Lines when symbolized. Mappings: ELF address range, file offset, filename = the
 *    file's basename (as upstream), attributes process.executable.build_id.gnu (when known)
 *    and process.executable.build_id.htlhash (when the file can be read through
 *    /proc/PID/root: SHA-256 of head 4 KiB, tail 4 KiB and the big-endian length, first 16
 *    bytes in hex, cached per file identity).
 *  - kernel locations: kernel virtual address, mapping "vmlinux" with memory_start =
 *    memory_limit = 0, build_id.gnu = the running kernel's build id and build_id.htlhash =
 *    FNV-128a of that hex string (upstream's kernel file id), Lines when symbolized.
 *  - Profile.time_unix_nano/duration_nano cover every timestamp sent: the window is the
 *    profile's [start, end) widened to include all event times.
 *
 * Invariants of the encoded dictionary (one per request, shared by all resources): every
 * table's entry 0 is its zero value and is present on the wire; entries are deduplicated;
 * only referenced entries are written; every index is in range; no attribute list repeats a
 * key; every string is valid UTF-8 (invalid bytes become U+FFFD, see utf8.h).
 */
#ifndef STACKSCOPE_OTLP_H
#define STACKSCOPE_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "export/process_context_pb.h"
#include "export/protobuf.h"
#include "profile/profile.h"

/* Requests are kept under this size by default (receivers commonly cap at 4 MiB). */
#define OTLP_DEFAULT_MAX_REQUEST_SZ ((size_t)4 << 20)

/* A string attribute; both strings borrowed. */
struct otlp_attr {
	const char *key;
	const char *value;
};

/* The machine, detected once by otlp_host__detect(). Empty strings are not sent. */
struct otlp_host {
	char host_name[256];
	char host_id[64];   /* /etc/machine-id */
	char host_arch[16]; /* semconv value: amd64, arm64, x86, ... */
	char os_type[16];   /* "linux" */
	char os_description[256];
	char kernel_build_id[129]; /* hex GNU build id of the running kernel, or "" */
	/* Extra resource attributes for every process (OTEL_RESOURCE_ATTRIBUTES); borrowed. */
	const struct otlp_attr *extra;
	size_t extra_cnt;
};

/* Fills h from uname(2), /etc/machine-id (or /var/lib/dbus/machine-id), /etc/os-release and
 * /sys/kernel/notes. What cannot be read stays "". Never fails; extra is left empty.
 */
void otlp_host__detect(struct otlp_host *h);

/* What the caller knows about one process. Every pointer is borrowed and must stay valid
 * until otlp_encoder__encode() returns; NULL or "" means unknown.
 */
struct otlp_process {
	const char *exe_path;     /* target of /proc/PID/exe */
	const char *container_id; /* from /proc/PID/cgroup */
	const char *k8s_pod_uid;
	const struct otlp_attr *extra; /* e.g. the command line when the user allows it */
	size_t extra_cnt;
	/* Its OTel process context (export/process_context_pb.h): the attributes of its
	 * Resource are sent (its extra attributes are not: they are not the SDK's resource).
	 */
	const struct pctx_attrs *published;
};

/* Fills *out for pid (zeroed before the call). Returns 0, or a negative errno (e.g. -ENOENT
 * for a process that exited): the resource then carries process.pid and the host only.
 */
typedef int (*otlp_process_fn)(void *ctx, uint32_t pid, struct otlp_process *out);

struct otlp_encoder_opts {
	const char *scope_name;    /* NULL: "stackscope" */
	const char *scope_version; /* NULL: not sent */
};

struct otlp_encoder;

/* The encoder keeps nothing between requests but its options, and does no I/O: a mapping's
 * htlhash comes with the profile (profile_mapping.file_hash, proc/file_id.h).
 * NULL with errno set on failure.
 */
struct otlp_encoder *otlp_encoder__new(const struct otlp_encoder_opts *opts);
void otlp_encoder__free(struct otlp_encoder *e);

/* Appends the ExportProfilesServiceRequest for p to out (an initialized buffer; its max_sz
 * bounds the request). lookup may be NULL. Profiles without samples still encode to a valid
 * (empty) request. Returns 0, -ENOMEM, or -EMSGSIZE when the request would pass out's max_sz
 * (out's content is then undefined: drop it).
 */
int otlp_encoder__encode(struct otlp_encoder *e, const struct profile *p,
			 const struct otlp_host *host, otlp_process_fn lookup, void *ctx,
			 struct pb_buf *out);

/* The kernel's file id from its hex GNU build id: FNV-128a of the string, 32 hex chars. */
void otlp__kernel_file_id(const char *build_id_hex, char out[33]);

#endif
