/* `stackscope agent --config FILE` (see agent_config.h for the format). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/agent_config.h"

#define CONFIG_MAX_SZ (1 << 20)
#define CONFIG_MAX_ENTRIES 256

/* Every file loaded, newest first: the options of a run point into its entries for the
 * process's life (a SIGHUP reload loads another; the ones before stay reachable, not leaked).
 */
struct loaded_config {
	struct loaded_config *prev;
	struct agent_config_entry *entries;
};
static struct loaded_config *loaded;

const char *agent_config__path(int argc, char **argv)
{
	const char *path = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			path = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			path = argv[i] + 9;
	}
	return path;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static int config__error(const char *path, unsigned line, const char *why, const char *what)
{
	if (line)
		fprintf(stderr, "stackscope agent: %s:%u: %s%s%s\n", path, line, why,
			what ? " " : "", what ? what : "");
	else
		fprintf(stderr, "stackscope agent: --config %s: %s\n", path, why);
	return -EINVAL;
}

int agent_config__load(const char *path, const struct agent_config_entry **out, size_t *cnt)
{
	struct agent_config_entry *entries = NULL;
	struct loaded_config *kept;
	char *text = NULL, *line, *next, *key, *value, *eq;
	size_t n = 0, len = 0, arg_sz;
	unsigned line_no = 0;
	FILE *f = NULL;
	int err = 0;

	*out = NULL;
	*cnt = 0;
	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		fprintf(stderr, "stackscope agent: --config %s: %s\n", path, strerror(errno));
		goto cleanup;
	}
	text = malloc(CONFIG_MAX_SZ + 1);
	entries = calloc(CONFIG_MAX_ENTRIES, sizeof(*entries));
	if (!text || !entries) {
		err = -ENOMEM;
		goto cleanup;
	}
	len = fread(text, 1, CONFIG_MAX_SZ + 1, f);
	if (ferror(f) || len > CONFIG_MAX_SZ) {
		err = config__error(path, 0, ferror(f) ? "cannot read it" : "over 1 MiB", NULL);
		goto cleanup;
	}
	text[len] = '\0';
	if (memchr(text, '\0', len)) {
		err = config__error(path, 0, "not a text file (a NUL byte)", NULL);
		goto cleanup;
	}
	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line_no++;
		key = trim(line);
		if (!*key || *key == '#')
			continue;
		value = NULL;
		eq = strchr(key, '=');
		if (eq) {
			*eq = '\0';
			value = trim(eq + 1);
			key = trim(key);
		}
		if (!*key || strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(key) ||
		    *key == '-') {
			err = config__error(path, line_no,
					    "want KEY = VALUE or KEY, with a flag's "
					    "long name as KEY:",
					    key);
			goto cleanup;
		}
		if (!strcmp(key, "config")) {
			err = config__error(path, line_no, "a config file cannot name another",
					    NULL);
			goto cleanup;
		}
		if (value && !strcmp(value, "false"))
			continue;
		if (value && !strcmp(value, "true"))
			value = NULL;
		if (n == CONFIG_MAX_ENTRIES) {
			err = config__error(path, line_no, "too many settings (256 at most)", NULL);
			goto cleanup;
		}
		arg_sz = 2 + strlen(key) + (value ? 1 + strlen(value) : 0) + 1;
		entries[n].arg = malloc(arg_sz);
		if (!entries[n].arg) {
			err = -ENOMEM;
			goto cleanup;
		}
		snprintf(entries[n].arg, arg_sz, "--%s%s%s", key, value ? "=" : "",
			 value ? value : "");
		entries[n].line = line_no;
		n++;
	}
	kept = malloc(sizeof(*kept));
	if (!kept) {
		err = -ENOMEM;
		goto cleanup;
	}
	*kept = (struct loaded_config){ .prev = loaded, .entries = entries };
	loaded = kept;
	entries = NULL;
	*out = loaded->entries;
	*cnt = n;
cleanup:
	if (f)
		fclose(f);
	free(text);
	if (entries) {
		for (size_t i = 0; i < n; i++)
			free(entries[i].arg);
		free(entries);
	}
	return err;
}
