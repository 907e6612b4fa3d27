/* Go's runtime, as a runtime of src/interp/interp.h: finds Go executables among the mapped
 * files and tells eBPF, per process, where the runtime keeps the running goroutine and its
 * pprof labels (bpf/interp/go/labels.h reads them into each sample; bpf/interp/go/bpf_abi.h has
 * the layouts). Go code itself is native code: names, lines and unwind rules come from
 * .gopclntab (gopclntab.c), not from here, so this runtime emits no frames.
 *
 * Per executable:
 *  - the Go version: the build info blob (`\xff Go buildinf:`, section .go.buildinfo; its
 *    inline version string since Go 1.18, a pointer to runtime.buildVersion in 1.13-1.17),
 *    else the runtime.buildVersion string in .rodata ("go1.26.5" between non-printable bytes:
 *    binaries whose build info was removed, as esbuild's), checked against the .gopclntab
 *    format (1.2-1.15, 1.16-1.17, 1.18-1.19, 1.20+);
 *  - g's TLS slot: the displacement of `mov %fs:disp32, %reg` (or, in a PIE, of the
 *    `mov $disp32, %reg` before `mov %fs:(%reg), ...`) that runtime.stackcheck starts with
 *    (-8 in every binary measured: internal and external linking, PIE);
 *  - the offsets of g.m, m.curg and g.labels per version (runtime/runtime2.go of each release,
 *    as the reference agent records them; checked against the DWARF of unstripped builds:
 *    1.15 curg 192, labels 344; 1.19 curg 192, labels 360; 1.27's g and m up to curg are
 *    1.26's).
 * 1.16's labels at 344 and 1.17's at 360 are the reference agent's figures, not checked here
 * (no Go of those versions on this machine; their tables are, on npm's esbuild builds).
 * Versions before GO_MINOR_MIN (1.12-1.14: other g layouts, not measured) and after
 * GO_MINOR_MAX are not attached.
 *
 * Untrusted input: the file's bytes are read through elf_file, bounded by their section or
 * segment; a version string is at most GO_VERSION_MAX bytes of [0-9.].
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "formats/elf_file.h"
#include "formats/gopclntab.h"
#include "interp/common/runtime_counters.h"
#include "interp/interp.h"
#include "proc/executable.h"

#define GO_VERSION_MAX 32
#define GO_MINOR_MIN 15
#define GO_MINOR_MAX 27
#define GO_RODATA_SCAN_MAX (64u << 20) /* bytes of .rodata searched for the version string */
#define GO_BUILDINFO_MAGIC "\xff Go buildinf:"
#define GO_BUILDINFO_HDR 32
#define GO_BUILDINFO_BIG_ENDIAN 0x1 /* flags */
#define GO_BUILDINFO_INLINE 0x2     /* flags: the version and module strings follow the header */

struct go_file {
	struct interp_file_base base;
	int minor;     /* Go 1.<minor> */
	int32_t tls_g; /* g's TLS slot relative to fsbase */
};

#define GO_STATS(X)                                          \
	/* Go executables whose version could not be read */ \
	X(GO_STAT_NO_VERSION, "executables without version") \
	/* ... whose g TLS slot could not be found */        \
	X(GO_STAT_NO_TLS, "executables without g slot")

enum go_stat { GO_STATS(INTERP_LIST_ENUM) GO_STAT_CNT };

struct go_rt {
	uint64_t stats[GO_STAT_CNT];
};

/* "go1.<minor>[.patch]" of len bytes: the minor version, or -1. */
static int parse_version(const char *s, size_t len)
{
	int minor = 0;
	size_t i = 4;

	if (len < 5 || len > GO_VERSION_MAX || memcmp(s, "go1.", 4))
		return -1;
	for (; i < len && s[i] >= '0' && s[i] <= '9' && minor < 1000; i++)
		minor = minor * 10 + (s[i] - '0');
	if (i == 4 || (i < len && s[i] != '.'))
		return -1;
	for (; i < len; i++)
		if (s[i] != '.' && (s[i] < '0' || s[i] > '9'))
			return -1;
	return minor;
}

/* The version in the build info blob: minor, or -1. Go 1.18+ writes the string inline after
 * the 32-byte header; Go 1.13-1.17 write, after the 16-byte magic and flags, the address of
 * runtime.buildVersion (a string header: pointer, length; 8-byte pointers, little-endian).
 */
static int version_from_buildinfo(struct elf_file *ef)
{
	struct elf_section sec;
	const uint8_t *p;
	const void *data;
	size_t len = 0, at = GO_BUILDINFO_HDR + 1, avail;
	uint64_t str[2], addr;

	if (elf_file__section(ef, ".go.buildinfo", &sec) || !sec.data ||
	    sec.size < GO_BUILDINFO_HDR || memcmp(sec.data, GO_BUILDINFO_MAGIC, 14))
		return -1;
	p = sec.data;
	if (!(p[15] & GO_BUILDINFO_INLINE)) {
		if (p[14] != 8 || (p[15] & GO_BUILDINFO_BIG_ENDIAN))
			return -1;
		memcpy(&addr, p + 16, sizeof(addr));
		if (elf_file__bytes_at_vaddr(ef, addr, &data, &avail) || avail < sizeof(str))
			return -1;
		memcpy(str, data, sizeof(str));
		if (str[1] > GO_VERSION_MAX ||
		    elf_file__bytes_at_vaddr(ef, str[0], &data, &avail) || avail < str[1])
			return -1;
		return parse_version(data, (size_t)str[1]);
	}
	if (sec.size < GO_BUILDINFO_HDR + 1)
		return -1;
	/* a one-byte uvarint length: version strings are short */
	len = p[GO_BUILDINFO_HDR];
	if (len & 0x80 || len > sec.size - at)
		return -1;
	return parse_version((const char *)p + at, len);
}

static bool version_char(uint8_t c)
{
	return c == '.' || (c >= '0' && c <= '9');
}

/* runtime.buildVersion's bytes in .rodata: "go1.N[.M]" with a non-printable byte on each side
 * (Go packs its strings without separators, so a match inside other text is refused).
 */
static int version_from_rodata(struct elf_file *ef)
{
	struct elf_section sec;
	const uint8_t *p, *end, *hit;
	size_t n;
	int minor;

	if (elf_file__section(ef, ".rodata", &sec) || !sec.data)
		return -1;
	p = sec.data;
	n = sec.size < GO_RODATA_SCAN_MAX ? sec.size : GO_RODATA_SCAN_MAX;
	end = p + n;
	for (hit = p + 1; hit + 5 < end; hit++) {
		const uint8_t *e;

		hit = memmem(hit, (size_t)(end - hit), "go1.", 4);
		if (!hit)
			break;
		if (hit == p || (hit[-1] >= 0x20 && hit[-1] < 0x7f))
			continue;
		for (e = hit + 4; e < end && e - hit <= GO_VERSION_MAX && version_char(*e); e++)
			;
		if (e == end || (*e >= 0x20 && *e < 0x7f))
			continue;
		minor = parse_version((const char *)hit, (size_t)(e - hit));
		if (minor >= 0)
			return minor;
	}
	return -1;
}

/* The .gopclntab format Go 1.<minor> writes (0: one not read). */
static enum gopclntab_version format_of(int minor)
{
	if (minor >= 20)
		return GOPCLNTAB_V120;
	if (minor >= 18)
		return GOPCLNTAB_V118;
	if (minor >= 16)
		return GOPCLNTAB_V116;
	if (minor >= 2)
		return GOPCLNTAB_V12;
	return 0;
}

/* g's slot relative to fsbase, from the first instruction(s) of runtime.stackcheck:
 * `mov %fs:disp32, %reg` (64 48 8b /r with modrm mod 00 r/m 100, SIB 0x25: no base, no index)
 * in executables, `mov $disp32, %reg; mov %fs:(%reg), %reg2` in PIEs. 0 or -ENOENT (the
 * RIP-relative form of some external links, whose offset is in a GOT slot, is not read).
 */
static int tls_g_offset(struct elf_file *ef, struct gopclntab *t, int32_t *out)
{
	size_t i, cnt = gopclntab__func_cnt(t), avail;
	const uint8_t *code;
	struct go_func fn;
	const void *data;
	int32_t disp;

	for (i = 0; i < cnt; i++) {
		if (gopclntab__func(t, i, &fn) || !fn.name)
			continue;
		if (strcmp(fn.name, "runtime.stackcheck") &&
		    strcmp(fn.name, "runtime.stackcheck.abi0"))
			continue;
		if (elf_file__bytes_at_vaddr(ef, fn.entry, &data, &avail) || avail < 9)
			return -ENOENT;
		code = data;
		if (code[0] == 0x64 && code[1] == 0x48 && code[2] == 0x8b &&
		    (code[3] & 0xc7) == 0x04 && code[4] == 0x25) {
			memcpy(&disp, code + 5, sizeof(disp));
			*out = disp;
			return 0;
		}
		/* PIE: mov $disp32, %reg (48 c7 /0, mod 11); mov %fs:(%reg), %reg2 (64 48 8b /r,
		 * mod 00, r/m = reg: not rsp/rbp, which would need a SIB or a displacement)
		 */
		if (avail >= 11 && code[0] == 0x48 && code[1] == 0xc7 && (code[2] & 0xf8) == 0xc0 &&
		    code[7] == 0x64 && code[8] == 0x48 && code[9] == 0x8b &&
		    (code[10] & 0xc7) == (code[2] & 0x07) && (code[2] & 0x07) != 4 &&
		    (code[2] & 0x07) != 5) {
			memcpy(&disp, code + 3, sizeof(disp));
			*out = disp;
			return 0;
		}
		return -ENOENT;
	}
	return -ENOENT;
}

/* Offsets of g.m, m.curg, g.labels and the labels' layout for Go 1.<minor>. */
static void layout_of(int minor, struct go_proc_abi *abi)
{
	abi->g_m = 48;
	abi->m_curg = minor >= 25 ? 184 : 192; /* 1.25 dropped gobuf.ret from m.morebuf */
	if (minor >= 26 || minor == 23 || minor == 24)
		abi->g_labels = 352;
	else if (minor == 25 || minor >= 21)
		abi->g_labels = 344;
	else if (minor >= 17)
		abi->g_labels = 360; /* 1.17-1.20 */
	else
		abi->g_labels = 344; /* 1.15 (DWARF), 1.16 */
	abi->labels_layout = minor >= 24 ? GO_LABELS_SLICE : GO_LABELS_HMAP;
	abi->m_g0 = 0;
	abi->g_sched_sp = 56; /* g.sched (a gobuf: sp, pc, g, ctxt, ret, lr, bp) after g.m */
	abi->g_sched_pc = 64;
	abi->g_sched_bp = minor >= 25 ? 96 : 104;    /* 1.25 dropped gobuf.ret */
	abi->g_syscall_sp = minor >= 25 ? 104 : 112; /* right after g.sched (1.19: DWARF) */
	abi->g_syscall_pc = abi->g_syscall_sp + 8;
}

static int go_file_detect(void *rt, const struct executable *exe, void *file_state,
			  struct interp_file *bpf)
{
	struct go_rt *g = rt;
	struct go_file *f = file_state;
	struct gopclntab *t;
	int minor, err = -ENOENT;
	int32_t tls = 0;

	if (!exe->elf)
		return -ENOENT;
	t = gopclntab__open(exe->elf);
	if (!t)
		return -ENOENT;
	minor = version_from_buildinfo(exe->elf);
	if (minor < 0)
		minor = version_from_rodata(exe->elf);
	/* the version must agree with the table's format */
	if (minor >= 0 && format_of(minor) != gopclntab__version(t))
		minor = -1;
	if (minor < 0) {
		g->stats[GO_STAT_NO_VERSION]++;
		pr_debug("go: %s: no Go version found: no labels\n", exe->path);
		goto out;
	}
	if (tls_g_offset(exe->elf, t, &tls)) {
		g->stats[GO_STAT_NO_TLS]++;
		pr_debug("go: %s: g's TLS slot not found: no labels\n", exe->path);
		goto out;
	}
	f->minor = minor;
	f->tls_g = tls;
	bpf->major = 1;
	bpf->minor = (uint8_t)minor;
	bpf->supported = minor >= GO_MINOR_MIN && minor <= GO_MINOR_MAX;
	err = 0;
	pr_debug("go: %s: Go 1.%d, g at fs%+d\n", exe->path, minor, (int)tls);
out:
	gopclntab__free(t);
	return err;
}

/* Everything is in the eBPF entry: no per-process state. */
static int go_proc_attach(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			  void *proc_state, struct interp_proc *bpf)
{
	const struct go_file *f = file_state;

	(void)rt, (void)bias, (void)now_ns, (void)proc_state;
	layout_of(f->minor, &bpf->go);
	bpf->go.tls_g = f->tls_g;
	return 0;
}

const struct interp_runtime go_runtime = {
	.name = "go",
	.frame_type = "go",
	.frame_kind = FRAME_KIND_GO,
	INTERP_RUNTIME_COUNTERS(GO_COUNTERS, GO_COUNTER_CNT, GO_STATS, struct go_rt),
	.file_state_sz = sizeof(struct go_file),
	.file_detect = go_file_detect,
	.proc_attach = go_proc_attach,
	.symbolize = NULL, /* it emits no frames, only labels */
};
