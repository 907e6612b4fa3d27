#include "verifier_reason.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char last_reason[256];

/* STACKSCOPE_VERIFIER_LOG=FILE: the whole load log goes to FILE (the console truncates it) */
static void save_log(const char *log)
{
	const char *path = getenv("STACKSCOPE_VERIFIER_LOG");
	FILE *f;

	if (!path || !*path)
		return;
	f = fopen(path, "a");
	if (!f)
		return;
	fputs(log, f);
	fclose(f);
}

int verifier_reason__note(const char *msg)
{
	const char *begin = strstr(msg, "-- BEGIN PROG LOAD LOG --");
	const char *end, *line = begin;
	size_t n;

	if (!begin)
		return 0;
	save_log(begin);
	end = strstr(begin, "-- END PROG LOAD LOG --");
	if (!end)
		end = begin + strlen(begin);
	/* the last non-empty line before the end marker; "processed N insns" is the summary
	 * the verifier adds after the reason: skip it
	 */
	while (end > begin) {
		while (end > begin && (end[-1] == '\n' || end[-1] == ' '))
			end--;
		line = end;
		while (line > begin && line[-1] != '\n')
			line--;
		if (strncmp(line, "processed ", 10) && strncmp(line, "verification time", 17))
			break;
		end = line;
	}
	n = (size_t)(end - line);
	if (n >= sizeof(last_reason))
		n = sizeof(last_reason) - 1;
	memcpy(last_reason, line, n);
	last_reason[n] = '\0';
	return 1;
}

const char *verifier_reason__last(void)
{
	return last_reason;
}
