/* The values of one sample label in a profile, for the web UI's filters, each with its samples
 * and the pids that carried it, most samples first; e.g. the label service.name (what
 * processes published as their OpenTelemetry process context) as
 *	"services":[{"service":"checkout","samples":812,"pids":[4121,4170]},...]
 * and host.name (the hosts whose agents sent to the OTLP receiver) as "hosts":[{"host":...}].
 * At most LABEL_VALUES_MAX values and LABEL_VALUE_PIDS_MAX pids each (the rest left out).
 */
#ifndef STACKSCOPE_LABEL_VALUES_H
#define STACKSCOPE_LABEL_VALUES_H

#include "profile/profile.h"
#include "serve/json_out.h"

#define LABEL_VALUES_MAX 500
#define LABEL_VALUE_PIDS_MAX 64

/* Appends the member "LIST":[{"ITEM":value,"samples":N,"pids":[...]},...] of the label
 * named label to j. 0 or -ENOMEM.
 */
int label_values__json(const struct profile *p, const char *label, const char *list,
		       const char *item, struct json_out *j);

#endif
