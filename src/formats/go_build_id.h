/* The Go build id of an executable: the note `.note.go.buildid` (owner "Go", type 4) the Go
 * linker writes, e.g. "vHp96LhlTKzb9bb6_Pra/coFR9XfN6kJzbY4gsz3K/SWYnFAd-jedXbt2rLFD0/XWS...":
 * what OTLP calls process.executable.build_id.go. Untrusted input: the note is bounds-checked
 * and only printable ASCII is accepted.
 */
#ifndef STACKSCOPE_GO_BUILD_ID_H
#define STACKSCOPE_GO_BUILD_ID_H

#include <stddef.h>

struct elf_file;

#define GO_BUILD_ID_MAX 128 /* longer ids are refused */

/* The id into out (cap > GO_BUILD_ID_MAX), NUL-terminated: its length, -ENOENT (no note: not
 * Go, or linked by gcc for cgo without it), -ENOEXEC (a corrupt or oversized note).
 */
int go_build_id__read(struct elf_file *ef, char *out, size_t cap);

#endif
