/* The two pprof files of POST /api/diff, read under limits sized for what the diff needs:
 * one flamegraph of two profiles, answered within a second on the server's only thread.
 *
 * A gzip member of 65 KB can inflate to 64 MiB of samples, which the decoder turns into
 * 1.6 GB of arrays; a 472-byte file can name a 100 KB function 200,000 times in one sample,
 * which the import hashes 200,000 times. So, before anything is decoded, both files are read
 * once as a stream (inflated 64 KiB at a time, never kept) and their protobuf walked two levels
 * deep, counting what the decoder would allocate, the frames of each sample and of all, and
 * each string's length; the first limit passed stops the walk. A refusal costs a fixed
 * ~200 KiB whatever the files say. Then, once decoded, the bytes of names the import would
 * hash (each frame's function and file names, its mapping's, the labels of each sample) are
 * added up before it runs. A time budget is checked between the steps (decode, import of each
 * file) as a backstop.
 */
#ifndef STACKSCOPE_UPLOAD_H
#define STACKSCOPE_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

struct profile;

struct upload_limits {
	size_t decoded_max; /* bytes the decoder allocates for both files (inflated bytes too) */
	size_t frames_max;  /* frames (location ids, 1 for a sample without) of all samples */
	size_t sample_frames_max; /* frames of one sample */
	size_t string_max;        /* bytes of one string (a function or file name, a label) */
	size_t intern_max;        /* bytes of names the import hashes, both files */
	unsigned time_max_ms;     /* CPU time from the start of the reading to the last import */
};

/* The limits of POST /api/diff (docs/API.md). */
#define UPLOAD_DECODED_MAX ((size_t)96 << 20)
#define UPLOAD_FRAMES_MAX ((size_t)512 << 10)
#define UPLOAD_SAMPLE_FRAMES_MAX 4096
#define UPLOAD_STRING_MAX ((size_t)64 << 10)
#define UPLOAD_INTERN_MAX ((size_t)64 << 20)
#define UPLOAD_TIME_MAX_MS 1000
/* Nodes of the diff's call tree (flame_tree__set_max_nodes()): its JSON is ~60 bytes a node. */
#define UPLOAD_NODES_MAX ((size_t)256 << 10)

/* The item (a sample, a location) the walk keeps whole to count inside it; larger: refused. */
#define UPLOAD_ITEM_MAX ((size_t)64 << 10)

/* Reads body[0..a_len) and body[a_len..len) (each a pprof file, gzipped or not) into two
 * profiles (out[0], out[1]; the caller frees them). lim NULL: the defaults above.
 * Returns 0, or the HTTP status of the refusal with a sentence in why (why_sz bytes): 413 a
 * limit passed (which, and its value), 422 a file that is not a pprof profile stackscope
 * reads, 503 out of memory or over the time budget. out[] is NULL on error.
 */
int upload__import(const uint8_t *body, size_t len, size_t a_len, const struct upload_limits *lim,
		   struct profile *out[2], char *why, size_t why_sz);

#endif
