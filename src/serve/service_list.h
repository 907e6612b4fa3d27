/* The services of a profile for the web UI's filters: each value of the sample label
 * service.name (what processes published as their OpenTelemetry process context), with its
 * samples and the pids that carried it, most samples first:
 *	"services":[{"service":"checkout","samples":812,"pids":[4121,4170]},...]
 * At most SERVICE_LIST_MAX services and SERVICE_PIDS_MAX pids each (the rest are left out).
 */
#ifndef STACKSCOPE_SERVICE_LIST_H
#define STACKSCOPE_SERVICE_LIST_H

#include "profile/profile.h"
#include "serve/json_out.h"

#define SERVICE_LIST_MAX 500
#define SERVICE_PIDS_MAX 64

/* Appends the "services" member (key and array) to j. 0 or -ENOMEM. */
int service_list__json(const struct profile *p, struct json_out *j);

#endif
