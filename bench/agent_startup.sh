#!/bin/bash
# Start-up memory of `stackscope agent` on a machine where giant executables are mapped by live
# processes: clang++ compiling a large C++ file in a loop (libLLVM-14, libclang-cpp: ~40 MB of
# .eh_frame between them), a JVM (libjvm) and node, all alive before the agent starts, plus one
# busy wl_chain_nofp per CPU. The agent starts with an empty table cache (cold) and once more
# with the cache the first run filled (warm).
#
# Method, per run: the agent's VmHWM (/proc/PID/status, the peak RSS) and VmRSS after DURATION
# seconds; RssAnon/RssFile traced every ~0.1 s (anon+file@peak: at the largest traced sample;
# TRACE_DIR=dir keeps the traces and, per run, the largest mappings at the peak from smaps); "ready" = the log line "agent running"; the steady
# RSS is VmRSS at the end, BPF map memory = memlock of its bpf-map fds. Tables loaded, files
# queued and the time their builds took from --metrics-addr.
# Usage: sudo bench/agent_startup.sh [DURATION_S (30)] [HZ (19)]; SS=path/to/stackscope to
# measure another build (e.g. main's, for the "before" row). PEER=path/to/stackscope RUNS=n:
# n rounds, each the peer's cold and warm runs then ours (each agent with its own empty cache
# per round), alternating on the same live giants, then the medians of each column per agent.
source "$(dirname "$0")/lib.sh"
DUR=${1:-30}
HZ=${2:-19}
SS=${SS:-./stackscope}
LOAD=$BUILD/fixtures/wl_chain_nofp
PY=/usr/bin/python3

need_root
for t in clang++-14 java node curl; do
	need_program "$t" "scripts/setup.sh"
done
need_program "$SS" "make"

pids=()
bench_out startup-bench stop_pids
trap 'exit 130' INT TERM

RUNS=${RUNS:-1}
PEER=${PEER:-}
[[ -z $PEER || -x $PEER ]] || { echo "bench: no $PEER" >&2; exit 1; }
agents=1
[[ -n $PEER ]] && agents=2
life=$(((2 * DUR + 45) * agents * RUNS + 90))
# --- the giants ------------------------------------------------------------------------------
$PY - "$out/big.cpp" <<'PYEOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("#include <algorithm>\n#include <map>\n#include <string>\n#include <vector>\n")
    for i in range(150):
        f.write("int f%d(std::vector<std::map<std::string, int>> &v) { std::sort(v.begin(), "
                "v.end()); int s = 0; for (auto &m : v) for (auto &[k, x] : m) s += x * %d + "
                "k.size(); return s; }\n" % (i, i))
PYEOF
(
	trap 'kill $c 2>/dev/null; exit 0' TERM
	end=$((SECONDS + life))
	while [[ $SECONDS -lt $end ]]; do
		nice clang++-14 -O2 -w -c "$out/big.cpp" -o /dev/null &
		c=$!
		wait $c
	done
) >/dev/null 2>&1 &
pids+=($!)
cat >"$out/Sleep.java" <<'JEOF'
public class Sleep { public static void main(String[] a) throws Exception { Thread.sleep(1000000L); } }
JEOF
timeout "$life" java "$out/Sleep.java" >/dev/null 2>&1 &
pids+=($!)
timeout "$life" node -e 'setTimeout(() => {}, 1e9)' &
pids+=($!)
if [[ -x $LOAD ]]; then
	for _ in $(seq "$(nproc)"); do
		timeout "$life" "$LOAD" 60 >/dev/null 2>&1 &
		pids+=($!)
	done
fi
# every giant mapped before the agent starts
for _ in $(seq 100); do
	grep -qs libjvm /proc/*/maps 2>/dev/null && grep -qs libLLVM /proc/*/maps 2>/dev/null && break
	sleep 0.1
done
sleep 1

# one agent run: "hwm_kib rss_kib maps_bytes ready_ms loaded queued built"
run_agent()
{
	local cache=$1 tag=$2 ss=${3:-$SS} agent t0 ready=0 hwm=0 h mport best=0
	mport=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	t0=$(date +%s%N)
	"$ss" agent -F "$HZ" --output-dir "$out/pprof" --cache-dir "$cache" \
		--metrics-addr "127.0.0.1:$mport" 2>"$out/agent.$tag.err" &
	agent=$!
	pids+=($agent)
	: >"$out/trace.$tag"
	while [[ $((($(date +%s%N) - t0) / 1000000)) -lt $((DUR * 1000)) ]]; do
		h=$(awk '/^VmHWM:/ { print $2 }' "/proc/$agent/status" 2>/dev/null)
		[[ -n $h ]] || break
		# the trace: ms since start, RssAnon and RssFile (KiB)
		awk -v t=$((($(date +%s%N) - t0) / 1000000)) '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 }
			END { print t, a, f }' "/proc/$agent/status" >>"$out/trace.$tag" 2>/dev/null
		# at a new high, what the resident pages are: the largest mappings by Rss
		h=$(tail -1 "$out/trace.$tag" | awk '{ print $2 + $3 }')
		if [[ ${h:-0} -gt $((best + 2048)) ]]; then
			best=$h
			awk '/^[0-9a-f]+-[0-9a-f]+ / { n = NF >= 6 ? $NF : "[anon]" } /^Rss:/ { r[n] += $2 }
				END { for (n in r) if (r[n] >= 1024) printf "%.1f %s\n", r[n] / 1024, n }' \
				"/proc/$agent/smaps" 2>/dev/null | sort -rn | head -8 >"$out/peakmaps.$tag"
		fi
		[[ $ready -eq 0 ]] && grep -q 'agent running' "$out/agent.$tag.err" &&
			ready=$((($(date +%s%N) - t0) / 1000000))
		sleep 0.1
	done
	curl -sf -m 5 "http://127.0.0.1:$mport/metrics" >"$out/metrics.$tag" || :
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$agent/status")
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$agent/status")
	maps=$(awk '$1 == "stackscope_memory_bytes{kind=\"bpf_maps\"}" { print $2 }' "$out/metrics.$tag")
	kill -TERM "$agent"
	wait "$agent" 2>/dev/null
	# RssAnon + RssFile at the largest traced sample (the peak, to ~0.1 s)
	pk=$(awk '{ if ($2 + $3 > m) { m = $2 + $3; a = $2; f = $3; t = $1 } } END { printf "%.1f+%.1f@%.1fs", a / 1024, f / 1024, t / 1000 }' "$out/trace.$tag")
	[[ -n ${TRACE_DIR:-} ]] && cp "$out/trace.$tag" "$out/peakmaps.$tag" "$TRACE_DIR/"
	printf '%-6s %10.1f %10.1f %9.1f %9d %-18s %s\n' "$tag" "$(echo "$hwm / 1024" | bc -l)" \
		"$(echo "$rss / 1024" | bc -l)" "$(echo "${maps:-0} / 1048576" | bc -l)" "$ready" "$pk" \
		"$(grep -E 'unwind tables|tables:' "$out/agent.$tag.err" | tail -1 | cut -c1-80)"
}

echo "# stackscope agent start-up, $(date -u '+%F %H:%M UTC'), $(uname -r), $(nproc) CPUs, $HZ Hz, $DUR s per run"
echo "# mapped by live processes: $(grep -ho '/[^ ]*lib\(LLVM\|clang-cpp\|jvm\)[^ ]*\|/usr/bin/node' /proc/[0-9]*/maps 2>/dev/null | sort -u | xargs)"
printf '%-6s %10s %10s %9s %9s %-18s\n' run VmHWM_MiB VmRSS_MiB maps_MiB ready_ms anon+file@peak
if [[ -z $PEER ]]; then
	run_agent "$out/cache" cold
	run_agent "$out/cache" warm
	exit 0
fi
for r in $(seq "$RUNS"); do
	for who in peer ours; do
		ss=$SS
		[[ $who == peer ]] && ss=$PEER
		rm -rf "$out/cache.$who"
		run_agent "$out/cache.$who" "$who.cold.$r" "$ss" | tee -a "$out/rows"
		run_agent "$out/cache.$who" "$who.warm.$r" "$ss" | tee -a "$out/rows"
	done
done
# medians per agent and start: peak (VmHWM), RSS at the end, BPF maps, ready
echo "# medians of $RUNS rounds (peer: $PEER, ours: $SS)"
for who in peer ours; do
	for start in cold warm; do
		awk -v w="$who.$start." 'index($1, w) == 1 { print $2, $3, $4, $5 }' "$out/rows" |
			awk -v tag="$who.$start" '{ h[NR] = $1; r[NR] = $2; m[NR] = $3; t[NR] = $4 }
			function med(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
			END { if (NR) printf "%-10s %10.1f %10.1f %9.1f %9d\n", tag, med(h, NR), med(r, NR), med(m, NR), med(t, NR) }'
	done
done
