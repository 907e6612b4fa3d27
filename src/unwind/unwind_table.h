/* Per-file native unwind table: the sorted rows of struct unwind_rule that the eBPF unwinder
 * looks up by ELF virtual address (split into pages and loaded by unwind_maps).
 *
 * Sources, in priority order (an address covered by an earlier source keeps its rule):
 * .eh_frame, the file's .debug_frame, the debug file's .debug_frame, the stack deltas of a Go
 * executable's functions (.gopclntab pcsp tables; the outermost frames goexit, mstart, rt0_go
 * become STOP, stack switches FP or STOP: unwind_table.c go_switch_rule()). Then symbol-based
 * rules: thread roots (`_start`, `start_thread`) become STOP over the whole function, and
 * the first 16 bytes at the ELF entry point where no CFI covers them (ld.so's `_start`);
 * `clone`/`__clone`/`clone3`/`__clone3` become STOP where no CFI covers them; `__restore_rt`
 * (checked against the bytes `mov $15,%rax; syscall`) becomes SIGNAL where no CFI covers it.
 * arm64 files (e_machine EM_AARCH64) get arm64 rules (cfi__to_unwind_rule_arm64), their .plt
 * becomes UNWIND_RULE_PLT and the vDSO's `__kernel_rt_sigreturn` (checked against its code)
 * SIGNAL, where no CFI covers them.
 *
 * Invariants of the table: rows are sorted by strictly increasing addr; a row's rule holds
 * from its addr up to the next row's addr; no two consecutive rows have equal rules; the
 * last row, and every row that starts a gap between FDEs, is UNWIND_RULE_INVALID; addresses
 * below the first row have no rule (INVALID). All `rule` padding bytes are zero.
 */
#ifndef STACKSCOPE_UNWIND_TABLE_H
#define STACKSCOPE_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "formats/eh_frame.h"

struct elf_file;
struct unwind_table;

struct unwind_row {
	uint64_t addr; /* ELF vaddr */
	struct unwind_rule rule;
};

enum unwind_source {
	UNWIND_SRC_EH_FRAME = 1 << 0,
	UNWIND_SRC_DEBUG_FRAME = 1 << 1,       /* the file's own .debug_frame */
	UNWIND_SRC_DEBUG_FILE = 1 << 2,        /* .debug_frame of the separate debug file */
	UNWIND_SRC_SYMBOLS = 1 << 3,           /* at least one symbol-based STOP/SIGNAL rule */
	UNWIND_SRC_EH_FRAME_HDR_ONLY = 1 << 4, /* .eh_frame only reachable via PT_GNU_EH_FRAME */
	UNWIND_SRC_GOPCLNTAB = 1 << 5,         /* stack deltas of Go functions (.gopclntab pcsp) */
};

struct unwind_table_stats {
	unsigned int sources; /* enum unwind_source bits actually used */
	size_t cie_cnt;
	size_t fde_cnt; /* FDEs interpreted into rows */
	size_t bad_cie_cnt;
	size_t bad_fde_cnt;      /* FDEs skipped: corrupt entry or instructions */
	size_t bad_insn_fde_cnt; /* of bad_fde_cnt: FDEs whose instructions failed */
	size_t overlap_fde_cnt;  /* FDEs partly or fully hidden by a higher-priority one */
	size_t row_cnt;
	size_t unique_rule_cnt;     /* distinct struct unwind_rule values among the rows */
	size_t unsupported_row_cnt; /* rows whose rule is UNWIND_RULE_UNSUPPORTED */
	size_t stop_row_cnt;
	size_t signal_row_cnt;
	size_t plt_row_cnt;
	size_t deref_row_cnt;
	size_t rbp_lost_cnt;  /* CFI rows whose rbp rule could not be expressed */
	size_t args_size_cnt; /* DW_CFA_GNU_args_size instructions seen */
	size_t max_remember_depth;
	size_t truncated_section_cnt; /* CFI sections whose walk ended on a corrupt length */
	size_t go_func_cnt;           /* Go functions turned into rows (.gopclntab) */
	size_t bad_go_func_cnt;       /* Go functions skipped: corrupt entry or pcsp table */
	size_t entry_mark_cnt;   /* function entries without CFI given the entry rule (endbr64) */
	size_t clone_return_cnt; /* clone()/clone3() parent returns given their rule */
};

/* Malformed CFI entries a build skipped: bad CIEs, bad FDEs (entry or instructions) and one
 * per section cut short by a corrupt length (the entries after it are unknown). 0 for a
 * well-formed file.
 */
size_t unwind_table_stats__malformed(const struct unwind_table_stats *st);

struct unwind_table_opts {
	size_t max_rows;   /* cap on rows (intermediate and final); 0: UNWIND_TABLE_MAX_ROWS */
	bool no_symbols;   /* CFI only: no symbol-based STOP/SIGNAL rules */
	bool no_gopclntab; /* no Go stack deltas (.gopclntab) */
	uint16_t machine;  /* unwind_table__from_sections() only: EM_AARCH64 for arm64 rules
			    * (an ELF file's own e_machine decides otherwise) */
};

#define UNWIND_TABLE_MAX_ROWS ((size_t)1 << 25)

/* Build the table of ef, adding the .debug_frame of debug_ef (nullable; a separate debug
 * file for the same build). Returns 0 and *out (owned by the caller, unwind_table__free()),
 * -ENOENT when the file has no usable CFI at all (and no symbol rule), -E2BIG over the row
 * cap, -ENOMEM. Corrupt CFI is skipped and counted in the stats, never fatal.
 */
int unwind_table__build(struct elf_file *ef, struct elf_file *debug_ef, struct unwind_table **out);
int unwind_table__build_opts(struct elf_file *ef, struct elf_file *debug_ef,
			     const struct unwind_table_opts *opts, struct unwind_table **out);

/* Build from CFI sections given as bytes, secs[0] having the highest priority (tests and
 * fuzzing; no symbol rules). Same results as unwind_table__build(); an empty result is not
 * an error here.
 */
int unwind_table__from_sections(const struct cfi_section *secs, size_t sec_cnt,
				const struct unwind_table_opts *opts, struct unwind_table **out);

/* A table from rows stored earlier (the on-disk cache): checked to be sorted and to hold
 * known rule kinds only; 0, -EINVAL, -E2BIG or -ENOMEM. Stats other than row_cnt are 0.
 */
int unwind_table__from_rows(const struct unwind_row *rows, size_t cnt, struct unwind_table **out);
/* The same without a copy: on success the table owns rows (malloc'ed), on error the caller. */
int unwind_table__adopt_rows(struct unwind_row *rows, size_t cnt, struct unwind_table **out);

/* A table whose cnt rows lie in the file fd (duplicated: the caller keeps its own) from
 * offset on, read a window at a time, never whole (the on-disk cache: a giant's cached
 * table goes to the BPF maps without its 24 MiB in memory). Not checked here: the caller
 * checked the rows (unwind_rows__check()) as it read them; a file found shorter later
 * makes the reads fail (-EIO). 0, -E2BIG, -ENOMEM, or fcntl's -errno.
 */
int unwind_table__from_file(int fd, uint64_t offset, size_t cnt, struct unwind_table **out);
/* Check a window of stored rows, the `done` rows before it having been checked already
 * (*last_addr: the last one's address, updated): sorted, known rule kinds, within the row
 * cap. 0, -EINVAL, -E2BIG.
 */
int unwind_rows__check(const struct unwind_row *rows, size_t cnt, size_t done, uint64_t *last_addr);

void unwind_table__free(struct unwind_table *t);

size_t unwind_table__row_cnt(const struct unwind_table *t);
/* Copy rows [first, first + cnt) into buf; 0, -ERANGE, -EIO (a file table's file shrank).
 * What the agent reads tables with: a built table holds its rows packed (an address and a
 * rule index), a cached one in its file, so a window costs only buf.
 */
int unwind_table__read_rows(const struct unwind_table *t, size_t first, size_t cnt,
			    struct unwind_row *buf);

/* Rows and stats are borrowed: valid until unwind_table__free(). The rows are the whole
 * table as one array, made on the first call for a built or file table (tests, fuzzing:
 * 24 bytes a row; NULL with *cnt 0 when that fails).
 */
const struct unwind_row *unwind_table__rows(const struct unwind_table *t, size_t *cnt);
const struct unwind_table_stats *unwind_table__stats(const struct unwind_table *t);

/* The row in force at addr, or NULL when addr is below the first row (through
 * unwind_table__rows(): tests).
 */
const struct unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t addr);

/* Sequential reading of a table a window at a time: row i stays valid until a row outside
 * the current window is asked for. NULL past the end, or on a read error (c->err).
 */
#define UNWIND_ROW_WINDOW 2048
struct unwind_row_cursor {
	const struct unwind_table *t;
	size_t first, cnt; /* the rows in buf */
	int err;
	struct unwind_row buf[UNWIND_ROW_WINDOW];
};

void unwind_row_cursor__init(struct unwind_row_cursor *c, const struct unwind_table *t);
const struct unwind_row *unwind_row_cursor__get(struct unwind_row_cursor *c, size_t i);

#endif
