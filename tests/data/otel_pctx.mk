# OpenTelemetry process context (OTEP 4719) publisher, for tests/system/test_process_ctx.sh.
FIXTURES += $(BUILD)/otel_pctx_pub

$(BUILD)/otel_pctx_pub: otel_pctx_pub.c otel_pctx_write.c otel_pctx_write.h | $(BUILD)
	$(CC) -O2 -g -Wall -fno-omit-frame-pointer otel_pctx_pub.c otel_pctx_write.c -o $@ -pthread
