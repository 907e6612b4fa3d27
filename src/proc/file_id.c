/* Content identity of files. See file_id.h. */
#include "proc/file_id.h"

#include "base/hex.h"

#include <errno.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HTLHASH_HEAD_SZ 4096

static const char file_id_domain[] = "stackscope file id 3";

static EVP_MD_CTX *file_id__begin(uint64_t size)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(size >> (8 * i));
	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	    EVP_DigestUpdate(ctx, file_id_domain, sizeof(file_id_domain)) &&
	    EVP_DigestUpdate(ctx, le, sizeof(le)))
		return ctx;
	EVP_MD_CTX_free(ctx);
	return NULL;
}

static int file_id__end(EVP_MD_CTX *ctx, uint64_t *id)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	uint64_t v = 0;

	if (!EVP_DigestFinal_ex(ctx, md, &md_len) || md_len < 8)
		return -EIO;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | md[i];
	*id = v ? v : 1;
	return 0;
}

int file_id__of_fd(int fd, uint64_t *id)
{
	struct stat st;
	uint64_t v[7];
	EVP_MD_CTX *ctx;
	int err;

	if (fstat(fd, &st))
		return -errno;
	v[0] = (uint64_t)st.st_dev;
	v[1] = (uint64_t)st.st_ino;
	v[2] = (uint64_t)st.st_mtim.tv_sec;
	v[3] = (uint64_t)st.st_mtim.tv_nsec;
	v[4] = (uint64_t)st.st_ctim.tv_sec;
	v[5] = (uint64_t)st.st_ctim.tv_nsec;
	v[6] = 0x66696c65; /* "file": never the same input as an image's */
	ctx = file_id__begin((uint64_t)st.st_size);
	if (!ctx)
		return -ENOMEM;
	err = EVP_DigestUpdate(ctx, v, sizeof(v)) ? file_id__end(ctx, id) : -EIO;
	EVP_MD_CTX_free(ctx);
	return err;
}

uint64_t file_id__of_mem(const void *image, size_t size)
{
	EVP_MD_CTX *ctx = file_id__begin(size);
	uint64_t id = 1;

	if (ctx && EVP_DigestUpdate(ctx, image, size))
		file_id__end(ctx, &id);
	EVP_MD_CTX_free(ctx);
	return id;
}

int file_id__htlhash(int fd, char out[33])
{
	unsigned char head[HTLHASH_HEAD_SZ], tail[HTLHASH_HEAD_SZ], len_be[8];
	unsigned char digest[EVP_MAX_MD_SIZE];
	size_t head_sz, tail_sz, i;
	unsigned int digest_sz = 0;
	EVP_MD_CTX *md = NULL;
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
	md = EVP_MD_CTX_new();
	if (!md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(md, head, head_sz) || !EVP_DigestUpdate(md, tail, tail_sz) ||
	    !EVP_DigestUpdate(md, len_be, sizeof(len_be)) ||
	    !EVP_DigestFinal_ex(md, digest, &digest_sz) || digest_sz < 16) {
		err = -ENOMEM;
		goto cleanup;
	}
	hex_encode(digest, 16, out);
cleanup:
	EVP_MD_CTX_free(md);
	return err;
}
