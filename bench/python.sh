#!/bin/bash
# Python unwinding benchmark (issue 6), every tool on the same workload in the same run:
#  1. BPF time per sample for a 30-frame Python stack (bench/py_deep30.py: <module> -> down()
#     30 frames deep -> a one-line hot loop) vs a 30-frame native stack (a C program built
#     here -O2 -fomit-frame-pointer: main -> rec30() 30 noinline frames -> a hot loop);
#  2. completeness per interpreter (pyenv 3.8-3.13, Debian's python3.11): the share of
#     samples whose Python chain is exactly <module> -> down x30 with the leaf at the hot line;
#  3. next to austin (Debian package, `austin -i 2000` = 500 Hz, stackscope at 499 Hz): the
#     same completeness on austin's collapsed stacks, the workload's own wall and CPU time alone
#     and under each tool, and each tool's own CPU time.
# Every measurement is taken ROUNDS times in alternation (alone, stackscope, austin); the
# tables give medians. See the "method" lines printed with the tables.
# Usage: sudo bench/python.sh [ROUNDS] [PY_ITERS]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
ITERS=${2:-1.2e7}         # iterations of the Python hot loop (~0.5-1 s)
SHORT=${SHORT:-2e6}       # the same for a short-lived run (~0.1-0.2 s)
NITERS=${NITERS:-1.2e9}   # iterations of the native hot loop (~0.7 s)
HZ=499
PYENV=${PYENV_ROOT:-/root/.pyenv}/versions
WL=$PWD/bench/py_deep30.py
bench_start pybench 'sysctl -q kernel.bpf_stats_enabled=0'
have_austin=1
command -v austin >/dev/null || { have_austin=0; echo "bench: austin not installed (scripts/setup.sh): austin columns skipped" >&2; }

L_MOD=$(line "$WL" CALL_MODULE)
L_REC=$(line "$WL" RECURSE)
L_HOT=$(line "$WL" HOT)


# The native workload: 30 recursive frames that cannot be merged or tail-called.
build_native30 "$out" || exit 1

# Completeness of a profile. Input: "frames... count" lines on stdin, in one of two formats:
#  ss     pprof_stacks.py output (root first; Python frames "func@file:line", native "func")
#  austin austin 1.0 collapsed stacks ("Thread T;func (file);L<line>;... <us>", one sample a line)
#  native pprof_stacks.py output of the C workload
# Prints "total chain complete lines nopy": samples counted (those inside the import machinery at
# start-up, i.e. with a Python frame of another file, are left out), samples with the exact
# chain of functions, those with the leaf also at the hot line (the "complete" figure), and
# those with every line exact, those without any Python frame. With TOP=N also prints the N heaviest stacks that are not
# complete, repeated frames folded, to stderr.
cat >"$out/complete.py" <<'EOF'
import os, re, sys
fmt, l_mod, l_rec, l_hot = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
top = int(os.environ.get("TOP", "0"))
DEPTH = 30
total = chain = complete = lines = nopy = 0
bad = {}
for raw in sys.stdin:
    raw = raw.rstrip("\n")
    if not raw.strip():
        continue
    stack, _, cnt = raw.rpartition(" ")
    if fmt == "austin":
        cnt = 1
        parts = stack.split(";")[1:]
        py = []
        for i in range(0, len(parts), 2):  # "func (file)", "L<line>"
            m = re.match(r"^(.*) \((.*)\)$", parts[i])
            ln = parts[i + 1] if i + 1 < len(parts) else "L0"
            py.append((m.group(1) if m else parts[i], os.path.basename(m.group(2)) if m else "?",
                       int(ln[1:]) if ln[1:].isdigit() else 0))
        frames = ["%s@%s:%d" % f for f in py]
    else:
        cnt = int(cnt)
        frames = stack.split(";") if stack else []
        py = []
        for f in frames:
            m = re.match(r"^(.*)@([^@:]*)(?::(\d+))?$", f)
            if m:
                py.append((m.group(1), m.group(2), int(m.group(3) or 0)))
    if fmt == "native":
        total += cnt
        k = frames.index("main") if "main" in frames else -1
        n = 0
        while k >= 0 and k + 1 + n < len(frames) and frames[k + 1 + n] == "rec30":
            n += 1
        ok = k >= 0 and n == DEPTH
        chain += cnt * ok
        complete += cnt * ok
        lines += cnt * ok
    else:
        if any(f[1] != "py_deep30.py" for f in py):
            continue  # start-up (imports): no tool can show our chain there
        total += cnt
        nopy += cnt * (not py)
        names = [f[0] for f in py]
        ok = names == ["<module>"] + ["down"] * DEPTH
        chain += cnt * ok
        ok = ok and py[-1][2] == l_hot
        complete += cnt * ok
        lines += cnt * (ok and py[0][2] == l_mod and all(f[2] == l_rec for f in py[1:-1]))
    if top and not ok:
        # fold runs of the same frame: "down@py_deep30.py:15 x29"
        folded, prev, rep = [], None, 0
        for f in frames + [None]:
            if f == prev:
                rep += 1
                continue
            if prev is not None:
                folded.append(prev + (" x%d" % rep if rep > 1 else ""))
            prev, rep = f, 1
        key = ";".join(folded)
        bad[key] = bad.get(key, 0) + cnt
print(total, chain, complete, lines, nopy)
for k, v in sorted(bad.items(), key=lambda kv: -kv[1])[:top]:
    print("      %5d  %s" % (v, k[-700:]), file=sys.stderr)
EOF
complete() { python3 "$out/complete.py" "$1" "$L_MOD" "$L_REC" "$L_HOT"; }

# stackscope NAME CMD...: records CMD; leaves NAME.pb.gz, NAME.log (summary), NAME.time
stackscope_run() {
	local name=$1; shift
	/usr/bin/time -f '%U %S %e' -o "$out/$name.time" \
		./stackscope record -F $HZ -o "$out/$name.pb.gz" -- "$@" >/dev/null 2>"$out/$name.log"
}
ss_field() { # LOG -> "ns_per_run runs samples"
	awk '/^bpf time/ { ns = $3; runs = $7; sub(/\(/, "", runs) }
		/^samples/ { s = $2 } END { print ns + 0, runs + 0, s + 0 }' "$1"
}
cpu_of() { awk '{ printf "%.3f", $1 + $2 }' "$1"; }

versions=()
for v in 3.8 3.9 3.10 3.11 3.12 3.13; do
	dir=$(ls -d "$PYENV/$v".* 2>/dev/null | sort -V | tail -1)
	[[ -n $dir && -x $dir/bin/python$v ]] && versions+=("py$v=$dir/bin/python$v")
done
[[ -x /usr/bin/python3.11 ]] && versions+=("debian3.11=/usr/bin/python3.11")

sysctl -q kernel.bpf_stats_enabled=1
declare -A R # R[key] = space-separated values, one per round
declare -A AUSTIN_OK AUSTIN_ERR
start=$(date +%s)
for r in $(seq "$ROUNDS"); do
	# the cost of a run that is not a sample of ours (another CPU, another process):
	# a recording of `sleep 1`, whose process is off-CPU throughout
	stackscope_run calib sleep 1
	read -r ns runs s < <(ss_field "$out/calib.log")
	R[calib]+="$ns "
	R[calib.cpu]+="$(cpu_of "$out/calib.time") "
	# native 30 frames
	stackscope_run native "$out/native30" "$NITERS"
	read -r ns runs s < <(ss_field "$out/native.log")
	R[native.ns_run]+="$ns "
	R[native.ns_total]+="$(awk -v a="$ns" -v b="$runs" 'BEGIN { printf "%.0f", a * b }') "
	R[native.runs]+="$runs "
	R[native.samples]+="$s "
	read -r t c k l _ < <($STACKS "$out/native.pb.gz" | complete native)
	R[native.complete]+="$(pct "$c" "$t") "
	R[native.total]+="$t "
	for spec in "${versions[@]}"; do
		name=${spec%%=*} py=${spec#*=}
		# alone
		rm -f "$out/w"
		"$py" "$WL" "$ITERS" "$out/w" >/dev/null 2>&1
		read -r w c <"$out/w"
		R[$name.wall0]+="$w "; R[$name.cpu0]+="$c "
		# stackscope
		rm -f "$out/w"
		stackscope_run "$name" "$py" "$WL" "$ITERS" "$out/w"
		read -r w c <"$out/w"
		R[$name.wall1]+="$w "; R[$name.cpu1]+="$c "
		R[$name.sstool]+="$(awk -v t="$(cpu_of "$out/$name.time")" -v c="$c" 'BEGIN { printf "%.3f", t - c }') "
		read -r ns runs s < <(ss_field "$out/$name.log")
		R[$name.ns_run]+="$ns "
		R[$name.ns_total]+="$(awk -v a="$ns" -v b="$runs" 'BEGIN { printf "%.0f", a * b }') "
		R[$name.runs]+="$runs "
		R[$name.samples]+="$s "
		$STACKS "$out/$name.pb.gz" >"$out/$name.stacks"
		read -r t ch c l np < <(complete ss <"$out/$name.stacks")
		R[$name.ss]+="$(pct "$c" "$t") "; R[$name.ss_chain]+="$(pct "$ch" "$t") "
		R[$name.ss_nopy]+="$(pct "$np" "$t") "
		R[$name.ss_lines]+="$(pct "$l" "$t") "; R[$name.ss_n]+="$t "
		cp "$out/$name.stacks" "$out/$name.r$r.stacks"
		# a short-lived run: the process exits ~0.1-0.2 s after it starts
		stackscope_run short "$py" "$WL" "$SHORT"
		$STACKS "$out/short.pb.gz" >"$out/$name.short.r$r.stacks"
		read -r t ch c l np < <(complete ss <"$out/$name.short.r$r.stacks")
		R[$name.short]+="$(pct "$c" "$t") "; R[$name.short_n]+="$t "
		# austin (skipped after a first run that produced no sample: version not supported)
		((have_austin)) || continue
		[[ ${AUSTIN_OK[$name]:-1} == 0 ]] && continue
		rm -f "$out/w" "$out/a.txt"
		/usr/bin/time -f '%U %S %e' -o "$out/a.time" \
			austin -i 2000 -o "$out/a.txt" "$py" "$WL" "$ITERS" "$out/w" >/dev/null 2>"$out/a.log"
		if [[ ! -s $out/a.txt ]]; then
			AUSTIN_OK[$name]=0
			AUSTIN_ERR[$name]=$(grep -v '^Command exited' "$out/a.log" | tail -1)
			continue
		fi
		read -r w c <"$out/w"
		R[$name.wall2]+="$w "; R[$name.cpu2]+="$c "
		R[$name.autool]+="$(awk -v t="$(cpu_of "$out/a.time")" -v c="$c" 'BEGIN { printf "%.3f", t - c }') "
		read -r t ch c l np < <(complete austin <"$out/a.txt")
		R[$name.au]+="$(pct "$c" "$t") "; R[$name.au_chain]+="$(pct "$ch" "$t") "
		R[$name.au_lines]+="$(pct "$l" "$t") "; R[$name.au_n]+="$t "
		R[$name.au_nopy]+="$(pct "$np" "$t") "
		cp "$out/a.txt" "$out/$name.r$r.austin"
	done
done
sysctl -q kernel.bpf_stats_enabled=0
elapsed=$(($(date +%s) - start))

m() { median <<<"${R[$1]:-}"; }
cal=$(m calib)
# BPF time per sample of the workload: all of the program's run time in the recording, less
# the runs that were not its samples at the calibrated cost, divided by its samples
per_sample() { # name
	local -a tot runs smp
	read -ra tot <<<"${R[$1.ns_total]}"; read -ra runs <<<"${R[$1.runs]}"; read -ra smp <<<"${R[$1.samples]}"
	local i vals=""
	for i in "${!tot[@]}"; do
		vals+="$(awk -v t="${tot[i]}" -v n="${runs[i]}" -v s="${smp[i]}" -v c="$cal" \
			'BEGIN { if (s > 0) printf "%.0f", (t - (n - s) * c) / s; else printf "-" }') "
	done
	median <<<"$vals"
}

echo
echo "stackscope Python benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'); $(uname -r), $(nproc) CPUs" \
	"($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), load average at the end" \
	"$(cut -d' ' -f1-3 /proc/loadavg); medians of $ROUNDS rounds, ${elapsed}s"
echo "workload: bench/py_deep30.py $ITERS: <module>:$L_MOD -> down:$L_REC x29 -> down:$L_HOT (hot loop), 31 Python frames;"
echo "native: main -> rec30() x30 (gcc -O2 -fomit-frame-pointer, noinline) -> hot loop, $NITERS iterations"
echo
echo "1. BPF time per sample (stackscope -F $HZ, kernel.bpf_stats_enabled)"
echo "   ns/run = the summary's figure (every run of the program, on every CPU, including the runs"
echo "   that only filter out other processes); ns/sample = the workload's samples alone: (run time"
echo "   - other runs x ${cal} ns, the cost of a filtered run measured on \`sleep 1\`) / samples"
printf '   %-12s %9s %10s %9s\n' stack ns/run ns/sample samples
printf '   %-12s %9s %10s %9s\n' "native x30" "$(m native.ns_run)" "$(per_sample native)" "$(m native.samples)"
for spec in "${versions[@]}"; do
	name=${spec%%=*}
	printf '   %-12s %9s %10s %9s\n' "$name x31" "$(m "$name.ns_run")" "$(per_sample "$name")" "$(m "$name.samples")"
done
echo "   native x30 completeness (main -> exactly 30 rec30 frames): $(m native.complete)% of $(m native.total) samples"
echo
echo "2./3. Completeness: % of the workload's samples (n; start-up samples inside the import"
echo "   machinery are left out) whose Python frames are exactly <module> -> down x30:"
echo "   'compl' = with the leaf at the hot line $L_HOT (the completeness figure); 'chain' = the"
echo "   functions only, any line; 'lines' = every frame at its exact line; 'no py' = samples"
echo "   without any Python frame (interpreter start-up/exit, or Python frames lost); 'short' ="
echo "   stackscope's 'compl' for the same workload run $SHORT iterations (~0.1-0.2 s), all rounds"
echo "   pooled. stackscope -F $HZ vs austin -i 2000 (500 Hz)."
printf '   %-11s | %-33s | %-11s | %s\n' "" "stackscope" "short-lived" "austin 1.0.1"
printf '   %-11s | %6s %6s %6s %6s %5s | %6s %4s | %6s %6s %6s %6s %5s\n' python compl chain lines "no py" n \
	compl n compl chain lines "no py" n
for spec in "${versions[@]}"; do
	name=${spec%%=*}
	if [[ ${AUSTIN_OK[$name]:-1} == 0 || $have_austin == 0 ]]; then
		au="no samples: ${AUSTIN_ERR[$name]:-not installed}"
	else
		au=$(printf '%5s%% %5s%% %5s%% %5s%% %5s' "$(m "$name.au")" "$(m "$name.au_chain")" \
			"$(m "$name.au_lines")" "$(m "$name.au_nopy")" "$(m "$name.au_n")")
	fi
	# short-lived: pooled over the rounds
	sh=$(cat "$out/$name".short.r*.stacks | python3 "$out/complete.py" ss "$L_MOD" "$L_REC" "$L_HOT")
	printf '   %-11s | %5s%% %5s%% %5s%% %5s%% %5s | %5s%% %4s | %s\n' "$name" "$(m "$name.ss")" \
		"$(m "$name.ss_chain")" "$(m "$name.ss_lines")" "$(m "$name.ss_nopy")" "$(m "$name.ss_n")" \
		"$(pct "$(cut -d' ' -f3 <<<"$sh")" "$(cut -d' ' -f1 <<<"$sh")")" "$(cut -d' ' -f1 <<<"$sh")" "$au"
done
echo
echo "3. Overhead on the same workload (seconds): the workload's own wall time and CPU time"
echo "   (time.perf_counter around the work, getrusage(RUSAGE_SELF)) alone, under stackscope and"
echo "   under austin; each tool's own CPU = /usr/bin/time user+sys of the tool (which waits for"
echo "   the workload) - the workload's CPU. stackscope's includes its start-up (BPF load, unwind"
echo "   tables) and symbolization."
printf '   %-11s | %-20s | %-20s | %s\n' "" "workload wall" "workload CPU" "tool's own CPU"
printf '   %-11s | %6s %6s %6s | %6s %6s %6s | %7s %7s\n' python alone ss austin alone ss austin ss austin
for spec in "${versions[@]}"; do
	name=${spec%%=*}
	printf '   %-11s | %6s %6s %6s | %6s %6s %6s | %7s %7s\n' "$name" "$(m "$name.wall0")" "$(m "$name.wall1")" \
		"$(m "$name.wall2")" "$(m "$name.cpu0")" "$(m "$name.cpu1")" "$(m "$name.cpu2")" \
		"$(m "$name.sstool")" "$(m "$name.autool")"
done
echo "   stackscope's fixed cost, for scale: its own CPU recording \`sleep 1\` = $(m calib.cpu) s"

# Where stackscope's completeness is low: the heaviest incomplete stacks of the last round.
for spec in "${versions[@]}"; do
	name=${spec%%=*}
	c=$(m "$name.ss")
	[[ $c != - ]] && awk -v c="$c" 'BEGIN { exit !(c < 95) }' || continue
	echo
	echo "stackscope $name: $c% complete; heaviest incomplete stacks (round $ROUNDS):"
	TOP=5 python3 "$out/complete.py" ss "$L_MOD" "$L_REC" "$L_HOT" <"$out/$name.r$ROUNDS.stacks" 2>&1 >/dev/null
done
for spec in "${versions[@]}"; do
	name=${spec%%=*}
	sh=$(cat "$out/$name".short.r*.stacks | python3 "$out/complete.py" ss "$L_MOD" "$L_REC" "$L_HOT")
	c=$(pct "$(cut -d' ' -f3 <<<"$sh")" "$(cut -d' ' -f1 <<<"$sh")")
	[[ $c != - ]] && awk -v c="$c" 'BEGIN { exit !(c < 90) }' || continue
	echo
	echo "stackscope $name short-lived: $c% complete; heaviest incomplete stacks (all rounds):"
	cat "$out/$name".short.r*.stacks |
		TOP=3 python3 "$out/complete.py" ss "$L_MOD" "$L_REC" "$L_HOT" 2>&1 >/dev/null
done
