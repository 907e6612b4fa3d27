/* Entry points of the subcommands; each returns the process exit status. */
#ifndef STACKSCOPE_COMMANDS_H
#define STACKSCOPE_COMMANDS_H

#define STACKSCOPE_VERSION "0.1.0"

int cmd_record(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* The web UI (src/cli/serve_cmd.c): starts its server on addr over the store at store_path;
 * NULL with errno. Stop with http_server__stop(), then serve_api__free(*api). hosts: more
 * names its Host check accepts (--allow-host: comma-separated, borrowed for the server's
 * life; NULL: loopback names and the address listened on only, see base/http_server.h).
 */
#define SERVE_DEFAULT_ADDR "127.0.0.1:7434"
struct http_server;
struct serve_api;
struct http_server *serve__start(const char *addr, const char *store_path, struct serve_api **api);
struct http_server *serve__start_hosts(const char *addr, const char *hosts, const char *store_path,
				       struct serve_api **api);
/* The same with the trace links' template (serve/trace_list.h, checked; NULL: no links). */
struct http_server *serve__start_traces(const char *addr, const char *hosts, const char *store_path,
					const char *trace_url, struct serve_api **api);

#endif
