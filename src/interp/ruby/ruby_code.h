/* What libruby's own x86-64 code says about its layout, read from a few exported functions whose
 * bodies are one C line each, so that a stripped library (Debian's libruby-3.3 exports neither
 * ruby_current_ec nor ruby_current_vm_ptr nor rb_vm_exec) still tells where its state is:
 *  - rb_errinfo: `return GET_EC()->errinfo;`: how the running thread's execution context is
 *    reached (a thread-local variable through __tls_get_addr's GOT pair, or a global pointer)
 *    and the offset of errinfo in rb_execution_context_t (a check of the layout table);
 *  - rb_during_gc: `return GET_VM()->objspace->flags.during_gc;`: ruby_current_vm_ptr, the
 *    objspace's offset in rb_vm_t, and where the during_gc bit is;
 *  - ruby_native_thread_p (2.x, pthread keys): `pthread_getspecific(ruby_native_thread_key)`:
 *    where that key is kept;
 *  - rb_id2str: the last operator id (tLAST_OP_ID);
 *  - the interpreter loop: indirect jumps (one per instruction handler), direct call targets.
 * Each decoder accepts only the instruction shapes gcc gives these functions (listed at each);
 * anything else is -ENOENT, never a guess. Input is untrusted (a mapped file): every read is
 * bounded by the size given. Nothing allocates.
 */
#ifndef STACKSCOPE_RUBY_CODE_H
#define STACKSCOPE_RUBY_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A memory operand found in code: the variable's address, or a GOT slot that holds it. */
struct ruby_code_ref {
	uint64_t vaddr;
	bool via_got; /* vaddr is a GOT slot (mov disp(%rip)), not the variable (lea disp(%rip)) */
};

enum ruby_ec_kind {
	RUBY_EC_TLS = 1, /* thread-local: __tls_get_addr(GOT pair) + tls_add */
	RUBY_EC_GLOBAL,  /* a global pointer (2.x: the thread holding the GVL) */
	RUBY_EC_TLSDESC, /* arm64: thread-local through the TLS descriptor at tls_pair */
};

struct ruby_ec_access {
	enum ruby_ec_kind kind;
	uint64_t tls_pair; /* TLS: the GOT pair { module id, offset } given to __tls_get_addr;
			    * TLSDESC: the descriptor { resolver, argument } */
	int32_t tls_add;   /* TLS: added to the pair's offset (local-dynamic: the variable's) */
	struct ruby_code_ref global; /* GLOBAL: the pointer variable */
	uint32_t errinfo;            /* offsetof(rb_execution_context_t, errinfo) */
};

/* rb_errinfo's code at vaddr `addr` (size bytes); 0 with *out, or -ENOENT. */
int ruby_code__errinfo(const uint8_t *code, size_t size, uint64_t addr, struct ruby_ec_access *out);

struct ruby_gc_access {
	struct ruby_code_ref vm_ptr; /* ruby_current_vm_ptr (an rb_vm_t *) */
	uint32_t vm_objspace;        /* offsetof(rb_vm_t, objspace) */
	uint32_t flags_off;          /* the 32-bit word of the objspace holding during_gc */
	uint32_t gc_running;         /* during_gc's bit in that word */
};

/* rb_during_gc's code at vaddr `addr`; 0 with *out, or -ENOENT. */
int ruby_code__during_gc(const uint8_t *code, size_t size, uint64_t addr,
			 struct ruby_gc_access *out);

/* ruby_native_thread_p's code at vaddr `addr`: the address of the 32-bit pthread key it loads
 * before calling pthread_getspecific; 0 with *key, or -ENOENT.
 */
int ruby_code__native_thread_key(const uint8_t *code, size_t size, uint64_t addr, uint64_t *key);

/* rb_id2str's code: the tLAST_OP_ID it compares ids with (`cmp $imm32, %rdi`: ids up to it
 * are operators, their own serial); 0 with *last_op, or -ENOENT.
 */
int ruby_code__last_op_id(const uint8_t *code, size_t size, uint32_t *last_op);

/* Indirect jumps (ff /4) in code[0..size), counted by their bytes, without decoding: a threaded
 * interpreter has one per instruction handler, other functions a few at most.
 */
size_t ruby_code__indirect_jumps(const uint8_t *code, size_t size);

/* The targets of direct calls and jumps (e8/e9 rel32) in code at vaddr `addr` that lie outside
 * it, at most cap into out (byte patterns: callers keep only targets that start a function);
 * their count.
 */
size_t ruby_code__branch_targets(const uint8_t *code, size_t size, uint64_t addr, uint64_t *out,
				 size_t cap);

/* The same for libruby's arm64 code (ruby_code_arm64.c): rb_errinfo through ruby_current_ec's
 * TLS descriptor (RUBY_EC_TLSDESC), rb_during_gc, `br xN` jumps, b/bl targets.
 */
int ruby_code__errinfo_arm64(const uint8_t *code, size_t size, uint64_t addr,
			     struct ruby_ec_access *out);
int ruby_code__during_gc_arm64(const uint8_t *code, size_t size, uint64_t addr,
			       struct ruby_gc_access *out);
size_t ruby_code__indirect_jumps_arm64(const uint8_t *code, size_t size);
size_t ruby_code__branch_targets_arm64(const uint8_t *code, size_t size, uint64_t addr,
				       uint64_t *out, size_t cap);

#endif
