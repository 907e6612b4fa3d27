/* Collecting the store's dictionaries (store_gc.c): called by store.c's retention, above the
 * database layer (store_db.h). Not part of the store's interface.
 */
#ifndef STACKSCOPE_STORE_GC_H
#define STACKSCOPE_STORE_GC_H

struct store;

/* Deletes dictionary rows no sample refers to any more; runs inside the writer's transaction.
 * 0 or -errno.
 */
int store_gc__collect(struct store *st);

#endif
