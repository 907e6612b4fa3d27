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
# and real native programs as Debian ships them (stripped, no frame pointers; only their
# dynamic symbols name functions, so the chains use those, from the root ("^": the whole
# stack walked; "@F": a frame in file F, named or not; "...": any frames; "A|B": either; the
# reference names a file by the first path it met it under, /usr/bin/xz for the copy too):
#   xz      xz -T1 -6 on a generated 3 MB file, in a loop (a copy, bench-xz):
#                                                      ^ @bench-xz|@xz ... lzma_code
#   sqlite3 one sqlite3 process running a recursive-CTE query again and again:
#                                                      ^ @sqlite3 ... sqlite3_step sqlite3VdbeExec
#   pg      PostgreSQL 15 (every postgres process: the postmaster and the backends it forks)
#           under `pgbench -C -S -c 2` (a new connection, a new backend, per transaction):
#                                                      ^ _start ... main PostmasterMain
#   clang   clang -O2 -c of a generated 300-function C file, in a loop (cc1 in-process; a copy,
#           bench-clang):  ^ @bench-clang|@clang ... clang::ExecuteCompilerInvocation
#                          clang::CompilerInstance::ExecuteAction
# The reference names no native frame (its backend does): its native addresses are named
# here from the workloads' own symbol tables, or their dynamic ones (bench/reference_chains.py).
# Lines: for the interpreted and JIT workloads the chain's leaf frame's line is checked too
# (the line marked HOT in the workload's source).
#
# Method, per profiler and run: T0 its start; ready when its receiver has the first request;
# the window of DUR s starts SETTLE (8) s later (the reference's first report comes before it
# has read every process: a process it has not read yet loses its samples); then 7 s more for
# the last report to come, and SIGINT.
#  - complete: of the workload's samples whose timestamp is in the window, those whose stack
#    holds its chain (consecutive frames, bench/reference_chains.py);
#  - lines: of those, the share whose leaf chain frame has a line, and the share on the HOT line;
#  - samples/s/CPU: those samples over the workload's CPU seconds in the window (utime+stime
#    of its process group's live processes and of their reaped children, from /proc; the
#    profilers' nominal rate is 19-20);
#  - start-up: T0 to the timestamp of the first sample holding the workload's chain;
#  - agent CPU: utime+stime of the profiler's process over the window, and BPF: run_time_ns of
#    the programs it holds (kernel.bpf_stats_enabled=1 during the run), both % of one core;
#    memory: VmRSS at the window's end and the memlock of the BPF maps it holds.
# The store: every run's requests, as received, are then sent to `stackscope serve
# --otlp-listen` (one serve, one store per profiler, over OTLP/HTTP), and the samples its API
# gives per workload (/api/flamegraph?pid= or exe=, the run's time range) are checked against
# the Python receiver's decoding: the "serve" lines. The window and the start-up are cut by
# each sample's timestamp, which the store does not keep (only its intervals' start and end,
# 5 s apart): docs/BENCHMARKS.md, section 49-ref, has the measurement.
# Tables: medians over the rounds. Prints the load (uptime) before and after. Not in CI: it
# needs the reference's repository (REFERENCE_GIT, see bench/reference_build.sh) and Debian's
# xz-utils, sqlite3, clang and postgresql-15 (checked at the start), and takes ~6 min a round
# on 2 CPUs at load 30.
# Usage: sudo bench/reference.sh [ROUNDS (3)] [DUR_S (15)]   Env: KEEP=1 keeps the files
# (each run's requests, samples.tsv and spec), SETTLE, READY_WAIT (s for the first request:
# 300).
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
DUR=${2:-15}
SETTLE=${SETTLE:-8}
READY_WAIT=${READY_WAIT:-300}
PY=/usr/bin/python3
RECEIVER=tests/system/otlp_receiver.py
WORKLOADS=(native python jvm node ruby php perl go short xz sqlite3 pg clang)
PGBIN=/usr/lib/postgresql/15/bin
for t in java javac node ruby php perl python3 nm curl; do
	need_program "$t" "scripts/setup.sh"
done
need_program xz "Debian's xz-utils"
need_program sqlite3 "Debian's sqlite3"
need_program clang "Debian's clang"
need_program pgbench "Debian's postgresql-client-15"
need_program "$PGBIN/postgres" "Debian's postgresql-15"
id postgres >/dev/null 2>&1 || { echo "bench: no postgres user (Debian's postgresql-15)" >&2; exit 1; }
need_fixture WL_GO wl_go
need_fixture WL_SHORT wl_short
pids=()
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
bench_start reference 'stop_workloads; stop_pids; sysctl -q kernel.bpf_stats_enabled="$stats_was"'
chmod 711 "$out" # the postgres user reaches its data folder
trap 'exit 130' INT TERM
REF=$(bench/reference_build.sh) || exit 1
build_native30 "$out" || exit 1
javac -d "$out" bench/JvmDeep30.java || exit 1
# the real programs' inputs: text for xz (3 MB: a run of ~1 s of one CPU), a C file for
# clang, queries for sqlite3, and a PostgreSQL cluster with pgbench's tables (scale 1)
# xz and clang run as copies named bench-xz and bench-clang: the samples of every process of
# that name are the workload's, and other users of the box run clang too
cp /usr/bin/xz "$out/bench-xz"
cp "$(readlink -f /usr/bin/clang)" "$out/bench-clang"
seq 1 300000 | awk '{ print $1, $1 * 7 % 1000, "line of text", $1 % 13 }' >"$out/xz.txt"
awk 'BEGIN { for (i = 0; i < 300; i++) {
	printf "int f%d(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) {", i
	printf " s += a[i] * %d ^ (s >> 3); if (s %% 7 == %d) s -= a[(i + %d) %% n]; }", i, i % 7, i % 5
	print " return s; }" } }' >"$out/gen.c"
q='WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000)'
for _ in $(seq 2000); do echo "$q SELECT sum(x * x % 7) FROM c;"; done >"$out/q.sql"
mkdir -p "$out/pg/sock"
chown -R postgres "$out/pg"
if ! runuser -u postgres -- "$PGBIN/initdb" -D "$out/pg/data" -U postgres --auth=trust -N \
	>"$out/pg/initdb.log" 2>&1; then
	echo "bench: initdb failed: $(tail -3 "$out/pg/initdb.log")" >&2
	exit 1
fi
PGPORT=$((54000 + $$ % 1000))
# pg_start: the cluster's postmaster, as the postgres user, on a socket of its own (no TCP);
# its pid in wl_pid[pg]; fails when it does not answer within 10 s
pg_start()
{
	setsid setpriv --reuid=postgres --regid=postgres --init-groups "$PGBIN/postgres" \
		-D "$out/pg/data" -k "$out/pg/sock" -p "$PGPORT" -c listen_addresses= -c fsync=off \
		>>"$out/pg/log" 2>&1 &
	wl_pid[pg]=$!
	for _ in $(seq 100); do
		pg_isready -q -h "$out/pg/sock" -p "$PGPORT" && return 0
		sleep 0.1
	done
	echo "bench: postgres did not start: $(tail -3 "$out/pg/log")" >&2
	return 1
}
declare -A wl_pid
pg_start || exit 1
pgbench -h "$out/pg/sock" -p "$PGPORT" -U postgres -i -s 1 postgres >"$out/pg/init.log" 2>&1 ||
	{ echo "bench: pgbench -i failed: $(tail -3 "$out/pg/init.log")" >&2; exit 1; }
kill -INT "${wl_pid[pg]}"
wait "${wl_pid[pg]}"
wl_pid=()
# the files whose symbols name the reference's native addresses: NAME=PATH, NAME its mapping's
# basename
symfiles=("native30=$out/native30" "wl_short=$WL_SHORT")
for f in "$out/bench-xz" /usr/bin/sqlite3 "$PGBIN/postgres" "$out/bench-clang" \
	/usr/lib/x86_64-linux-gnu/liblzma.so.5 /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 \
	/usr/lib/x86_64-linux-gnu/libclang-cpp.so.14; do
	f=$(readlink -f "$f")
	symfiles+=("$(basename "$f")=$f")
done
# one serve per profiler: the runs' requests go to its --otlp-listen (see above)
declare -A serve_ui serve_otlp
serve_pids=()
for p in ref ss; do
	./stackscope serve --listen 127.0.0.1:0 --store "$out/serve-$p.db" \
		--otlp-listen 127.0.0.1:0 >"$out/serve-$p.out" 2>"$out/serve-$p.err" &
	serve_pids+=($!)
	pids+=($!)
	for _ in $(seq 100); do
		grep -q "OTLP profiles received" "$out/serve-$p.out" && break
		sleep 0.1
	done
	serve_ui[$p]=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$out/serve-$p.out")
	serve_otlp[$p]=$(sed -n 's/.*OTLP profiles received on port \([0-9]*\).*/\1/p' "$out/serve-$p.out")
	[[ -n ${serve_otlp[$p]} ]] ||
		{ echo "bench: serve did not start: $(cat "$out/serve-$p.err")" >&2; exit 1; }
done
ref_commit=$(basename "$REF" | sed 's/^ebpf-profiler-\([0-9a-f]*\).*/\1/')
sysctl -q kernel.bpf_stats_enabled=1
load_before=$(uptime)
tck=$(getconf CLK_TCK)
down30=$(printf 'down %.0s' $(seq 30))
clang_chain="clang::ExecuteCompilerInvocation clang::CompilerInstance::ExecuteAction"

# start_workloads LIFE: every workload, each in a process group of its own, for LIFE s at most;
# $out/spec (bench/reference_chains.py's) and wl_pid[NAME], the process group whose CPU is
# counted; pgbench, the client, in helper_pid (its CPU is not the workload's)
helper_pid=
start_workloads()
{
	local life=$1 n
	pg_start || exit 1
	setsid pgbench -h "$out/pg/sock" -p "$PGPORT" -U postgres -C -S -c 2 -T "$life" postgres \
		>"$out/pgbench.log" 2>&1 &
	helper_pid=$!
	setsid bash -c "while :; do '$out/bench-xz' -T1 -6 -c '$out/xz.txt' >/dev/null; done" &
	wl_pid[xz]=$!
	setsid sqlite3 :memory: <"$out/q.sql" >/dev/null &
	wl_pid[sqlite3]=$!
	setsid bash -c "while :; do '$out/bench-clang' -O2 -c '$out/gen.c' -o /dev/null; done" &
	wl_pid[clang]=$!
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
		python pid:${wl_pid[python]} lines:$(line bench/py_deep30.py HOT) <module> $down30
		jvm pid:${wl_pid[jvm]} lines:$(line bench/JvmDeep30.java HOT) main $down30
		node pid:${wl_pid[node]} lines:$(line bench/node_deep30.js HOT) $down30
		ruby pid:${wl_pid[ruby]} lines:$(line bench/rb_deep30.rb HOT) <main> $down30
		php pid:${wl_pid[php]} lines:$(line bench/php_deep.php HOT) $down30
		perl pid:${wl_pid[perl]} lines:$(line bench/perl_deep.pl HOT) $down30
		go pid:${wl_pid[go]} main.main main.alpha main.beta main.gamma
		short exe:wl_short main short_work
		xz exe:bench-xz ^ @bench-xz|@xz ... lzma_code
		sqlite3 pid:${wl_pid[sqlite3]} ^ @sqlite3 ... sqlite3_step sqlite3VdbeExec
		pg exe:postgres ^ _start ... main PostmasterMain
		clang exe:bench-clang ^ @bench-clang|@clang ... $clang_chain
	SPEC
}
stop_workloads()
{
	local n pg=${wl_pid[pg]:-}
	[[ -n $helper_pid ]] && kill -- "-$helper_pid" 2>/dev/null
	helper_pid=
	[[ -n $pg ]] && kill -INT "$pg" 2>/dev/null # a fast shutdown: its data folder is used again
	for n in "${!wl_pid[@]}"; do [[ $n == pg ]] || kill -- "-${wl_pid[$n]}" 2>/dev/null; done
	wl_pid=()
	if [[ -n $pg ]]; then
		for _ in $(seq 100); do kill -0 "$pg" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$pg" 2>/dev/null
	fi
}
# wl_ticks: "NAME ticks" of every workload: utime+stime+cutime+cstime of the live processes of
# its process tree (a child that ended is in its parent's cutime+cstime once reaped; PostgreSQL's
# children leave its process group and session, not its tree)
wl_ticks()
{
	local n roots=
	for n in "${WORKLOADS[@]}"; do roots+=" $n:${wl_pid[$n]}"; done
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v roots="$roots" '
		{ pid = $1; sub(/^.*\) /, ""); parent[pid] = $2; t[pid] = $12 + $13 + $14 + $15 }
		END {
			n = split(roots, r, " ")
			for (i = 1; i <= n; i++) { split(r[i], kv, ":"); root[kv[2]] = kv[1]; sum[kv[1]] = 0 }
			for (p in t)
				for (q = p; q > 1; q = parent[q])
					if (q in root) { sum[root[q]] += t[p]; break }
			for (w in sum) print w, sum[w]
		}'
}
# run_mode ROUND MODE PROFILER...: one run of the PROFILERs (ref, ss) at once on the workloads;
# appends "ROUND MODE PROFILER NAME samples complete first_ms cpu_s lined hot all serve" lines to
# $out/wl.txt (all: the workload's samples at any time; serve: those the store gives) and
# "ROUND MODE PROFILER cpu_pct bpf_pct rss_kb maps_bytes" to $out/cost.txt
run_mode()
{
	local round=$1 mode=$2 p dir t1 t2 t3 ready wl_all i s1 c0 b0 c1 b1 maps
	local life=$((READY_WAIT + SETTLE + DUR + 60))
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
	# ready: each has sent its first request (the reference loads its eBPF programs first: 20 s
	# at load 10, over 2 min at load 30)
	for ((i = 0; ; i++)); do
		ready=1
		for p in "$@"; do
			compgen -G "$out/$round-$mode-$p/rcv/req-*.pb" >/dev/null || ready=0
			kill -0 "${ppid[$p]}" 2>/dev/null || { echo "bench: $p stopped" >&2; tail -5 "$out/$round-$mode-$p/log" >&2; exit 1; }
		done
		((ready)) && break
		((i < READY_WAIT * 10)) || { echo "bench: no request in $READY_WAIT s ($*)" >&2; exit 1; }
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
	wl_all=("${wl_pid[@]}" ${helper_pid:+"$helper_pid"})
	stop_workloads
	kill "${rpid[@]}" 2>/dev/null
	wait "${rpid[@]}" "${wl_all[@]}" 2>/dev/null
	pids=("${serve_pids[@]}") # the rest ended and waited for: only serve to stop at exit
	t3=$(date +%s%N)
	for p in "$@"; do
		dir=$out/$round-$mode-$p
		find "$dir/rcv" -name 'req-*.pb' | sort >"$dir/reqs"
		xargs -r $PY bench/otlp_samples.py <"$dir/reqs" >"$dir/samples.tsv"
		cp "$out/spec" "$dir/spec"
		# the same requests to serve's receiver, as they came; the store's count per workload
		while read -r f; do
			curl -sS -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/x-protobuf' \
				--data-binary "@$f" "http://127.0.0.1:${serve_otlp[$p]}/v1development/profiles"
			sleep 0.06 # serve's default rate: 20 requests a second
		done <"$dir/reqs" | sort | uniq -c >"$dir/serve_codes"
		$PY bench/serve_counts.py "${serve_ui[$p]}" "${pt0[$p]}" "$t3" "$out/spec" | sort \
			>"$dir/serve_counts"
		$PY bench/reference_chains.py "$out/spec" "${pt0[$p]}" "$t1" "$t2" "${symfiles[@]}" \
			<"$dir/samples.tsv" | sort | join - "$dir/serve_counts" |
			join - <(join <(sort "$out/ticks0") <(sort "$out/ticks1")) |
			awk -v r="$round" -v m="$mode" -v p="$p" -v hz="$tck" \
				'{ printf "%s %s %s %s %s %s %s %.2f %s %s %s %s\n", r, m, p, $1, $2, $3, $4,
					($10 - $9) / hz, $5, $6, $7, $8 }' \
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
echo "lines: of the complete samples, % whose leaf chain frame has a line / % on the HOT line" \
	"(medians)"
echo
echo "| workload | reference alone | stackscope alone | both: reference | both: stackscope |"
echo "|---|---|---|---|---|"
for n in python jvm node ruby php perl; do
	row="| $n"
	for mp in "alone ref" "alone ss" "both ref" "both ss"; do
		read -r m p <<<"$mp"
		sel="\$2 == \"$m\" && \$3 == \"$p\" && \$4 == \"$n\" && \$6 > 0"
		row+=" | $(awk "$sel { printf \"%.1f\\n\", 100 * \$9 / \$6 }" "$out/wl.txt" | median) %"
		row+=" / $(awk "$sel { printf \"%.1f\\n\", 100 * \$10 / \$6 }" "$out/wl.txt" | median) %"
	done
	echo "$row |"
done
echo
echo "serve: the runs' requests sent again to \`stackscope serve --otlp-listen\`: samples its API" \
	"gives / samples the Python receiver decoded, every workload and run summed; HTTP answers"
for p in ref ss; do
	echo "- $([[ $p == ref ]] && echo reference || echo stackscope): $(awk -v p="$p" \
		'$3 == p { s += $12; a += $11 } END { printf "%d / %d", s, a }' "$out/wl.txt");" \
		"$(cat "$out"/*-"$p"/serve_codes |
			awk '{ c[$2] += $1 } END { for (k in c) printf "%s x%d ", k, c[k] }')"
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
