/* `stackscope serve [--listen ADDR] [--store FILE]`: the web UI over the embedded store
 * (src/serve/), until SIGINT or SIGTERM. It opens the store read-only, so it runs beside a
 * writing agent.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/http_server.h"
#include "base/log.h"
#include "cli/commands.h"
#include "serve/serve_api.h"
#include "store/store.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stackscope serve [--listen HOST:PORT] [--store FILE]\n"
		"\n"
		"A web UI (timeline, flamegraph, top functions, filters, diff, pprof download)\n"
		"and its JSON API (docs/API.md) over the embedded store. Every file of the page\n"
		"is in the binary: nothing is fetched from the network.\n"
		"      --listen HOST:PORT  address to serve on (default " SERVE_DEFAULT_ADDR
		"; a port\n"
		"                          of 0 picks a free one, printed at start)\n"
		"      --store FILE        the store (default " STORE_DEFAULT_PATH ")\n");
}

struct http_server *serve__start(const char *addr, const char *store_path,
				 struct serve_api **api_out)
{
	struct http_server_opts ho = { .body_max = SERVE_BODY_MAX };
	struct serve_api *api = serve_api__new(store_path);
	struct http_server *hs;
	int err;

	*api_out = NULL;
	if (!api)
		return NULL;
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
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *addr = SERVE_DEFAULT_ADDR, *store_path = STORE_DEFAULT_PATH;
	struct serve_api *api = NULL;
	struct http_server *hs;
	sigset_t set;
	int c, sig;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			addr = optarg;
			break;
		case 's':
			store_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	/* the signals are taken by sigwait() below, never delivered to the server thread */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	hs = serve__start(addr, store_path, &api);
	if (!hs) {
		pr_err("cannot serve on %s: %s\n", addr,
		       errno == EINVAL ? "not an IPv4 HOST:PORT" : strerror(errno));
		return 1;
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
	return 0;
}
