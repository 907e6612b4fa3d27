/* /proc/PID/maps: the mappings of a process, as the kernel lists them.
 *
 * proc_maps__read() returns every mapping (callers filter, e.g. on PROC_MAP_EXEC); the array
 * and the path strings are owned by the struct proc_maps and freed by proc_maps__free().
 */
#ifndef STACKSCOPE_PROC_MAPS_H
#define STACKSCOPE_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum proc_map_perm {
	PROC_MAP_READ = 1 << 0,
	PROC_MAP_WRITE = 1 << 1,
	PROC_MAP_EXEC = 1 << 2,
	PROC_MAP_SHARED = 1 << 3,
};

struct proc_map {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint32_t dev_major, dev_minor;
	uint64_t ino;     /* 0: anonymous */
	uint32_t perms;   /* enum proc_map_perm */
	const char *path; /* "" for anonymous; "[vdso]", "[stack]"...; " (deleted)" stripped */
	int deleted;      /* the file was deleted after being mapped */
};

struct proc_maps {
	struct proc_map *maps;
	size_t cnt;
	uint64_t otel_ctx_start; /* an OTel process context's mapping, listed or not (0: none) */
};

/* Parse the maps of pid (or of a file in that format, for tests: path != NULL); a process whose
 * leader has exited before its other threads lists nothing there: a live thread's are read
 * (proc/live_thread.h). Returns 0, or -ENOENT/-ESRCH when the process is gone, -ENOMEM,
 * -EINVAL on a bad line.
 */
int proc_maps__read(pid_t pid, const char *path, struct proc_maps *out);
/* proc_maps__read() of the executable mappings only (PROC_MAP_EXEC): the other lines are
 * neither parsed nor checked. An address space with none reads as empty.
 */
int proc_maps__read_exec(pid_t pid, const char *path, struct proc_maps *out);
/* Parse maps text held in memory (NUL-terminated). */
int proc_maps__parse(const char *text, struct proc_maps *out);
void proc_maps__free(struct proc_maps *m);

#endif
