#!/bin/bash
# Process selection: -p PID keeps only that process, -p A,B only those two, and
# `-- COMMAND` only the command's process tree, and stops when the command exits.
# Each runs next to other CPU burners that must not show up. Sample minimums are low (the
# box is shared: a burner may get a fraction of a CPU); the chain checks are percentages.
source "$(dirname "$0")/lib.sh"
need_root
for w in wl_chain_fp wl_chain_nofp wl_recurse; do have_fixture $w || finish; done

spawn target "$FIX/wl_chain_fp" 8
spawn other "$FIX/wl_chain_nofp" 8
sleep 0.3

# -p PID
f=$TMP/p1.folded
record "$TMP/p1.err" -F 499 -d 1.5 -q -p "$target" -o "$f"
check_eq "-p PID: exit status" $? 0
check_eq "-p PID: only the target's comm in the output" "$(comms "$f" | tr '\n' ' ')" "wl_chain_fp "
check_ge "-p PID: samples of the target" "$(samples "$f" wl_chain_fp)" 100
check_eq "-p PID: samples of the other burner" "$(samples "$f" wl_chain_nofp)" 0

# -p A,B
f=$TMP/p2.folded
record "$TMP/p2.err" -F 499 -d 1.5 -q -p "$target,$other" -o "$f"
check_eq "-p A,B: exit status" $? 0
check_eq "-p A,B: exactly the two comms" "$(comms "$f" | tr '\n' ' ')" \
	"wl_chain_fp wl_chain_nofp "
check_ge "-p A,B: samples of A" "$(samples "$f" wl_chain_fp)" 50
check_ge "-p A,B: samples of B" "$(samples "$f" wl_chain_nofp)" 50
kill "$target" "$other" 2>/dev/null
wait "$target" "$other" 2>/dev/null

# -- COMMAND, with a burner outside the tree
spawn noise "$FIX/wl_chain_nofp" 10
f=$TMP/cmd.folded
start=$(date +%s%N)
record "$TMP/cmd.err" -F 499 -q -o "$f" -- "$FIX/wl_chain_fp" 1.5
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
check_eq "-- COMMAND: exit status" $rc 0
check "-- COMMAND: the recording ends with the command (${ms} ms for a 1.5 s command)" \
	test $ms -ge 1400 -a $ms -le 4000
# the forked child is "stackscope" until it execs: tolerated, if it is a sliver
n=$(samples "$f" wl_chain_fp)
check_eq "-- COMMAND: only the command's comm (and its pre-exec fork)" \
	"$(comms "$f" | grep -vx stackscope | tr '\n' ' ')" "wl_chain_fp "
check_le "-- COMMAND: samples of the pre-exec fork (comm stackscope), in % of the command's" \
	$(($(samples "$f" stackscope) * 100 / (n + 1))) 2
check_ge "-- COMMAND: samples of the command" "$n" 100

# -- COMMAND: the whole tree (a shell and two children running at once), still not the noise
f=$TMP/tree.folded
record "$TMP/tree.err" -F 499 -q -o "$f" -- \
	sh -c "\"$FIX/wl_chain_fp\" 1.2 & \"$FIX/wl_recurse\" 1.2; wait"
check_eq "-- COMMAND tree: exit status" $? 0
extra=$(comms "$f" | grep -vxE 'stackscope|sh|wl_chain_fp|wl_recurse' | tr '\n' ' ')
check_eq "-- COMMAND tree: comms outside the tree" "$extra" ""
n=$(samples "$f" wl_chain_fp)
check_ge "-- COMMAND tree: samples of child 1 (wl_chain_fp)" "$n" 50
check_ge "-- COMMAND tree: samples of child 2 (wl_recurse)" "$(samples "$f" wl_recurse)" 50
check_pct "-- COMMAND tree: child 1 samples with the complete chain" "$(samples "$f" wl_chain_fp \
	"^wl_chain_fp;${START_RE}main;chain_a;chain_b;chain_c;hot_leaf(;|\$)")" "$n" 80

# system-wide (no -p, no COMMAND) sees both the noise and a second burner
spawn extra2 "$FIX/wl_recurse" 3
f=$TMP/all.folded
record "$TMP/all.err" -F 499 -d 1.5 -q -o "$f"
check_eq "system-wide: exit status" $? 0
check_ge "system-wide: samples of burner 1" "$(samples "$f" wl_chain_nofp)" 50
check_ge "system-wide: samples of burner 2" "$(samples "$f" wl_recurse)" 50

finish
