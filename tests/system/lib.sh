#!/bin/bash
# Shared helpers of the system tests (tests/system/test_*.sh), sourced first by each one.
# They run as root against real eBPF and the workloads of tests/data/workloads.mk, and
# assert on the frames that come out. Each script ends with `finish`, which prints the
# line tests/run_system.sh reads: "N passed, M failed, K skipped".
#
# Folded files are "comm;root;...;leaf count"; the helpers below sum sample counts over
# the lines of one comm whose stack matches an extended regex (awk ERE, not PCRE).

set -u

SS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SS=${STACKSCOPE:-$SS_ROOT/stackscope}
BUILD=${BUILD:-build}
[[ $BUILD = /* ]] || BUILD=$SS_ROOT/$BUILD
FIX=$BUILD/fixtures
SS_TIMEOUT=${SS_TIMEOUT:-60}
# The Go build cache of the Go programs the tests build themselves (test_go.sh's toolchains,
# test_hostile_jit.sh's generated programs): kept across runs and clones like the runtime
# matrix's roots, as Go's cache is safe to share (keyed by toolchain and inputs, used at once
# by several builds); a cold one cost test_hostile_jit 63 s at load 7, a warm one 0.4 s
GO_BUILD_CACHE=${GO_BUILD_CACHE:-/var/cache/stackscope/go-build}

TMP=$(mktemp -d /tmp/stackscope-systest.XXXXXX)
chmod 755 "$TMP"
_passed=0 _failed=0 _skipped=0
_bg_pids=()
_bpffs=() # private bpffs mounts (bpffs_mount), unmounted at exit

cleanup()
{
	local p
	for p in "${_bg_pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for p in "${_bpffs[@]}"; do
		umount "$p" 2>/dev/null
	done
	[[ -n ${KEEP_TMP:-} ]] || rm -rf "$TMP"
}
trap cleanup EXIT

# ok/fail/skip count a check; fail returns 1, so a check can be followed by "|| show ..."
ok()   { _passed=$((_passed + 1)); echo "  ok   $*"; }
fail() { _failed=$((_failed + 1)); echo "  FAIL $*"; return 1; }
skip() { _skipped=$((_skipped + 1)); echo "  SKIP $*"; }

# in_ci: true under CI (CI=true, set by .ci/run), where scripts/setup.sh has run.
in_ci() { [[ ${CI:-} == true ]]; }

# skip_setup REASON: for something scripts/setup.sh installs (go, Debian's python3, debuginfod,
# libclang-rt-14-dev...): a skip on a developer's machine, a failure under CI. Plain `skip` is
# for what setup does not provide (pyenv Pythons, rustc, ld.lld, kernel features).
skip_setup()
{
	if in_ci; then
		fail "$* (scripts/setup.sh installs it: under CI its absence is a failure)"
	else
		skip "$* (scripts/setup.sh installs it)"
	fi
}

# check DESCRIPTION COMMAND...: passes when COMMAND succeeds.
check()
{
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}

# check_ge DESCRIPTION ACTUAL MINIMUM (integers)
check_ge()
{
	if [[ $2 -ge $3 ]]; then ok "$1 ($2 >= $3)"; else fail "$1 ($2 < $3)"; fi
}

# check_le DESCRIPTION ACTUAL MAXIMUM (integers)
check_le()
{
	if [[ $2 -le $3 ]]; then ok "$1 ($2 <= $3)"; else fail "$1 ($2 > $3)"; fi
}

check_eq()
{
	if [[ "$2" == "$3" ]]; then ok "$1 ($2)"; else fail "$1 (got '$2', want '$3')"; fi
}

# check_pct DESCRIPTION PART WHOLE MIN_PERCENT: PART/WHOLE >= MIN_PERCENT, and WHOLE > 0.
check_pct()
{
	local what=$1 part=$2 whole=$3 min=$4
	if [[ $whole -le 0 ]]; then
		fail "$what (no samples at all)"
	elif [[ $((part * 100)) -ge $((whole * min)) ]]; then
		ok "$what ($part/$whole = $((part * 100 / whole))% >= $min%)"
	else
		fail "$what ($part/$whole = $((part * 100 / whole))% < $min%)"
	fi
}

# have_fixture NAME: the fixture exists, else a failure (a missing build is not a pass).
have_fixture()
{
	if [[ -x $FIX/$1 ]]; then return 0; fi
	fail "fixture $FIX/$1 missing: run 'make fixtures'"
	return 1
}

# record ERRFILE ARGS...: runs `stackscope record ARGS...` under a timeout; stderr goes to
# ERRFILE. Returns stackscope's exit status (124 on timeout).
record()
{
	local err=$1
	shift
	timeout -k 5 "$SS_TIMEOUT" "$SS" record "$@" 2>"$err"
}

# wait_log ERRFILE PID TEXT: waits (60 s at most: a loaded box builds tables slowly) until the
# background PID's log ERRFILE says TEXT. 1 if it never does, or PID dies first.
wait_log()
{
	local end=$((SECONDS + 60))
	until grep -q "$3" "$1" 2>/dev/null; do
		kill -0 "$2" 2>/dev/null || return 1
		[[ $SECONDS -ge $end ]] && return 1
		sleep 0.1
	done
}

# wait_recording ERRFILE PID: a background `record` (started without -q) is recording.
wait_recording()
{
	wait_log "$1" "$2" "recording"
}

# wait_agent ERRFILE PID: a background `agent` is running.
wait_agent()
{
	wait_log "$1" "$2" "agent running"
}

# bpffs_mount DIR: a private bpffs mounted at DIR (made), unmounted at exit; false after a
# failed check when it cannot be mounted.
bpffs_mount()
{
	mkdir -p "$1"
	if ! mount -t bpf none "$1"; then
		fail "cannot mount a bpffs at $1"
		return 1
	fi
	_bpffs+=("$1")
}

# otlp_receiver_start DIR: tests/system/otlp_receiver.py in the background, saving the requests
# it accepts in DIR (made), for 120 s at most; its port in RPORT. False after a failed check
# when it does not start.
otlp_receiver_start()
{
	local i
	mkdir -p "$1"
	/usr/bin/python3 "$SS_ROOT/tests/system/otlp_receiver.py" --dir "$1" --faults "" --port 0 \
		--lifetime 120 >"$1.port" 2>"$1.err" &
	_bg_pids+=($!)
	RPORT=
	for ((i = 0; i < 50; i++)); do
		RPORT=$(head -1 "$1.port" 2>/dev/null)
		[[ -n $RPORT ]] && return 0
		sleep 0.1
	done
	fail "the receiver did not start: $(tail -3 "$1.err")"
	return 1
}

# otlp_first_request DIR: waits (30 s at most) until the receiver saving in DIR has accepted
# its first request: the agent exports (its first interval can take seconds on a loaded box).
otlp_first_request()
{
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q '"n": 1,' "$1/requests.jsonl" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# start_probe_agent STORE ERR: the hostile-process tests' agent (99 Hz, 2 s intervals, no table
# cache, its store STORE, its stderr ERR) in the background, its pid in APID once it runs; false
# after a failed check if it does not start.
start_probe_agent()
{
	"$SS" agent -F 99 --interval 2 --cache-dir "" --store "$1" 2>"$2" &
	APID=$!
	_bg_pids+=($APID)
	wait_agent "$2" "$APID" && return 0
	fail "the agent did not start: $(tail -3 "$2")"
	return 1
}

# spawn VAR COMMAND...: starts COMMAND in the background, stores its pid in VAR and kills it
# at exit if it is still running.
spawn()
{
	local var=$1
	shift
	"$@" >/dev/null 2>&1 &
	_bg_pids+=($!)
	printf -v "$var" '%s' $!
}

# samples FILE COMM [ERE]: sum of the counts of COMM's stacks (those matching ERE, if given).
# COMM "*" means every comm.
samples()
{
	awk -v comm="$2" -v re="${3:-}" '
		{
			n = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
			c = stack; sub(/;.*/, "", c)
			if (comm != "*" && c != comm) next
			if (re != "" && stack !~ re) next
			sum += n
		}
		END { printf "%.0f\n", sum }' "$1"
}

# dominant FILE COMM: COMM's stack (without the count) with the most samples.
dominant()
{
	awk -v comm="$2" '
		{
			n = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
			c = stack; sub(/;.*/, "", c)
			if (c == comm && n > best) { best = n; top = stack }
		}
		END { print top }' "$1"
}

# comms FILE: the distinct comms in a folded file, one a line.
comms()
{
	awk '{ c = $0; sub(/;.*/, "", c); sub(/ [0-9]+$/, "", c); print c }' "$1" | sort -u
}

# ---- a runtime's workload: its marked lines, and recordings read back with their lines ----

# STACKS FILE: the stacks of a pprof file (pprof_stacks.py) as folded lines, root first,
# "func@file:line;... count": an interpreter's frames are the names with an "@", native frames
# have none. A test may give it options (test_go.sh: --native-lines).
STACKS="/usr/bin/python3 $SS_ROOT/tests/system/pprof_stacks.py"

# line FILE MARK: the number of the line of FILE (a workload source) that ends in the comment
# "// MARK" or "# MARK"; where several lines do, their numbers joined by "|" (an alternation).
line()
{
	grep -nE "(//|#) $2\$" "$1" | cut -d: -f1 | paste -sd'|'
}

# marks FILE VAR=MARK...: each VAR set to `line FILE MARK`
marks()
{
	local _marks_file=$1 _marks_pair
	shift
	for _marks_pair in "$@"; do
		printf -v "${_marks_pair%%=*}" '%s' "$(line "$_marks_file" "${_marks_pair#*=}")"
	done
}

# record_stacks NAME COMMAND ARGS...: records COMMAND ARGS at $HZ Hz into $TMP/NAME.pb.gz
# (stackscope's stderr in $TMP/NAME.err, the command's stdout in $TMP/NAME.out), checks the
# exit status, and writes the stacks ($STACKS) to $TMP/NAME.stacks, each behind a root "x;"
# where a folded file has the comm, for samples and dominant with comm "*". RECORD_OPTS: more
# options of record (-q); STACKS_COMM=1: the sample's comm as that root instead of "x".
record_stacks()
{
	local name=$1
	shift
	# shellcheck disable=SC2086 # RECORD_OPTS: options, split into words
	record "$TMP/$name.err" -F $HZ ${RECORD_OPTS:-} -o "$TMP/$name.pb.gz" -- "$@" >"$TMP/$name.out"
	check_eq "$name: exit status" $? 0
	if [[ ${STACKS_COMM:-} == 1 ]]; then
		$STACKS --comm "$TMP/$name.pb.gz" >"$TMP/$name.stacks"
	else
		$STACKS "$TMP/$name.pb.gz" | sed 's/^/x;/' >"$TMP/$name.stacks"
	fi
}

# show_stacks FILE [ERE]: the top stacks of a stacks file (those matching ERE), for the log of
# a failing test
show_stacks()
{
	grep -E "${2:-.}" "$1" | sort -t' ' -k2 -rn | head -4 | cut -c1-700 | sed 's/^/        /'
}

# check_summary ERRFILE RUNTIME MINIMUM WHAT...: record's summary line for RUNTIME in ERRFILE
# ("jvm ...", "v8 ...") counts at least MINIMUM of each WHAT ("interpreted frames"...): one
# check "eBPF: WHAT" each, the line shown when one fails
check_summary()
{
	local err=$1 rt=$2 min=$3 summary what n
	shift 3
	summary=$(grep "^$rt " "$err")
	for what in "$@"; do
		n=$(sed -n "s/.*$what \\([0-9]*\\).*/\\1/p" <<<"$summary")
		check_ge "eBPF: $what" "${n:-0}" "$min" || echo "        $summary"
	done
}

# The root of a stack unwound all the way: _start, then __libc_start_main, then (libc
# without .symtab) an unsymbolized __libc_start_call_main; anything that starts with a
# pseudo-frame like "[unwind: ...]" is not complete.
START_RE='_start;__libc_start_main(_impl)?;([^;]*;)?'

# show FILE COMM: prints COMM's top stacks, for the log of a failing test.
show()
{
	awk -v comm="$2" '{ c = $0; sub(/;.*/, "", c); if (c == comm) print $NF, $0 }' "$1" |
		sort -rn | head -5 | cut -c1-400 | sed 's/^/        /'
}

need_root()
{
	if [[ $(id -u) -ne 0 ]]; then
		echo "system tests need root (eBPF)" >&2
		fail "not running as root"
		finish
	fi
	if [[ ! -x $SS ]]; then
		fail "$SS not built: run 'make'"
		finish
	fi
}

finish()
{
	echo "$_passed passed, $_failed failed, $_skipped skipped"
	[[ $_failed -eq 0 ]]
	exit
}
