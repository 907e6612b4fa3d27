#!/bin/bash
# Java frames of HotSpot JVMs interleaved with native frames (bpf/interp/hotspot/walk.h,
# src/interp/hotspot/): Debian's OpenJDK 17 (scripts/setup.sh installs it: missing under CI is a
# failure) and Temurin 25 (not a Debian package: a visible skip when absent), default flags,
# no agent; and Debian 11's OpenJDK 11 in the runtime matrix's bullseye root, as a container
# runs it (a skip when that root is not built), in a recording of its own (jdk11_checks). tests/data/JvmChain.java is compiled with javac into $TMP; its lines are marked
# (// HOT, // CALL_ALPHA...) and looked up here, so the checks name exact lines.
#
# One recording runs every case at once (JVMs start slowly; all start after the recording
# began; they live until it has read every sample, so their memory is there to name frames): per JDK, -Xint (interpreted frames), -XX:TieredStopAtLevel=1 (C1) and default flags
# (C2, gamma's loop compiled on stack). Each JVM's main thread takes the case's name, so the
# stacks are told apart by thread name (pprof_stacks.py --thread). Checks per case:
#  - chain: the JVM's native entry (JavaCalls::call_helper -> the call stub, named
#    "[jvm stub] ...") -> JvmChain.main -> alpha -> beta -> gamma -> mix -> heavy, each at its
#    call line and heavy at a line of its own (or none: compiled code has lines at its pc
#    descriptors only);
#  - completeness: 90% of the samples in heavy have that whole chain, and heavy has at least
#    half of the thread's samples (the rest: the thread's own start, e.g. resolving
#    Double.parseDouble in the interpreter);
#  - inlined methods (C1 and C2 cases): mix, inlined into gamma's compiled loop, comes out as an
#    inlined frame at its call line in a fifth of heavy's samples at least (the rest: before
#    gamma is compiled), and no other inlined frame appears on that path;
#  - a second thread (the C2 cases): Worker.run -> alpha -> beta -> gamma;
#  - code-cache churn (tests/data/JvmChurn.java: classes defined, compiled, unloaded in a
#    loop; the last JDK): no sample in the churned method carries a wrong name or line;
#  - a tiny method kept out of line in a hot loop (tests/data/JvmTiny.java, every JDK, its own
#    recording): main -> loop -> tiny in nearly all of tiny's samples, a third of which land in
#    its prologue or epilogue (the caller found from the code at pc: 36 % of them ended at
#    "[unwind: bad pc]" on 17 and 11 % on 25 when the frame size alone placed the caller);
#  - a JNI round trip (the first JDK) (default flags; tests/data/JvmJni.java + jvm_jni.c, built with
#    gcc against the JDK's jni.h): main -> alpha -> down (native) -> Java_JvmJni_down (C) ->
#    jni_CallStaticBooleanMethod ... call stub -> up at its loop lines;
# and over all cases: interpreted, compiled and stub frames were emitted (eBPF counters).
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
SECS=5      # the recording; the JVMs run until it ends (RUN_SECS bounds them if it fails)
RUN_SECS=40
J17=/usr/lib/jvm/java-17-openjdk-amd64
J25=/usr/lib/jvm/temurin-25-jdk-amd64
SRC=$SS_ROOT/tests/data/JvmChain.java
JNI_SRC=$SS_ROOT/tests/data/JvmJni.java
CHURN_SRC=$SS_ROOT/tests/data/JvmChurn.java
TINY_SRC=$SS_ROOT/tests/data/JvmTiny.java
STACKS+=" --thread"

marks "$SRC" L_ALPHA=CALL_ALPHA L_BETA=CALL_BETA L_GAMMA=CALL_GAMMA L_HOT=HOT \
	L_HEAVY_CALL=CALL_HEAVY L_HEAVY=HEAVY
marks "$JNI_SRC" J_ALPHA=CALL_ALPHA J_DOWN=CALL_DOWN
# up's loop, or the lines after it: compiled code has lines only at its pc descriptors, and C2
# keeps none inside a counted loop (the nearest one after the sampled pc names the line)
J_HOT="$(line "$JNI_SRC" HOT)|$(line "$JNI_SRC" UP_END)"

jdks=()
if [[ -x $J17/bin/java && -x $J17/bin/javac ]]; then
	jdks+=(17)
else
	skip_setup "OpenJDK 17 ($J17) not installed"
fi
if [[ -x $J25/bin/java ]]; then
	jdks+=(25)
else
	skip "Temurin 25 ($J25) not installed"
fi
if ((${#jdks[@]} == 0)); then
	finish
fi
JAVAC=$J17/bin/javac
[[ -x $JAVAC ]] || JAVAC=$J25/bin/javac
if ! "$JAVAC" -d "$TMP" "$SRC" "$JNI_SRC" "$CHURN_SRC" "$TINY_SRC" 2>"$TMP/javac.err"; then
	fail "javac: $(head -c 300 "$TMP/javac.err")"
	finish
fi
JNI_LIB=$TMP/libjvmjni.so
INC=${JAVAC%/bin/javac}/include
if ! gcc -shared -fPIC -O2 -I"$INC" -I"$INC/linux" -o "$JNI_LIB" "$SS_ROOT/tests/data/jvm_jni.c" \
	2>"$TMP/gcc.err"; then
	fail "gcc (JNI library): $(head -c 300 "$TMP/gcc.err")"
	finish
fi

# The cases: NAME (the main thread's name) and the JVM's flags.
cases=()
script=""
for v in "${jdks[@]}"; do
	home=$J17
	[[ $v == 25 ]] && home=$J25
	for mode in int c1 c2; do
		case $mode in
		int) flags="-Xint" ;;
		c1) flags="-XX:TieredStopAtLevel=1" ;;
		c2) flags="" ;;
		esac
		cases+=("j$v$mode")
		# The C2 case runs a second thread (checked as its own case below).
		more=""
		[[ $mode == c2 ]] && more=thread
		script+="$home/bin/java $flags -cp $TMP JvmChain j$v$mode $RUN_SECS $more & "
	done
done
# Two busy JVMs more at most, or the JVMs of a loaded 2-core box do not get past their start
# within the seconds: the JNI round trip on the first JDK, the code-cache churn on the last.
[[ ${jdks[0]} == 25 ]] && first=$J25 || first=$J17
[[ ${jdks[-1]} == 25 ]] && last=$J25 || last=$J17
JNI_CASE=j${jdks[0]}jni
script+="$first/bin/java -cp $TMP JvmJni $JNI_LIB $JNI_CASE $RUN_SECS 2>/dev/null & "
script+="$last/bin/java -cp $TMP JvmChurn churn $RUN_SECS & "
# The JVMs outlive the recording: record -d reads every pending sample (names come from the
# JVMs' memory) before it stops the command, whose trap stops the JVMs.
script="trap 'kill \$(jobs -p) 2>/dev/null; wait; exit 0' TERM; $script wait"

record "$TMP/jvm.err" -F $HZ -d $SECS -o "$TMP/jvm.pb.gz" -- /bin/bash -c "$script"
check_eq "record: exit status" $? 0
JVM_STACKS=$TMP/jvm.stacks # the stacks check_chain and show_jvm read
$STACKS "$TMP/jvm.pb.gz" >"$JVM_STACKS"

# show_jvm NAME: the top stacks of one case, for the log of a failing test
show_jvm()
{
	grep "^$1;" "$JVM_STACKS" | sort -t' ' -k2 -rn | head -4 | cut -c1-700 |
		sed 's/^/        /'
}

# check_chain CASE LEAF_RE CHAIN_RE WHAT: the thread CASE has samples; at least half of them run
# its hot code (a stack with LEAF_RE: JVM start-up, class loading and, before the code cache is
# known, [unknown] frames take the rest on a loaded box); and 90% of those have the whole
# CHAIN_RE.
check_chain()
{
	local c=$1 total hot chain
	total=$(samples "$JVM_STACKS" "$c")
	hot=$(samples "$JVM_STACKS" "$c" "$2")
	chain=$(samples "$JVM_STACKS" "$c" "$3")
	check_ge "$c: samples of the thread" "$total" 20 || show_jvm "$c"
	check_pct "$c: samples in its hot code" "$hot" "$total" 50 || show_jvm "$c"
	check_pct "$c: $4" "$chain" "$hot" 90 || show_jvm "$c"
}

# The chain, root side first: native JVM frames down to the call stub, then the Java frames.
F=JvmChain\\.java
CHAIN="__clone3;start_thread;.*JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;"
CHAIN+="JvmChain\\.main@$F:($L_ALPHA);JvmChain\\.alpha@$F:($L_BETA);"
CHAIN+="JvmChain\\.beta@$F:($L_GAMMA);"
TAIL="JvmChain\\.gamma@$F:($L_HOT);JvmChain\\.mix@$F:($L_HEAVY_CALL);"
TAIL+="JvmChain\\.heavy@$F(:($L_HEAVY))?(;|$)"
CHAIN+=$TAIL

# Samples: ~1 s of CPU per thread at 499 Hz on an idle box (ten busy threads on two cores);
# a load average of 15 gave 28-88.
for c in "${cases[@]}"; do
	check_chain "$c" ";JvmChain\\.heavy@" "$CHAIN" \
		"main -> alpha -> beta -> gamma -> mix -> heavy at their lines, under the call stub"
done

J=JvmJni\\.java
JNI_CHAIN="__clone3;start_thread;.*JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;"
JNI_CHAIN+="JvmJni\\.main@$J:($J_ALPHA);JvmJni\\.alpha@$J:($J_DOWN);JvmJni\\.down@$J;"
JNI_CHAIN+="Java_JvmJni_down;jni_CallStaticBooleanMethod;.*JavaCalls::call_helper[^;]*;"
JNI_CHAIN+="\\[jvm stub\\] [^;]*;JvmJni\\.up@$J(:($J_HOT))?(;|$)"
check_chain "$JNI_CASE" ";JvmJni\\.up@" "$JNI_CHAIN" \
	"main -> alpha -> down (native) -> C -> JNI -> call stub -> up, at their lines"

# The C2 cases' second thread: Thread's native start, Worker.run, then the same chain.
L_WORKER=$(line "$SRC" CALL_ALPHA_WORKER)
W_CHAIN="__clone3;start_thread;.*JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;"
W_CHAIN+="JvmChain\\\$Worker\\.run@$F:($L_WORKER);JvmChain\\.alpha@$F:($L_BETA);"
W_CHAIN+="JvmChain\\.beta@$F:($L_GAMMA);$TAIL"
for v in "${jdks[@]}"; do
	check_chain "j${v}c2w" ";JvmChain\\.heavy@" "$W_CHAIN" \
		"Worker.run -> alpha -> beta -> gamma -> mix -> heavy at their lines, in a second thread"
done

# Inlined methods: the stacks again, inlined frames marked "+inlined". In the compiled cases
# mix runs inlined into gamma once gamma's loop is compiled (C1 too: 15 bytes of bytecode,
# under MaxInlineSize); heavy is too big for either compiler.
$STACKS --mark-inlined "$TMP/jvm.pb.gz" >"$TMP/jvm.inlined"
INL="JvmChain\\.gamma@$F:($L_HOT);JvmChain\\.mix@$F:($L_HEAVY_CALL)\\+inlined;JvmChain\\.heavy@"
for v in "${jdks[@]}"; do
	for c in "j${v}c1" "j${v}c2" "j${v}c2w"; do
		hot=$(samples "$TMP/jvm.inlined" "$c" ";JvmChain\\.heavy@")
		inl=$(samples "$TMP/jvm.inlined" "$c" "$INL")
		any=$(samples "$TMP/jvm.inlined" "$c" "\\+inlined;.*JvmChain\\.heavy@")
		check_pct "$c: mix shown inlined into gamma at its call line" "$inl" "$hot" 20 ||
			grep "^$c;" "$TMP/jvm.inlined" | grep 'heavy@' | tail -3 | cut -c1-600 |
			sed 's/^/        /'
		# 98%: the margin of the churn check below
		if ((any > 0)); then
			check_pct "$c: the inlined frames on heavy's path are mix's" "$inl" "$any" 98 ||
				grep "^$c;" "$TMP/jvm.inlined" | grep '+inlined' | tail -3 |
				cut -c1-600 | sed 's/^/        /'
		fi
	done
done

# Churn: a sample in Worker.spin (whose class, code and compiled code are freed and reused
# round after round) is named spin at one of its loop lines, called by the reflection
# machinery (17: jdk.internal.reflect, 25: a java.lang.invoke hidden class) or the call stub,
# and calls no other Java method; anything else would be a name
# read from reused memory (a compiled frame without a pc descriptor has no line: not wrong; a
# caller whose class was unloaded under us may be a "[jvm: ...]" marker: not wrong either; a
# garbled hidden-class name was, before names were checked for valid text).
# Frames the cookie rejects show as "[jvm: stale code]" (counted).
L_SPIN=$(line "$CHURN_SRC" SPIN)
total=$(samples "$TMP/jvm.stacks" churn "Worker\\.spin@")
good=$(samples "$TMP/jvm.stacks" churn \
	"(\\[jvm stub\\] [^;]*|\\[jvm: [^;]*\\]|jdk\\.internal\\.reflect\\.[^;]*|java\\.lang\\.invoke\\.[^;]*);JvmChurn\\\$Worker\\.spin@JvmChurn\\.java(:($L_SPIN))?(;[^@]*)?$")
check_ge "churn: samples in Worker.spin" "$total" 10 || show_jvm churn
# 98%, not 100%: one CI run had 1 of 202 frames outside the pattern (not yet explained; the
# last Worker.spin stacks are printed when the check fails).
check_pct "churn: Worker.spin frames under their callers, at their lines (or none), no Java callee" \
	"$good" "$total" 98 || grep 'Worker\.spin@' "$TMP/jvm.stacks" | grep '^churn' | tail -5 |
	cut -c1-600 | sed 's/^/        /'

# Tiny: its own recording, one JVM per JDK (the box is free of the cases above by now).
marks "$TINY_SRC" L_TINY=TINY L_CALL_TINY=CALL_TINY L_CALL_LOOP=CALL_LOOP
script=""
for v in "${jdks[@]}"; do
	home=$J17
	[[ $v == 25 ]] && home=$J25
	script+="$home/bin/java -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,JvmTiny::tiny "
	script+="-cp $TMP JvmTiny tiny$v $RUN_SECS & "
done
script="trap 'kill \$(jobs -p) 2>/dev/null; wait; exit 0' TERM; $script wait"
record "$TMP/tiny.err" -F $HZ -d 3 -o "$TMP/tiny.pb.gz" -- /bin/bash -c "$script"
check_eq "tiny: record exit status" $? 0
$STACKS "$TMP/tiny.pb.gz" >"$TMP/tiny.stacks"
T=JvmTiny\\.java
TINY_CHAIN="JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;JvmTiny\\.main@$T:($L_CALL_LOOP);"
TINY_CHAIN+="JvmTiny\\.loop@$T(:($L_CALL_TINY))?;JvmTiny\\.tiny@$T(:($L_TINY))?(;[^@]*)?$"
for v in "${jdks[@]}"; do
	total=$(samples "$TMP/tiny.stacks" "tiny$v" ";JvmTiny\\.tiny@")
	chain=$(samples "$TMP/tiny.stacks" "tiny$v" "$TINY_CHAIN")
	check_ge "tiny$v: samples in tiny" "$total" 50 || grep "^tiny$v;" "$TMP/tiny.stacks" |
		sort -t' ' -k2 -rn | head -3 | cut -c1-400 | sed 's/^/        /'
	check_pct "tiny$v: main -> loop -> tiny, under the call stub" "$chain" "$total" 97 ||
		grep "^tiny$v;" "$TMP/tiny.stacks" | grep 'JvmTiny\.tiny@' | grep -v 'JvmTiny\.loop@' |
		sort -t' ' -k2 -rn | head -3 | cut -c1-400 | sed 's/^/        /'
done
n=$(grep '^jvm ' "$TMP/tiny.err" | sed -n 's/.*frames in their epilogue \([0-9]*\).*/\1/p')
check_ge "tiny: compiled frames unwound from their epilogue (eBPF)" "${n:-0}" 10

# JDK 11: Debian 11's OpenJDK in the runtime matrix's bullseye root (scripts/runtime_root.sh; a
# root not built is a skip), run as a container runs it (scripts/in_container.sh), in a recording
# of its own: -Xint, C1 and C2 (with its second thread) of the chain, and tiny, with the checks
# above. Its JVMs end by themselves (their work, then LINGER_MS), and the recording with them.
jdk11_checks()
{
	local rm_cache=${RM_CACHE:-/var/cache/stackscope/runtime-matrix} root dir id c v hot inl any n
	local chain11 w_chain11 tiny11 tail11 l_if secs=4
	root=$rm_cache/roots/bullseye
	if [[ ! -e $root/.stackscope-root || ! -x $root/usr/lib/jvm/java-11-openjdk-amd64/bin/java ]]; then
		skip "bullseye root with OpenJDK 11 not built (scripts/runtime_root.sh bullseye): its checks"
		return
	fi
	dir=/tmp/stackscope-test-jvm.$$ # inside the root
	mkdir -p "$root$dir"
	if ! "$JAVAC" --release 11 -d "$root$dir" "$SRC" "$TINY_SRC" 2>"$TMP/javac11.err"; then
		fail "javac --release 11: $(head -c 300 "$TMP/javac11.err")"
		rm -rf "${root:?}$dir"
		return
	fi
	id=$(echo "test_jvm 11 $$" | sha256sum | cut -c1-64)
	record "$TMP/jvm11.err" -F $HZ -o "$TMP/jvm11.pb.gz" -- "$SS_ROOT/scripts/in_container.sh" \
		"$root" "$id" /bin/sh -c "cd $dir || exit 1; java -Xint -cp . JvmChain j11int $secs &
		java -XX:TieredStopAtLevel=1 -cp . JvmChain j11c1 $secs &
		java -cp . JvmChain j11c2 $secs thread &
		java -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,JvmTiny::tiny -cp . JvmTiny tiny11 $secs &
		wait"
	check_eq "jdk 11: record exit status" $? 0
	rm -rf "${root:?}$dir"
	JVM_STACKS=$TMP/jvm11.stacks # check_chain's and show_jvm's from here on
	$STACKS "$TMP/jvm11.pb.gz" >"$JVM_STACKS"
	$STACKS --mark-inlined "$TMP/jvm11.pb.gz" >"$TMP/jvm11.inlined"
	# glibc 2.31's clone() ends the stack: no __clone3 frame above start_thread. JDK 11's C2
	# keeps no pc descriptor inside heavy's loop (a loop over a long): the nearest one after
	# it, the if's that follows the loop, names half of heavy's samples (HotSpot's own answer).
	l_if=$(grep -n '// HEAVY (never true' "$SRC" | cut -d: -f1)
	tail11="JvmChain\\.gamma@$F:($L_HOT);JvmChain\\.mix@$F:($L_HEAVY_CALL);"
	tail11+="JvmChain\\.heavy@$F(:($L_HEAVY|$l_if))?(;|$)"
	chain11="start_thread;.*JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;"
	w_chain11="$chain11"
	chain11+="JvmChain\\.main@$F:($L_ALPHA);JvmChain\\.alpha@$F:($L_BETA);"
	chain11+="JvmChain\\.beta@$F:($L_GAMMA);$tail11"
	w_chain11+="JvmChain\\\$Worker\\.run@$F:($L_WORKER);JvmChain\\.alpha@$F:($L_BETA);"
	w_chain11+="JvmChain\\.beta@$F:($L_GAMMA);$tail11"
	for c in j11int j11c1 j11c2; do
		check_chain "$c" ";JvmChain\\.heavy@" "$chain11" \
			"main -> alpha -> beta -> gamma -> mix -> heavy at their lines, under the call stub"
	done
	check_chain j11c2w ";JvmChain\\.heavy@" "$w_chain11" \
		"Worker.run -> alpha -> beta -> gamma -> mix -> heavy at their lines, in a second thread"
	for c in j11c1 j11c2 j11c2w; do
		hot=$(samples "$TMP/jvm11.inlined" "$c" ";JvmChain\\.heavy@")
		inl=$(samples "$TMP/jvm11.inlined" "$c" "$INL")
		any=$(samples "$TMP/jvm11.inlined" "$c" "\\+inlined;.*JvmChain\\.heavy@")
		check_pct "$c: mix shown inlined into gamma at its call line" "$inl" "$hot" 20 ||
			grep "^$c;" "$TMP/jvm11.inlined" | grep 'heavy@' | tail -3 | cut -c1-600 |
			sed 's/^/        /'
		check_pct "$c: the inlined frames on heavy's path are mix's" "$inl" "$any" 98 ||
			grep "^$c;" "$TMP/jvm11.inlined" | grep '+inlined' | tail -3 | cut -c1-600 |
			sed 's/^/        /'
	done
	tiny11="JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;JvmTiny\\.main@$T:($L_CALL_LOOP);"
	tiny11+="JvmTiny\\.loop@$T(:($L_CALL_TINY))?;JvmTiny\\.tiny@$T(:($L_TINY))?(;[^@]*)?$"
	v=$(samples "$JVM_STACKS" tiny11 ";JvmTiny\\.tiny@")
	n=$(samples "$JVM_STACKS" tiny11 "$tiny11")
	check_ge "tiny11: samples in tiny" "$v" 50 || show_jvm tiny11
	check_pct "tiny11: main -> loop -> tiny, under the call stub" "$n" "$v" 97 ||
		grep "^tiny11;" "$JVM_STACKS" | grep 'JvmTiny\.tiny@' | grep -v 'JvmTiny\.loop@' |
		sort -t' ' -k2 -rn | head -3 | cut -c1-400 | sed 's/^/        /'
	n=$(grep '^jvm ' "$TMP/jvm11.err" | sed -n 's/.*frames in their epilogue \([0-9]*\).*/\1/p')
	check_ge "jdk 11: compiled frames unwound from their polling-page epilogue (eBPF)" "${n:-0}" 10
	check_summary "$TMP/jvm11.err" jvm 100 "interpreted frames" "compiled frames" "stub frames"
}
jdk11_checks

# The frame kinds the walk emitted, over all cases (record's summary line "jvm ...").
check_summary "$TMP/jvm.err" jvm 100 "interpreted frames" "compiled frames" "stub frames"
finish
