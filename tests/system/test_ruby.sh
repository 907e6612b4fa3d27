#!/bin/bash
# CRuby frames interleaved with native frames (bpf/interp/ruby/walk.h, src/interp/ruby/) for
# Debian's ruby3.1 (libruby-3.1.so, stripped to .dynsym; scripts/setup.sh installs it: missing
# under CI is a failure). The workloads are tests/data/rb_*.rb; their lines are marked
# (# HOT, # SORT...) and looked up here, so the checks name exact lines.
#
# pprof output is turned into "func@file:line;..." stacks by pprof_stacks.py: Ruby frames with
# an instruction sequence are the names with an "@"; C functions (Integer#times) and native
# frames have none. Checks:
#  - chain: <main> -> Worker#alpha -> #beta -> #gamma, each at its call line and gamma at the
#    hot line, with the native frames that run them (rb_vm_exec, vm_exec_core) right below;
#  - mixed: Ruby -> C function (Enumerable#sort_by, Integer#times, Array#each) -> native ->
#    block, with a class method (Mixed.count) and a define_method method (Mixed#made);
#  - threads: two busy Threads, each sample with its own thread's Ruby stack;
#  - a Ruby started after the recording began;
#  - Debian 11's ruby2.7 and 13's ruby3.3 in the runtime matrix's roots (scripts/runtime_root.sh;
#    a root not built is a skip), run as a container runs them (scripts/in_container.sh): the
#    chain, the mixed shapes (3.3's Integer#times is Ruby code, <internal:numeric>), the GC
#    marker and threads, each as the host's 3.1 checks them.
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
SECS=1.5
DATA=$SS_ROOT/tests/data
RUBY=/usr/bin/ruby3.1

# rb_record NAME SCRIPT: records ruby --disable-gems SCRIPT $SECS into $TMP/NAME.stacks
# (--disable-gems: no rubygems start-up, the shortest start the interpreter allows)
rb_record()
{
	record_stacks "$1" "$RUBY" --disable-gems "$2" $SECS
}

# Thresholds: 499 Hz for 1.5 s is ~750 samples on an idle box; on a loaded 2-core box a
# workload may get a quarter of a CPU: counts ask for 100 and shares of samples for 75-85%.
N='[^;@]*;' # one native (or C function) frame
C=rb_chain\\.rb
M=rb_mixed\\.rb
T=rb_threads\\.rb
marks "$DATA/rb_chain.rb" L_HOT=HOT L_GAMMA=CALL_GAMMA L_BETA=CALL_BETA L_ALPHA=CALL_ALPHA
marks "$DATA/rb_mixed.rb" L_SORT=SORT L_KEY=KEY L_TIMES=TIMES L_EACH=EACH
marks "$DATA/rb_threads.rb" L_SPIN_A=SPIN_A L_SPIN_B=SPIN_B L_THREAD_A=THREAD_A \
	L_THREAD_B=THREAD_B
CHAIN="<main>@$C:$L_ALPHA;Worker#alpha@$C:$L_BETA;Worker#beta@$C:$L_GAMMA;Worker#gamma@$C:$L_HOT(;[^;@]*)*\$"

# ---- another Debian's ruby in its runtime-matrix root (before the host's: they run without it)
# root_checks SUITE RUBY TIMES: the chain, mixed, GC and thread checks of SUITE's RUBY (its
# binary's name), TIMES the frames Integer#times shows (a regex: a C function, or Ruby code)
root_checks()
{
	local suite=$1 ruby=$2 times=$3 root dir id t o f inc inruby chain hot mixed gc own other run
	local rm_cache=${RM_CACHE:-/var/cache/stackscope/runtime-matrix}
	root=$rm_cache/roots/$suite
	if [[ ! -e $root/.stackscope-root || ! -x $root/usr/bin/$ruby ]]; then
		skip "$suite root with $ruby not built (scripts/runtime_root.sh $suite): its checks"
		return
	fi
	dir=/tmp/stackscope-test-ruby.$$ # inside the root
	mkdir -p "$root$dir"
	cp "$DATA"/rb_chain.rb "$DATA"/rb_mixed.rb "$DATA"/rb_threads.rb "$TMP/rb_gc.rb" "$root$dir/"
	id=$(echo "test_ruby $suite $$" | sha256sum | cut -c1-64)
	run=("$SS_ROOT/scripts/in_container.sh" "$root" "$id" "$ruby" --disable-gems)

	record_stacks "$suite-chain" "${run[@]}" "$dir/rb_chain.rb" $SECS
	f=$TMP/$suite-chain.stacks
	inruby=$(samples "$f" "*" ";ruby_run_node;")
	chain=$(samples "$f" "*" "ruby_run_node;($N)*$CHAIN")
	check_pct "$suite $ruby chain: <main>;Worker#alpha;#beta;#gamma at their lines" \
		"$chain" "$inruby" 90 || show_stacks "$f"
	inc=$(samples "$f" "*" ";Worker#gamma@$C:")
	hot=$(samples "$f" "*" ";Worker#gamma@$C:$L_HOT(;|\$)")
	check_pct "$suite $ruby chain: Worker#gamma at the hot line $L_HOT" "$hot" "$inc" 95
	grep -q "ruby .*layouts verified 1" "$TMP/$suite-chain.err"
	check_eq "$suite $ruby: the process's layout verified (record summary)" $? 0 ||
		grep "^ruby " "$TMP/$suite-chain.err" | sed 's/^/        /'

	record_stacks "$suite-mixed" "${run[@]}" "$dir/rb_mixed.rb" $SECS
	f=$TMP/$suite-mixed.stacks
	inc=$(samples "$f" "*" ";Mixed#key@$M:")
	mixed=$(samples "$f" "*" \
		";Mixed#sort_loop@$M:$L_SORT;Enumerable#sort_by;($N)+block in Mixed#sort_loop@$M:$L_SORT;Mixed#key@$M:[0-9]+(;[^;@]*)*\$")
	check_ge "$suite mixed: samples in Mixed#key" "$inc" 25
	check_pct "$suite mixed: Mixed#sort_loop -> Enumerable#sort_by (C) -> block -> Mixed#key" \
		"$mixed" "$inc" 85 || show_stacks "$f"
	inc=$(samples "$f" "*" ";block in Mixed\\.count@$M:")
	mixed=$(samples "$f" "*" \
		";Mixed\\.count@$M:$L_TIMES;$times;($N)*block in Mixed\\.count@$M:$L_TIMES(;[^;@]*)*\$")
	check_pct "$suite mixed: Mixed.count -> Integer#times -> block in Mixed.count" \
		"$mixed" "$inc" 85 || show_stacks "$f"
	inc=$(samples "$f" "*" ";block \\(2 levels\\) in <class:Mixed>@$M:")
	mixed=$(samples "$f" "*" \
		";Mixed#made@$M:$L_EACH;Array#each;($N)+block \\(2 levels\\) in <class:Mixed>@$M:$L_EACH(;[^;@]*)*\$")
	check_pct "$suite mixed: Mixed#made (define_method) -> Array#each (C) -> its block" \
		"$mixed" "$inc" 85 || show_stacks "$f"

	record_stacks "$suite-gc" "${run[@]}" "$dir/rb_gc.rb" $SECS
	f=$TMP/$suite-gc.stacks
	inc=$(samples "$f" "*" ";GC\\.start@<internal:gc>:[0-9]+")
	gc=$(samples "$f" "*" "<main>@rb_gc\\.rb:$L_GC;GC\\.start@<internal:gc>:[0-9]+;\\[ruby: gc\\](;[^;@]*)*\$")
	check_pct "$suite gc: <main> -> GC.start -> [ruby: gc]" "$gc" "$inc" 80 || show_stacks "$f"

	record_stacks "$suite-threads" "${run[@]}" "$dir/rb_threads.rb" $SECS
	$STACKS --thread "$TMP/$suite-threads.pb.gz" >"$TMP/$suite-threads.by_thread"
	f=$TMP/$suite-threads.by_thread
	other=0
	for t in a b; do
		inc=$(samples "$f" "spin-$t")
		own=$(samples "$f" "spin-$t" ";Object#spin_$t@$T:[0-9]+(;[^;@]*)*\$")
		check_pct "$suite threads: spin-$t's samples show its own spin_$t" "$own" "$inc" 85 ||
			show_stacks "$f"
		o=b
		[[ $t == a ]] || o=a
		other=$((other + $(samples "$f" "spin-$t" "spin_$o@")))
	done
	check_eq "$suite threads: no sample shows the other thread's Ruby stack" "$other" 0
	rm -rf "${root:?}$dir"
}

# rb_gc.rb: GC.start in a loop over a heap of 200k strings
{
	echo "keep = Array.new(200_000) { |i| \"s#{i}\" }"
	echo "deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV[0])"
	echo "GC.start while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline # GC_LOOP"
} >"$TMP/rb_gc.rb"
L_GC=$(line "$TMP/rb_gc.rb" GC_LOOP)
root_checks bullseye ruby2.7 'Integer#times'
root_checks trixie ruby3.3 'Integer#times@<internal:numeric>:[0-9]+'

if [[ ! -x $RUBY ]]; then
	skip_setup "Debian's ruby3.1 missing: every check of the host's Ruby"
	finish
fi

# ---- chain: one vm_exec_core activation runs all four frames ----
rb_record chain "$DATA/rb_chain.rb"
f=$TMP/chain.stacks
total=$(samples "$f" "*")
check_ge "chain: samples" "$total" 100
# of the samples running Ruby code (rb_vm_exec on the stack; the rest is the interpreter's
# start-up and exit, a fixed cost)
inruby=$(samples "$f" "*" ";rb_vm_exec;")
check_pct "chain: samples running Ruby code" "$inruby" "$total" 60
chain=$(samples "$f" "*" "rb_vm_exec;($N)*$CHAIN")
check_pct "chain: <main>:$L_ALPHA;Worker#alpha:$L_BETA;Worker#beta:$L_GAMMA;Worker#gamma:$L_HOT over rb_vm_exec" \
	"$chain" "$inruby" 90 || show_stacks "$f"
inc=$(samples "$f" "*" ";Worker#gamma@$C:")
hot=$(samples "$f" "*" ";Worker#gamma@$C:$L_HOT(;|\$)")
check_pct "chain: Worker#gamma at the hot line $L_HOT" "$hot" "$inc" 95
inter=$(samples "$f" "*" "^x;_start;__libc_start_main(_impl)?;($N)*rb_vm_exec;($N)*<main>@$C:")
check_pct "chain: complete from _start" "$inter" "$inruby" 90
gc=$(samples "$f" "*" "Worker#gamma@$C:[0-9]+;\\[ruby: gc\\]")
check_eq "chain: no GC marker in a loop that allocates nothing" "$gc" 0
grep -q "ruby .*layouts verified 1" "$TMP/chain.err"
check_eq "chain: the process's layout verified (record summary)" $? 0 ||
	grep "^ruby " "$TMP/chain.err" | sed 's/^/        /'

# ---- mixed: C functions between Ruby frames, blocks, a class method, define_method ----
rb_record mixed "$DATA/rb_mixed.rb"
f=$TMP/mixed.stacks
inc=$(samples "$f" "*" ";Mixed#key@$M:")
mixed=$(samples "$f" "*" \
	";Mixed#sort_loop@$M:$L_SORT;Enumerable#sort_by;($N)+block in Mixed#sort_loop@$M:$L_SORT;Mixed#key@$M:[0-9]+(;[^;@]*)*\$")
hot=$(samples "$f" "*" ";Mixed#key@$M:$L_KEY(;|\$)")
check_ge "mixed: samples in Mixed#key" "$inc" 25
check_pct "mixed: Mixed#sort_loop:$L_SORT -> Enumerable#sort_by (C) -> block -> Mixed#key" \
	"$mixed" "$inc" 85 || show_stacks "$f"
check_pct "mixed: Mixed#key at its loop line $L_KEY" "$hot" "$inc" 80
inc=$(samples "$f" "*" ";block in Mixed\\.count@$M:")
mixed=$(samples "$f" "*" \
	";Mixed\\.count@$M:$L_TIMES;Integer#times;($N)+block in Mixed\\.count@$M:$L_TIMES(;[^;@]*)*\$")
check_ge "mixed: samples in the block of class method Mixed.count" "$inc" 25
check_pct "mixed: Mixed.count:$L_TIMES -> Integer#times (C) -> block in Mixed.count:$L_TIMES" \
	"$mixed" "$inc" 85 || show_stacks "$f"
inc=$(samples "$f" "*" ";block \\(2 levels\\) in <class:Mixed>@$M:")
mixed=$(samples "$f" "*" \
	";Mixed#made@$M:$L_EACH;Array#each;($N)+block \\(2 levels\\) in <class:Mixed>@$M:$L_EACH(;[^;@]*)*\$")
check_ge "mixed: samples in the block of define_method Mixed#made" "$inc" 25
check_pct "mixed: Mixed#made (define_method):$L_EACH -> Array#each (C) -> its block:$L_EACH" \
	"$mixed" "$inc" 85 || show_stacks "$f"

# ---- lines past the succinct index's immediate part: a hot loop hundreds of instructions
# into its method (positions >= 54 live in 512-position blocks: rank, small-block ranks and a
# popcount), generated here
{
	echo "def long(deadline)"
	for i in $(seq 1 150); do
		echo "  v$i = deadline.to_i + $i"
	done
	echo "  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline"
	echo "    j = 0"
	echo "    j += 1 while j < 300_000 # LONG_HOT"
	echo "  end"
	echo "end"
	echo "long(Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV[0]))"
} >"$TMP/rb_long.rb"
L_LONG=$(line "$TMP/rb_long.rb" LONG_HOT)
rb_record long "$TMP/rb_long.rb"
f=$TMP/long.stacks
inc=$(samples "$f" "*" ";Object#long@rb_long\\.rb:")
hot=$(samples "$f" "*" ";Object#long@rb_long\\.rb:$L_LONG(;|\$)")
check_ge "long method: samples" "$inc" 100
check_pct "long method: hot line $L_LONG found through the succinct index blocks" "$hot" "$inc" 95 ||
	show_stacks "$f"

# ---- GC time: a [ruby: gc] frame on the leaf side of the Ruby frames that started it
# (rb_gc.rb: made above) ----
rb_record gc "$TMP/rb_gc.rb"
f=$TMP/gc.stacks
inc=$(samples "$f" "*" ";GC\\.start@<internal:gc>:[0-9]+")
gc=$(samples "$f" "*" "<main>@rb_gc\\.rb:$L_GC;GC\\.start@<internal:gc>:[0-9]+;\\[ruby: gc\\](;[^;@]*)*\$")
check_ge "gc: samples in GC.start" "$inc" 50
check_pct "gc: <main>:$L_GC -> GC.start -> [ruby: gc] -> the collector's native frames" "$gc" "$inc" 80 ||
	show_stacks "$f"

# ---- threads: each sample carries its own thread's stack (thread names set by the script) ----
rb_record threads "$DATA/rb_threads.rb"
$STACKS --thread "$TMP/threads.pb.gz" >"$TMP/threads.by_thread"
f=$TMP/threads.by_thread
for t in a b; do
	if [[ $t == a ]]; then
		want="block in <main>@$T:$L_THREAD_A;Object#spin_a@$T:$L_SPIN_A(;[^;@]*)*\$"
	else
		want="block in <main>@$T:$L_THREAD_B;Object#spin_b@$T:$L_SPIN_B(;[^;@]*)*\$"
	fi
	inc=$(samples "$f" "spin-$t")
	own=$(samples "$f" "spin-$t" "rb_vm_exec;($N)*$want")
	check_ge "threads: samples of thread spin-$t" "$inc" 50
	check_pct "threads: spin-$t's samples show its own chain (block in <main> -> spin_$t)" \
		"$own" "$inc" 85 || show_stacks "$f"
done
other=$(samples "$f" "spin-a" "spin_b")
other=$((other + $(samples "$f" "spin-b" "spin_a")))
check_eq "threads: no sample shows the other thread's Ruby stack" "$other" 0

# ---- a Ruby started 0.5 s after the recording began (exec, libruby mmap, VM start) ----
RECORD_OPTS=-q record_stacks late \
	/bin/sh -c "sleep 0.5; exec $RUBY --disable-gems $DATA/rb_chain.rb $SECS"
f=$TMP/late.stacks
inc=$(samples "$f" "*" ";Worker#gamma@$C:")
chain=$(samples "$f" "*" "rb_vm_exec;($N)*$CHAIN")
check_ge "late: samples in Worker#gamma" "$inc" 100
check_pct "late: chain with exact lines" "$chain" "$inc" 90 || show_stacks "$f"

finish
