/* The payload of OpenTelemetry's process context (OTEP 4719): the protobuf message
 * opentelemetry.proto.processcontext.v1development.ProcessContext, decoded into a flat list
 * of attributes. proc/process_context.h finds and copies the payload out of the process.
 *
 *	ProcessContext { Resource resource = 1; repeated KeyValue attributes = 2; }
 *	Resource { repeated KeyValue attributes = 1; ... }   KeyValue { string key = 1; AnyValue value = 2; }
 *	AnyValue { string = 1 | bool = 2 | int64 = 3 | double = 4 | array, kvlist, bytes, strindex }
 *
 * Kept: scalar values (string, bool, int, double) of the resource's attributes
 * (PCTX_FROM_RESOURCE) and of the extra attributes (PCTX_FROM_EXTRA), in the order of the
 * payload. Not kept, and counted in `skipped`: arrays, kvlists, bytes and dictionary indexes
 * (a process context has no dictionary), empty keys, a key seen before (the first wins), and
 * anything past the caps. Nested values are skipped unread, so no input nests deeper than
 * five messages here.
 *
 * One array is read: the extra attribute PCTX_KEY_MAP (OTEP 4947's key index -> attribute
 * name table for the thread context's attributes), an ArrayValue of strings, into key_map
 * (not an attribute: it is neither in attrs nor counted as skipped). An element that is not
 * a non-empty string of at most PCTX_KEY_MAX bytes leaves its index unnamed (NULL); elements
 * past PCTX_KEY_MAP_MAX are ignored (a key index is one byte). Given twice, the first wins.
 *
 * Untrusted input (another process's memory): every length is checked by protobuf_read.h; a
 * payload over PCTX_PAYLOAD_MAX, a malformed message, or a wrong wire type for a known field
 * is refused whole (-EBADMSG): a context is used entirely or not at all. Strings are made valid
 * UTF-8 (invalid bytes become U+FFFD) and printable (control bytes become '?').
 */
#ifndef STACKSCOPE_PROCESS_CONTEXT_PB_H
#define STACKSCOPE_PROCESS_CONTEXT_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCTX_PAYLOAD_MAX (64u << 10) /* bytes of payload read and decoded */
#define PCTX_ATTR_MAX 64             /* attributes kept */
#define PCTX_KEY_MAX 256             /* bytes of a key; a longer one is skipped */
#define PCTX_VALUE_MAX 4096          /* bytes of a string value; a longer one is skipped */
#define PCTX_KEY_MAP "threadlocal.attribute_key_map"
#define PCTX_KEY_MAP_MAX 256 /* key indexes are one byte */
/* The sample label (pprof, store) that carries a process's published service.name. */
#define PCTX_SERVICE_LABEL "service.name"
/* The marker label of the samples of a process whose published context is refused (a hostile
 * or broken publisher: too big, unreadable, malformed...), the reason its value.
 */
#define PCTX_REFUSED_LABEL "otel.process_context"

enum pctx_type {
	PCTX_STRING = 1,
	PCTX_BOOL = 2,
	PCTX_INT = 3,
	PCTX_DOUBLE = 4,
};

enum pctx_source {
	PCTX_FROM_RESOURCE = 1, /* ProcessContext.resource.attributes */
	PCTX_FROM_EXTRA = 2,    /* ProcessContext.attributes */
};

struct pctx_attr {
	char *key;      /* owned, NUL-terminated */
	char *str;      /* owned: the value as text ("true", "42", "0.5" for the other types) */
	uint8_t type;   /* enum pctx_type */
	uint8_t source; /* enum pctx_source */
	bool b;
	int64_t i;
	double d;
};

struct pctx_attrs {
	struct pctx_attr *attrs; /* owned */
	size_t cnt;
	uint32_t skipped; /* attributes not kept (see above) */
	char **key_map;   /* owned, key_map_cnt entries (NULL: index not named); NULL: no map */
	size_t key_map_cnt;
};

/* Decodes len bytes at buf into *out (overwritten; clear it with pctx_attrs__clear()).
 * 0, -EBADMSG (malformed, or len over PCTX_PAYLOAD_MAX: *out is then empty) or -ENOMEM.
 */
int pctx_attrs__decode(const void *buf, size_t len, struct pctx_attrs *out);
void pctx_attrs__clear(struct pctx_attrs *a);

/* The attribute named key, or NULL (borrowed from a). */
const struct pctx_attr *pctx_attrs__find(const struct pctx_attrs *a, const char *key);

/* A deep copy of src into *dst (overwritten). 0 or -ENOMEM (*dst then empty). */
int pctx_attrs__copy(struct pctx_attrs *dst, const struct pctx_attrs *src);

#endif
