/* The command-line options of the commands, as tables: one table of the options the sampling
 * commands share (record, agent, top: -F, -p, --cache-dir, --no-symbolize, the off-CPU ones,
 * -v, -h; symbolize takes -v and -h), each entry naming the commands that take it, and each
 * command's own table. One parser builds getopt_long()'s lists from them and sets each
 * option's field by its offset through the entry's setter, which prints the entry's error
 * line for a bad value.
 *
 * Invariants: a shared entry's offset is into struct sampling_options, a command's own entry's
 * into that command's options; long names and letters are unique across what one command
 * takes; at most OPTION_TABLE_MAX options per command.
 */
#ifndef STACKSCOPE_OPTION_TABLE_H
#define STACKSCOPE_OPTION_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "proc/selection.h"

#define OPTION_TABLE_MAX 64
#define OPTION_MAX_PIDS 64

/* The selection flags' lines of record's and agent's --help. */
#define SELECTION_USAGE                                                                            \
	"      --select-pid PID[,PID]     only these processes (and their forks)\n"                \
	"      --select-name REGEX        only processes whose name (comm) or executable's\n"      \
	"                                 file name matches (POSIX ERE, unanchored)\n"             \
	"      --select-cgroup GLOB       only processes in a cgroup v2 path matching GLOB\n"      \
	"                                 (or below it: /system.slice/x.service)\n"                \
	"      --select-container ID      only this container (id or a 12+ digit prefix)\n"        \
	"      --select-pod NAMESPACE[/POD]  only this Kubernetes namespace, or its pod (globs;\n" \
	"                                 names from the node's files: agent --host-root)\n"       \
	"      --exclude-pid/-name/-cgroup/-container/-pod  never these (exclude wins); every\n"   \
	"                                 select/exclude flag repeats; decided in eBPF\n"

/* Which commands take a shared option. */
enum option_command {
	OPTION_RECORD = 1 << 0,
	OPTION_AGENT = 1 << 1,
	OPTION_TOP = 1 << 2,
	OPTION_SYMBOLIZE = 1 << 3, /* not a sampling command: -v and -h only */
};

/* The options the sampling commands share; each command sets its defaults before parsing. */
struct sampling_options {
	unsigned int freq_hz; /* 1..10000 */
	pid_t pids[OPTION_MAX_PIDS];
	size_t pid_cnt;
	const char *cache_dir; /* unwind-table cache; "" disables */
	bool symbolize;
	bool off_cpu;                 /* --off-cpu: off-CPU profiles */
	uint64_t off_cpu_min_ns;      /* --off-cpu-min (microseconds on the command line) */
	unsigned int off_cpu_rate;    /* --off-cpu-rate: stack walks per second (0: default) */
	bool faults;                  /* --faults: memory-growth samples */
	uint64_t fault_period;        /* --fault-period: page faults per sample (0: default) */
	bool alloc;                   /* --alloc: allocation samples */
	uint64_t alloc_rate;          /* --alloc-rate: mean bytes between samples (0: default) */
	struct selection_spec select; /* --select-* / --exclude-* (record, agent) */
	unsigned int map_scale; /* --map-scale: BPF maps times this (0: sized for the machine) */
	const char *obi_map;    /* --obi-map: OBI's pinned traces_ctx_v1 ("": not read) */
	bool verbose;
	bool help;
};

/* The defaults every sampling command starts from: freq_hz, symbolizing on, the default
 * unwind-table cache, the off-CPU minimum; everything else zero.
 */
void sampling_options__init(struct sampling_options *o, unsigned int freq_hz);

struct option_spec;

/* Sets field (the option's, by offset) from arg (NULL without a value): 0; 1 to stop parsing
 * (--help); or -EINVAL after printing the error line for command.
 */
typedef int (*option_setter)(const struct option_spec *spec, const char *arg, void *field,
			     const char *command);

struct option_spec {
	const char *name; /* the long name */
	int letter;       /* the short option, or 0 */
	bool has_arg;
	option_setter set;
	size_t offset;         /* of its field (see the invariants above) */
	double min, max;       /* the range of a number */
	const char *error;     /* the error line, a format whose one %s is the value */
	unsigned int commands; /* shared entries: enum option_command bits */
};

/* Setters of one field. true/false: a bool; string: a const char *; uint: an unsigned int,
 * ulong an unsigned long and u64 a uint64_t, decimal in [min, max]; double: a double in
 * [min, max]; hours: a double in [min, max] hours, stored in seconds; mib: a uint64_t,
 * [min, max] MiB stored in bytes.
 */
#define OPTION_SETTER(name) \
	int name(const struct option_spec *spec, const char *arg, void *field, const char *command)
OPTION_SETTER(option_set_true);
OPTION_SETTER(option_set_false);
OPTION_SETTER(option_set_string);
OPTION_SETTER(option_set_uint);
OPTION_SETTER(option_set_ulong);
OPTION_SETTER(option_set_u64);
OPTION_SETTER(option_set_double);
OPTION_SETTER(option_set_hours);
OPTION_SETTER(option_set_mib);

/* --debug-dir DIR appended to dirs[*cnt] (cap of them): 0, or -EINVAL after printing the line
 * too_many (a format that may name cap with %d), or why DIR is not a directory.
 */
int option_add_debug_dir(const char *command, const char *arg, const char **dirs, size_t cap,
			 size_t *cnt, const char *too_many);

/* Parses argv (argv[0] is the command) with the shared entries for command_bit (their fields
 * in common) and the command's own table own (ending in an entry without a name; fields in
 * opts). posix: stop at the first argument that is not an option (record's COMMAND). Returns
 * 0 with optind at the first argument left, 1 after --help (common->help set), or -EINVAL
 * after printing one error line.
 */
int option_table__parse(const char *command, unsigned int command_bit,
			struct sampling_options *common, const struct option_spec *own, void *opts,
			bool posix, int argc, char **argv);

/* What a sampling command does once its options are parsed: true when it is done (--help
 * printed on stdout); else the log level set (debug with -v, else quiet_level, an enum
 * log_level) and, with raise_fds, the open-file limit raised to its hard limit (one file per
 * perf event and per table being built).
 */
bool sampling_options__begin(const struct sampling_options *o, void (*usage)(FILE *f),
			     int quiet_level, bool raise_fds);

#endif
