/* pprof export: the profile as a perftools.profiles.Profile protobuf (gzipped on disk), as
 * read by `go tool pprof` and `pprof`.
 *
 * Sample types [samples/count, cpu/nanoseconds] (value = [n, n * period]), period type
 * cpu/nanoseconds. Labels: numeric pid and tid, string comm and thread_comm. Location ids are
 * profile frame ids and mapping ids profile mapping ids; kernel frames without a mapping go to
 * one extra mapping "[kernel.kallsyms]".
 *
 * Frames without lines still get one Line whose Function is the display name
 * ("libfoo.so+0x1234", see profile__frame_name()), so `pprof -top` is readable without
 * binaries. Their mapping then has has_functions = false: pprof re-symbolizes such mappings
 * when it finds the binary (replacing the placeholder names) and keeps our names otherwise.
 * A mapping whose frames are all symbolized says has_functions = true and is left alone.
 */
#ifndef STACKSCOPE_PPROF_H
#define STACKSCOPE_PPROF_H

#include "export/protobuf.h"
#include "profile/profile.h"

struct output_file;

/* Largest profile pprof__write() encodes (uncompressed). */
#define PPROF_MAX_SZ ((size_t)1 << 30)

/* Appends the (uncompressed) Profile message to out, an initialized buffer.
 * Returns 0, -ENOMEM or -EMSGSIZE (out's max_sz reached).
 */
int pprof__encode(const struct profile *p, struct pb_buf *out);

/* Writes the gzipped profile to path under the rules of base/output_file.h (a regular file
 * is replaced atomically, a device, FIFO or "-" written in place, a symlink refused).
 * Returns 0 or -errno (-EIO when zlib fails without errno).
 */
int pprof__write(const struct profile *p, const char *path);

/* Writes the gzipped profile to out, an open output file, without committing it. */
int pprof__write_to(const struct profile *p, struct output_file *out);

/* Writes an encoded message gzipped to path, as pprof__write(). 0 or -errno. */
int pprof__write_gzip(const struct pb_buf *buf, const char *path);

#endif
