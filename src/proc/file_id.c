/* Content identity of files. See file_id.h. */
#include "proc/file_id.h"

#include "base/hex.h"

#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sha256.h"

#define HTLHASH_HEAD_SZ 4096

static const char file_id_domain[] = "stackscope file id 3";

static void file_id__begin(struct sha256 *ctx, uint64_t size)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(size >> (8 * i));
	sha256__init(ctx);
	sha256__update(ctx, file_id_domain, sizeof(file_id_domain));
	sha256__update(ctx, le, sizeof(le));
}

static uint64_t file_id__end(struct sha256 *ctx)
{
	uint8_t md[SHA256_DIGEST_SZ];
	uint64_t v = 0;

	sha256__final(ctx, md);
	for (int i = 7; i >= 0; i--)
		v = v << 8 | md[i];
	return v ? v : 1;
}

int file_id__of_fd(int fd, uint64_t *id)
{
	struct stat st;
	uint64_t v[7];
	struct sha256 ctx;

	if (fstat(fd, &st))
		return -errno;
	v[0] = (uint64_t)st.st_dev;
	v[1] = (uint64_t)st.st_ino;
	v[2] = (uint64_t)st.st_mtim.tv_sec;
	v[3] = (uint64_t)st.st_mtim.tv_nsec;
	v[4] = (uint64_t)st.st_ctim.tv_sec;
	v[5] = (uint64_t)st.st_ctim.tv_nsec;
	v[6] = 0x66696c65; /* "file": never the same input as an image's */
	file_id__begin(&ctx, (uint64_t)st.st_size);
	sha256__update(&ctx, v, sizeof(v));
	*id = file_id__end(&ctx);
	return 0;
}

uint64_t file_id__of_mem(const void *image, size_t size)
{
	struct sha256 ctx;

	file_id__begin(&ctx, size);
	sha256__update(&ctx, image, size);
	return file_id__end(&ctx);
}

int file_id__htlhash(int fd, char out[33])
{
	unsigned char head[HTLHASH_HEAD_SZ], tail[HTLHASH_HEAD_SZ], len_be[8];
	unsigned char digest[SHA256_DIGEST_SZ];
	size_t head_sz, tail_sz, i;
	struct sha256 md;
	struct stat st;
	uint64_t size;
	int err = 0;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	size = (uint64_t)st.st_size;
	head_sz = size < HTLHASH_HEAD_SZ ? (size_t)size : HTLHASH_HEAD_SZ;
	tail_sz = head_sz;
	if (pread(fd, head, head_sz, 0) != (ssize_t)head_sz ||
	    pread(fd, tail, tail_sz, (off_t)(size - tail_sz)) != (ssize_t)tail_sz) {
		err = errno ? -errno : -EIO;
		goto cleanup;
	}
	for (i = 0; i < 8; i++)
		len_be[i] = (unsigned char)(size >> (56 - 8 * i));
	sha256__init(&md);
	sha256__update(&md, head, head_sz);
	sha256__update(&md, tail, tail_sz);
	sha256__update(&md, len_be, sizeof(len_be));
	sha256__final(&md, digest);
	hex_encode(digest, 16, out);
cleanup:
	return err;
}
