#!/bin/bash
# Short-lived processes: wl_short runs 8 children one after another, each burning ~120 ms in
# main -> short_work -> short_leaf. Every child is new to the profiler (new pid, mappings
# and unwind tables to load), so samples taken before its tables are ready show up here.
# Checked under `-- COMMAND` (children of the command) and system-wide.
# Then an exec loop (2,000 `/bin/true` from one shell): a sample inside execve() past its point
# of no return has no user stack (the old image's memory is gone, the new one has not run):
# it must come out as its kernel frames alone, counted "in execve, no user stack", never as
# an "[unwind: ...]" failure (before: 19 % of this loop's samples were "stack unreadable"
# or "unmapped pc" there); and its exits must keep their user stacks or have none, without
# an "[unwind: ...]" frame either.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_short || finish

CHAIN='main;short_work;short_leaf(;|$)'

# check_short FILE WHAT
check_short()
{
	local f=$1 what=$2 total named full
	total=$(samples "$f" wl_short ';short_(work|leaf)(;|$)')
	named=$(samples "$f" wl_short ";$CHAIN")
	full=$(samples "$f" wl_short "^wl_short;${START_RE}$CHAIN")
	# 8 x 120 ms at 499 Hz is ~480 samples on an idle box; the box may be shared
	check_ge "$what: samples in short_work/short_leaf" "$total" 80
	check_pct "$what: of those, main;short_work;short_leaf" "$named" "$total" 85
	check_pct "$what: of those, complete back to _start" "$full" "$total" 85 ||
		show "$f" wl_short
}

record "$TMP/cmd.err" -F 499 -q -o "$TMP/cmd.folded" -- "$FIX/wl_short" 8
check_eq "-- wl_short 8: exit status" $? 0
check_short "$TMP/cmd.folded" "-- wl_short 8"

# system-wide: start the recording first, then the launcher once it samples
record "$TMP/all.err" -F 499 -d 6 -o "$TMP/all.folded" &
rec=$!
wait_recording "$TMP/all.err" $rec || fail "system-wide: the recording did not start"
"$FIX/wl_short" 8
wait $rec
check_eq "system-wide: exit status" $? 0
check_short "$TMP/all.folded" "system-wide"

record "$TMP/exec.err" -F 999 -o "$TMP/exec.folded" -- bash -c \
	'for ((i = 0; i < 2000; i++)); do /bin/true; done'
check_eq "exec loop: exit status" $? 0
in_exec=$(awk '/sys_execve/ { n += $NF } END { print n + 0 }' "$TMP/exec.folded")
in_exec_bad=$(awk '/sys_execve/ && /\[unwind|\[unknown\]/ { n += $NF } END { print n + 0 }' \
	"$TMP/exec.folded")
counted=$(sed -n 's/^user stacks .*in execve, no user stack: \([0-9]\+\).*/\1/p' "$TMP/exec.err")
check_ge "exec loop: samples inside execve()" "$in_exec" 20
# (at most 1 %: a forked shell's exec read before its point of no return, 1 in ~400, may end at
# an [unknown] frame of the parent's mappings)
check_le "exec loop: of those, with an [unwind: ...] or [unknown] frame (<= 1 %)" "$in_exec_bad" \
	$((in_exec / 100)) ||
	grep 'sys_execve' "$TMP/exec.folded" | grep -E '\[unwind|\[unknown\]' | head -3 | cut -c1-250
check_ge "exec loop: counted 'in execve, no user stack'" "${counted:-0}" 1
# The exit: eBPF's entries of a process outlive its exit tracepoint (on 6.18 it comes before
# exit_mm(): 5 of 111 exit samples were "[unwind: unmapped pc]" when on_exit dropped them)
in_exit=$(awk '/sys_exit_group/ { n += $NF } END { print n + 0 }' "$TMP/exec.folded")
in_exit_bad=$(awk '/sys_exit_group/ && /\[unwind|\[unknown\]/ { n += $NF } END { print n + 0 }' \
	"$TMP/exec.folded")
check_ge "exec loop: samples inside exit_group()" "$in_exit" 20
# (at most 1 %: 1 in ~130 runs on_exit itself, whose walk may meet the binary's mapping gone)
check_le "exec loop: of those, with an [unwind: ...] or [unknown] frame (<= 1 %)" "$in_exit_bad" \
	$((in_exit / 100)) ||
	grep 'sys_exit_group' "$TMP/exec.folded" | grep -E '\[unwind|\[unknown\]' | head -3 | cut -c1-250

finish
