# The hostile-file cases shared by test_hostile_files.sh (stackscope and its agent) and
# test_hostile_asan.sh (the same under ASan+UBSan); sourced after lib.sh. See the first for
# what each case plants and why.

ASAN_SS=$BUILD/asan/stackscope
SAN_RE='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:'

# The planted files, built once.
setup_fixtures()
{
	local off size
	# twins: same size, same first and last 4 KiB; wl_bad's FDEs zeroed
	mkdir -p "$TMP/twins"
	cp "$FIX/wl_chain_nofp" "$TMP/twins/wl_good"
	cp "$FIX/wl_chain_nofp" "$TMP/twins/wl_bad"
	read -r off size < <(readelf -SW "$TMP/twins/wl_bad" | awk '$2 == ".eh_frame" { print $5, $6 }')
	python3 - "$TMP/twins/wl_bad" "$off" "$size" <<'PY'
import struct, sys
path, off, size = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3], 16)
data = bytearray(open(path, 'rb').read())
assert 4096 <= off and off + size <= len(data) - 4096
cie = struct.unpack_from('<I', data, off)[0] + 4
data[off + cie:off + size] = bytes(size - cie)
open(path, 'wb').write(data)
PY
	check "twins: same size, differing only inside .eh_frame (at 0x$off)" \
		test "$(stat -c %s "$TMP/twins/wl_good")" = "$(stat -c %s "$TMP/twins/wl_bad")" -a \
		"$(cmp "$TMP/twins/wl_good" "$TMP/twins/wl_bad" | wc -l)" = 1
	# a FIFO named by the .gnu_debuglink of a binary without unwind tables
	mkdir -p "$TMP/fifo"
	cp "$FIX/wl_debugframe" "$TMP/fifo/"
	mkfifo "$TMP/fifo/wl_debugframe.debug"
	# section headers overwritten with garbage (e_shoff/e_shnum kept): runs all the same
	cp "$FIX/wl_chain_nofp" "$TMP/wl_shdrs"
	python3 - "$TMP/wl_shdrs" <<'PY'
import random, struct, sys
path = sys.argv[1]
data = bytearray(open(path, 'rb').read())
shoff, = struct.unpack_from('<Q', data, 0x28)
shnum, = struct.unpack_from('<H', data, 0x3c)
rnd = random.Random(9)
data[shoff:shoff + 64 * shnum] = bytes(rnd.getrandbits(8) for _ in range(64 * shnum))
open(path, 'wb').write(data)
PY
	# a chroot: the binary without unwind tables, libc, and its debug link as an absolute
	# symlink to the real debug file on the host
	local j=$TMP/jail lib
	mkdir -p "$j/bin" "$j/outside"
	for lib in $(ldd "$FIX/wl_debugframe" | grep -o '/[^ ]*'); do
		mkdir -p "$j$(dirname "$lib")"
		cp -L "$lib" "$j$lib"
	done
	cp "$FIX/wl_debugframe" "$j/bin/"
	cp "$FIX/wl_debugframe.debug" "$TMP/outside.debug"
	ln -s "$TMP/outside.debug" "$j/bin/wl_debugframe.debug"
}

# cases BINARY LABEL: every case recorded by BINARY.
cases()
{
	local SS=$1 L=$2 mode f rc total full zeroed refused start lib

	# 1. A mapped library that shrinks: the recording survives, says so, and the process's
	# samples keep their chain (main -> the library's plugin_entry -> back into main).
	# The rewritten one's name holds an ESC sequence: the log must show it escaped.
	for mode in truncate rewrite; do
		f=$TMP/$L-$mode.folded
		lib=$TMP/$L-libcopy_$mode.so
		[[ $mode == rewrite ]] && lib=$TMP/$L-lib$'\e'[31mcopy_$mode.so
		record "$TMP/$L-$mode.err" -F 499 -o "$f" -- "$FIX/wl_truncate" 1.5 "$lib" "$mode"
		rc=$?
		check_eq "$L $mode: the recording survives a library that shrank under it" "$rc" 0 ||
			{ tail -5 "$TMP/$L-$mode.err" | sed 's/^/        /'; continue; }
		total=$(samples "$f" wl_truncate ';spin_after$')
		full=$(samples "$f" wl_truncate \
			"^wl_truncate;${START_RE}main;[^;]*;now_then_change;spin_after\$")
		check_ge "$L $mode: samples in spin_after" "$total" 100
		check_pct "$L $mode: spin_after under main -> (the changed library) -> now_then_change" \
			"$full" "$total" 85 || show "$f" wl_truncate
		zeroed=$(sed -n 's/^files .* \([0-9]\+\) pages read as zeros.*/\1/p' "$TMP/$L-$mode.err")
		check_ge "$L $mode: the summary counts the pages that read as zeros" "${zeroed:-0}" 1
		check "$L $mode: one warning names the file" \
			grep -q "copy_$mode.so: the file shrank while being read" "$TMP/$L-$mode.err"
		if [[ $mode == rewrite ]]; then
			check "$L: the ESC in the file name is logged as \\x1b" \
				grep -qF 'lib\x1b[31mcopy_rewrite.so: the file shrank' "$TMP/$L-$mode.err"
			check "$L: no raw ESC byte reaches the log" \
				bash -c "! grep -q \$'\\e' '$TMP/$L-$mode.err'"
		fi
	done

	# 2. A FIFO named by .gnu_debuglink: never opened (no hang), counted.
	start=$SECONDS
	SS_TIMEOUT=40 record "$TMP/$L-fifo.err" -F 199 -o "$TMP/$L-fifo.folded" -- \
		"$TMP/fifo/wl_debugframe" 1.5
	rc=$?
	check_eq "$L debuglink FIFO: the recording ends on its own" "$rc" 0
	check_le "$L debuglink FIFO: seconds taken" $((SECONDS - start)) 25
	check_ge "$L debuglink FIFO: samples of the workload" \
		"$(samples "$TMP/$L-fifo.folded" wl_debugframe)" 50
	refused=$(sed -n 's/^files .* \([0-9]\+\) not regular refused.*/\1/p' "$TMP/$L-fifo.err")
	check_ge "$L debuglink FIFO: counted as a refused non-regular file" "${refused:-0}" 1

	# 3. Twins: each unwound with its own table.
	record "$TMP/$L-twins.err" -F 499 -o "$TMP/$L-twins.folded" -- bash -c \
		"'$TMP/twins/wl_bad' 2.5 & sleep 0.5; '$TMP/twins/wl_good' 1.5; wait"
	f=$TMP/$L-twins.folded
	total=$(samples "$f" wl_good)
	full=$(samples "$f" wl_good "^wl_good;${START_RE}main;chain_a;chain_b;chain_c;hot_leaf(;|\$)")
	check_ge "$L twins: samples of the good twin" "$total" 100
	check_pct "$L twins: the good twin's chain is complete (its own table)" "$full" "$total" 85 ||
		show "$f" wl_good
	check_ge "$L twins: samples of the bad twin" "$(samples "$f" wl_bad)" 100

	# 4. Garbage section headers: unwound through PT_GNU_EH_FRAME like any binary.
	f=$TMP/$L-shdrs.folded
	record "$TMP/$L-shdrs.err" -F 499 -o "$f" -- "$TMP/wl_shdrs" 1.5
	check_eq "$L garbage section headers: exit status" "$?" 0
	total=$(samples "$f" wl_shdrs)
	# no section headers, no symbols: _start, libc's start, then main and the 4-deep chain
	X='wl_shdrs[+]0x[0-9a-f]+'
	full=$(samples "$f" wl_shdrs "^wl_shdrs;$X;__libc_start_main(_impl)?;__libc_start_call_main;$X;$X;$X;$X;$X\$")
	check_ge "$L garbage section headers: samples" "$total" 100
	check_pct "$L garbage section headers: _start, libc, main and the chain's 4 frames" \
		"$full" "$total" 85 || show "$f" wl_shdrs

	# 5. The chroot's debug link leads out of it: not followed (so no CFI for the chain), and
	# the same file placed inside the root is used (the chain is complete).
	f=$TMP/$L-jail.folded
	rm -f "$TMP/jail/bin/wl_debugframe.debug"
	ln -s "$TMP/outside.debug" "$TMP/jail/bin/wl_debugframe.debug"
	record "$TMP/$L-jail.err" -F 499 --cache-dir "" -o "$f" -- chroot "$TMP/jail" /bin/wl_debugframe 1.5
	check_eq "$L chroot, debug link out of the root: exit status" "$?" 0
	total=$(samples "$f" wl_debugframe)
	full=$(samples "$f" wl_debugframe "^wl_debugframe;${START_RE}main;chain_a;chain_b;chain_c;hot_leaf(;|\$)")
	check_ge "$L chroot, debug link out of the root: samples" "$total" 100
	check_le "$L chroot, debug link out of the root: complete chains (host file not read)" \
		$((full * 100 / (total ? total : 1))) 10
	rm "$TMP/jail/bin/wl_debugframe.debug"
	cp "$TMP/outside.debug" "$TMP/jail/bin/wl_debugframe.debug"
	record "$TMP/$L-jail2.err" -F 499 --cache-dir "" -o "$f" -- chroot "$TMP/jail" /bin/wl_debugframe 1.5
	total=$(samples "$f" wl_debugframe)
	full=$(samples "$f" wl_debugframe "^wl_debugframe;${START_RE}main;chain_a;chain_b;chain_c;hot_leaf(;|\$)")
	check_pct "$L chroot, debug file inside the root: complete chains" "$full" "$total" 85 ||
		show "$f" wl_debugframe

	if [[ $L == asan ]]; then
		check "asan: no sanitizer report from record" \
			bash -c "! grep -Eh '$SAN_RE' $TMP/asan-*.err"
	fi
}

# check_fixtures: every fixture and the ASan build exist (else failures, not skips).
check_fixtures()
{
	local fx
	for fx in wl_truncate wl_debugframe wl_chain_nofp; do
		have_fixture "$fx" || finish
	done
	if [[ ! -x $ASAN_SS ]]; then
		fail "$ASAN_SS missing: run 'make asan-stackscope'"
		finish
	fi
}
