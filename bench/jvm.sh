#!/bin/bash
# Java (HotSpot) benchmark (issue 11), every tool on the same workload in the same run, per JVM
# (Debian's OpenJDK 17, Temurin 25 when installed):
#  1. completeness of a 31-frame Java stack (bench/JvmDeep30.java: main -> down x30 -> a hot
#     loop, called again and again, so C1/C2 compile it and C2 inlines down into itself): the
#     share of the JVM main thread's samples whose Java frames are exactly main -> down x30
#     ('chain'), and with every frame at its line ('lines': main at CALL, down at RECURSE, the
#     leaf in its HOT loop). Tools, each attached to a JVM already running (1.5 s of warm-up):
#       stackscope  default flags, no agent, no restart (`record -p PID`);
#       perf+map    `perf record -g -p PID`, names from the perf map the JVM writes at exit
#                   (/tmp/perf-PID.map) when started with -XX:+UnlockDiagnosticVMOptions
#                   -XX:+DumpPerfMapAtExit (a restart; `jcmd PID Compiler.perfmap` writes the
#                   same without one, but jcmd could not attach to these JVMs on this box);
#       perf+map+fp the same plus -XX:+PreserveFramePointer, the usual recipe.
#     perf has no lines for Java code (a perf map names code ranges only).
#  2. stackscope's BPF time per recorded sample (its summary's in-program clock) for that JVM
#     against the native fixture wl_chain_nofp (a 7-frame C chain without frame pointers) in
#     the same run.
#  3. each tool's own CPU time (user+sys of the recorder over the recording; perf's `perf
#     script` afterwards is not counted).
# Each measurement is taken ROUNDS times in alternation; the tables give medians.
# Usage: sudo bench/jvm.sh [ROUNDS] [DURATION_S]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
DUR=${2:-5}
HZ=499
STACKS+=" --thread"
WL=$PWD/bench/JvmDeep30.java
bench_start jvmbench 'kill $(jobs -p) 2>/dev/null'
need_program perf "scripts/setup.sh"
jdks=()
for home in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64; do
	[[ -x $home/bin/java && -x $home/bin/jcmd ]] && jdks+=("$home")
done
((${#jdks[@]})) || { echo "bench: no JDK (scripts/setup.sh installs OpenJDK 17)" >&2; exit 1; }
javac=$(ls "${jdks[0]}"/bin/javac 2>/dev/null) || { echo "bench: no javac" >&2; exit 1; }
"$javac" -d "$out" "$WL" || exit 1
need_fixture native wl_chain_nofp

L_CALL=$(line "$WL" CALL)
L_REC=$(line "$WL" RECURSE)
L_HOT=$(line "$WL" HOT)


# Completeness. Input on stdin: pprof_stacks.py --thread output ("ss") or `perf script -F
# comm,ip,sym` output ("perf"). Only the samples of threads named "java" (the JVM's main
# thread; its helper threads have names of their own). Prints "total chain lines depth", depth
# the mean number of JvmDeep30 frames per sample (31 when complete).
cat >"$out/complete.py" <<'EOF'
import re, sys
fmt = sys.argv[1]
l_call, l_rec, l_hot = (set(int(x) for x in a.split(",")) for a in sys.argv[2:5])
DEPTH = 30
total = chain = lines = depth = 0

def count(frames, cnt):  # frames root first: (name, line or None)
    global total, chain, lines, depth
    total += cnt
    java = [f for f in frames if f[0].startswith("JvmDeep30.")]
    depth += cnt * len(java)
    if [f[0] for f in java] != ["JvmDeep30.main"] + ["JvmDeep30.down"] * DEPTH:
        return
    chain += cnt
    if java[0][1] in l_call and all(f[1] in l_rec for f in java[1:-1]) and java[-1][1] in l_hot:
        lines += cnt

if fmt == "ss":
    for raw in sys.stdin:
        stack, _, cnt = raw.rstrip("\n").rpartition(" ")
        parts = stack.split(";")
        if parts[0] != "java":
            continue
        frames = []
        for f in parts[1:]:
            m = re.match(r"^(JvmDeep30\.\w+)@JvmDeep30\.java(?::(\d+))?$", f)
            frames.append((m.group(1), int(m.group(2) or 0)) if m else (f, None))
        count(frames, int(cnt))
else:  # perf script: a header line per sample, its frames (leaf first), a blank line
    comm, frames = None, []
    for raw in list(sys.stdin) + [""]:
        if not raw.strip():
            if comm == "java":
                count(list(reversed(frames)), 1)
            comm, frames = None, []
        elif not raw[0].isspace():
            comm = raw.split()[0]
        else:
            sym = raw.split(None, 1)[1] if len(raw.split(None, 1)) > 1 else ""
            m = re.search(r"(JvmDeep30\.\w+)\(", sym)
            frames.append((m.group(1), None) if m else (sym.strip(), None))
print(total, chain, lines, "%.1f" % (depth / total if total else 0))
EOF
complete() { python3 "$out/complete.py" "$1" "$L_CALL" "$L_REC" "$L_HOT"; }
cpu_of() { tail -1 "$1" | awk '{ printf "%.3f", $1 + $2 }'; }
ss_field() { # LOG -> "ns_per_sample samples"
	awk '/^bpf time / { ns = $3 } /^samples / { s = $2 } END { print ns + 0, s + 0 }' "$1"
}

# ss_record NAME PID: stackscope on process PID for DUR seconds
ss_record() {
	/usr/bin/time -f '%U %S' -o "$out/$1.time" ./stackscope record -F $HZ -p "$2" -d "$DUR" \
		-o "$out/$1.pb.gz" >/dev/null 2>"$out/$1.log"
	read -r ns s < <(ss_field "$out/$1.log")
	R[$1.ns]+="$ns "
	R[$1.samples]+="$s "
	R[$1.cpu]+="$(cpu_of "$out/$1.time") "
}

# perf_record NAME PID: perf on process PID for DUR seconds, then (the JVM's exit writes its
# perf map) the stacks
perf_record() {
	/usr/bin/time -f '%U %S' -o "$out/$1.time" timeout -s INT "$DUR" perf record -q -g -F $HZ \
		-p "$2" -o "$out/$1.data" >/dev/null 2>&1
	wait "$2"
	perf script -i "$out/$1.data" -F comm,ip,sym 2>/dev/null >"$out/$1.txt"
	rm -f "/tmp/perf-$2.map"
	R[$1.cpu]+="$(cpu_of "$out/$1.time") "
}

# jvm FLAGS...: starts the workload, waits out its warm-up; $! is the JVM. It runs DUR + 6 s:
# stackscope reads names from the JVM's memory when it handles a sample, so the JVM must
# outlive a recorder that is behind on a loaded box (ARCHITECTURE.md, HotSpot, process lifetime).
jvm() {
	"$home/bin/java" "$@" -cp "$out" JvmDeep30 $((DUR + 6)) &
	sleep 1.5
}

declare -A R
start=$(date +%s)
for r in $(seq "$ROUNDS"); do
	"$native" $((DUR + 2)) >/dev/null &
	sleep 0.5
	ss_record native $!
	wait
	for home in "${jdks[@]}"; do
		v=$(basename "$home")
		jvm
		ss_record "$v.ss" $!
		wait
		$STACKS "$out/$v.ss.pb.gz" | complete ss >"$out/c"
		read -r t c l d <"$out/c"
		R[$v.ss.chain]+="$(pct "$c" "$t") "; R[$v.ss.lines]+="$(pct "$l" "$t") "; R[$v.ss.n]+="$t "
		R[$v.ss.depth]+="$d "
		for mode in map fp; do
			map="-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit"
			# shellcheck disable=SC2086 # the flags are words
			if [[ $mode == fp ]]; then jvm $map -XX:+PreserveFramePointer; else jvm $map; fi
			perf_record "$v.$mode" $!
			wait
			read -r t c l d < <(complete perf <"$out/$v.$mode.txt")
			R[$v.$mode.chain]+="$(pct "$c" "$t") "; R[$v.$mode.n]+="$t "; R[$v.$mode.depth]+="$d "
		done
	done
done
elapsed=$(($(date +%s) - start))

m() { median <<<"${R[$1]:-}"; }
echo
echo "stackscope Java benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'); $(uname -r), $(nproc) CPUs," \
	"load average at the end $(cut -d' ' -f1-3 /proc/loadavg); medians of $ROUNDS rounds, ${elapsed}s"
echo "workload: bench/JvmDeep30.java: main:$L_CALL -> down:$L_REC x29 -> down:$L_HOT (hot loop), called"
echo "again and again; each tool attached for ${DUR}s at $HZ Hz after 1.5 s of warm-up"
echo
echo "1. Completeness: % of the JVM main thread's samples (n) whose Java frames are exactly"
echo "   main -> down x30 ('chain'), and with every frame at its line ('lines'); 'depth' = Java"
echo "   frames per sample, mean (31 when complete)"
printf '   %-22s | %-25s | %-18s | %s\n' "" "stackscope (no restart)" "perf+map (restart)" "perf+map+fp (restart)"
printf '   %-22s | %6s %6s %5s %5s | %6s %5s %5s | %6s %5s %5s\n' JVM chain lines depth n chain depth n chain depth n
for home in "${jdks[@]}"; do
	v=$(basename "$home")
	printf '   %-22s | %5s%% %5s%% %5s %5s | %5s%% %5s %5s | %5s%% %5s %5s\n' "$v" "$(m "$v.ss.chain")" \
		"$(m "$v.ss.lines")" "$(m "$v.ss.depth")" "$(m "$v.ss.n")" "$(m "$v.map.chain")" \
		"$(m "$v.map.depth")" "$(m "$v.map.n")" "$(m "$v.fp.chain")" "$(m "$v.fp.depth")" "$(m "$v.fp.n")"
done
echo
echo "2. stackscope's BPF time per recorded sample (ns, in-program clock)"
printf '   %-28s %10s %9s\n' stack ns/sample samples
printf '   %-28s %10s %9s\n' "native wl_chain_nofp" "$(m native.ns)" "$(m native.samples)"
for home in "${jdks[@]}"; do
	v=$(basename "$home")
	printf '   %-28s %10s %9s\n' "$v (Java x31)" "$(m "$v.ss.ns")" "$(m "$v.ss.samples")"
done
echo
echo "3. The recorder's own CPU over the ${DUR}s recording (s, user+sys)"
printf '   %-28s %10s %10s %12s\n' JVM stackscope perf+map perf+map+fp
for home in "${jdks[@]}"; do
	v=$(basename "$home")
	printf '   %-28s %10s %10s %12s\n' "$v" "$(m "$v.ss.cpu")" "$(m "$v.map.cpu")" "$(m "$v.fp.cpu")"
done
