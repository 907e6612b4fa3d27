#!/bin/busybox sh
# The kernel matrix's /init inside QEMU (scripts/kernel_matrix.sh builds the root): mounts the
# kernel's file systems, records the known-chain native workload and a Python chain with
# stackscope (and, where the root has them, other runtimes' chains), prints the results between KM-BEGIN/KM-END markers on the console, powers off.
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf
mount -t tmpfs tmp /tmp
ulimit -l unlimited
secs=$(sed -n 's/.*km_secs=\([0-9.]*\).*/\1/p' /proc/cmdline)
# km_verbose (KM_VERBOSE=1 on the host): stackscope -v, the verifier log of a refusal
grep -q km_verbose /proc/cmdline && verbose=-v && export STACKSCOPE_VERIFIER_LOG=/tmp/verifier.log
# the statistics replace the verifier log: one or the other
[ -z "$verbose" ] && export STACKSCOPE_VERIFIER_STATS=1
echo "KM-BEGIN"
echo "KM kernel $(uname -r) $(uname -m)"
# TCG on a loaded host: a read of a process's memory costs tens of times its real wall time,
# which the runtimes' read budgets (1 % of a core) charge: 20 times theirs (symbol_cache.c)
export STACKSCOPE_READ_BUDGET_SCALE=20
# one record per case: its log (verifier statistics, walker) and its folded stacks
run_case()
{
	name=$1
	shift
	# the guest's clock at the case's start and end (each case's cost under TCG)
	echo "KM time $name start $(cut -d' ' -f1 /proc/uptime)"
	/usr/bin/stackscope record $verbose $KM_OPTS -F 199 -o /tmp/$name.folded \
		-- "$@" >/tmp/$name.log 2>&1
	status=$?
	# a refusal: again without the statistics (their log level leaves out the verifier's reason)
	[ $status != 0 ] && [ -z "$verbose" ] && grep -q "refused the BPF" /tmp/$name.log &&
		(unset STACKSCOPE_VERIFIER_STATS; /usr/bin/stackscope record -F 199 -o /tmp/$name.folded \
			-- "$@" >>/tmp/$name.log 2>&1)
	echo "KM status $name $status"
	echo "KM time $name end $(cut -d' ' -f1 /proc/uptime)"
	# KM_VERBOSE: the end of a refused program's verifier log (where it stopped)
	[ -n "$verbose" ] && tail -n 60 /tmp/verifier.log 2>/dev/null | sed "s/^/KM vlog $name /"
	sed "s/^/KM log $name /" /tmp/$name.log
	sed "s/^/KM folded $name /" /tmp/$name.folded 2>/dev/null
}
run_case chain /usr/bin/wl_chain_nofp "${secs:-2}"
# the tail-call walker (what kernels without bpf_loop use), forced on this kernel's verifier;
# a kernel that has no other walker already ran it
grep -q "unwinding with tail calls" /tmp/chain.log ||
	STACKSCOPE_TAIL_CALLS=1 run_case chain_tc /usr/bin/wl_chain_nofp "${secs:-2}"
# Per-task events (src/sampler/task_events.h), x86_64 rows only (the arm64 row is TCG: two
# more verifications of every program there): the known chain in a child the command's shell
# forks after the attach, sampled only through the copy of record's event it inherits, program
# included (STACKSCOPE_PER_TASK=1: a command is recorded per CPU by default); and -p of a process already running (before 5.13 the event is opened again without
# inherit_thread, which the kernel refuses); 60 s, the workloads' most: 5.10's verifier took
# 36 s of a loaded guest with the workload beside it
if [ "$(uname -m)" = x86_64 ]; then
	STACKSCOPE_PER_TASK=1 run_case forked /bin/sh -c "/usr/bin/wl_chain_nofp ${secs:-2}; :"
	/usr/bin/wl_chain_nofp 60 >/dev/null 2>&1 &
	bg=$!
	sleep 0.5
	/usr/bin/stackscope record -F 199 -d "${secs:-2}" -p $bg -o /tmp/pid.folded >/tmp/pid.log 2>&1
	echo "KM status pid $?"
	kill $bg
	sed "s/^/KM log pid /" /tmp/pid.log
	sed "s/^/KM folded pid /" /tmp/pid.folded 2>/dev/null
fi
# a fixed hash seed: no wait for the entropy a fresh guest lacks
export PYTHONHASHSEED=0
run_case python /usr/bin/python3.11 -S /usr/share/km/py_chain.py "${secs:-2}"
# 150 Python frames on every stack (x86_64 rows): the tail-call walker takes a runtime's frame
# at any of its 528 steps
[ "$(uname -m)" = x86_64 ] &&
	run_case python_deep /usr/bin/python3.11 -S /usr/share/km/py_many_code.py "${secs:-2}"
# Go (arm64 row only, where the root has a Go build of wl_go): its pcsp tables, x30 in leaves
[ -x /usr/bin/wl_go ] && run_case go /usr/bin/wl_go "${secs:-2}"
# Perl, Ruby and PHP (arm64 row only, Debian 12's arm64 packages in the root): their chains
[ -x /usr/bin/perl ] && run_case perl /usr/bin/perl /usr/share/km/perl_chain.pl "${secs:-2}"
[ -x /usr/bin/ruby3.1 ] && run_case ruby /usr/bin/ruby3.1 --disable-gems /usr/share/km/rb_chain.rb "${secs:-2}"
# (its unwind tables kept in a cache of its own, which the JIT cases below start from)
phptables="--cache-dir /tmp/km-php-tables"
[ -x /usr/bin/php8.2 ] && KM_OPTS=$phptables run_case php /usr/bin/php8.2 -n /usr/share/km/php_chain.php "${secs:-2}"
# PHP 8.2's JIT (arm64 row, where the root has Debian's opcache.so): the same chain with
# opcache.jit=tracing, then =function; with the tables the php case built, so that a sample
# in gamma before php8.2's or libc's table is in (never deferred: its PHP frames need the
# heap) does not count against the JIT's walk
if [ -x /usr/bin/php8.2 ] && [ -f /usr/lib/php/20220829/opcache.so ]; then
	for mode in tracing function; do
		case=php_jit
		[ $mode = function ] && case=php_jit_fn
		KM_OPTS=$phptables run_case $case /usr/bin/php8.2 -n -d zend_extension=opcache.so \
			-d opcache.enable_cli=1 -d opcache.jit=$mode -d opcache.jit_buffer_size=32M \
			/usr/share/km/php_chain.php "${secs:-2}"
	done
fi
# Node.js (arm64 row only, Debian 12's node 18): the JS known chain, interpreted (V8's
# bytecode handlers in libnode's embedded builtins), as test_node.sh's int case
[ -x /usr/bin/node ] && run_case node /usr/bin/node --no-opt --no-sparkplug /usr/share/km/node_chain.js "${secs:-2}"
# ... and with its default tiers (baseline, TurboFan's OSR of gamma's loop) for 4 s, when the
# host asked for it (km_node_jit: `make kernel-matrix`, not CI's test)
grep -q km_node_jit /proc/cmdline && [ -x /usr/bin/node ] &&
	run_case node-jit /usr/bin/node /usr/share/km/node_chain.js 4
# HotSpot (arm64 row only, Debian 12's arm64 OpenJDK 17 in the root), one JVM after the other:
# JvmChain's main thread, named jmain, runs main -> alpha -> beta -> gamma -> mix -> heavy,
# interpreted, then C1, then C2; with km_java_tiny (KM_JAVA_TINY=1: `make kernel-matrix`, not
# CI: 16-27 s more) JvmTiny's, tiny17, calls a method kept out of line whose samples land in
# its prologue and epilogue a third of the time. Each also to a pprof file, on the console in
# base64 (its frames' lines and the threads' names).
jvm=/usr/lib/jvm/java-17-openjdk-arm64/bin/java
if [ -x $jvm ] && [ -f /usr/share/km/JvmChain.class ]; then
	jopts="-XX:+UseSerialGC -Xmx64m -cp /usr/share/km"
	KM_OPTS="-o /tmp/java.pb.gz" run_case java $jvm $jopts JvmChain jmain "${secs:-2}"
	base64 /tmp/java.pb.gz 2>/dev/null | sed "s/^/KM pprof java /"
	if grep -q km_java_tiny /proc/cmdline; then
		KM_OPTS="-o /tmp/java_tiny.pb.gz" run_case java_tiny $jvm $jopts -XX:CompileCommand=quiet \
			-XX:CompileCommand=dontinline,JvmTiny::tiny JvmTiny tiny17 "${secs:-2}"
		base64 /tmp/java_tiny.pb.gz 2>/dev/null | sed "s/^/KM pprof java_tiny /"
	fi
fi
# LuaJIT (arm64 row only, Debian 12's arm64 luajit 2.1 in the root): the Lua known chain with
# the JIT on (gamma's loop a trace), as test_luajit.sh's jit case; also to a pprof file, on the
# console in base64 (the Lua frames' lines, which the folded stacks leave out)
if [ -x /usr/bin/luajit ]; then
	KM_OPTS="-o /tmp/luajit.pb.gz" run_case luajit /usr/bin/luajit /usr/share/km/lua_chain.lua "${secs:-2}"
	base64 /tmp/luajit.pb.gz 2>/dev/null | sed "s/^/KM pprof luajit /"
fi
# BEAM (arm64 row only, Debian 12's arm64 OTP 25 in the root, erl_chain.beam compiled on the
# host): erl_chain's known chain on the JIT, as test_beam.sh runs it (HOME: erlexec wants one),
# for 2 s of CPU from erl_chain:main's start (under TCG the JIT's loading of OTP's own modules
# took 6 s of CPU once, and gamma then none); also to a pprof file, on the console in base64:
# the column needs its frames' lines, which folded files leave out
if [ -x /usr/lib/erlang/bin/erl ] && [ -f /usr/share/km/erl_chain.beam ]; then
	HOME=/tmp KM_OPTS="-o /tmp/beam.pb.gz" run_case beam /usr/lib/erlang/bin/erl -noshell \
		-pa /usr/share/km -run erl_chain main "${secs:-2}" from_main
	base64 /tmp/beam.pb.gz 2>/dev/null | sed "s/^/KM pprof beam /"
fi
# off-CPU: its sched_switch program on the same walk (refused in one line without bpf_loop)
KM_OPTS=--off-cpu run_case offcpu /bin/sh -c 'for i in 1 2 3 4 5 6 7 8; do sleep 0.1; done'
echo "KM-END"
poweroff -f
