/* Reading an OTLP profiles request (ExportProfilesServiceRequest, opentelemetry-proto v1.11.0,
 * package opentelemetry.proto.profiles.v1development: the version otlp.c writes) back into the
 * in-memory profile, so that `stackscope serve --otlp-listen` can store what agents send.
 *
 * What is kept: every Profile whose sample type is samples/count, cpu/nanoseconds (divided by
 * the period) or off_cpu/nanoseconds becomes samples of one profile (one store interval per
 * request); other sample types (memory, events) are counted as rejected profiles, with the
 * first one's type in the reason. Per resource: process.pid is the sample's pid,
 * process.executable.name its comm, process.executable.path and container.id the process's
 * executable and container (otlp_request__process()), and host.name, service.name,
 * service.namespace, service.instance.id, k8s.namespace.name and k8s.pod.name become labels of
 * every sample (the store's label filter, the UI's host filter). Per sample: thread.name,
 * thread.id, cpu.logical_number, and the process.context.label.KEY attributes as label KEY.
 * Frames: profile.frame.type "kernel" is a kernel frame, "abort-marker" an error pseudo-frame,
 * "native" (or "go", or none, with a mapping) a native frame in its mapping (the mapping
 * "vmlinux" stands for no mapping), any other type a runtime frame of that runtime.
 *
 * Untrusted input (the network): every length is checked by the protobuf reader, every index
 * against its table, and what the decoder would allocate or loop over is capped before it is
 * (struct otlp_read_limits): a request past a cap is refused whole (-E2BIG), a malformed one
 * too (-EBADMSG); nothing of it is kept. The body must already be inflated (the caller caps the
 * inflated size). The decoder does not log.
 */
#ifndef STACKSCOPE_OTLP_READ_H
#define STACKSCOPE_OTLP_READ_H

#include <stddef.h>
#include <stdint.h>

struct profile;

struct otlp_read_limits {
	size_t table_max;    /* entries of each dictionary table (strings, locations...) */
	size_t resource_max; /* ResourceProfiles of a request */
	size_t sample_max;   /* Samples of a request */
	size_t stack_max;    /* locations of one stack */
	size_t frames_max;   /* locations of all samples' stacks added up: the decoder's work */
	size_t string_max;   /* bytes of one string */
};

#define OTLP_READ_TABLE_MAX ((size_t)1 << 20)
#define OTLP_READ_RESOURCE_MAX ((size_t)1 << 14)
#define OTLP_READ_SAMPLE_MAX ((size_t)1 << 20)
#define OTLP_READ_STACK_MAX ((size_t)4096)
#define OTLP_READ_FRAMES_MAX ((size_t)16 << 20)
#define OTLP_READ_STRING_MAX ((size_t)64 << 10)

/* A process as its resource described it (strings owned by the request). */
struct otlp_read_process {
	uint32_t pid;
	const char *exe;       /* process.executable.path, or NULL */
	const char *container; /* container.id, or NULL */
};

struct otlp_request {
	struct profile *profile;         /* every accepted sample; owned */
	uint64_t profiles_accepted;      /* Profiles kept */
	uint64_t profiles_rejected;      /* Profiles of a sample type not kept */
	uint64_t samples;                /* samples added (their counts added up) */
	char rejected_why[128];          /* why the first rejected Profile was, or "" */
	struct otlp_read_process *procs; /* sorted by pid, the first resource of a pid kept */
	size_t proc_cnt;
	char **owned; /* internal: strings the request owns */
	size_t owned_cnt, owned_cap;
};

/* Decodes len bytes of an uncompressed request under lim (NULL: the defaults above).
 * 0 and *out (free with otlp_request__free()), or -EBADMSG (malformed: a bad varint, a length
 * past its message, an index out of its table, a string table whose [0] is not ""), -E2BIG (a
 * cap of lim passed), -ENOMEM. On error why (why_sz bytes) says what, in a few words.
 */
int otlp_request__decode(const void *buf, size_t len, const struct otlp_read_limits *lim,
			 struct otlp_request **out, char *why, size_t why_sz);

/* Accepts NULL. */
void otlp_request__free(struct otlp_request *r);

/* The process pid of the request, or NULL. Borrowed until otlp_request__free(). */
const struct otlp_read_process *otlp_request__process(const struct otlp_request *r, uint32_t pid);

#endif
