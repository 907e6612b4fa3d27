/* Runtime internals folded: a copy of a profile whose stacks keep a language runtime's frames
 * and drop the native frames between two of them (the interpreter's call machinery:
 * rb_vm_exec, vm_call_*, zend execute_ex, Perl's pp_entersub, the JVM's call stubs...), so a
 * flame graph shows the script's shape: one column per script function.
 *
 * Rule, per stack: a FRAME_NATIVE frame is dropped when a FRAME_RUNTIME frame of the same
 * runtime (profile_frame.runtime) is both above it (towards the root) and below it (towards
 * the leaf). Native frames below the innermost runtime frame (what the script is running:
 * a C extension, the allocator, the kernel) and above the outermost one (main, the
 * interpreter's start) stay, and so do pseudo-frames ("[unwind: ...]"). The fold is for views
 * (folded stacks, SVG, the web UI, top); pprof and OTLP keep every frame.
 */
#ifndef STACKSCOPE_RUNTIME_FOLD_H
#define STACKSCOPE_RUNTIME_FOLD_H

#include <stdbool.h>

struct profile;

/* The folded copy of src: same mappings, frames, counts, off-CPU times and labels; stacks that
 * fold to the same frames merge; no events (timestamps) are kept, the views do not read them.
 * NULL with errno ENOMEM.
 */
struct profile *runtime_fold__copy(const struct profile *src);

/* The value of a --fold option: "runtime" (true) or "none" (false). 0 or -EINVAL. */
int runtime_fold__parse(const char *arg, bool *fold);

#endif
