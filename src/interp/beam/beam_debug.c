/* The BEAM JIT's debugger records (see beam_debug.h). */
#include <errno.h>
#include <string.h>

#include "interp/beam/beam_debug.h"

#define RANGE_HDR_SZ 16 /* u32 start, u32 end, u32 line count, u16 name length, padding */
#define RANGE_NAME_AT 14
#define LINE_HDR_SZ 12 /* u32 start, u32 line, u16 file length, padding */
#define LINE_FILE_AT 10

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

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
	out->kind = get32(buf);
	if (out->kind == BEAM_DEBUG_EMULATOR) {
		out->normal_exit = get64(buf + 16);
		return 0;
	}
	if (out->kind != BEAM_DEBUG_MODULE)
		return -EINVAL;
	out->base = get64(buf + 8);
	out->range_cnt = get32(buf + 16);
	out->code_size = get32(buf + 20);
	return 0;
}

int beam_debug__lookup(const uint8_t *buf, size_t len, uint64_t off, struct beam_debug_place *out)
{
	struct beam_debug_header h;
	size_t at, name_len;
	uint32_t r, l;

	memset(out, 0, sizeof(*out));
	if (beam_debug__header(buf, len, &h) || h.kind != BEAM_DEBUG_MODULE)
		return -EINVAL;
	name_len = get16(buf + 24);
	if (!string_at(buf, len, 26, name_len))
		return -EINVAL;
	at = BEAM_DEBUG_HDR_SZ + name_len;
	for (r = 0; r < h.range_cnt; r++) {
		uint32_t start, end, line_cnt;
		const char *name;

		if (at > len || len - at < RANGE_HDR_SZ)
			return -EINVAL;
		start = get32(buf + at);
		end = get32(buf + at + 4);
		line_cnt = get32(buf + at + 8);
		name_len = get16(buf + at + 12);
		name = string_at(buf, len, at + RANGE_NAME_AT, name_len);
		if (!name || start > end)
			return -EINVAL;
		at += RANGE_HDR_SZ + name_len;
		if (off >= start && off < end) {
			out->function = name;
			for (l = 0; l < line_cnt; l++) {
				uint32_t lstart, line;
				const char *file;

				if (at > len || len - at < LINE_HDR_SZ)
					return -EINVAL;
				lstart = get32(buf + at);
				line = get32(buf + at + 4);
				name_len = get16(buf + at + 8);
				file = string_at(buf, len, at + LINE_FILE_AT, name_len);
				if (!file)
					return -EINVAL;
				at += LINE_HDR_SZ + name_len;
				if (lstart > off)
					break;
				out->file = file;
				out->line = (int)line;
			}
			return 0;
		}
		for (l = 0; l < line_cnt; l++) {
			if (at > len || len - at < LINE_HDR_SZ)
				return -EINVAL;
			name_len = get16(buf + at + 8);
			at += LINE_HDR_SZ + name_len;
		}
	}
	return -ENOENT;
}
