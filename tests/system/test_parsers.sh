#!/bin/bash
# The untrusted-input parsers under a fuzzer for a bounded run (deterministic seeds: the
# DWARF reader on corrupted debug files, the pprof reader of `stackscope symbolize`, the ELF
# reader with ELF symbols, the CFI reader/interpreter/table builder; each first replays its
# committed regression inputs), and the debug-file lookup against a real debuginfod server
# (Debian's package) on loopback.
source "$(dirname "$0")/lib.sh"
need_root

cd "$SS_ROOT" || exit 1
if command -v clang >/dev/null && [[ -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]]; then
	for f in dwarf pprof_read elf cfi; do
		timeout -k 5 240 env BUILD="$BUILD" tests/fuzz/run_fuzz_$f.sh 3000 >"$TMP/fuzz_$f.log" 2>&1
		rc=$?
		check_eq "fuzz $f: regressions and 3000 inputs without a crash or sanitizer report" \
			"$rc" 0
		((rc == 0)) || grep -v '^#' "$TMP/fuzz_$f.log" | tail -20 | sed 's/^/        /'
	done
else
	skip "fuzzers: clang's libFuzzer runtime (libclang-rt-14-dev) is not installed"
fi

out=$(BUILD=$BUILD timeout -k 5 120 bash tests/unit/test_debuginfod.sh 2>&1)
rc=$?
if grep -q '^SKIP' <<<"$out"; then
	skip "debuginfod: $(grep '^SKIP' <<<"$out")"
else
	check_eq "debuginfod: lookups through a local server (test_debuginfo --server)" "$rc" 0 ||
		sed 's/^/        /' <<<"$out"
	check "debuginfod: its test ran" grep -qE '^[1-9][0-9]* passed, 0 failed' <<<"$out"
fi
finish
