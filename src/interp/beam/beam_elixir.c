/* Elixir's functions named as Elixir shows them: see beam_elixir.h. */
#include <stdio.h>
#include <string.h>

#include "interp/beam/beam_elixir.h"

#define ELIXIR_PREFIX "Elixir."

/* An atom at s, quoted ('...') or not, ending at stop (a quoted one at its closing quote): its
 * text into [*at, *at + *len), and the position after it. NULL when malformed.
 */
static const char *atom(const char *s, char stop, const char **at, size_t *len)
{
	const char *end;

	if (*s == '\'') {
		end = strchr(s + 1, '\'');
		if (!end)
			return NULL;
		*at = s + 1;
		*len = (size_t)(end - s - 1);
		return end + 1;
	}
	end = stop == '/' ? strrchr(s, stop) : strchr(s, stop);
	if (!end)
		return NULL;
	*at = s;
	*len = (size_t)(end - s);
	return end;
}

void beam_elixir__name(char *function, size_t cap)
{
	const char *mod, *fn, *arity, *p, *fun;
	size_t mod_len, fn_len;
	char out[512];
	int n;

	p = atom(function, ':', &mod, &mod_len);
	if (!p || *p != ':' || mod_len <= strlen(ELIXIR_PREFIX) ||
	    strncmp(mod, ELIXIR_PREFIX, strlen(ELIXIR_PREFIX)))
		return;
	p = atom(p + 1, '/', &fn, &fn_len);
	if (!p || *p != '/' || !fn_len)
		return;
	arity = p + 1;
	if (!*arity || strspn(arity, "0123456789") != strlen(arity))
		return;
	/* an anonymous function: -PARENT/N-fun-K- (PARENT/N the function it is written in) */
	fun = fn_len > 1 && fn[0] == '-' ? strstr(fn, "-fun-") : NULL;
	if (fun && fun < fn + fn_len && fn[fn_len - 1] == '-')
		n = snprintf(out, sizeof(out), "anonymous fn/%s in %.*s.%.*s", arity, (int)mod_len,
			     mod, (int)(fun - fn - 1), fn + 1);
	else
		n = snprintf(out, sizeof(out), "%.*s.%.*s/%s", (int)mod_len, mod, (int)fn_len, fn,
			     arity);
	if (n > 0 && (size_t)n < sizeof(out) && (size_t)n < cap)
		memcpy(function, out, (size_t)n + 1);
}
