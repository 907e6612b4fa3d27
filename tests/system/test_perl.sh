#!/bin/bash
# Perl frames interleaved with native frames (bpf/interp/perl/walk.h, src/interp/perl/), on
# Debian's Perl 5.36 (/usr/bin/perl, threaded; scripts/setup.sh installs perl for the standard
# modules the workloads use: missing under CI is a failure).
# The workloads are tests/data/perl_*.pl; their lines are marked (# HOT, # CALL_BETA...) and
# looked up here, so the checks name exact lines.
#
# pprof output is turned into "func@file:line;..." stacks by pprof_stacks.py: Perl frames are
# the names with an "@"; native frames have none.
# Checks:
#  - chain: main -> main::alpha -> main::beta -> main::gamma, each at its call line and gamma at
#    its hot line, right above the native Perl_runops_standard; complete from _start;
#  - mixed: a sub of a package loaded with require (its own file and line); an anonymous sub
#    (main::__ANON__); sort { } calling a sub: pp_sort (C) -> runops -> (sort block) -> the sub;
#    an eval string: (eval) between its caller and the sub it calls; List::Util::first (XS)
#    -> runops -> its block; a BEGIN block, run by the parser through call_sv;
#  - a Perl started after the recording began;
#  - a Perl of a version without a known layout: native frames and a marker;
#  - a Perl given another version's layout (its version byte changed): refused by the check
#    against the live process, native frames and a marker.
# Perl 5.32, 5.40 and 5.42 (Debian 11, 13, unstable) are checked in their roots by the runtime
# matrix (scripts/runtime_matrix.sh).
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
DATA=$SS_ROOT/tests/data
PERL=/usr/bin/perl

if [[ ! -x $PERL ]] || ! $PERL -MFindBin -MList::Util -e 'exit($] == 5.036 ? 0 : 1)'; then
	skip_setup "Debian's perl 5.36 (with FindBin, List::Util) missing: every Perl check"
	finish
fi

# The workloads run for a fixed CPU time (`times`) and stackscope samples CPU time, so sample
# counts do not depend on the load of the box: 499 Hz for 1.5 s of CPU is ~750 samples. Shares
# are of the samples in the function checked.

N='[^;@]*;' # one native frame
RUNOPS='Perl_runops_standard;'
C=perl_chain\\.pl
marks "$DATA/perl_chain.pl" L_HOT=HOT L_GAMMA=CALL_GAMMA L_BETA=CALL_BETA L_ALPHA=CALL_ALPHA
CHAIN="main@$C:$L_ALPHA;main::alpha@$C:$L_BETA;main::beta@$C:$L_GAMMA;main::gamma@$C:$L_HOT(;[^;@]*)*\$"

record_stacks chain $PERL "$DATA/perl_chain.pl" 1.5
f=$TMP/chain.stacks
total=$(samples "$f" "*" ";$RUNOPS")
inc=$(samples "$f" "*" ";main::gamma@$C:")
check_ge "chain: samples in main::gamma" "$inc" 300
chain=$(samples "$f" "*" ";$RUNOPS$CHAIN")
check_pct "chain: runops;main:$L_ALPHA;main::alpha:$L_BETA;main::beta:$L_GAMMA;main::gamma:$L_HOT" \
	"$chain" "$inc" 95 || show_stacks "$f"
hot=$(samples "$f" "*" ";main::gamma@$C:$L_HOT(;|\$)")
check_pct "chain: main::gamma at its hot line $L_HOT" "$hot" "$inc" 95
# (runops also runs at compile time, under perl_parse: `use` and BEGIN on a slow start)
whole=$(samples "$f" "*" "^x;_start;__libc_start_main(_impl)?;($N)*perl_(run|parse);([^;]*;)*${RUNOPS}")
check_pct "chain: stacks through runops complete from _start" "$whole" "$total" 95 ||
	show_stacks "$f"
check "chain: no Perl marker frames ($(grep -o '[0-9]* markers' "$TMP/chain.err" | head -1))" \
	grep -q "^perl .* 0 markers" "$TMP/chain.err"

# Perl -> C -> Perl, and the frames that are not named subs
M=perl_mixed\\.pl
MF=$DATA/perl_mixed.pl
record_stacks mixed $PERL "$MF" 2
f=$TMP/mixed.stacks

# mixed_case WHAT CALLER LEAF MIN CHAIN HOT: of the samples whose stack has CALLER's frame
# followed by LEAF's (at least MIN), 85% have the stack CHAIN ending in LEAF, 80% LEAF at the
# line HOT
mixed_case()
{
	local what=$1 caller=$2 leaf=$3 min=$4 re=$5 hot=$6 inc chain at
	inc=$(samples "$f" "*" ";$caller@$M:[0-9]+;(.*;)?$leaf@$M:")
	check_ge "mixed: samples in $what" "$inc" "$min"
	chain=$(samples "$f" "*" "$re;$leaf@$M:[0-9]+(;[^;@]*)*\$")
	check_pct "mixed: $what: its chain" "$chain" "$inc" 85 || show_stacks "$f" "$caller@"
	at=$(samples "$f" "*" ";$caller@$M:[0-9]+;(.*;)?$leaf@$M:$hot(;[^;@]*)*\$")
	check_pct "mixed: $what at its line $hot" "$at" "$inc" 80
}

# a package's sub, loaded with require: its own file and line
L_LIB=$(line "$DATA/PerlMixedLib.pm" LIB_HOT)
inc=$(samples "$f" "*" ";PerlMixedLib::work@")
chain=$(samples "$f" "*" "${RUNOPS}main@$M:$(line "$MF" LOOP_LIB);main::lib_phase@$M:$(line "$MF" CALL_LIB);PerlMixedLib::work@PerlMixedLib\\.pm:$L_LIB(;[^;@]*)*\$")
check_ge "mixed: samples in PerlMixedLib::work" "$inc" 60
check_pct "mixed: main -> main::lib_phase -> PerlMixedLib::work@PerlMixedLib.pm:$L_LIB" \
	"$chain" "$inc" 85 || show_stacks "$f" PerlMixedLib
# an anonymous sub
mixed_case "an anonymous sub" main::anon_phase "main::__ANON__" 40 \
	"${RUNOPS}main@$M:$(line "$MF" LOOP_ANON);main::anon_phase@$M:$(line "$MF" CALL_ANON)" \
	"$(line "$MF" ANON)"
# sort's block calling a sub: pp_sort's comparisons run in a runops of their own
L_SORT=$(line "$MF" SORT)
mixed_case "a sub called by sort's block" main::sort_phase "main::by_num" 60 \
	"${RUNOPS}main@$M:$(line "$MF" LOOP_SORT);main::sort_phase@$M:$L_SORT;Perl_pp_sort;($N)+$RUNOPS\\(sort block\\)@$M:$L_SORT" \
	"$(line "$MF" BY_NUM)"
# an eval string calling a sub: the (eval) frame between (its file, "(eval N)", is read when
# the eval still runs: not checked)
mixed_case "a sub called from an eval string" main::eval_phase "main::in_eval" 40 \
	"${RUNOPS}main@$M:$(line "$MF" LOOP_EVAL);main::eval_phase@$M:$(line "$MF" EVAL);\\(eval\\)(@\\(eval [0-9]+\\):1)?" \
	"$(line "$MF" IN_EVAL)"
# XS calling Perl: List::Util::first runs its block through MULTICALL
L_FIRST=$(line "$MF" FIRST)
inc=$(samples "$f" "*" ";main::__ANON__@$M:$L_FIRST")
chain=$(samples "$f" "*" "${RUNOPS}main@$M:$(line "$MF" LOOP_FIRST);main::first_phase@$M:$L_FIRST;($N)+${RUNOPS}main::__ANON__@$M:$L_FIRST(;[^;@]*)*\$")
check_ge "mixed: samples in first's block" "$inc" 60
check_pct "mixed: main::first_phase -> List::Util::first (XS) -> runops -> main::__ANON__:$L_FIRST" \
	"$chain" "$inc" 85 || show_stacks "$f" "__ANON__@$M:$L_FIRST"
# BEGIN: the parser runs it through call_sv. The samples whose innermost Perl frame is a BEGIN
# of the script: not those of its `use` lines (BEGIN blocks too, loading modules under them:
# more of them on a cold start, named now that they are read before Perl frees them).
L_BEGIN=$(line "$MF" BEGIN_HOT)
inc=$(samples "$f" "*" ";BEGIN@$M:[0-9]+(;[^;@]*)*\$")
chain=$(samples "$f" "*" "perl_parse;($N)*Perl_call_list;Perl_call_sv;${RUNOPS}BEGIN@$M:$L_BEGIN(;[^;@]*)*\$")
check_ge "mixed: samples in the BEGIN block" "$inc" 40
check_pct "mixed: perl_parse -> call_list -> call_sv -> runops -> BEGIN:$L_BEGIN" "$chain" "$inc" 90 ||
	show_stacks "$f" BEGIN
# A context read while Perl pushes or pops it may not check out: a marker, at most rarely
frames=$(grep -o '^perl .*frames [0-9]* symbolized' "$TMP/mixed.err" | grep -o '[0-9]* symbolized' | cut -d' ' -f1)
markers=$(grep -o '^perl .* [0-9]* markers' "$TMP/mixed.err" | grep -o '[0-9]* markers' | cut -d' ' -f1)
check_le "mixed: Perl marker frames, per thousand frames" "$((${markers:-1000} * 1000 / (${frames:-0} + 1)))" 2

# A Perl exec'd 0.5 s after the recording began
record_stacks late /bin/sh -c "sleep 0.5; exec $PERL $DATA/perl_chain.pl 1"
f=$TMP/late.stacks
inc=$(samples "$f" "*" ";main::gamma@$C:")
chain=$(samples "$f" "*" ";$RUNOPS$CHAIN")
check_ge "late process: samples in main::gamma" "$inc" 200
check_pct "late process: chain with exact lines" "$chain" "$inc" 95 || show_stacks "$f"

# Debian's binary with its PL_version byte changed (the interpreter is the same); the copy is
# a new file, whose first samples, before stackscope has read it, have no marker.
# patched_perl VERSION FILE
patched_perl()
{
	/usr/bin/python3 - "$PERL" "$2" "$1" <<'EOF'
import subprocess, sys
src, dst, version = sys.argv[1], sys.argv[2], int(sys.argv[3])
syms = subprocess.run(["readelf", "-W", "--dyn-syms", src], capture_output=True, text=True).stdout
addr = next(int(l.split()[1], 16) for l in syms.splitlines() if l.split()[-1:] == ["PL_version"])
phdrs = subprocess.run(["readelf", "-W", "-l", src], capture_output=True, text=True).stdout
for l in phdrs.splitlines():
    w = l.split()
    if w[:1] == ["LOAD"]:
        off, vaddr, filesz = int(w[1], 16), int(w[2], 16), int(w[4], 16)
        if vaddr <= addr < vaddr + filesz:
            break
b = bytearray(open(src, "rb").read())
pos = addr - vaddr + off
assert b[pos] == 36, b[pos]
b[pos] = version
open(dst, "wb").write(b)
EOF
	chmod +x "$2"
}

# A Perl whose layout is not known (5.35): native frames and a visible marker (stackscope must
# not walk what it was not told the layout of).
patched_perl 35 "$TMP/perl5.35"
record_stacks unsupported "$TMP/perl5.35" "$DATA/perl_chain.pl" 1
f=$TMP/unsupported.stacks
inc=$(samples "$f" "*" ";$RUNOPS")
chain=$(samples "$f" "*" ";${RUNOPS}\\[perl: unsupported version\\](;[^;@]*)*\$")
check_ge "unsupported version: samples in runops" "$inc" 200
check_pct "unsupported version: runops;[perl: unsupported version], no Perl frame" "$chain" "$inc" 90 ||
	show_stacks "$f"

# Another version's layout on this interpreter: the check against the live process refuses it,
# native frames and a marker. 5.40's differs from 5.36's only by its op numbers (PL_op_name
# names other ops there), 5.32's by the interpreter's offsets (PL_defstash not the main stash).
# Until the check has run (the agent's first ticks after the exec) the walk uses the table as
# it is: with 5.32's, "[perl: context unreadable]" markers (~5 % of a 1 s run).
for v in 40 32; do
	why="main stash"
	[[ $v == 40 ]] && why="op numbers"
	patched_perl $v "$TMP/perl5.$v"
	record_stacks wrong$v "$TMP/perl5.$v" "$DATA/perl_chain.pl" 1
	f=$TMP/wrong$v.stacks
	inc=$(samples "$f" "*" ";$RUNOPS")
	chain=$(samples "$f" "*" ";${RUNOPS}\\[perl: layout check failed\\](;[^;@]*)*\$")
	check_ge "5.36 taken for 5.$v: samples in runops" "$inc" 200
	check_pct "5.36 taken for 5.$v: runops;[perl: layout check failed], no Perl frame" \
		"$chain" "$inc" 85 || show_stacks "$f"
	check "5.36 taken for 5.$v: rejected for its $why" \
		grep -q "layout check failed ($why)" "$TMP/wrong$v.err"
done

finish
