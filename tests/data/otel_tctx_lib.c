/* The publishing side of OpenTelemetry's thread context (OTEP 4947), written from the OTEP for
 * stackscope's tests: the TLS variable otel_thread_ctx_v1, exported in .dynsym, reached with the
 * TLSDESC dialect (-mtls-dialect=gnu2) when built as a shared library, relaxed to local-exec
 * when built into the executable (OTEL_TCTX_IN_EXE).
 */
#include "otel_tctx.h"

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

void otel_tctx_attach(struct otel_tctx_record *r)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*(void *volatile *)&otel_thread_ctx_v1 = r;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

void *otel_tctx_current(void)
{
	return *(void *volatile *)&otel_thread_ctx_v1;
}
