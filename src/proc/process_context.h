/* OpenTelemetry's process context (OTEP 4719), as the process publishes it: a mapping named
 * "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]" or "/memfd:OTEL_CTX" (a name that starts so)
 * whose first 32 bytes are the header below, pointing to a protobuf payload anywhere in the
 * process (export/process_context_pb.h decodes it).
 *
 * Reading follows the OTEP's protocol: header (signature "OTEL_CTX", version 2 or the
 * development version 1, a non-zero publish time), the payload copied out, the header read
 * again; the copy is consistent when the publish time did not change. A publish time of zero
 * (an update in progress) or one that changed is retried PCTX_READ_TRIES times, then given up
 * as torn. The publish time is the cache key: an unchanged one is not read again.
 *
 * Untrusted input: the header may point anywhere and say any size; the payload is read only
 * when its size is at most PCTX_PAYLOAD_MAX, with process_vm_readv (an unmapped pointer is an
 * error, never a fault here). Nothing here logs or allocates beyond the caller's buffer.
 */
#ifndef STACKSCOPE_PROC_PROCESS_CONTEXT_H
#define STACKSCOPE_PROC_PROCESS_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PCTX_HEADER_SZ 32
#define PCTX_READ_TRIES 4
#define PCTX_PAYLOAD_MAX (64u << 10)   /* as in export/process_context_pb.h */
#define PCTX_MAPS_READ_MAX (64u << 20) /* bytes of /proc/PID/maps a probe reads */

struct pctx_header {
	char signature[8]; /* "OTEL_CTX", not NUL-terminated */
	uint32_t version;
	uint32_t payload_size;
	uint64_t published_ns; /* CLOCK_BOOTTIME; 0: being updated */
	uint64_t payload;      /* address in the process */
};

/* Why a read gave nothing (the caller counts them). */
enum pctx_read_err {
	PCTX_OK = 0,
	PCTX_UNCHANGED,   /* the publish time is the one the caller has */
	PCTX_NO_PROCESS,  /* the process is gone */
	PCTX_GONE,        /* the header could not be read (the mapping is gone) */
	PCTX_NOT_READY,   /* the header is still zeros (mapped, not yet written) */
	PCTX_BAD_HEADER,  /* not the signature, or a version not read here */
	PCTX_TOO_BIG,     /* payload_size over the cap */
	PCTX_BAD_PAYLOAD, /* the payload pointer is not readable memory */
	PCTX_TORN,        /* the publish time was zero or changed at every try */
};

/* The start of the first process context mapping listed in the maps text (NUL-terminated),
 * or 0. One memchr pass over the text (for its 'O'), a compare at each: about a fifth of the
 * text's reading cost when there is none (see docs/ARCHITECTURE.md).
 */
uint64_t process_context__find_in_maps(const char *text);

/* The same from /proc/PID/maps, read in pieces (at most PCTX_MAPS_READ_MAX bytes). 0 when
 * there is none or the process is gone.
 */
uint64_t process_context__probe(pid_t pid);

/* Reads pid's context whose header is at addr. known_ns: the publish time of the payload the
 * caller has (0: none). On PCTX_OK, buf[0..*len) is a consistent payload (buf holds
 * PCTX_PAYLOAD_MAX bytes) and *published_ns its publish time; on PCTX_UNCHANGED,
 * PCTX_TOO_BIG and PCTX_BAD_PAYLOAD only *published_ns is set (the publication refused), on
 * the other errors it is 0. *tries: the reads it took (1 when nothing raced).
 */
enum pctx_read_err process_context__read(pid_t pid, uint64_t addr, uint64_t known_ns, void *buf,
					 size_t *len, uint64_t *published_ns, unsigned int *tries);

#endif
