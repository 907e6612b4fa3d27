#!/bin/bash
# Allocation profiling (record --alloc): uprobes on libc's malloc family, sampled by bytes
# (mean 512 KiB), unbiased weights, live samples kept until freed. tests/data/wl_alloc.c
# allocates 8 GiB from main -> alloc_hot (malloc, posix_memalign), a third of that from
# main -> alloc_cold (calloc + realloc) and leaks 32 x 2 MiB from main -> leak_blocks, with
# realloc(p, 0) and free(NULL) on the way:
#   - alloc_space: each chain's share within 5 % of its true share (relative): at the default
#     rate 8 GiB give ~16,000 samples in alloc_hot and ~5,500 in alloc_cold, the 5 % at 3.7
#     sigma for alloc_cold (1 GiB gave ~680: 1.3 sigma, a failure in five runs);
#   - inuse_space: the leak within 10 % of 64 MiB; nothing in use under alloc_hot or
#     alloc_cold (every allocation there was freed: a wrong leak would show);
#   - no uprobe and no program left behind after record exits, or is killed (SIGKILL).
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_alloc || finish

STACKS="/usr/bin/python3 $SS_ROOT/tests/system/pprof_stacks.py"

truth()
{
	awk -v c="$2" '$1 == c { print $2 }' "$1"
}

# share_within NAME PART WHOLE WANT_PART PCT: PART/WHOLE within PCT % of WANT_PART/WHOLE
share_within()
{
	if [[ $3 -gt 0 && $4 -gt 0 && $((($2 - $4) * 100)) -le $(($4 * $5)) &&
		$((($4 - $2) * 100)) -le $(($4 * $5)) ]]; then
		ok "$1 ($(($2 * 1000 / $3))/1000 vs $(($4 * 1000 / $3))/1000: within $5 %)"
	else
		fail "$1 (${2}/${3} vs ${4}/${3}: not within $5 %)"
	fi
}

probes_left()
{
	local n u
	n=$(bpftool prog show 2>/dev/null | grep -cE 'name (on_malloc|on_libc_free|on_alloc_return)')
	u=$(grep -c . /sys/kernel/tracing/uprobe_events 2>/dev/null)
	echo $((${n:-0} + ${u:-0}))
}

before=$(probes_left)
check_eq "no uprobe program of ours before the test" "$before" 0

# 1. Accuracy and the leak at the default rate.
record "$TMP/a.err" --alloc -o "$TMP/a.pb.gz" -- "$FIX/wl_alloc" 8192 "$TMP/a.truth"
check_eq "alloc: stackscope exit status" $? 0
$STACKS --value=alloc_space "$TMP/a.pb.gz" | sed 's/^/wl_alloc;/' >"$TMP/a.space"
$STACKS --value=inuse_space "$TMP/a.pb.gz" | sed 's/^/wl_alloc;/' >"$TMP/a.inuse"
M=';main;'
hot=$(samples "$TMP/a.space" wl_alloc "${M}alloc_hot;take_hot;\\[alloc: (malloc|posix_memalign)\\]$")
cold=$(samples "$TMP/a.space" wl_alloc "${M}alloc_cold;take_cold;\\[alloc: (calloc|realloc)\\]$")
leak=$(samples "$TMP/a.space" wl_alloc "${M}leak_blocks;\\[alloc: malloc\\]$")
t_hot=$(truth "$TMP/a.truth" hot) t_cold=$(truth "$TMP/a.truth" cold) t_leak=$(truth "$TMP/a.truth" leak)
total=$((hot + cold + leak)) t_total=$((t_hot + t_cold + t_leak))
# the true shares scaled to the estimated total: compare PART with WANT on one scale
share_within "alloc: alloc_hot's share of alloc_space" "$hot" "$total" \
	$((t_hot * (total / 1024) / (t_total / 1024))) 5 || show "$TMP/a.space" wl_alloc
share_within "alloc: alloc_cold's share of alloc_space" "$cold" "$total" \
	$((t_cold * (total / 1024) / (t_total / 1024))) 5
all=$(samples "$TMP/a.space" wl_alloc '\[alloc: [a-z_]+\]$')
check_pct "alloc: the three chains' part of the process's alloc_space" "$total" "$all" 95
check_le "alloc: alloc_space total vs the bytes asked (+/- 5 %, upper)" $((total * 100)) \
	$((t_total * 105))
check_ge "alloc: alloc_space total vs the bytes asked (+/- 5 %, lower)" $((total * 100)) \
	$((t_total * 95))
in_leak=$(samples "$TMP/a.inuse" wl_alloc "${M}leak_blocks;\\[alloc: malloc\\]$")
check_le "alloc: inuse_space of the leak (upper 10 %)" $((in_leak * 100)) $((t_leak * 110))
check_ge "alloc: inuse_space of the leak (lower 10 %)" $((in_leak * 100)) $((t_leak * 90))
check_eq "alloc: inuse_space under alloc_hot and alloc_cold (all freed)" \
	"$(samples "$TMP/a.inuse" wl_alloc "${M}alloc_(hot|cold);")" 0
check "alloc: sample types alloc_objects, inuse_objects" bash -c \
	"$STACKS --value=alloc_objects $TMP/a.pb.gz >/dev/null && $STACKS --value=inuse_objects $TMP/a.pb.gz >/dev/null"
check "alloc: no cpu sample type" bash -c "! $STACKS --value=cpu $TMP/a.pb.gz 2>/dev/null"
check "alloc: summary counts sampled allocations" \
	grep -qE '^allocations +[1-9][0-9]* sampled' "$TMP/a.err"
check_eq "alloc: no uprobe or program left after exit" "$(probes_left)" "$before"

# 2. A finer rate: more samples, the same shares.
record "$TMP/r.err" -q --alloc --alloc-rate 65536 -o "$TMP/r.pb.gz" -- "$FIX/wl_alloc" 256 \
	"$TMP/r.truth"
check_eq "alloc-rate 65536: stackscope exit status" $? 0
$STACKS --value=inuse_space "$TMP/r.pb.gz" | sed 's/^/wl_alloc;/' >"$TMP/r.inuse"
in_leak=$(samples "$TMP/r.inuse" wl_alloc "${M}leak_blocks;\\[alloc: malloc\\]$")
t_leak=$(truth "$TMP/r.truth" leak)
check_le "alloc-rate 65536: inuse_space of the leak (upper 10 %)" $((in_leak * 100)) \
	$((t_leak * 110))
check_ge "alloc-rate 65536: inuse_space of the leak (lower 10 %)" $((in_leak * 100)) \
	$((t_leak * 90))

# 3. record killed with SIGKILL while its uprobes are attached: none left.
"$SS" record -q --alloc -o "$TMP/k.pb.gz" -- sleep 30 2>"$TMP/k.err" &
rec=$!
_bg_pids+=("$rec")
for _ in $(seq 1 100); do
	[[ $(bpftool prog show 2>/dev/null | grep -c 'name on_malloc') -gt 0 ]] && break
	sleep 0.2
done
check_ge "killed: uprobe programs attached while recording" \
	"$(bpftool prog show 2>/dev/null | grep -c 'name on_malloc')" 1
child=$(pgrep -P "$rec" | head -1)
kill -9 "$rec"
wait "$rec" 2>/dev/null
[[ -n $child ]] && kill "$child" 2>/dev/null
sleep 1
check_eq "killed: no uprobe or program left" "$(probes_left)" "$before"

# 4. Bad values.
for bad in 0 x 1073741825; do
	"$SS" record --alloc --alloc-rate "$bad" -o "$TMP/x.pb.gz" -- true 2>"$TMP/bad.err"
	check_eq "--alloc-rate $bad refused" $? 2
done

finish
