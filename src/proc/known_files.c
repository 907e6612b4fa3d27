/* Files identified by userspace, for eBPF to enter new mappings with. See known_files.h. */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <bpf/bpf.h>

#include "abi.h"
#include "formats/elf_file.h"
#include "proc/executable.h"
#include "proc/known_files.h"

static void key_of(const struct executable *exe, struct known_file_key *key)
{
	memset(key, 0, sizeof(*key));
	if (exe->kind == EXECUTABLE_VDSO)
		return; /* (0, 0): not a file */
	/* The kernel's dev_t, as /proc/PID/maps printed its major and minor numbers. */
	key->dev = (uint64_t)exe->dev_major << 20 | exe->dev_minor;
	key->ino = exe->ino;
}

int known_files__add(int fd, const struct executable *exe, unsigned int flags)
{
	struct known_file_key key;
	struct known_file kf = { .flags = flags };
	size_t i, n;

	if (fd < 0 || !exe->elf || (exe->kind == EXECUTABLE_FILE && !exe->ino))
		return -ENOENT;
	if (exe->kind == EXECUTABLE_VDSO) {
		uint64_t vaddr;

		/* Mapped whole from its start (process.c: bias = start - vaddr of offset 0). */
		if (executable__offset_to_vaddr(exe, 0, &vaddr))
			return -ENOENT;
		kf.seg[0].delta = vaddr;
		kf.seg[0].off_end = UINT64_MAX;
		kf.seg_cnt = 1;
	}
	n = exe->kind == EXECUTABLE_FILE ? elf_file__segment_cnt(exe->elf) : 0;
	for (i = 0; i < n && kf.seg_cnt < KNOWN_FILE_SEGS; i++) {
		const struct elf_segment *s = elf_file__segment(exe->elf, i);

		if (s->type != PT_LOAD || !(s->flags & PF_X) || !s->filesz)
			continue;
		/* As executable__offset_to_vaddr(): the page-aligned file range of the segment. */
		kf.seg[kf.seg_cnt].off_start = s->offset & ~(uint64_t)0xfff;
		kf.seg[kf.seg_cnt].off_end = s->offset + s->filesz;
		kf.seg[kf.seg_cnt].delta = s->vaddr - s->offset;
		kf.seg_cnt++;
	}
	if (!kf.seg_cnt)
		return -ENOENT;
	kf.file_id = exe->file_id;
	kf.size = (uint64_t)exe->version.size;
	kf.ctime_sec = exe->version.ctime.tv_sec;
	kf.ctime_nsec = (uint32_t)exe->version.ctime.tv_nsec;
	key_of(exe, &key);
	return bpf_map_update_elem(fd, &key, &kf, BPF_ANY) ? -errno : 0;
}

void known_files__remove(int fd, const struct executable *exe)
{
	struct known_file_key key;
	struct known_file kf;

	if (fd < 0 || (exe->kind == EXECUTABLE_FILE && !exe->ino))
		return;
	key_of(exe, &key);
	/* Only our own entry: a newer version of the file may have taken the key since. */
	if (!bpf_map_lookup_elem(fd, &key, &kf) && kf.file_id == exe->file_id)
		bpf_map_delete_elem(fd, &key);
}
