/* How a native symbol's name is shown: C++ and Rust names demangled, V8's embedded builtins
 * (node's Builtins_ArrayTimSort...) as V8 names them, marked as V8's ("[v8] ArrayTimSort").
 * Returned names are allocated: the caller frees them.
 */
#ifndef STACKSCOPE_SYMBOL_NAME_H
#define STACKSCOPE_SYMBOL_NAME_H

/* A V8 builtin's name for `name`, or NULL when it is none (or out of memory). */
char *symbol_name__v8_builtin(const char *name);
/* `name` as people read it (demangled, or a V8 builtin's), or NULL when it is not mangled
 * (show it as it is) or name is NULL.
 */
char *symbol_name__readable(const char *name);

#endif
