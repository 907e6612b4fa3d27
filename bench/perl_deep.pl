#!/usr/bin/perl
# bench/perl.sh's workload: main -> down() DEPTH frames deep -> a one-line hot loop, for SECS
# seconds of CPU time, or ROUNDS rounds of the loop when given (a fixed amount of work: the
# overhead comparison). Lines are found by their "# MARK" comments. Arguments: DEPTH SECS
# [ROUNDS].
use strict;
use warnings;

sub down {
    my ($n, $secs, $rounds) = @_;
    return down($n - 1, $secs, $rounds) if $n > 1; # RECURSE
    my $x = 0;
    while ($rounds ? $rounds-- > 0 : (times)[0] < $secs) {
        for my $i (1 .. 20000) { $x += $i * $i + 3; } # HOT
    }
    return $x;
}

print down($ARGV[0] // 30, $ARGV[1] // 1, $ARGV[2] // 0), "\n"; # CALL_MAIN
my @t = times;
printf STDERR "cpu %.3f\n", $t[0] + $t[1];
