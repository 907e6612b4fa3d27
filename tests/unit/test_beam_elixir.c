/* Elixir's names for BEAM frames (src/interp/beam/beam_elixir.c): the forms the emulators give
 * (the JIT's quoted atoms, the interpreter's bare ones), anonymous functions, Erlang modules
 * left alone, and malformed or oversized names left unchanged.
 */
#include <string.h>

#include "interp/beam/beam_elixir.h"
#include "test.h"

static void check_name(const char *in, const char *want, size_t cap)
{
	char buf[600];

	snprintf(buf, sizeof(buf), "%s", in);
	beam_elixir__name(buf, cap);
	CHECK_STR(buf, want);
}

TEST(elixir_functions)
{
	check_name("'Elixir.ExChain':gamma/3", "Elixir.ExChain.gamma/3", 600);
	check_name("Elixir.ExChain:gamma/3", "Elixir.ExChain.gamma/3", 600);
	check_name("'Elixir.Kernel.CLI':process_commands/1", "Elixir.Kernel.CLI.process_commands/1",
		   600);
	check_name("'Elixir.Foo':'valid?'/1", "Elixir.Foo.valid?/1", 600);
	check_name("'Elixir.Kernel.CLI':'-main/1-fun-2-'/2",
		   "anonymous fn/2 in Elixir.Kernel.CLI.main/1", 600);
	check_name("Elixir.Enum:-map/2-fun-0-/1", "anonymous fn/1 in Elixir.Enum.map/2", 600);
}

TEST(others_unchanged)
{
	check_name("erl_chain:gamma/3", "erl_chain:gamma/3", 600);
	check_name("'Elixir':f/1", "'Elixir':f/1", 600);       /* no module after the prefix */
	check_name("'Elixir.Foo:f/1", "'Elixir.Foo:f/1", 600); /* an unclosed quote */
	check_name("'Elixir.Foo':f", "'Elixir.Foo':f", 600);   /* no arity */
	check_name("'Elixir.Foo':f/x", "'Elixir.Foo':f/x", 600);
	check_name("'Elixir.Foo':/1", "'Elixir.Foo':/1", 600);
	check_name("'Elixir.Foo':f/1", "'Elixir.Foo':f/1", 10); /* the result would not fit */
	/* an Elixir function named like a generated one but not one: as it is */
	check_name("'Elixir.Foo':'-odd'/0", "Elixir.Foo.-odd/0", 600);
}

int main(void)
{
	RUN(elixir_functions);
	RUN(others_unchanged);
	return test_summary();
}
