#!/bin/bash
# Perl frames benchmark (issue 17): Debian's Perl 5.36 recorded at 499 Hz.
#  1. completeness: the share of samples whose Perl chain is exactly main -> down x DEPTH with
#     every call line and the leaf at its hot line (bench/perl_deep.pl), DEPTH 30, for a 1 s
#     run and for 0.15 s runs (a process whose start-up is a larger share);
#  2. BPF time per sample (the sampler's own clock, `bpf time` of the record summary) with 2,
#     31 and 201 Perl frames on the same workload: the cost of the Perl walk per frame; next
#     to a native stack of ~300 frames (build/fixtures/wl_recurse, `make fixtures`);
#  3. the peer: Devel::NYTProf (Debian libdevel-nytprof-perl), the profiler Perl users reach
#     for; it must start the program under it, so it is compared on what that costs: the CPU
#     time of a fixed amount of work (DEPTH 30, ROUNDS loop rounds) alone, under NYTProf, and
#     while stackscope records it at 499 Hz.
# Every measurement is taken ROUNDS times in alternation; medians.
# Usage: sudo bench/perl.sh [ROUNDS]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
HZ=499
WORK=150 # loop rounds of the fixed-work runs (~0.15 s of CPU alone, ~9 s under NYTProf)
PERL=/usr/bin/perl
bench_start perlbench
need_program "$PERL" "scripts/setup.sh installs perl"

deep_workload perl_deep.pl

# complete DEPTH < stacks: "samples complete in_runops" over pprof_stacks.py lines (in_runops:
# samples with Perl_runops_standard, i.e. not in Perl's start-up, compilation or exit)
complete()
{
	deep_complete Perl_runops_standard "$(deep_chain "main@perl_deep.pl:$L_MAIN" \
		"main::down@perl_deep.pl:$L_REC" "$1" "main::down@perl_deep.pl:$L_HOT")"
}

# run NAME DEPTH SECS: one recording; prints "samples complete in_runops bpf_ns"
run() { deep_run "$@" "$PERL"; }

# cpu COMMAND...: the CPU seconds the workload reports for itself (its last stderr line)
cpu() { "$@" 2>&1 >/dev/null | awk '/^cpu / { c = $2 } END { print c + 0 }'; }

HAVE_NYTPROF=0
$PERL -MDevel::NYTProf::Core -e 1 2>/dev/null && HAVE_NYTPROF=1
declare -a c30 v30 ns30 ns1 ns200 nsnat cshort vshort calone cnyt css
for ((r = 0; r < ROUNDS; r++)); do
	deep_round
	calone+=("$(cpu $PERL "$WL" 30 0 $WORK)")
	css+=("$(cpu ./stackscope record -F $HZ -o "$out/fixed.pb.gz" -- $PERL "$WL" 30 0 $WORK)")
	if ((HAVE_NYTPROF)); then
		cnyt+=("$(cd "$out" && NYTPROF=file=$out/nytprof.out cpu $PERL -d:NYTProf "$WL" 30 0 $WORK)")
	fi
done
ver=$($PERL -e 'printf "%vd", $^V')
echo "method: $(date -u +%F' '%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds, medians; Perl $ver"
echo "| Perl | complete (1 s): all samples / in runops | 0.15 s processes: all / in runops | BPF µs/sample: 2 / 31 / 201 Perl frames | BPF µs/sample: 305 native frames |"
echo "|---|---|---|---|---|"
deep_row "$ver"
echo
echo "| fixed work (DEPTH 30, $WORK rounds) | CPU s of the Perl process | ratio |"
echo "|---|---|---|"
a=$(echo "${calone[*]}" | median)
printf '| alone | %s | 1.00 |\n' "$a"
s=$(echo "${css[*]}" | median)
printf '| while stackscope records at %d Hz | %s | %.2f |\n' $HZ "$s" "$(echo "$s / $a" | bc -l)"
if ((HAVE_NYTPROF)); then
	n=$(echo "${cnyt[*]}" | median)
	printf '| under Devel::NYTProf %s (restarted under it) | %s | %.2f |\n' \
		"$($PERL -MDevel::NYTProf::Core -e 'print $Devel::NYTProf::Core::VERSION')" "$n" "$(echo "$n / $a" | bc -l)"
else
	echo "| under Devel::NYTProf | - (libdevel-nytprof-perl missing) | - |"
fi
