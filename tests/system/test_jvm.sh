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
#  - completeness: 85% of the thread's samples have that whole chain (the rest: main's own
#    start, e.g. resolving Double.parseDouble in the interpreter, ~5% with -Xint);
# and over all cases: interpreted, compiled and stub frames were emitted (eBPF counters).
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
SECS=5
J17=/usr/lib/jvm/java-17-openjdk-amd64
J25=/usr/lib/jvm/temurin-25-jdk-amd64
SRC=$SS_ROOT/tests/data/JvmChain.java
STACKS="/usr/bin/python3 $SS_ROOT/tests/system/pprof_stacks.py --thread"

# line MARK: the line numbers of the workload's lines that end in "// MARK", joined by "|"
line()
{
	grep -n "// $1\$" "$SRC" | cut -d: -f1 | paste -sd'|'
}

L_ALPHA=$(line CALL_ALPHA)
L_BETA=$(line CALL_BETA)
L_GAMMA=$(line CALL_GAMMA)
L_LOOP="$(line LOOP)|$(line HOT)"

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
if ! "$JAVAC" -d "$TMP" "$SRC" 2>"$TMP/javac.err"; then
	fail "javac: $(head -c 300 "$TMP/javac.err")"
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
		script+="$home/bin/java $flags -cp $TMP JvmChain j$v$mode $SECS & "
	done
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

# The chain, root side first: native JVM frames down to the call stub, then the Java frames.
F=JvmChain\\.java
CHAIN="__clone3;start_thread;.*JavaCalls::call_helper[^;]*;\\[jvm stub\\] [^;]*;"
CHAIN+="JvmChain\\.main@$F:($L_ALPHA);JvmChain\\.alpha@$F:($L_BETA);"
CHAIN+="JvmChain\\.beta@$F:($L_GAMMA);JvmChain\\.gamma@$F:($L_LOOP)(;|$)"

for c in "${cases[@]}"; do
	total=$(samples "$TMP/jvm.stacks" "$c")
	chain=$(samples "$TMP/jvm.stacks" "$c" "$CHAIN")
	# Thresholds: ~2.5 s of CPU per case at 499 Hz on an idle box (six JVMs on two cores);
	# a loaded box may give a case a tenth of that.
	check_ge "$c: samples of its main thread" "$total" 50 || show_jvm "$c"
	check_pct "$c: main -> alpha -> beta -> gamma at their lines, under the call stub" \
		"$chain" "$total" 85 || show_jvm "$c"
done

# The frame kinds the walk emitted, over all cases (record's summary line "jvm ...").
summary=$(grep '^jvm ' "$TMP/jvm.err")
for kind in "interpreted frames" "compiled frames" "stub frames"; do
	n=$(sed -n "s/.*$kind \\([0-9]*\\).*/\\1/p" <<<"$summary")
	check_ge "eBPF: $kind" "${n:-0}" 100 || echo "        $summary"
done
finish
