/* The BEAM JIT's debugger records (see beam_debug.h). */
#include <errno.h>
#include <string.h>

#include "base/unaligned.h"
#include "interp/beam/beam_debug.h"

#define RANGE_HDR_SZ 16 /* u32 start, u32 end, u32 line count, u16 name length, padding */
#define RANGE_NAME_AT 14
#define LINE_HDR_SZ 12 /* u32 start, u32 line, u16 file length, padding */
#define LINE_FILE_AT 10

/* A string of n bytes (its NUL included) at buf[at], inside len: it, or NULL. */
static const char *string_at(const uint8_t *buf, size_t len, size_t at, size_t n)
{
	if (n == 0 || at > len || n > len - at || buf[at + n - 1] != '\0')
		return NULL;
	return (const char *)buf + at;
}

int beam_debug__header(const uint8_t *buf, size_t len, struct beam_debug_header *out)
{
	memset(out, 0, sizeof(*out));
	if (len < BEAM_DEBUG_HDR_SZ)
		return -EINVAL;
	out->kind = load_u32(buf);
	if (out->kind == BEAM_DEBUG_EMULATOR) {
		out->normal_exit = load_u64(buf + 16);
		return 0;
	}
	if (out->kind != BEAM_DEBUG_MODULE)
		return -EINVAL;
	out->base = load_u64(buf + 8);
	out->range_cnt = load_u32(buf + 16);
	out->code_size = load_u32(buf + 20);
	return 0;
}

/* Skip the line entries of a range: the offset after them, or 0 when corrupt. */
static size_t skip_lines(const uint8_t *buf, size_t len, size_t at, uint32_t line_cnt)
{
	uint32_t l;

	for (l = 0; l < line_cnt; l++) {
		if (at > len || len - at < LINE_HDR_SZ)
			return 0;
		at += LINE_HDR_SZ + load_u16(buf + at + 8);
	}
	return at;
}

/* The first line entry of the range at buf[at] into out (nothing when it has none): 0 or
 * -EINVAL.
 */
static int first_line(const uint8_t *buf, size_t len, size_t at, struct beam_debug_place *out)
{
	size_t name_len;
	const char *file;

	if (at > len || len - at < RANGE_HDR_SZ)
		return -EINVAL;
	if (!load_u32(buf + at + 8))
		return 0;
	at += RANGE_HDR_SZ + load_u16(buf + at + 12);
	if (at > len || len - at < LINE_HDR_SZ)
		return -EINVAL;
	name_len = load_u16(buf + at + 8);
	file = string_at(buf, len, at + LINE_FILE_AT, name_len);
	if (!file)
		return -EINVAL;
	out->file = file;
	out->line = (int)load_u32(buf + at + 4);
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int beam_debug__lookup(const uint8_t *buf, size_t len, uint64_t off, struct beam_debug_place *out)
{
	struct beam_debug_header h;
	size_t at, name_len;
	uint32_t r, l;

	memset(out, 0, sizeof(*out));
	if (beam_debug__header(buf, len, &h) || h.kind != BEAM_DEBUG_MODULE)
		return -EINVAL;
	name_len = load_u16(buf + 24);
	if (!string_at(buf, len, 26, name_len))
		return -EINVAL;
	at = BEAM_DEBUG_HDR_SZ + name_len;
	for (r = 0; r < h.range_cnt; r++) {
		uint32_t start, end, line_cnt;
		const char *name;

		if (at > len || len - at < RANGE_HDR_SZ)
			return -EINVAL;
		start = load_u32(buf + at);
		end = load_u32(buf + at + 4);
		line_cnt = load_u32(buf + at + 8);
		name_len = load_u16(buf + at + 12);
		name = string_at(buf, len, at + RANGE_NAME_AT, name_len);
		if (!name || start > end)
			return -EINVAL;
		at += RANGE_HDR_SZ + name_len;
		if (off < start || off >= end) {
			at = skip_lines(buf, len, at, line_cnt);
			if (!at)
				return -EINVAL;
			continue;
		}
		out->function = name;
		for (l = 0; l < line_cnt; l++) {
			uint32_t lstart, line;
			const char *file;

			if (at > len || len - at < LINE_HDR_SZ)
				return -EINVAL;
			lstart = load_u32(buf + at);
			line = load_u32(buf + at + 4);
			name_len = load_u16(buf + at + 8);
			file = string_at(buf, len, at + LINE_FILE_AT, name_len);
			if (!file)
				return -EINVAL;
			at += LINE_HDR_SZ + name_len;
			if (lstart > off)
				break;
			out->file = file;
			out->line = (int)line;
		}
		out->prologue = ends_with(name, BEAM_DEBUG_PROLOGUE);
		if (out->prologue && !out->line && r + 1 < h.range_cnt) {
			/* a function's entry: the first line of its body, the range that follows */
			at = skip_lines(buf, len, at, line_cnt - (l < line_cnt ? l + 1 : line_cnt));
			if (!at || first_line(buf, len, at, out))
				return -EINVAL;
		}
		return 0;
	}
	return -ENOENT;
}

const char *beam_debug__module(const uint8_t *buf, size_t len)
{
	struct beam_debug_header h;

	if (beam_debug__header(buf, len, &h) || h.kind != BEAM_DEBUG_MODULE)
		return NULL;
	return string_at(buf, len, 26, load_u16(buf + 24));
}

int beam_debug__range(const uint8_t *buf, size_t len, const char *name, uint32_t *start,
		      uint32_t *end)
{
	struct beam_debug_header h;
	const char *module = beam_debug__module(buf, len);
	size_t at;
	uint32_t r;

	if (!module || beam_debug__header(buf, len, &h))
		return -EINVAL;
	at = BEAM_DEBUG_HDR_SZ + load_u16(buf + 24);
	for (r = 0; r < h.range_cnt; r++) {
		const char *rname;
		size_t name_len;

		if (at > len || len - at < RANGE_HDR_SZ)
			return -EINVAL;
		name_len = load_u16(buf + at + 12);
		rname = string_at(buf, len, at + RANGE_NAME_AT, name_len);
		if (!rname || load_u32(buf + at) > load_u32(buf + at + 4))
			return -EINVAL;
		if (!strcmp(rname, name)) {
			*start = load_u32(buf + at);
			*end = load_u32(buf + at + 4);
			return 0;
		}
		at = skip_lines(buf, len, at + RANGE_HDR_SZ + name_len, load_u32(buf + at + 8));
		if (!at)
			return -EINVAL;
	}
	return -ENOENT;
}
