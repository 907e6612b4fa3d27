/* glibc's thread-specific data, where CPython (autoTSSkey) and threaded Perl (PL_thr_key) keep
 * the running thread's state: the value of pthread key k < 32 is
 * struct pthread.specific_1stblock[k].data, 16 bytes per key. Where struct pthread lies differs
 * per architecture (glibc 2.36, Debian 12; tests/unit/test_glibc_tsd.c checks both with
 * pthread_setspecific, the arm64 one under qemu-aarch64 with Debian's arm64 libc):
 *  - x86-64 (TLS variant II): the thread pointer (fs_base) is the struct pthread itself;
 *  - AArch64 (TLS variant I): the thread pointer (tpidr_el0) points at the TCB, which struct
 *    pthread (0x740 bytes) ends at.
 * Both are checked per process (a thread state's slot must point back at it) before eBPF
 * relies on them; a wrong one gives native frames only, never wrong frames.
 */
#ifndef STACKSCOPE_INTERP_GLIBC_TSD_H
#define STACKSCOPE_INTERP_GLIBC_TSD_H

/* key 0's value from pthread_self() (what a CPython thread state's thread_id holds) */
#define GLIBC_TSD_FROM_PTHREAD_X86_64 0x318
#define GLIBC_TSD_FROM_PTHREAD_AARCH64 0x118
/* pthread_self() from the thread pointer */
#define GLIBC_PTHREAD_FROM_TP_X86_64 0
#define GLIBC_PTHREAD_FROM_TP_AARCH64 (-0x740)
/* the thread's kernel id (struct pthread.tid, a pid_t) from pthread_self() */
#define GLIBC_TID_FROM_PTHREAD_X86_64 0x2d0
#define GLIBC_TID_FROM_PTHREAD_AARCH64 0xd0

/* this build's architecture (the profiled processes') */
#if defined(__aarch64__)
#define GLIBC_TSD_FROM_PTHREAD GLIBC_TSD_FROM_PTHREAD_AARCH64
#define GLIBC_PTHREAD_FROM_TP GLIBC_PTHREAD_FROM_TP_AARCH64
#define GLIBC_TID_FROM_PTHREAD GLIBC_TID_FROM_PTHREAD_AARCH64
#elif defined(__x86_64__)
#define GLIBC_TSD_FROM_PTHREAD GLIBC_TSD_FROM_PTHREAD_X86_64
#define GLIBC_PTHREAD_FROM_TP GLIBC_PTHREAD_FROM_TP_X86_64
#define GLIBC_TID_FROM_PTHREAD GLIBC_TID_FROM_PTHREAD_X86_64
#else
#error "glibc TSD offsets unknown for this architecture"
#endif

/* key 0's value from the thread pointer eBPF reads (interp_state.fsbase): the tsd_off of
 * bpf/interp/python/bpf_abi.h and perl/bpf_abi.h (signed: below the thread pointer on AArch64)
 */
#define GLIBC_TSD_FROM_TP (GLIBC_PTHREAD_FROM_TP + GLIBC_TSD_FROM_PTHREAD)

#endif
