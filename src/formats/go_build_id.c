/* Go build id note reader; see go_build_id.h. Note layout (ELF): namesz u32, descsz u32,
 * type u32, name padded to 4 bytes, desc.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "formats/elf_file.h"
#include "formats/go_build_id.h"

#define GO_NOTE_TYPE_BUILDID 4

int go_build_id__read(struct elf_file *ef, char *out, size_t cap)
{
	struct elf_section s;
	const uint8_t *p;
	uint32_t namesz, descsz, type;
	size_t i, desc_off;

	if (cap <= GO_BUILD_ID_MAX)
		return -EINVAL;
	out[0] = '\0';
	if (elf_file__section(ef, ".note.go.buildid", &s) || !s.data)
		return -ENOENT;
	if (s.size < 12)
		return -ENOEXEC;
	p = s.data;
	memcpy(&namesz, p, 4);
	memcpy(&descsz, p + 4, 4);
	memcpy(&type, p + 8, 4);
	desc_off = 12 + (((size_t)namesz + 3) & ~(size_t)3);
	if (namesz != 4 || memcmp(p + 12, "Go\0\0", 4) || type != GO_NOTE_TYPE_BUILDID ||
	    descsz == 0 || descsz > GO_BUILD_ID_MAX || s.size < desc_off ||
	    s.size - desc_off < descsz)
		return -ENOEXEC;
	for (i = 0; i < descsz; i++) {
		if (p[desc_off + i] < 0x21 || p[desc_off + i] > 0x7e)
			return -ENOEXEC;
		out[i] = (char)p[desc_off + i];
	}
	out[descsz] = '\0';
	return (int)descsz;
}
