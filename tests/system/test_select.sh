#!/bin/bash
# timeout: 480
# Selection and probabilistic profiling (bpf/selection.h, src/proc/selection.c):
#  - burners with known names (copies of wl_chain_fp) in cgroups the test makes under the
#    cgroup v2 mount (one named like a Docker container's scope): each rule keeps exactly what
#    it should (the comms of the output); the rejected burners' samples are counted as not
#    selected, at a BPF cost far below a walked sample's, and under cgroup rules alone none is
#    walked first (no sample "of a process not classified yet");
#  - exclude wins over select; a process started during the run that a name rule selects is
#    profiled with its whole chain;
#  - agent --probabilistic-threshold 50 over >= 20 short intervals: the count of intervals on
#    lies in a binomial range that a fair draw leaves with a probability below 1e-4, off
#    intervals are counted as "not sampled" (not lost) and export nothing;
#  - SIGHUP with a changed --config switches the selection from the next interval, names a key
#    that needs a restart, and a broken file keeps the running configuration; SIGUSR1 writes
#    the counters and the agent runs on.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_fp || finish

CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
if [[ -z $CG2 ]]; then
	fail "no cgroup v2 mount on this machine"
	finish
fi
CGD=$CG2/ss_select_$$
CID=$(printf 'ss_select_%s' $$ | sha256sum | cut -c1-64)
CGDOCKER=$CGD/docker-$CID.scope
mkdir -p "$CGD/a" "$CGD/b" "$CGDOCKER" || { fail "cannot make cgroups under $CG2"; finish; }
cleanup_cgroups()
{
	cleanup
	rmdir "$CGD/a" "$CGD/b" "$CGDOCKER" "$CGD" 2>/dev/null
}
trap cleanup_cgroups EXIT

for n in burn_a burn_b burn_c burn_d burn_new; do
	cp "$FIX/wl_chain_fp" "$TMP/$n"
done
# start_burners: the four burners (again: a workload runs 60 s at most), three in cgroups of
# their own (the shell moves itself there, then execs); their pids in A, B, C, D
start_burners()
{
	local p
	for p in ${A:-} ${B:-} ${C:-} ${D:-}; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	spawn A sh -c "echo \$\$ > $CGD/a/cgroup.procs && exec $TMP/burn_a 55"
	spawn B sh -c "echo \$\$ > $CGD/b/cgroup.procs && exec $TMP/burn_b 55"
	spawn C "$TMP/burn_c" 55
	spawn D sh -c "echo \$\$ > $CGDOCKER/cgroup.procs && exec $TMP/burn_d 55"
	sleep 0.3
}
start_burners
check_eq "burn_a runs in its cgroup" "$(sed -n 's/^0:://p' /proc/$A/cgroup)" "${CGD#$CG2}/a"

CHAIN_RE="${START_RE}main;chain_a;chain_b;chain_c;hot_leaf(;|\$)"

# sel NAME ARGS...: a 2 s recording with ARGS; its folded file $TMP/NAME.folded, and from its
# selection line SEL_OUT (samples not selected), SEL_NS (BPF ns per one), WALK_NS (per walked
# sample), SEL_UNCL (samples of processes not classified yet)
sel()
{
	local name=$1 line
	shift
	record "$TMP/$name.err" -F 299 -d 2 -o "$TMP/$name.folded" "$@"
	check_eq "$name: exit status" $? 0 || tail -3 "$TMP/$name.err"
	line=$(grep 'selection: ' "$TMP/$name.err")
	SEL_OUT=$(sed -n 's/.*selection: \([0-9]*\) samples not selected.*/\1/p' <<<"$line")
	SEL_NS=$(sed -n 's/.*not selected in eBPF (\([0-9]*\) ns each.*/\1/p' <<<"$line")
	WALK_NS=$(sed -n 's/.*no walk; \([0-9]*\) ns per walked sample.*/\1/p' <<<"$line")
	SEL_UNCL=$(sed -n 's/.*), \([0-9]*\) of processes not classified yet.*/\1/p' <<<"$line")
}

burners() { comms "$1" | grep '^burn_' | tr '\n' ' '; }

# --- rules ------------------------------------------------------------------------------------
start_burners
sel name --select-name '^burn_(a|b)$'
check_eq "name: exactly the two burners (every comm)" "$(comms "$TMP/name.folded" | tr '\n' ' ')" \
	"burn_a burn_b "
check_ge "name: samples of burn_a" "$(samples "$TMP/name.folded" burn_a)" 20
check_ge "name: rejected samples counted as not selected" "${SEL_OUT:-0}" 20
check "name: a rejected sample costs at most a quarter of a walked one in BPF (${SEL_NS:-?} ns vs ${WALK_NS:-?} ns)" \
	test -n "$SEL_NS" -a -n "$WALK_NS" -a "$((${SEL_NS:-1} * 4))" -le "${WALK_NS:-0}"
echo "        rejected ${SEL_NS:-?} ns, walked ${WALK_NS:-?} ns per sample; ${SEL_UNCL:-?} samples walked before their (new) process was classified"

start_burners
sel excl --select-name '^burn_' --exclude-name '^burn_b$'
check_eq "select + exclude: exclude wins" "$(burners "$TMP/excl.folded")" "burn_a burn_c burn_d "

start_burners
sel cg --select-cgroup "${CGD#$CG2}"
check_eq "cgroup subtree: the burners in it" "$(comms "$TMP/cg.folded" | tr '\n' ' ')" \
	"burn_a burn_b burn_d "
check_eq "cgroup rules only: decided in eBPF, no sample walked first" "${SEL_UNCL:-?}" 0
check_ge "cgroup: samples not selected" "${SEL_OUT:-0}" 20

start_burners
sel cgglob --select-name '^burn_' --exclude-cgroup "${CGD#$CG2}/*"
check_eq "exclude glob: its cgroups' burners out" "$(comms "$TMP/cgglob.folded" | tr '\n' ' ')" \
	"burn_c "

start_burners
sel ctr --select-container "${CID:0:12}"
check_eq "container id prefix" "$(comms "$TMP/ctr.folded" | tr '\n' ' ')" "burn_d "

start_burners
sel mix --select-pid "$C" --select-cgroup "${CGD#$CG2}/a" --exclude-pid "$A"
check_eq "pid or cgroup, minus an excluded pid" "$(comms "$TMP/mix.folded" | tr '\n' ' ')" "burn_c "

# --- a new process a name rule selects ---------------------------------------------------------
for p in $A $B $C $D; do kill "$p" 2>/dev/null; done
# (-d 30: a bound; the recording is ended by SIGINT once burn_new has exited, as a user's Ctrl-C
# ends it: a fixed -d 8 waited 6 s after it)
"$SS" record -F 299 -d 30 --select-name '^burn_new$' -o "$TMP/new.folded" 2>"$TMP/new.err" &
RP=$!
_bg_pids+=($RP)
if wait_recording "$TMP/new.err" $RP; then
	"$TMP/burn_new" 2
	kill -INT $RP
	wait $RP
	check_eq "new process: exit status" $? 0
	n=$(samples "$TMP/new.folded" burn_new)
	check_eq "new process: only its comm" "$(comms "$TMP/new.folded" | tr '\n' ' ')" "burn_new "
	check_ge "new process: samples" "$n" 20
	check_pct "new process: samples with the complete chain" \
		"$(samples "$TMP/new.folded" burn_new "^burn_new;$CHAIN_RE")" "$n" 80
else
	fail "new process: the recording did not start: $(tail -2 "$TMP/new.err")"
fi

# pcomms FILE...: the comms of pprof files (sorted, one line)
pcomms()
{
	local f
	for f in "$@"; do $STACKS --comm "$f"; done >"$TMP/pcomms.folded"
	comms "$TMP/pcomms.folded" | tr '\n' ' '
}

# --- probabilistic profiling -----------------------------------------------------------------
mkdir -m 700 "$TMP/prob"
start_burners
"$SS" agent -F 99 --cache-dir "" --interval 0.25 --probabilistic-threshold 50 \
	--probabilistic-interval 0.5 --select-name '^burn_' --output-dir "$TMP/prob" \
	2>"$TMP/prob.err" &
APID=$!
_bg_pids+=($APID)
if wait_agent "$TMP/prob.err" $APID; then
	end=$((SECONDS + 60))
	while [[ $(grep -c 'probabilistic profiling: the next' "$TMP/prob.err") -lt 22 &&
		$SECONDS -lt $end ]]; do
		sleep 0.5
	done
	kill -INT $APID
	wait $APID
	check_eq "probabilistic: agent exit status" $? 0
	draws=$(grep -c 'probabilistic profiling: the next' "$TMP/prob.err")
	on=$(grep -c 'probabilistic profiling: the next .* are profiled' "$TMP/prob.err")
	check_ge "probabilistic: intervals drawn" "$draws" 20
	# the range a fair coin leaves with probability < 1e-4 (5e-5 each side)
	read -r lo hi < <(python3 -c '
import math, sys
n = int(sys.argv[1]); p = [math.comb(n, k) / 2**n for k in range(n + 1)]
lo = 0
while sum(p[:lo + 1]) <= 5e-5: lo += 1
hi = n
while sum(p[hi:]) <= 5e-5: hi -= 1
print(lo, hi)' "$draws")
	check "probabilistic: $on of $draws intervals on, within [$lo, $hi] (P(outside) < 1e-4)" \
		test "$on" -ge "$lo" -a "$on" -le "$hi"
	off_samples=$(sed -n 's/.*; \([0-9]*\) not sampled: probabilistic interval off.*/\1/p' \
		"$TMP/prob.err" | tail -1)
	if [[ $on -lt $draws ]]; then
		check_ge "probabilistic: samples of off intervals counted (not as lost)" \
			"${off_samples:-0}" 1
	fi
	files=$(ls "$TMP/prob" | wc -l)
	# an export interval (0.25 s) wholly inside an off one (0.5 s) sends nothing: at most the
	# three export intervals each on-interval touches, and the last flush
	check "probabilistic: $files profiles exported for $on intervals on (at most 3 each + 1)" \
		test "$files" -le $((3 * on + 1)) -a "$files" -ge $((on > 0 ? 1 : 0))
else
	fail "probabilistic: the agent did not start: $(tail -3 "$TMP/prob.err")"
fi

# --- SIGHUP: the selection switched from the next interval; a broken file kept out -----------
mkdir -m 700 "$TMP/hup"
start_burners
conf=$TMP/agent.conf
printf 'select-name = ^burn_a$\ninterval = 0.5\nfreq = 99\n' >"$conf"
"$SS" agent --cache-dir "" --config "$conf" --output-dir "$TMP/hup" 2>"$TMP/hup.err" &
HPID=$!
_bg_pids+=($HPID)
# files_since N: the pprof files after the first N (in name order: by time)
files_since() { ls "$TMP/hup"/*.pb.gz 2>/dev/null | tail -n +$(($1 + 1)); }
if wait_agent "$TMP/hup.err" $HPID; then
	sleep 3
	check_eq "SIGHUP: before, burn_a only" "$(pcomms $(files_since 0))" "burn_a "
	printf 'select-name = ^burn_b$\ninterval = 0.5\nfreq = 49\n' >"$conf"
	kill -HUP $HPID
	wait_log "$TMP/hup.err" $HPID "agent.conf applied"
	before=$(files_since 0 | wc -l)
	sleep 3
	# the first file after the reload may be the interval that was cut at the SIGHUP
	after=$(files_since $((before + 1)))
	check "SIGHUP: intervals written since" test -n "$after"
	check_eq "SIGHUP: the next intervals have burn_b only" "$(pcomms $after)" "burn_b "
	check "SIGHUP: a key that needs a restart is named" \
		grep -q "SIGHUP: freq changed in $conf: it needs a restart, the running value is kept" \
		"$TMP/hup.err"
	printf 'interval = 0.5\nselect-name = (\n' >"$conf"
	kill -HUP $HPID
	wait_log "$TMP/hup.err" $HPID "has errors (above): the running configuration is kept"
	check "SIGHUP: a broken file names its line" grep -q "agent.conf:2: .*select-name" \
		"$TMP/hup.err"
	before=$(files_since 0 | wc -l)
	sleep 2.5
	after=$(files_since $before)
	check_eq "SIGHUP: a broken file keeps the running selection" "$(pcomms $after)" "burn_b "
	logs=$(grep -c 'samples [0-9]*, lost' "$TMP/hup.err")
	kill -USR1 $HPID
	sleep 1
	check "SIGUSR1: the agent runs on" kill -0 $HPID
	check "SIGUSR1: the counters in the log" \
		test "$(grep -c 'samples [0-9]*, lost' "$TMP/hup.err")" -gt "$logs"
	kill -INT $HPID
	wait $HPID
	check_eq "SIGHUP: agent exit status" $? 0
else
	fail "SIGHUP: the agent did not start: $(tail -3 "$TMP/hup.err")"
fi

finish
