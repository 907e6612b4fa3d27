/* Elixir's functions named as Elixir shows them.
 *
 * Elixir compiles module Foo into the Erlang module 'Elixir.Foo', so the emulator names its
 * functions 'Elixir.Foo':bar/2 (the JIT's debugger records quote atoms as Erlang prints them;
 * the interpreter's names come unquoted), and an anonymous function gets a generated name,
 * '-bar/2-fun-0-'/1. Elixir writes them Elixir.Foo.bar/2 and "anonymous fn/1 in
 * Elixir.Foo.bar/2"; Erlang modules' names are left as they are.
 */
#ifndef STACKSCOPE_INTERP_BEAM_ELIXIR_H
#define STACKSCOPE_INTERP_BEAM_ELIXIR_H

#include <stddef.h>

/* Rewrites the NUL-terminated name "MODULE:FUNCTION/ARITY" in function (cap bytes) in
 * Elixir's form when MODULE is an Elixir module; else, or when the result would not fit,
 * leaves it unchanged.
 */
void beam_elixir__name(char *function, size_t cap);

#endif
