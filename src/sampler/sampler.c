/* BPF sampler lifecycle: feature checks, load, perf events (per CPU, or per task:
 * sampler/task_events.h), ring buffer, counters.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/array.h"
#include "base/log.h"
#include "sampler/alloc_procs.h"
#include "sampler/kernel_features.h"
#include "sampler/map_sizing.h"
#include "sampler/mem_alloc.h"
#include "sampler/mem_growth.h"
#include "sampler/off_cpu.h"
#include "sampler/sampler.h"
#include "sampler/task_events.h"
#include "sampler/verifier_reason.h"
#include "sampler.skel.h"

#define DEFAULT_MAPPING_CAP (1u << 18)

struct sampler {
	struct sampler_bpf *skel;
	struct bpf_program *sample_prog; /* on_sample, or on_sample_tc (the tail-call walker) */
	struct kernel_features kf;
	struct ring_buffer *rb;
	int *perf_fds;
	struct bpf_link **perf_links;
	int *fault_fds; /* --faults: page-faults events per CPU (else NULL) */
	struct bpf_link **fault_links;
	bool faults;
	struct bpf_link **alloc_links; /* --alloc: the uprobes (alloc_link_cnt) */
	size_t alloc_link_cnt;
	struct alloc_procs *alloc_procs; /* --alloc -- COMMAND: its tree's probes (else NULL) */
	pid_t command_pid;               /* the first pid filtered under FILTER_FOLLOW_CHILDREN */
	pid_t task_pids[SS_MAX_FILTER_PIDS]; /* per_task under FILTER_PIDS: the pids filtered */
	size_t task_pid_cnt;
	struct task_events *task_events; /* the per-task events, or NULL: per CPU */
	struct sampler_opts opts;
	bool no_cpu; /* no perf events: off-CPU samples only */
	unsigned int cpu_cnt;
	unsigned int *cpus;
	unsigned int freq_hz;
	sampler_record_fn fn;
	void *ctx;
	size_t unwind_entry_cap;
	int segment_template_fd; /* until the load: the entry pool's segments' size (-1: the BPF's) */
	struct map_sizes sizes; /* from the machine and its load (map_sizing.h) */
	uint64_t map_memory;    /* the last sum of the maps' memlock */
	uint64_t map_memory_at; /* CLOCK_MONOTONIC ns of it, 0: never */
};

/* The maps' memory is re-read at most this often: one /proc/self/fdinfo file per map. */
#define MAP_MEMORY_REFRESH_NS (10ull * 1000000000ull)

static const char *const counter_names[COUNTER_CNT] = { SS_SAMPLE_COUNTERS(SS_COUNTER_NAME)
								SS_COUNTERS(SS_COUNTER_NAME) };

/* The one table of unwind end names: the record summary, the agent's metric labels and the
 * error frame ending an incomplete stack ("[unwind: <name>]") all print these.
 */
static const char *const unwind_end_names[UNWIND_END_CNT] = { UNWIND_ENDS(SS_COUNTER_NAME) };

const char *counter__name(enum counter c)
{
	if (c >= COUNTER_UNWIND_END_BASE && c < COUNTER_CNT)
		return unwind_end__name(c - COUNTER_UNWIND_END_BASE);
	return c < COUNTER_CNT && counter_names[c] ? counter_names[c] : "?";
}

bool unwind_end__incomplete(enum unwind_end e)
{
	return e != UNWIND_END_OK && e != UNWIND_END_NO_USER && e != UNWIND_END_IN_EXEC;
}

const char *unwind_end__name(enum unwind_end e)
{
	return e < UNWIND_END_CNT && unwind_end_names[e] ? unwind_end_names[e] : "?";
}

/* Deferred unwinding (bpf/deferred.h): on unless STACKSCOPE_DEFER=0; STACKSCOPE_DEFER=verify
 * is the test mode (every sample carries a stack copy, its replay is compared with eBPF's walk).
 * Budget, all CPUs together: DEFER_RATE copies per second with bursts of DEFER_BURST, split
 * over the CPUs (each CPU has its own bucket: no atomics), at least DEFER_CPU_MIN per CPU
 * (verify: 4 times the rate), and at least the sampling rate up to DEFER_CPU_HZ_MAX: a compiler
 * whose libLLVM has no table yet for its first second or two is sampled at that rate on its
 * CPU, and every one of those samples needs a copy (32/s for the machine deferred 53 of 210,
 * bench/clang_cold.sh). The ring buffer gets room for every CPU's burst on top (*burst: copies
 * per CPU), and copies stop while it is more than half full (the reader is behind: the room is
 * for samples), which is what bounds a fork storm.
 */
#define DEFER_RATE 32
#define DEFER_BURST 32
#define DEFER_CPU_MIN 8
#define DEFER_CPU_HZ_MAX 250
static void defer_budget(struct sampler_bpf *skel, unsigned int cpu_cnt, unsigned int freq_hz,
			 size_t *burst)
{
	const char *mode = getenv("STACKSCOPE_DEFER");
	unsigned int rate = DEFER_RATE / (cpu_cnt ? cpu_cnt : 1);

	if (rate < freq_hz)
		rate = freq_hz < DEFER_CPU_HZ_MAX ? freq_hz : DEFER_CPU_HZ_MAX;

	*burst = DEFER_BURST / (cpu_cnt ? cpu_cnt : 1);
	if (*burst < DEFER_CPU_MIN)
		*burst = DEFER_CPU_MIN;
	if (rate < DEFER_CPU_MIN)
		rate = DEFER_CPU_MIN;
	skel->rodata->sampler_cfg.defer_mode = DEFER_UNKNOWN;
	if (mode && !strcmp(mode, "0"))
		skel->rodata->sampler_cfg.defer_mode = DEFER_NONE;
	else if (mode && !strcmp(mode, "verify")) {
		skel->rodata->sampler_cfg.defer_mode = DEFER_VERIFY;
		rate *= 4; /* a test mode: more samples compared per second */
	}
	if (skel->rodata->sampler_cfg.defer_mode == DEFER_NONE)
		*burst = 0;
	skel->rodata->sampler_cfg.defer_interval_ns = 1000000000ULL / rate;
	skel->rodata->sampler_cfg.defer_burst_ns =
		(uint64_t)*burst * skel->rodata->sampler_cfg.defer_interval_ns;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL;
	va_list copy;

	/* a load log: only its reason, unless -v asks for the whole log */
	va_copy(copy, ap);
	if (level == LIBBPF_WARN && vasprintf(&msg, fmt, copy) >= 0 && verifier_reason__note(msg) &&
	    log__level() < LOG_DEBUG) {
		va_end(copy);
		free(msg);
		return 0;
	}
	va_end(copy);
	free(msg);
	if (level == LIBBPF_DEBUG && log__level() < LOG_DEBUG)
		return 0;
	log__vprintf(level == LIBBPF_WARN ? LOG_WARN : LOG_DEBUG, fmt, ap);
	return 0;
}

/* Parse a CPU list like "0-3,5,7-8" (the sysfs format) into ascending CPU numbers. */
int cpu_list__parse(const char *text, unsigned int **cpus, unsigned int *cnt)
{
	const char *p = text;
	size_t cap = 0;

	*cpus = NULL;
	*cnt = 0;
	while (*p && *p != '\n') {
		char *end;
		unsigned long a, b;

		errno = 0;
		a = strtoul(p, &end, 10);
		if (end == p || errno || a > 65535)
			goto bad;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtoul(p + 1, &end, 10);
			if (end == p + 1 || errno || b < a || b > 65535)
				goto bad;
			p = end;
		}
		for (; a <= b; a++) {
			if (array__reserve((void **)cpus, &cap, *cnt + 1, sizeof(**cpus))) {
				free(*cpus);
				*cpus = NULL;
				return -ENOMEM;
			}
			(*cpus)[(*cnt)++] = (unsigned int)a;
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			goto bad;
	}
	if (*cnt)
		return 0;
bad:
	free(*cpus);
	*cpus = NULL;
	*cnt = 0;
	return -EINVAL;
}

static int read_online_cpus(unsigned int **cpus, unsigned int *cnt)
{
	char buf[4096];
	ssize_t n;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	return cpu_list__parse(buf, cpus, cnt);
}

static int on_ringbuf(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	return s->fn(data, size, s->ctx);
}

/* root, or the capabilities loading and attaching need (checked before anything prints). */
static bool has_capabilities(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	const int cap_bpf = 39, cap_perfmon = 38, cap_sys_admin = 21;
	uint64_t eff;

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &hdr, data))
		return false;
	eff = (uint64_t)data[1].effective << 32 | data[0].effective;
	if (eff & (1ULL << cap_sys_admin))
		return true;
	return (eff & (1ULL << cap_bpf)) && (eff & (1ULL << cap_perfmon));
}

/* What the programs cannot do without: BTF (CO-RE, tp_btf programs, 5.5) and the ring buffer
 * (5.8). Everything newer has a variant or a fallback (choose_programs()).
 */
static int check_kernel(const struct kernel_features *kf)
{
	if (!kf->btf) {
		pr_err("this kernel has no BTF (/sys/kernel/btf/vmlinux missing): "
		       "stackscope needs CONFIG_DEBUG_INFO_BTF=y\n");
		return -ENOTSUP;
	}
	if (!kf->ringbuf) {
		pr_err("this kernel lacks the BPF ring buffer (Linux 5.8+)\n");
		return -ENOTSUP;
	}
	return 0;
}

static size_t pow2_at_least(size_t v)
{
	size_t p = 4096;

	while (p < v)
		p <<= 1;
	return p;
}

/* The whole verifier log of program name into DIR/name.log (STACKSCOPE_VERIFIER_LOG=DIR): a
 * program refused for its size shows there where its states multiply.
 */
static void write_verifier_log(const char *dir, const char *name, const char *log)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.log", dir, name);
	f = fopen(path, "w");
	if (!f) {
		pr_warn("verifier log: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	fputs(log, f);
	if (fclose(f))
		pr_warn("verifier log: cannot write %s: %s\n", path, strerror(errno));
}

/* STACKSCOPE_VERIFIER_STATS=1: each program's verifier statistics (instructions processed,
 * verification time) are logged at info level after the load (docs/ARCHITECTURE.md and the
 * kernel matrix record them); STACKSCOPE_VERIFIER_LOG=DIR: also each program's whole log
 * (level 2) into DIR. before: set up the log buffers; after: print and free them.
 */
static void verifier_stats_setup(struct bpf_object *obj, bool before)
{
	const char *dir = getenv("STACKSCOPE_VERIFIER_LOG");
	size_t sz, cap = dir ? (size_t)1 << 29 : (size_t)1 << 16; /* the kernel takes < 1 GiB */
	struct bpf_program *prog;
	const char *line;
	char *buf;

	if (!getenv("STACKSCOPE_VERIFIER_STATS") && !dir)
		return;
	bpf_object__for_each_program(prog, obj)
	{
		if (before) {
			buf = calloc(1, cap);
			if (buf) {
				bpf_program__set_log_buf(prog, buf, (__u32)cap);
				/* statistics only, or every instruction with its states
				 * (the kernel keeps the log's end)
				 */
				bpf_program__set_log_level(prog, dir ? 2 | 4 : 4);
			}
			continue;
		}
		buf = (char *)bpf_program__log_buf(prog, &sz);
		if (!buf)
			continue;
		if (dir && bpf_program__autoload(prog))
			write_verifier_log(dir, bpf_program__name(prog), buf);
		line = strstr(buf, "processed ");
		if (bpf_program__autoload(prog) && line)
			pr_info("verifier: %s: %.*s\n", bpf_program__name(prog),
				(int)strcspn(line, "\n"), line);
		line = strstr(buf, "verification time");
		if (bpf_program__autoload(prog) && line)
			pr_info("verifier: %s: %.*s\n", bpf_program__name(prog),
				(int)strcspn(line, "\n"), line);
		bpf_program__set_log_buf(prog, NULL, 0);
		free(buf);
	}
}

/* The maps sized from the machine and its load (before choose_programs(), which shrinks the
 * maps a kernel's variants never write).
 */
/* The entry pool's segments have one size (bpf/abi.h), the template's in "unwind_segments".
 * The BPF object's is UNWIND_SEGMENT_ENTRIES; a smaller pool gets a template of its own, a
 * map made for the load (libbpf 1.1's bpf_map__set_max_entries() on the inner map crashes).
 */
static int segment_template(struct sampler *s)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	uint32_t entries = UNWIND_SEGMENT_ENTRIES_OF((uint32_t)s->unwind_entry_cap);

	if (entries == UNWIND_SEGMENT_ENTRIES)
		return 0;
	s->segment_template_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_segment",
						sizeof(uint32_t), sizeof(struct unwind_entry_pair),
						entries / 2, &o);
	if (s->segment_template_fd < 0)
		return s->segment_template_fd;
	return bpf_map__set_inner_map_fd(s->skel->maps.unwind_segments, s->segment_template_fd);
}

static void size_maps(struct sampler *s, const struct sampler_opts *opts)
{
	struct sampler_bpf *skel = s->skel;
	struct map_sizing_input in = { .cpus = s->cpu_cnt, .scale = opts->map_scale };
	const struct map_sizes *z = &s->sizes;

	map_sizing__read_machine(&in);
	map_sizing__compute(&in, &s->sizes);
	bpf_map__set_max_entries(skel->maps.unwind_pages, z->unwind_pages);
	bpf_map__set_max_entries(skel->maps.interp_procs, z->proc_hash);
	bpf_map__set_max_entries(skel->maps.interp_code, z->proc_hash);
	bpf_map__set_max_entries(skel->maps.new_mappings, z->proc_hash);
	bpf_map__set_max_entries(skel->maps.pid_filter, z->proc_hash);
	bpf_map__set_max_entries(skel->maps.sel_procs, z->proc_lru);
	bpf_map__set_max_entries(skel->maps.forked, z->forked);
	bpf_map__set_max_entries(skel->maps.files, z->files);
	bpf_map__set_max_entries(skel->maps.known_files, z->files * 4);
	bpf_map__set_max_entries(skel->maps.mmap_pending, z->mmap_pending);
	/* off_cpu__configure() and mem_alloc__configure() shrink them to 1 when unused */
	bpf_map__set_max_entries(skel->maps.off_cpu_threads, z->threads);
	bpf_map__set_max_entries(skel->maps.alloc_threads, z->threads / 2);
	pr_debug(
		"BPF maps sized for %u CPUs, %u processes, %u threads, scale %u: %u unwind entries, %u "
		"per-process\n",
		in.cpus, in.procs, in.threads, in.scale ? in.scale : 1, z->unwind_entries,
		z->proc_hash);
}

/* Can eBPF enter mappings at exec and mmap (bpf_find_vma in tracepoint programs, 5.17)? */
static bool new_mappings_supported(const struct kernel_features *kf)
{
	if (getenv("STACKSCOPE_NO_NEW_MAPPINGS"))
		return false;
	return kf->find_vma;
}

/* Kernels before 6.1: a perf_event program may only use preallocated hash maps. The maps
 * created "memory only for what is used" are preallocated there (at their full size).
 */
static void preallocate_hash_maps(struct bpf_object *obj)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj)
	{
		enum bpf_map_type t = bpf_map__type(m);

		if ((t == BPF_MAP_TYPE_HASH || t == BPF_MAP_TYPE_PERCPU_HASH) &&
		    (bpf_map__map_flags(m) & BPF_F_NO_PREALLOC))
			bpf_map__set_map_flags(m, bpf_map__map_flags(m) & ~BPF_F_NO_PREALLOC);
	}
}

/* The program variants this kernel takes (docs/ARCHITECTURE.md "Kernel features and program
 * variants"); the others are not loaded.
 *  - on_sample (bpf_loop walker, 5.17) or on_sample_tc + runtime_chunk (tail calls;
 *    unwind_chunk instead, native frames only, with STACKSCOPE_TAIL_CALLS=native);
 *  - on_exec / on_mmap_exit entering new mappings (VMA iterator, bpf_find_vma), else their
 *    _plain variants (userspace reads /proc);
 *  - no bpf_get_current_task_btf (5.11): current_task() from bpf_get_current_task;
 *  - no bpf_task_pt_regs (5.15): user registers from the top of the kernel stack;
 *  - hash maps preallocated before 6.1.
 */
static void choose_programs(struct sampler *s, bool mmap_tracepoints)
{
	struct sampler_bpf *skel = s->skel;
	const char *tc = getenv("STACKSCOPE_TAIL_CALLS");
	bool tail_calls = tc || !s->kf.loop, native_only = tc && !strcmp(tc, "native");
	bool new_mappings = new_mappings_supported(&s->kf);

	skel->rodata->sampler_cfg.tail_calls = tail_calls;
	bpf_program__set_autoload(skel->progs.on_sample, !tail_calls);
	bpf_program__set_autoload(skel->progs.on_sample_tc, tail_calls);
	bpf_program__set_autoload(skel->progs.runtime_chunk, tail_calls && !native_only);
	bpf_program__set_autoload(skel->progs.unwind_chunk, tail_calls && native_only);
	s->sample_prog = tail_calls ? skel->progs.on_sample_tc : skel->progs.on_sample;
	if (tail_calls)
		pr_info("unwinding with tail calls (no bpf_loop): at most %d steps per sample%s\n",
			UNWIND_STEPS_TAIL_CALLS, native_only ? ", native frames only" : "");

	skel->rodata->no_task_btf = !s->kf.task_btf;
	/* Before 5.15: a sample in the kernel finds the user registers on the kernel stack. */
	if (!s->kf.task_pt_regs) {
		skel->rodata->no_task_pt_regs = 1;
		pr_info("no bpf_task_pt_regs (Linux 5.15+): user registers from the kernel stack\n");
	}

	/* Mappings entered by eBPF as they appear (exec, mmap), else by userspace only. */
	skel->rodata->sampler_cfg.new_mappings = new_mappings;
	bpf_program__set_autoload(skel->progs.on_exec, new_mappings);
	bpf_program__set_autoload(skel->progs.on_exec_plain, !new_mappings);
	bpf_program__set_autoload(skel->progs.on_mmap_enter, mmap_tracepoints);
	bpf_program__set_autoload(skel->progs.on_mmap_exit, mmap_tracepoints && new_mappings);
	bpf_program__set_autoload(skel->progs.on_mmap_exit_plain,
				  mmap_tracepoints && !new_mappings);
	if (!new_mappings && !getenv("STACKSCOPE_NO_NEW_MAPPINGS"))
		pr_info("no task VMA iterator (Linux 6.7) or bpf_find_vma (5.17): new mappings are "
			"read from /proc\n");
	if (!new_mappings) /* its ring is never written: one entry, not 16384 */
		bpf_map__set_max_entries(skel->maps.new_mappings, 1);

	if (!s->kf.perf_no_prealloc) {
		preallocate_hash_maps(skel->obj);
		pr_info("perf_event programs need preallocated hash maps (before Linux 6.1)\n");
	}
}

/* AT_EACCESS: the effective capabilities count (tracefs is 0700; a non-root agent reads it
 * with CAP_DAC_READ_SEARCH), as they do when libbpf opens the event's id.
 */
static bool syscall_tracepoints_usable(void)
{
	return !faccessat(AT_FDCWD, "/sys/kernel/tracing/events/syscalls/sys_enter_mmap", F_OK,
			  AT_EACCESS) ||
	       !faccessat(AT_FDCWD, "/sys/kernel/debug/tracing/events/syscalls/sys_enter_mmap",
			  F_OK, AT_EACCESS);
}

struct sampler *sampler__new(const struct sampler_opts *opts, sampler_record_fn fn, void *ctx)
{
	struct sampler *s;
	size_t rb_sz, defer_burst, copies_in_ring;
	const char *memo_env;
	int err;

	libbpf_set_print(libbpf_print);
	if (!has_capabilities()) {
		pr_err("permission denied: stackscope must run as root (or with CAP_BPF, "
		       "CAP_PERFMON and CAP_SYS_RESOURCE)\n");
		errno = EPERM;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fn = fn;
	s->ctx = ctx;
	s->segment_template_fd = -1;
	s->freq_hz = opts->freq_hz;
	err = read_online_cpus(&s->cpus, &s->cpu_cnt);
	if (err) {
		pr_err("cannot read the online CPUs: %s\n", strerror(-err));
		goto fail;
	}
	kernel_features__probe(&s->kf);
	err = check_kernel(&s->kf);
	if (err) {
		if (errno == EPERM || geteuid() != 0)
			goto perm;
		goto fail;
	}
	s->skel = sampler_bpf__open();
	if (!s->skel) {
		err = -errno;
		pr_err("cannot open the BPF object: %s\n", strerror(errno));
		goto fail;
	}
	/* Ring buffer: the reader drains it every 100 ms; room for 1 s of 2 KiB records on every
	 * CPU (a 30-frame sample is ~1.8 KiB) plus headroom for bursts of process events, and
	 * for the stack copies a CPU can have in it at once: its burst, but no more than the
	 * samples of a quarter of a second (+1) at this rate (the agent's 19 Hz: 5 of 28 KiB,
	 * not 16; a 1 MiB ring instead of 2 on 2 CPUs, copies still stop at half full).
	 */
	defer_budget(s->skel, s->cpu_cnt, opts->freq_hz, &defer_burst);
	/* the frame memo (bpf/sampler.bpf.c): on unless STACKSCOPE_FRAME_MEMO=0 (comparisons) */
	memo_env = getenv("STACKSCOPE_FRAME_MEMO");
	s->skel->rodata->sampler_cfg.frame_memo = !(memo_env && !strcmp(memo_env, "0"));
	copies_in_ring = opts->freq_hz / 4 + 1 < defer_burst ? opts->freq_hz / 4 + 1 : defer_burst;
	rb_sz = opts->ringbuf_sz
			? opts->ringbuf_sz
			: pow2_at_least((size_t)s->cpu_cnt * opts->freq_hz * 2048 + (256 << 10) +
					(size_t)s->cpu_cnt * copies_in_ring *
						sizeof(struct stack_copy_record) +
					off_cpu__ringbuf_bytes(opts->off_cpu, opts->off_cpu_rate) +
					mem_alloc__ringbuf_bytes(opts->alloc));
	bpf_map__set_max_entries(s->skel->maps.events, (uint32_t)pow2_at_least(rb_sz));
	s->skel->rodata->sampler_cfg.defer_ring_max = pow2_at_least(rb_sz) / 2;
	bpf_map__set_max_entries(s->skel->maps.mappings,
				 (uint32_t)(opts->mapping_cap ? opts->mapping_cap
							      : DEFAULT_MAPPING_CAP));
	size_maps(s, opts);
	s->unwind_entry_cap = opts->unwind_entry_cap ? opts->unwind_entry_cap
						     : s->sizes.unwind_entries;
	s->unwind_entry_cap = (s->unwind_entry_cap + 1) & ~(size_t)1;
	err = segment_template(s);
	if (err)
		goto fail;
	s->skel->rodata->sampler_cfg.filter_mode = opts->filter;
	s->skel->rodata->sampler_cfg.self_pid = (uint32_t)getpid();
	if (!syscall_tracepoints_usable())
		pr_warn("cannot watch mmap (no syscall tracepoints: is tracefs mounted?): new "
			"libraries are found by rescans only\n");
	choose_programs(s, syscall_tracepoints_usable());
	s->no_cpu = opts->no_cpu;
	err = off_cpu__configure(s->skel, opts->off_cpu, opts->off_cpu_min_ns, opts->off_cpu_rate,
				 s->cpu_cnt);
	if (err)
		goto fail;
	s->faults = opts->faults;
	s->opts = *opts;
	err = mem_growth__configure(s->skel, opts->faults, opts->fault_period);
	err = err ?: mem_alloc__configure(s->skel, opts->alloc, opts->alloc_rate);
	if (err)
		goto fail;
	verifier_stats_setup(s->skel->obj, true);
	err = sampler_bpf__load(s->skel);
	verifier_stats_setup(s->skel->obj, false);
	if (s->segment_template_fd >= 0)
		close(s->segment_template_fd);
	s->segment_template_fd = -1;
	if (err) {
		if (err == -EPERM)
			goto perm;
		if (*verifier_reason__last())
			pr_err("the kernel refused the BPF programs: %s (the verifier: \"%s\"; "
			       "-v for its log)\n",
			       strerror(-err), verifier_reason__last());
		else
			pr_err("the kernel refused the BPF programs: %s (run with -v for the "
			       "verifier log)\n",
			       strerror(-err));
		goto fail;
	}
	if (s->skel->rodata->sampler_cfg.tail_calls) {
		uint32_t first = 0;
		int fd = bpf_program__fd(bpf_program__autoload(s->skel->progs.runtime_chunk)
						 ? s->skel->progs.runtime_chunk
						 : s->skel->progs.unwind_chunk);

		if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.unwind_progs), &first, &fd,
					BPF_ANY)) {
			err = -errno;
			pr_err("cannot set up the tail-call unwinder: %s\n", strerror(errno));
			goto fail;
		}
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_ringbuf, s, NULL);
	if (!s->rb) {
		err = -errno;
		pr_err("cannot set up the ring buffer: %s\n", strerror(errno));
		goto fail;
	}
	return s;
perm:
	err = -EPERM;
	pr_err("permission denied: stackscope must run as root (or with CAP_BPF, CAP_PERFMON "
	       "and CAP_SYS_RESOURCE)\n");
fail:
	sampler__free(s);
	errno = -err;
	return NULL;
}

static int open_cpu_clock(unsigned int cpu, unsigned int freq_hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = freq_hz,
		.freq = 1,
	};

	return (int)syscall(__NR_perf_event_open, &attr, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The per-task events of a recording bound to processes (sampler/task_events.h): 0 when they
 * are on, 1 when per-CPU events are to be opened instead (why said in one line).
 * A command's tree stays on per-CPU events unless STACKSCOPE_PER_TASK=1: an inherited event
 * starts a whole period, so a process that runs less than one period of CPU in its life is
 * never sampled (a dash loop of 3,000 /bin/true at 499 Hz: 30 samples per task against 1,455
 * per CPU, BENCHMARKS 54-pertask). -p does not follow processes; a thread shorter than a
 * period is missed the same way (stated in docs/ARCHITECTURE.md).
 */
static int start_task_events(struct sampler *s)
{
	const char *env = getenv("STACKSCOPE_PER_TASK");
	struct task_events_opts o = {
		.freq_hz = s->freq_hz,
		.prog_fd = bpf_program__fd(s->sample_prog),
		.follow_children = s->opts.filter == FILTER_FOLLOW_CHILDREN,
	};
	const pid_t *pids = o.follow_children ? &s->command_pid : s->task_pids;
	size_t cnt = o.follow_children ? !!s->command_pid : s->task_pid_cnt;
	int err;

	if (!s->opts.per_task || s->no_cpu || !cnt || s->opts.filter == FILTER_OFF)
		return 1;
	if (env && !strcmp(env, "0")) {
		pr_debug("STACKSCOPE_PER_TASK=0: per-CPU events\n");
		return 1;
	}
	if (o.follow_children && !(env && !strcmp(env, "1")))
		return 1; /* a command's short processes (see above) */
	err = task_events__open(&s->task_events, pids, cnt, &o);
	if (!err)
		return 0;
	if (err == -E2BIG)
		pr_info("sampling: more than %d threads to record: per-CPU events instead of one "
			"per thread\n",
			TASK_EVENTS_MAX);
	else if (err == -EMFILE)
		pr_info("sampling: too few file descriptors for an event per thread "
			"(RLIMIT_NOFILE): per-CPU events\n");
	else if (err == -ESRCH)
		pr_info("sampling: the processes have no thread left: per-CPU events\n");
	else
		pr_info("sampling: per-task events refused (%s): per-CPU events\n", strerror(-err));
	return 1;
}

/* One cpu-clock event per online CPU, the sampling program on each. */
static int open_cpu_events(struct sampler *s)
{
	unsigned int i;
	int err;

	for (i = 0; i < s->cpu_cnt; i++) {
		s->perf_fds[i] = open_cpu_clock(s->cpus[i], s->freq_hz);
		if (s->perf_fds[i] < 0) {
			err = -errno;
			if (err == -EACCES || err == -EPERM)
				pr_err("perf_event_open denied: stackscope must run as root (or with "
				       "CAP_PERFMON; check kernel.perf_event_paranoid)\n");
			else
				pr_err("perf_event_open(cpu-clock, cpu %u): %s\n", s->cpus[i],
				       strerror(-err));
			return err;
		}
		s->perf_links[i] = bpf_program__attach_perf_event(s->sample_prog, s->perf_fds[i]);
		if (!s->perf_links[i]) {
			err = -errno;
			pr_err("cannot attach to the perf event on cpu %u: %s\n", s->cpus[i],
			       strerror(-err));
			return err;
		}
	}
	return 0;
}

int sampler__start(struct sampler *s)
{
	unsigned int i;
	int err;

	err = sampler_bpf__attach(s->skel);
	if (err) {
		pr_err("cannot attach the process tracepoints: %s\n", strerror(-err));
		return err;
	}
	s->perf_fds = calloc(s->cpu_cnt, sizeof(*s->perf_fds));
	s->perf_links = calloc(s->cpu_cnt, sizeof(*s->perf_links));
	if (!s->perf_fds || !s->perf_links)
		return -ENOMEM;
	for (i = 0; i < s->cpu_cnt; i++)
		s->perf_fds[i] = -1;
	if (!s->no_cpu && start_task_events(s) && (err = open_cpu_events(s)))
		return err;
	if (s->opts.alloc && s->opts.alloc_command && s->command_pid &&
	    s->opts.filter == FILTER_FOLLOW_CHILDREN) {
		s->alloc_procs = alloc_procs__new(s->skel);
		if (!s->alloc_procs)
			return -ENOMEM;
		err = alloc_procs__command(s->alloc_procs, s->command_pid, s->opts.alloc_command);
		if (err)
			return err;
	} else if (s->opts.alloc) {
		err = mem_alloc__attach(s->skel, s->opts.alloc_pids, s->opts.alloc_pid_cnt,
					s->opts.filter == FILTER_OFF, s->opts.alloc_command,
					&s->alloc_links, &s->alloc_link_cnt);
		if (err)
			return err;
	}
	if (s->faults) {
		s->fault_fds = calloc(s->cpu_cnt, sizeof(*s->fault_fds));
		for (i = 0; s->fault_fds && i < s->cpu_cnt; i++)
			s->fault_fds[i] = -1;
		s->fault_links = calloc(s->cpu_cnt, sizeof(*s->fault_links));
		if (!s->fault_fds || !s->fault_links)
			return -ENOMEM;
		return mem_growth__attach(s->skel, s->cpus, s->cpu_cnt, s->fault_fds,
					  s->fault_links);
	}
	return 0;
}

void sampler__stop_sampling(struct sampler *s)
{
	unsigned int i;

	task_events__disable(s->task_events);
	for (i = 0; s->perf_fds && i < s->cpu_cnt; i++)
		if (s->perf_fds[i] >= 0)
			ioctl(s->perf_fds[i], PERF_EVENT_IOC_DISABLE, 0);
	for (i = 0; s->fault_fds && i < s->cpu_cnt; i++)
		if (s->fault_fds[i] >= 0)
			ioctl(s->fault_fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	int n = ring_buffer__poll(s->rb, timeout_ms);

	if (n == -EINTR)
		return -EINTR;
	if (n < 0)
		return n;
	/* Samples do not wake us: drain what the timer tick finds. */
	return ring_buffer__consume(s->rb);
}

void sampler__free(struct sampler *s)
{
	unsigned int i;

	if (!s)
		return;
	task_events__free(s->task_events);
	for (i = 0; s->perf_links && i < s->cpu_cnt; i++)
		bpf_link__destroy(s->perf_links[i]);
	for (i = 0; s->perf_fds && i < s->cpu_cnt; i++)
		if (s->perf_fds[i] >= 0)
			close(s->perf_fds[i]);
	for (i = 0; s->fault_links && i < s->cpu_cnt; i++)
		bpf_link__destroy(s->fault_links[i]);
	for (i = 0; s->fault_fds && i < s->cpu_cnt; i++)
		if (s->fault_fds[i] >= 0)
			close(s->fault_fds[i]);
	free(s->fault_links);
	for (i = 0; i < s->alloc_link_cnt; i++)
		bpf_link__destroy(s->alloc_links[i]);
	alloc_procs__free(s->alloc_procs);
	free(s->alloc_links);
	free(s->fault_fds);
	ring_buffer__free(s->rb);
	if (s->segment_template_fd >= 0)
		close(s->segment_template_fd);
	sampler_bpf__destroy(s->skel);
	free(s->perf_links);
	free(s->perf_fds);
	free(s->cpus);
	free(s);
}

int sampler__filter_pid(struct sampler *s, pid_t pid)
{
	uint32_t key = (uint32_t)pid;
	uint8_t one = 1;

	if (s->opts.filter == FILTER_FOLLOW_CHILDREN && !s->command_pid)
		s->command_pid = pid;
	if (s->opts.filter == FILTER_PIDS && s->task_pid_cnt < SS_MAX_FILTER_PIDS)
		s->task_pids[s->task_pid_cnt++] = pid;
	/* the slot before the entry: eBPF looks at the entry only where the slot is set */
	if (!s->skel->bss)
		return -ENOTSUP;
	s->skel->bss->pid_maybe[key % PID_MAYBE_SLOTS] = 1;
	return bpf_map_update_elem(bpf_map__fd(s->skel->maps.pid_filter), &key, &one, BPF_ANY)
		       ? -errno
		       : 0;
}

/* Sum a per-CPU u64 array map of cnt counters into out: one batched lookup (a syscall per
 * counter, 170 a second for the agent's metrics, before), else key by key (a kernel without
 * batch operations on arrays, before 5.6).
 */
static void sum_percpu(int fd, uint64_t *out, uint32_t cnt)
{
	int ncpu = libbpf_num_possible_cpus();
	uint32_t k, got = cnt, next, *keys;
	uint64_t *vals;
	int c;

	memset(out, 0, sizeof(uint64_t) * cnt);
	if (ncpu <= 0)
		return;
	vals = calloc((size_t)ncpu * cnt, sizeof(*vals));
	keys = calloc(cnt, sizeof(*keys));
	if (!vals || !keys)
		goto out;
	c = bpf_map_lookup_batch(fd, NULL, &next, keys, vals, &got, NULL);
	if ((!c || errno == ENOENT) && got == cnt) {
		for (k = 0; k < cnt; k++)
			for (c = 0; c < ncpu; c++)
				out[keys[k] < cnt ? keys[k] : 0] += vals[(size_t)k * ncpu + c];
		goto out;
	}
	for (k = 0; k < cnt; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
out:
	free(keys);
	free(vals);
}

void sampler__counters(struct sampler *s, uint64_t out[COUNTER_CNT])
{
	sum_percpu(bpf_map__fd(s->skel->maps.counters), out, COUNTER_CNT);
}

void sampler__interp_counters(struct sampler *s, uint64_t out[FRAME_KIND_CNT * INTERP_COUNTER_MAX])
{
	sum_percpu(bpf_map__fd(s->skel->maps.interp_counters), out,
		   FRAME_KIND_CNT * INTERP_COUNTER_MAX);
}

/* The map fds of sampler.h: each the fd of the skeleton's map of the same name. */
#define SAMPLER_MAP_FD(name)                              \
	int sampler__##name##_fd(const struct sampler *s) \
	{                                                 \
		return bpf_map__fd(s->skel->maps.name);   \
	}

SAMPLER_MAP_FD(interp_files)
SAMPLER_MAP_FD(interp_procs)
SAMPLER_MAP_FD(interp_code)
SAMPLER_MAP_FD(interp_file_bits)
SAMPLER_MAP_FD(interp_proc_bits)
SAMPLER_MAP_FD(obi_maps)
SAMPLER_MAP_FD(new_mappings)
SAMPLER_MAP_FD(known_files)
SAMPLER_MAP_FD(mappings)
SAMPLER_MAP_FD(files)
SAMPLER_MAP_FD(alloc_live)
SAMPLER_MAP_FD(unwind_pages)
SAMPLER_MAP_FD(unwind_segments)
SAMPLER_MAP_FD(unwind_rules)
SAMPLER_MAP_FD(sel_procs)
SAMPLER_MAP_FD(sel_cgroups)
SAMPLER_MAP_FD(maps_epoch)

volatile struct selection_state *sampler__selection_state(struct sampler *s)
{
	return s->skel->bss ? &s->skel->bss->sel_state : NULL;
}

uint64_t sampler__fd_map_memory(int fd)
{
	char path[64], line[256];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "memlock:", 8))
			v = strtoull(line + 8, NULL, 10);
	fclose(f);
	return v;
}

uint64_t sampler__map_memory(struct sampler *s)
{
	struct timespec ts;
	struct bpf_map *m;
	uint64_t total = 0, now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (s->map_memory_at && now - s->map_memory_at < MAP_MEMORY_REFRESH_NS)
		return s->map_memory;
	bpf_object__for_each_map(m, s->skel->obj) if (bpf_map__fd(m) >= 0)
		total += sampler__fd_map_memory(bpf_map__fd(m));
	s->map_memory = total;
	s->map_memory_at = now;
	return total;
}

unsigned int sampler__cpu_cnt(const struct sampler *s)
{
	return s->cpu_cnt;
}

size_t sampler__unwind_entry_cap(const struct sampler *s)
{
	return s->unwind_entry_cap;
}

int sampler__prog_stats(struct sampler *s, uint64_t *run_time_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(s->sample_prog), &info, &len))
		return -errno;
	*run_time_ns = info.run_time_ns;
	*run_cnt = info.run_cnt;
	return 0;
}

void sampler__alloc_forked(struct sampler *s, pid_t pid, pid_t parent, uint64_t time_ns)
{
	if (s->alloc_procs)
		alloc_procs__forked(s->alloc_procs, pid, parent, time_ns);
}

void sampler__alloc_mapped(struct sampler *s, pid_t pid)
{
	if (s->alloc_procs)
		alloc_procs__mapped(s->alloc_procs, pid);
}

void sampler__alloc_exited(struct sampler *s, pid_t pid)
{
	if (s->alloc_procs)
		alloc_procs__exited(s->alloc_procs, pid);
}

const struct task_events_stats *sampler__task_events_stats(const struct sampler *s)
{
	return s->task_events ? task_events__stats(s->task_events) : NULL;
}

const struct alloc_procs_stats *sampler__alloc_procs_stats(const struct sampler *s)
{
	return s->alloc_procs ? alloc_procs__stats(s->alloc_procs) : NULL;
}
