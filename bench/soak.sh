#!/bin/bash
# Soak: the agent for DURATION seconds (default 1800) under process churn — a new short-lived
# process every 0.1 s (a fresh copy of a binary every 10th time, so new executables keep
# arriving), plus one CPU-bound workload — exporting OTLP to a local receiver. Every 30 s it
# records the agent's RSS, the BPF map memory it holds, its executable/process counts, and
# prints a table; memory is "flat" when the last third's maximum is within 10 % of the first
# third's maximum (after a 60 s warm-up).
# Usage: sudo bench/soak.sh [DURATION_S]
source "$(dirname "$0")/lib.sh"
DUR=${1:-1800}
F=$BUILD/fixtures
bench_out soak 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null'
need_root soak

python3 tests/system/otlp_receiver.py --port 0 --dir "$out/recv" --lifetime $((DUR + 120)) \
	>"$out/port" 2>"$out/recv.log" &
for _ in $(seq 50); do [[ -s $out/port ]] && break; sleep 0.1; done
port=$(grep -oE '[0-9]+' "$out/port" | head -1)
"${STACKSCOPE:-./stackscope}" agent --interval 5 --log-interval 300 --otlp-endpoint "http://127.0.0.1:$port" \
	>"$out/agent.log" 2>&1 &
agent=$!
"$F/wl_chain_nofp" $((DUR + 60)) >/dev/null &
( i=0; while :; do
	i=$((i + 1))
	if ((i % 10 == 0)); then cp "$F/wl_chain_nofp" "$out/churn_$((i % 200))"; "$out/churn_$((i % 200))" 0.05; else "$F/wl_chain_nofp" 0.05; fi >/dev/null
	sleep 0.05
done ) &

bpf_bytes() { # memlock of the agent's bpf-map fds
	local t=0 fd l
	for fd in /proc/$agent/fd/*; do
		l=$(readlink "$fd" 2>/dev/null) || continue
		[[ $l == anon_inode:bpf-map ]] || continue
		t=$((t + $(awk '/^memlock:/ { print $2 }' "/proc/$agent/fdinfo/${fd##*/}")))
	done
	echo $t
}

echo "# stackscope agent soak, ${DUR}s, churn: a process every ~0.1 s, a new binary every ~1 s ($(date -u +'%F %H:%M UTC'))"
printf '%8s %10s %10s %12s\n' t_s rss_MiB bpf_MiB threads
start=$(date +%s)
declare -a rss
while :; do
	sleep 30
	t=$(( $(date +%s) - start ))
	kill -0 $agent 2>/dev/null || { echo "agent died"; tail -5 "$out/agent.log"; exit 1; }
	r=$(awk '/^VmRSS:/ { print $2 }' /proc/$agent/status)
	b=$(bpf_bytes)
	rss+=("$t $r")
	printf '%8d %10.1f %10.1f %12s\n' "$t" "$(echo "$r / 1024" | bc -l)" "$(echo "$b / 1048576" | bc -l)" \
		"$(awk '/^Threads:/ { print $2 }' /proc/$agent/status)"
	((t >= DUR)) && break
done
kill -TERM $agent; wait $agent 2>/dev/null
printf '%s\n' "${rss[@]}" | awk -v dur="$DUR" '
	$1 >= 60 && $1 < 60 + (dur - 60) / 3 { if ($2 > a) a = $2 }
	$1 >= dur - (dur - 60) / 3 { if ($2 > b) b = $2 }
	END { printf "first third max %.1f MiB, last third max %.1f MiB: %s\n", a / 1024, b / 1024,
		(b <= a * 1.10) ? "flat" : "GROWING" }'
grep -E 'samples [0-9]+' "$out/agent.log" | tail -1
echo "requests received: $(ls "$out/recv" 2>/dev/null | grep -c 'req-')"
