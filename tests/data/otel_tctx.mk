# OpenTelemetry thread-context publishers (tests/system/test_thread_ctx.sh): the TLS variable in
# a shared library reached through TLSDESC, and the same program with it in the executable
# (local-exec, exported with --export-dynamic-symbol as the OTEP asks). Both can publish a
# process context with the attributes' key map (otel_pctx_write.c).
FIXTURES += $(BUILD)/otel_tctx_pub $(BUILD)/otel_tctx_pub_exe $(BUILD)/libotel_tctx.so

$(BUILD)/libotel_tctx.so: otel_tctx_lib.c otel_tctx.h | $(BUILD)
	$(CC) -O2 -g -Wall -fPIC -shared -mtls-dialect=gnu2 $< -o $@

$(BUILD)/otel_tctx_pub: otel_tctx_pub.c otel_tctx.h otel_pctx_write.c otel_pctx_write.h \
		$(BUILD)/libotel_tctx.so | $(BUILD)
	$(CC) -O2 -g -Wall -fno-omit-frame-pointer otel_tctx_pub.c otel_pctx_write.c -o $@ \
		-L$(BUILD) -lotel_tctx -Wl,-rpath,'$$ORIGIN' -pthread

$(BUILD)/otel_tctx_pub_exe: otel_tctx_pub.c otel_tctx_lib.c otel_tctx.h otel_pctx_write.c \
		otel_pctx_write.h | $(BUILD)
	$(CC) -O2 -g -Wall -fno-omit-frame-pointer -mtls-dialect=gnu2 otel_tctx_pub.c \
		otel_tctx_lib.c otel_pctx_write.c -o $@ \
		-Wl,--export-dynamic-symbol=otel_thread_ctx_v1 -pthread
