#!/bin/bash
# Command-line errors: bad flags exit non-zero with one clear line on stderr, quickly and
# before any sampling (no "recording" banner, no output file); a non-root run fails with a
# message about root/capabilities; the limits of -F are accepted. Signals: SIGINT, SIGTERM and
# SIGHUP end a recording that is then written; SIGPIPE never ends it (sent, or met writing to
# a reader that left); the command recorded gets SIGPIPE's default back.
source "$(dirname "$0")/lib.sh"
need_root

# bad_args DESCRIPTION PATTERN ARGS...: `record ARGS...` must fail within 2 s with exactly one
# stderr line matching PATTERN (extended regex, case-insensitive), and write no profile (an
# empty file created while checking that the output is writable is tolerated).
bad_args()
{
	local what=$1 pat=$2 out=$TMP/bad.folded rc ms start lines
	shift 2
	rm -f "$out"
	start=$(date +%s%N)
	if [[ " $* " == *" -o "* ]]; then
		SS_TIMEOUT=10 record "$TMP/bad.err" -q "$@" </dev/null
	else
		SS_TIMEOUT=10 record "$TMP/bad.err" -q -o "$out" "$@" </dev/null
	fi
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	lines=$(grep -c . "$TMP/bad.err")
	if [[ $rc -ne 0 && $rc -ne 124 && $ms -lt 2000 && $lines -eq 1 && ! -s $out ]] &&
		grep -Eiq "$pat" "$TMP/bad.err" && ! grep -qi 'recording' "$TMP/bad.err"; then
		ok "$what: exit $rc in $ms ms: $(cat "$TMP/bad.err")"
	else
		fail "$what: exit $rc in $ms ms, $lines stderr lines, output file $([[ -s $out ]] &&
			echo written || echo absent): $(head -c 600 "$TMP/bad.err")"
	fi
}

bad_args "-F 0" 'freq|-F' -F 0 -d 1
bad_args "-F 10001" 'freq|-F' -F 10001 -d 1
bad_args "-F abc" 'freq|-F' -F abc -d 1
bad_args "unknown flag" 'unknown|unrecognized|invalid' --no-such-flag -d 1
bad_args "-d 0" 'duration|-d' -d 0
bad_args "-p abc" 'pid|-p' -p abc -d 1
bad_args "unknown --format" 'format' --format xml -d 1
bad_args "-p of a pid that does not exist" 'pid|process' -p 999999999 -d 1
# the output is checked before sampling: this must not sample for 1 s and then fail
bad_args "unwritable -o /nonexistent/x.svg" '/nonexistent/x.svg' -d 1 -o /nonexistent/x.svg

# a command that cannot be run is an error too
SS_TIMEOUT=10 record "$TMP/nocmd.err" -q -o "$TMP/nocmd.folded" -- /nonexistent/cmd
rc=$?
check "-- /nonexistent/cmd: exits non-zero (got $rc: $(head -c 300 "$TMP/nocmd.err" | tr '\n' ' '))" \
	test $rc -ne 0 -a $rc -ne 124
check "-- /nonexistent/cmd: says it cannot run the command" \
	grep -Eiq 'cannot run|no such file' "$TMP/nocmd.err"

# not root: clear message, non-zero exit, no output
# (in a folder nobody can write to, so that the output file is not what fails)
mkdir "$TMP/nobody" && chown 65534:65534 "$TMP/nobody"
nobody_out=$TMP/nobody/x.pb.gz
timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups "$SS" record -d 1 \
	-o "$nobody_out" 2>"$TMP/nobody.err" </dev/null
rc=$?
check "non-root: exits non-zero (got $rc)" test $rc -ne 0 -a $rc -ne 124
check "non-root: says root or capabilities are needed" \
	grep -Eiq 'root|CAP_BPF|CAP_PERFMON|capabilit' "$TMP/nobody.err"
check "non-root: no profile written (empty file tolerated)" test ! -s "$nobody_out"
lines=$(grep -c . "$TMP/nobody.err")
check "non-root: one line on stderr, no libbpf noise (got $lines: $(head -c 300 \
	"$TMP/nobody.err" | tr '\n' '|'))" test "$lines" -eq 1

# the limits of -F work
if have_fixture wl_chain_fp; then
	for hz in 1 10000; do
		record "$TMP/hz.err" -q -F $hz -o "$TMP/hz$hz.folded" -- "$FIX/wl_chain_fp" 1
		check_eq "-F $hz: accepted" $? 0
	done
	n=$(samples "$TMP/hz10000.folded" wl_chain_fp)
	check_ge "-F 10000: samples of a 1 s burner" "$n" 500
	n=$(samples "$TMP/hz1.folded" wl_chain_fp)
	check_le "-F 1: samples of a 1 s burner" "$n" 3
fi

# --- signals ----------------------------------------------------------------------------------
# sig_record SIG: a 60 s recording ended by SIG after it started: exit status and output
sig_record()
{
	local out=$TMP/sig$1.folded err=$TMP/sig$1.err pid i
	rm -f "$out"
	"$SS" record -F 49 -d 60 -o "$out" 2>"$err" </dev/null & # the signal to record itself
	pid=$!
	_bg_pids+=($pid)
	wait_recording "$err" "$pid" || { fail "$1: the recording did not start"; return; }
	sleep 0.5 # samples of the burner
	kill -"$1" "$pid"
	for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	wait "$pid"
	SIG_RC=$?
	SIG_OUT=$(grep -c . "$out" 2>/dev/null)
}
# a burner, so that every recording has samples (an idle CPU here may take no cpu-clock
# samples; the workload caps its run at 60 s, more reads as its default of 2 s)
have_fixture wl_chain_fp && spawn burner "$FIX/wl_chain_fp" 60
for sig in INT TERM HUP; do # (SIGHUP used to kill record: 129, nothing written)
	sig_record $sig
	check_eq "SIG$sig: record exits 0" "$SIG_RC" 0
	check_ge "SIG$sig: the profile is written (stacks)" "${SIG_OUT:-0}" 1
done
# SIGPIPE: ignored; the recording goes on until SIGTERM, then is written
rm -f "$TMP/sigpipe.folded"
"$SS" record -F 49 -d 60 -o "$TMP/sigpipe.folded" 2>"$TMP/sigpipe.err" </dev/null &
pid=$!
_bg_pids+=($pid)
if wait_recording "$TMP/sigpipe.err" "$pid"; then
	kill -PIPE "$pid"
	sleep 1
	check "SIGPIPE: record still runs (it used to die: 141)" kill -0 "$pid"
	kill -TERM "$pid"
	for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	wait "$pid"
	check_eq "SIGPIPE then SIGTERM: exit status" $? 0
	check_ge "SIGPIPE then SIGTERM: the profile is written" \
		"$(grep -c . "$TMP/sigpipe.folded" 2>/dev/null)" 1
else
	fail "SIGPIPE: the recording did not start"
fi
# stderr read by a reader that left at once: the warnings and the summary go nowhere, the
# recording is written
rm -f "$TMP/epipe.folded"
timeout -k 5 60 "$SS" record -F 49 -d 1 -o "$TMP/epipe.folded" 2>&1 </dev/null | true
check_eq "stderr to a closed pipe: exit status" "${PIPESTATUS[0]}" 0
check_ge "stderr to a closed pipe: the profile is written" \
	"$(grep -c . "$TMP/epipe.folded" 2>/dev/null)" 1
[[ -n ${burner:-} ]] && kill "$burner" 2>/dev/null
# the profile on stdout to a reader that takes one byte: an error or success, never a signal
timeout -k 5 60 "$SS" record -F 99 -d 1 -o - 2>"$TMP/head.err" </dev/null | head -c1 >/dev/null
rc=${PIPESTATUS[0]}
check "record -o - | head -c1: not killed by a signal (exit $rc)" test "$rc" -lt 124
# the command recorded has SIGPIPE's default disposition (not record's)
timeout -k 5 60 "$SS" record -q -F 49 -o "$TMP/child.folded" -- bash -c \
	'yes | head -c1 >/dev/null; echo "${PIPESTATUS[0]}" >"$1"' _ "$TMP/child.rc" </dev/null 2>/dev/null
check_eq "the command's SIGPIPE: default (yes | head dies of it: 141)" \
	"$(cat "$TMP/child.rc" 2>/dev/null)" 141

finish
