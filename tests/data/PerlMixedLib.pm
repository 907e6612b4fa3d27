# A package loaded with require by perl_mixed.pl (tests/system/test_perl.sh).
package PerlMixedLib;
use strict;
use warnings;

sub work {
    my ($n) = @_;
    my $x = 0;
    for my $i (1 .. $n) { $x ^= $i * 5; } # LIB_HOT
    return $x;
}

1;
