#!/bin/bash
# PHP frames with opcache's JIT on (bpf/interp/php/walk.h php_code_step, src/interp/php/php_jit.c)
# on Debian's PHP 8.2 (or with PHP_SUITE=trixie|sid the PHP 8.4 of that runtime-matrix root, its
# JIT built on the IR framework; php_lib.sh): JIT code runs on the frame of the execute_ex that
# dispatched to it and is placed there; the "JIT frames" counter of the record summary says the
# JIT ran. Lines: the JIT saves a frame's opline before an internal call (as the VM does), so a
# C function comes with the line that called it; a sample in JIT code itself, or in a helper it
# called without a frame (efree), has no line for its innermost PHP frame: missing, never
# another line.
# Checks:
#  - chain: tests/data/php_jit.php with opcache.jit=tracing and =function: {main} ->
#    Worker::run -> alpha -> beta -> gamma at their call lines, gamma's str_repeat and strrev
#    (two lines) each under its own line;
#  - mixed: the include -> sort_loop -> usort (C) -> execute_ex -> Sorter::cmp and array_map
#    (C) -> execute_ex -> {closure} chains with both levels JIT'd (a JIT frame below C below
#    a JIT frame);
#  - php-fpm with the JIT: the workers' handler chain at its call lines (the workers, forked
#    while recording, are walked with the master's entries: its JIT buffer too).
source "$(dirname "$0")/lib.sh"
need_root
source "$(dirname "$0")/php_lib.sh"
need_php
if [[ ${PHPV%%.*} -lt 8 ]]; then
	skip "PHP $PHPV has no JIT (PHP 8 on): every JIT check"
	finish
fi

JIT_ON=(-d opcache.jit_buffer_size=32M)

# jit_counters NAME: "placed lost" from the record summary's php line
jit_counters()
{
	local jit lost
	jit=$(grep -o 'JIT frames [0-9]*' "$TMP/$1.err" | head -1 | grep -o '[0-9]*$')
	lost=$(grep -o 'JIT frames not placed [0-9]*' "$TMP/$1.err" | grep -o '[0-9]*$')
	echo "${jit:-0} ${lost:-0}"
}

# check_jit NAME MIN: the JIT ran (at least MIN pcs in JIT code placed) and at most 5 % of
# the pcs in JIT code were not placed (in code that moved sp other than a trace exit: none
# seen; trace exits, 1-3 in 200 in FPM workers compiling traces, are placed)
check_jit()
{
	local jit lost
	read -r jit lost < <(jit_counters "$1")
	check_ge "$1: samples through JIT code placed on execute_ex (the JIT ran)" "$jit" "$2"
	check_pct "$1: JIT frames placed ($lost not)" "$((jit - lost))" "$jit" 95
}

# test_jit NAME MODE: the known chain with opcache.jit=MODE
J=php_jit\\.php
test_jit()
{
	local name=$1 mode=$2 f inc chain lined hot whole total
	local l_hot l_hot2 l_setup l_gamma l_beta l_alpha l_run right

	marks "$DATA/php_jit.php" l_hot=HOT l_hot2=HOT2 l_setup=SETUP l_gamma=CALL_GAMMA \
		l_beta=CALL_BETA l_alpha=CALL_ALPHA l_run=CALL_RUN
	record_stacks "$name" "${PHP[@]}" -d opcache.enable_cli=1 -d opcache.jit="$mode" \
		"${JIT_ON[@]}" "$PDATA/php_jit.php" $SECS
	f=$TMP/$name.stacks
	check_jit "$name" 100
	total=$(samples "$f" "*" ";execute_ex;")
	inc=$(samples "$f" "*" ";gamma@$J")
	check_ge "$name: samples in gamma" "$inc" 100
	chain=$(samples "$f" "*" \
		";execute_ex;\\{main\\}@$J:$l_run;Worker::run@$J:$l_alpha;alpha@$J:$l_beta;beta@$J:$l_gamma;gamma@$J(:[0-9]+)?(;[^;@]*)*\$")
	check_pct "$name: execute_ex;{main}:$l_run;Worker::run:$l_alpha;alpha:$l_beta;beta:$l_gamma;gamma" \
		"$chain" "$inc" 90 || show_stacks "$f"
	# each C function under gamma's line that called it (the JIT saves the opline before
	# an internal call, as the VM does); none under another line
	hot=$(samples "$f" "*" ";gamma@$J:[0-9]+;str_repeat(;|\$)")
	right=$(samples "$f" "*" ";gamma@$J:($l_hot|$l_setup);str_repeat(;|\$)")
	check_ge "$name: samples in str_repeat" "$hot" 20
	check_pct "$name: gamma at $l_hot (or $l_setup) above str_repeat" "$right" "$hot" 99
	hot=$(samples "$f" "*" ";gamma@$J:[0-9]+;strrev(;|\$)")
	right=$(samples "$f" "*" ";gamma@$J:$l_hot2;strrev(;|\$)")
	check_ge "$name: samples in strrev" "$hot" 20
	check_pct "$name: gamma at $l_hot2 above strrev" "$right" "$hot" 99
	# the samples in JIT code itself, or in a helper it called without a frame, have no line
	lined=$(samples "$f" "*" ";gamma@$J:[0-9]+(;|\$)")
	check_pct "$name: gamma's samples with a line (calls into C)" "$lined" "$inc" 60
	whole=$(samples "$f" "*" "^x;_start;__libc_start_main(_impl)?;($N)*execute_ex;\\{main\\}@$J:")
	check_pct "$name: stacks through execute_ex complete from _start" "$whole" "$total" 95
}

test_jit jit-tracing tracing
test_jit jit-function function

# PHP -> C -> PHP with both PHP levels JIT'd
marks "$DATA/php_mixed.php" L_USORT=USORT L_MAP=MAP L_INCLUDE=INCLUDE
L_CALL_SORT=$(line "$DATA/php_mixed_inc.php" CALL_SORT)
M=php_mixed\\.php
record_stacks mixed-jit "${PHP[@]}" -d opcache.enable_cli=1 -d opcache.jit=tracing "${JIT_ON[@]}" \
	"$PDATA/php_mixed.php" $SECS
f=$TMP/mixed-jit.stacks
check_jit mixed-jit 30
ROOT="execute_ex;\\{main\\}@$M:$L_INCLUDE;\\{include\\}@php_mixed_inc\\.php:$L_CALL_SORT;sort_loop@$M"
inc=$(samples "$f" "*" ";Sorter::cmp@$M")
chain=$(samples "$f" "*" "$ROOT:$L_USORT;usort;($N)+execute_ex;Sorter::cmp@$M(:[0-9]+)?(;[^;@]*)*\$")
check_ge "mixed-jit: samples in Sorter::cmp" "$inc" 10
check_pct "mixed-jit: sort_loop:$L_USORT -> usort -> C -> execute_ex -> Sorter::cmp" "$chain" "$inc" 85 ||
	show_stacks "$f"
inc=$(samples "$f" "*" ";$CLOSURE@$M")
chain=$(samples "$f" "*" "$ROOT:$L_MAP;array_map;($N)+execute_ex;$CLOSURE@$M(:[0-9]+)?(;[^;@]*)*\$")
check_ge "mixed-jit: samples in the closure" "$inc" 15
check_pct "mixed-jit: sort_loop:$L_MAP -> array_map -> C -> execute_ex -> {closure}" "$chain" "$inc" 85 ||
	show_stacks "$f"

# php-fpm with the JIT (Debian's FPM has opcache on)
need_php fpm
fpm_marks
fpm_record fpm-jit php_fpm.php 3 -d opcache.jit=tracing "${JIT_ON[@]}"
f=$TMP/fpm-jit.stacks
check_jit fpm-jit 30
inc=$(samples "$f" "*" ";fpm_leaf@$F")
chain=$(samples "$f" "*" \
	"zend_execute;execute_ex;\\{main\\}@$F:$L_FHANDLE;fpm_handle@$F:$L_FRENDER;fpm_render@$F:$L_FLEAF;fpm_leaf@$F(:$L_FHOT)?(;[^;@]*)*\$")
check_ge "fpm-jit: worker samples in fpm_leaf" "$inc" 40
check_pct "fpm-jit: workers' {main}:$L_FHANDLE -> fpm_handle:$L_FRENDER -> fpm_render:$L_FLEAF -> fpm_leaf" \
	"$chain" "$inc" 90 || show_stacks "$f"

finish
