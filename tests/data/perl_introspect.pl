#!/usr/bin/perl
# tests/unit/test_perl.c's live Perl: main -> main::alpha -> main::beta -> main::__ANON__ ->
# Klass::wait_line -> <STDIN>, waiting on stdin once it has printed "R". Lines are found by
# their "# MARK" comments.
use strict;
use warnings;

package Klass;

sub wait_line {
    $| = 1;
    print "R\n";
    return scalar <STDIN>; # WAIT
}

package main;

sub beta {
    my $f = sub {
        return Klass::wait_line(); # CALL_WAIT
    };
    return $f->(); # CALL_CLOSURE
}

sub alpha {
    return beta(); # CALL_BETA
}

alpha(); # CALL_ALPHA
