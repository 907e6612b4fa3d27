#!/bin/bash
# The six-compile clang loop from a cold table cache (issue 13): `clang-14 -O2 -c` of a real C
# file (this repository's src/unwind/unwind_table.c), six compiles one after another under
# `record -F 199 -- bash -c 'loop'`, with an empty --cache-dir (cold: libLLVM, libclang-cpp and
# clang itself have no table when their first sample arrives), then again with the cache that
# run filled (warm), then `stackscope agent -F 199` started with an empty --cache-dir of its own
# (system-wide, tables built only for files samples land in) around the same loop, and
# `perf record -F 199 --call-graph dwarf` of the same loop as the reference, in alternation,
# ROUNDS rounds.
#
# Counted: the samples of the clang-14 processes; complete = the stack reaches a thread root
# (its outermost frame is `_start`, `start_thread` or `clone`/`clone3`: perf names them the
# same). The incomplete ones are listed by how they end (the `[unwind: ...]` marker or the
# outermost frame), with record's "deferred" line (stack copies sent, completed, over budget,
# parts), and apart: the samples taken while the kernel tears the process's address space down
# at its exit (exit_mmap: no user stack left to read; perf loses them too).
# The agent's unwind-entry pool is record's default (4M entries, AGENT_ENTRIES=): at its own
# default (2M) on a box where other giants run (qemu, node, a JVM), libLLVM and libclang-cpp
# (~2M entries together) find no room and their samples stay incomplete, cold or warm.
# Usage: sudo bench/clang_cold.sh [ROUNDS (3)]; SS=path/to/stackscope for another build;
# AGENT=0 leaves the agent out; PEER=path/to/another/stackscope adds its cold record to each
# round (e.g. main's build: before/after in the same minutes).
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
SS=${SS:-./stackscope}
SRC=src/unwind/unwind_table.c
AGENT=${AGENT:-1}
PEER=${PEER:-}
AGENT_ENTRIES=${AGENT_ENTRIES:-4194304}
need_root
need_program clang-14 "scripts/setup.sh"
need_program "$SS" "make"
agent_pid=
bench_out clang-cold '[[ -n $agent_pid ]] && kill "$agent_pid" 2>/dev/null'
LOOP="for i in 1 2 3 4 5 6; do clang-14 -O2 -D_GNU_SOURCE -Isrc -Ibpf -Ibuild -c $SRC -o $out/x.o; done"

root='^(_start|start_thread|clone|clone3|__clone|__clone3)$'

# folded -> "complete/total" of clang-14's samples, and the ends of the others into $2
ss_count() {
	awk -v root="$root" -v ends="$2" '$1 ~ /^clang-14;/ {
		n = $NF; s = $0; sub(/ [0-9]+$/, "", s); k = split(s, f, ";"); t += n
		if (k >= 2 && f[2] ~ root && s !~ /\[unwind|\[truncated/) { c += n; next }
		e = f[2]
		if (match(s, /\[unwind: [^]]*\]|\[truncated\]/)) e = substr(s, RSTART, RLENGTH)
		else if (e ~ /^[0-9a-f]*$/ || e == "") e = "(other outermost frame)"
		miss[e] += n
	} END { for (e in miss) printf "%6d  %s\n", miss[e], e > ends; printf "%d/%d", c, t }' "$1"
}

# perf script -> the same count: the outermost frame of each clang-14 sample
perf_count() {
	perf script --no-inline -i "$1" -F comm,ip,sym,dso 2>/dev/null | awk -v root="$root" -v ends="$2" '
		function flush() { if (!n) return; t++; if (last ~ root) c++; else miss[ld]++ }
		/^[^ \t]/ { flush(); n = ($1 == "clang-14"); last = ""; ld = ""; next }
		n && NF >= 2 { last = $2; sub(/\+0x[0-9a-f]+$/, "", last); ld = $2 " " $NF }
		END { flush(); for (e in miss) printf "%6d  %s\n", miss[e], e > ends; printf "%d/%d", c, t }' |
		tail -1
}

# folded -> the clang-14 samples in the kernel's exit teardown (no user stack by then)
exit_count() {
	awk '$1 ~ /^clang-14;/ && /;exit_mmap;/ { c += $NF } END { print c + 0 }' "$1"
}

# the agent, cold, system-wide around one loop: its pprof files as folded lines into $1
agent_run() {
	local t0
	rm -rf "$out/acache" "$out/pprof"
	mkdir -p "$out/acache" "$out/pprof"
	"$SS" agent -F 199 --interval 2 --output-dir "$out/pprof" --cache-dir "$out/acache" \
		--unwind-entries "$AGENT_ENTRIES" 2>"$out/agent.err" &
	agent_pid=$!
	t0=$SECONDS
	until grep -q 'agent running' "$out/agent.err"; do
		kill -0 "$agent_pid" 2>/dev/null && ((SECONDS - t0 < 60)) || return 1
		sleep 0.1
	done
	bash -c "$LOOP"
	sleep 1
	kill -TERM "$agent_pid"
	wait "$agent_pid"
	agent_pid=
	for f in "$out"/pprof/*; do
		python3 tests/system/pprof_stacks.py --comm "$f"
	done >"$1"
}

frac_pct() { awk -F/ '{ printf "%s = %.1f %%", $0, $2 ? 100 * $1 / $2 : 0 }' <<<"$1"; }

declare -A exits
echo "# clang-14 -O2 -c $SRC x 6, 199 Hz, $(date -u '+%F %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-24s %-24s %-24s %-24s %s\n' round "stackscope cold" "stackscope warm" \
	"agent cold" "perf --call-graph dwarf" "${PEER:+peer cold}"
for r in $(seq "$ROUNDS"); do
	rm -rf "$out/cache"
	mkdir -p "$out/cache"
	"$SS" record -F 199 --cache-dir "$out/cache" -o "$out/cold.folded" -- bash -c "$LOOP" \
		2>"$out/cold.err.$r" >/dev/null
	cold=$(ss_count "$out/cold.folded" "$out/ends.cold.$r")
	exits[$r]="cold $(exit_count "$out/cold.folded")"
	"$SS" record -F 199 --cache-dir "$out/cache" -o "$out/warm.folded" -- bash -c "$LOOP" \
		2>"$out/warm.err.$r" >/dev/null
	warm=$(ss_count "$out/warm.folded" "$out/ends.warm.$r")
	exits[$r]+=", warm $(exit_count "$out/warm.folded")"
	agent="-"
	if [[ $AGENT == 1 ]]; then
		if agent_run "$out/agent.folded"; then
			agent=$(frac_pct "$(ss_count "$out/agent.folded" "$out/ends.agent.$r")")
			exits[$r]+=", agent $(exit_count "$out/agent.folded")"
			cp "$out/agent.err" "$out/agent.err.$r"
		else
			agent="(agent did not start)"
		fi
	fi
	perf record -q -F 199 --call-graph dwarf -o "$out/perf.data" -- bash -c "$LOOP" \
		>/dev/null 2>&1
	ref=$(perf_count "$out/perf.data" "$out/ends.perf.$r")
	peer=
	if [[ -n $PEER ]]; then
		rm -rf "$out/cache"
		mkdir -p "$out/cache"
		"$PEER" record -F 199 --cache-dir "$out/cache" -o "$out/peer.folded" -- \
			bash -c "$LOOP" 2>"$out/peer.err.$r" >/dev/null
		peer=$(frac_pct "$(ss_count "$out/peer.folded" "$out/ends.peer.$r")")
	fi
	printf '%-6s %-24s %-24s %-24s %-24s %s\n' "$r" "$(frac_pct "$cold")" "$(frac_pct "$warm")" "$agent" \
		"$(frac_pct "$ref")" "$peer"
done
for r in $(seq "$ROUNDS"); do
	echo "# round $r: samples in the exit teardown (exit_mmap, in the totals): ${exits[$r]}"
	sed -n 's/^deferred */# round '"$r"', cold: deferred /p' "$out/cold.err.$r"
	sed -n 's/^deferred */# round '"$r"', warm: deferred /p' "$out/warm.err.$r"
	[[ -s $out/agent.err.$r ]] &&
		grep -o 'deferred unwinding: .*' "$out/agent.err.$r" | tail -1 | sed 's/^/# round '"$r"', agent: /'
	[[ -s $out/peer.err.$r ]] &&
		sed -n 's/^deferred */# round '"$r"', peer cold: deferred /p' "$out/peer.err.$r"
	for k in cold warm agent perf peer; do
		[[ -s $out/ends.$k.$r ]] || continue
		echo "# round $r, $k: incomplete samples by how they end"
		sort -rn "$out/ends.$k.$r" | head -8
	done
done
