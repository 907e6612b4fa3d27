# A stand-in for OBI writing its shared map traces_ctx_v1 (tests/system/test_obi_map.sh), with
# a thread-context variable in the executable too (the thread context wins over the map).
FIXTURES += $(BUILD)/obi_map_pub

$(BUILD)/obi_map_pub: obi_map_pub.c otel_tctx_lib.c otel_tctx.h | $(BUILD)
	$(CC) -O2 -g -Wall -fno-omit-frame-pointer -mtls-dialect=gnu2 obi_map_pub.c \
		otel_tctx_lib.c -o $@ -Wl,--export-dynamic-symbol=otel_thread_ctx_v1 -pthread
