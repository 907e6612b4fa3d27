/* Read-only access to a 64-bit little-endian ELF image, parsed by hand (no libelf).
 *
 * A file opened by path or fd is mapped read-only (MAP_PRIVATE, guarded); an in-memory image is
 * copied.
 * The ELF header, program headers and section headers are copied into aligned arrays at open
 * time, so nothing later dereferences a possibly misaligned header inside the image.
 *
 * Invariants:
 * - every offset/size read from the image is checked against image_sz before use, with
 *   overflow-checked arithmetic; a bad program header table fails the open, a bad section
 *   header table only marks sections unusable (sh_corrupt) so notes/segments still work;
 * - section data handed out points into the image or into inflated[i], both owned by the
 *   elf_file and valid until elf_file__free(); a section is decompressed at most once (a
 *   failure is remembered and not retried);
 * - decompressed sizes are capped (ELF_FILE_INFLATE_MAX and zlib's maximum ratio), so a forged
 *   header cannot make us allocate more than that.
 *
 * A file opened by path or fd is mapped through base/file_map.h: if someone truncates it while
 * it is open, the pages past its new end read as zeros instead of raising SIGBUS, and
 * elf_file__changed() says so.
 */
#include "formats/elf_file.h"

#include "base/file_map.h"
#include "base/hex.h"
#include "base/safe_open.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define ELF_FILE_INFLATE_MAX (1ULL << 30) /* largest decompressed section we accept */
#define ELF_FILE_ZLIB_RATIO 1032ULL       /* deflate cannot expand beyond ~1032:1 */
#define ELF_FILE_NAME_MAX 256             /* longest section name we build for .zdebug_ */

#ifndef SHF_COMPRESSED
#define SHF_COMPRESSED (1 << 11)
#endif

struct elf_file {
	const uint8_t *image;
	size_t image_sz;
	bool mapped; /* munmap() vs free() */

	uint16_t type;
	uint16_t machine;
	uint64_t entry; /* e_entry */

	struct elf_segment *segs;
	size_t seg_cnt;

	Elf64_Shdr *shdrs;
	size_t sh_cnt;
	bool sh_corrupt;
	const char *shstr; /* section name string table, NULL if unusable */
	size_t shstr_sz;

	void **inflated; /* per section: decompressed data or NULL */
	size_t *inflated_sz;
	uint8_t *inflate_failed; /* per section: decompression failed once */

	uint8_t build_id[ELF_BUILD_ID_MAX];
	size_t build_id_sz; /* 0: none */
};

/* Is [off, off + len) inside an object of size total? */
static bool range_ok(uint64_t off, uint64_t len, uint64_t total)
{
	return off <= total && len <= total - off;
}

static uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t load_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

/* ---- notes ---- */

/* Find NT_GNU_BUILD_ID in a note area; copies the id into ef and returns true if found. */
static bool elf_file__scan_notes(struct elf_file *ef, const uint8_t *p, uint64_t size,
				 uint64_t align)
{
	uint64_t off = 0;

	if (align != 8)
		align = 4;
	while (size >= 12 && off <= size - 12) {
		uint32_t namesz = load_le32(p + off);
		uint32_t descsz = load_le32(p + off + 4);
		uint32_t type = load_le32(p + off + 8);
		uint64_t name_off = off + 12;
		uint64_t desc_off = name_off + ((namesz + align - 1) & ~(align - 1));
		uint64_t next = desc_off + ((descsz + align - 1) & ~(align - 1));

		/* all terms < 2^33 beyond off <= size, so none of the sums above overflow */
		if (!range_ok(name_off, namesz, size) || !range_ok(desc_off, descsz, size))
			return false;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + name_off, "GNU", 4) &&
		    descsz > 0 && descsz <= ELF_BUILD_ID_MAX) {
			memcpy(ef->build_id, p + desc_off, descsz);
			ef->build_id_sz = descsz;
			return true;
		}
		if (next <= off)
			return false;
		off = next;
	}
	return false;
}

/* Section notes first: a separate debug file keeps the original program headers, whose
 * PT_NOTE offsets point at bytes that are not in it. PT_NOTE covers files without sections.
 */
static void elf_file__find_build_id(struct elf_file *ef)
{
	for (size_t i = 0; i < ef->sh_cnt; i++) {
		const Elf64_Shdr *sh = &ef->shdrs[i];

		if (sh->sh_type != SHT_NOTE || !range_ok(sh->sh_offset, sh->sh_size, ef->image_sz))
			continue;
		if (elf_file__scan_notes(ef, ef->image + sh->sh_offset, sh->sh_size,
					 sh->sh_addralign))
			return;
	}
	for (size_t i = 0; i < ef->seg_cnt; i++) {
		const struct elf_segment *seg = &ef->segs[i];

		if (seg->type != PT_NOTE || !range_ok(seg->offset, seg->filesz, ef->image_sz))
			continue;
		/* p_align is not in struct elf_segment; 8-aligned notes have an 8-aligned size */
		if (elf_file__scan_notes(ef, ef->image + seg->offset, seg->filesz, 4))
			return;
		if (elf_file__scan_notes(ef, ef->image + seg->offset, seg->filesz, 8))
			return;
	}
}

/* ---- headers ---- */

/* Copy and check the section header table; failures only mark the sections unusable. */
static int elf_file__load_shdrs(struct elf_file *ef, const Elf64_Ehdr *eh, uint32_t *xphnum)
{
	Elf64_Shdr sh0;
	uint64_t cnt, shstrndx, bytes;

	*xphnum = 0;
	if (!eh->e_shoff)
		return 0;
	if (eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !range_ok(eh->e_shoff, sizeof(Elf64_Shdr), ef->image_sz))
		goto corrupt;
	memcpy(&sh0, ef->image + eh->e_shoff, sizeof(sh0));
	cnt = eh->e_shnum ? eh->e_shnum : sh0.sh_size;
	shstrndx = eh->e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh->e_shstrndx;
	*xphnum = sh0.sh_info;
	if (cnt == 0 || cnt > ef->image_sz / sizeof(Elf64_Shdr))
		goto corrupt;
	bytes = cnt * sizeof(Elf64_Shdr);
	if (!range_ok(eh->e_shoff, bytes, ef->image_sz))
		goto corrupt;

	ef->shdrs = malloc(bytes);
	ef->inflated = calloc(cnt, sizeof(*ef->inflated));
	ef->inflated_sz = calloc(cnt, sizeof(*ef->inflated_sz));
	ef->inflate_failed = calloc(cnt, 1);
	if (!ef->shdrs || !ef->inflated || !ef->inflated_sz || !ef->inflate_failed)
		return -ENOMEM;
	memcpy(ef->shdrs, ef->image + eh->e_shoff, bytes);
	ef->sh_cnt = cnt;

	if (shstrndx < cnt) {
		const Elf64_Shdr *ss = &ef->shdrs[shstrndx];

		if (ss->sh_type != SHT_NOBITS && ss->sh_size > 0 &&
		    range_ok(ss->sh_offset, ss->sh_size, ef->image_sz)) {
			ef->shstr = (const char *)ef->image + ss->sh_offset;
			ef->shstr_sz = ss->sh_size;
		}
	}
	return 0;

corrupt:
	ef->sh_corrupt = true;
	return 0;
}

static int elf_file__load_phdrs(struct elf_file *ef, const Elf64_Ehdr *eh, uint32_t xphnum)
{
	uint64_t cnt = eh->e_phnum == PN_XNUM ? xphnum : eh->e_phnum;

	if (cnt == 0)
		return 0;
	if (eh->e_phentsize != sizeof(Elf64_Phdr) || cnt > ef->image_sz / sizeof(Elf64_Phdr) ||
	    !range_ok(eh->e_phoff, cnt * sizeof(Elf64_Phdr), ef->image_sz))
		return -ENOEXEC;
	ef->segs = calloc(cnt, sizeof(*ef->segs));
	if (!ef->segs)
		return -ENOMEM;
	for (size_t i = 0; i < cnt; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, ef->image + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		ef->segs[i] = (struct elf_segment){
			.type = ph.p_type,
			.flags = ph.p_flags,
			.offset = ph.p_offset,
			.vaddr = ph.p_vaddr,
			.filesz = ph.p_filesz,
			.memsz = ph.p_memsz,
		};
	}
	ef->seg_cnt = cnt;
	return 0;
}

/* Takes ownership of image (mapped or malloc'ed) even on failure. */
static struct elf_file *elf_file__from_image(const uint8_t *image, size_t size, bool mapped)
{
	struct elf_file *ef;
	Elf64_Ehdr eh;
	uint32_t xphnum;
	int err;

	ef = calloc(1, sizeof(*ef));
	if (!ef) {
		if (mapped)
			file_map__close(image, size);
		else
			free((void *)image);
		errno = ENOMEM;
		return NULL;
	}
	ef->image = image;
	ef->image_sz = size;
	ef->mapped = mapped;

	err = -ENOEXEC;
	if (size < sizeof(eh))
		goto cleanup;
	memcpy(&eh, image, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ident[EI_VERSION] != EV_CURRENT)
		goto cleanup;
	ef->type = eh.e_type;
	ef->machine = eh.e_machine;
	ef->entry = eh.e_entry;

	err = elf_file__load_shdrs(ef, &eh, &xphnum);
	if (err)
		goto cleanup;
	err = elf_file__load_phdrs(ef, &eh, xphnum);
	if (err)
		goto cleanup;
	elf_file__find_build_id(ef);
	return ef;

cleanup:
	elf_file__free(ef);
	errno = -err;
	return NULL;
}

struct elf_file *elf_file__open_fd(int fd)
{
	struct stat st;
	void *image;

	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > SIZE_MAX) {
		errno = ENOEXEC;
		return NULL;
	}
	image = (void *)file_map__open(fd, st.st_size);
	if (!image)
		return NULL;
	return elf_file__from_image(image, st.st_size, true);
}

struct elf_file *elf_file__open(const char *path)
{
	struct elf_file *ef;
	int fd, err;

	fd = safe_open(path);
	if (fd < 0) {
		errno = fd == -EINVAL ? ENOEXEC : -fd;
		return NULL;
	}
	ef = elf_file__open_fd(fd);
	err = errno;
	close(fd);
	errno = err;
	return ef;
}

struct elf_file *elf_file__open_mem(const void *image, size_t size)
{
	uint8_t *copy;

	if (!image || size == 0) {
		errno = ENOEXEC;
		return NULL;
	}
	copy = malloc(size);
	if (!copy)
		return NULL;
	memcpy(copy, image, size);
	return elf_file__from_image(copy, size, false);
}

void elf_file__free(struct elf_file *ef)
{
	if (!ef)
		return;
	if (ef->inflated) {
		for (size_t i = 0; i < ef->sh_cnt; i++)
			free(ef->inflated[i]);
	}
	free(ef->inflated);
	free(ef->inflated_sz);
	free(ef->inflate_failed);
	free(ef->shdrs);
	free(ef->segs);
	if (ef->mapped)
		file_map__close(ef->image, ef->image_sz);
	else
		free((void *)ef->image);
	free(ef);
}

uint16_t elf_file__type(const struct elf_file *ef)
{
	return ef->type;
}

uint64_t elf_file__entry(const struct elf_file *ef)
{
	return ef->entry;
}

uint16_t elf_file__machine(const struct elf_file *ef)
{
	return ef->machine;
}

uint64_t elf_file__size(const struct elf_file *ef)
{
	return ef->image_sz;
}

bool elf_file__changed(const struct elf_file *ef)
{
	return ef->mapped && file_map__changed(ef->image);
}

int elf_file__build_id(const struct elf_file *ef, uint8_t *out, size_t cap)
{
	if (!ef->build_id_sz)
		return -ENOENT;
	if (cap < ef->build_id_sz)
		return -ENOSPC;
	memcpy(out, ef->build_id, ef->build_id_sz);
	return (int)ef->build_id_sz;
}

int elf_file__build_id_hex(const struct elf_file *ef, char *out, size_t cap)
{
	if (!ef->build_id_sz)
		return -ENOENT;
	if (cap < 2 * ef->build_id_sz + 1)
		return -ENOSPC;
	hex_encode(ef->build_id, ef->build_id_sz, out);
	return 0;
}

size_t elf_file__segment_cnt(const struct elf_file *ef)
{
	return ef->seg_cnt;
}

const struct elf_segment *elf_file__segment(const struct elf_file *ef, size_t i)
{
	return i < ef->seg_cnt ? &ef->segs[i] : NULL;
}

int elf_file__offset_to_vaddr(const struct elf_file *ef, uint64_t offset, uint64_t *vaddr)
{
	for (size_t i = 0; i < ef->seg_cnt; i++) {
		const struct elf_segment *seg = &ef->segs[i];

		if (seg->type != PT_LOAD || offset < seg->offset ||
		    offset - seg->offset >= seg->filesz)
			continue;
		*vaddr = seg->vaddr + (offset - seg->offset);
		return 0;
	}
	return -ENOENT;
}

int elf_file__bytes_at_vaddr(const struct elf_file *ef, uint64_t vaddr, const void **data,
			     size_t *avail)
{
	for (size_t i = 0; i < ef->seg_cnt; i++) {
		const struct elf_segment *seg = &ef->segs[i];
		uint64_t off;

		if (seg->type != PT_LOAD || vaddr < seg->vaddr || vaddr - seg->vaddr >= seg->filesz)
			continue;
		off = seg->offset + (vaddr - seg->vaddr);
		if (off < seg->offset || off >= ef->image_sz)
			return -ENOEXEC;
		*data = ef->image + off;
		*avail = seg->filesz - (vaddr - seg->vaddr);
		if (*avail > ef->image_sz - off)
			*avail = ef->image_sz - off;
		return 0;
	}
	return -ENOENT;
}

/* ---- sections ---- */

static const char *elf_file__sh_name(const struct elf_file *ef, const Elf64_Shdr *sh)
{
	const char *name;

	if (!ef->shstr || sh->sh_name >= ef->shstr_sz)
		return NULL;
	name = ef->shstr + sh->sh_name;
	if (!memchr(name, '\0', ef->shstr_sz - sh->sh_name))
		return NULL;
	return name;
}

/* Inflate a zlib stream into exactly out_sz bytes. */
static int elf_file__inflate(const uint8_t *in, size_t in_sz, uint8_t *out, size_t out_sz)
{
	z_stream zs = { 0 };
	size_t in_left = in_sz, out_left = out_sz;
	int zerr, err = -ENOEXEC;

	if (inflateInit(&zs) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)in;
	zs.next_out = out;
	do {
		/* avail_* are 32-bit: feed large buffers in slices */
		if (zs.avail_in == 0) {
			zs.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
			in_left -= zs.avail_in;
		}
		if (zs.avail_out == 0) {
			zs.avail_out = out_left > UINT32_MAX ? UINT32_MAX : (uInt)out_left;
			out_left -= zs.avail_out;
		}
		zerr = inflate(&zs, Z_NO_FLUSH);
	} while (zerr == Z_OK && (zs.avail_in || in_left) && (zs.avail_out || out_left));
	if (zerr == Z_STREAM_END && zs.avail_out == 0 && out_left == 0)
		err = 0;
	inflateEnd(&zs);
	return err;
}

/* Decompress section idx (SHF_COMPRESSED or legacy .zdebug_) into ef->inflated[idx]. */
static int elf_file__decompress(struct elf_file *ef, size_t idx, const uint8_t *data, size_t size,
				bool legacy)
{
	const uint8_t *stream;
	uint64_t raw_sz, stream_sz;
	uint8_t *buf = NULL;
	int err = -ENOEXEC;

	if (ef->inflated[idx])
		return 0;
	if (ef->inflate_failed[idx])
		return -ENOEXEC;

	if (legacy) {
		/* "ZLIB" + big-endian 64-bit uncompressed size + zlib stream */
		if (size < 12 || memcmp(data, "ZLIB", 4))
			goto cleanup;
		raw_sz = load_be64(data + 4);
		stream = data + 12;
		stream_sz = size - 12;
	} else {
		Elf64_Chdr ch;

		if (size < sizeof(ch))
			goto cleanup;
		memcpy(&ch, data, sizeof(ch));
		if (ch.ch_type != ELFCOMPRESS_ZLIB)
			goto cleanup; /* zstd and others: not supported */
		raw_sz = ch.ch_size;
		stream = data + sizeof(ch);
		stream_sz = size - sizeof(ch);
	}
	if (raw_sz > ELF_FILE_INFLATE_MAX || raw_sz / ELF_FILE_ZLIB_RATIO > stream_sz)
		goto cleanup;

	buf = malloc(raw_sz ? raw_sz : 1);
	if (!buf) {
		err = -ENOMEM; /* not remembered: may succeed later */
		goto cleanup;
	}
	if (raw_sz) {
		err = elf_file__inflate(stream, stream_sz, buf, raw_sz);
		if (err)
			goto cleanup;
	}
	ef->inflated[idx] = buf;
	ef->inflated_sz[idx] = raw_sz;
	buf = NULL;
	err = 0;

cleanup:
	free(buf);
	if (err == -ENOEXEC)
		ef->inflate_failed[idx] = 1;
	return err;
}

size_t elf_file__section_cnt(const struct elf_file *ef)
{
	return ef->sh_cnt;
}

int elf_file__section_at(struct elf_file *ef, size_t idx, struct elf_section *out,
			 const char **name, uint32_t *link)
{
	const Elf64_Shdr *sh;
	const char *sh_name;
	bool legacy;
	int err;

	if (ef->sh_corrupt)
		return -ENOEXEC;
	if (idx >= ef->sh_cnt)
		return -ENOENT;
	sh = &ef->shdrs[idx];
	sh_name = elf_file__sh_name(ef, sh);
	*out = (struct elf_section){
		.size = sh->sh_size,
		.addr = sh->sh_addr,
		.offset = sh->sh_offset,
		.type = sh->sh_type,
		.flags = sh->sh_flags,
	};
	if (name)
		*name = sh_name ? sh_name : "";
	if (link)
		*link = sh->sh_link;
	if (sh->sh_type == SHT_NOBITS)
		return 0;
	if (!range_ok(sh->sh_offset, sh->sh_size, ef->image_sz))
		return -ENOEXEC;
	out->data = ef->image + sh->sh_offset;

	legacy = !(sh->sh_flags & SHF_COMPRESSED) && sh_name && !strncmp(sh_name, ".zdebug_", 8);
	if (!(sh->sh_flags & SHF_COMPRESSED) && !legacy)
		return 0;
	err = elf_file__decompress(ef, idx, out->data, out->size, legacy);
	if (err)
		return err;
	out->data = ef->inflated[idx];
	out->size = ef->inflated_sz[idx];
	out->flags &= ~(uint64_t)SHF_COMPRESSED;
	return 0;
}

int elf_file__section_index(const struct elf_file *ef, const char *name, size_t *idx)
{
	if (ef->sh_corrupt)
		return -ENOEXEC;
	for (size_t i = 0; i < ef->sh_cnt; i++) {
		const char *sh_name = elf_file__sh_name(ef, &ef->shdrs[i]);

		if (sh_name && !strcmp(sh_name, name)) {
			*idx = i;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_file__section(struct elf_file *ef, const char *name, struct elf_section *out)
{
	char zname[ELF_FILE_NAME_MAX];
	size_t idx;
	int n;

	if (ef->sh_corrupt || (ef->sh_cnt && !ef->shstr))
		return -ENOEXEC;
	if (!elf_file__section_index(ef, name, &idx))
		return elf_file__section_at(ef, idx, out, NULL, NULL);
	/* legacy GNU compression renames .debug_x to .zdebug_x */
	if (strncmp(name, ".debug_", 7))
		return -ENOENT;
	n = snprintf(zname, sizeof(zname), ".zdebug_%s", name + 7);
	if (n < 0 || (size_t)n >= sizeof(zname))
		return -ENOENT;
	if (!elf_file__section_index(ef, zname, &idx))
		return elf_file__section_at(ef, idx, out, NULL, NULL);
	return -ENOENT;
}

int elf_file__debuglink(struct elf_file *ef, const char **name, uint32_t *crc)
{
	struct elf_section sec;
	const char *s;
	size_t len, crc_off;

	/* a malformed section is reported as absent, per the header's contract */
	if (elf_file__section(ef, ".gnu_debuglink", &sec) || !sec.data)
		return -ENOENT;
	s = sec.data;
	len = strnlen(s, sec.size);
	if (len == 0 || len == sec.size)
		return -ENOENT;
	crc_off = (len + 1 + 3) & ~(size_t)3;
	if (!range_ok(crc_off, 4, sec.size))
		return -ENOENT;
	*name = s;
	*crc = load_le32((const uint8_t *)sec.data + crc_off);
	return 0;
}

void elf_file__drop_pages(struct elf_file *ef)
{
	if (ef && ef->mapped && ef->image_sz)
		madvise((void *)ef->image, ef->image_sz, MADV_DONTNEED);
}

void elf_file__drop_range(struct elf_file *ef, const void *p, size_t len)
{
	uintptr_t img = (uintptr_t)(ef ? ef->image : NULL), a = (uintptr_t)p, page, lo, hi;

	if (!ef || !ef->mapped || a < img || a - img > ef->image_sz)
		return;
	if (len > ef->image_sz - (a - img))
		len = ef->image_sz - (a - img); /* clipped to the image */
	page = (uintptr_t)sysconf(_SC_PAGESIZE);
	lo = (a + page - 1) & ~(page - 1);
	hi = (a + len) & ~(page - 1);
	if (lo < hi)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

uint64_t elf_file__entry_block_size(const struct elf_file *ef)
{
	static const uint8_t jmp_r12[] = { 0x41, 0xff, 0xe4 };
	const uint8_t *code;
	const void *data;
	size_t avail, i;

	if (!ef || !ef->entry || elf_file__bytes_at_vaddr(ef, ef->entry, &data, &avail))
		return ELF_ENTRY_ROOT_SZ;
	code = data;
	if (avail > ELF_ENTRY_BLOCK_MAX)
		avail = ELF_ENTRY_BLOCK_MAX;
	for (i = 0; i + sizeof(jmp_r12) <= avail; i++)
		if (!memcmp(code + i, jmp_r12, sizeof(jmp_r12)))
			return i + sizeof(jmp_r12) > ELF_ENTRY_ROOT_SZ ? i + sizeof(jmp_r12)
								       : ELF_ENTRY_ROOT_SZ;
	return ELF_ENTRY_ROOT_SZ;
}
