#!/bin/bash
# Cost of `stackscope agent` (system-wide, OTLP/HTTP export to a receiver on loopback), side by
# side with bpftrace `profile:hz:HZ { @[kstack, ustack] = count(); }`, both running at the same
# time on the same load: every CPU busy (wl_chain_nofp, restarted as it ends), 100 extra
# sleeping processes and process churn: a new process every 100 ms (`sleep 0.1` in a loop;
# CHURN=0 turns it off).
#
# Method, for each tool's process, over a window of DURATION seconds that starts WARMUP
# seconds after the tool is up (start-up work, e.g. bpftrace's compilation or the agent's first
# unwind tables, is reported separately):
#  - CPU: the process's CPU-time clock (clock_getcpuclockid: every thread's run time in ns,
#    the threads that ended inside the window included), delta over the window; beside it
#    the old figure, utime+stime of /proc/PID/stat in clock ticks (one tick is 0.025 % of a
#    core over 40 s: too coarse for a quiet agent);
#  - BPF: run_time_ns (kernel.bpf_stats_enabled=1) of the programs whose fds the process holds
#    (prog_id from /proc/PID/fdinfo, name and run time from `bpftool prog show id`), delta;
#    both as % of one core;
#  - memory: VmHWM of /proc/PID/status at the end of the window, and BPF map memory = sum of
#    memlock over the process's bpf-map fds (/proc/PID/fdinfo); for the agent also its own
#    stackscope_memory_bytes gauges from --metrics-addr.
# Usage: sudo bench/agent.sh [DURATION_S (60)] [HZ (19)] [WARMUP_S (5)]; SS=path/to/stackscope
# measures another build (e.g. main's, for a "before" row); PROGS=1 adds each agent's programs
# (runs, ns per run, share of one core over the window); PEER=path/to/stackscope runs that
# build's agent too, at the same time on the same load (row "peer"; started once the first
# agent runs, so the first one's programs run first on each event), each agent then with a
# table cache of its own under the bench's folder: a before/after in one run.
source "$(dirname "$0")/lib.sh"
DUR=${1:-60}
HZ=${2:-19}
WARM=${3:-5}
SS=${SS:-./stackscope}
PY=/usr/bin/python3
RECEIVER=tests/system/otlp_receiver.py
LOAD=$BUILD/fixtures/wl_chain_nofp

need_root
for t in bpftrace bpftool curl; do
	need_program "$t" "scripts/setup.sh"
done
need_program "$SS" "make"

pids=()
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
bench_out agent-bench 'stop_pids; sysctl -q kernel.bpf_stats_enabled="$stats_was"'
trap 'exit 130' INT TERM

life=$((WARM + DUR + 60))
# --- load: every CPU busy, 100 sleepers -----------------------------------------------------
for _ in $(seq "$(nproc)"); do
	if [[ -x $LOAD ]]; then
		# the workload caps one run at 60 s; the loop ends its current run when killed
		(
			trap 'kill $c 2>/dev/null; exit 0' TERM
			end=$((SECONDS + life))
			while [[ $SECONDS -lt $end ]]; do
				"$LOAD" 60 &
				c=$!
				wait $c
			done
		) >/dev/null 2>&1 &
	else
		timeout "$life" sh -c 'while :; do :; done' &
	fi
	pids+=($!)
done
for _ in $(seq 100); do
	sleep "$life" &
	pids+=($!)
done
if [[ ${CHURN:-1} != 0 ]]; then
	timeout "$life" sh -c 'while :; do sleep 0.1; done' &
	pids+=($!)
fi

# --- the receiver, the agent, bpftrace --------------------------------------------------------
sysctl -q kernel.bpf_stats_enabled=1
$PY "$RECEIVER" --dir "$out/rcv" --lifetime "$life" >"$out/port" 2>"$out/rcv.err" &
pids+=($!)
for _ in $(seq 50); do [[ -s $out/port ]] && break; sleep 0.1; done
port=$(head -1 "$out/port")
mport=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
t_agent=$(date +%s%N)
"$SS" agent -F "$HZ" --otlp-endpoint "http://127.0.0.1:$port" --metrics-addr "127.0.0.1:$mport" \
	${PEER:+--cache-dir "$out/cache_agent"} 2>"$out/agent.err" &
agent=$!
pids+=($agent)
peer=
if [[ -n ${PEER:-} ]]; then
	# started once the first agent runs: its programs attach first, so they run first on
	# every event (cache lines the first one fetched are warm for the second: 20-30 % less
	# time a run for small programs); alternating SS and PEER between runs alternates that
	for _ in $(seq 300); do
		grep -q 'agent running' "$out/agent.err" && break
		kill -0 "$agent" 2>/dev/null || break
		sleep 0.1
	done
	pport=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$PEER" agent -F "$HZ" --otlp-endpoint "http://127.0.0.1:$port" --metrics-addr "127.0.0.1:$pport" \
		--cache-dir "$out/cache_peer" 2>"$out/peer.err" &
	peer=$!
	pids+=($peer)
fi
t_bt=$(date +%s%N)
bpftrace -e "profile:hz:$HZ { @[kstack, ustack] = count(); }" >"$out/bt.out" 2>&1 &
bt=$!
pids+=($bt)

# ready: the agent logs "agent running", bpftrace prints "Attaching"
ready_agent=0 ready_bt=0
for _ in $(seq 600); do
	[[ $ready_agent -eq 0 ]] && grep -q 'agent running' "$out/agent.err" &&
		ready_agent=$((($(date +%s%N) - t_agent) / 1000000))
	[[ $ready_bt -eq 0 ]] && grep -q '^Attaching' "$out/bt.out" &&
		ready_bt=$((($(date +%s%N) - t_bt) / 1000000))
	[[ $ready_agent -gt 0 && $ready_bt -gt 0 ]] &&
		{ [[ -z $peer ]] || grep -q 'agent running' "$out/peer.err"; } && break
	kill -0 "$agent" 2>/dev/null && kill -0 "$bt" 2>/dev/null || break
	sleep 0.1
done
if [[ $ready_agent -eq 0 || $ready_bt -eq 0 ]]; then
	echo "bench: a tool did not start" >&2
	tail -5 "$out/agent.err" "$out/bt.out" >&2
	exit 1
fi

tck=$(getconf CLK_TCK)
# snap PID [PROGS_FILE]: bench/bpf_snap.py's line for PID (its CPU ticks, its programs' run
# time, its maps' memory), the sampling programs in $out/sample_ids apart
snap() { $PY bench/bpf_snap.py "$1" "$out/sample_ids" ${2:+"$2"}; }
# the perf_event (sampling) programs of PID, "id name" a line, from bpftool
sample_progs()
{
	local id
	for id in $(snap "$1" | cut -d' ' -f9-); do
		bpftool prog show id "$id" -j 2>/dev/null | $PY -c '
import json, sys
p = json.load(sys.stdin)
if p.get("type") == "perf_event":
    print(p["id"], p.get("name"))'
	done
}

# the sampling programs' ids before the warm-up: each is a bpftool and a python3 run (~25 of
# each for an agent), processes every agent must follow; read after the warm-up they made a
# burst of new processes (Python ones attached and verified) at the window's start
: >"$out/sample_names"
for p in "$agent" $peer "$bt"; do
	sample_progs "$p" >>"$out/sample_names"
done
awk '{ printf "%s ", $1 }' "$out/sample_names" >"$out/sample_ids"
sleep "$WARM"
declare -A s0 s1
for p in "$agent" $peer "$bt"; do
	s0[$p]=$(snap "$p" "$out/progs0.$p")
done
sleep "$DUR"
for p in "$agent" $peer "$bt"; do
	s1[$p]=$(snap "$p" "$out/progs1.$p")
done
if [[ ${PROGS:-0} != 0 ]]; then # the programs' names, while they are loaded
	for p in "$agent" $peer; do
		while read -r id _; do
			echo "$id $(bpftool prog show id "$id" -j 2>/dev/null |
				$PY -c 'import json, sys; print(json.load(sys.stdin).get("name"))')"
		done <"$out/progs1.$p" >"$out/names.$p"
	done
fi
curl -sf -m 5 "http://127.0.0.1:$mport/metrics" >"$out/metrics.txt"
declare -A hwm rss maprss
for p in "$agent" $peer "$bt"; do
	hwm[$p]=$(awk '/^VmHWM:/ { print $2 }' "/proc/$p/status")
	rss[$p]=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status")
	# the BPF maps the process has memory-mapped (the ring buffer, mmapable arrays) are in
	# VmRSS and in the maps' memlock: their resident pages (smaps' Rss of each
	# anon_inode:bpf-map mapping) are taken from RSS, so each page counts once
	maprss[$p]=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { m = ($6 == "anon_inode:bpf-map") }
		m && /^Rss:/ { s += $2 } END { print s + 0 }' "/proc/$p/smaps")
	cp "/proc/$p/smaps_rollup" "$out/smaps_rollup.$p" 2>/dev/null
	cp "/proc/$p/smaps" "$out/smaps.$p" 2>/dev/null
done
kill -TERM "$agent" $peer
kill -INT "$bt"
wait "$agent" 2>/dev/null
# bpftrace sometimes misses that SIGINT (seen once in eight runs: the bench waited minutes):
# asked again every 2 s, for 20 s at most (until it is gone, or a zombie: not waited for yet)
for i in $(seq 200); do
	[[ $(awk '/^State:/ { print $2 }' "/proc/$bt/status" 2>/dev/null) =~ ^[^Z] ]] || break
	((i % 20)) || kill -INT "$bt" 2>/dev/null
	sleep 0.1
done
wait "$bt" 2>/dev/null

metric() { awk -v m="$1" '$1 == m { print $2 }' "$out/metrics.txt"; }
win_ns=$(($(cut -d" " -f1 <<<"${s1[$agent]}") - $(cut -d" " -f1 <<<"${s0[$agent]}")))
echo "# stackscope agent vs bpftrace, system-wide at $HZ Hz, both at once, $(nproc) CPUs busy + 100 sleeping processes$([[ ${CHURN:-1} != 0 ]] && echo " + a new process every 100 ms")"
echo "# $(date -u '+%F %H:%M UTC'), $(uname -r), $(nproc) CPUs; window $(awk -v n=$win_ns 'BEGIN { printf "%.1f", n / 1e9 }') s after ${WARM} s warm-up"
echo "# cpu% = the process's CPU-time clock (ns, all threads, ended ones too) over the window, ticks% ="
echo "# utime+stime (/proc/PID/stat, clock ticks: the old figure), bpf% = run_time_ns"
echo "# delta of the process's programs (kernel.bpf_stats_enabled, fdinfo), sample% and ns/sample"
echo "# = its perf_event program ($(awk '{ printf "%s%s", sep, $2; sep = ", " }' "$out/sample_names")), all % of one core;"
echo "# VmHWM / VmRSS from /proc/PID/status at the window's end, maps = memlock of its bpf-map fds;"
echo "# mapRSS = resident pages of its memory-mapped BPF maps (smaps, anon_inode:bpf-map), in both"
echo "# VmRSS and maps: steady = VmRSS - mapRSS + maps counts each page once (HWM+maps does not)"
printf '%-11s %8s %8s %8s %8s %8s %10s %10s %9s %9s %10s %8s %8s\n' tool "cpu%" "ticks%" "bpf%" "total%" \
	"sample%" "ns/sample" "VmHWM_MiB" "VmRSS_MiB" "maps_MiB" "HWM+maps" "mapRSS" "steady"
for p in "$agent" $peer "$bt"; do
	name=stackscope
	[[ $p = "$bt" ]] && name=bpftrace
	[[ $p = "$peer" ]] && name=peer
	read -r w0 c0 r0 n0 sr0 sn0 _ ns0 _ <<<"${s0[$p]}"
	read -r w1 c1 r1 n1 sr1 sn1 m1 ns1 _ <<<"${s1[$p]}"
	awk -v name="$name" -v c="$((c1 - c0))" -v tck="$tck" -v w="$((w1 - w0))" -v ns="$((ns1 - ns0))" \
		-v t="$((r1 - r0))" -v s="$((sr1 - sr0))" -v sn="$((sn1 - sn0))" -v h="${hwm[$p]}" \
		-v r="${rss[$p]}" -v m="$m1" -v mr="${maprss[$p]}" 'BEGIN {
		ticks = c / tck * 1e9 / w * 100
		cpu = ns / w * 100
		bpf = t / w * 100
		printf "%-11s %8.3f %8.3f %8.3f %8.3f %8.3f %10.0f %10.1f %9.1f %9.1f %10.1f %8.1f %8.1f\n",
			name, cpu, ticks, bpf, cpu + bpf, s / w * 100, sn ? s / sn : 0, h / 1024, r / 1024,
			m / 1048576, h / 1024 + m / 1048576, mr / 1024, (r - mr) / 1024 + m / 1048576 }'
done
start_cpu_agent=$(cut -d' ' -f8 <<<"${s0[$agent]}")
start_cpu_bt=$(cut -d' ' -f8 <<<"${s0[$bt]}")
echo "start-up: stackscope ready in ${ready_agent} ms, bpftrace in ${ready_bt} ms; CPU before the window:" \
	"stackscope $(awk -v c="$start_cpu_agent" 'BEGIN { printf "%.2f", c / 1e9 }') s," \
	"bpftrace $(awk -v c="$start_cpu_bt" 'BEGIN { printf "%.2f", c / 1e9 }') s"
echo "stackscope metrics at the end of the window: samples $(metric stackscope_samples_total)," \
	"exports ok $(metric 'stackscope_exports_total{result="ok"}')" \
	"failed $(metric 'stackscope_exports_total{result="failed"}')" \
	"dropped $(metric 'stackscope_exports_total{result="dropped"}')," \
	"$(metric stackscope_export_bytes_sent_total) bytes sent," \
	"$(metric stackscope_export_bytes_delivered_total) delivered," \
	"rss $(awk -v b="$(metric 'stackscope_memory_bytes{kind="rss"}')" 'BEGIN { printf "%.1f", b / 1048576 }') MiB," \
	"bpf_maps $(awk -v b="$(metric 'stackscope_memory_bytes{kind="bpf_maps"}')" 'BEGIN { printf "%.1f", b / 1048576 }') MiB," \
	"$(metric stackscope_processes) processes"
for p in "$agent" $peer; do
	name=stackscope
	[[ $p = "$peer" ]] && name=peer
	awk -v n="$name" '/^(Anonymous|Rss|Pss_File|Pss_Anon|Shared_Clean|Private_Clean):/ {
		printf "%s%s %.1f", sep, $1, $2 / 1024; sep = ", " }
		BEGIN { printf "%s smaps_rollup MiB: ", n } END { print "" }' "$out/smaps_rollup.$p"
done
echo "receiver: $(grep -c '"answer": "ok"' "$out/rcv/requests.jsonl" 2>/dev/null) requests accepted"
grep -E 'samples [0-9]+, lost' "$out/agent.err" | tail -1 | sed 's/^stackscope: /stackscope at exit: /'
# per program of each agent (PROGS=1): runs and ns per run over the window
if [[ ${PROGS:-0} != 0 ]]; then
	for p in "$agent" $peer; do
		name=stackscope
		[[ $p = "$peer" ]] && name=peer
		while read -r id t1 n1; do
			read -r _ t0 n0 < <(awk -v i="$id" '$1 == i' "$out/progs0.$p")
			[[ -n ${n0:-} && $n1 -gt $n0 ]] || continue
			pname=$(awk -v i="$id" '$1 == i { print $2 }' "$out/names.$p")
			awk -v tool="$name" -v pn="$pname" -v t="$((t1 - t0))" -v n="$((n1 - n0))" \
				-v w="$win_ns" 'BEGIN { printf "prog %-10s %-18s %8d runs %9.0f ns/run %8.3f ms %7.4f %%\n", tool, pn, n, t / n, t / 1e6, t / w * 100 }'
		done <"$out/progs1.$p"
	done
fi
