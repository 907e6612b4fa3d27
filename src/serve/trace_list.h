/* The UI's trace table: the traces of a range (its samples' labels trace_id and span_id,
 * profile/trace_label.h) with their samples, and the links to a trace viewer the user may give
 * as a URL template (`serve --trace-url`, `agent --trace-url`).
 *
 * A template is an http:// or https:// URL in which "{trace_id}" (required) and "{span_id}" are
 * replaced by the ids, lowercase hex; every other byte is printable ASCII and none of
 * " ' < > \ ` { } or a space: what comes out is a URL that needs no escaping in an HTML
 * attribute, whatever the store holds (the ids substituted are checked to be hex).
 */
#ifndef STACKSCOPE_TRACE_LIST_H
#define STACKSCOPE_TRACE_LIST_H

#include <stddef.h>

#include "profile/profile.h"
#include "serve/json_out.h"

#define TRACE_URL_MAX 1024 /* bytes of a template, and of a link made from it */

/* 0 when tmpl is a template as above, else -EINVAL and why[cap] says what is wrong. */
int trace_url__check(const char *tmpl, char *why, size_t cap);

/* The link of one span into out[cap]: 0, or -EINVAL (an id that is not lowercase hex of its
 * length: 32 and 16; a span id may be NULL or "" when tmpl has no {span_id}) or -E2BIG.
 */
int trace_url__expand(const char *tmpl, const char *trace_id, const char *span_id, char *out,
		      size_t cap);

/* {"trace_url": tmpl or null, "traces": [{"trace_id", "samples", "spans", "span_id" (the span
 * with most samples), "url" (with a template)}...]}: the traces of p, most samples first, at
 * most limit. 0 or -ENOMEM (json_out's own errors are left in j).
 */
int trace_list__json(const struct profile *p, const char *tmpl, size_t limit, struct json_out *j);

#endif
