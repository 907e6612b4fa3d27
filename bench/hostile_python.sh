#!/bin/bash
# The agent against a hostile Python process (issue 39, items 1-2; tests/system/
# test_hostile_python.sh checks loose bounds of the same): Debian 11's CPython 3.9 as a
# container (scripts/in_container.sh, the runtime matrix's bullseye root) running
# tests/data/py_hostile_lines.py, 1,500 code objects with 1 MiB line tables in 480-deep chains,
# for DURATION s, under `stackscope agent -F 99 --interval 2` writing its store (system-wide:
# run it on a quiet machine). Reported per agent: CPU over the hostile process's run from its
# 3rd second (% of a core, /proc/PID/stat), peak RSS (VmHWM), intervals written, seconds from
# SIGTERM to exit; with STACKSCOPE_OLD=PATH (an older build)
# the same for it, in the same run, for the ratio; and the agent under the same chains with the
# functions' own line tables (plain), the benign peer: what a 480-deep Python costs anyway.
# Median of ROUNDS.
# Usage: sudo bench/hostile_python.sh [DURATION_S] [ROUNDS]
source "$(dirname "$0")/lib.sh"
DUR=${1:-30}
ROUNDS=${2:-3}
need_root
need_stackscope
root=${RM_CACHE:-/var/cache/stackscope/runtime-matrix}/roots/bullseye
[[ -f $root/.stackscope-root ]] || { echo "bench: no bullseye root (scripts/runtime_root.sh bullseye)" >&2; exit 1; }
bench_out hostile_python 'kill $(jobs -p) 2>/dev/null; rm -rf "${root:?}/tmp/stackscope-bench.$$"'
mkdir -p "$root/tmp/stackscope-bench.$$"
cp tests/data/py_hostile_lines.py "$root/tmp/stackscope-bench.$$/"
ID=$(echo "stackscope-bench-hostile-$$" | sha256sum | cut -c1-64)

# one AGENT_BINARY NAME [plain]: "cpu_pct hwm_mib intervals term_s"
one()
{
	local ss=$1 name=$2 plain=${3:-} apid t0 t1 w0 w1 hwm n s i
	rm -f "$out/$name.db"*
	"$ss" agent -F 99 --interval 2 --cache-dir "" --store "$out/$name.db" 2>"$out/$name.err" &
	apid=$!
	for ((i = 0; i < 300; i++)); do grep -qs "agent running" "$out/$name.err" && break; sleep 0.1; done
	sleep 2
	timeout -k 5 $((DUR + 30)) scripts/in_container.sh "$root" "$ID" /usr/bin/python3.9 -S \
		"/tmp/stackscope-bench.$$/py_hostile_lines.py" 1500 480 "$DUR" $plain >/dev/null 2>&1 &
	sleep 3 # past the new process's own start-up cost (its files' unwind tables)
	t0=$(awk '{ print $14 + $15 }' "/proc/$apid/stat")
	w0=$(date +%s%N)
	wait $!
	t1=$(awk '{ print $14 + $15 }' "/proc/$apid/stat")
	w1=$(date +%s%N)
	hwm=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$apid/status")
	n=$("$ss" store intervals --store "$out/$name.db" 2>/dev/null | grep -c .)
	s=$(date +%s%N)
	kill -TERM "$apid"
	wait "$apid"
	echo "$(echo "($t1 - $t0) * 100 * 1000000000 / $(getconf CLK_TCK) / ($w1 - $w0)" | bc -l) $hwm $n $(echo "($(date +%s%N) - $s) / 1000000000" | bc -l)"
}

declare -A res
names=(stackscope plain)
[[ -n ${STACKSCOPE_OLD:-} ]] && names+=(old)
for r in $(seq "$ROUNDS"); do
	res[stackscope]+="$(one ./stackscope stackscope)"$'\n'
	res[plain]+="$(one ./stackscope plain plain)"$'\n'
	[[ -n ${STACKSCOPE_OLD:-} ]] && res[old]+="$(one "$STACKSCOPE_OLD" old)"$'\n'
done
echo "# agent under a hostile Python process (1,500 code objects, 1 MiB line tables, 480 deep), ${DUR}s, median of $ROUNDS ($(date -u +%F))"
printf '%-12s %10s %14s %10s %12s\n' agent "cpu_%core" "peak_rss_MiB" intervals "sigterm_s"
for t in "${names[@]}"; do
	row=()
	for col in 1 2 3 4; do
		row+=("$(awk -v c=$col 'NF { print $c }' <<<"${res[$t]}" | median)")
	done
	printf '%-12s %10.1f %14.1f %10d %12.1f\n' "$t" "${row[@]}"
done
