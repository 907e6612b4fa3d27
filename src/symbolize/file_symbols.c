/* Per-file symbols, Go lines and DWARF lines, keyed by file_id. See file_symbols.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/u64_map.h"
#include "formats/debuginfo.h"
#include "formats/dwarf.h"
#include "formats/elf_file.h"
#include "formats/elf_symbols.h"
#include "formats/gopclntab.h"
#include "proc/executable.h"
#include "symbolize/file_symbols.h"
#include "symbolize/function_starts.h"

#define SYMBOL_COPIES_PER_DROP 32
#define SYMBOL_COPY_CAP 65536
#define DWARF_CACHE_CAP 4096

enum dwarf_state {
	DWARF_UNTRIED = 0,
	DWARF_PENDING, /* debuginfod fetch in flight */
	DWARF_READY,
	DWARF_NONE, /* no debug info found */
};

/* One file's state. */
struct file_state {
	struct elf_symbols *syms; /* loaded on first use; NULL if none */
	bool syms_tried;
	/* Names file_symbols__symbol() returned, copied (symbol start + 1 -> name): a name is
	 * read from the file's pages once, and the pages go back every SYMBOL_COPIES_PER_DROP
	 * copies. At most SYMBOL_COPY_CAP; past that names are the file's (borrowed).
	 */
	struct u64_map names;
	uint32_t copies;      /* since its pages were last dropped */
	bool shrank;          /* the file shrank while mapped (elf_file__changed): no symbols */
	struct gopclntab *go; /* a Go executable's .gopclntab; NULL if none */
	bool go_tried;
	struct dwarf_file *dwarf; /* DWARF (or MiniDebugInfo symbols) once found */
	enum dwarf_state dwarf_state;
	/* The symbols of the file's MiniDebugInfo (.gnu_debugdata), read when its own symbols
	 * first miss: names owned by the table. NULL if none.
	 */
	struct elf_symbols *mini;
	bool mini_tried;
	struct function_starts *starts; /* .eh_frame FDE ranges, read on first use; NULL if none */
	bool starts_tried;
};

struct file_symbols {
	struct u64_map by_id; /* file_id -> struct file_state */
	size_t cap;
};

static void file_state__free(void *state)
{
	struct file_state *st = state;

	if (st) {
		u64_map__free_values(&st->names, free);
		elf_symbols__free(st->syms);
		elf_symbols__free(st->mini);
		function_starts__free(st->starts);
		gopclntab__free(st->go);
		dwarf_file__free(st->dwarf);
	}
	free(st);
}

struct file_symbols *file_symbols__new(size_t file_cap)
{
	struct file_symbols *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->cap = file_cap ? file_cap : FILE_SYMBOLS_DEFAULT_CAP;
	return fs;
}

void file_symbols__free(struct file_symbols *fs)
{
	if (!fs)
		return;
	u64_map__free_values(&fs->by_id, file_state__free);
	free(fs);
}

void file_symbols__forget(struct file_symbols *fs, uint64_t file_id)
{
	if (fs)
		file_state__free(u64_map__del(&fs->by_id, file_id));
}

/* exe's state, created on first use (taking another file's place when the table is full);
 * NULL when out of memory.
 */
static struct file_state *state_of(struct file_symbols *fs, const struct executable *exe)
{
	struct file_state *st = u64_map__get(&fs->by_id, exe->file_id);
	size_t it = 0;
	uint64_t key;
	void *v;

	if (st)
		return st;
	if (fs->by_id.cnt >= fs->cap && u64_map__next(&fs->by_id, &it, &key, &v))
		file_symbols__forget(fs, key);
	st = calloc(1, sizeof(*st));
	if (st && u64_map__set(&fs->by_id, exe->file_id, st)) {
		free(st);
		st = NULL;
	}
	return st;
}

int file_symbols__go_lines(struct file_symbols *fs, const struct executable *exe, uint64_t addr,
			   struct go_frame *out, size_t cap)
{
	struct file_state *st = state_of(fs, exe);

	if (!st)
		return -ENOENT;
	if (!st->go_tried) {
		st->go_tried = true;
		if (exe->kind == EXECUTABLE_FILE) {
			st->go = gopclntab__open(exe->elf);
			if (st->go)
				pr_debug("%s: Go %s table, %zu functions%s\n", exe->path,
					 gopclntab__version(st->go) == GOPCLNTAB_V12    ? "1.2"
					 : gopclntab__version(st->go) == GOPCLNTAB_V116 ? "1.16"
					 : gopclntab__version(st->go) == GOPCLNTAB_V118 ? "1.18"
											: "1.20+",
					 gopclntab__func_cnt(st->go),
					 gopclntab__has_inline(st->go) ? "" : ", no inline tree");
			else if (errno != ENOENT)
				pr_debug("%s: .gopclntab unreadable (%s)\n", exe->path,
					 strerror(errno));
		}
	}
	if (!st->go || st->shrank)
		return -ENOENT;
	return gopclntab__lookup(st->go, addr, out, cap);
}

/* The name of the symbol at start, copied the first time. The names are the file's own
 * pages (borrowed), mapped 64 KiB around each fault: left so, a giant's string tables grow
 * resident name by name (node's .strtab: 5.5 MiB 20 s into a start-up), and dropping them
 * without a copy would fault every name in again at every profile.
 */
static const char *keep_name(struct file_state *st, const struct executable *exe, uint64_t start,
			     const char *name)
{
	char *copy = u64_map__get(&st->names, start + 1);

	if (copy)
		return copy;
	if (st->names.cnt < SYMBOL_COPY_CAP) {
		copy = strdup(name);
		if (copy && u64_map__set(&st->names, start + 1, copy)) {
			free(copy);
			copy = NULL;
		}
	}
	if (++st->copies >= SYMBOL_COPIES_PER_DROP) {
		st->copies = 0;
		elf_file__drop_pages(exe->elf);
	}
	return copy ? copy : name;
}

/* The MiniDebugInfo symbol containing addr (its offset in *off), read from .gnu_debugdata the
 * first time a frame of the file has no symbol of its own; NULL if none.
 */
static const char *mini_symbol(struct file_state *st, const struct executable *exe, uint64_t addr,
			       uint64_t *off)
{
	if (!st->mini_tried && exe->elf && exe->kind == EXECUTABLE_FILE) {
		struct elf_file *mini_ef = NULL;
		void *image = NULL;
		size_t image_sz = 0;
		int err;

		st->mini_tried = true;
		err = debuginfo__minidebuginfo_image(exe->elf, &image, &image_sz);
		if (!err) {
			mini_ef = elf_file__open_mem(image, image_sz);
			st->mini = mini_ef ? elf_symbols__load(mini_ef) : NULL;
			if (!st->mini)
				err = -errno;
			pr_debug("%s: MiniDebugInfo: %zu symbols\n", exe->path,
				 elf_symbols__cnt(st->mini));
		}
		if (err && err != -ENOENT)
			pr_debug("%s: MiniDebugInfo unreadable (%s)\n", exe->path, strerror(-err));
		elf_file__free(mini_ef);
		free(image);
	}
	return st->mini ? elf_symbols__lookup(st->mini, addr, off) : NULL;
}

const char *file_symbols__symbol(struct file_symbols *fs, const struct executable *exe,
				 uint64_t addr, uint64_t *offset)
{
	struct file_state *st = state_of(fs, exe);
	const char *name;
	uint64_t off = 0;

	if (!st)
		return NULL;
	if (!st->syms_tried) {
		st->syms_tried = true;
		st->syms = elf_symbols__load_borrowed(exe->elf); /* exe->elf outlives the state */
		if (!st->syms)
			pr_debug("%s: no symbols (%s)\n", exe->path, strerror(errno));
		elf_file__drop_pages(exe->elf); /* the symbols are copied */
	}
	name = st->syms ? elf_symbols__lookup(st->syms, addr, &off) : NULL;
	if (name) {
		name = keep_name(st, exe, addr - off, name);
		if (offset)
			*offset = off;
	} else if ((name = mini_symbol(st, exe, addr, &off))) {
		if (offset)
			*offset = off;
	}
	if (!st->shrank && elf_file__changed(exe->elf)) {
		/* Shrunk under us: what was read since (names too) may be zeros. */
		st->shrank = true;
		pr_warn("%s: the file shrank while being read (truncated or rewritten in place): "
			"its frames stay unsymbolized\n",
			exe->path);
		elf_symbols__free(st->syms);
		st->syms = NULL;
	}
	if (!name && exe->elf && elf_file__entry(exe->elf) &&
	    addr - elf_file__entry(exe->elf) < elf_file__entry_block_size(exe->elf)) {
		name = "_start"; /* the entry point's block, unnamed in a stripped ld.so */
		if (offset)
			*offset = addr - elf_file__entry(exe->elf);
	}
	return st->shrank ? NULL : name;
}

int file_symbols__function_start(struct file_symbols *fs, const struct executable *exe,
				 uint64_t addr, uint64_t *start)
{
	struct file_state *st = state_of(fs, exe);

	if (!st || st->shrank || !exe->elf || exe->kind != EXECUTABLE_FILE)
		return -ENOENT;
	if (!st->starts_tried) {
		st->starts_tried = true;
		st->starts = function_starts__load(exe->elf);
		if (!st->starts)
			pr_debug("%s: no function extents from .eh_frame (%s)\n", exe->path,
				 strerror(errno));
	}
	return function_starts__lookup(st->starts, addr, start);
}

/* Find and open exe's debug info into st: 0 (READY), -ENOENT (NONE), -EAGAIN (PENDING). */
static int open_dwarf(struct file_state *st, const struct executable *exe, struct debuginfo *di)
{
	struct dwarf_opts opts = { .cache_cap = DWARF_CACHE_CAP, .demangle = true };
	struct debuginfo_result res;
	int err;

	if (exe->kind == EXECUTABLE_VDSO) {
		st->dwarf_state = DWARF_NONE;
		return -ENOENT;
	}
	err = executable__find_debuginfo(exe, di, &res);
	if (err == -EAGAIN) {
		st->dwarf_state = DWARF_PENDING;
		return -EAGAIN;
	}
	st->dwarf_state = DWARF_NONE;
	if (err)
		return -ENOENT;
	st->dwarf = res.image ? dwarf_file__open_mem(res.image, res.image_sz, &opts)
			      : dwarf_file__open_fd(res.fd, res.path, &opts);
	/* Symbols alone help only when the file itself has none (MiniDebugInfo). */
	if (st->dwarf && !dwarf_file__has_dwarf(st->dwarf) &&
	    res.source != DEBUGINFO_MINIDEBUGINFO) {
		dwarf_file__free(st->dwarf);
		st->dwarf = NULL;
	}
	debuginfo_result__release(&res);
	if (!st->dwarf)
		return -ENOENT;
	st->dwarf_state = DWARF_READY;
	pr_debug("%s: debug info found\n", exe->path);
	return 0;
}

int file_symbols__dwarf_lines(struct file_symbols *fs, const struct executable *exe,
			      struct debuginfo *di, uint64_t addr, const struct dwarf_line **lines)
{
	struct file_state *st = state_of(fs, exe);
	int err;

	if (!st)
		return -ENOENT;
	if (st->dwarf_state == DWARF_UNTRIED || st->dwarf_state == DWARF_PENDING) {
		err = open_dwarf(st, exe, di);
		if (err)
			return err;
	}
	if (st->dwarf_state != DWARF_READY)
		return -ENOENT;
	return dwarf_file__lookup(st->dwarf, addr, lines);
}
