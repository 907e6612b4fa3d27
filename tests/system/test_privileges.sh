#!/bin/bash
# Least privilege (src/base/privileges.c, dist/stackscope-agent.service):
#  (a) agent and record as root: once started, every thread of stackscope has exactly the
#      running set in CapEff/CapPrm (and CapBnd, root having CAP_SETPCAP), empty CapInh/CapAmb,
#      NoNewPrivs 1; record's command keeps root's rights. Workloads started after the drop,
#      as uid 65534, still come out: a chain in a memfd executable (/proc/PID/map_files:
#      CAP_CHECKPOINT_RESTORE), a chain in a 0700 file of that user (CAP_DAC_READ_SEARCH,
#      CAP_SYS_PTRACE), Python frames of that user's CPython (process_vm_readv), and their
#      unwind tables and mappings are loaded into BPF maps after the drop;
#  (b) stackscope started with only the unit's capabilities: record as uid 65534 with them as
#      ambient capabilities (its command gets none), and the agent as root with them as
#      bounding set, both with no_new_privs and MemoryDenyWriteExecute (prctl PR_SET_MDWE);
#  (c) `systemd-analyze security --offline` rates the unit at most its measured exposure;
#  (d) in (a) and (b) the agent's child that makes the unwind-entry pool's segments
#      (src/unwind/segment_maker.h, "ss-segments") has CAP_BPF alone, NoNewPrivs 1 and no fd
#      of stackscope's but its socket: stackscope itself keeps no CAP_BPF for it.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_fp && have_fixture wl_chain_nofp || finish

UNIT=$SS_ROOT/dist/stackscope-agent.service
PY=/usr/bin/python3 # Debian's CPython 3.11, supported by src/interp/python.c
STACKS="$PY $SS_ROOT/tests/system/pprof_stacks.py --comm"
NOBODY=65534
# measured 3.1 with the unit of this commit; loosening the unit fails here
EXPOSURE_MAX=3.1
CHAIN='main;chain_a;chain_b;chain_c;hot_leaf'
PYLINE='@py_priv_chain\.py:[0-9]+'
# samples with the complete chain per workload (4 s at 199 Hz: ~800 on an idle CPU; measured
# 20..100 with the load average at 12 on 2 cores)
MIN_CHAIN=10

declare -A CAPNUM=([dac_override]=1 [dac_read_search]=2 [setpcap]=8 [sys_ptrace]=19
	[sys_admin]=21 [sys_resource]=24 [syslog]=34 [perfmon]=38 [bpf]=39 [checkpoint_restore]=40)

# mask NAME...: the 16-digit hex mask of capabilities named without "cap_"
mask()
{
	local m=0 n
	for n; do
		[[ -n ${CAPNUM[$n]:-} ]] || { echo "unknown capability $n" >&2; return 1; }
		m=$((m | (1 << CAPNUM[$n])))
	done
	printf '%016x' $m
}

# field STATUS_FILE NAME: the value of "NAME:" in a /proc status file
field()
{
	awk -v k="$2:" '$1 == k { print $2 }' "$1"
}

self_bnd=$(field /proc/self/status CapBnd)
self_eff=$(field /proc/self/status CapEff)
# The kernel checks CAP_BPF on bpf() calls on held map fds before 6.5 when unprivileged BPF
# is disabled: then stackscope keeps it (it probes; this predicts).
IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
extra=""
if ((kmaj < 6 || (kmaj == 6 && kmin < 5))) &&
	[[ $(cat /proc/sys/kernel/unprivileged_bpf_disabled) != 0 ]]; then
	extra=bpf
fi
RUNNING="sys_ptrace dac_read_search checkpoint_restore $extra"
UNIT_CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | tr 'A-Z' 'a-z' | sed 's/cap_//g')
check "the unit names a capability bounding set ($UNIT_CAPS)" test -n "$UNIT_CAPS"
check "the unit's ambient set is its bounding set" test \
	"$(sed -n 's/^AmbientCapabilities=//p' "$UNIT" | tr 'A-Z' 'a-z' | sed 's/cap_//g')" = "$UNIT_CAPS"
unit_mask=$(mask $UNIT_CAPS) || fail "the unit names capabilities this test does not know"

# check_threads WHAT PID EFF_PRM_MASK BND_MASK: every thread of PID has exactly that
# effective = permitted set and bounding set, no inheritable or ambient ones, NoNewPrivs 1.
check_threads()
{
	local what=$1 pid=$2 want=$3 bnd=$4 t bad=() n=0
	for t in /proc/$pid/task/*/status; do
		cp "$t" "$TMP/status" 2>/dev/null || continue
		n=$((n + 1))
		[[ $(field "$TMP/status" CapEff) == "$want" ]] || bad+=("CapEff=$(field "$TMP/status" CapEff)")
		[[ $(field "$TMP/status" CapPrm) == "$want" ]] || bad+=("CapPrm=$(field "$TMP/status" CapPrm)")
		[[ $(field "$TMP/status" CapBnd) == "$bnd" ]] || bad+=("CapBnd=$(field "$TMP/status" CapBnd)")
		[[ $(field "$TMP/status" CapInh) == 0000000000000000 ]] || bad+=("CapInh")
		[[ $(field "$TMP/status" CapAmb) == 0000000000000000 ]] || bad+=("CapAmb")
		[[ $(field "$TMP/status" NoNewPrivs) == 1 ]] || bad+=("NoNewPrivs=0")
	done
	if ((n == 0)); then
		fail "$what: no threads of pid $pid to read"
	elif ((${#bad[@]} == 0)); then
		ok "$what: all $n threads have CapEff = CapPrm = $want, CapBnd = $bnd, NoNewPrivs 1"
	else
		fail "$what: ${bad[*]} (want CapEff = CapPrm = $want, CapBnd = $bnd)"
	fi
}

# check_maker WHAT PID EFF_PRM_MASK BND_MASK: the segment maker, PID's child "ss-segments"
# (it makes no segment before the first table needs one, but it is there from the drop on)
check_maker()
{
	local what=$1 pid=$2 want=$3 bnd=$4 m bad=() fds
	m=$(pgrep -P "$pid" -x ss-segments | head -1)
	if [[ -z $m ]] || ! cp "/proc/$m/status" "$TMP/maker.status" 2>/dev/null; then
		fail "$what: no segment maker (ss-segments) among the children of $pid"
		return 1
	fi
	local st=$TMP/maker.status
	[[ $(field "$st" CapEff) == "$want" ]] || bad+=("CapEff=$(field "$st" CapEff)")
	[[ $(field "$st" CapPrm) == "$want" ]] || bad+=("CapPrm=$(field "$st" CapPrm)")
	[[ $(field "$st" CapBnd) == "$bnd" ]] || bad+=("CapBnd=$(field "$st" CapBnd)")
	[[ $(field "$st" CapInh) == 0000000000000000 ]] || bad+=("CapInh")
	[[ $(field "$st" CapAmb) == 0000000000000000 ]] || bad+=("CapAmb")
	[[ $(field "$st" NoNewPrivs) == 1 ]] || bad+=("NoNewPrivs=0")
	fds=$(ls "/proc/$m/fd" | awk '$1 > 2' | wc -l)
	((fds == 1)) || bad+=("$fds fds past stderr")
	if ((${#bad[@]} == 0)); then
		ok "$what: the segment maker (pid $m): CapEff = CapPrm = $want, CapBnd = $bnd," \
			"NoNewPrivs 1, one fd (its socket)"
	else
		fail "$what: the segment maker (pid $m): ${bad[*]}" \
			"(want CapEff = CapPrm = $want, CapBnd = $bnd)"
	fi
}

# --- workloads run as uid 65534, after the drop --------------------------------------------
# A private copy of everything, so that uid 65534 can run it wherever the tree lives.
BIN=$TMP/bin WORK=$TMP/work
mkdir -p "$BIN" "$WORK"
cp "$SS" "$BIN/stackscope"
cp "$FIX/wl_chain_fp" "$FIX/wl_chain_nofp" "$BIN/"
cp "$SS_ROOT/tests/data/py_chain.py" "$WORK/py_priv_chain.py"
cp "$FIX/wl_chain_fp" "$WORK/wl_private_fp"
cp "$FIX/wl_chain_nofp" "$WORK/wl_private_nofp"
ln -s /proc/self/fd/3 "$WORK/wl_memfd_fp"
ln -s /proc/self/fd/3 "$WORK/wl_memfd_nofp"
chmod 755 "$BIN" "$BIN"/*
chown -R $NOBODY:$NOBODY "$WORK"
chmod 700 "$WORK" "$WORK"/wl_private_* # only CAP_DAC_READ_SEARCH opens them
# memfd.py PROGRAM LINK ARGS: runs PROGRAM from a memfd through LINK (-> /proc/self/fd/3),
# so its mapping is "/memfd:... (deleted)" and LINK's name is its comm.
cat >"$BIN/memfd.py" <<'EOF'
import os, sys
fd = os.memfd_create("wl", 0)
os.write(fd, open(sys.argv[1], "rb").read())
os.dup2(fd, 3)
os.execv(sys.argv[2], sys.argv[2:])
EOF
# mdwe.py COMMAND...: COMMAND with MemoryDenyWriteExecute (PR_SET_MDWE, Linux 6.3+), as the
# unit sets it; prints "mdwe unavailable" to stderr on older kernels.
cat >"$BIN/mdwe.py" <<'EOF'
import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(65, 1, 0, 0, 0) != 0:
    print("mdwe unavailable", file=sys.stderr)
os.execvp(sys.argv[1], sys.argv[1:])
EOF
chmod 644 "$BIN"/*.py
AS_NOBODY="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"

# run_workloads SECS KIND: the three workloads as uid 65534 (KIND fp or nofp), in parallel
run_workloads()
{
	local secs=$1 kind=$2 p=()
	$AS_NOBODY $PY "$BIN/memfd.py" "$BIN/wl_chain_$kind" "$WORK/wl_memfd_$kind" "$secs" &
	p+=($!)
	$AS_NOBODY "$WORK/wl_private_$kind" "$secs" &
	p+=($!)
	$AS_NOBODY $PY "$WORK/py_priv_chain.py" "$secs" &
	p+=($!)
	wait "${p[@]}" # not the agent
}
{ declare -p AS_NOBODY PY BIN WORK; declare -f run_workloads; } >"$TMP/workloads.sh"

# check_workloads WHAT FOLDED KIND [PYLINE]: the chains of the three workloads in FOLDED;
# PYLINE: how Python frames end there (pprof_stacks.py: "@file:line"; folded: nothing).
# Counts, not shares: without the capabilities no chain comes out at all, while the share of
# complete stacks depends on how soon a loaded machine lets stackscope see the new process
# (test_unwind.sh measures that).
check_workloads()
{
	local what=$1 f=$2 kind=$3 l=${4:-} comm full py chain
	for comm in wl_memfd_$kind wl_private_$kind; do
		full=$(samples "$f" $comm "^$comm;${START_RE}$CHAIN(;|\$)")
		check_ge "$what: $comm samples with _start..$CHAIN" "$full" $MIN_CHAIN
		((full >= MIN_CHAIN)) || show "$f" $comm
	done
	py=$(samples "$f" python3 ";c$l(;|\$)")
	chain=$(samples "$f" python3 ";_PyEval_EvalFrameDefault;<module>$l;a$l;b$l;c$l(;|\$)")
	check_ge "$what: python3 (uid $NOBODY) samples with <module>;a;b;c (Python frames)" \
		"$chain" $MIN_CHAIN
	((chain >= MIN_CHAIN)) || show "$f" python3
	check_pct "$what: of the samples in Python function c, those under <module>;a;b" \
		"$chain" "$py" 80
}

# wait_log FILE PID: waits (60 s at most) for the capability line of stackscope PID
wait_log()
{
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q "capabilities after start-up" "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# agent_run WHAT PREFIX...: runs the agent under PREFIX for the workloads; pprof files in
# $TMP/WHAT/out, log in $TMP/WHAT.log, the folded stacks (with comms) in $TMP/WHAT.folded.
# Sets AGENT_PID while it runs and checks the threads with EXPECT_EFF / EXPECT_BND.
agent_run()
{
	local what=$1 port=$((20000 + RANDOM % 20000)) f
	shift
	mkdir -p "$TMP/$what/out" "$TMP/$what/cache"
	"$@" "$BIN/stackscope" agent -F 199 --interval 1 --output-dir "$TMP/$what/out" \
		--cache-dir "$TMP/$what/cache" --metrics-addr "127.0.0.1:$port" \
		>"$TMP/$what.log" 2>&1 &
	AGENT_PID=$!
	_bg_pids+=($AGENT_PID)
	if ! wait_log "$TMP/$what.log" $AGENT_PID; then
		fail "$what: no capability line in the log: $(head -c 600 "$TMP/$what.log")"
		return 1
	fi
	check_threads "$what" $AGENT_PID "$EXPECT_EFF" "$EXPECT_BND"
	check_maker "$what" $AGENT_PID "$MAKER_EFF" "$MAKER_BND"
	check "$what: the metrics thread answers after the drop" \
		curl -sf -o /dev/null "http://127.0.0.1:$port/metrics"
	run_workloads 4 fp
	sleep 1.5 # the last workload samples reach an interval
	kill -TERM $AGENT_PID
	wait $AGENT_PID
	check_eq "$what: exit status after SIGTERM" $? 0
	: >"$TMP/$what.folded"
	for f in "$TMP/$what/out"/*.pb.gz; do
		[[ -e $f ]] && $STACKS "$f" >>"$TMP/$what.folded"
	done
}

# --- (a) agent as root -----------------------------------------------------------------------
echo "(a) agent and record as root; workloads of uid $NOBODY after the drop"
EXPECT_EFF=$(mask $RUNNING)
# root has CAP_SETPCAP: the bounding set shrinks to the running set too
EXPECT_BND=$EXPECT_EFF
((0x$self_eff & (1 << CAPNUM[setpcap]))) || EXPECT_BND=$self_bnd
MAKER_EFF=$(printf '%016x' $((0x$(mask bpf) & 0x$self_eff)))
MAKER_BND=$MAKER_EFF
((0x$self_eff & (1 << CAPNUM[setpcap]))) || MAKER_BND=$self_bnd
if agent_run agent-root env; then
	line=$(grep -o "capabilities after start-up: [^ ]*" "$TMP/agent-root.log")
	want=$(for c in $RUNNING; do echo "cap_$c"; done | sort | paste -sd,)
	check_eq "agent: the log names the capabilities kept" \
		"$(sed 's/.*: //' <<<"$line" | tr , '\n' | sort | paste -sd,)" "$want"
	check_workloads "agent" "$TMP/agent-root.folded" fp "$PYLINE"
fi

# --- (a) record as root: the command starts the workloads -----------------------------------
cat >"$TMP/record_cmd.sh" <<EOF
source "$TMP/workloads.sh"
cat /proc/\$PPID/status >"$TMP/record_parent.status"
cat /proc/self/status >"$TMP/record_child.status"
run_workloads 3 nofp
EOF
record "$TMP/record.err" -F 199 -q -o "$TMP/record.folded" -- bash "$TMP/record_cmd.sh"
check_eq "record: exit status" $? 0
if [[ -s $TMP/record_parent.status ]]; then
	want=$(mask $RUNNING dac_override)
	bnd=$want
	((0x$self_eff & (1 << CAPNUM[setpcap]))) || bnd=$self_bnd
	check_eq "record (running): CapEff" "$(field "$TMP/record_parent.status" CapEff)" "$want"
	check_eq "record (running): CapPrm" "$(field "$TMP/record_parent.status" CapPrm)" "$want"
	check_eq "record (running): CapBnd" "$(field "$TMP/record_parent.status" CapBnd)" "$bnd"
	check_eq "record (running): NoNewPrivs" "$(field "$TMP/record_parent.status" NoNewPrivs)" 1
	check_eq "record's command: CapEff (root's, as before)" \
		"$(field "$TMP/record_child.status" CapEff)" "$self_eff"
	check_eq "record's command: NoNewPrivs" "$(field "$TMP/record_child.status" NoNewPrivs)" 0
else
	fail "record: the command did not run: $(head -3 "$TMP/record.err")"
fi
check_workloads "record" "$TMP/record.folded" nofp

# --- (b) only the unit's capabilities --------------------------------------------------------
echo "(b) started with only the unit's capabilities ($UNIT_CAPS)"
list=$(for c in $UNIT_CAPS; do printf ',+%s' "$c"; done)
UNIT_PRIV="--no-new-privs --inh-caps=-all$list --ambient-caps=-all$list --bounding-set=-all$list"
OUT=$TMP/nobody
mkdir -p "$OUT"
chown $NOBODY:$NOBODY "$OUT"
cat >"$TMP/record_b.sh" <<EOF
cat /proc/\$PPID/status >"$OUT/parent.status"
cat /proc/self/status >"$OUT/child.status"
exec "$BIN/wl_chain_nofp" 2
EOF
chmod 644 "$TMP/record_b.sh"
timeout -k 5 "$SS_TIMEOUT" $PY "$BIN/mdwe.py" $AS_NOBODY $UNIT_PRIV -- "$BIN/stackscope" record \
	-F 199 -q --cache-dir "" -o "$OUT/b.folded" -- bash "$TMP/record_b.sh" 2>"$TMP/record_b.err"
check_eq "record as uid $NOBODY with the unit's ambient capabilities: exit status" $? 0
grep -q "mdwe unavailable" "$TMP/record_b.err" && skip "PR_SET_MDWE: kernel before 6.3"
if [[ -s $OUT/parent.status ]]; then
	run_mask=$(printf '%016x' $((0x$(mask $RUNNING) & 0x$unit_mask)))
	check_eq "record as uid $NOBODY (running): CapEff" "$(field "$OUT/parent.status" CapEff)" "$run_mask"
	check_eq "record as uid $NOBODY (running): CapPrm" "$(field "$OUT/parent.status" CapPrm)" "$run_mask"
	check_eq "record as uid $NOBODY (running): CapAmb" "$(field "$OUT/parent.status" CapAmb)" \
		0000000000000000
	check_eq "record as uid $NOBODY: its command gets no capabilities (CapEff)" \
		"$(field "$OUT/child.status" CapEff)" 0000000000000000
	check_eq "record as uid $NOBODY: its command gets no capabilities (CapAmb)" \
		"$(field "$OUT/child.status" CapAmb)" 0000000000000000
else
	fail "record as uid $NOBODY: the command did not run: $(head -3 "$TMP/record_b.err")"
fi
full=$(samples "$OUT/b.folded" wl_chain_nofp "^wl_chain_nofp;${START_RE}$CHAIN(;|\$)")
check_ge "record as uid $NOBODY: samples with _start..$CHAIN" "$full" $MIN_CHAIN
((full >= MIN_CHAIN)) || show "$OUT/b.folded" wl_chain_nofp

# The agent as the unit runs it: root, bounded by the unit's set (no CAP_SETPCAP: the bounding
# set stays the unit's), no_new_privs, MemoryDenyWriteExecute.
EXPECT_EFF=$(printf '%016x' $((0x$(mask $RUNNING) & 0x$unit_mask)))
EXPECT_BND=$unit_mask
MAKER_EFF=$(printf '%016x' $((0x$(mask bpf) & 0x$unit_mask)))
MAKER_BND=$unit_mask
if agent_run agent-unit $PY "$BIN/mdwe.py" setpriv $UNIT_PRIV --; then
	# without CAP_SYSLOG /proc/kallsyms reads as zeros: every kernel frame is "[kernel]+0x..."
	f=$TMP/agent-unit.folded
	sym=$(grep -Ec ';(entry_SYSCALL_64_after_hwframe|asm_(sysvec|exc)_[a-z_]+)(;| )' "$f")
	unsym=$(grep -c '\[kernel\]+0x' "$f")
	check_ge "agent as the unit runs it: stacks with named kernel entry frames" "$sym" 1
	check_le "agent as the unit runs it: stacks with unnamed kernel frames (CAP_SYSLOG at start)" \
		"$unsym" $((sym / 10))
	check_workloads "agent as the unit runs it" "$TMP/agent-unit.folded" fp "$PYLINE"
fi

# --- (c) the unit's exposure ------------------------------------------------------------------
echo "(c) systemd-analyze security"
if ! command -v systemd-analyze >/dev/null; then
	fail "systemd-analyze missing (apt-get install systemd; scripts/setup.sh)"
else
	score=$(systemd-analyze security --offline=true "$UNIT" 2>&1 |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	if [[ -z $score ]]; then
		fail "systemd-analyze security: no score"
	else
		check "the unit's exposure $score <= $EXPOSURE_MAX" \
			awk -v s="$score" -v m="$EXPOSURE_MAX" 'BEGIN { exit !(s + 0 <= m + 0) }'
	fi
fi
finish
