#!/usr/bin/perl
# Perl -> C -> Perl and the frames that are not named subs, for tests/system/test_perl.sh: a sub
# of a package loaded with require, an anonymous sub, a sort block calling a sub, eval strings,
# List::Util's first (XS calling a block), a BEGIN block. Lines are found by their "# MARK" comments.
# Argument: seconds of CPU time.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use List::Util qw(first);

BEGIN {
    my $x = 0;
    while ((times)[0] < 0.2) { $x++ } # BEGIN_HOT
}

sub by_num {
    my ($x, $y) = @_;
    my $k = 0;
    $k += $_ for 1 .. 40; # BY_NUM
    return $x <=> $y;
}

sub sort_phase {
    my @v = map { ($_ * 7919) % 1000 } 1 .. 300;
    my @s = sort { by_num($a, $b) } @v; # SORT
    return $s[0];
}

my $anon = sub {
    my $x = 0;
    $x += $_ * 3 for 1 .. 20000; # ANON
    return $x;
};

sub anon_phase {
    return $anon->(); # CALL_ANON
}

sub in_eval {
    my $x = 0;
    $x += $_ for 1 .. 20000; # IN_EVAL
    return $x;
}

sub eval_phase {
    my $r = eval 'my $t = 0; $t += in_eval() for 1 .. 2; $t'; # EVAL
    die $@ if $@;
    return $r;
}

sub first_phase {
    return first { my $k = $_; $k *= 3 for 1 .. 30; $_ > 2500 } 1 .. 3000; # FIRST
}

sub lib_phase {
    require PerlMixedLib; # REQUIRE
    return PerlMixedLib::work(20000); # CALL_LIB
}

my $secs = $ARGV[0] // 2;
my $t = 0;
while ((times)[0] < $secs) {
    $t += sort_phase(); # LOOP_SORT
    $t += anon_phase(); # LOOP_ANON
    $t += eval_phase(); # LOOP_EVAL
    $t += first_phase(); # LOOP_FIRST
    $t += lib_phase(); # LOOP_LIB
}
print "$t\n";
