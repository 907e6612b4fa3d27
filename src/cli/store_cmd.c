/* `stackscope store`: the embedded store from the command line.
 *   store import [--store FILE] PPROF...     adds pprof files (one interval each)
 *   store query [--store FILE] [filters] -o OUT   merges a range into pprof / folded / SVG
 *   store intervals [--store FILE] [--from T] [--to T]   one line per interval
 * Readers open the file read-only, so they run beside a writing agent.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/output_file.h"
#include "cli/commands.h"
#include "cli/record_options.h"
#include "export/flamegraph.h"
#include "export/folded.h"
#include "export/pprof.h"
#include "export/pprof_read.h"
#include "profile/profile.h"
#include "profile/runtime_fold.h"
#include "profile/trace_label.h"
#include "store/pprof_import.h"
#include "store/store.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stackscope store import [--store FILE] PPROF...\n"
		"       stackscope store query [--store FILE] [FILTERS] [--fold runtime]\n"
		"                              -o OUT\n"
		"       stackscope store intervals [--store FILE] [--from T] [--to T]\n"
		"\n"
		"The agent's embedded store (default " STORE_DEFAULT_PATH ").\n"
		"  import     add pprof files, one interval each\n"
		"  query      merge the matching samples into one profile; OUT ends in .pb.gz,\n"
		"             .folded or .svg ('-' writes folded text to stdout); with\n"
		"             --fold runtime, folded and SVG lack the interpreter's native\n"
		"             frames between two script frames\n"
		"  intervals  list intervals: id, start and end (ns since the epoch), samples\n"
		"\n"
		"filters:\n"
		"      --from T, --to T   ns since the epoch, or relative: -30s, -5m, -2h, -1d\n"
		"      --pid N, --tid N, --comm NAME, --thread NAME, --exe PATH,\n"
		"      --container ID, --label KEY=VALUE\n"
		"      --trace ID         the samples of one trace (32 hex digits: their\n"
		"                         OpenTelemetry thread context's trace_id label)\n"
		"      --service NAME     the samples of processes that published service.name\n"
		"                         NAME (OpenTelemetry process context)\n"
		"      --sample-type T    cpu (default), off_cpu, faults, fault_bytes,\n"
		"                         mapped_bytes, alloc_objects, alloc_space,\n"
		"                         inuse_objects, inuse_space (in use: the last interval)\n");
}

static int print_interval(void *ctx, const struct store_interval *iv)
{
	printf("%lld %llu %llu %llu\n", (long long)iv->id, (unsigned long long)iv->start_ns,
	       (unsigned long long)iv->end_ns, (unsigned long long)iv->total);
	return 0;
}

/* p written to path; fold: folded and SVG with the runtime fold (profile/runtime_fold.h). */
static int write_profile(const struct profile *p, const char *path, bool fold)
{
	enum output_format fmt = strcmp(path, "-") ? output_format__from_path(path) : OUTPUT_FOLDED;
	struct profile *folded = NULL;
	int err;

	if (fold && fmt != OUTPUT_PPROF) {
		folded = runtime_fold__copy(p);
		if (!folded)
			return -errno;
		p = folded;
	}
	switch (fmt) {
	case OUTPUT_PPROF:
		err = pprof__write(p, path);
		break;
	case OUTPUT_FOLDED:
		err = folded__write(p, path);
		break;
	case OUTPUT_SVG:
		err = flamegraph__write(p, path, "stackscope store query");
		break;
	default:
		err = -EINVAL;
		break;
	}
	profile__free(folded);
	return err;
}

/* Why a pprof file could not be read or turned into a profile, in words. */
static const char *pprof_error(int err)
{
	switch (err) {
	case -EBADMSG:
		return "not a valid pprof profile";
	case -EFBIG:
		return "larger than a profile may be (1 GiB decompressed)";
	case -ENOMEM:
		return "out of memory while decoding it";
	default:
		return strerror(-err);
	}
}

/* Why the store refused an interval, in words. */
static const char *write_error(int err)
{
	switch (err) {
	case -EBADMSG:
		return "the store is corrupt";
	case -EBUSY:
		return "another writer held the store's lock for over 5 s";
	case -E2BIG:
		return "a stack or frame too large for the store";
	case -ENOMEM:
		return "out of memory";
	default: /* ENOSPC, EROFS, EACCES... */
		return strerror(-err);
	}
}

static int import_files(struct store *st, char **files, int n)
{
	int i, bad = 0;

	for (i = 0; i < n; i++) {
		struct pprof_profile *pp = NULL;
		struct profile *p = NULL;
		int err = pprof_profile__read(files[i], 0, &pp);

		err = err ?: pprof_import(pp, &p);
		if (err) {
			pr_err("cannot import %s: %s\n", files[i], pprof_error(err));
			bad++;
		} else if ((err = store__write(st, p, NULL, NULL))) {
			pr_err("cannot write %s into the store: %s\n", files[i], write_error(err));
			bad++;
		} else {
			printf("imported %s: %llu samples\n", files[i],
			       (unsigned long long)profile__total_samples(p));
		}
		profile__free(p);
		pprof_profile__free(pp);
	}
	return bad ? 1 : 0;
}

/* --trace ID as the label filter "trace_id=<id>" (lowercase) into buf[sizeof(TRACE_LABEL_TRACE)
 * + 33]; 0, or -EINVAL for an ID that is not 32 hex digits.
 */
static int store_trace_filter(struct store_filter *f, const char *id, char *buf)
{
	uint8_t bytes[16];
	char hex[33];
	size_t i;

	if (strlen(id) != 32)
		return -EINVAL;
	for (i = 0; i < 32; i++)
		hex[i] = (char)tolower((unsigned char)id[i]);
	hex[32] = '\0';
	if (!trace_label__parse(hex, bytes, sizeof(bytes)))
		return -EINVAL;
	snprintf(buf, sizeof(TRACE_LABEL_TRACE) + 33, "%s=%s", TRACE_LABEL_TRACE, hex);
	return store_filter__parse(f, "label", buf) < 0 ? -EINVAL : 0;
}

int cmd_store(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "from", required_argument, NULL, 1 },
		{ "to", required_argument, NULL, 1 },
		{ "pid", required_argument, NULL, 1 },
		{ "tid", required_argument, NULL, 1 },
		{ "comm", required_argument, NULL, 1 },
		{ "thread", required_argument, NULL, 1 },
		{ "exe", required_argument, NULL, 1 },
		{ "container", required_argument, NULL, 1 },
		{ "label", required_argument, NULL, 1 },
		{ "sample-type", required_argument, NULL, 1 },
		{ "fold", required_argument, NULL, 2 },
		{ "trace", required_argument, NULL, 3 },
		{ "service", required_argument, NULL, 1 },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct store_opts so = { .path = STORE_DEFAULT_PATH };
	struct store_filter f = { 0 };
	char trace_label[sizeof(TRACE_LABEL_TRACE) + 33];
	const char *action, *out_path = NULL;
	struct store *st = NULL;
	struct profile *p = NULL;
	char err_text[512];
	bool fold = false;
	int c, idx, err, ret = 1;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	action = argv[1];
	if (strcmp(action, "import") && strcmp(action, "query") && strcmp(action, "intervals")) {
		fprintf(stderr, "stackscope store: unknown action '%s'\n", action);
		return 2;
	}
	argc--;
	argv++;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", long_opts, &idx)) != -1) {
		switch (c) {
		case 's':
			so.path = optarg;
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 2:
			if (runtime_fold__parse(optarg, &fold)) {
				fprintf(stderr,
					"stackscope store: --fold takes 'runtime' or 'none', "
					"not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 3: /* --trace ID: the samples of one trace (label trace_id) */
			if (store_trace_filter(&f, optarg, trace_label)) {
				fprintf(stderr,
					"stackscope store: bad --trace '%s' (32 hex digits)\n",
					optarg);
				return 2;
			}
			break;
		case 1:
			if (store_filter__parse(&f, long_opts[idx].name, optarg) < 0) {
				fprintf(stderr, "stackscope store: bad --%s '%s'\n",
					long_opts[idx].name, optarg);
				return 2;
			}
			break;
		default:
			return 2;
		}
	}
	if (!strcmp(action, "query") && !out_path) {
		fprintf(stderr, "stackscope store query: -o OUT is required\n");
		return 2;
	}
	if (out_path && strcmp(out_path, "-") && !output_format__from_path(out_path)) {
		fprintf(stderr,
			"stackscope store: cannot tell the format of '%s' (use .pb.gz, "
			".folded or .svg)\n",
			out_path);
		return 2;
	}
	if (!strcmp(action, "import") && optind >= argc) {
		fprintf(stderr, "stackscope store import: no pprof file given\n");
		return 2;
	}
	so.read_only = strcmp(action, "import") != 0;
	st = store__open(&so, err_text, sizeof(err_text));
	if (!st) {
		pr_err("%s: %s\n", so.path, err_text);
		return 1;
	}
	if (!strcmp(action, "import")) {
		ret = import_files(st, argv + optind, argc - optind);
	} else if (!strcmp(action, "intervals")) {
		err = store__intervals(st, f.from_ns, f.to_ns, print_interval, NULL);
		if (err)
			pr_err("cannot read %s: %s\n", so.path, strerror(-err));
		ret = err ? 1 : 0;
	} else {
		err = store__query(st, &f, &p);
		if (err)
			pr_err("cannot query %s: %s\n", so.path,
			       err == -EBADMSG  ? "the store is corrupt"
			       : err == -ENOMEM ? "out of memory (narrow the range or filters)"
						: strerror(-err));
		else if ((err = write_profile(p, out_path, fold)))
			pr_err("cannot write %s: %s\n", out_path, output_file__strerror(err));
		else if (strcmp(out_path, "-"))
			pr_info("wrote %s: %llu samples\n", out_path,
				(unsigned long long)profile__total_samples(p));
		ret = err ? 1 : 0;
	}
	profile__free(p);
	store__close(st);
	return ret;
}
