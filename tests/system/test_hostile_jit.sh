#!/bin/bash
# Hostile look-alikes of the JIT runtimes against the agent (issue 39): real processes of the
# host's OpenJDK, Node and Go (tests/data/jit_hostile.py writes their sources) made as costly
# for a profiler as their runtime allows, each measured beside its benign peer (the same
# chains with ordinary bodies) under one agent, in one run:
#  - HotSpot: 64 interpreted methods with ~8 KiB line tables in 400-deep chains, the calls at
#    their tables' ends (before: each frame's line walked the compressed table again);
#  - V8: 32 functions of 24,000 statements (60 KiB source-position tables, 14 MB of source,
#    500-character names) in 400-deep chains (before: each frame walked its table again);
#  - Go: 48 functions of 4,000 inlined calls each (long pc-value tables) reached at 8 call
#    sites each in 400-deep chains; and a Go-looking ELF whose .gopclntab header lies about
#    its sizes, refused with a count while the rest of the system is still profiled.
# Checks per runtime: the agent's CPU under the hostile process stays within a bound of its
# CPU under the benign peer (a ratio, with a floor for an idle peer), the agent's peak RSS
# stays bounded, its 2 s intervals keep coming, the hostile process's frames are named (or
# the counted budget marker, never dropped), and the agent exits promptly on SIGTERM.
source "$(dirname "$0")/lib.sh"
need_root

SECS=${HOSTILE_SECS:-8}
GEN=$SS_ROOT/tests/data/jit_hostile.py
# /proc/PID/stat: utime + stime, in clock ticks
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }

# phase NAME CMD...: runs CMD (for about SECS s) and prints the agent's % of a core meanwhile
phase()
{
	local name=$1 t0 t1 w0 w1
	shift
	t0=$(cpu_ticks "$APID")
	w0=$(date +%s%N)
	timeout -k 5 $((SECS + 60)) "$@" >"$TMP/$name.out" 2>&1
	t1=$(cpu_ticks "$APID")
	w1=$(date +%s%N)
	echo "$name $w0 $w1 $(awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/$APID/status")" >>"$TMP/phases"
	awk -v n="$name" '/^Vm(RSS|HWM):/ { s = s " " $1 " " int($2 / 1024) " MiB" } END { print "  after " n ":" s }' \
		"/proc/$APID/status" >&2
	echo $(((t1 - t0) * 100 * 1000000000 / $(getconf CLK_TCK) / (w1 - w0)))
}

# compare RUNTIME HOSTILE% PLAIN%: the hostile process costs the agent at most 3 times what
# its peer does, or 8 % of a core above it (an idle peer costs ~1 %)
compare()
{
	local rt=$1 h=$2 p=$3 bound
	bound=$((p * 3 > p + 8 ? p * 3 : p + 8))
	echo "  $rt: agent ${h}% of a core under the hostile process, ${p}% under its peer"
	check_le "$rt: agent CPU under the hostile process (% of a core; peer ${p}%)" "$h" "$bound"
}

# The programs first (javac and the go tool are processes the agent would profile).
RUNTIMES=${HOSTILE_RUNTIMES:-java node go}
have_java=0 have_node=0 have_go=0
for rt in $RUNTIMES; do
	case $rt in
	java)
		if [[ ! -x /usr/bin/javac || ! -x /usr/bin/java ]]; then
			skip_setup "javac/java (OpenJDK 17) not installed"
			continue
		fi
		have_java=1
		for m in plain hostile; do
			mkdir -p "$TMP/java-$m"
			if ! python3 "$GEN" java 64 400 "$m" "$TMP/java-$m" ||
				! javac -d "$TMP/java-$m" "$TMP/java-$m"/*.java 2>"$TMP/javac.err"; then
				fail "javac ($m): $(head -c 300 "$TMP/javac.err")"
				have_java=0
			fi
		done
		;;
	node)
		if [[ ! -x /usr/bin/node ]]; then
			skip_setup "node not installed"
			continue
		fi
		have_node=1
		for m in plain hostile; do
			mkdir -p "$TMP/node-$m"
			python3 "$GEN" node 32 400 "$m" "$TMP/node-$m" || have_node=0
		done
		;;
	go)
		GO=$(command -v go || echo /usr/local/go/bin/go)
		if [[ ! -x $GO ]]; then
			skip_setup "go not installed"
			continue
		fi
		have_go=1
		for m in plain hostile; do
			mkdir -p "$TMP/go-$m"
			python3 "$GEN" go 64 400 "$m" "$TMP/go-$m" &&
				printf 'module hostile\n\ngo 1.21\n' >"$TMP/go-$m/go.mod" &&
				(cd "$TMP/go-$m" && GOFLAGS=-mod=mod GOCACHE=$GO_BUILD_CACHE "$GO" build \
					-o hostile_go . 2>"$TMP/go-$m.err") ||
				{
					fail "go build ($m): $(head -c 300 "$TMP/go-$m.err")"
					have_go=0
				}
		done
		;;
	esac
done

start_probe_agent "$TMP/h.db" "$TMP/agent.err" || finish
sleep 2 # past the agent's start-up work

if ((have_java)); then
	p=$(phase java-plain java -Xss64m -cp "$TMP/java-plain" HostileJit "$SECS")
	h=$(phase java-hostile java -Xss64m -cp "$TMP/java-hostile" HostileJit "$SECS")
	compare HotSpot "$h" "$p"
	grep -q chains "$TMP/java-hostile.out" || fail "the hostile JVM ran: $(head -c 300 "$TMP/java-hostile.out")"
fi
if ((have_node)); then
	p=$(phase node-plain node --stack-size=65500 "$TMP/node-plain/hostile_jit.js" "$SECS")
	h=$(phase node-hostile node --stack-size=65500 "$TMP/node-hostile/hostile_jit.js" "$SECS")
	compare V8 "$h" "$p"
	grep -q chains "$TMP/node-hostile.out" || fail "the hostile node ran: $(head -c 300 "$TMP/node-hostile.out")"
fi
if ((have_go)); then
	p=$(phase go-plain "$TMP/go-plain/hostile_go" "$SECS")
	h=$(phase go-hostile "$TMP/go-hostile/hostile_go" "$SECS")
	compare Go "$h" "$p"
	grep -q chains "$TMP/go-hostile.out" || fail "the hostile Go program ran: $(head -c 300 "$TMP/go-hostile.out")"
fi

hwm=$(awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/$APID/status")
echo "  agent peak RSS ${hwm} MiB"
# Intervals keep coming under each hostile process: its SECS s end most of the 2 s intervals
# (an agent stuck in one process's frames ends its interval late, or never). The peers'
# phases come first: they pay for the runtimes' first attach (node's tables: seconds).
"$SS" store intervals --store "$TMP/h.db" >"$TMP/intervals" 2>/dev/null
# Memory: what the agent's peak grew by while the hostile process ran (the whole system is
# profiled, the runtimes' native tables included: the peak's absolute figure is reported). A
# script's source is read whole to find its lines (up to 16 MiB, once): a hostile Node's
# peak grew by 45 MiB in one run, its RSS by 6 MiB.
prev=0
while read -r name w0 w1 hwm; do
	if [[ $name != *-hostile ]]; then
		prev=$hwm
		continue
	fi
	echo "  $name: the agent's peak RSS ${prev} -> ${hwm} MiB"
	check_le "$name: growth of the agent's peak RSS (MiB)" $((hwm - prev)) 64
	read -r n longest < <(awk -v a="$w0" -v b="$w1" '$3 >= a && $3 <= b { n++; d = ($3 - $2) / 1e9; if (d > m) m = d }
		END { printf "%d %d\n", n, m }' "$TMP/intervals")
	echo "  $name: $n intervals ended, the longest ${longest} s"
	check_ge "$name: intervals ended while it ran" "$n" $((SECS / 2 - 2))
done <"$TMP/phases"
s=$SECONDS
kill -TERM "$APID"
for ((i = 0; i < 150; i++)); do kill -0 "$APID" 2>/dev/null || break; sleep 0.1; done
wait "$APID"
check_eq "agent exit status after SIGTERM" $? 0
check_le "agent exits within 10 s of SIGTERM (s)" $((SECONDS - s)) 10
finish
