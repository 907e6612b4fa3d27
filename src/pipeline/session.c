/* The sampling session shared by record and agent. See session.h. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file_map.h"
#include "base/log.h"
#include "base/safe_open.h"
#include "pipeline/alloc_carry.h"
#include "pipeline/alloc_live.h"
#include "pipeline/process_context_table.h"
#include "pipeline/session.h"
#include "formats/elf_file.h"
#include "interp/interp.h"
#include "interp/otel/obi_map.h"
#include "proc/executable.h"
#include "proc/known_files.h"
#include "proc/process.h"
#include "proc/selection.h"
#include "profile/profile.h"
#include "pipeline/trace_handler.h"
#include "formats/debuginfo.h"
#include "sampler/mem_alloc.h"
#include "sampler/off_cpu_join.h"
#include "sampler/sample_wire.h"
#include "sampler/sampler.h"
#include "formats/kallsyms.h"
#include "unwind/deferred.h"
#include "unwind/table_cache.h"
#include "unwind/table_queue.h"
#include "unwind/unwind_maps.h"

/* every runtime of bpf/abi.h's INTERP_RUNTIMES has its line of stats (FRAME_KIND_NATIVE has none) */
_Static_assert(FRAME_KIND_CNT - 1 <= SESSION_RUNTIMES_MAX, "session_stats.runtimes too small");

/* Unwind tables of files no live process maps are unloaded after this long. Long: a build
 * runs the same compilers every few seconds, and while the table stays, eBPF enters their
 * mappings at exec itself (known_files) and no /proc read or cache load is needed; a full
 * entry pool evicts the least recently sampled tables anyway (table_queue.h).
 */
#define TABLE_IDLE_GRACE_NS (300 * 1000000000ULL)
/* Time per poll the sampling loop may spend building or loading queued tables itself (giant
 * files are built by the queue's worker meanwhile).
 */
#define TABLE_BUDGET_NS (30 * 1000000ULL)
/* Time at start for the tables of the files most processes map, before sampling starts. */
#define TABLE_PRIME_NS (2 * 1000000000ULL)
/* The poll timeout while files that samples asked for wait for their tables. */
#define TABLE_URGENT_POLL_MS 5
/* While an interpreter process settles (interp_registry__settling): its runtime state is
 * checked this often (a JVM's code cache, an interpreter initialised after the attach).
 */
#define INTERP_SETTLE_POLL_MS 10
/* Exited processes are forgotten after this long: every sample of theirs has been handled and
 * the agent has exported their interval (resource attributes come from the tracker).
 */
#define PROCESS_GRACE_NS (60 * 1000000000ULL)
/* Housekeeping against those graces (unused tables, exited processes, executables, off-CPU
 * stacks) runs this often: each is a walk over every process or executable, a twentieth of
 * the agent's userspace CPU under churn when done every second; the graces are minutes.
 */
#define COLLECT_INTERVAL_NS (5 * 1000000000ULL)
/* An off-CPU stack no stay claimed this long is dropped (counted): the thread exited after a
 * short stay, or has been off CPU for longer (its stay, when it ends, is counted unmatched).
 */
#define OFF_CPU_PENDING_MAX_NS (600 * 1000000000ULL)

struct session {
	struct session_opts opts;
	struct sampler *sampler;
	struct exe_registry *reg;
	struct process_table *pt;
	struct kallsyms *ks;
	struct unwind_maps *um;
	struct table_queue *tq; /* NULL: tables built at once (no worker thread) */
	struct table_cache *cache;
	struct debuginfo *di;
	struct profile *prof;
	struct trace_handler *th;
	struct interp_registry *interp; /* language runtimes' frames */
	struct pctx_table *pctx;        /* OTel process contexts */
	struct deferred *deferred;      /* samples waiting for their tables (NULL: none) */
	struct off_cpu_join *off_cpu;   /* off-CPU stacks waiting for their stay (NULL: none) */
	struct alloc_live *alloc_live;  /* --alloc: sampled allocations not freed (else NULL) */
	struct selection *sel;          /* which processes, which intervals (proc/selection.h) */
	struct obi_map *obi;            /* OBI's traces_ctx_v1 followed through its pin */
	int64_t mono_to_wall_ns;
	pid_t roots[SS_MAX_FILTER_PIDS]; /* filtered pids to scan at start */
	size_t root_cnt;
	uint64_t exec_events, exit_events, mmap_events;
	uint64_t last_collect_ns;
	uint64_t file_pages; /* our file-backed resident pages after the last sweep (statm) */
	int fatal;
	struct sample_record sample; /* the record being handled, expanded (sampler/sample_wire.h) */
};

/* Our resident file-backed (and shared) pages: the third field of /proc/self/statm, which
 * the kernel keeps per process (its per-CPU counts folded in lazily: a few hundred KiB of
 * lag); 0 when unreadable.
 */
static uint64_t file_resident_pages(void)
{
	char buf[128];
	unsigned long long size, resident, shared;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) == 3 ? shared : 0;
}

/* The executables' file pages are given back (exe_registry__drop_pages) only when our
 * file-backed resident set grew by FILE_PAGES_SWEEP_SZ since the last sweep. Every 5 s, a
 * madvise of every executable's whole image (~80 calls on a quiet box, each walking the page
 * tables of its range) gave back ~128 KiB of symbol names that the next interval's samples
 * and export read again (faulted back within seconds); a statm read tells when there is more
 * (a big binary's tables or symbols read: MiBs).
 */
#define FILE_PAGES_SWEEP_SZ (1u << 20)

static void drop_file_pages(struct session *s)
{
	uint64_t now_pages = file_resident_pages();
	uint64_t slack = FILE_PAGES_SWEEP_SZ / (uint64_t)sysconf(_SC_PAGESIZE);

	if (now_pages && now_pages < s->file_pages + slack) {
		if (now_pages < s->file_pages)
			s->file_pages = now_pages; /* a file unmapped: the level to grow from */
		return;
	}
	exe_registry__drop_pages(s->reg);
	s->file_pages = file_resident_pages();
}

uint64_t clock_ns(int clock_id)
{
	struct timespec ts;

	clock_gettime((clockid_t)clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A thread's stay off CPU ended: its stack becomes an off-CPU sample. */
static int off_cpu_stay(struct session *s, const void *data, size_t size, uint64_t now)
{
	struct sample_record *rec;
	size_t rec_size = 0;
	int err;

	rec = off_cpu_join__end(s->off_cpu, data, size, &rec_size);
	if (!rec) {
		if (errno == ENOMEM)
			s->fatal = -ENOMEM;
		return errno == ENOMEM ? -ENOMEM : 0;
	}
	err = trace_handler__sample(s->th, rec, rec_size, now);
	free(rec);
	if (err == -ENOMEM)
		s->fatal = -ENOMEM;
	return err == -ENOMEM ? -ENOMEM : 0;
}

static bool is_root(const struct session *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->root_cnt; i++)
		if (s->roots[i] == pid)
			return true;
	return false;
}

static int on_record(const void *data, size_t size, void *ctx)
{
	struct session *s = ctx;
	const struct record_header *h = data;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (size < sizeof(*h))
		return 0;
	switch (h->kind) {
	case RECORD_STACK:
		if (s->deferred)
			deferred__stack_copy(s->deferred, data, size);
		break;
	case RECORD_OFF_CPU:
		if (s->off_cpu && off_cpu_stay(s, data, size, now) == -ENOMEM)
			return -ENOMEM;
		break;
	case RECORD_SAMPLE:
		if (sample_wire__expand(data, size, &s->sample, &size)) {
			trace_handler__bad_record(s->th);
			break;
		}
		if (!selection__sample(s->sel, (pid_t)h->pid, s->sample.comm))
			break; /* walked before its process was classified: not selected */
		if (s->off_cpu && s->sample.off_cpu) {
			if (off_cpu_join__stack(s->off_cpu, &s->sample, size) == -ENOMEM) {
				s->fatal = -ENOMEM;
				return -ENOMEM;
			}
			break;
		}
		if (s->deferred && s->sample.deferred) {
			if (deferred__sample(s->deferred, &s->sample, size, now) == -ENOMEM) {
				s->fatal = -ENOMEM;
				return -ENOMEM;
			}
			break;
		}
		if (trace_handler__sample(s->th, &s->sample, size, now) == -ENOMEM) {
			s->fatal = -ENOMEM;
			return -ENOMEM;
		}
		if (s->alloc_live && s->sample.mem_kind == MEM_SAMPLED_ALLOC &&
		    alloc_live__sampled(s->alloc_live, &s->sample,
					trace_handler__last_sample(s->th)) == -ENOMEM) {
			s->fatal = -ENOMEM;
			return -ENOMEM;
		}
		break;
	case RECORD_FREE:
		if (s->alloc_live && alloc_live__freed(s->alloc_live, s->prof, data, size,
						       s->mono_to_wall_ns) == -ENOMEM) {
			s->fatal = -ENOMEM;
			return -ENOMEM;
		}
		break;
	case RECORD_FORK:
		sampler__alloc_forked(s->sampler, (pid_t)h->pid, (pid_t)h->tid, h->time_ns);
		break;
	case RECORD_EXEC:
		s->exec_events++;
		sampler__alloc_mapped(s->sampler, (pid_t)h->pid);
		if (s->alloc_live && !s->opts.alloc_carry) /* the old image's heap is gone */
			alloc_carry__process_ended(s->alloc_live, s->prof, h->pid,
						   sampler__alloc_live_fd(s->sampler));
		interp_registry__process_exec(s->interp, (pid_t)h->pid);
		selection__exec(s->sel, (pid_t)h->pid,
				size >= sizeof(struct exec_record)
					? ((const struct exec_record *)data)->comm
					: NULL);
		pctx_table__exec(s->pctx, (pid_t)h->pid, now);
		if (size >= sizeof(struct exec_record)) {
			const struct exec_record *er = data;
			struct exec_info info = { .cgroup_id = er->cgroup_id,
						  .exe_file_id = er->exe_file_id };

			memcpy(info.comm, er->comm, sizeof(info.comm) - 1);
			process_table__exec(s->pt, (pid_t)h->pid, &info, now);
		} else {
			process_table__exec(s->pt, (pid_t)h->pid, NULL, now);
		}
		break;
	case RECORD_MMAP:
		s->mmap_events++;
		sampler__alloc_mapped(s->sampler, (pid_t)h->pid);
		process_table__mapped(s->pt, (pid_t)h->pid, h->time_ns, now);
		break;
	case RECORD_EXIT:
		s->exit_events++;
		sampler__alloc_exited(s->sampler, (pid_t)h->pid);
		/* What a process named (the command, -p) holds at its exit is the leak view;
		 * another process that exits while the recording goes on holds nothing at its end.
		 */
		if (s->alloc_live && !s->opts.alloc_carry && !is_root(s, (pid_t)h->pid))
			alloc_carry__process_ended(s->alloc_live, s->prof, h->pid,
						   sampler__alloc_live_fd(s->sampler));
		process_table__exit(s->pt, (pid_t)h->pid, now);
		selection__exit(s->sel, (pid_t)h->pid);
		break;
	default:
		break;
	}
	return 0;
}

static void load_executable(struct executable *exe, void *ctx)
{
	struct session *s = ctx;
	bool runtime;
	int err;

	/* Queued: built in the order samples ask for it (session__poll()). */
	if (s->um && (!s->tq || table_queue__add(s->tq, exe)))
		unwind_maps__load(s->um, exe);
	runtime = interp_registry__file_loaded(s->interp, exe);
	err = known_files__add(sampler__known_files_fd(s->sampler), exe,
			       runtime ? KNOWN_FILE_ATTACH : 0);
	if (err)
		pr_debug("%s: not entered into known_files: %s\n", exe->path, strerror(-err));
	if (s->deferred)
		deferred__changed(s->deferred);
	/* What identification and detection read stays in the page cache, not in our RSS: a
	 * queued file may wait for its table (and symbols) for ever.
	 */
	elf_file__drop_pages(exe->elf);
}

static void unload_executable(struct executable *exe, void *ctx)
{
	struct session *s = ctx;

	if (s->tq)
		table_queue__remove(s->tq, exe);
	known_files__remove(sampler__known_files_fd(s->sampler), exe);
	if (s->um)
		unwind_maps__unload(s->um, exe);
	interp_registry__file_unloaded(s->interp, exe);
}

static void forget_executable(struct executable *exe, void *ctx)
{
	struct session *s = ctx;

	trace_handler__forget_file(s->th, exe->file_id);
	unwind_maps__forget(s->um, exe->file_id);
}

static void process_scanned(const struct process *p, uint64_t now_ns, void *ctx)
{
	struct session *s = ctx;

	if (s->deferred)
		deferred__changed(s->deferred);
	interp_registry__process_scanned(s->interp, p, now_ns);
	pctx_table__scanned(s->pctx, p, now_ns);
}

/* A deferred sample, completed or given up on, joins the profile like any other. */
static int emit_deferred(const struct sample_record *rec, size_t size, uint64_t now_ns, void *ctx)
{
	struct session *s = ctx;
	int err = trace_handler__sample(s->th, rec, size, now_ns);

	return err == -ENOMEM ? err : 0;
}

/* deferred_hold_fn: a sample's runtime frames read into their runtimes' caches while its
 * process still runs (they are named when its replay is done).
 */
static void hold_deferred(const struct sample_record *rec, void *ctx)
{
	struct session *s = ctx;
	uint32_t i;

	if (!s->interp || !s->opts.symbolize)
		return;
	for (i = 0; i < rec->user_frame_cnt && i < SS_MAX_USER_FRAMES; i++)
		if (rec->user[i].kind != FRAME_KIND_NATIVE)
			interp_registry__prefetch(s->interp, (pid_t)rec->hdr.pid,
						  (pid_t)rec->map_pid, &rec->user[i]);
}

static void process_exited(const struct process *p, void *ctx)
{
	struct session *s = ctx;

	if (s->deferred) /* its mappings are final: samples waiting for a scan go on */
		deferred__changed(s->deferred);
	interp_registry__process_exited(s->interp, p->pid, clock_ns(CLOCK_MONOTONIC));
	pctx_table__exited(s->pctx, p->pid, clock_ns(CLOCK_MONOTONIC));
}

/* The label service.name of a sample of pid (trace_handler_opts.service_of). */
static const char *sample_service(void *ctx, pid_t pid, const char **refused)
{
	struct session *s = ctx;

	*refused = NULL;
	return s->pctx ? pctx_table__service(s->pctx, pid, refused) : NULL;
}

/* The thread context's key names of pid (trace_handler_opts.key_map_of). */
static const char *const *sample_key_map(void *ctx, pid_t pid, size_t *cnt)
{
	struct session *s = ctx;

	*cnt = 0;
	return s->pctx ? pctx_table__key_map(s->pctx, pid, cnt) : NULL;
}

static struct profile *new_profile(struct session *s)
{
	struct profile_opts po = {
		.period_ns = 1000000000ULL / s->opts.freq_hz,
		.start_time_ns = clock_ns(CLOCK_REALTIME),
		.timestamps_cap = s->opts.timestamps_cap,
		.off_cpu = s->opts.off_cpu,
		.no_cpu = s->opts.no_cpu,
		.mem_growth = s->opts.faults,
		.mem_alloc = s->opts.alloc,
	};

	return profile__new(&po);
}

struct session *session__new(const struct session_opts *opts)
{
	struct sampler_opts so = {
		.freq_hz = opts->freq_hz,
		.filter = opts->filter,
		.unwind_entry_cap = opts->unwind_entry_cap,
		.map_scale = opts->map_scale,
		.off_cpu = opts->off_cpu,
		.no_cpu = opts->no_cpu,
		.per_task = opts->per_task,
		.off_cpu_min_ns = opts->off_cpu_min_ns,
		.off_cpu_rate = opts->off_cpu_rate,
		.faults = opts->faults,
		.fault_period = opts->fault_period,
		.alloc = opts->alloc,
		.alloc_rate = opts->alloc_rate,
		.alloc_pids = opts->filter == FILTER_PIDS ? opts->pids : NULL,
		.alloc_pid_cnt = opts->filter == FILTER_PIDS ? opts->pid_cnt : 0,
		.alloc_command = opts->alloc_command,
	};
	struct exe_registry_ops ops = {
		.load = load_executable,
		.unload = unload_executable,
		.forget = forget_executable,
	};
	struct process_table_ops pops = { .scanned = process_scanned, .exited = process_exited };
	struct trace_handler_opts to = { .symbolize = opts->symbolize,
					 .service_of = sample_service,
					 .key_map_of = sample_key_map };
	struct session *s = calloc(1, sizeof(*s));
	size_t i;
	int err = ENOMEM;

	if (!s) {
		selection_rules__free(opts->select);
		return NULL;
	}
	/* Unwind tables are built in blocks of megabytes (by two threads: table_queue.h); with a
	 * fixed mmap threshold each such block goes back to the kernel when freed, instead of
	 * raising glibc's dynamic threshold and staying in an arena as peak RSS.
	 */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	s->opts = *opts;
	ops.ctx = s;
	to.published_ctx = s;
	s->sampler = sampler__new(&so, on_record, s);
	if (!s->sampler) {
		err = errno;
		goto fail;
	}
	for (i = 0; i < opts->pid_cnt; i++)
		session__filter_pid(s, opts->pids[i]);
	s->sel = selection__new(sampler__sel_procs_fd(s->sampler),
				sampler__sel_cgroups_fd(s->sampler),
				sampler__selection_state(s->sampler), opts->host_root);
	if (!s->sel)
		goto fail;
	s->opts.select = NULL; /* owned by s->sel from here */
	if (opts->select && selection__set_rules(s->sel, opts->select))
		goto fail;
	s->ks = kallsyms__load(KALLSYMS_PATH);
	if (!s->ks)
		pr_warn("kernel symbols unavailable (%s): kernel frames stay addresses\n",
			strerror(errno));
	s->um = unwind_maps__new(sampler__files_fd(s->sampler),
				 sampler__unwind_pages_fd(s->sampler),
				 sampler__unwind_segments_fd(s->sampler),
				 sampler__unwind_rules_fd(s->sampler),
				 sampler__unwind_entry_cap(s->sampler));
	if (!s->um)
		pr_warn("native unwind tables disabled (%s): frame pointers only\n",
			strerror(errno));
	else
		unwind_maps__set_segment_maker(s->um, opts->segment_maker);
	if (s->um) {
		s->tq = table_queue__new(s->um);
		if (s->tq)
			table_queue__set_sampled_only(s->tq, opts->sampled_tables_only);
		else
			pr_warn("no table-build thread (%s): tables are built at once\n",
				strerror(errno));
	}
	if (s->um && opts->cache_dir && opts->cache_dir[0]) {
		if (mkdir(opts->cache_dir, 0700) && errno != EEXIST)
			pr_debug("%s: %s\n", opts->cache_dir, strerror(errno));
		s->cache = table_cache__new(opts->cache_dir, opts->cache_max_bytes
								     ? opts->cache_max_bytes
								     : SESSION_DEFAULT_CACHE_BYTES);
		if (s->cache)
			unwind_maps__set_cache(s->um, s->cache);
		else
			pr_warn("unwind-table cache %s unusable (%s): tables are rebuilt at every "
				"start\n",
				opts->cache_dir, strerror(errno));
	}
	s->pctx = pctx_table__new();
	if (!s->pctx)
		goto fail;
	s->interp = interp_registry__new(sampler__interp_files_fd(s->sampler),
					 sampler__interp_procs_fd(s->sampler));
	if (!s->interp)
		goto fail;
	interp_registry__set_code_map(s->interp, sampler__interp_code_fd(s->sampler));
	interp_registry__set_bits_maps(s->interp, sampler__interp_file_bits_fd(s->sampler),
				       sampler__interp_proc_bits_fd(s->sampler));
	s->obi = obi_map__new(opts->obi_map, sampler__obi_maps_fd(s->sampler),
			      clock_ns(CLOCK_MONOTONIC));
	if (!s->obi)
		goto fail;
	{
		/* Local debug files always (CFI of files built without unwind tables); the
		 * network only when source lines are wanted.
		 */
		struct debuginfo_opts dopts = {
			.debug_dirs = opts->debug_dirs,
			.debug_dir_cnt = opts->debug_dir_cnt,
			.debuginfod = opts->symbolize && opts->symbolize_lines &&
				      getenv("DEBUGINFOD_URLS") != NULL,
		};

		s->di = debuginfo__new(&dopts);
		if (!s->di)
			pr_warn("debug-info lookup unavailable (%s): no source lines\n",
				strerror(errno));
		else if (s->um)
			unwind_maps__set_debuginfo(s->um, s->di);
	}
	s->reg = exe_registry__new(&ops);
	if (!s->reg)
		goto fail;
	s->pt = process_table__new(s->reg, sampler__mappings_fd(s->sampler),
				   sampler__new_mappings_fd(s->sampler));
	s->prof = new_profile(s);
	if (!s->pt || !s->prof)
		goto fail;
	process_table__set_epoch_fd(s->pt, sampler__maps_epoch_fd(s->sampler));
	pops.ctx = s;
	process_table__set_ops(s->pt, &pops);
	to.mono_to_wall_ns = (int64_t)(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC));
	to.alloc_rate = opts->alloc_rate ? opts->alloc_rate : MEM_ALLOC_DEFAULT_RATE;
	s->mono_to_wall_ns = to.mono_to_wall_ns;
	s->th = trace_handler__new(s->prof, s->reg, s->pt, s->ks, &to);
	if (!s->th)
		goto fail;
	trace_handler__set_interp(s->th, s->interp);
	trace_handler__set_unwind_maps(s->th, s->um);
	if (s->um) {
		struct deferred_maps dm = {
			.pages_fd = sampler__unwind_pages_fd(s->sampler),
			.rules_fd = sampler__unwind_rules_fd(s->sampler),
			.um = s->um,
		};

		s->deferred = deferred__new(&dm, s->pt, s->reg, emit_deferred, s);
		if (!s->deferred)
			pr_warn("deferred unwinding disabled (%s)\n", strerror(errno));
		else
			deferred__set_hold(s->deferred, hold_deferred);
	}
	if (opts->alloc) {
		s->alloc_live = alloc_live__new();
		if (!s->alloc_live)
			goto fail;
	}
	if (opts->off_cpu) {
		s->off_cpu = off_cpu_join__new();
		if (!s->off_cpu)
			goto fail;
	}
	return s;
fail:
	if (!s->sel) /* else it has them */
		selection_rules__free(s->opts.select);
	session__free(s);
	errno = err;
	return NULL;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	/* Stop the perf events first: nothing may call back into a half-freed session. */
	sampler__free(s->sampler);
	selection__free(s->sel);
	deferred__free(s->deferred);
	off_cpu_join__free(s->off_cpu);
	alloc_live__free(s->alloc_live);
	trace_handler__free(s->th);
	profile__free(s->prof);
	process_table__free(s->pt);
	table_queue__free(s->tq); /* joins the worker before the executables go */
	exe_registry__free(s->reg);
	interp_registry__free(s->interp);
	pctx_table__free(s->pctx);
	obi_map__free(s->obi);
	unwind_maps__free(s->um);
	table_cache__free(s->cache);
	kallsyms__free(s->ks);
	/* After the registry: executables hold DWARF handles found through it. */
	debuginfo__free(s->di);
	free(s);
}

struct selection *session__selection(struct session *s)
{
	return s->sel;
}

int session__filter_pid(struct session *s, pid_t pid)
{
	if (s->root_cnt < SS_MAX_FILTER_PIDS)
		s->roots[s->root_cnt++] = pid;
	return sampler__filter_pid(s->sampler, pid);
}

static void scan_selected(pid_t pid, void *ctx)
{
	struct session *s = ctx;

	process_table__scan(s->pt, pid, clock_ns(CLOCK_MONOTONIC));
}

int session__start(struct session *s)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	size_t i;

	if (s->opts.filter == FILTER_OFF && selection_rules__active(selection__rules(s->sel)))
		selection__each_kept(s->sel, scan_selected, s); /* the rest: as samples ask */
	else if (s->opts.filter == FILTER_OFF)
		process_table__scan_all(s->pt, now);
	else
		for (i = 0; i < s->root_cnt; i++)
			process_table__scan(s->pt, s->roots[i], now);
	pctx_table__started(s->pctx);
	/* The tables most processes need before the first sample; the rest as samples ask. */
	if (s->tq)
		table_queue__prime(s->tq, now, TABLE_PRIME_NS);
	malloc_trim(0);
	return sampler__start(s->sampler);
}

int session__poll(struct session *s, int timeout_ms)
{
	int err;

	if (s->tq && timeout_ms > TABLE_URGENT_POLL_MS && table_queue__urgent(s->tq))
		timeout_ms = TABLE_URGENT_POLL_MS;
	if (timeout_ms > INTERP_SETTLE_POLL_MS &&
	    interp_registry__settling(s->interp, clock_ns(CLOCK_MONOTONIC)))
		timeout_ms = INTERP_SETTLE_POLL_MS;
	err = sampler__poll(s->sampler, timeout_ms);
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (s->fatal)
		return s->fatal;
	process_table__tick(s->pt, now);
	selection__tick(s->sel, now);
	/* Tables just loaded may complete deferred samples. */
	if (s->tq && table_queue__run(s->tq, now, TABLE_BUDGET_NS) > 0 && s->deferred)
		deferred__changed(s->deferred);
	if (s->deferred && deferred__tick(s->deferred, now) == -ENOMEM)
		return -ENOMEM;
	if (now - s->last_collect_ns >= COLLECT_INTERVAL_NS) {
		s->last_collect_ns = now;
		exe_registry__collect(s->reg, now, TABLE_IDLE_GRACE_NS);
		drop_file_pages(s);
		process_table__reap(s->pt, now, PROCESS_GRACE_NS);
		if (s->opts.evict_exe_ns)
			exe_registry__evict(s->reg, now, s->opts.evict_exe_ns);
		if (s->off_cpu && now > OFF_CPU_PENDING_MAX_NS)
			off_cpu_join__expire(s->off_cpu, now - OFF_CPU_PENDING_MAX_NS);
	}
	interp_registry__tick(s->interp, now);
	pctx_table__tick(s->pctx, now);
	obi_map__tick(s->obi, now);
	if (err < 0 && err != -EINTR) {
		pr_err("reading samples: %s\n", strerror(-err));
		return err;
	}
	return 0;
}

void session__stop_sampling(struct session *s)
{
	sampler__stop_sampling(s->sampler);
}

int session__flush_deferred(struct session *s, uint64_t max_wait_ns)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), now = t0;
	int err;

	if (!s->deferred)
		return 0;
	while (s->tq && deferred__stats(s->deferred)->queued && now - t0 < max_wait_ns &&
	       table_queue__building_wanted(s->tq)) {
		err = session__poll(s, TABLE_URGENT_POLL_MS);
		if (err)
			return err;
		now = clock_ns(CLOCK_MONOTONIC);
	}
	return deferred__flush(s->deferred, now);
}

struct profile *session__take_profile(struct session *s)
{
	struct profile *next, *cur = s->prof;

	if (s->opts.symbolize) {
		struct debuginfo *di = s->opts.symbolize_lines ? s->di : NULL;
		int pending = trace_handler__symbolize_lines(s->th, di);

		if (pending && di && s->opts.debuginfod_wait_ms > 0) {
			pr_info("waiting up to %d ms for debuginfod (%d frames)\n",
				s->opts.debuginfod_wait_ms, pending);
			debuginfo__wait(di, s->opts.debuginfod_wait_ms);
			trace_handler__symbolize_lines(s->th, di);
		}
	}
	next = new_profile(s);
	if (!next)
		return NULL;
	if (trace_handler__set_profile(s->th, next)) {
		profile__free(next);
		return NULL;
	}
	profile__set_end_time(cur, clock_ns(CLOCK_REALTIME));
	s->prof = next;
	if (s->opts.alloc_carry && s->alloc_live)
		alloc_carry__run(s->alloc_live, cur, next, sampler__alloc_live_fd(s->sampler));
	else
		alloc_live__clear(s->alloc_live); /* its frames are cur's */
	return cur;
}

const struct process *session__process(const struct session *s, pid_t pid)
{
	const struct process *p = process_table__find(s->pt, pid);
	pid_t owner;

	/* a child forked without exec, unknown to the table: its parent's image and container */
	if (!p && (owner = trace_handler__owner(s->th, pid)))
		p = process_table__find(s->pt, owner);
	return p;
}

const struct pctx_attrs *session__process_context(const struct session *s, pid_t pid)
{
	return pctx_table__get(s->pctx, pid);
}

const char *session__process_context_refused(const struct session *s, pid_t pid)
{
	return pctx_table__refused(s->pctx, pid);
}

const struct profile *session__profile(const struct session *s)
{
	return s->prof;
}

void session__stats(struct session *s, struct session_stats *out)
{
	struct process_stats ps;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	sampler__counters(s->sampler, out->counters);
	out->trace = trace_handler__stats(s->th);
	out->process_contexts = pctx_table__stats(s->pctx);
	out->unwind = s->um ? unwind_maps__stats(s->um) : NULL;
	out->deferred = s->deferred ? deferred__stats(s->deferred) : NULL;
	out->off_cpu = s->off_cpu ? off_cpu_join__stats(s->off_cpu) : NULL;
	out->alloc_live = s->alloc_live ? alloc_live__stats(s->alloc_live) : NULL;
	out->alloc_procs = sampler__alloc_procs_stats(s->sampler);
	out->cache = s->cache ? table_cache__stats(s->cache) : NULL;
	if (s->tq)
		table_queue__stats(s->tq, &out->tables);
	process_table__stats(s->pt, &ps);
	out->processes_alive = ps.alive;
	out->processes_exited = ps.exited;
	out->process_scans = ps.scans;
	out->process_scan_failures = ps.scan_failures;
	out->process_bpf_syncs = ps.bpf_syncs;
	out->processes_gone_before_read = ps.gone_before_read;
	out->executables = exe_registry__cnt(s->reg);
	exe_registry__stats(s->reg, &out->files);
	safe_open__stats(&out->opens);
	out->pages_zeroed = file_map__fault_cnt();
	out->bpf_map_bytes = sampler__map_memory(s->sampler);
	for (i = 0; s->um && i < UNWIND_SEGMENT_MAX; i++) {
		int fd = unwind_maps__segment_fd(s->um, i);

		if (fd >= 0)
			out->bpf_map_bytes += sampler__fd_map_memory(fd);
	}
	if (sampler__prog_stats(s->sampler, &out->bpf_run_ns, &out->bpf_run_cnt))
		out->bpf_run_ns = out->bpf_run_cnt = 0;
	out->exec_events = s->exec_events;
	out->exit_events = s->exit_events;
	out->mmap_events = s->mmap_events;
	{
		uint64_t bpf[FRAME_KIND_CNT * INTERP_COUNTER_MAX];

		sampler__interp_counters(s->sampler, bpf);
		out->runtime_cnt =
			interp_registry__stats(s->interp, bpf, out->runtimes, SESSION_RUNTIMES_MAX);
	}
	out->cpu_cnt = sampler__cpu_cnt(s->sampler);
	out->task_events = sampler__task_events_stats(s->sampler);
	obi_map__stats(s->obi, &out->obi);
}
