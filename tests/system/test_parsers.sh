#!/bin/bash
# The untrusted-input parsers under a fuzzer for a bounded run (deterministic seeds: the
# DWARF reader on corrupted debug files, the pprof reader of `stackscope symbolize`, the OTLP
# request decoder of `serve --otlp-listen`, the OTel
# process context decoder, the ELF reader with ELF symbols, the CFI reader/interpreter/table
# builder; each first replays its committed regression inputs), and the debug-file lookup
# against a real debuginfod server (Debian's package) on loopback; and a binary with corrupt
# .eh_frame recorded end to end.
source "$(dirname "$0")/lib.sh"
need_root

cd "$SS_ROOT" || exit 1
if command -v clang >/dev/null && [[ -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]]; then
	fuzzers=(dwarf pprof_read elf cfi process_context otlp_read)
	# two at a time (each a compile, then one process; their files are their own by name)
	for ((i = 0; i < ${#fuzzers[@]}; i += 2)); do
		for f in "${fuzzers[@]:i:2}"; do
			{
				timeout -k 5 240 env BUILD="$BUILD" tests/fuzz/run_fuzz_$f.sh 3000 \
					>"$TMP/fuzz_$f.log" 2>&1
				echo $? >"$TMP/fuzz_$f.rc"
			} &
		done
		wait
	done
	for f in "${fuzzers[@]}"; do
		rc=$(cat "$TMP/fuzz_$f.rc" 2>/dev/null || echo 255)
		check_eq "fuzz $f: regressions and 3000 inputs without a crash or sanitizer report" \
			"$rc" 0
		((rc == 0)) || grep -v '^#' "$TMP/fuzz_$f.log" | tail -20 | sed 's/^/        /'
	done
else
	skip_setup "fuzzers: clang's libFuzzer runtime (libclang-rt-14-dev) is not installed"
fi

# Corrupt CFI is counted, not reported as "0 failed": a copy of wl_chain_nofp whose second
# .eh_frame FDE points at no CIE is recorded; the file is named once and the summary counts it.
python3 - "$FIX/wl_chain_nofp" "$TMP/wl_badcfi" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
shoff, = struct.unpack_from('<Q', d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3a)
sh = [struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * shentsize) for i in range(shnum)]
names = sh[shstrndx][4]
for h in sh:
    if d[names + h[0]:d.index(0, names + h[0])] == b'.eh_frame':
        off, size = h[4], h[5]
pos, fdes = 0, []
while pos < size:
    length, = struct.unpack_from('<I', d, off + pos)
    if length == 0:
        break
    if struct.unpack_from('<I', d, off + pos + 4)[0]:
        fdes.append(pos)
    pos += 4 + length
struct.pack_into('<I', d, off + fdes[1] + 4, 0x7ffffff0)
open(sys.argv[2], 'wb').write(d)
PY
chmod +x "$TMP/wl_badcfi"
record "$TMP/badcfi.err" -F 99 --cache-dir "" -o "$TMP/badcfi.folded" -- "$TMP/wl_badcfi" 1
check "corrupt CFI: the file is named once with its malformed FDE count" \
	test "$(grep -cE 'wl_badcfi: malformed CFI skipped: 1 of [0-9]+ FDEs' "$TMP/badcfi.err")" = 1
check "corrupt CFI: the record summary counts the file and the entry" \
	grep -qE '1 with malformed CFI: 1 entries skipped' "$TMP/badcfi.err"
check "corrupt CFI: the good FDEs still unwind (main reached through the chain)" \
	grep -qE '^wl_badcfi;.*main;' "$TMP/badcfi.folded"

out=$(BUILD=$BUILD timeout -k 5 120 bash tests/unit/test_debuginfod.sh 2>&1)
rc=$?
if grep -q '^SKIP' <<<"$out"; then
	skip_setup "debuginfod: $(grep '^SKIP' <<<"$out")"
else
	check_eq "debuginfod: lookups through a local server (test_debuginfo --server)" "$rc" 0 ||
		sed 's/^/        /' <<<"$out"
	check "debuginfod: its test ran" grep -qE '^[1-9][0-9]* passed, 0 failed' <<<"$out"
fi
finish
