#!/bin/bash
# Files that other users control, changed or planted to hurt the profiler (issue: hostile and
# unlucky machines). Each case failed before the fix:
#  - a library truncated or rewritten in place while mapped (SIGBUS killed the recording);
#  - a FIFO where .gnu_debuglink points (open() blocked the recording forever);
#  - two same-size binaries differing only inside .eh_frame (they shared one file id, so the
#    good one was unwound with the corrupt one's table).
source "$(dirname "$0")/lib.sh"
need_root

# 1. A mapped library that shrinks: the recording survives, says so, and the process's
# samples keep their chain (main -> the library's plugin_entry -> back into main).
for mode in truncate rewrite; do
	have_fixture wl_truncate || break
	f=$TMP/trunc_$mode.folded
	record "$TMP/trunc_$mode.err" -F 499 -o "$f" -- "$FIX/wl_truncate" 1.5 \
		"$TMP/libcopy_$mode.so" "$mode"
	rc=$?
	check_eq "$mode: the recording survives a library that shrank under it (exit status)" \
		"$rc" 0 || { tail -5 "$TMP/trunc_$mode.err" | sed 's/^/        /'; continue; }
	total=$(samples "$f" wl_truncate ';spin_after$')
	full=$(samples "$f" wl_truncate \
		"^wl_truncate;${START_RE}main;[^;]*;now_then_change;spin_after\$")
	check_ge "$mode: samples in spin_after" "$total" 100
	check_pct "$mode: spin_after under main -> (the changed library) -> now_then_change" \
		"$full" "$total" 85 || show "$f" wl_truncate
	zeroed=$(sed -n 's/^files .* \([0-9]\+\) pages read as zeros.*/\1/p' "$TMP/trunc_$mode.err")
	check_ge "$mode: the summary counts the pages that read as zeros" "${zeroed:-0}" 1
	check "$mode: one warning names the file" \
		grep -q "libcopy_$mode.so: the file shrank while being read" "$TMP/trunc_$mode.err"
done

# 2. A FIFO named by .gnu_debuglink next to a binary without unwind tables: never opened
# (no hang), counted, and the recording goes on.
if have_fixture wl_debugframe; then
	mkdir -p "$TMP/fifo"
	cp "$FIX/wl_debugframe" "$TMP/fifo/"
	mkfifo "$TMP/fifo/wl_debugframe.debug"
	start=$SECONDS
	SS_TIMEOUT=40 record "$TMP/fifo.err" -F 199 -o "$TMP/fifo.folded" -- \
		"$TMP/fifo/wl_debugframe" 1.5
	rc=$?
	check_eq "debuglink FIFO: the recording ends on its own (exit status)" "$rc" 0
	check_le "debuglink FIFO: seconds taken" $((SECONDS - start)) 20
	check_ge "debuglink FIFO: samples of the workload" \
		"$(samples "$TMP/fifo.folded" wl_debugframe)" 50
	refused=$(sed -n 's/^files .* \([0-9]\+\) not regular refused.*/\1/p' "$TMP/fifo.err")
	check_ge "debuglink FIFO: counted as a refused non-regular file" "${refused:-0}" 1
fi

# 3. Same size, same first and last 4 KiB, different .eh_frame: each unwound with its own.
if have_fixture wl_chain_nofp; then
	mkdir -p "$TMP/twins"
	cp "$FIX/wl_chain_nofp" "$TMP/twins/wl_good"
	cp "$FIX/wl_chain_nofp" "$TMP/twins/wl_bad"
	# zero every FDE after the first CIE: the bad twin has no usable CFI
	read -r off size < <(readelf -SW "$TMP/twins/wl_bad" |
		awk '$2 == ".eh_frame" { print $5, $6 }')
	python3 - "$TMP/twins/wl_bad" "$off" "$size" <<'PY'
import struct, sys
path, off, size = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3], 16)
assert 4096 <= off and off + size <= len(open(path, 'rb').read()) - 4096
data = bytearray(open(path, 'rb').read())
cie = struct.unpack_from('<I', data, off)[0] + 4
data[off + cie:off + size] = bytes(size - cie)
open(path, 'wb').write(data)
PY
	check "twins: same size, differing only inside .eh_frame (0x$off, 0x$size bytes)" \
		test "$(stat -c %s "$TMP/twins/wl_good")" = "$(stat -c %s "$TMP/twins/wl_bad")" -a \
		"$(cmp "$TMP/twins/wl_good" "$TMP/twins/wl_bad" | wc -l)" = 1
	record "$TMP/twins.err" -F 499 -o "$TMP/twins.folded" -- bash -c \
		"'$TMP/twins/wl_bad' 2.5 & sleep 0.5; '$TMP/twins/wl_good' 1.5; wait"
	f=$TMP/twins.folded
	total=$(samples "$f" wl_good)
	full=$(samples "$f" wl_good "^wl_good;${START_RE}main;chain_a;chain_b;chain_c;hot_leaf(;|\$)")
	check_ge "twins: samples of the good twin" "$total" 100
	check_pct "twins: the good twin's chain is complete (its own table)" "$full" "$total" 85 ||
		show "$f" wl_good
	check_ge "twins: samples of the bad twin" "$(samples "$f" wl_bad)" 100
fi

finish
