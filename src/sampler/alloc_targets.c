/* Allocator discovery: candidate files of a process or a command, and their allocator symbols. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi.h"
#include "base/log.h"
#include "sampler/alloc_targets.h"

#define P(n, p, f)                          \
	{                                   \
		n, ALLOC_PROG_##p, f, false \
	}
#define A(n, p, f)                         \
	{                                  \
		n, ALLOC_PROG_##p, f, true \
	}
const struct alloc_probe alloc_probes[] = {
	P("malloc", MALLOC, ALLOC_MALLOC),
	P("calloc", CALLOC, ALLOC_CALLOC),
	P("realloc", REALLOC, ALLOC_REALLOC),
	P("posix_memalign", POSIX_MEMALIGN, ALLOC_POSIX_MEMALIGN),
	P("aligned_alloc", ALIGNED, ALLOC_ALIGNED_ALLOC),
	P("memalign", ALIGNED, ALLOC_MEMALIGN),
	P("valloc", MALLOC, ALLOC_VALLOC),
	P("pvalloc", MALLOC, ALLOC_VALLOC),
	P("free", FREE, ALLOC_MALLOC),
	/* jemalloc's non-standard API */
	A("mallocx", MALLOC, ALLOC_MALLOCX),
	A("rallocx", REALLOC, ALLOC_RALLOCX),
	A("sdallocx", FREE, ALLOC_MALLOC),
	A("dallocx", FREE, ALLOC_MALLOC),
	/* operator new/delete an allocator defines itself (tcmalloc, jemalloc); libstdc++'s own
	 * call malloc and are not probed
	 */
	A("_Znwm", MALLOC, ALLOC_NEW),
	A("_ZnwmRKSt9nothrow_t", MALLOC, ALLOC_NEW),
	A("_ZnwmSt11align_val_t", MALLOC, ALLOC_NEW),
	A("_ZnwmSt11align_val_tRKSt9nothrow_t", MALLOC, ALLOC_NEW),
	A("_Znam", MALLOC, ALLOC_NEW_ARRAY),
	A("_ZnamRKSt9nothrow_t", MALLOC, ALLOC_NEW_ARRAY),
	A("_ZnamSt11align_val_t", MALLOC, ALLOC_NEW_ARRAY),
	A("_ZnamSt11align_val_tRKSt9nothrow_t", MALLOC, ALLOC_NEW_ARRAY),
	A("_ZdlPv", FREE, ALLOC_MALLOC),
	A("_ZdlPvm", FREE, ALLOC_MALLOC),
	A("_ZdlPvRKSt9nothrow_t", FREE, ALLOC_MALLOC),
	A("_ZdlPvSt11align_val_t", FREE, ALLOC_MALLOC),
	A("_ZdlPvmSt11align_val_t", FREE, ALLOC_MALLOC),
	A("_ZdlPvSt11align_val_tRKSt9nothrow_t", FREE, ALLOC_MALLOC),
	A("_ZdaPv", FREE, ALLOC_MALLOC),
	A("_ZdaPvm", FREE, ALLOC_MALLOC),
	A("_ZdaPvRKSt9nothrow_t", FREE, ALLOC_MALLOC),
	A("_ZdaPvSt11align_val_t", FREE, ALLOC_MALLOC),
	A("_ZdaPvmSt11align_val_t", FREE, ALLOC_MALLOC),
	A("_ZdaPvSt11align_val_tRKSt9nothrow_t", FREE, ALLOC_MALLOC),
	/* pymalloc (CPython 3.6+: PyMem_Malloc goes to pymalloc too) */
	P("PyObject_Malloc", MALLOC, ALLOC_PY_MALLOC),
	P("PyObject_Calloc", CALLOC, ALLOC_PY_CALLOC),
	P("PyObject_Realloc", REALLOC, ALLOC_PY_REALLOC),
	P("PyObject_Free", FREE, ALLOC_PY_MALLOC),
	P("PyMem_Malloc", MALLOC, ALLOC_PYMEM_MALLOC),
	P("PyMem_Calloc", CALLOC, ALLOC_PYMEM_CALLOC),
	P("PyMem_Realloc", REALLOC, ALLOC_PYMEM_REALLOC),
	P("PyMem_Free", FREE, ALLOC_PYMEM_MALLOC),
};
#undef P
#undef A
const size_t alloc_probe_cnt = sizeof(alloc_probes) / sizeof(alloc_probes[0]);

_Static_assert(sizeof(alloc_probes) / sizeof(alloc_probes[0]) <= 64, "a target's mask: 64 bits");

/* The probes path defines (defined STT_FUNC/STT_GNU_IFUNC in .dynsym or .symtab), one name per
 * address. 0 or -errno.
 */
static int scan_symbols(const char *path, uint64_t *mask)
{
	uint64_t addr[64] = { 0 };
	Elf_Scn *scn = NULL;
	Elf *elf = NULL;
	size_t i, j;
	int fd, err = 0;

	*mask = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;
		size_t n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;
			int type;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_value)
				continue;
			type = GELF_ST_TYPE(sym.st_info);
			if (type != STT_FUNC && type != STT_GNU_IFUNC)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name ||
			    (name[0] != 'm' && name[0] != 'c' && name[0] != 'r' && name[0] != 'p' &&
			     name[0] != 'a' && name[0] != 'v' && name[0] != 'f' && name[0] != 's' &&
			     name[0] != 'd' && name[0] != '_' && name[0] != 'P'))
				continue;
			for (j = 0; j < alloc_probe_cnt; j++)
				if (!(*mask & (1ULL << j)) && !strcmp(name, alloc_probes[j].name)) {
					*mask |= 1ULL << j;
					addr[j] = sym.st_value;
				}
		}
	}
	/* aliases: the first name at an address */
	for (i = 0; i < alloc_probe_cnt; i++)
		for (j = 0; j < i && (*mask & (1ULL << i)); j++)
			if ((*mask & (1ULL << j)) && addr[j] == addr[i])
				*mask &= ~(1ULL << i);
cleanup:
	elf_end(elf);
	close(fd);
	return err;
}

/* alloc_targets__add_file(), and in *idx (when not NULL) the file's index in ts when it is
 * one of its targets, new or known (else left alone).
 */
static int add_file_at(struct alloc_targets *ts, const char *path, size_t *idx)
{
	struct alloc_target *t;
	struct stat st;
	uint64_t mask;
	size_t i, n;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	for (i = 0; i < ts->cnt; i++)
		if (ts->t[i].dev == st.st_dev && ts->t[i].ino == st.st_ino) {
			ts->any_malloc_seen |= ts->t[i].mask & 1;
			if (idx)
				*idx = i;
			return 0;
		}
	for (i = 0; i < ts->miss_cnt && i < ALLOC_TARGETS_MISSES; i++)
		if (ts->misses[i].dev == st.st_dev && ts->misses[i].ino == st.st_ino)
			return 0;
	if (scan_symbols(path, &mask)) {
		ts->unreadable++;
		pr_debug("--alloc: cannot read the symbols of %s\n", path);
		return 0;
	}
	/* operator new/delete and jemalloc's API only where the allocator itself is (libstdc++'s
	 * operator new calls malloc: probing it too would trap twice)
	 */
	for (i = 0; !(mask & 1) && i < alloc_probe_cnt; i++)
		if (alloc_probes[i].malloc_only)
			mask &= ~(1ULL << i);
	if (!mask) {
		i = ts->miss_cnt++ % ALLOC_TARGETS_MISSES;
		ts->misses[i].dev = st.st_dev;
		ts->misses[i].ino = st.st_ino;
		return 0;
	}
	if (mask & 1)
		ts->any_malloc_seen = true;
	if (ts->cnt >= ALLOC_TARGETS_CAP) {
		ts->dropped++;
		return 0;
	}
	t = &ts->t[ts->cnt];
	n = strlen(path);
	if (n >= sizeof(t->path))
		return 0;
	memcpy(t->path, path, n + 1);
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->mask = mask;
	if (idx)
		*idx = ts->cnt;
	ts->cnt++;
	return 1;
}

int alloc_targets__add_file(struct alloc_targets *ts, const char *path)
{
	return add_file_at(ts, path, NULL);
}

static bool named_allocator(const char *base)
{
	return !strncmp(base, "libc.so.", 8) || !strncmp(base, "libc-", 5) ||
	       strstr(base, "jemalloc") || strstr(base, "tcmalloc") || strstr(base, "mimalloc") ||
	       !strncmp(base, "libpython", 9) || !strncmp(base, "python", 6);
}

int alloc_targets__add_pid(struct alloc_targets *ts, pid_t pid, bool all_files, uint64_t *mapped)
{
	char path[64], line[4096], file[ALLOC_TARGET_PATH_SZ];
	bool first = true;
	int added = 0;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *name = strchr(line, '/'), *base;
		size_t n;

		if (!name)
			continue;
		n = strcspn(name, "\n");
		name[n] = 0;
		if (n > 10 && !strcmp(name + n - 10, " (deleted)"))
			continue; /* unmapped from disk: nothing to attach to */
		base = strrchr(name, '/') + 1;
		/* the first file mapped is the executable */
		if (!all_files && !first && !named_allocator(base))
			continue;
		first = false;
		if (pid)
			n = (size_t)snprintf(file, sizeof(file), "/proc/%d/root%s", (int)pid, name);
		else
			n = (size_t)snprintf(file, sizeof(file), "%s", name);
		if (n < sizeof(file)) {
			size_t idx = SIZE_MAX;

			added += add_file_at(ts, file, &idx);
			if (mapped && idx < 64)
				*mapped |= 1ULL << idx;
		}
	}
	fclose(f);
	return added;
}

/* prog in PATH (or as given, with a '/'), into out: 0 or -ENOENT. */
static int resolve_in_path(const char *prog, char *out, size_t out_sz)
{
	const char *p = getenv("PATH");

	if (strchr(prog, '/')) {
		if ((size_t)snprintf(out, out_sz, "%s", prog) >= out_sz)
			return -ENAMETOOLONG;
		return access(out, X_OK) ? -ENOENT : 0;
	}
	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		size_t n = strcspn(p, ":");

		if ((size_t)snprintf(out, out_sz, "%.*s/%s", (int)n, n ? p : ".", prog) < out_sz &&
		    !access(out, X_OK))
			return 0;
		p += n + (p[n] == ':');
	}
	return -ENOENT;
}

/* The program a `#!` script runs (one level; `#!/usr/bin/env NAME` resolved in PATH). */
static void follow_shebang(char *exe, size_t exe_sz)
{
	char buf[256], *interp, *arg, *end;
	ssize_t n;
	int fd = open(exe, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 3 || buf[0] != '#' || buf[1] != '!')
		return;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	interp = buf + 2 + strspn(buf + 2, " \t");
	end = interp + strcspn(interp, " \t");
	arg = *end ? end + 1 + strspn(end + 1, " \t") : end;
	*end = 0;
	arg[strcspn(arg, " \t")] = 0;
	if (!strcmp(strrchr(interp, '/') ? strrchr(interp, '/') + 1 : interp, "env") && *arg)
		resolve_in_path(arg, exe, exe_sz);
	else if (interp[0] == '/' && strlen(interp) < exe_sz)
		memmove(exe, interp, strlen(interp) + 1);
}

/* The dynamic loader of exe (PT_INTERP), into out: 0, or -ENOENT (static). */
static int interp_of(const char *exe, char *out, size_t out_sz)
{
	Elf *elf = NULL;
	size_t i, n;
	int fd, err = -ENOENT;

	fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && !elf_getphdrnum(elf, &n)) {
		for (i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP ||
			    ph.p_filesz < 2 || ph.p_filesz >= out_sz)
				continue;
			if (pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) ==
				    (ssize_t)ph.p_filesz &&
			    !out[ph.p_filesz - 1] && out[0] == '/')
				err = 0;
			break;
		}
	}
	elf_end(elf);
	close(fd);
	return err;
}

/* The libraries exe will map, in the dynamic loader's order (`ld.so --list`), with the
 * environment assignments envs[0..env_cnt) on top of ours: each one through add_file.
 */
static int add_loader_list(struct alloc_targets *ts, const char *exe, char *const envs[],
			   size_t env_cnt)
{
	char interp[PATH_MAX], buf[1 << 16];
	size_t len = 0, i;
	int fds[2], status, added = 0;
	char *line, *save = NULL;
	ssize_t n;
	pid_t pid;

	if (interp_of(exe, interp, sizeof(interp)))
		return 0; /* static: the executable is all there is */
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(fds[1], 1);
		if (null >= 0)
			dup2(null, 2);
		for (i = 0; i < env_cnt; i++)
			putenv(envs[i]);
		execl(interp, interp, "--list", exe, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (len < sizeof(buf) - 1 && (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	waitpid(pid, &status, 0);
	buf[len] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *path = strstr(line, "=> /");

		/* "NAME => PATH (ADDRESS)"; a preloaded library: "PATH (ADDRESS)" */
		if (path)
			path += 3;
		else if (*(path = line + strspn(line, " \t")) != '/')
			continue;
		path[strcspn(path, " (")] = 0;
		added += alloc_targets__add_file(ts, path);
	}
	return added;
}

int alloc_targets__add_command(struct alloc_targets *ts, char *const argv[])
{
	char exe[PATH_MAX];
	char *const *envs = NULL;
	size_t env_cnt = 0;
	int err, added;

	/* `env VAR=VALUE... COMMAND`: the assignments, then the command */
	if (argv[0] &&
	    !strcmp(strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0], "env")) {
		envs = argv + 1;
		while (envs[env_cnt] && strchr(envs[env_cnt], '=') && envs[env_cnt][0] != '-')
			env_cnt++;
		if (!envs[env_cnt] || envs[env_cnt][0] == '-')
			return 0; /* env's own options: not followed */
		argv = envs + env_cnt;
	}
	if (!argv[0])
		return 0;
	err = resolve_in_path(argv[0], exe, sizeof(exe));
	if (err) {
		pr_debug("--alloc: cannot resolve '%s' in PATH\n", argv[0]);
		return err;
	}
	follow_shebang(exe, sizeof(exe));
	ts->any_malloc_seen = false; /* from here on: the command's */
	added = alloc_targets__add_file(ts, exe);
	err = add_loader_list(ts, exe, envs, env_cnt);
	return err < 0 ? err : added + err;
}

const struct alloc_target *alloc_targets__malloc_owner(const struct alloc_targets *ts)
{
	const struct alloc_target *libc = NULL;
	size_t i;

	/* a malloc besides libc's is there to replace it: preloaded, or linked before libc */
	for (i = 0; i < ts->cnt; i++) {
		const char *base = strrchr(ts->t[i].path, '/');

		if (!(ts->t[i].mask & 1))
			continue;
		base = base ? base + 1 : ts->t[i].path;
		if (strncmp(base, "libc.so.", 8) && strncmp(base, "libc-", 5))
			return &ts->t[i];
		libc = libc ?: &ts->t[i];
	}
	return libc;
}
