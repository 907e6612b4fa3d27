/* `stackscope serve [--listen ADDR] [--store FILE] [--allow-host NAME]`: the web UI over the
 * embedded store (src/serve/), until SIGINT or SIGTERM. It opens the store read-only, so it
 * runs beside a writing agent.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/http_server.h"
#include "base/log.h"
#include "cli/commands.h"
#include "serve/serve_api.h"
#include "serve/trace_list.h"
#include "store/store.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stackscope serve [--listen HOST:PORT] [--store FILE] [--allow-host NAME]\n"
		"                       [--trace-url URL]\n"
		"\n"
		"A web UI (timeline, flamegraph, top functions, filters, diff, pprof download)\n"
		"and its JSON API (docs/API.md) over the embedded store. Every file of the page\n"
		"is in the binary: nothing is fetched from the network.\n"
		"      --listen HOST:PORT  address to serve on (default " SERVE_DEFAULT_ADDR
		"; a port\n"
		"                          of 0 picks a free one, printed at start)\n"
		"      --store FILE        the store (default " STORE_DEFAULT_PATH ")\n"
		"      --allow-host NAME   also answer requests whose Host is NAME (a name this\n"
		"                          machine is reached by, e.g. through a proxy; repeat or\n"
		"                          separate by commas). Else only localhost, 127.x.y.z and\n"
		"                          the address connected to are answered (403 for the\n"
		"                          rest: a DNS-rebinding page cannot read the profiles)\n"
		"      --trace-url URL     link the trace ids of the trace table to a trace viewer:\n"
		"                          an http(s) URL with {trace_id} (and {span_id}) in it,\n"
		"                          e.g. 'https://tempo.example/trace/{trace_id}'\n");
}

struct http_server *serve__start(const char *addr, const char *store_path,
				 struct serve_api **api_out)
{
	return serve__start_hosts(addr, NULL, store_path, api_out);
}

struct http_server *serve__start_hosts(const char *addr, const char *hosts, const char *store_path,
				       struct serve_api **api_out)
{
	return serve__start_traces(addr, hosts, store_path, NULL, api_out);
}

struct http_server *serve__start_traces(const char *addr, const char *hosts,
					const char *store_path, const char *trace_url,
					struct serve_api **api_out)
{
	struct http_server_opts ho = { .body_max = SERVE_BODY_MAX, .hosts = hosts };
	struct serve_api *api = serve_api__new(store_path);
	struct http_server *hs;
	int err;

	*api_out = NULL;
	if (!api)
		return NULL;
	if (serve_api__set_trace_url(api, trace_url)) {
		serve_api__free(api);
		errno = ENOMEM;
		return NULL;
	}
	hs = http_server__start(addr, &ho, serve_api__handle, api);
	if (!hs) {
		err = errno;
		serve_api__free(api);
		errno = err;
		return NULL;
	}
	*api_out = api;
	return hs;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "store", required_argument, NULL, 's' },
		{ "allow-host", required_argument, NULL, 'a' },
		{ "trace-url", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *addr = SERVE_DEFAULT_ADDR, *store_path = STORE_DEFAULT_PATH, *trace_url = NULL;
	char why[128];
	struct serve_api *api = NULL;
	struct http_server *hs;
	char *hosts = NULL, *more;
	sigset_t set;
	int c, sig, status = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			addr = optarg;
			break;
		case 's':
			store_path = optarg;
			break;
		case 'a': /* appended to the list */
			if (!*optarg || strchr(optarg, ' ')) {
				pr_err("--allow-host: a host name, or names separated by commas\n");
				status = 2;
				goto out;
			}
			if (asprintf(&more, "%s%s%s", hosts ?: "", hosts ? "," : "", optarg) < 0) {
				status = 1;
				goto out;
			}
			free(hosts);
			hosts = more;
			break;
		case 't': /* --trace-url TEMPLATE (serve/trace_list.h) */
			if (trace_url__check(optarg, why, sizeof(why))) {
				pr_err("--trace-url '%s': %s\n", optarg, why);
				status = 2;
				goto out;
			}
			trace_url = optarg;
			break;
		case 'h':
			usage(stdout);
			goto out;
		default:
			usage(stderr);
			status = 2;
			goto out;
		}
	}
	if (optind < argc) {
		usage(stderr);
		status = 2;
		goto out;
	}
	/* the signals are taken by sigwait() below, never delivered to the server thread */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	hs = serve__start_traces(addr, hosts, store_path, trace_url, &api);
	if (!hs) {
		pr_err("cannot serve on %s: %s\n", addr,
		       errno == EINVAL ? "not an IPv4 HOST:PORT" : strerror(errno));
		status = 1;
		goto out;
	}
	{
		char host[64];
		const char *colon = strrchr(addr, ':');
		size_t hl = (size_t)(colon - addr);

		snprintf(host, sizeof(host), "%.*s", (int)(hl < sizeof(host) ? hl : 0), addr);
		printf("stackscope serve: http://%s:%u/ (store %s)\n", host[0] ? host : "127.0.0.1",
		       http_server__port(hs), store_path);
		fflush(stdout);
	}
	sigwait(&set, &sig);
	http_server__stop(hs);
	serve_api__free(api);
out:
	free(hosts);
	return status;
}
