/* stackscope: command dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

/* The subcommands, in the order usage() lists them. */
static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "record", cmd_record, "sample every thread on every CPU, write pprof / folded / SVG" },
	{ "agent", cmd_agent, "profile continuously, export OTLP profiles (or pprof files)" },
	{ "symbolize", cmd_symbolize,
	  "fill in functions and source lines of a pprof's address-only frames" },
	{ "store", cmd_store, "import into, query and list the embedded profile store" },
	{ "top", cmd_top, "live view of the hottest functions and their callers" },
	{ "serve", cmd_serve, "web UI and JSON API over the embedded store" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: stackscope <command> [options]\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nRun 'stackscope <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
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
