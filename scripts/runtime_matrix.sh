#!/bin/bash
# The runtime matrix (docs/ARCHITECTURE.md "Runtime matrix"): each runtime's call-chain workload
# run in the Debian roots of bullseye, bookworm, trixie and sid (scripts/runtime_root.sh) the
# way a container runs it (scripts/in_container.sh: its own PID and mount namespaces, that root,
# a cgroup named like a Docker container's), profiled by one `stackscope agent` per suite into
# its embedded store, each row's profile queried back by its container id. One line per suite
# and runtime:
#   SUITE     RUNTIME  VERSION         SAMPLES CHAIN  HOT    EXPECT RESULT  TOP MARKER
#   bullseye  python   3.9.2               1480 99.1%  100.0% yes    ok
# CHAIN: samples with the whole known chain, root to hot function, every caller at its exact
# call line, over all the workload's samples (its thread's, for the JVM: its compiler and GC
# threads are not the workload). HOT: samples at the hot line over the hot function's. A row
# passes with CHAIN and HOT >= 95 % (RM_PCT) and at least RM_MIN_SAMPLES samples. EXPECT says
# which rows this build supports (the table below, which the README's version list follows):
# a supported row that fails fails the matrix; an unsupported one is shown as such, never
# skipped, and one that passes is reported as "passes: mark it supported".
# The stacks of each row are kept under RM_OUT (SUITE-RUNTIME.stacks, "thread;frames count").
# Usage: scripts/runtime_matrix.sh [SUITE|all [RUNTIME|all]]
# Env: RM_SECS (workload seconds, default 5: a runtime's start-up, a fixed cost, weighs less
# than in 3), RM_JOBS (rows run at once, default 2), RM_HZ (default 499), RM_PCT (default
# 95), RM_MIN_SAMPLES (default 200), RM_OUT
# (default build/runtime-matrix), RM_CACHE (the roots, scripts/runtime_root.sh), STACKSCOPE
# (default ./stackscope).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
STACKSCOPE=${STACKSCOPE:-$TOP/stackscope}
OUT=${RM_OUT:-$TOP/build/runtime-matrix}
SECS=${RM_SECS:-5}
HZ=${RM_HZ:-499}
JOBS=${RM_JOBS:-2}
PCT=${RM_PCT:-95}
MIN_SAMPLES=${RM_MIN_SAMPLES:-200}
DATA=$TOP/tests/data
ALL_SUITES=(bullseye bookworm trixie sid)
ALL_RUNTIMES=(python perl ruby php php_fpm php_jit hotspot node go luajit luajit_joff beam)
# the workloads' folder inside each root, and the container ids, are this run's own: matrices
# run at once (one per worktree) neither remove each other's files nor read each other's rows
WORKDIR=/opt/stackscope-matrix.$$
used_roots=()
trap 'for r in "${used_roots[@]}"; do rm -rf "${r:?}$WORKDIR"; done' EXIT

# The rows this build supports: "SUITE RUNTIME" (each checked by this script on this machine;
# README.md lists the versions they are).
SUPPORTED=(
	"bullseye python" "bookworm python" "trixie python" "sid python"
	"bullseye perl" "bookworm perl" "trixie perl" "sid perl"
	"bullseye ruby" "bookworm ruby" "trixie ruby" "sid ruby"
	"bullseye php" "bookworm php" "trixie php" "sid php"
	"bullseye php_fpm" "bookworm php_fpm" "trixie php_fpm" "sid php_fpm"
	"bullseye php_jit" "bookworm php_jit" "trixie php_jit" "sid php_jit"
	"bullseye hotspot" "bookworm hotspot" "trixie hotspot" "sid hotspot"
	"bullseye go" "bookworm go" "trixie go" "sid go"
	"bullseye node" "bookworm node" "trixie node" "sid node"
	"bullseye luajit" "bookworm luajit" "trixie luajit" "sid luajit"
	"bullseye luajit_joff" "bookworm luajit_joff" "trixie luajit_joff" "sid luajit_joff"
	"bullseye beam" "bookworm beam" "trixie beam" "sid beam"
)

suites=("${ALL_SUITES[@]}")
runtimes=("${ALL_RUNTIMES[@]}")
[[ ${1:-all} == all ]] || suites=("$1")
[[ ${2:-all} == all ]] || runtimes=("$2")
for s in "${suites[@]}"; do
	[[ " ${ALL_SUITES[*]} " == *" $s "* ]] || {
		echo "runtime_matrix: unknown suite '$s' (${ALL_SUITES[*]} or all)" >&2
		exit 2
	}
done
for r in "${runtimes[@]}"; do
	[[ " ${ALL_RUNTIMES[*]} " == *" $r "* ]] || {
		echo "runtime_matrix: unknown runtime '$r' (${ALL_RUNTIMES[*]} or all)" >&2
		exit 2
	}
done
[[ $(id -u) -eq 0 ]] || {
	echo "runtime_matrix: run as root (eBPF, namespaces, chroot)" >&2
	exit 2
}
[[ -x $STACKSCOPE ]] || {
	echo "runtime_matrix: $STACKSCOPE missing: run make" >&2
	exit 2
}
mkdir -p "$OUT"

# line FILE MARK: the line numbers of FILE ending in a "# MARK", "// MARK", "-- MARK" (Lua) or
# "% MARK" (Erlang) comment, as an alternation ("74|75|76")
line()
{
	grep -nE "(//|#|--|%) $2\$" "$1" | cut -d: -f1 | paste -sd'|'
}

N='[^;@]*;'                                # one native frame
LIBC_START="_start;__libc_start_main(_impl)?;" # the native root of a main thread

# ---- the rows: what each runtime runs and what its stacks must show ----
# row_RUNTIME sets FILES (workload files, copied into WORKDIR), RUN (a shell command run in
# WORKDIR inside the container; SECS in the environment), VERSION (a shell command printing the
# runtime's version there), THREAD (the workload's thread name, a regex), CHAIN (the whole
# known chain, a regex over the frames of a sample, root first), HOTFN (a sample is in the
# hot function) and HOT (... at its hot line). PREPARE, when set, runs once in the container
# before the recording (building the workload); STACKS_OPTS, options of pprof_stacks.py.

row_python()
{
	local c=py_chain\\.py f=$DATA/py_chain.py
	FILES=("$f")
	PY='$(ls /usr/bin/python3.* | grep -E "/python3\.[0-9]+$" | sort -V | tail -1)'
	RUN="exec $PY -S py_chain.py \$SECS"
	VERSION="$PY -c 'import platform; print(platform.python_version())'"
	THREAD='python3.*'
	CHAIN="^$LIBC_START($N)*_PyEval_EvalFrameDefault;($N)*<module>@$c:$(line "$f" CALL_MODULE);($N)*a@$c:$(line "$f" CALL_A);($N)*b@$c:$(line "$f" CALL_B);($N)*c@$c:[0-9]+(;[^;@]*)*\$"
	HOTFN=";c@$c:"
	HOT=";c@$c:($(line "$f" HOT))(;|\$)"
	PREPARE=
}

row_perl()
{
	local c=perl_chain\\.pl f=$DATA/perl_chain.pl
	FILES=("$f")
	RUN="exec perl perl_chain.pl \$SECS"
	VERSION="perl -e 'printf qq(%vd\n), \$^V'"
	THREAD=perl
	CHAIN="^$LIBC_START($N)*Perl_runops_standard;main@$c:$(line "$f" CALL_ALPHA);main::alpha@$c:$(line "$f" CALL_BETA);main::beta@$c:$(line "$f" CALL_GAMMA);main::gamma@$c:[0-9]+(;[^;@]*)*\$"
	HOTFN=";main::gamma@$c:"
	HOT=";main::gamma@$c:($(line "$f" HOT))(;|\$)"
	PREPARE=
}

row_ruby()
{
	local c=rb_chain\\.rb f=$DATA/rb_chain.rb
	FILES=("$f")
	RUN="exec ruby --disable-gems rb_chain.rb \$SECS"
	VERSION="ruby --disable-gems -e 'puts RUBY_VERSION'"
	THREAD='ruby.*'
	CHAIN="^$LIBC_START($N)*ruby_run_node;($N)*<main>@$c:$(line "$f" CALL_ALPHA);Worker#alpha@$c:$(line "$f" CALL_BETA);Worker#beta@$c:$(line "$f" CALL_GAMMA);Worker#gamma@$c:[0-9]+(;[^;@]*)*\$"
	HOTFN=";Worker#gamma@$c:"
	HOT=";Worker#gamma@$c:($(line "$f" HOT))(;|\$)"
	PREPARE=
}

# LuaJIT: the standalone luajit, with its JIT (gamma's loop is a trace, the chain above it
# interpreted or linked traces) and without (-joff). Functions are named by their caller's call
# instruction (a global, "obj:beta", "M.gamma"), the main chunk "<main>".
row_luajit()
{
	local c=lua_chain\\.lua f=$DATA/lua_chain.lua
	FILES=("$f")
	RUN="exec luajit lua_chain.lua \$SECS"
	VERSION="luajit -v | cut -d' ' -f2"
	THREAD=luajit
	CHAIN="^$LIBC_START($N)*lua_pcall;lj_vm;<main>@$c:$(line "$f" CALL_ALPHA);alpha@$c:$(line "$f" CALL_BETA);obj:beta@$c:$(line "$f" CALL_GAMMA);M\\.gamma@$c:[0-9]+(;[^;@]*)*\$"
	HOTFN=";M\\.gamma@$c:"
	HOT=";M\\.gamma@$c:($(line "$f" HOT))(;|\$)"
	PREPARE=
}

row_luajit_joff()
{
	row_luajit
	RUN="exec luajit -joff lua_chain.lua \$SECS"
}

row_php()
{
	local c=php_chain\\.php f=$DATA/php_chain.php
	FILES=("$f")
	RUN="exec php php_chain.php \$SECS"
	VERSION="php -r 'echo PHP_VERSION, PHP_EOL;'"
	THREAD=php
	CHAIN="^$LIBC_START($N)*execute_ex;\\{main\\}@$c:$(line "$f" CALL_RUN);Worker::run@$c:$(line "$f" CALL_ALPHA);alpha@$c:$(line "$f" CALL_BETA);beta@$c:$(line "$f" CALL_GAMMA);gamma@$c:[0-9]+(;[^;@]*)*\$"
	HOTFN=";gamma@$c:"
	HOT=";gamma@$c:($(line "$f" HOT))(;|\$)"
	PREPARE=
}

# php-fpm: a static pool of 2 workers (tests/data/php_fpm_drive.sh; recycled every 20 requests,
# so forked while the agent runs) serving tests/data/php_fpm.php to 4 cgi-fcgi clients in the
# same container; Debian's FPM has opcache on. The samples are those of the processes named
# php-fpmX.Y: the workers, and the master's start-up (VERSION asks dpkg: a php-fpm -v would add
# one more start-up).
row_php_fpm()
{
	local c=php_fpm\\.php f=$DATA/php_fpm.php
	FILES=("$f" "$DATA/php_fpm_drive.sh")
	# opcache caches no file younger than file_update_protection (2 s): FILES were just copied
	RUN="exec bash php_fpm_drive.sh fpm php_fpm.php \$SECS -d opcache.file_update_protection=0"
	VERSION="dpkg-query -W -f '\${Version}\\n' 'php[0-9]*-fpm' | sed 's/-.*//'"
	THREAD='php-fpm[0-9.]*'
	CHAIN="^$LIBC_START($N)*execute_ex;\\{main\\}@$c:$(line "$f" FPM_CALL_HANDLE);fpm_handle@$c:$(line "$f" FPM_CALL_RENDER);fpm_render@$c:$(line "$f" FPM_CALL_LEAF);fpm_leaf@$c:[0-9]+(;[^;@]*)*\$"
	HOTFN=";fpm_leaf@$c:"
	HOT=";fpm_leaf@$c:($(line "$f" FPM_HOT))(;|\$)"
	PREPARE=
}

# opcache's JIT (PHP 8: tracing) in the CLI on tests/data/php_jit.php, whose gamma spends its
# time in the C functions it calls on two lines (str_repeat, strrev): JIT code saves a frame's
# line where it calls out (as the VM does), never while it runs itself (a sample there has
# gamma without a line). HOT: gamma at one of its own lines (tests/system/test_php_jit.sh checks
# each C function under the line that calls it). PHP 7.4 has no JIT: the row is its CLI with
# opcache on (VERSION says).
row_php_jit()
{
	local c=php_jit\\.php f=$DATA/php_jit.php
	local opts="-d opcache.enable_cli=1 -d opcache.jit=tracing -d opcache.jit_buffer_size=32M"
	opts+=" -d opcache.file_update_protection=0" # FILES were just copied: cache them at once
	FILES=("$f")
	RUN="exec php $opts php_jit.php \$SECS"
	VERSION="php $opts -r \"echo PHP_VERSION, (function_exists('opcache_get_status') && (opcache_get_status(false)['jit']['on'] ?? false)) ? ' JIT' : ' no JIT', PHP_EOL;\""
	THREAD=php
	CHAIN="^$LIBC_START($N)*execute_ex;\\{main\\}@$c:$(line "$f" CALL_RUN);Worker::run@$c:$(line "$f" CALL_ALPHA);alpha@$c:$(line "$f" CALL_BETA);beta@$c:$(line "$f" CALL_GAMMA);gamma@$c(:[0-9]+)?(;[^;@]*)*\$"
	HOTFN=";gamma@$c(:[0-9]+)?(;|\$)"
	HOT=";gamma@$c:($(line "$f" SETUP)|$(line "$f" HOT)|$(line "$f" ARITH)|$(line "$f" HOT2))(;|\$)"
	PREPARE=
}

# HotSpot: JvmChain compiled on the host for Java 11 (the oldest JVM of the roots); the
# thread named "jmain" runs the chain. The hot loop is gamma's, which calls mix (inlined into
# it when compiled), which calls heavy.
row_hotspot()
{
	local c=JvmChain\\.java f=$DATA/JvmChain.java
	FILES=("$OUT/classes/JvmChain.class")
	RUN="exec java -XX:+UseSerialGC -cp . JvmChain jmain \$SECS"
	VERSION="java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.version = //p'"
	THREAD=jmain
	CHAIN="^($N)*JavaMain;($N)*JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;JvmChain\\.main@$c:($(line "$f" CALL_ALPHA));JvmChain\\.alpha@$c:($(line "$f" CALL_BETA));JvmChain\\.beta@$c:($(line "$f" CALL_GAMMA));JvmChain\\.gamma@$c:[0-9]+(;.*)?\$"
	HOTFN=";JvmChain\\.gamma@$c:"
	HOT=";JvmChain\\.gamma@$c:($(line "$f" HOT))(;|\$)"
	PREPARE=
}

# Node: the top-level code (node's CommonJS wrapper, an anonymous function named by where it
# starts, "<anonymous>:1:1") -> alpha -> beta -> gamma's loop. The workload runs 4 x SECS:
# Debian's node has no start-up snapshot and compiles its own modules at every start, ~0.3 s
# of the main thread's CPU (150 samples, measured on trixie's 20.19) before the script runs:
# in 5 s on a busy machine that alone is more than 5 % of the samples (Node 12 and 24 start the
# same way: 15 s at load 10 still left it 5-6 %).
row_node()
{
	local c=node_chain\\.js f=$DATA/node_chain.js
	FILES=("$f")
	RUN="exec node node_chain.js \$((SECS * 4))"
	VERSION="node -p 'process.versions.node + \" V8 \" + process.versions.v8.split(\".\").slice(0, 2).join(\".\")'"
	THREAD='node.*|MainThread' # Node 24 names its main thread
	CHAIN="^$LIBC_START($N)*\\[v8\\] JSEntry;.*<anonymous>(:[0-9]+:[0-9]+)?@$c(:[0-9]+)*;alpha@$c:($(line "$f" CALL_BETA))(:[0-9]+)?;beta@$c:($(line "$f" CALL_GAMMA))(:[0-9]+)?;gamma@$c(:[0-9]+)*(;[^;@]*)*\$"
	HOTFN=";gamma@$c"
	HOT=";gamma@$c:($(line "$f" LOOP)|$(line "$f" HOT))(:[0-9]+)?(;|\$)"
	PREPARE=
}

# Go: tests/data/wl_go.go built in the container by the suite's own Go (stripped, as a
# release build is), main.churn inlined into main.gamma.
row_go()
{
	local c=wl_go\\.go f=$DATA/wl_go.go
	FILES=("$f")
	GO='$(ls -d /usr/lib/go-*/bin/go | sort -V | tail -1)'
	PREPARE="[ -x wl_go ] || GOCACHE=/tmp/go-cache GOPATH=/tmp/go GO111MODULE=off GOFLAGS= CGO_ENABLED=0 $GO build -ldflags='-s -w' -o wl_go wl_go.go"
	RUN="exec ./wl_go \$SECS"
	VERSION="$GO version | cut -d' ' -f3 | sed 's/^go//'"
	THREAD=wl_go
	STACKS_OPTS=--native-lines # Go's frames are native ones, with lines from .gopclntab
	CHAIN="^runtime\\.goexit@asm_amd64\\.s:[0-9]+;runtime\\.main@proc\\.go:[0-9]+;main\\.main@$c:$(line "$f" MAIN_CALLS_ALPHA);main\\.alpha@$c:$(line "$f" ALPHA_CALLS_BETA);main\\.beta@$c:$(line "$f" BETA_CALLS_GAMMA);main\\.gamma@$c:[0-9]+(;main\\.churn@$c:[0-9]+)?(;[^;@]*)*\$"
	HOTFN=";main\\.gamma@$c:"
	HOT=";main\\.gamma@$c:($(($(line "$f" GAMMA_LOOP) - 1))|$(line "$f" GAMMA_LOOP)|$(line "$f" GAMMA_CALLS_CHURN))(;|\$)"
}

# BEAM (Erlang/OTP): erl_chain:main/1 -> alpha/1 -> beta/1 -> gamma/3, run by erl's init
# (init:do_boot/3, init:start_em/1, and in OTP 29 init:start_it/1: OTP's own modules carry no
# line tables in Debian's build, so they have no line). The Erlang process runs on any normal
# scheduler thread ("N_scheduler" before OTP 27, "erts_sched_N" since): the native root is the
# thread's, clone3 -> start_thread -> the emulator's thread wrapper -> sched_thread_func (named by
# address: libc's and beam.smp's symbols are stripped in the roots; ~10 % of bookworm's samples
# end at start_thread without clone3, early ones, not understood yet), then the Erlang frames.
# OTP 23 (bullseye) runs the emulator flavour (no JIT): its Erlang frames are walked from the
# interpreter loop's registers, whose native frame (process_main) then lies between the
# scheduler's and init's.
# The workload runs until the emulator has used 3 x SECS of CPU (at most 18 x SECS of wall
# time): its boot (loading OTP's modules, 0.2-0.3 s of CPU: 3 % of 10 s) and the schedulers'
# own work (a context switch every 4000 reductions: 1-2 %) are outside the chain, and a fixed
# wall time would weigh the boot in proportion to the machine's load (the workload got 14-20 %
# of a core at 5 s here).
row_beam()
{
	local c=erl_chain\\.erl f=$DATA/erl_chain.erl root='[^;@]*;'
	FILES=("$f")
	RUN="exec erl -noshell -pa . -run erl_chain main \$((SECS * 3))"
	VERSION="cat /usr/lib/erlang/releases/*/OTP_VERSION"
	THREAD='[0-9]+_scheduler|erts_sched_[0-9]+'
	CHAIN="^((__clone3|clone3|libc\\.so\\.6\\+0x[0-9a-f]+);)?(start_thread|libc\\.so\\.6\\+0x[0-9a-f]+);$root${root}(process_main;)?init:do_boot/3;init:start_em/1;(init:start_it/1;)?erl_chain:main/1@$c:$(line "$f" CALL_ALPHA);erl_chain:alpha/1@$c:$(line "$f" CALL_BETA);erl_chain:beta/1@$c:$(line "$f" CALL_GAMMA);erl_chain:gamma/3@$c:[0-9]+(;[^;@]*)*\$"
	HOTFN=";erl_chain:gamma/3@$c:"
	HOT=";erl_chain:gamma/3@$c:($(line "$f" HOT))(;|\$)"
	PREPARE="[ -f erl_chain.beam ] || erlc erl_chain.erl"
}

# ---- running ----

row_pids=() # the rows running (their subshells)
# wait_rows N: until fewer than N rows run
wait_rows()
{
	local p alive
	while :; do
		alive=()
		for p in "${row_pids[@]}"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
		row_pids=("${alive[@]}")
		((${#row_pids[@]} < $1)) && return
		wait -n "${row_pids[@]}" 2>/dev/null || true
	done
}

# count STACKS THREAD_RE [FRAMES_RE]: samples of threads matching THREAD_RE whose frames match
# FRAMES_RE
count()
{
	awk -v thread="^($2)\$" -v re="${3:-}" '
		{
			n = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
			t = stack; sub(/;.*/, "", t)
			frames = substr(stack, length(t) + 2)
			if (t !~ thread) next
			if (re != "" && frames !~ re) next
			sum += n
		}
		END { print sum + 0 }' "$1"
}

# the marker frame ("[runtime: reason]") in most of the samples of THREAD_RE in STACKS, with
# its share of them, or nothing
top_marker()
{
	awk -v thread="^($2)\$" '
		{
			n = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
			t = stack; sub(/;.*/, "", t)
			if (t !~ thread) next
			total += n
			rest = stack
			delete seen
			while (match(rest, /\[[a-z0-9]+: [^]]*\]/)) {
				m = substr(rest, RSTART, RLENGTH)
				rest = substr(rest, RSTART + RLENGTH)
				if (!(m in seen)) { seen[m] = 1; count[m] += n }
			}
		}
		END {
			for (m in count) if (count[m] > best) { best = count[m]; top = m }
			if (best) printf "%s %.1f%%", top, 100 * best / total
		}' "$1"
}

pct()
{
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else printf "0.0" }'
}

is_supported()
{
	local row
	for row in "${SUPPORTED[@]}"; do
		[[ $row == "$1 $2" ]] && return 0
	done
	return 1
}

container_id()
{
	printf 'stackscope-runtime-matrix %s %s %s' $$ "$1" "$2" | sha256sum | cut -c1-64
}

# the Java class files, once (javac of the host's JDK, for release 11)
if [[ " ${runtimes[*]} " == *" hotspot "* ]]; then
	mkdir -p "$OUT/classes"
	if [[ ! $OUT/classes/JvmChain.class -nt $DATA/JvmChain.java ]]; then
		javac --release 11 -d "$OUT/classes" "$DATA/JvmChain.java" || {
			echo "runtime_matrix: javac failed" >&2
			exit 1
		}
	fi
fi

# suite_rows SUITE: the rows of SUITE, from its store (run in the background while the next
# suite's rows run: its queries and counts take ~10 s a suite; `versions` is a copy)
suite_rows()
{
	local suite=$1 rt id stacks total chain inhot hot chain_pct hot_pct expect result bad=0
	for rt in "${runtimes[@]}"; do
		STACKS_OPTS=
		"row_$rt"
		id=$(container_id "$suite" "$rt")
		stacks=$OUT/$suite-$rt.stacks
		: >"$stacks"
		if "$STACKSCOPE" store query --store "$store" --container "$id" -o "$OUT/$suite-$rt.pb.gz" \
			>/dev/null 2>"$OUT/$suite-$rt.query.log"; then
			python3 "$TOP/tests/system/pprof_stacks.py" --thread $STACKS_OPTS "$OUT/$suite-$rt.pb.gz" >"$stacks"
		fi
		total=$(count "$stacks" "$THREAD")
		chain=$(count "$stacks" "$THREAD" "$CHAIN")
		inhot=$(count "$stacks" "$THREAD" "$HOTFN")
		hot=$(count "$stacks" "$THREAD" "$HOT")
		chain_pct=$(pct "$chain" "$total")
		hot_pct=$(pct "$hot" "$inhot")
		expect=no
		is_supported "$suite" "$rt" && expect=yes
		if ((total >= MIN_SAMPLES)) && awk -v a="$chain_pct" -v b="$hot_pct" -v p="$PCT" \
			'BEGIN { exit !(a >= p && b >= p) }'; then
			result=ok
			[[ $expect == yes ]] || result="passes: mark it supported"
		elif ((total < MIN_SAMPLES)); then
			result="too few samples"
		else
			result=unsupported
		fi
		if [[ $expect == yes && $result != ok ]]; then
			result="FAIL ($result)"
			bad=1
		fi
		printf '%-9s %-8s %-16s %7d %5s%% %5s%% %-6s %s %s\n' "$suite" "$rt" \
			"${versions[$rt]:--}" "$total" "$chain_pct" "$hot_pct" "$expect" "$result" \
			"$(top_marker "$stacks" "$THREAD")"
	done
	return $bad
}

failed=0
rows_pids=()
printf '%-9s %-8s %-16s %7s %6s %6s %-6s %s\n' SUITE RUNTIME VERSION SAMPLES CHAIN HOT EXPECT RESULT
for suite in "${suites[@]}"; do
	rm -f "$OUT/$suite.rows"
	root=$("$TOP/scripts/runtime_root.sh" "$suite") || {
		for rt in "${runtimes[@]}"; do
			printf '%-9s %-8s %-16s %7s %6s %6s %-6s %s\n' "$suite" "$rt" - - - - \
				"$(is_supported "$suite" "$rt" && echo yes || echo no)" "FAIL: no root"
		done >"$OUT/$suite.rows"
		failed=1
		continue
	}
	used_roots+=("$root")
	mkdir -p "$root$WORKDIR"
	for rt in "${runtimes[@]}"; do
		"row_$rt"
		cp "${FILES[@]}" "$root$WORKDIR/"
	done

	store=$OUT/$suite.db
	rm -f "$store" "$store"-*
	# the agent profiles the whole machine: a pool of 8M unwind entries (32 MiB, four times
	# the default) keeps the tables of whatever else ran in the last minute (a build beside
	# the matrix: compilers' tables are large) from leaving a workload's on frame pointers
	"$STACKSCOPE" agent -F "$HZ" --interval 1 --store "$store" --log-interval 3600 \
		--unwind-entries 8388608 >"$OUT/$suite.agent.log" 2>&1 &
	agent=$!
	# ready when it logs that it samples (its BPF programs loaded)
	for _ in $(seq 600); do
		grep -q 'agent running' "$OUT/$suite.agent.log" && break
		kill -0 $agent 2>/dev/null || break
		sleep 0.1
	done
	declare -A versions=()
	for rt in "${runtimes[@]}"; do
		"row_$rt"
		id=$(container_id "$suite" "$rt")
		# run CONTAINER_ID COMMAND: the version probe and the build run in a container of their
		# own, so that only the workload's samples are the row's
		run() { "$TOP/scripts/in_container.sh" "$root" "$1" /bin/sh -c "cd $WORKDIR && SECS=$SECS && $2"; }
		aside=$(container_id "$suite" "$rt-aside")
		versions[$rt]=$(run "$aside" "$VERSION" 2>/dev/null | head -1 || true)
		if [[ -n $PREPARE ]] && ! run "$aside" "$PREPARE" >"$OUT/$suite-$rt.prepare.log" 2>&1; then
			versions[$rt]="${versions[$rt]} (build failed)"
			continue
		fi
		# JOBS rows at once (a row is one busy thread of its runtime, a core's worth): the next
		# row's version probe and build run while the rows before it run
		wait_rows "$JOBS"
		{ run "$id" "$RUN" >"$OUT/$suite-$rt.out" 2>&1 || echo "exit status $?" >>"$OUT/$suite-$rt.out"; } &
		row_pids+=($!)
	done
	wait_rows 1
	sleep 1.5 # the last interval
	kill -TERM $agent
	wait $agent || echo "runtime_matrix: the agent exited with status $? (see $OUT/$suite.agent.log)" >&2

	suite_rows "$suite" >"$OUT/$suite.rows" &
	rows_pids+=($!)
	unset versions
done
for p in "${rows_pids[@]}"; do wait "$p" || failed=1; done
for suite in "${suites[@]}"; do cat "$OUT/$suite.rows" 2>/dev/null; done
exit $failed
