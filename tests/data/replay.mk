# Fixtures for tests/unit/test_replay.c: programs that walk a known call chain and write a
# snapshot of themselves (registers of the interrupted leaf, stack bytes, /proc/self/maps;
# see replay_snapshot.c) to the file named on their command line. Built like production
# code: -O2 without frame pointers, by gcc and clang; one chain also with frame pointers
# for the frame-pointer fallback.

REPLAY_CC      ?= gcc
REPLAY_CLANG   ?= clang
REPLAY_CXX     ?= g++
REPLAY_CFLAGS  := -O2 -g -fomit-frame-pointer -Wall
REPLAY_DEPS    := replay_snapshot.c

REPLAY_FIXTURES := replay_chain_gcc replay_chain_clang replay_chain_fp replay_qsort \
		   replay_recurse replay_signal replay_signal_clang replay_cxx replay_noreturn

FIXTURES += $(addprefix $(BUILD)/,$(REPLAY_FIXTURES))

$(BUILD)/replay_chain_gcc: replay_chain.c $(REPLAY_DEPS) | $(BUILD)
	$(REPLAY_CC) $(REPLAY_CFLAGS) $^ -o $@

$(BUILD)/replay_chain_clang: replay_chain.c $(REPLAY_DEPS) | $(BUILD)
	$(REPLAY_CLANG) $(REPLAY_CFLAGS) $^ -o $@

$(BUILD)/replay_chain_fp: replay_chain.c $(REPLAY_DEPS) | $(BUILD)
	$(REPLAY_CC) -O2 -g -fno-omit-frame-pointer -Wall $^ -o $@

$(BUILD)/replay_qsort $(BUILD)/replay_recurse $(BUILD)/replay_signal $(BUILD)/replay_noreturn: \
$(BUILD)/%: %.c $(REPLAY_DEPS) | $(BUILD)
	$(REPLAY_CC) $(REPLAY_CFLAGS) $^ -o $@

$(BUILD)/replay_signal_clang: replay_signal.c $(REPLAY_DEPS) | $(BUILD)
	$(REPLAY_CLANG) $(REPLAY_CFLAGS) $^ -o $@

$(BUILD)/replay_snapshot_cxx.o: replay_snapshot.c | $(BUILD)
	$(REPLAY_CC) $(REPLAY_CFLAGS) -c $< -o $@

$(BUILD)/replay_cxx: replay_cxx.cc $(BUILD)/replay_snapshot_cxx.o | $(BUILD)
	$(REPLAY_CXX) $(REPLAY_CFLAGS) $^ -o $@
