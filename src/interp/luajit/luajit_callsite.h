/* LuaJIT 2.1: the name a call site gives the function it calls, as LuaJIT's own traceback
 * names a frame (lj_debug_funcname): from the caller's bytecode, the instruction that loaded
 * the called slot (GGET: a global, TGETS: a field or, right after a MOV of the table, a method,
 * UGET: an upvalue, MOV: followed; a live local variable by its debug info), or the
 * metamethod the caller's instruction ran.
 *
 * Reads through a reader (process memory, or a test's image); bounded: at most
 * LJ_CALLSITE_SCAN instructions scanned back, debug info and strings capped.
 */
#ifndef STACKSCOPE_LUAJIT_CALLSITE_H
#define STACKSCOPE_LUAJIT_CALLSITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LJ_CALLSITE_SCAN 1024 /* instructions scanned back from the call */
#define LJ_CALLSITE_NAME_MAX 128

/* 0 when size bytes at addr were read into buf, else -errno. */
typedef int (*lj_callsite_read_fn)(void *ctx, uint64_t addr, void *buf, size_t size);

/* Where GCproto and GCstr keep what the names need (lj_obj.h; by reference width). */
struct lj_callsite_layout {
	bool gc64;
	uint8_t pt_size, pt_sizebc, pt_k, pt_sizept, pt_sizeuv, pt_uvinfo, pt_varinfo;
	uint8_t str_data;
};

/* The layout of a GC64 build (gc64) or of one with 32-bit references. */
void lj_callsite_layout__init(struct lj_callsite_layout *l, bool gc64);

/* The name that instruction `pos` of the Lua function whose GCproto is at pt gives the function
 * it calls or runs ("alpha", "obj:beta", "M.gamma", "__index"), into out (NUL-terminated, at
 * most out_sz bytes): 0; -ENOENT when the bytecode names none (a computed callee, an
 * instruction that calls nothing); -EFAULT when unreadable; -EINVAL when pos is not in the
 * function.
 */
int lj_callsite__name(const struct lj_callsite_layout *l, lj_callsite_read_fn read, void *ctx,
		      uint64_t pt, uint32_t pos, char *out, size_t out_sz);

#endif
