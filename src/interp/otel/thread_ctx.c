/* OpenTelemetry's thread context (OTEP 4947), as a runtime of src/interp/interp.h that emits no
 * frames: finds the files that define the TLS variable `otel_thread_ctx_v1` and tells eBPF, per
 * process, where a thread's copy of it is (bpf/interp/otel/thread_ctx.h reads it into each
 * sample; bpf/interp/otel/bpf_abi.h has the layout).
 *
 * Per file (its .dynsym, else .symtab: a defined STT_TLS symbol of that name; its value is the
 * variable's offset in the file's TLS block), how the file's own code reaches it:
 *  - R_X86_64_TLSDESC (the OTEP's recommended dialect, -mtls-dialect=gnu2): a two-word GOT
 *    descriptor that ld.so fills at relocation: for static TLS (the executable and the
 *    libraries loaded at start-up) the resolver returns its argument, the variable's offset
 *    from the thread pointer; for a dlopen()ed library the argument points to ld.so's
 *    {module id, offset in the module's block, generation};
 *  - R_X86_64_DTPMOD64 (legacy General Dynamic): the GOT word ld.so fills with the module id;
 *    the offset in the block is the symbol's value;
 *  - R_X86_64_TPOFF64 (initial-exec): the GOT word holds the offset from the thread pointer;
 *  - none of them in an executable (local-exec: the linker resolved it): glibc puts the
 *    executable's block (module 1) right below the thread pointer, at
 *    -roundup(PT_TLS memsz, PT_TLS align), so the offset is value - that.
 * Per process: the absolute address of that GOT slot (eBPF reads what ld.so wrote there at each
 * sample: bpf/interp/otel/bpf_abi.h), or the local-exec offset.
 *
 * Untrusted input: the file through elf_file (bounded by its sections), the process's memory
 * (words checked before use); eBPF reads the thread's memory with its own checks.
 */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "formats/elf_file.h"
#include "interp/common/interp_elf.h"
#include "interp/common/runtime_counters.h"
#include "interp/interp.h"
#include "proc/executable.h"

#define OTEL_TLS_SYMBOL "otel_thread_ctx_v1"
#define OTEL_TLS_OFF_MAX OTEL_TP_OFF_MAX /* |offset from the thread pointer|, in a block */
#define OTEL_RELA_MAX (1u << 20)         /* .rela.dyn entries searched */

enum otel_access {
	OTEL_ACCESS_TLSDESC = 1,
	OTEL_ACCESS_DTPMOD = 2,
	OTEL_ACCESS_TPOFF = 3,
	OTEL_ACCESS_LOCAL_EXEC = 4,
};

struct otel_file {
	struct interp_file_base base;
	uint8_t access;  /* enum otel_access */
	uint64_t value;  /* the symbol's value: its offset in the file's TLS block */
	uint64_t addend; /* the relocation's */
	uint64_t got;    /* vaddr of the relocated GOT word(s) */
	int64_t le_off;  /* OTEL_ACCESS_LOCAL_EXEC: the offset from the thread pointer */
};

#define OTEL_STATS(X)                                                               \
	/* files defining the variable whose code reaches it in no way read here */ \
	X(OTEL_STAT_NO_ACCESS, "files without TLS access")

enum otel_stat { OTEL_STATS(INTERP_LIST_ENUM) OTEL_STAT_CNT };

struct otel_rt {
	uint64_t stats[OTEL_STAT_CNT];
};

/* The relocation of section `name` against dynsym index `sym` of one of the three TLS types. */
static int find_rela_in(struct elf_file *ef, const char *name, size_t sym, struct otel_file *f)
{
	struct elf_section rela;
	Elf64_Rela r;
	size_t i, n;

	if (elf_file__section(ef, name, &rela) || !rela.data)
		return -ENOENT;
	n = rela.size / sizeof(Elf64_Rela);
	if (n > OTEL_RELA_MAX)
		n = OTEL_RELA_MAX;
	for (i = 0; i < n; i++) {
		memcpy(&r, (const uint8_t *)rela.data + i * sizeof(r), sizeof(r));
		if (ELF64_R_SYM(r.r_info) != sym)
			continue;
		switch (ELF64_R_TYPE(r.r_info)) {
		case R_X86_64_TLSDESC:
			f->access = OTEL_ACCESS_TLSDESC;
			break;
		case R_X86_64_DTPMOD64:
			f->access = OTEL_ACCESS_DTPMOD;
			break;
		case R_X86_64_TPOFF64:
			f->access = OTEL_ACCESS_TPOFF;
			break;
		default:
			continue;
		}
		f->got = r.r_offset;
		f->addend = (uint64_t)r.r_addend;
		return 0;
	}
	return -ENOENT;
}

/* TLSDESC relocations may sit in .rela.plt (lazy binding's section), the others in .rela.dyn. */
static int find_rela(struct elf_file *ef, size_t sym, struct otel_file *f)
{
	return find_rela_in(ef, ".rela.dyn", sym, f) ? find_rela_in(ef, ".rela.plt", sym, f) : 0;
}

/* PT_TLS's p_align, read from the file's program headers (struct elf_segment has none). */
static uint64_t tls_align(int fd)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint16_t i;

	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    eh.e_phentsize != sizeof(ph) || eh.e_phnum > 256)
		return 0;
	for (i = 0; i < eh.e_phnum; i++)
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) ==
			    (ssize_t)sizeof(ph) &&
		    ph.p_type == PT_TLS)
			return ph.p_align ? ph.p_align : 1;
	return 0;
}

/* An executable's local-exec offset: glibc puts module 1's block right below the thread
 * pointer, at -roundup(PT_TLS memsz, p_align) (x86-64, a block whose start is aligned).
 */
static int local_exec_offset(const struct executable *exe, uint64_t value, int64_t *out)
{
	const struct elf_segment *seg;
	uint64_t block = 0, vaddr = 0, align;
	bool interp = false;
	size_t i;

	for (i = 0; i < elf_file__segment_cnt(exe->elf); i++) {
		seg = elf_file__segment(exe->elf, i);
		if (seg->type == PT_INTERP)
			interp = true;
		if (seg->type == PT_TLS) {
			block = seg->memsz;
			vaddr = seg->vaddr;
		}
	}
	if ((!interp && elf_file__type(exe->elf) != ET_EXEC) || !block ||
	    block > OTEL_TLS_OFF_MAX || value >= block)
		return -ENOENT;
	align = tls_align(exe->fd);
	if (!align || align > 4096 || (align & (align - 1)) || (vaddr & (align - 1)))
		return -ENOENT;
	*out = (int64_t)value - (int64_t)((block + align - 1) & ~(align - 1));
	return 0;
}

static int otel_file_detect(void *rt, const struct executable *exe, void *file_state,
			    struct interp_file *bpf)
{
	static const char *const names[] = { OTEL_TLS_SYMBOL };
	struct otel_rt *o = rt;
	struct otel_file *f = file_state;
	struct interp_sym sym;

	if (!exe->elf || elf_file__machine(exe->elf) != EM_X86_64)
		return -ENOENT;
	interp_elf__symbols(exe->elf, names, 1, &sym);
	if (!sym.found || sym.type != STT_TLS)
		return -ENOENT;
	f->value = sym.addr;
	if (!(sym.in_dynsym && !find_rela(exe->elf, sym.index, f)) &&
	    !local_exec_offset(exe, sym.addr, &f->le_off))
		f->access = OTEL_ACCESS_LOCAL_EXEC;
	if (!f->access) {
		o->stats[OTEL_STAT_NO_ACCESS]++;
		pr_debug("otel: %s: %s found, but not how its code reaches it\n", exe->path,
			 OTEL_TLS_SYMBOL);
		return -ENOENT;
	}
	bpf->supported = 1;
	bpf->major = 1;
	pr_debug("otel: %s: %s at %#llx of its TLS block (access %u)\n", exe->path, OTEL_TLS_SYMBOL,
		 (unsigned long long)sym.addr, f->access);
	return 0;
}

/* The eBPF entry: where the GOT slot(s) are in this process, read at each sample. */
static int otel_proc_attach(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			    void *proc_state, struct interp_proc *bpf)
{
	const struct otel_file *f = file_state;
	struct otel_proc_abi *o = &bpf->otel;

	(void)rt, (void)now_ns, (void)proc_state;
	memset(o, 0, sizeof(*o));
	o->got = bias + f->got;
	switch (f->access) {
	case OTEL_ACCESS_LOCAL_EXEC:
		o->mode = OTEL_TLS_STATIC;
		o->tp_off = f->le_off;
		o->got = 0;
		break;
	case OTEL_ACCESS_TLSDESC:
		o->mode = OTEL_TLS_TLSDESC;
		o->dtv_off = f->value + f->addend;
		break;
	case OTEL_ACCESS_DTPMOD:
		o->mode = OTEL_TLS_DTPMOD;
		o->dtv_off = f->value;
		break;
	case OTEL_ACCESS_TPOFF:
		o->mode = OTEL_TLS_TPOFF;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

const struct interp_runtime otel_runtime = {
	.name = "otel",
	.frame_type = "native",
	.frame_kind = FRAME_KIND_OTEL,
	INTERP_RUNTIME_COUNTERS(OTEL_COUNTERS, OTEL_COUNTER_CNT, OTEL_STATS, struct otel_rt),
	.file_state_sz = sizeof(struct otel_file),
	.file_detect = otel_file_detect,
	.proc_attach = otel_proc_attach,
	.symbolize = NULL, /* it emits no frames, only the span */
};
