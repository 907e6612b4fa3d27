/* Readable native symbol names. See symbol_name.h. */
#include <stdio.h>
#include <string.h>

#include "formats/demangle.h"
#include "symbolize/symbol_name.h"

char *symbol_name__v8_builtin(const char *name)
{
	const char *p = name + 9;
	char *out;

	if (strncmp(name, "Builtins_", 9) || !*p)
		return NULL;
	for (; *p; p++)
		if (!(*p == '_' || (*p >= '0' && *p <= '9') ||
		      ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')))
			return NULL;
	if (asprintf(&out, "[v8] %s", name + 9) < 0)
		return NULL;
	return out;
}

char *symbol_name__readable(const char *name)
{
	if (name && !strncmp(name, "Builtins_", 9))
		return symbol_name__v8_builtin(name);
	if (!name || (strncmp(name, "_Z", 2) && strncmp(name, "_R", 2)))
		return NULL;
	return demangle__symbol(name);
}
