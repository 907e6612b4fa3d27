/* Function extents of a file from its .eh_frame FDEs. See function_starts.h. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "base/array.h"
#include "base/cmp.h"
#include "formats/eh_frame.h"
#include "formats/elf_file.h"
#include "symbolize/function_starts.h"

struct function_range {
	uint64_t start; /* sort key */
	uint64_t end;
};

struct function_starts {
	struct function_range *ranges;
	size_t cnt, cap;
};

static int add_fde(void *ctx, const struct cfi_fde *fde)
{
	struct function_starts *fs = ctx;

	if (fs->cnt >= FUNCTION_STARTS_CAP)
		return -ENOSPC;
	if (array__reserve_bounded((void **)&fs->ranges, &fs->cap, fs->cnt + 1, sizeof(*fs->ranges),
				   1024, FUNCTION_STARTS_CAP))
		return -ENOMEM;
	fs->ranges[fs->cnt++] = (struct function_range){ fde->pc_begin, fde->pc_end };
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct function_range *x = a, *y = b;

	return cmp_u64(x->start, y->start) ?: cmp_u64(x->end, y->end);
}

struct function_starts *function_starts__load(struct elf_file *ef)
{
	struct function_starts *fs = calloc(1, sizeof(*fs));
	struct eh_frame_stats st = { 0 };
	struct cfi_section sec = { 0 };
	struct elf_section eh, s;
	int err;

	if (!fs)
		return NULL;
	if (elf_file__section(ef, ".eh_frame", &eh) || !eh.data || !eh.size) {
		err = -ENOENT;
		goto fail;
	}
	sec.data = eh.data;
	sec.size = eh.size;
	sec.vaddr = eh.addr;
	sec.kind = CFI_SECTION_EH_FRAME;
	if (!elf_file__section(ef, ".text", &s))
		sec.text_vaddr = s.addr;
	if (!elf_file__section(ef, ".got", &s))
		sec.data_vaddr = s.addr;
	err = eh_frame__walk(&sec, add_fde, fs, &st);
	elf_file__drop_range(ef, eh.data, eh.size);
	if (!err && !fs->cnt)
		err = -ENOENT;
	if (err)
		goto fail;
	qsort(fs->ranges, fs->cnt, sizeof(*fs->ranges), range_cmp);
	return fs;
fail:
	function_starts__free(fs);
	errno = -err;
	return NULL;
}

void function_starts__free(struct function_starts *fs)
{
	if (!fs)
		return;
	free(fs->ranges);
	free(fs);
}

size_t function_starts__cnt(const struct function_starts *fs)
{
	return fs ? fs->cnt : 0;
}

int function_starts__lookup(const struct function_starts *fs, uint64_t addr, uint64_t *start)
{
	size_t i;

	if (!fs)
		return -ENOENT;
	i = upper_bound_u64(fs->ranges, fs->cnt, sizeof(*fs->ranges),
			    offsetof(struct function_range, start), addr);
	/* The last range starting at or below addr; one nested inside a bigger FDE (rare) that
	 * ends before addr leaves the bigger one a few entries back.
	 */
	for (size_t back = 0; i > 0 && back < 4; back++, i--) {
		const struct function_range *r = &fs->ranges[i - 1];

		if (addr < r->end) {
			*start = r->start;
			return 0;
		}
	}
	return -ENOENT;
}
