# A hostile Perl process (issue 39: the runtime walkers against what a process makes of its own
# memory), made of real subs: N subs, each compiled from its own string eval (so each
# statement's file is "(eval NNN)", a name the profiler must not keep: an eval's statements are
# freed and their addresses reused) and named with 3,000 bytes (Sub::Util), and HUGE subs whose
# bodies are 2,000 statements of dead code under a `#line` directive naming a 3,000-byte file
# and lines past 65,535 (eBPF gives the reader 16 bits of a line). The main loop calls
# DEPTH-deep chains through them, each chain starting far from the last (a stride through all
# of them), so that every sub is sampled and no cache of a few thousand entries holds the
# frames of a second. It prints "ready" once its subs exist, then runs for SECONDS and burns
# CPU at the bottom of each chain.
# Usage: perl pl_hostile.pl N HUGE DEPTH SECONDS
# (N 8 HUGE 0: the benign peer, the same depth through a few ordinary subs)
use strict;
use warnings;
use Sub::Util qw(set_subname);
use Time::HiRes qw(time);

my ($n, $huge, $depth, $seconds) = @ARGV;
our @subs;

sub burn {
	my $x = 0;
	$x += $_ for 1 .. 20000;
	return $x;
}

my $pad = "x" x 3000;
for my $i (0 .. $n - 1) {
	my $name = "main::s${i}_$pad";
	my $code = eval "sub { my (\$k, \$d) = \@_; "
	    . "return \$d > 0 ? \$subs[(\$k + \$d) % \@subs]->(\$k, \$d - 1) : burn(); }"
	    or die $@;
	push @subs, set_subname($name, $code);
}
my $dead = join '', map { "\$a = \$a + $_;\n" } 1 .. 2000;
for my $i (0 .. $huge - 1) {
	my $code = eval "#line 70000 \"/hostile/$i/$pad.pl\"\n"
	    . "sub { my (\$k, \$d) = \@_; if (\$k < 0) { my \$a = 0;\n$dead }\n"
	    . "return \$d > 0 ? \$subs[(\$k + \$d) % \@subs]->(\$k, \$d - 1) : burn(); }"
	    or die $@;
	push @subs, set_subname("main::h${i}_$pad", $code);
}
srand(39);
for (my $i = @subs - 1; $i > 0; $i--) {
	my $j = int(rand($i + 1));
	@subs[$i, $j] = @subs[$j, $i];
}

$| = 1;
print "ready\n";
no warnings 'recursion';
my $stop = time() + $seconds;
my $k = 0;
while (time() < $stop) {
	$subs[$k * 487 % @subs]->($k * 487, $depth);
	$k++;
}
print "chains $k\n";
