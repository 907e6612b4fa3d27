/* `stackscope top`: a live view of where the CPUs are, with the full mixed stacks `record`
 * takes (kernel, native and language runtime frames), over a sliding window.
 *
 * The sampling session is record's (pipeline/session.c); every second its profile is taken into
 * the window (top/window.h), so the view is the last few seconds. The view is rebuilt at each
 * refresh and at each key: the function table (top/function_table.h) and, for the selected
 * function when expanded, its caller tree (top/caller_tree.h). On a terminal it is drawn in
 * the alternate screen, one write() a frame (top/screen.h, top/terminal.h); otherwise (or
 * with --batch) a text snapshot is printed each refresh.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/fd_write.h"
#include "base/log.h"
#include "cli/commands.h"
#include "cli/option_table.h"
#include "cli/option_value.h"
#include "base/privileges.h"
#include "pipeline/session.h"
#include "profile/profile.h"
#include "profile/runtime_fold.h"
#include "top/caller_tree.h"
#include "top/function_table.h"
#include "top/screen.h"
#include "top/terminal.h"
#include "top/window.h"
#include "unwind/segment_maker.h"

#define TOP_SLOT_NS 1000000000ULL /* one profile a second into the window */
#define TOP_POLL_MS 100
#define TOP_NAME_MAX 512
#define TOP_MAX_VISITED 256

struct top_options {
	struct sampling_options common; /* -F (default 99), -p, --cache-dir, -v, -h */
	double delay_s;                 /* between refreshes */
	unsigned int window_s;          /* seconds of samples shown */
	bool batch;
	unsigned long iterations; /* refreshes before exiting (0: until q or a signal) */
	unsigned long rows;       /* functions per batch snapshot */
	const char *expand;       /* callers of this function shown */
	const char *filter;
	enum top_sort sort;
	bool fold_runtime; /* --fold runtime (profile/runtime_fold.h) */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stackscope top [options]\n"
		"\n"
		"A live view of the functions on the CPUs, by self and total share of the samples of\n"
		"the last seconds, with full mixed stacks (kernel, native, Python/Java/Node...).\n"
		"Keys: q quit, up/down (j/k) select, Enter (or right) the callers of the selected\n"
		"function, left/Esc close them, p the next process (busiest first, then all), /\n"
		"filter by pid or name, s sort by self or total. Without a terminal (or with\n"
		"--batch) it prints a text snapshot every refresh.\n"
		"\n"
		"  -F, --freq HZ          samples per second per CPU (1-10000, default 99)\n"
		"  -p, --pid PID[,PID]    only these processes\n"
		"  -d, --delay SECS       between refreshes (0.2-60, default 1)\n"
		"  -w, --window SECS      seconds of samples shown (1-60, default 5)\n"
		"  -b, --batch            text snapshots, no terminal control\n"
		"  -n, --iterations N     exit after N refreshes\n"
		"  -r, --rows N           functions per batch snapshot (default 20)\n"
		"  -e, --expand FUNC      show FUNC's callers (batch: under every snapshot)\n"
		"  -f, --filter TEXT      start with this filter (a pid, or part of a process name)\n"
		"  -s, --sort self|total  the first sort (default self)\n"
		"      --fold runtime     without the interpreter's native frames between two\n"
		"                         script frames\n"
		"      --cache-dir DIR    unwind-table cache (default /var/cache/stackscope, \"\" = off)\n"
		"  -v, --verbose          debug logging\n"
		"  -h, --help             this help\n");
}

#define fail(...) return option_error("top", __VA_ARGS__)
#define TOP(f) offsetof(struct top_options, f)

static OPTION_SETTER(set_iterations)
{
	if (option_value__ulong(arg, 1, ULONG_MAX, field))
		return option_error(command, spec->error, arg);
	return 0;
}

static OPTION_SETTER(set_expand)
{
	if (!*arg || strlen(arg) >= TOP_NAME_MAX)
		return option_error(command, spec->error, TOP_NAME_MAX);
	return option_set_string(spec, arg, field, command);
}

static OPTION_SETTER(set_filter)
{
	if (strlen(arg) >= TOP_FILTER_TEXT_MAX)
		return option_error(command, spec->error, TOP_FILTER_TEXT_MAX);
	return option_set_string(spec, arg, field, command);
}

static OPTION_SETTER(set_sort)
{
	if (!strcmp(arg, "self"))
		*(enum top_sort *)field = TOP_SORT_SELF;
	else if (!strcmp(arg, "total"))
		*(enum top_sort *)field = TOP_SORT_TOTAL;
	else
		return option_error(command, spec->error, arg);
	return 0;
}

static OPTION_SETTER(set_fold)
{
	if (runtime_fold__parse(arg, field))
		return option_error(command, spec->error, arg);
	return 0;
}

/* top's own options; -F, -p, --cache-dir, -v and -h are shared (option_table.c). The error
 * lines of -e and -f take the size limit, not the value.
 */
static const struct option_spec top_option_specs[] = {
	{ "delay", 'd', true, option_set_double, TOP(delay_s), 0.2, 60,
	  "-d must be between 0.2 and 60 seconds, not '%s'" },
	{ "window", 'w', true, option_set_uint, TOP(window_s), 1, 60,
	  "-w must be between 1 and 60 seconds, not '%s'" },
	{ "batch", 'b', false, option_set_true, TOP(batch) },
	{ "iterations", 'n', true, set_iterations, TOP(iterations), 0, 0,
	  "-n must be a positive count, not '%s'" },
	{ "rows", 'r', true, option_set_ulong, TOP(rows), 1, 100000,
	  "-r must be between 1 and 100000, not '%s'" },
	{ "expand", 'e', true, set_expand, TOP(expand), 0, 0,
	  "-e needs a function name (under %d bytes)" },
	{ "filter", 'f', true, set_filter, TOP(filter), 0, 0, "-f: a filter is under %d bytes" },
	{ "sort", 's', true, set_sort, TOP(sort), 0, 0, "-s is self or total, not '%s'" },
	{ "fold", 0, true, set_fold, TOP(fold_runtime), 0, 0,
	  "--fold takes 'runtime' or 'none', not '%s'" },
	{ 0 },
};

static int parse_options(int argc, char **argv, struct top_options *o)
{
	int err;

	memset(o, 0, sizeof(*o));
	sampling_options__init(&o->common, 99);
	o->delay_s = 1;
	o->window_s = 5;
	o->rows = 20;
	err = option_table__parse("top", OPTION_TOP, &o->common, top_option_specs, o, false, argc,
				  argv);
	if (err)
		return err < 0 ? err : 0;
	if (optind < argc)
		fail("unexpected argument '%s' (see --help)", argv[optind]);
	return 0;
}

static volatile sig_atomic_t stop_requested, resized;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		resized = 1;
	else
		stop_requested = 1;
}

/* CPU time of the loop's recurring work (this thread's), the last TOP_TIMINGS_CAP of them. */
#define TOP_TIMINGS_CAP 4096

struct top_timings {
	uint64_t ns[TOP_TIMINGS_CAP];
	size_t cnt; /* ever added */
};

static void timings__add(struct top_timings *t, uint64_t ns)
{
	t->ns[t->cnt++ % TOP_TIMINGS_CAP] = ns;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median, in ms (sorts the kept values). */
static double timings__median_ms(struct top_timings *t)
{
	size_t n = t->cnt < TOP_TIMINGS_CAP ? t->cnt : TOP_TIMINGS_CAP;

	if (!n)
		return 0;
	qsort(t->ns, n, sizeof(t->ns[0]), by_u64);
	return (double)t->ns[(n - 1) / 2] / 1e6;
}

/* Everything the loop keeps between frames. */
struct top_run {
	struct segment_maker *maker; /* the entry pool's segments (unwind/segment_maker.h) */
	const struct top_options *opts;
	struct session *session;
	struct top_window *window;
	struct function_table table;
	struct caller_tree callers;
	struct screen_buf out;
	struct top_view view;
	struct top_filter filter;
	enum top_sort sort;
	bool interactive;
	bool typing; /* the filter prompt is open */
	char typed[TOP_FILTER_TEXT_MAX];
	char selected_name[TOP_NAME_MAX];  /* the selection follows its function across rebuilds */
	char selected_where[TOP_NAME_MAX]; /* ... and where it runs ("": anywhere, -e) */
	uint32_t visited[TOP_MAX_VISITED]; /* pids p went through since the filter was all */
	size_t visited_cnt;
	struct top_timings frame_cpu, take_cpu; /* rebuild + draw; taking a profile */
	unsigned long refreshes;
	unsigned int cpu_cnt;
};

static void remember_selection(struct top_run *r)
{
	if (r->view.selected < r->table.fn_cnt) {
		snprintf(r->selected_name, sizeof(r->selected_name), "%s",
			 r->table.fns[r->view.selected].name);
		snprintf(r->selected_where, sizeof(r->selected_where), "%s",
			 r->table.fns[r->view.selected].where);
	}
}

/* Rebuilds the model from the window: functions, the selection by name, and its callers. */
static int rebuild(struct top_run *r)
{
	const char *expand = NULL, *where = NULL;
	long idx;
	int err;

	err = function_table__build(&r->table, r->window, &r->filter, r->sort);
	if (err)
		return err;
	if (r->selected_name[0]) {
		idx = function_table__find(&r->table, r->selected_name,
					   r->selected_where[0] ? r->selected_where : NULL);
		if (idx >= 0)
			r->view.selected = (size_t)idx;
	}
	if (r->interactive) {
		if (r->view.expanded && r->view.selected < r->table.fn_cnt) {
			expand = r->table.fns[r->view.selected].name;
			where = r->table.fns[r->view.selected].where;
		}
	} else {
		expand = r->opts->expand;
	}
	if (!expand) {
		caller_tree__free(&r->callers);
		return 0;
	}
	return caller_tree__build(&r->callers, r->window, &r->filter, expand, where,
				  TOP_CALLER_DEPTH_MAX);
}

static void describe_filter(const struct top_run *r, char *buf, size_t cap)
{
	size_t i;

	if (r->filter.pid) {
		const char *comm = "?";

		for (i = 0; i < r->table.proc_cnt; i++)
			if (r->table.procs[i].pid == r->filter.pid && r->table.procs[i].comm)
				comm = r->table.procs[i].comm;
		snprintf(buf, cap, "pid %u (%s)", r->filter.pid, comm);
	} else if (r->filter.text[0]) {
		snprintf(buf, cap, "'%s'", r->filter.text);
	} else {
		snprintf(buf, cap, "all");
	}
}

static void make_title(const struct top_run *r, char *buf, size_t cap)
{
	char filter[128], when[32] = "";
	time_t now = time(NULL);
	struct tm tm;

	describe_filter(r, filter, sizeof(filter));
	if (!r->interactive && gmtime_r(&now, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC ", &tm);
	snprintf(buf, cap,
		 "stackscope top %s- %llu samples in %.1f s at %u Hz on %u CPUs, %zu process%s | "
		 "filter: %s (%llu samples) | sort: %s",
		 when, (unsigned long long)r->table.all_samples, top_window__seconds(r->window),
		 r->opts->common.freq_hz, r->cpu_cnt, r->table.proc_cnt,
		 r->table.proc_cnt == 1 ? "" : "es", filter, (unsigned long long)r->table.samples,
		 r->sort == TOP_SORT_TOTAL ? "total" : "self");
}

static int draw(struct top_run *r)
{
	char title[512], keys[128];
	int err;

	make_title(r, title, sizeof(title));
	if (!r->interactive) {
		screen_buf__reset(&r->out);
		err = screen__text(&r->out, &r->table, r->opts->expand ? &r->callers : NULL, title,
				   r->opts->rows);
		if (!err)
			err = fd__write_all(STDOUT_FILENO, r->out.s, r->out.len);
		if (!err)
			err = fd__write_all(STDOUT_FILENO, "\n", 1);
		return err;
	}
	if (r->typing)
		snprintf(keys, sizeof(keys),
			 "filter (pid or part of a name, Enter: apply, Esc: "
			 "cancel): %s_",
			 r->typed);
	else
		snprintf(keys, sizeof(keys),
			 "q quit  up/down select  Enter callers  p process  "
			 "/ filter  s sort");
	err = screen__frame(&r->out, &r->view, &r->table, &r->callers, title, keys);
	if (!err)
		err = fd__write_all(STDOUT_FILENO, r->out.s, r->out.len);
	return err;
}

/* p: the busiest process of the window not visited since the filter was last "all", then all
 * of them again (an order by samples alone would reorder under the user's fingers).
 */
static void cycle_process(struct top_run *r)
{
	size_t i, k;

	r->filter.text[0] = 0;
	if (!r->filter.pid || r->visited_cnt == TOP_MAX_VISITED)
		r->visited_cnt = 0;
	for (i = 0; i < r->table.proc_cnt; i++) {
		for (k = 0; k < r->visited_cnt; k++)
			if (r->visited[k] == r->table.procs[i].pid)
				break;
		if (k == r->visited_cnt)
			break;
	}
	if (i == r->table.proc_cnt) {
		r->filter.pid = 0;
		r->visited_cnt = 0;
		return;
	}
	r->filter.pid = r->table.procs[i].pid;
	r->visited[r->visited_cnt++] = r->filter.pid;
}

static void move_selection(struct top_run *r, long delta)
{
	long sel = (long)r->view.selected + delta;

	if (sel >= (long)r->table.fn_cnt)
		sel = (long)r->table.fn_cnt - 1;
	if (sel < 0)
		sel = 0;
	r->view.selected = (size_t)sel;
	remember_selection(r);
}

/* One key; *quit set by q. Returns whether the view changed. */
static bool handle_key(struct top_run *r, int key, bool *quit)
{
	long page = r->view.rows > SCREEN_HEADER_ROWS + 1 ? r->view.rows - SCREEN_HEADER_ROWS - 1
							  : 1;
	size_t len = strlen(r->typed);

	if (r->typing) {
		if (key == KEY_ENTER) {
			r->typing = false;
			r->filter.pid = 0;
			memcpy(r->filter.text, r->typed, sizeof(r->filter.text));
		} else if (key == KEY_ESC) {
			r->typing = false;
		} else if ((key == KEY_BACKSPACE || key == '\b') && len) {
			r->typed[len - 1] = 0;
		} else if (key >= 0x20 && key < 0x7f && len + 1 < sizeof(r->typed)) {
			r->typed[len] = (char)key;
			r->typed[len + 1] = 0;
		}
		return true;
	}
	switch (key) {
	case 'q':
	case 'Q':
		*quit = true;
		return false;
	case KEY_UP:
	case 'k':
		move_selection(r, -1);
		break;
	case KEY_DOWN:
	case 'j':
		move_selection(r, 1);
		break;
	case KEY_PAGE_UP:
		move_selection(r, -page);
		break;
	case KEY_PAGE_DOWN:
		move_selection(r, page);
		break;
	case KEY_HOME:
		move_selection(r, -(long)r->table.fn_cnt);
		break;
	case KEY_END:
		move_selection(r, (long)r->table.fn_cnt);
		break;
	case KEY_ENTER:
	case ' ':
		remember_selection(r);
		r->view.expanded = !r->view.expanded;
		break;
	case KEY_RIGHT:
		remember_selection(r);
		r->view.expanded = true;
		break;
	case KEY_LEFT:
	case KEY_ESC:
		r->view.expanded = false;
		break;
	case 'p':
		cycle_process(r);
		break;
	case '/':
		r->typing = true;
		memcpy(r->typed, r->filter.text, sizeof(r->typed));
		break;
	case 's':
		r->sort = r->sort == TOP_SORT_SELF ? TOP_SORT_TOTAL : TOP_SORT_SELF;
		break;
	default:
		return false;
	}
	return true;
}

static uint64_t ns_of(double s)
{
	return (uint64_t)(s * 1e9);
}

static int loop(struct top_run *r)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	uint64_t next_slot = now + TOP_SLOT_NS, next_refresh = now + ns_of(r->opts->delay_s);
	bool quit = false, dirty = r->interactive;
	int err = 0;

	while (!stop_requested && !quit) {
		uint64_t next = next_slot < next_refresh ? next_slot : next_refresh;
		int wait_ms = now >= next ? 0 : (int)((next - now) / 1000000) + 1;

		if (wait_ms > TOP_POLL_MS)
			wait_ms = TOP_POLL_MS;
		if (dirty)
			wait_ms = 0;
		if (r->interactive) {
			struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };

			if (poll(&pfd, 1, wait_ms) > 0 && (pfd.revents & (POLLHUP | POLLERR)))
				break; /* the terminal is gone */
			err = session__poll(r->session, 0);
		} else {
			err = session__poll(r->session, wait_ms);
		}
		if (err)
			break;
		if (r->interactive) {
			int key;

			while ((key = terminal__read_key()) != KEY_NONE && key >= 0 && !quit)
				dirty |= handle_key(r, key, &quit);
			if (resized || terminal__resumed()) {
				resized = 0;
				terminal__size(&r->view.rows, &r->view.cols);
				dirty = true;
			}
		}
		now = clock_ns(CLOCK_MONOTONIC);
		if (now >= next_slot) {
			uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			struct profile *p = session__take_profile(r->session);

			if (!p) {
				err = -ENOMEM;
				break;
			}
			if (r->opts->fold_runtime) {
				struct profile *folded = runtime_fold__copy(p);

				if (folded) { /* else shown unfolded this second */
					profile__free(p);
					p = folded;
				}
			}
			top_window__push(r->window, p);
			timings__add(&r->take_cpu, clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu);
			next_slot += TOP_SLOT_NS;
			if (next_slot <= now) /* a stall: no catching up in bursts */
				next_slot = now + TOP_SLOT_NS;
		}
		if (now >= next_refresh) {
			next_refresh += ns_of(r->opts->delay_s);
			if (next_refresh <= now)
				next_refresh = now + ns_of(r->opts->delay_s);
			r->refreshes++;
			dirty = true;
		}
		if (dirty && !quit) {
			uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);

			dirty = false;
			err = rebuild(r);
			if (!err)
				err = draw(r);
			if (err)
				break;
			timings__add(&r->frame_cpu, clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu);
		}
		if (r->opts->iterations && r->refreshes >= r->opts->iterations)
			break;
	}
	return err;
}

static int run(struct top_run *r)
{
	const struct top_options *o = r->opts;
	struct session_opts so = {
		.freq_hz = o->common.freq_hz,
		.filter = o->common.pid_cnt ? FILTER_PIDS : FILTER_OFF,
		.pids = o->common.pids,
		.pid_cnt = o->common.pid_cnt,
		.symbolize = true,
		.cache_dir = o->common.cache_dir,
		.cache_max_bytes = SESSION_DEFAULT_CACHE_BYTES,
		/* one profile a second: ELF symbols and runtime frames, no DWARF line pass */
		.symbolize_lines = false,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct session_stats st;
	size_t i;
	int err;

	for (i = 0; i < o->common.pid_cnt; i++) {
		if (kill(o->common.pids[i], 0) && errno == ESRCH) {
			pr_err("no process with pid %d\n", (int)o->common.pids[i]);
			return -ESRCH;
		}
	}
	r->window = top_window__new(o->window_s);
	if (!r->window)
		return -errno;
	/* before the session's heap grows: the maker's fork shares what we have now */
	r->maker = segment_maker__start();
	so.segment_maker = r->maker;
	r->session = session__new(&so);
	if (!r->session)
		return -errno;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	err = session__start(r->session);
	if (err)
		return err;
	privileges__drop(PRIVILEGES_LOG_DEBUG);
	session__stats(r->session, &st);
	r->cpu_cnt = st.cpu_cnt;
	if (r->interactive) {
		if (terminal__size(&r->view.rows, &r->view.cols)) {
			r->view.rows = 24;
			r->view.cols = 80;
		}
		err = terminal__enter(STDIN_FILENO, STDOUT_FILENO);
		if (err) {
			pr_err("cannot take the terminal: %s\n", strerror(-err));
			return err;
		}
		/* warnings would be drawn over the view (and erased at the next frame) */
		if (!o->common.verbose && isatty(STDERR_FILENO))
			log__set_level(LOG_ERROR);
	}
	/* what was sampled during start-up (our own table builds, mostly) is not the window's */
	profile__free(session__take_profile(r->session));
	err = loop(r);
	terminal__leave();
	if (err)
		pr_err("stackscope top: %s\n", strerror(-err));
	else if (!r->interactive)
		fprintf(stderr,
			"top: %lu refreshes, %zu frames at %.2f ms CPU each (median: functions, "
			"callers, text), %zu profiles taken at %.2f ms CPU each (median)\n",
			r->refreshes, r->frame_cpu.cnt, timings__median_ms(&r->frame_cpu),
			r->take_cpu.cnt, timings__median_ms(&r->take_cpu));
	return err;
}

int cmd_top(int argc, char **argv)
{
	struct top_options opts;
	struct top_run r = { .opts = &opts };
	int err;

	if (parse_options(argc, argv, &opts))
		return 2; /* one line said why */
	if (sampling_options__begin(&opts.common, usage, LOG_WARN, true))
		return 0;
	r.interactive = !opts.batch && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	r.sort = opts.sort;
	if (opts.filter)
		snprintf(r.filter.text, sizeof(r.filter.text), "%s", opts.filter);
	if (opts.expand) {
		snprintf(r.selected_name, sizeof(r.selected_name), "%s", opts.expand);
		r.view.expanded = true;
	}
	err = run(&r);
	function_table__free(&r.table);
	caller_tree__free(&r.callers);
	screen_buf__free(&r.out);
	session__free(r.session);
	segment_maker__stop(r.maker);
	top_window__free(r.window);
	return err ? 1 : 0;
}
