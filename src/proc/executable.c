/* Executable registry: (dev, ino) -> file_id -> struct executable. See executable.h. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/safe_open.h"
#include "base/u64_map.h"
#include "formats/elf_file.h"
#include "formats/debuginfo.h"
#include "formats/go_build_id.h"
#include "proc/executable.h"
#include "proc/file_id.h"
#include "proc/proc_root.h"

struct exe_registry {
	struct u64_map by_id;    /* file_id -> executable */
	struct u64_map by_inode; /* hash(dev, ino) -> executable */
	struct executable *vdso;
	struct exe_registry_ops ops;
	struct exe_registry_stats stats;
};

static bool same_timespec(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* Whether the file at exe->fd still has the content we identified (size, mtime and ctime
 * unchanged: a write in place changes them; users can set mtime, not ctime).
 */
static bool same_version(const struct executable *exe, const struct stat *st)
{
	return exe->version.size == st->st_size && same_timespec(exe->version.mtime, st->st_mtim) &&
	       same_timespec(exe->version.ctime, st->st_ctim);
}

static uint64_t inode_key(uint64_t dev_major, uint64_t dev_minor, uint64_t ino)
{
	return u64_hash(ino ^ u64_hash(dev_major << 32 | dev_minor)) | 1;
}

struct exe_registry *exe_registry__new(const struct exe_registry_ops *ops)
{
	struct exe_registry *reg = calloc(1, sizeof(*reg));

	if (!reg)
		return NULL;
	if (ops)
		reg->ops = *ops;
	return reg;
}

void exe_registry__ref(struct exe_registry *reg, struct executable *exe)
{
	exe->live_maps++;
	exe->idle_since_ns = exe->unused_since_ns = 0;
	if (!exe->loaded) {
		exe->loaded = true;
		if (reg->ops.load)
			reg->ops.load(exe, reg->ops.ctx);
	}
}

void exe_registry__unref(struct exe_registry *reg, struct executable *exe, uint64_t now_ns)
{
	if (!exe->live_maps)
		return;
	if (!--exe->live_maps)
		exe->idle_since_ns = exe->unused_since_ns = now_ns ? now_ns : 1;
}

size_t exe_registry__collect(struct exe_registry *reg, uint64_t now_ns, uint64_t grace_ns)
{
	size_t it = 0, n = 0;
	uint64_t key;
	void *v;

	while (u64_map__next(&reg->by_id, &it, &key, &v)) {
		struct executable *exe = v;

		if (!exe->loaded || exe->live_maps || !exe->idle_since_ns ||
		    now_ns - exe->idle_since_ns < grace_ns)
			continue;
		exe->loaded = false;
		exe->idle_since_ns = 0;
		if (reg->ops.unload)
			reg->ops.unload(exe, reg->ops.ctx);
		n++;
	}
	return n;
}

void exe_registry__drop_pages(struct exe_registry *reg)
{
	size_t it = 0;
	uint64_t key;
	void *v;

	while (u64_map__next(&reg->by_id, &it, &key, &v))
		elf_file__drop_pages(((struct executable *)v)->elf);
}

static void executable__free(void *file)
{
	struct executable *exe = file;

	if (!exe)
		return;
	elf_file__free(exe->elf);
	if (exe->fd >= 0)
		close(exe->fd);
	proc_root__close(&exe->root);
	free(exe->path);
	free(exe);
}

void exe_registry__free(struct exe_registry *reg)
{
	if (!reg)
		return;
	u64_map__free_values(&reg->by_id, executable__free);
	u64_map__free(&reg->by_inode);
	free(reg);
}

/* Fill text range and build id from the ELF. */
static int describe(struct executable *exe)
{
	size_t i, n = elf_file__segment_cnt(exe->elf);
	bool any = false;

	exe->text_start = UINT64_MAX;
	exe->text_end = 0;
	for (i = 0; i < n; i++) {
		const struct elf_segment *s = elf_file__segment(exe->elf, i);

		if (s->type != PT_LOAD || !(s->flags & PF_X))
			continue;
		if (s->vaddr < exe->text_start) {
			exe->text_start = s->vaddr;
			exe->text_offset = s->offset;
		}
		if (s->vaddr + s->memsz > exe->text_end)
			exe->text_end = s->vaddr + s->memsz;
		any = true;
	}
	if (!any) {
		exe->text_start = exe->text_end = exe->text_offset = 0;
	}
	if (elf_file__build_id_hex(exe->elf, exe->build_id, sizeof(exe->build_id)) < 0)
		exe->build_id[0] = '\0';
	if (go_build_id__read(exe->elf, exe->go_build_id, sizeof(exe->go_build_id)) < 0)
		exe->go_build_id[0] = '\0';
	if (exe->fd < 0 || file_id__htlhash(exe->fd, exe->file_hash))
		exe->file_hash[0] = '\0';
	return 0;
}

/* Adopt a new executable (elf and fd already set): dedupe by file_id, register, announce. */
static struct executable *adopt(struct exe_registry *reg, struct executable *exe)
{
	struct executable *old;

	if (exe->fd >= 0) {
		struct stat st;
		int err = fstat(exe->fd, &st) ? -errno : file_id__of_fd(exe->fd, &exe->file_id);

		if (err) {
			executable__free(exe);
			errno = -err;
			return NULL;
		}
		exe->version = (struct file_version){ st.st_size, st.st_mtim, st.st_ctim };
		reg->stats.identified++;
	}
	old = u64_map__get(&reg->by_id, exe->file_id);
	if (old) {
		executable__free(exe);
		return old;
	}
	describe(exe);
	if (u64_map__set(&reg->by_id, exe->file_id, exe)) {
		executable__free(exe);
		errno = ENOMEM;
		return NULL;
	}
	pr_debug("new executable %016llx %s build-id %s\n", (unsigned long long)exe->file_id,
		 exe->path, exe->build_id[0] ? exe->build_id : "-");
	return exe;
}

static struct executable *get_vdso(struct exe_registry *reg)
{
	struct executable *exe;
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	size_t size = 0;
	struct proc_maps maps;
	size_t i;

	if (reg->vdso)
		return reg->vdso;
	if (!base || proc_maps__read(getpid(), NULL, &maps)) {
		errno = ENOENT;
		return NULL;
	}
	for (i = 0; i < maps.cnt; i++)
		if (maps.maps[i].start == base)
			size = maps.maps[i].end - maps.maps[i].start;
	proc_maps__free(&maps);
	if (!size) {
		errno = ENOENT;
		return NULL;
	}
	exe = calloc(1, sizeof(*exe));
	if (!exe)
		return NULL;
	exe->fd = -1;
	exe->root.fd = -1;
	exe->kind = EXECUTABLE_VDSO;
	exe->path = strdup("[vdso]");
	exe->elf = elf_file__open_mem((const void *)base, size);
	if (!exe->path || !exe->elf) {
		executable__free(exe);
		errno = ENOEXEC;
		return NULL;
	}
	exe->file_id = file_id__of_mem((const void *)base, size);
	reg->vdso = adopt(reg, exe);
	return reg->vdso;
}

/* The file behind mapping m: through its map_files link (the very file mapped, even deleted or
 * in a container), else by its path inside the process's root. Only regular files are opened
 * (a mapped device is never opened). fd or -errno.
 */
static int open_mapped_file(pid_t pid, const struct proc_map *m, const struct proc_root *root)
{
	char buf[4200];
	int fd;

	/* (a process whose leader has exited has none: its threads have no map_files of their
	 * own, and the path is opened in a thread's root, proc_root.c)
	 */
	snprintf(buf, sizeof(buf), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = safe_open__check(buf);
	if (!fd)
		fd = safe_open(buf);
	if (fd >= 0 || fd == -EINVAL || m->path[0] != '/')
		return fd;
	return safe_open_in_root(root->ref, proc_root__inner(root, m->path));
}

struct executable *exe_registry__get(struct exe_registry *reg, pid_t pid, const struct proc_map *m)
{
	uint64_t key;
	struct executable *exe;
	struct proc_root root;
	struct stat st;
	int fd;

	if (!strcmp(m->path, "[vdso]"))
		return get_vdso(reg);
	if (!m->ino || m->path[0] != '/') {
		errno = ENOENT;
		return NULL;
	}
	key = inode_key(m->dev_major, m->dev_minor, m->ino);
	exe = u64_map__get(&reg->by_inode, key);
	if (exe && !fstat(exe->fd, &st) && same_version(exe, &st))
		return exe;
	if (exe) {
		/* Rewritten in place since we read it: identify the new content afresh. */
		u64_map__del(&reg->by_inode, key);
		reg->stats.changed_in_place++;
	}
	fd = proc_root__open(pid, &root);
	if (!fd)
		fd = open_mapped_file(pid, m, &root);
	if (fd < 0) {
		proc_root__close(&root);
		errno = fd == -ENOENT ? ESRCH : -fd;
		return NULL;
	}
	exe = calloc(1, sizeof(*exe));
	if (!exe) {
		proc_root__close(&root);
		close(fd);
		return NULL;
	}
	exe->fd = fd;
	exe->root = root;
	exe->kind = EXECUTABLE_FILE;
	exe->dev_major = m->dev_major;
	exe->dev_minor = m->dev_minor;
	exe->ino = m->ino;
	exe->path = strdup(m->path);
	exe->elf = elf_file__open_fd(fd);
	if (!exe->path || !exe->elf) {
		int err = exe->path ? ENOEXEC : ENOMEM;

		executable__free(exe);
		errno = err;
		return NULL;
	}
	exe = adopt(reg, exe);
	if (exe && u64_map__set(&reg->by_inode, key, exe)) {
		errno = ENOMEM;
		return NULL;
	}
	return exe;
}

struct executable *exe_registry__find(const struct exe_registry *reg, uint64_t file_id)
{
	return u64_map__get(&reg->by_id, file_id);
}

size_t exe_registry__cnt(const struct exe_registry *reg)
{
	return reg->by_id.cnt;
}

void exe_registry__stats(const struct exe_registry *reg, struct exe_registry_stats *out)
{
	*out = reg->stats;
}

size_t exe_registry__evict(struct exe_registry *reg, uint64_t now_ns, uint64_t evict_ns)
{
	struct executable *gone[64];
	size_t it = 0, n = 0, i;
	uint64_t key;
	void *v;

	while (n < 64 && u64_map__next(&reg->by_id, &it, &key, &v)) {
		struct executable *exe = v;

		if (exe->kind != EXECUTABLE_VDSO && !exe->live_maps && !exe->loaded &&
		    exe->unused_since_ns && now_ns - exe->unused_since_ns >= evict_ns)
			gone[n++] = exe;
	}
	for (i = 0; i < n; i++) {
		it = 0;
		/* Drop every (dev, ino) alias first; deleting restarts the walk. */
		while (u64_map__next(&reg->by_inode, &it, &key, &v)) {
			if (v == gone[i]) {
				u64_map__del(&reg->by_inode, key);
				it = 0;
			}
		}
		u64_map__del(&reg->by_id, gone[i]->file_id);
		if (reg->ops.forget)
			reg->ops.forget(gone[i], reg->ops.ctx);
		executable__free(gone[i]);
	}
	return n;
}

int executable__offset_to_vaddr(const struct executable *exe, uint64_t offset, uint64_t *vaddr)
{
	size_t i, n = elf_file__segment_cnt(exe->elf);

	/* The kernel maps segments from page-aligned file offsets, so an executable mapping's
	 * offset may lie before its segment's p_offset (lld and rustc output, where
	 * p_vaddr - p_offset is not a multiple of the page size... nor zero). Match the
	 * executable PT_LOAD whose page-aligned file range holds the offset.
	 */
	for (i = 0; i < n; i++) {
		const struct elf_segment *s = elf_file__segment(exe->elf, i);
		uint64_t start = s->offset & ~(uint64_t)0xfff;

		if (s->type != PT_LOAD || !(s->flags & PF_X))
			continue;
		if (offset >= start && offset < s->offset + s->filesz) {
			*vaddr = s->vaddr - s->offset + offset;
			return 0;
		}
	}
	return elf_file__offset_to_vaddr(exe->elf, offset, vaddr);
}

int executable__find_debuginfo(const struct executable *exe, struct debuginfo *di,
			       struct debuginfo_result *res)
{
	char path[4200];
	int n;

	/* A containerized or chroot'ed process's debug files live in its root, held open since
	 * the file was first seen (proc/proc_root.h).
	 */
	pr_debug("%s: debug info looked up in %s\n", exe->path,
		 exe->root.fd >= 0 ? (exe->root.host_path ? exe->root.host_path : "its root")
				   : "/");
	if (exe->root.fd >= 0) {
		n = snprintf(path, sizeof(path), "%s%s", exe->root.ref,
			     proc_root__inner(&exe->root, exe->path));
		if (n < 0 || (size_t)n >= sizeof(path))
			return -ENAMETOOLONG;
		return debuginfo__find_fd(di, exe->fd, path, exe->root.ref, res);
	}
	return debuginfo__find_fd(di, exe->fd, exe->path, NULL, res);
}
