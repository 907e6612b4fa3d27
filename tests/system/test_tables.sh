#!/bin/bash
# The agent's unwind tables built lazily, in the order samples ask for them
# (src/unwind/table_queue.h), on a machine where giant files are mapped (clang's libLLVM and
# libclang-cpp, ~2 M table rows between them; node when installed) and with no table cache:
#  - sampled first: a known-chain workload padded to 12 MiB (the largest file the sampling
#    thread builds itself, so by size alone it would come after every other library on the
#    machine) is running when the agent starts; its table is among the first loaded (files
#    sampled more, e.g. libc, may come first), and its samples are complete (hot_leaf <- chain_c
#    <- chain_b <- chain_a <- main <- _start) once the first 3 one-second intervals are over (on
#    a loaded 2-core machine the builds before it took up to 2 s);
#  - the giant files are built on the worker thread (counted) when sampled: clang parses a
#    header while the agent starts (a process that burns CPU in libclang-cpp/libLLVM);
#  - an idle giant (a copy of node or libLLVM mapped executable after the start, never run) is
#    not built: the agent builds only what runs;
#  - pool full: with a 4096-entry pool (libc alone needs ~30 k) the files that do not fit are
#    counted ("without room"), the agent keeps sampling and exits 0, and the workload's own
#    frames still unwind through its table (the chain up to main);
#  - a table larger than a segment of the entry pool (wl_huge_cfi: 1.2M rows, one function
#    without frame pointers) is split across segments at its pages: `record` says so, the
#    segment it needs is made after the privilege drop (by ss-segments, src/unwind/
#    segment_maker.h), and its samples in that function are complete back to _start.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_nofp || finish
have_fixture wl_qsort || finish
CLANG=$(command -v clang++-14 || command -v clang++)
if [[ -z $CLANG ]]; then
	skip_setup "clang++ missing: no giant files to map"
	finish
fi
PY=/usr/bin/python3
CHAIN_RE='main;chain_a;chain_b;chain_c;hot_leaf'

# the giants: clang -fsyntax-only reading a FIFO this script holds open (libLLVM, libclang-cpp,
# mapped all along; no process left holding the test's output open once it ends), clang
# parsing C++ in a loop (sampled), node
mkfifo "$TMP/hold"
"$CLANG" -fsyntax-only -x c++ "$TMP/hold" >/dev/null 2>&1 &
_bg_pids+=($!)
exec 7>"$TMP/hold"
printf '#include <algorithm>\n#include <map>\n#include <string>\n#include <vector>\n' >"$TMP/p.cc"
for i in $(seq 40); do
	echo "int f$i(std::vector<std::map<std::string, int>> &v) { std::sort(v.begin(), v.end()); return (int)v.size(); }"
done >>"$TMP/p.cc"
spawn cpid timeout 120 sh -c "while :; do nice '$CLANG' -fsyntax-only '$TMP/p.cc'; done"

if command -v node >/dev/null; then
	spawn npid node -e 'setTimeout(() => {}, 60000)'
fi
# the workload, padded with 12 MiB of zeros after its ELF contents (the loader never reads them)
WL=$TMP/wl_padded_chain
cp "$FIX/wl_chain_nofp" "$WL"
head -c $((12 << 20)) /dev/zero >>"$WL"
spawn wpid "$WL" 60 # (the most wl_common.h takes) outlives both agent runs, stopped at the end
for _ in $(seq 50); do
	grep -qs libLLVM /proc/[0-9]*/maps && break
	sleep 0.1
done
check "libLLVM mapped by a live process" grep -qs libLLVM /proc/[0-9]*/maps

# run_agent NAME SECONDS ARGS...: the agent, pprof files every second into $TMP/NAME, stopped
# (its table cache starts empty: the first run is cold, the next ones start from its tables)
# SECONDS after it says it runs (the SIGTERM goes through timeout, which arms its -k then: the
# agent's stop, up to 3 s for deferred samples' tables plus the last export, took 3-7 s at
# load 25-30, so -k 5 killed it); its log in $TMP/NAME.log, exit status in ARC, the folded
# stacks (comm first) of the intervals after the first SKIP in $TMP/NAME.folded
run_agent()
{
	local name=$1 secs=$2 skip=$3 apid f i
	shift 3
	mkdir -p "$TMP/$name"
	timeout -k 30 50 "$SS" agent -v -F 99 --interval 1 --output-dir "$TMP/$name" --cache-dir "$TMP/cache" \
		"$@" 2>"$TMP/$name.log" &
	apid=$!
	for i in $(seq 300); do
		grep -q 'agent running' "$TMP/$name.log" && break
		kill -0 "$apid" 2>/dev/null || break
		sleep 0.1
	done
	[[ -z ${AFTER_START:-} ]] || eval "$AFTER_START"
	sleep "$secs"
	kill -TERM "$apid" 2>/dev/null
	wait "$apid"
	ARC=$?
	: >"$TMP/$name.folded"
	for f in $(ls "$TMP/$name"/stackscope-*.pb.gz 2>/dev/null | sort | tail -n +$((skip + 1))); do
		$PY "$SS_ROOT/tests/system/pprof_stacks.py" --comm "$f" \
			>>"$TMP/$name.folded"
	done
}

# an idle giant: a copy of a giant file (no other process runs it) mapped executable once the
# agent runs, and never run
IDLE_GIANT=$TMP/idle_giant
cp "$(command -v node || grep -h -o '/[^ ]*libLLVM[^ ]*' /proc/[0-9]*/maps | head -1)" "$IDLE_GIANT"
AFTER_START="spawn gpid $PY -c 'import mmap, sys, time
f = open(sys.argv[1], \"rb\")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC)
time.sleep(60)' $IDLE_GIANT"

# --- sampled first ---------------------------------------------------------------------------
run_agent lazy 7 3
AFTER_START=
kill "$gpid" 2>/dev/null
check_eq "lazy: exit status" "$ARC" 0
comm=$(basename "$WL" | cut -c1-15)
total=$(samples "$TMP/lazy.folded" "$comm" ';hot_leaf$')
complete=$(samples "$TMP/lazy.folded" "$comm" "^$comm;${START_RE}$CHAIN_RE\$")
check_ge "lazy: samples of the workload in hot_leaf after 3 s" "$total" 20
check_pct "lazy: of those, complete back to _start" "$complete" "$total" 90 ||
	show "$TMP/lazy.folded" "$comm"
# the loads once sampling runs (before, the agent serves the files most processes map for up
# to 2 s, mapped-by-most first: a one-process 12 MiB file comes last there)
sed -n '/agent running/,$p' "$TMP/lazy.log" | grep -o '[^ ]*: unwind table loaded' |
	sed 's/: unwind table loaded//' >"$TMP/lazy.order"
loaded=$(grep -c . "$TMP/lazy.order")
pos=$(grep -n -F -x "$WL" "$TMP/lazy.order" | head -1 | cut -d: -f1)
check_ge "lazy: tables loaded once sampling ran" "$loaded" 1
if sed '/agent running/,$d' "$TMP/lazy.log" | grep -q -F "$WL: unwind table loaded"; then
	ok "lazy: the 12 MiB workload's table loaded before sampling started (an idle machine)"
else
	check_le "lazy: the sampled 12 MiB workload's table among the first loaded (position)" \
		"${pos:-9999}" 20 || head -15 "$TMP/lazy.order" | sed 's/^/        /'
fi
worker=$(grep -c 'unwind table built by the worker' "$TMP/lazy.log")
check_ge "lazy: giant files built on the worker thread" "$worker" 1
# the idle giant, mapped while sampling ran, is not built at all: the agent's pool grows
# only for code that runs (before, its mapping queued it as if sampled once: built on the worker)
check "lazy: the idle giant mapped" grep -q -F "$IDLE_GIANT" "$TMP/lazy.log"
check_eq "lazy: the idle giant's table never built (no sample in it)" \
	"$(grep -c -F "$IDLE_GIANT: unwind table built" "$TMP/lazy.log")" 0

# --- the pool full ---------------------------------------------------------------------------
# a process that burns in libc (qsort) wants a table that cannot fit, whatever else runs
spawn qpid "$FIX/wl_qsort" 30
run_agent small 5 2 --unwind-entries 4096
kill "$qpid" 2>/dev/null
check_eq "pool full: exit status" "$ARC" 0
noroom=$(grep -o '[0-9]* without room' "$TMP/small.log" | tail -1 | cut -d' ' -f1)
check_ge "pool full: tables without room, counted" "${noroom:-0}" 1
total=$(samples "$TMP/small.folded" "$comm" ';hot_leaf$')
chain=$(samples "$TMP/small.folded" "$comm" "$CHAIN_RE\$")
check_ge "pool full: samples of the workload in hot_leaf after 2 s" "$total" 20
check_pct "pool full: of those, the chain up to main (the workload's own table)" "$chain" \
	"$total" 75 || show "$TMP/small.folded" "$comm"

# --- a table larger than a segment -----------------------------------------------------------
if have_fixture wl_huge_cfi; then
	timeout -k 5 60 "$SS" record -v -F 199 --cache-dir "$TMP/cache" -o "$TMP/huge.pb.gz" -- \
		timeout 4 "$FIX/wl_huge_cfi" 2>"$TMP/huge.log"
	split=$(sed -n 's/.* \([0-9]*\) tables split.*/\1/p' "$TMP/huge.log")
	check_ge "huge table: split across the pool's segments (record's count)" "${split:-0}" 1
	# record keeps no CAP_BPF: a segment made after the drop came from ss-segments
	late=$(sed -n '/capabilities after start-up/,$p' "$TMP/huge.log" |
		grep -c 'unwind-entry pool: segment [0-9]* of')
	check_ge "huge table: segments made after the privilege drop (by ss-segments)" "$late" 1
	$PY "$SS_ROOT/tests/system/pprof_stacks.py" --comm "$TMP/huge.pb.gz" >"$TMP/huge.folded"
	total=$(samples "$TMP/huge.folded" wl_huge_cfi ';huge_cfi$')
	complete=$(samples "$TMP/huge.folded" wl_huge_cfi "^wl_huge_cfi;${START_RE}main;huge_cfi\$")
	check_ge "huge table: samples in huge_cfi" "$total" 20
	check_pct "huge table: of those, complete back to _start" "$complete" "$total" 90 ||
		show "$TMP/huge.folded" wl_huge_cfi
fi
finish
