/* stackscope: command dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stackscope <command> [options]\n"
		"\n"
		"commands:\n"
		"  record    sample every thread on every CPU, write pprof / folded / SVG\n"
		"  agent     profile continuously, export OTLP profiles (or pprof files)\n"
		"  symbolize fill in functions and source lines of a pprof's address-only frames\n"
		"  store     import into, query and list the embedded profile store\n"
		"  top       live view of the hottest functions and their callers\n"
		"  serve     web UI and JSON API over the embedded store\n"
		"\n"
		"Run 'stackscope <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "agent"))
		return cmd_agent(argc - 1, argv + 1);
	if (!strcmp(argv[1], "symbolize"))
		return cmd_symbolize(argc - 1, argv + 1);
	if (!strcmp(argv[1], "store"))
		return cmd_store(argc - 1, argv + 1);
	if (!strcmp(argv[1], "top"))
		return cmd_top(argc - 1, argv + 1);
	if (!strcmp(argv[1], "serve"))
		return cmd_serve(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("stackscope %s\n", STACKSCOPE_VERSION);
		return 0;
	}
	fprintf(stderr, "stackscope: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
