/* `stackscope serve [--listen ADDR] [--store FILE] [--allow-host NAME] [--otlp-listen ADDR]`:
 * the web UI over the embedded store (src/serve/), until SIGINT or SIGTERM. The UI opens the
 * store read-only, so it runs beside a writing agent; --otlp-listen adds a receiver of OTLP
 * profiles (serve/otlp_receiver.h) that writes into the same store on a connection of its own.
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
#include "serve/otlp_receiver.h"
#include "serve/serve_api.h"
#include "serve/trace_list.h"
#include "store/store.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stackscope serve [--listen HOST:PORT] [--store FILE] [--allow-host NAME]\n"
		"                       [--trace-url URL] [--otlp-listen HOST:PORT]\n"
		"                       [--otlp-grpc-listen HOST:PORT]\n"
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
		"                          e.g. 'https://tempo.example/trace/{trace_id}'\n"
		"      --otlp-listen HOST:PORT  receive OTLP profiles (HTTP, POST\n"
		"                          " OTLP_RECEIVER_PATH ", protobuf, gzip or not) from\n"
		"                          agents (stackscope's, the OpenTelemetry eBPF profiler)\n"
		"                          into the store, host.name and service.name kept as\n"
		"                          labels; requests of at most 16 MiB (inflated too), 20 a\n"
		"                          second; store quota 256 MiB, 7 days (as the agent's)\n"
		"      --otlp-grpc-listen HOST:PORT  the same over OTLP/gRPC (cleartext HTTP/2,\n"
		"                          the ProfilesService's Export; OTLP's port is 4317),\n"
		"                          the same caps shared with --otlp-listen\n"
		"      --otlp-max-mb N     the request cap in MiB (default 16)\n"
		"      --otlp-rate N       requests a second (default 20)\n");
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

struct http_server *serve__start_traces(const char *addr, const char *hosts, const char *store_path,
					const char *trace_url, struct serve_api **api_out)
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
		{ "otlp-listen", required_argument, NULL, 'o' },
		{ "otlp-grpc-listen", required_argument, NULL, 'g' },
		{ "otlp-max-mb", required_argument, NULL, 'm' },
		{ "otlp-rate", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *addr = SERVE_DEFAULT_ADDR, *store_path = STORE_DEFAULT_PATH, *trace_url = NULL;
	char why[128], *end;
	struct otlp_receiver_opts ro = {
		.store_max_sz = 256ull << 20,
		.store_max_age_ns = 7ull * 86400 * 1000000000ull,
	};
	struct otlp_receiver *rx = NULL;
	unsigned long n;
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
		case 'o':
			ro.addr = optarg;
			break;
		case 'g':
			ro.grpc_addr = optarg;
			break;
		case 'm':
		case 'r':
			errno = 0;
			n = strtoul(optarg, &end, 10);
			if (errno || *end || !n || n > (c == 'm' ? 1024 : 100000)) {
				pr_err("--otlp-%s: a number from 1 to %u\n",
				       c == 'm' ? "max-mb" : "rate", c == 'm' ? 1024 : 100000);
				status = 2;
				goto out;
			}
			if (c == 'm')
				ro.body_max = ro.inflated_max = (size_t)n << 20;
			else
				ro.rate = (unsigned)n;
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
	if (ro.addr || ro.grpc_addr) {
		ro.store_path = store_path;
		rx = otlp_receiver__start(&ro);
		if (!rx) {
			pr_err("cannot receive OTLP on %s%s%s: %s\n", ro.addr ?: "",
			       ro.addr && ro.grpc_addr ? " and " : "", ro.grpc_addr ?: "",
			       errno == EINVAL ? "not an IPv4 HOST:PORT" : strerror(errno));
			http_server__stop(hs);
			serve_api__free(api);
			status = 1;
			goto out;
		}
		if (ro.addr)
			printf("stackscope serve: OTLP profiles received on port %u (POST " OTLP_RECEIVER_PATH
			       ")\n",
			       otlp_receiver__port(rx));
		if (ro.grpc_addr)
			printf("stackscope serve: OTLP profiles received over gRPC on port %u\n",
			       otlp_receiver__grpc_port(rx));
		fflush(stdout);
	}
	sigwait(&set, &sig);
	if (rx) {
		otlp_receiver__log_stats(rx);
		otlp_receiver__stop(rx);
	}
	http_server__stop(hs);
	serve_api__free(api);
out:
	free(hosts);
	return status;
}
