/* Counters as one list each (X-macros), so that an enum and the names userspace prints for it
 * come from the same lines: a list is `#define <NAME>S(X) X(<counter>, "<its name>") ...`, each
 * entry with the comment saying what it counts. SS_COUNTER_ENUM makes the enum's members from
 * it (numbered from 0 in list order), SS_COUNTER_NAME a name table indexed by them:
 *
 *   enum py_counter { PY_COUNTERS(SS_COUNTER_ENUM) PY_COUNTER_CNT };
 *   static const char *const names[PY_COUNTER_CNT] = { PY_COUNTERS(SS_COUNTER_NAME) };
 *
 * Included by bpf/abi.h and by each runtime's bpf/interp/<runtime>/bpf_abi.h.
 */
#ifndef STACKSCOPE_COUNTER_LIST_H
#define STACKSCOPE_COUNTER_LIST_H

#define SS_COUNTER_ENUM(name, text) name,
#define SS_COUNTER_NAME(name, text) [name] = text,

#endif
