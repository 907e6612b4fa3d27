#!/bin/bash
# Command-line errors: bad flags exit non-zero with one clear line on stderr, quickly and
# before any sampling (no "recording" banner, no output file); a non-root run fails with a
# message about root/capabilities; the limits of -F are accepted.
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

finish
