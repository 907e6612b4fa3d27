#!/bin/bash
# Never-seen code from its first instruction, with and without deferred unwinding
# (STACKSCOPE_DEFER=0): the workload of tests/system/test_deferred.sh, part 1. Each round
# compiles 10 fresh binaries and 10 fresh libraries (unique build ids: no table, no cache
# entry), then records at 999 Hz `for i in 1..10: fresh_main$i libfresh$i.so 0.15`, once with
# deferral on and once off (alternating, new files for each recording). Counted: samples of
# the first 50 ms of each process (early_burn, the dynamic loader, the dlopen; not the execve
# call, the exit, or ld.so's entry point) complete back to _start, and record's deferral line.
# "all": every sample of the processes (late_burn too; not the execve call or the exit, which
# have no user stack of the new image) complete back to _start, the issue's "25 never-seen
# 120 ms processes" with N=25 SECS=0.12 HZ=199.
# Usage: sudo [N=10] [SECS=0.15] [HZ=999] bench/deferred.sh [ROUNDS]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
N=${N:-10}
SECS=${SECS:-0.15}
HZ=${HZ:-999}
DATA=tests/data
bench_out deferred
need_root

fresh() { # N new binary + library pairs in $out
	local i id
	for i in $(seq 1 "$N"); do
		id=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
		gcc -O2 -fomit-frame-pointer -fPIC -shared -Wl,--build-id=0x$id \
			-o "$out/libfresh$i.so" "$DATA/wl_fresh_lib.c" || exit 1
		gcc -O2 -fomit-frame-pointer -I"$DATA" -Wl,--build-id=0x${id}01 \
			-o "$out/fresh_main$i" "$DATA/wl_fresh_main.c" -ldl || exit 1
	done
}

early() { # folded -> complete/total of the first 50 ms
	awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
		if (s !~ /^fresh_main[0-9]+;/ || s ~ /late_burn|__x64_sys_execve|__x64_sys_exit_group|;exit;/) next
		if (s ~ /^fresh_main[0-9]+;\[unwind: no CFI\];ld-linux-x86-64\.so\.2\+0x[0-9a-f]+$/) next
		t += n
		if (s ~ /\[unwind|\[unknown\]|\[truncated\]/) next
		if (s ~ /early_burn/ && s !~ /^fresh_main[0-9]+;_start;__libc_start_main(_impl)?;([^;]*;)?main;fresh_entry;early_burn(;|$)/) next
		c += n } END { printf "%d/%d", c, t }' "$1"
}

all() { # folded -> complete/total of every sample of the fresh processes
	awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
		if (s !~ /^fresh_main[0-9]+;/ || s ~ /__x64_sys_execve|__x64_sys_exit_group/) next
		t += n
		if (s ~ /\[unwind|\[unknown\]|\[truncated\]/) next
		if (s ~ /^fresh_main[0-9]+;_start;/) c += n } END { printf "%d/%d", c, t }' "$1"
}

run() { # name STACKSCOPE_DEFER
	fresh
	STACKSCOPE_DEFER=$2 ./stackscope record -F "$HZ" -o "$out/$1.folded" -- bash -c \
		"for ((i = 1; i <= $N; i++)); do '$out'/fresh_main\$i '$out'/libfresh\$i.so $SECS; done" \
		2>"$out/$1.err"
	printf '%-10s %-10s %-10s %s\n' "$1" "$(early "$out/$1.folded")" "$(all "$out/$1.folded")" \
		"$(sed -n 's/^deferred *//p' "$out/$1.err" | cut -d';' -f1)"
}

echo "$N never-seen binaries + libraries x $SECS s, $HZ Hz, $(date -u '+%F %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %-10s %-10s %s\n' run "first 50ms" all "deferred"
for r in $(seq "$ROUNDS"); do
	run "on$r" 1
	run "off$r" 0
done
