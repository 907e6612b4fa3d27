#!/bin/bash
# Mappings known in eBPF the moment they appear (bpf/abi.h struct new_mappings): a process
# that execs a binary the profiler already knows, and libraries unmapped and replaced at the
# same address, come out right from their first sample.
#  1. wl_short 40 children of 10 ms each, exec'd one after another (files known from a first
#     run): their samples complete, and the summary shows lookups answered by eBPF-entered
#     mappings. Each child lives a few ms longer than userspace takes to notice it, so
#     without eBPF-entered mappings its first samples are "[unwind: unmapped pc]".
#     The same for a shell that execs wl_short over itself once it is known; and Python
#     started through env (two execs in a row): its frames from the first interval on.
#  2. wl_reload: dlopen a library, dlclose it, dlopen another with the same layout (usually
#     at the same address), in a loop: no frame of one library under the other's caller.
#     Again with copies of them nobody has seen (eBPF enters them as holes at first).
#  3. The same with eBPF-entered mappings turned off (STACKSCOPE_NO_NEW_MAPPINGS=1, what a
#     kernel without the task VMA iterator gets): frames still come out, but until the next
#     rescan a replaced library may show the old one's names (measured: 16-36 of ~400).
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_short || finish
have_fixture wl_reload || finish

CHAIN='main;short_work;short_leaf(;|$)'

# system-wide recording of COMMAND... into $TMP/NAME.{folded,err}, started once sampling runs
record_around()
{
	local name=$1 rec
	shift
	record "$TMP/$name.err" -F 499 -d 6 -o "$TMP/$name.folded" &
	rec=$!
	wait_recording "$TMP/$name.err" $rec || fail "$name: the recording did not start"
	"$@"
	wait $rec
	check_eq "$name: exit status" $? 0
}

# 1. short children of a known binary
# (a first run inside the recording makes the profiler know the files; then the measured one)
record_around short sh -c "'$FIX/wl_short' --sleep 700; '$FIX/wl_short' 40 10"
f=$TMP/short.folded
total=$(samples "$f" wl_short ';short_(work|leaf)(;|$)')
full=$(samples "$f" wl_short "^wl_short;${START_RE}$CHAIN")
early=$(samples "$f" wl_short '\[unwind: (unmapped pc|file not loaded)\]')
check_ge "short: samples in short_work/short_leaf" "$total" 30
check_pct "short: of those, complete back to _start" "$full" "$total" 95 || show "$f" wl_short
answered=$(sed -n 's/.*; \([0-9]*\) lookups answered by them.*/\1/p' "$TMP/short.err")
check_ge "short: lookups answered by eBPF-entered mappings" "${answered:-0}" 1 ||
	grep -E 'new mappings|user stacks' "$TMP/short.err"
check_le "short: wl_short samples ending unmapped or not loaded" "$early" $((total / 20 + 1))
# the 40 children exec a binary (and map libraries) eBPF knows: their exec records do not
# wake the reader, which takes their mappings from eBPF's entries without reading
# /proc/PID/maps, or finds them gone already and names them from the record alone
synced=$(sed -n 's/.*taken from eBPF alone \([0-9]*\) times.*/\1/p' "$TMP/short.err")
gone=$(sed -n 's/.*exited, \([0-9]*\) of them before the reader.*/\1/p' "$TMP/short.err")
check_ge "short: children seen through eBPF alone" $((${synced:-0} + ${gone:-0})) 30 ||
	grep -E '^processes' "$TMP/short.err"

# exec over a process that was already known (a shell that has run for a while): the new
# image's samples complete, none resolved through the old image's entries
record_around exec-over sh -c "'$FIX/wl_short' --sleep 700; exec '$FIX/wl_short' --child 300"
f=$TMP/exec-over.folded
total=$(samples "$f" wl_short ';short_(work|leaf)(;|$)')
full=$(samples "$f" wl_short "^wl_short;${START_RE}$CHAIN")
check_ge "exec over a known process: samples in short_work/short_leaf" "$total" 30
check_pct "exec over a known process: complete back to _start" "$full" "$total" 95 ||
	show "$f" wl_short

# 1b. Python through two execs in a row (env, then the interpreter): both exec records are in
# the ring when the reader wakes, the first one's sync already sees the interpreter's image,
# and the second must attach the runtime again (it dropped what it knew of the pid)
PY3=/usr/bin/python3
# (its process tree only: other Python processes on a busy machine are not the case)
record "$TMP/pyexec.err" -F 499 -o "$TMP/pyexec.folded" -- \
	sh -c "for i in 1 2 3 4 5 6; do env '$PY3' '$SS_ROOT/tests/data/py_chain.py' 0.6; done"
check_eq "pyexec: exit status" $? 0
f=$TMP/pyexec.folded
total=$(samples "$f" python3 ';PyEval_EvalCode;')
full=$(samples "$f" python3 ';PyEval_EvalCode;_PyEval_EvalFrameDefault;<module>(;|$)')
check_ge "python after env: samples running the script" "$total" 100
# (measured: 98-99 %; without the second attach 47-72 %, whole processes without a Python frame)
check_pct "python after env: of those, with Python frames" "$full" "$total" 90 || show "$f" python3

# 2. a library replaced by another at the same address
# check_reload NAME [exact]: with "exact", no frame of one library under the other's caller
check_reload()
{
	local name=$1 f=$TMP/$1.folded a b wrong
	a=$(samples "$f" wl_reload ";main;with_a;run_lib;reload_run;reload_entry_a;reload_hot_a(;|\$)")
	b=$(samples "$f" wl_reload ";main;with_b;run_lib;reload_run;reload_entry_b;reload_hot_b(;|\$)")
	wrong=$(samples "$f" wl_reload "(with_a;.*_b|with_b;.*_a)(;|\$)")
	check_ge "$name: samples in library a under with_a" "$a" 30
	check_ge "$name: samples in library b under with_b" "$b" 30
	[[ ${2:-} == exact ]] || return 0
	check_eq "$name: frames of one library under the other's caller" "$wrong" 0 || {
		show "$f" wl_reload
		grep -E 'new mappings|user stacks' "$TMP/$name.err"
	}
}
record_around reload sh -c "'$FIX/wl_reload' 0.2; sleep 1; '$FIX/wl_reload' 2"
check_reload reload exact

# the same with copies nobody has seen (new inodes): eBPF enters their first mappings as
# holes, userspace places those frames late, and must not name one library by the other
# when its view of the process predates the sample
mkdir "$TMP/fresh" && cp "$FIX"/wl_reload "$FIX"/wl_reload_[ab].so "$TMP/fresh/"
record_around reload-fresh "$TMP/fresh/wl_reload" 2
check_reload reload-fresh exact

# 3. the fallback: userspace-only mappings
STACKSCOPE_NO_NEW_MAPPINGS=1 record_around reload-off sh -c "'$FIX/wl_reload' 0.2; sleep 1; '$FIX/wl_reload' 2"
check_reload reload-off
check "reload-off: no mappings entered by eBPF" bash -c "! grep -q 'new mappings' '$TMP/reload-off.err'"

finish
