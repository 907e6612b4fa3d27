#!/bin/bash
# stackscope's agent side by side with the reference, the OpenTelemetry eBPF profiler (built by
# bench/reference_build.sh at its pinned commit), in one run on the same workloads: each
# profiler alone, then both at once, ROUNDS times in that order. Both with their defaults
# (the reference 20 Hz, reports every 5 s +-20 %; stackscope 19 Hz, every 5 s) plus what sends
# OTLP to a receiver on loopback (tests/system/otlp_receiver.py, one per profiler: the
# reference over gRPC without TLS, stackscope over HTTP); stackscope with --cache-dir ""
# (no unwind-table cache on disk: both start cold, as the reference always does).
#
# The workloads run all at once (the profilers record the whole system), each with a known
# chain, root to leaf:
#   native  bench/native30.c built -O2 -fomit-frame-pointer: main -> rec30 x30
#   python  bench/py_deep30.py (python3):                  <module> -> down x30
#   jvm     bench/JvmDeep30.java (java, C2 inlines down):  JvmDeep30.main -> down x30
#   node    bench/node_deep30.js (node, OSR loop):         down x30
#   ruby    bench/rb_deep30.rb:                            <main> -> down x30
#   php     bench/php_deep.php (php-cli):                  down x30
#   perl    bench/perl_deep.pl:                            down x30
#   go      build/fixtures/wl_go (stripped):               main.main -> alpha -> beta -> gamma
#   short   build/fixtures/wl_short in a loop (processes of ~0.1 s; every process whose
#           executable is wl_short):                       main -> short_work
# The reference names no native frame (its backend does): its native addresses are named
# here from the workloads' own symbol tables (bench/reference_chains.py).
#
# Method, per profiler and run: T0 its start; ready when its receiver has the first request;
# the window of DUR s starts SETTLE (8) s later (the reference's first report comes before it
# has read every process: a process it has not read yet loses its samples); then 7 s more for
# the last report to come, and SIGINT.
#  - complete: of the workload's samples whose timestamp is in the window, those whose stack
#    holds its chain (consecutive frames, bench/reference_chains.py);
#  - samples/s/CPU: those samples over the workload's CPU seconds in the window (utime+stime,
#    children's too, from /proc; the profilers' nominal rate is 19-20);
#  - start-up: T0 to the timestamp of the first sample holding the workload's chain;
#  - agent CPU: utime+stime of the profiler's process over the window, and BPF: run_time_ns of
#    the programs it holds (kernel.bpf_stats_enabled=1 during the run), both % of one core;
#    memory: VmRSS at the window's end and the memlock of the BPF maps it holds.
# Tables: medians over the rounds. Prints the load (uptime) before and after. Not in CI: it
# needs the reference's repository (REFERENCE_GIT, see bench/reference_build.sh) and takes
# ~4 min a round on 2 CPUs.
# Usage: sudo bench/reference.sh [ROUNDS (3)] [DUR_S (15)]   Env: KEEP=1 keeps the files
# (each run's requests, samples.tsv and spec), SETTLE.
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
DUR=${2:-15}
SETTLE=${SETTLE:-8}
PY=/usr/bin/python3
RECEIVER=tests/system/otlp_receiver.py
WORKLOADS=(native python jvm node ruby php perl go short)
for t in java javac node ruby php perl python3 nm; do
	need_program "$t" "scripts/setup.sh"
done
need_fixture WL_GO wl_go
need_fixture WL_SHORT wl_short
pids=()
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
bench_start reference 'stop_workloads; stop_pids; sysctl -q kernel.bpf_stats_enabled="$stats_was"'
trap 'exit 130' INT TERM
REF=$(bench/reference_build.sh) || exit 1
build_native30 "$out" || exit 1
javac -d "$out" bench/JvmDeep30.java || exit 1
ref_commit=$(basename "$REF" | sed 's/^ebpf-profiler-\([0-9a-f]*\).*/\1/')
sysctl -q kernel.bpf_stats_enabled=1
load_before=$(uptime)
tck=$(getconf CLK_TCK)
down30=$(printf 'down %.0s' $(seq 30))

# start_workloads LIFE: every workload, each in a process group of its own, for LIFE s at most;
# $out/spec (bench/reference_chains.py's) and wl_pid[NAME], the process whose CPU is counted
declare -A wl_pid
start_workloads()
{
	local life=$1 n
	setsid "$out/native30" 1e13 &
	wl_pid[native]=$!
	setsid python3 bench/py_deep30.py 1e12 &
	wl_pid[python]=$!
	setsid java -cp "$out" JvmDeep30 "$life" &
	wl_pid[jvm]=$!
	setsid node bench/node_deep30.js 0 "$life" >/dev/null &
	wl_pid[node]=$!
	setsid ruby bench/rb_deep30.rb 100000000000 &
	wl_pid[ruby]=$!
	setsid php bench/php_deep.php 30 "$life" >/dev/null &
	wl_pid[php]=$!
	setsid perl bench/perl_deep.pl 30 "$life" >/dev/null &
	wl_pid[perl]=$!
	setsid "$WL_GO" "$life" >/dev/null &
	wl_pid[go]=$!
	setsid bash -c "while :; do '$WL_SHORT' 4 100; done" >/dev/null 2>&1 &
	wl_pid[short]=$!
	cat >"$out/spec" <<-SPEC
		native pid:${wl_pid[native]} main $(printf 'rec30 %.0s' $(seq 30))
		python pid:${wl_pid[python]} <module> $down30
		jvm pid:${wl_pid[jvm]} main $down30
		node pid:${wl_pid[node]} $down30
		ruby pid:${wl_pid[ruby]} <main> $down30
		php pid:${wl_pid[php]} $down30
		perl pid:${wl_pid[perl]} $down30
		go pid:${wl_pid[go]} main.main main.alpha main.beta main.gamma
		short exe:wl_short main short_work
	SPEC
}
stop_workloads()
{
	local n
	for n in "${!wl_pid[@]}"; do kill -- "-${wl_pid[$n]}" 2>/dev/null; done
	wl_pid=()
}
# wl_ticks: "NAME ticks" of every workload: utime+stime+cutime+cstime of its process
wl_ticks()
{
	local n
	for n in "${WORKLOADS[@]}"; do
		echo "$n $(awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' \
			"/proc/${wl_pid[$n]}/stat" 2>/dev/null || echo 0)"
	done
}

# run_mode ROUND MODE PROFILER...: one run of the PROFILERs (ref, ss) at once on the workloads;
# appends "ROUND MODE PROFILER NAME samples complete first_ms cpu_s" lines to $out/wl.txt and
# "ROUND MODE PROFILER cpu_pct bpf_pct rss_kb maps_bytes" to $out/cost.txt
run_mode()
{
	local round=$1 mode=$2 p dir t1 t2 ready s1 c0 b0 c1 b1 maps life=$((DUR + 120))
	shift 2
	declare -A ppid pt0 rpid s0
	start_workloads "$life"
	sleep 3
	for p in "$@"; do
		dir=$out/$round-$mode-$p
		mkdir -p "$dir"
		$PY "$RECEIVER" --dir "$dir/rcv" --lifetime "$life" >"$dir/port" 2>"$dir/rcv.err" &
		rpid[$p]=$!
		pids+=($!)
		for _ in $(seq 100); do [[ -s $dir/port ]] && break; sleep 0.1; done
	done
	for p in "$@"; do
		dir=$out/$round-$mode-$p
		pt0[$p]=$(date +%s%N)
		if [[ $p == ref ]]; then
			"$REF" -collection-agent "127.0.0.1:$(head -1 "$dir/port")" -disable-tls \
				>"$dir/log" 2>&1 &
		else
			./stackscope agent --otlp-endpoint "http://127.0.0.1:$(head -1 "$dir/port")" \
				--cache-dir "" >"$dir/log" 2>&1 &
		fi
		ppid[$p]=$!
		pids+=($!)
	done
	for _ in $(seq 900); do
		ready=1
		for p in "$@"; do
			compgen -G "$out/$round-$mode-$p/rcv/req-*.pb" >/dev/null || ready=0
			kill -0 "${ppid[$p]}" 2>/dev/null || { echo "bench: $p stopped" >&2; tail -5 "$out/$round-$mode-$p/log" >&2; exit 1; }
		done
		((ready)) && break
		sleep 0.1
	done
	sleep "$SETTLE"
	t1=$(date +%s%N)
	wl_ticks >"$out/ticks0"
	for p in "$@"; do s0[$p]=$($PY bench/bpf_snap.py "${ppid[$p]}" /dev/null); done
	sleep "$DUR"
	t2=$(date +%s%N)
	wl_ticks >"$out/ticks1"
	for p in "$@"; do
		s1=$($PY bench/bpf_snap.py "${ppid[$p]}" /dev/null)
		read -r _ c0 b0 _ <<<"${s0[$p]}"
		read -r _ c1 b1 _ _ _ maps _ <<<"$s1"
		echo "$round $mode $p $(awk -v c="$((c1 - c0))" -v b="$((b1 - b0))" -v t="$((t2 - t1))" \
			-v hz="$tck" 'BEGIN { printf "%.2f %.2f", 100 * c / hz / (t / 1e9), 100 * b / t }') \
			$(awk '/^VmRSS/ { print $2 }' "/proc/${ppid[$p]}/status") $maps" >>"$out/cost.txt"
	done
	sleep 7
	for p in "$@"; do kill -INT "${ppid[$p]}"; done
	for p in "$@"; do
		for _ in $(seq 100); do kill -0 "${ppid[$p]}" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "${ppid[$p]}" 2>/dev/null
		wait "${ppid[$p]}" 2>/dev/null
	done
	stop_workloads
	kill "${rpid[@]}" 2>/dev/null
	wait 2>/dev/null
	pids=() # all ended and waited for: none to stop at exit
	for p in "$@"; do
		dir=$out/$round-$mode-$p
		find "$dir/rcv" -name 'req-*.pb' | sort | xargs -r $PY bench/otlp_samples.py >"$dir/samples.tsv"
		cp "$out/spec" "$dir/spec"
		$PY bench/reference_chains.py "$out/spec" "${pt0[$p]}" "$t1" "$t2" \
			"native30=$out/native30" "wl_short=$WL_SHORT" <"$dir/samples.tsv" | sort |
			join - <(join <(sort "$out/ticks0") <(sort "$out/ticks1")) |
			awk -v r="$round" -v m="$mode" -v p="$p" -v hz="$tck" \
				'{ printf "%s %s %s %s %s %s %s %.2f\n", r, m, p, $1, $2, $3, $4, ($6 - $5) / hz }' \
			>>"$out/wl.txt"
	done
}

for ((r = 1; r <= ROUNDS; r++)); do
	echo "round $r/$ROUNDS: reference alone, stackscope alone, both ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
	run_mode "$r" alone ref
	run_mode "$r" alone ss
	run_mode "$r" both ref ss
done
load_after=$(uptime)

# med FILE AWK-FILTER FIELD-EXPR: the median over the rounds of FIELD-EXPR on FILE's lines
# that AWK-FILTER selects ("-" for none)
med() { awk "$2 { print $3 }" "$1" | median; }
rate() { awk -v n="$1" -v c="$2" 'BEGIN { if (c > 0) printf "%.1f", n / c; else printf "-" }'; }
echo
echo "# stackscope $(git rev-parse --short HEAD) vs OpenTelemetry eBPF profiler ${ref_commit:0:12}," \
	"$(date -u '+%F %H:%M') UTC, $(nproc) CPUs, $(uname -r); $ROUNDS rounds, window $DUR s"
echo "load before: ${load_before#*load average: }; after: ${load_after#*load average: }"
echo
echo "complete: % of the workload's samples holding its chain; rate: samples per CPU-second of the workload; start: s to the first complete sample (medians)"
echo
echo "| workload | ref alone: complete / rate / start | stackscope alone: complete / rate / start | both: ref complete / rate | both: stackscope complete / rate |"
echo "|---|---|---|---|---|"
for n in "${WORKLOADS[@]}"; do
	row="| $n"
	for mp in "alone ref" "alone ss" "both ref" "both ss"; do
		read -r m p <<<"$mp"
		sel="\$2 == \"$m\" && \$3 == \"$p\" && \$4 == \"$n\""
		c=$(awk "$sel { if (\$5 > 0) printf \"%.1f\\n\", 100 * \$6 / \$5 }" "$out/wl.txt" | median)
		rt=$(awk "$sel { if (\$8 > 0) printf \"%.1f\\n\", \$5 / \$8 }" "$out/wl.txt" | median)
		if [[ $m == alone ]]; then
			st=$(awk "$sel && \$7 != \"-\" { printf \"%.1f\\n\", \$7 / 1000 }" "$out/wl.txt" | median)
			row+=" | $c % / $rt / $st s"
		else
			row+=" | $c % / $rt"
		fi
	done
	echo "$row |"
done
echo
echo "| profiler, run | CPU % of a core | BPF % of a core | RSS MiB | BPF maps MiB |"
echo "|---|---|---|---|---|"
for mp in "alone ref" "alone ss" "both ref" "both ss"; do
	read -r m p <<<"$mp"
	sel="\$2 == \"$m\" && \$3 == \"$p\""
	printf '| %s, %s | %s | %s | %s | %s |\n' "$([[ $p == ref ]] && echo reference || echo stackscope)" "$m" \
		"$(med "$out/cost.txt" "$sel" '$4')" "$(med "$out/cost.txt" "$sel" '$5')" \
		"$(awk "$sel { printf \"%.0f\\n\", \$6 / 1024 }" "$out/cost.txt" | median)" \
		"$(awk "$sel { printf \"%.1f\\n\", \$7 / 1048576 }" "$out/cost.txt" | median)"
done
