# OpenTelemetry process context (OTEP 4719) publisher, for tests/system/test_process_ctx.sh.
FIXTURES += $(BUILD)/otel_pctx_pub

$(BUILD)/otel_pctx_pub: otel_pctx_pub.c | $(BUILD)
	$(CC) -O2 -g -Wall -fno-omit-frame-pointer $< -o $@ -pthread
