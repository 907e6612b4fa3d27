#!/bin/bash
# Memory growth (record --faults): page faults sampled every N faults, brk() and anonymous
# mmap() calls, with the stacks CPU samples have. tests/data/wl_memgrow.c grows memory from two
# chains in the ratio 3:1 (grow_big/heap_big vs grow_small/heap_small, 8 rounds of 36 MiB)
# and says what each did:
#   - fault_bytes: each chain's share of the two within 10 % of its true share, and the sum
#     within 10 % of the bytes touched (a sample every 64 faults: ~1150 samples);
#   - mapped_bytes: exactly what each chain asked of mmap() and brk() (every call is taken);
#   - --faults alone has no cpu sample type; --faults --cpu has both; bad periods are refused.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_memgrow || finish

STACKS="/usr/bin/python3 $SS_ROOT/tests/system/pprof_stacks.py"

# truth FILE CHAIN COLUMN: the workload's figure (2: faults, 3: mapped bytes)
truth()
{
	awk -v c="$2" -v k="$3" '$1 == c { print $k }' "$1"
}

# share_within NAME PART WHOLE WANT_PERMILLE PCT: PART/WHOLE within PCT % of WANT (relative)
share_within()
{
	local got=$(($3 > 0 ? $2 * 1000 / $3 : -1))
	if [[ $3 -gt 0 && $(((got - $4) * 100)) -le $(($4 * $5)) &&
		$((($4 - got) * 100)) -le $(($4 * $5)) ]]; then
		ok "$1 (${got}/1000 vs ${4}/1000: within $5 %)"
	else
		fail "$1 (${got}/1000 vs ${4}/1000: not within $5 %)"
	fi
}

# within NAME GOT WANT PCT
within()
{
	if [[ $3 -gt 0 && $((($2 - $3) * 100)) -le $(($3 * $4)) &&
		$((($3 - $2) * 100)) -le $(($3 * $4)) ]]; then
		ok "$1 ($2 vs $3: within $4 %)"
	else
		fail "$1 ($2 vs ${3:-?}: not within $4 %)"
	fi
}

# 1. --faults alone.
record "$TMP/f.err" --faults -o "$TMP/f.pb.gz" -- "$FIX/wl_memgrow" 8 "$TMP/f.truth"
check_eq "faults: stackscope exit status" $? 0
$STACKS --value=fault_bytes "$TMP/f.pb.gz" | sed 's/^/wl_memgrow;/' >"$TMP/f.fb"
$STACKS --value=mapped_bytes "$TMP/f.pb.gz" | sed 's/^/wl_memgrow;/' >"$TMP/f.mb"
M=';main;'
big=$(samples "$TMP/f.fb" wl_memgrow "${M}(grow_big;map_and_touch|heap_big;brk_and_touch);\\[mem: page fault\\]$")
small=$(samples "$TMP/f.fb" wl_memgrow "${M}(grow_small;map_and_touch|heap_small;brk_and_touch);\\[mem: page fault\\]$")
want_big=$(($(truth "$TMP/f.truth" big 2) * 4096))
want_small=$(($(truth "$TMP/f.truth" small 2) * 4096))
share_within "faults: big chains' share of fault_bytes" "$big" $((big + small)) \
	$((want_big * 1000 / (want_big + want_small > 0 ? want_big + want_small : 1))) 10 ||
	show "$TMP/f.fb" wl_memgrow
within "faults: fault_bytes of both chains vs bytes touched" $((big + small)) \
	$((want_big + want_small)) 10
all=$(samples "$TMP/f.fb" wl_memgrow '\[mem: page fault\]$')
check_pct "faults: the two chains' part of the process's fault_bytes" $((big + small)) "$all" 90
check_eq "faults: mapped_bytes of grow_big's mmap" \
	"$(samples "$TMP/f.mb" wl_memgrow "${M}grow_big;map_and_touch;.*\\[mem: mmap\\]$")" \
	$((8 * 24 * 1024 * 1024))
check_eq "faults: mapped_bytes of grow_small's mmap" \
	"$(samples "$TMP/f.mb" wl_memgrow "${M}grow_small;map_and_touch;.*\\[mem: mmap\\]$")" \
	$((8 * 8 * 1024 * 1024))
check_eq "faults: mapped_bytes of heap_big's brk" \
	"$(samples "$TMP/f.mb" wl_memgrow "${M}heap_big;brk_and_touch;.*\\[mem: brk\\]$")" \
	$((8 * 3 * 1024 * 1024))
check_eq "faults: mapped_bytes of heap_small's brk" \
	"$(samples "$TMP/f.mb" wl_memgrow "${M}heap_small;brk_and_touch;.*\\[mem: brk\\]$")" \
	$((8 * 1 * 1024 * 1024))
check_eq "faults: the workload's own mapped total (big)" "$(truth "$TMP/f.truth" big 3)" \
	$((8 * 27 * 1024 * 1024))
check "faults: no cpu sample type" bash -c "! $STACKS --value=cpu $TMP/f.pb.gz 2>/dev/null"
check "faults: faults/count sample type" bash -c "$STACKS --value=faults $TMP/f.pb.gz >/dev/null"
check "faults: summary counts page-fault samples" grep -q '^memory growth  [1-9][0-9]* page-fault samples' \
	"$TMP/f.err"

# 2. --faults --cpu: both in one profile; no CPU time in the memory leaves.
record "$TMP/b.err" -q --faults --cpu -F 499 -o "$TMP/b.pb.gz" -- "$FIX/wl_memgrow" 8 "$TMP/b.truth"
check_eq "faults + cpu: stackscope exit status" $? 0
$STACKS --value=cpu "$TMP/b.pb.gz" | sed 's/^/wl_memgrow;/' >"$TMP/b.cpu"
$STACKS --value=faults "$TMP/b.pb.gz" | sed 's/^/wl_memgrow;/' >"$TMP/b.faults"
check_eq "faults + cpu: no CPU time in the memory leaves" \
	"$(samples "$TMP/b.cpu" wl_memgrow '\[mem: [a-z ]+\]$')" 0
check_ge "faults + cpu: CPU samples of the workload" "$(samples "$TMP/b.cpu" wl_memgrow "${M}")" 1
within "faults + cpu: faults of both chains vs pages touched" \
	"$(samples "$TMP/b.faults" wl_memgrow "${M}(grow|heap)_(big|small);")" \
	$(($(truth "$TMP/b.truth" big 2) + $(truth "$TMP/b.truth" small 2))) 10

# 3. Bad values.
for bad in 0 -1 x 1000000001; do
	"$SS" record --faults --fault-period "$bad" -o "$TMP/x.pb.gz" -- true 2>"$TMP/bad.err"
	check_eq "--fault-period $bad refused" $? 2
done
check "the error names the option" grep -q -- '--fault-period must be' "$TMP/bad.err"

finish
