#!/usr/bin/perl
# Known chain for tests/system/test_perl.sh: main -> alpha -> beta -> gamma, gamma's loop body on
# one line. Lines are found by their "# MARK" comments. Argument: seconds of CPU time in the loop.
use strict;
use warnings;

sub gamma {
    my ($n) = @_;
    my $x = 0;
    for my $i (1 .. $n) { $x += $i * $i + 3; } # HOT
    return $x;
}

sub beta {
    my ($n) = @_;
    return gamma($n); # CALL_GAMMA
}

sub alpha {
    my ($n) = @_;
    return beta($n); # CALL_BETA
}

# (CPU time from here: compiling strict and warnings takes seconds under an emulator)
my $secs = $ARGV[0] // 1.5;
my $start = (times)[0];
my $t = 0;
while ((times)[0] - $start < $secs) {
    $t += alpha(20000); # CALL_ALPHA
}
print "$t\n";
