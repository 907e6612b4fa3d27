#!/bin/bash
# Java frames of HotSpot JVMs interleaved with native frames (bpf/interp/hotspot_walk.h,
# src/interp/hotspot/): Debian's OpenJDK 17 (scripts/setup.sh installs it: missing under CI is a
# failure) and Temurin 25 (not a Debian package: a visible skip when absent), default flags,
# no agent. tests/data/JvmChain.java is compiled with javac into $TMP; its lines are marked
# (// HOT, // CALL_ALPHA...) and looked up here, so the checks name exact lines.
#
# One recording runs every case at once (JVMs start slowly; all start after the recording
# began): per JDK, -Xint (interpreted frames), -XX:TieredStopAtLevel=1 (C1) and default flags
# (C2, gamma's loop compiled on stack). Each JVM's main thread takes the case's name, so the
# stacks are told apart by thread name (pprof_stacks.py --thread). Checks per case:
#  - chain: the JVM's native entry (JavaCalls::call_helper -> the call stub, named
#    "[jvm stub] ...") -> JvmChain.main -> alpha -> beta -> gamma, each at its call line and
#    gamma at a line of its loop (compiled code has lines at its pc descriptors only);
#  - completeness: 90% of the samples in gamma have that whole chain, and gamma has at least
#    half of the thread's samples (the rest: the thread's own start, e.g. resolving
#    Double.parseDouble in the interpreter);
#  - a second thread (the C2 cases): Worker.run -> alpha -> beta -> gamma;
#  - a JNI round trip per JDK (default flags; tests/data/JvmJni.java + jvm_jni.c, built with
#    gcc against the JDK's jni.h): main -> alpha -> down (native) -> Java_JvmJni_down (C) ->
#    jni_CallStaticBooleanMethod ... call stub -> up at its loop lines;
# and over all cases: interpreted, compiled and stub frames were emitted (eBPF counters).
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
SECS=4
J17=/usr/lib/jvm/java-17-openjdk-amd64
J25=/usr/lib/jvm/temurin-25-jdk-amd64
SRC=$SS_ROOT/tests/data/JvmChain.java
JNI_SRC=$SS_ROOT/tests/data/JvmJni.java
STACKS="/usr/bin/python3 $SS_ROOT/tests/system/pprof_stacks.py --thread"

# line MARK [FILE]: the line numbers of the lines of FILE (the chain workload) that end in
# "// MARK", joined by "|"
line()
{
	grep -n "// $1\$" "${2:-$SRC}" | cut -d: -f1 | paste -sd'|'
}

L_ALPHA=$(line CALL_ALPHA)
L_BETA=$(line CALL_BETA)
L_GAMMA=$(line CALL_GAMMA)
L_LOOP="$(line LOOP)|$(line HOT)"
J_ALPHA=$(line CALL_ALPHA "$JNI_SRC")
J_DOWN=$(line CALL_DOWN "$JNI_SRC")
J_HOT=$(line HOT "$JNI_SRC")

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
if ! "$JAVAC" -d "$TMP" "$SRC" "$JNI_SRC" 2>"$TMP/javac.err"; then
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
		script+="$home/bin/java $flags -cp $TMP JvmChain j$v$mode $SECS $more & "
	done
	script+="$home/bin/java -cp $TMP JvmJni $JNI_LIB j${v}jni $SECS 2>/dev/null & "
done
script+="wait"

record "$TMP/jvm.err" -F $HZ -o "$TMP/jvm.pb.gz" -- /bin/bash -c "$script"
check_eq "record: exit status" $? 0
$STACKS "$TMP/jvm.pb.gz" >"$TMP/jvm.stacks"

# show_jvm NAME: the top stacks of one case, for the log of a failing test
show_jvm()
{
	grep "^$1;" "$TMP/jvm.stacks" | sort -t' ' -k2 -rn | head -4 | cut -c1-700 |
		sed 's/^/        /'
}

# check_chain CASE LEAF_RE CHAIN_RE WHAT: the thread CASE has samples; at least half of them run
# its hot code (a stack with LEAF_RE: JVM start-up, class loading and, before the code cache is
# known, [unknown] frames take the rest on a loaded box); and 90% of those have the whole
# CHAIN_RE.
check_chain()
{
	local c=$1 total hot chain
	total=$(samples "$TMP/jvm.stacks" "$c")
	hot=$(samples "$TMP/jvm.stacks" "$c" "$2")
	chain=$(samples "$TMP/jvm.stacks" "$c" "$3")
	check_ge "$c: samples of the thread" "$total" 30 || show_jvm "$c"
	check_pct "$c: samples in its hot code" "$hot" "$total" 50 || show_jvm "$c"
	check_pct "$c: $4" "$chain" "$hot" 90 || show_jvm "$c"
}

# The chain, root side first: native JVM frames down to the call stub, then the Java frames.
F=JvmChain\\.java
CHAIN="__clone3;start_thread;.*JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;"
CHAIN+="JvmChain\\.main@$F:($L_ALPHA);JvmChain\\.alpha@$F:($L_BETA);"
CHAIN+="JvmChain\\.beta@$F:($L_GAMMA);JvmChain\\.gamma@$F:($L_LOOP)(;|$)"

# Samples: ~1 s of CPU per thread at 499 Hz on an idle box (ten busy threads on two cores);
# a load average of 15 gave 41-88.
for c in "${cases[@]}"; do
	check_chain "$c" ";JvmChain\\.gamma@" "$CHAIN" \
		"main -> alpha -> beta -> gamma at their lines, under the call stub"
done

J=JvmJni\\.java
JNI_CHAIN="__clone3;start_thread;.*JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;"
JNI_CHAIN+="JvmJni\\.main@$J:($J_ALPHA);JvmJni\\.alpha@$J:($J_DOWN);JvmJni\\.down@$J;"
JNI_CHAIN+="Java_JvmJni_down;jni_CallStaticBooleanMethod;.*JavaCalls::call_helper[^;]*;"
JNI_CHAIN+="\\[jvm stub\\] [^;]*;JvmJni\\.up@$J:($J_HOT)(;|$)"
for v in "${jdks[@]}"; do
	check_chain "j${v}jni" ";JvmJni\\.up@" "$JNI_CHAIN" \
		"main -> alpha -> down (native) -> C -> JNI -> call stub -> up, at their lines"
done

# The C2 cases' second thread: Thread's native start, Worker.run, then the same chain.
L_WORKER=$(line CALL_ALPHA_WORKER)
W_CHAIN="__clone3;start_thread;.*JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;"
W_CHAIN+="JvmChain\\\$Worker\\.run@$F:($L_WORKER);JvmChain\\.alpha@$F:($L_BETA);"
W_CHAIN+="JvmChain\\.beta@$F:($L_GAMMA);JvmChain\\.gamma@$F:($L_LOOP)(;|$)"
for v in "${jdks[@]}"; do
	check_chain "j${v}c2w" ";JvmChain\\.gamma@" "$W_CHAIN" \
		"Worker.run -> alpha -> beta -> gamma at their lines, in a second thread"
done

# The frame kinds the walk emitted, over all cases (record's summary line "jvm ...").
summary=$(grep '^jvm ' "$TMP/jvm.err")
for kind in "interpreted frames" "compiled frames" "stub frames"; do
	n=$(sed -n "s/.*$kind \\([0-9]*\\).*/\\1/p" <<<"$summary")
	check_ge "eBPF: $kind" "${n:-0}" 100 || echo "        $summary"
done
finish
