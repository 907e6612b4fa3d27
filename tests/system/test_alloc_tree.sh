#!/bin/bash
# record --alloc -- COMMAND: the probes are the command's processes' own (src/sampler/
# alloc_procs.h), and what a process's end does to the in-use view:
#   1. pid-bound: a process outside the recording reads its own malloc's first byte and finds
#      no breakpoint (0xcc) there; the command's program, exec'd after the probes were
#      attached, finds one (the probe followed it across exec);
#   2. exec: tests/data/wl_alloc_tree.c leaks 16 MiB, then execs wl_alloc: wl_alloc's chain and
#      leak found (the leak within 10 %), the old image's 16 MiB allocated (by its comm), none
#      of it in use (its heap went with the exec), counted in the summary;
#   3. fork: two children, let go once record says their probes are attached (record -v):
#      "stays" leaks 32 MiB and outlives the command (in use at the end, within 10 %); "exits"
#      leaks 24 MiB and exits while the recording goes on (allocated, none in use);
#   4. tests/data/wl_alloc_odd.c (an allocator of its own whose free accepts anything): double
#      frees, realloc(p, 0) and frees of pointers no allocator returned leave the leak's 16 MiB
#      in use exactly and nothing else in use, nothing negative;
#   5. an allocator preloaded by a shell the command runs: probed once the process maps it.
# Blocks of 2 MiB at --alloc-rate 65536: each one sampled (1 - e^-32), the sizes exact.
# No uprobe left after record exits or is killed: test_alloc.sh.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_alloc_tree || finish
have_fixture wl_alloc_odd || finish

STACKS="/usr/bin/python3 $SS_ROOT/tests/system/pprof_stacks.py"
MIB=1048576
# the first byte of this process's malloc, in hex
FIRST_BYTE='import ctypes; a = ctypes.cast(ctypes.CDLL(None).malloc, ctypes.c_void_p).value; print("%02x" % ctypes.string_at(a, 1)[0])'

# sum TYPE PROFILE ERE: the values of TYPE of the stacks (comm first) matching ERE
sum()
{
	$STACKS --comm --value="$1" "$2" | awk -v re="$3" '$0 ~ re { s += $NF } END { printf "%.0f\n", s }'
}

# within NAME GOT WANT PCT
within()
{
	check_le "$1 (upper $4 %)" $(($2 * 100)) $(($3 * (100 + $4)))
	check_ge "$1 (lower $4 %)" $(($2 * 100)) $(($3 * (100 - $4)))
}

# 1. Only the command's processes carry the breakpoints.
"$SS" record --alloc -o "$TMP/s.pb.gz" -- sleep 60 2>"$TMP/s.err" &
rec=$!
_bg_pids+=("$rec")
if wait_recording "$TMP/s.err" "$rec"; then
	byte=$(python3 -c "$FIRST_BYTE")
	check "pid-bound: a process outside the recording: no breakpoint on malloc ($byte)" \
		test -n "$byte" -a "$byte" != cc
else
	fail "pid-bound: record did not start: $(tail -3 "$TMP/s.err")"
fi
kill -INT "$rec"
wait "$rec" 2>/dev/null
record "$TMP/b.err" -q --alloc -o "$TMP/b.pb.gz" -- python3 -c "$FIRST_BYTE" >"$TMP/b.out"
check_eq "pid-bound: the command's exec'd program has the breakpoint (0xcc)" "$(cat "$TMP/b.out")" cc

# 2. A program that allocates, then execs another.
# wl_alloc waits 2 s first (its environment): its unwind table is built by then on a loaded
# box (it is built without frame pointers and runs ~50 ms)
WL_START_DELAY=2 record "$TMP/e.err" --alloc --alloc-rate 65536 -o "$TMP/e.pb.gz" -- \
	"$FIX/wl_alloc_tree" exec "$FIX/wl_alloc" 64 "$TMP/e.truth"
check_eq "exec: stackscope exit status" $? 0
t_leak=$(awk '$1 == "leak" { print $2 }' "$TMP/e.truth")
within "exec: the exec'd program's leak in inuse_space" \
	"$(sum inuse_space "$TMP/e.pb.gz" '^wl_alloc;.*;main;leak_blocks;\[alloc: malloc\] ')" \
	"${t_leak:-0}" 10
check_ge "exec: the exec'd program's alloc_hot chain found" \
	"$(sum alloc_space "$TMP/e.pb.gz" '^wl_alloc;.*;main;alloc_hot;take_hot;')" $((64 * MIB / 2))
# by its comm: its frames are named only if the reader got to them before the exec (on a
# loaded box it may not: the new image's files are what /proc shows then, "[unknown]")
within "exec: the old image's 16 MiB in alloc_space" \
	"$(sum alloc_space "$TMP/e.pb.gz" '^wl_alloc_tree;.*\[alloc: malloc\] ')" $((16 * MIB)) 10
check_eq "exec: none of it in use (its heap went with the exec)" \
	"$(sum inuse_space "$TMP/e.pb.gz" '^wl_alloc_tree;')" 0
check "exec: the summary counts what the exec took out" \
	grep -qE '^in use .* [1-9][0-9]* taken out at their process.s exit or exec' "$TMP/e.err"

# 3. Children forked by the command: probed before they allocate (the test waits for it).
D=$TMP/fork
mkdir -p "$D"
timeout -k 5 "$SS_TIMEOUT" "$SS" record -v --alloc --alloc-rate 65536 -o "$TMP/f.pb.gz" -- \
	"$FIX/wl_alloc_tree" fork "$D" 2>"$TMP/f.err" &
rec=$!
_bg_pids+=("$rec")
for _ in $(seq 600); do
	[[ -s $D/stays.pid && -s $D/exits.pid ]] && break
	sleep 0.1
done
stays=$(cat "$D/stays.pid" 2>/dev/null) exits=$(cat "$D/exits.pid" 2>/dev/null)
[[ -n $stays ]] && _bg_pids+=("$stays")
probed=0
for p in $stays $exits; do
	wait_log "$TMP/f.err" "$rec" "uprobes on .* in process $p\$" && probed=$((probed + 1))
done
check_eq "fork: both children's probes attached (record -v)" "$probed" 2
touch "$D/go"
wait "$rec"
check_eq "fork: stackscope exit status" $? 0
touch "$D/end"
within "fork: the child that outlives the command: its leak in inuse_space" \
	"$(sum inuse_space "$TMP/f.pb.gz" ';child_leak;leak;\[alloc: malloc\] ')" $((32 * MIB)) 10
within "fork: the child that exits mid-run: its 24 MiB in alloc_space" \
	"$(sum alloc_space "$TMP/f.pb.gz" ';exiting_leak;leak;\[alloc: malloc\] ')" $((24 * MIB)) 10
check_eq "fork: ... none of it in use (not a leak: its process is gone)" \
	"$(sum inuse_space "$TMP/f.pb.gz" ';exiting_leak;')" 0
check "fork: the summary says the children were probed after their fork" \
	grep -qE '^alloc probes +3 processes .* 2 forked children probed' "$TMP/f.err" ||
	grep -E '^alloc probes' "$TMP/f.err"

# 4. Frees an allocator cannot match.
record "$TMP/o.err" --alloc --alloc-rate 65536 -o "$TMP/o.pb.gz" -- "$FIX/wl_alloc_odd" \
	>"$TMP/o.out"
check_eq "odd frees: the workload and stackscope exit status" $? 0
check "odd frees: the executable's own malloc probed" \
	grep -q "malloc served by $FIX/wl_alloc_odd" "$TMP/o.err"
t_leak=$(awk '$1 == "leak" { print $2 }' "$TMP/o.out")
within "odd frees: the leak's inuse_space" \
	"$(sum inuse_space "$TMP/o.pb.gz" ';main;leak_known;block;\[alloc: malloc\] ')" \
	"${t_leak:-0}" 1
for chain in double_free realloc_zero; do
	check_ge "odd frees: $chain allocated (32 MiB)" \
		"$(sum alloc_space "$TMP/o.pb.gz" ";main;$chain;block;")" $((32 * MIB * 9 / 10))
	check_eq "odd frees: $chain: nothing in use" \
		"$(sum inuse_space "$TMP/o.pb.gz" ";main;$chain;")" 0
done
check_eq "odd frees: no negative value in inuse_space" \
	"$($STACKS --value=inuse_space "$TMP/o.pb.gz" | grep -c ' -[0-9]*$')" 0

# 5. An allocator the command does not name: a shell forks and execs wl_alloc with jemalloc
#    preloaded; record finds it when the process maps it, probed from then on (counted).
lib=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1)
if [[ -z $lib ]]; then
	skip_setup "libjemalloc.so.2 missing"
else
	WL_START_DELAY=2 record "$TMP/j.err" --alloc --alloc-rate 65536 -o "$TMP/j.pb.gz" -- \
		sh -c "LD_PRELOAD=$lib $FIX/wl_alloc 64 $TMP/j.truth; true"
	check_eq "preloaded later: stackscope exit status" $? 0
	check "preloaded later: jemalloc probed once the process mapped it" \
		grep -qE '^alloc probes .* [1-9][0-9]* allocator files probed after a process mapped' \
		"$TMP/j.err"
	# wl_alloc is the shell's child and exits before it: its leak allocated, not in use (3.)
	t_leak=$(awk '$1 == "leak" { print $2 }' "$TMP/j.truth")
	within "preloaded later: wl_alloc's leak in alloc_space, through jemalloc" \
		"$(sum alloc_space "$TMP/j.pb.gz" '^wl_alloc;.*;main;leak_blocks;\[alloc: malloc\] ')" \
		"${t_leak:-0}" 10
	check_eq "preloaded later: ... not in use (the child exited before the command)" \
		"$(sum inuse_space "$TMP/j.pb.gz" '^wl_alloc;')" 0
fi

finish
