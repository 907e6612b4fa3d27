#!/bin/bash
# Deferred unwinding (bpf/deferred.h, src/unwind/deferred.c, src/unwind/stack_replay.c): a
# sample that eBPF cannot unwind yet (its process's mappings or its file's table are not
# loaded) carries a copy of its stack and is unwound in userspace once the table exists.
#
# 1. Never-seen code from the first instruction: 10 times, a binary compiled here (a fresh file
#    with a unique build id: no table, no cache entry) is exec'd and at once dlopen()s a
#    library just as fresh, burning CPU in it: main -> fresh_entry -> early_burn for its first
#    50 ms, then late_burn (tests/data/wl_fresh_main.c, wl_fresh_lib.c). Its early samples
#    (the dynamic loader, the dlopen, early_burn) must be >= 95% complete. Left out: samples
#    inside the execve() call itself (their user registers are the old image's, whose memory
#    is gone: "[unwind: stack unreadable]" is the truth there), the exit, and samples at the
#    dynamic loader's entry point before its first call (ld.so's _start has no CFI and no
#    symbol: "[unwind: no CFI]" whatever the timing; counted and printed, open work).
# 2. The replay is the eBPF walk: under STACKSCOPE_DEFER=verify every sample carries a stack
#    copy from its first frame and userspace replays the whole walk with the same step code
#    while the tables exist; the frames must be identical, bit for bit, to what eBPF sent.
source "$(dirname "$0")/lib.sh"
need_root

HZ=999 RUNS=10
DATA=$SS_ROOT/tests/data

# counter FILE TEXT: the number before TEXT on the "deferred" line of the summary
deferred_counter()
{
	sed -n "s/^deferred .* \([0-9]\+\) $2.*/\1/p" "$1" | head -1
}

# --- 1. a never-seen binary dlopen()ing a never-seen library ---
for i in $(seq 1 $RUNS); do
	id=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	gcc -O2 -fomit-frame-pointer -fPIC -shared -Wl,--build-id=0x$id \
		-o "$TMP/libfresh$i.so" "$DATA/wl_fresh_lib.c" &&
		gcc -O2 -fomit-frame-pointer -I"$DATA" -Wl,--build-id=0x${id}01 \
			-o "$TMP/fresh_main$i" "$DATA/wl_fresh_main.c" -ldl ||
		{ fail "cannot compile the fresh workload (gcc)"; finish; }
done
f=$TMP/fresh.folded
record "$TMP/fresh.err" -F $HZ -o "$f" -- bash -c \
	"for ((i = 1; i <= $RUNS; i++)); do '$TMP'/fresh_main\$i '$TMP'/libfresh\$i.so 0.15 || exit 1; done"
check_eq "fresh binaries: exit status" $? 0
# The first 50 ms of each process: everything but late_burn, the execve() call and the exit.
entry=$(samples <(sed 's/^fresh_main[0-9]*;/fresh;/' "$f") fresh '^fresh;\[unwind: no CFI\];ld-linux-x86-64\.so\.2\+0x[0-9a-f]+$')
echo "        samples at ld.so's entry point (no CFI there, left out): $entry"
early=$(awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
	if (s !~ /^fresh_main[0-9]+;/ || s ~ /late_burn|__x64_sys_execve|__x64_sys_exit_group|;exit;/) next
	if (s ~ /^fresh_main[0-9]+;\[unwind: no CFI\];ld-linux-x86-64\.so\.2\+0x[0-9a-f]+$/) next
	t += n
	if (s ~ /\[unwind|\[unknown\]|\[truncated\]/) next
	if (s ~ /early_burn/ && s !~ /^fresh_main[0-9]+;_start;__libc_start_main(_impl)?;([^;]*;)?main;fresh_entry;early_burn(;|$)/) next
	c += n } END { print c + 0, t + 0 }' "$f")
burn=$(samples <(sed 's/^fresh_main[0-9]*;/fresh;/' "$f") fresh ';early_burn(;|$)')
check_ge "fresh binaries: samples in early_burn (their first 50 ms)" "$burn" 50
check_pct "fresh binaries: first 50 ms complete (_start .. main;fresh_entry;early_burn, or the loader's)" \
	${early% *} ${early#* } 95 || { grep '^fresh_main' "$f" | grep -v late_burn | grep -v 'early_burn [0-9]*$' | sort -t' ' -k2 -rn | head -8 | cut -c1-300; }
deferred=$(deferred_counter "$TMP/fresh.err" "samples with a stack copy")
completed=$(deferred_counter "$TMP/fresh.err" "completed")
expired=$(deferred_counter "$TMP/fresh.err" "expired")
echo "        deferred ${deferred:-0}, completed ${completed:-0}, expired ${expired:-0}"
check_ge "fresh binaries: samples deferred until their table existed" "${deferred:-0}" 1
check_eq "fresh binaries: every deferred sample completed (none expired)" \
	"${completed:-0}/${expired:-0}" "${deferred:-0}/0" || grep -E '^deferred|^user stacks' "$TMP/fresh.err"

# --- 2. the replay gives eBPF's frames, bit for bit ---
verify()
{
	local name=$1 v same diff
	have_fixture "$name" || return
	STACKSCOPE_DEFER=verify record "$TMP/$name.err" -F 499 -o "$TMP/$name.folded" -- "$FIX/$name" 1
	check_eq "verify $name: exit status" $? 0
	v=$(grep '^replay check' "$TMP/$name.err")
	same=$(sed -n 's/^replay check *\([0-9]\+\) identical.*/\1/p' <<<"$v")
	diff=$(sed -n 's/.*, \([0-9]\+\) different.*/\1/p' <<<"$v")
	check_ge "verify $name: replays identical to eBPF's walk" "${same:-0}" 50 || echo "        $v"
	check_eq "verify $name: replays different from eBPF's walk" "${diff:-missing}" 0
}
verify wl_chain_nofp
verify wl_signal
verify wl_qsort

finish
