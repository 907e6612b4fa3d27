/* The web UI's server side: the embedded page and its JSON API (docs/API.md) over one
 * store file, as the handler of a base/http_server.h server (`stackscope serve`, and the
 * agent's --ui).
 *
 * The store is opened read-only on the first request that needs it (a store the agent has not
 * created yet answers 503 until it exists) and reopened after an error (the agent may have
 * moved a corrupt file aside). Each query reads one snapshot (WAL): it never blocks the
 * writer, nor sees half an interval. Everything runs on the server's thread.
 */
#ifndef STACKSCOPE_SERVE_API_H
#define STACKSCOPE_SERVE_API_H

#include <stddef.h>

struct http_request;
struct http_response;
struct serve_api;

/* Largest upload (two pprof files to compare), and the answers' largest JSON text. */
#define SERVE_BODY_MAX ((size_t)32 << 20)
#define SERVE_JSON_MAX ((size_t)256 << 20)

/* store_path is copied. NULL with errno ENOMEM. */
struct serve_api *serve_api__new(const char *store_path);
void serve_api__free(struct serve_api *a);
/* The trace links' template (serve/trace_list.h; checked by the caller with
 * trace_url__check()), copied; NULL: no links. Before the server starts. 0 or -ENOMEM.
 */
int serve_api__set_trace_url(struct serve_api *a, const char *tmpl);

/* The http_server handler; ctx is the serve_api. */
void serve_api__handle(void *ctx, const struct http_request *req, struct http_response *resp);

#endif
