#!/bin/bash
# The agent's own cost with --alloc (issue 33): `stackscope agent -F 19 --interval 5 --store`
# without and with --alloc, alternating, ROUNDS of each, on the machine as it is (system-wide:
# with --alloc every process mapping a libc takes the uprobe traps, so run it on a quiet box and
# report the load). Per run, over DURATION s starting WARMUP s after "agent running": the
# agent's CPU (utime + stime of /proc/PID/stat, all threads) in % of one core, its VmHWM, and
# the box's load average at the end. Medians per mode.
# Usage: sudo bench/agent_alloc.sh [ROUNDS (3)] [DURATION_S (30)] [WARMUP_S (10)]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
DUR=${2:-30}
WARM=${3:-10}
bench_start agent_alloc 'kill $(jobs -p) 2>/dev/null'
TCK=$(getconf CLK_TCK)

# cpu_ticks PID: utime + stime
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run MODE: "cpu% hwm_mib load1" of one agent run
run()
{
	local mode=$1 pid t0 t1 hwm extra=""
	[[ $mode == alloc ]] && extra=--alloc
	rm -rf "$out/$mode.db"
	./stackscope agent -F 19 --interval 5 --cache-dir "" --store "$out/$mode.db" $extra \
		2>"$out/$mode.err" &
	pid=$!
	for ((i = 0; i < 600; i++)); do grep -qs "agent running" "$out/$mode.err" && break; sleep 0.1; done
	sleep "$WARM"
	t0=$(cpu_ticks "$pid")
	sleep "$DUR"
	t1=$(cpu_ticks "$pid")
	hwm=$(awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null
	echo "$(echo "scale=2; ($t1 - $t0) * 100 / $TCK / $DUR" | bc -l) $hwm $(cut -d' ' -f1 /proc/loadavg)"
}

declare -A cpu hwm load
for r in $(seq "$ROUNDS"); do
	for m in plain alloc; do
		read -r c h l <<<"$(run "$m")"
		cpu[$m]+="$c " hwm[$m]+="$h " load[$m]+="$l "
		echo "round $r $m: cpu ${c}% of a core, VmHWM ${h} MiB, load $l" >&2
	done
done
echo "# agent -F 19 --interval 5, ${DUR}s windows after ${WARM}s, medians of $ROUNDS alternating runs, $(nproc) CPUs ($(date -u '+%F %H:%M'))"
printf '%-8s %12s %14s %12s\n' agent "cpu_%core" "VmHWM_MiB" "load1"
for m in plain alloc; do
	printf '%-8s %12s %14s %12s   (%s| %s| %s)\n' "$m" "$(median <<<"${cpu[$m]}")" \
		"$(median <<<"${hwm[$m]}")" "$(median <<<"${load[$m]}")" "${cpu[$m]}" "${hwm[$m]}" \
		"${load[$m]}"
done
