#!/bin/bash
# PHP frames interleaved with native frames (bpf/interp/php_walk.h, src/interp/php/), on
# Debian's PHP 8.2 (php8.2-cli, php8.2-fpm; scripts/setup.sh installs them: missing under CI is
# a failure). The workloads are tests/data/php_*.php; their lines are marked (// HOT,
# // CALL_ALPHA...) and looked up here, so the checks name exact lines.
#
# pprof output is turned into "func@file:line;..." stacks by pprof_stacks.py: PHP user frames
# are the names with an "@"; native frames and PHP internal functions (usort) have none.
# Checks:
#  - chain: {main} -> Worker::run -> alpha -> beta -> gamma, each at its call line and gamma at
#    its hot line (the VM's opline register), right above the native execute_ex; complete
#    from _start; the same with opcache enabled in the CLI;
#  - JIT: the chain of tests/data/php_jit.php with opcache's JIT on (tracing, function): JIT
#    code runs on execute_ex's frame and is placed there (the "JIT frames" counter says the
#    JIT ran), the callers at their call lines, gamma at the line of each C function it calls
#    (str_repeat, strrev: internal calls, before which the JIT saves the opline) and without a
#    line where the sample hit JIT code itself, never at another line;
#  - mixed: an included file's code -> sort_loop -> usort (C) -> execute_ex -> Sorter::cmp (a
#    static method), -> array_map (C) -> execute_ex -> {closure}, and -> array_map (C) ->
#    zend_call_function -> md5 (an internal function C calls);
#  - php-fpm: pm=static workers (forked by the master while recording, so resolved through it;
#    recycled every 3 requests, so most are forked in the middle of the recording) serving
#    requests from cgi-fcgi on a local socket: the handler's chain with exact lines;
#  - a PHP started after the recording began;
#  - a PHP of a version without a known layout: native frames and a marker.
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
SECS=1.5
DATA=$SS_ROOT/tests/data
PHP=/usr/bin/php8.2
FPM=/usr/sbin/php-fpm8.2
STACKS="/usr/bin/python3 $SS_ROOT/tests/system/pprof_stacks.py"

# line FILE MARK: the line number of the line of FILE that ends in "// MARK"
line()
{
	grep -n "// $2\$" "$1" | cut -d: -f1
}

# record_stacks NAME COMMAND ARGS...: records COMMAND ARGS into $TMP/NAME.stacks
record_stacks()
{
	local name=$1
	shift
	record "$TMP/$name.err" -F $HZ -o "$TMP/$name.pb.gz" -- "$@" >"$TMP/$name.out"
	check_eq "$name: exit status" $? 0
	$STACKS "$TMP/$name.pb.gz" | sed 's/^/x;/' >"$TMP/$name.stacks"
}

# show_php FILE: the top stacks of a stacks file, for the log of a failing test
show_php()
{
	sort -t' ' -k2 -rn "$1" | head -4 | cut -c1-700 | sed 's/^/        /'
}

if [[ ! -x $PHP ]]; then
	skip_setup "Debian php8.2-cli missing: every PHP check"
	finish
fi

N='[^;@]*;' # one native frame (or PHP internal function)
C=php_chain\\.php
M=php_mixed\\.php
L_HOT=$(line "$DATA/php_chain.php" HOT)
L_GAMMA=$(line "$DATA/php_chain.php" CALL_GAMMA)
L_BETA=$(line "$DATA/php_chain.php" CALL_BETA)
L_ALPHA=$(line "$DATA/php_chain.php" CALL_ALPHA)
L_RUN=$(line "$DATA/php_chain.php" CALL_RUN)
CHAIN="\\{main\\}@$C:$L_RUN;Worker::run@$C:$L_ALPHA;alpha@$C:$L_BETA;beta@$C:$L_GAMMA;gamma@$C:$L_HOT(;[^;@]*)*\$"

# Thresholds: 499 Hz for 1.5 s is ~750 samples on an idle box; PHP's start-up costs ~20. On a
# loaded 2-core box (load 14 seen) a workload may get a seventh of a CPU: counts ask for 100
# (the callbacks of the mixed workload, a share of it each, for 30); shares are of the samples
# in the function checked, which load does not change.

# test_chain NAME PHP-ARGS...: the known chain, exact lines
test_chain()
{
	local name=$1 f total inc chain hot whole
	shift

	record_stacks "$name" $PHP "$@" "$DATA/php_chain.php" $SECS
	f=$TMP/$name.stacks
	total=$(samples "$f" "*" ";execute_ex;")
	inc=$(samples "$f" "*" ";gamma@$C:")
	check_ge "$name: samples in gamma" "$inc" 100
	chain=$(samples "$f" "*" ";execute_ex;$CHAIN")
	check_pct "$name: execute_ex;{main}:$L_RUN;Worker::run:$L_ALPHA;alpha:$L_BETA;beta:$L_GAMMA;gamma:$L_HOT" \
		"$chain" "$inc" 90 || show_php "$f"
	hot=$(samples "$f" "*" ";gamma@$C:$L_HOT(;|\$)")
	check_pct "$name: gamma at its hot line $L_HOT (the VM's opline register)" "$hot" "$inc" 97
	whole=$(samples "$f" "*" "^x;_start;__libc_start_main(_impl)?;($N)*execute_ex;\\{main\\}@$C:")
	check_pct "$name: stacks through execute_ex complete from _start" "$whole" "$total" 95
}

test_chain cli
test_chain cli-opcache -d opcache.enable_cli=1
check "cli: no PHP marker frames ($(grep -o '[0-9]* markers' "$TMP/cli.err" | head -1))" \
	grep -q "^php .* 0 markers" "$TMP/cli.err"

# test_jit NAME MODE: the known chain with opcache.jit=MODE
J=php_jit\\.php
test_jit()
{
	local name=$1 mode=$2 f inc chain lined hot whole total jit lost
	local l_hot l_hot2 l_setup l_gamma l_beta l_alpha l_run right

	l_hot=$(line "$DATA/php_jit.php" HOT)
	l_hot2=$(line "$DATA/php_jit.php" HOT2)
	l_setup=$(line "$DATA/php_jit.php" SETUP)
	l_gamma=$(line "$DATA/php_jit.php" CALL_GAMMA)
	l_beta=$(line "$DATA/php_jit.php" CALL_BETA)
	l_alpha=$(line "$DATA/php_jit.php" CALL_ALPHA)
	l_run=$(line "$DATA/php_jit.php" CALL_RUN)
	record_stacks "$name" $PHP -d opcache.enable_cli=1 -d opcache.jit="$mode" \
		-d opcache.jit_buffer_size=32M "$DATA/php_jit.php" $SECS
	f=$TMP/$name.stacks
	jit=$(grep -o 'JIT frames [0-9]*' "$TMP/$name.err" | head -1 | grep -o '[0-9]*$')
	lost=$(grep -o 'JIT frames not placed [0-9]*' "$TMP/$name.err" | grep -o '[0-9]*$')
	check_ge "$name: samples through JIT code placed on execute_ex (the JIT ran)" "${jit:-0}" 100
	check_pct "$name: JIT frames not placed (${lost:-?} of ${jit:-?})" "$((${jit:-0} - ${lost:-0}))" \
		"${jit:-0}" 98
	total=$(samples "$f" "*" ";execute_ex;")
	inc=$(samples "$f" "*" ";gamma@$J")
	check_ge "$name: samples in gamma" "$inc" 100
	chain=$(samples "$f" "*" \
		";execute_ex;\\{main\\}@$J:$l_run;Worker::run@$J:$l_alpha;alpha@$J:$l_beta;beta@$J:$l_gamma;gamma@$J(:[0-9]+)?(;[^;@]*)*\$")
	check_pct "$name: execute_ex;{main}:$l_run;Worker::run:$l_alpha;alpha:$l_beta;beta:$l_gamma;gamma" \
		"$chain" "$inc" 90 || show_php "$f"
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

# PHP -> C -> PHP, and an included file
L_CMP=$(line "$DATA/php_mixed.php" CMP)
L_USORT=$(line "$DATA/php_mixed.php" USORT)
L_MAP=$(line "$DATA/php_mixed.php" MAP)
L_CLOSURE=$(line "$DATA/php_mixed.php" CLOSURE)
L_INCLUDE=$(line "$DATA/php_mixed.php" INCLUDE)
L_CALL_SORT=$(line "$DATA/php_mixed_inc.php" CALL_SORT)
record_stacks mixed $PHP "$DATA/php_mixed.php" $SECS
f=$TMP/mixed.stacks
ROOT="execute_ex;\\{main\\}@$M:$L_INCLUDE;\\{include\\}@php_mixed_inc\\.php:$L_CALL_SORT;sort_loop@$M"
inc=$(samples "$f" "*" ";Sorter::cmp@$M:")
chain=$(samples "$f" "*" "$ROOT:$L_USORT;usort;($N)+execute_ex;Sorter::cmp@$M:[0-9]+(;[^;@]*)*\$")
hot=$(samples "$f" "*" ";Sorter::cmp@$M:$L_CMP(;|\$)")
check_ge "mixed: samples in Sorter::cmp" "$inc" 30
check_pct "mixed: {main}:$L_INCLUDE -> {include} -> sort_loop:$L_USORT -> usort -> C -> execute_ex -> Sorter::cmp" \
	"$chain" "$inc" 85 || show_php "$f"
check_pct "mixed: Sorter::cmp at its loop line $L_CMP" "$hot" "$inc" 80
inc=$(samples "$f" "*" ";\\{closure\\}@$M:")
chain=$(samples "$f" "*" "$ROOT:$L_MAP;array_map;($N)+execute_ex;\\{closure\\}@$M:[0-9]+(;[^;@]*)*\$")
hot=$(samples "$f" "*" ";\\{closure\\}@$M:$L_CLOSURE(;|\$)")
check_ge "mixed: samples in the closure" "$inc" 30
check_pct "mixed: sort_loop:$L_MAP -> array_map -> C -> execute_ex -> {closure}" "$chain" "$inc" 85 ||
	show_php "$f"
check_pct "mixed: {closure} at its loop line $L_CLOSURE" "$hot" "$inc" 80
# an internal function C calls (array_map's md5): placed at zend_call_function, leaf side of
# array_map's C code
L_MD5=$(line "$DATA/php_mixed.php" MAP_MD5)
inc=$(samples "$f" "*" ";md5;")
chain=$(samples "$f" "*" "$ROOT:$L_MD5;array_map;($N)*zend_call_function;md5;")
check_ge "mixed: samples in md5" "$inc" 20
check_pct "mixed: sort_loop:$L_MD5 -> array_map -> C -> zend_call_function -> md5" "$chain" "$inc" 85 ||
	show_php "$f"

# A PHP whose layout is not known: native frames and a visible marker. Debian's binary with
# the version text it announces changed to 8.1 (the engine is the same; stackscope must not
# walk what it was not told the layout of).
/usr/bin/python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
tag = b"X-Powered-By: PHP/8.2."
assert tag in b
open(sys.argv[2], "wb").write(b.replace(tag, b"X-Powered-By: PHP/8.1."))' "$PHP" "$TMP/php8.1" &&
	chmod +x "$TMP/php8.1"
record_stacks unsupported "$TMP/php8.1" "$DATA/php_chain.php" 1
f=$TMP/unsupported.stacks
inc=$(samples "$f" "*" ";execute_ex(;|\$)")
chain=$(samples "$f" "*" ";execute_ex;\\[php: unsupported version\\](;[^;@]*)*\$")
check_ge "unsupported version: samples in execute_ex" "$inc" 60
check_pct "unsupported version: execute_ex;[php: unsupported version], no PHP frame" "$chain" "$inc" 95 ||
	show_php "$f"

# A PHP exec'd 0.5 s after the recording began
record_stacks late /bin/sh -c "sleep 0.5; exec $PHP $DATA/php_chain.php $SECS"
f=$TMP/late.stacks
inc=$(samples "$f" "*" ";gamma@$C:")
chain=$(samples "$f" "*" ";execute_ex;$CHAIN")
check_ge "late process: samples in gamma" "$inc" 100
check_pct "late process: chain with exact lines" "$chain" "$inc" 90 || show_php "$f"

# php-fpm: a static pool of 2 workers on a unix socket, started under the recording (the
# workers are forked while it runs, and again after every 3 requests), driven by 2 cgi-fcgi
# loops (at most 12 requests each, 3 s) from a driver script that then stops the master.
if [[ ! -x $FPM ]] || ! command -v cgi-fcgi >/dev/null; then
	skip_setup "php8.2-fpm or cgi-fcgi (libfcgi-bin) missing: php-fpm checks"
	finish
fi
cat >"$TMP/fpm.conf" <<EOF
[global]
pid = $TMP/fpm.pid
error_log = $TMP/fpm.log
log_level = debug
daemonize = no
[stackscope]
listen = $TMP/fpm.sock
pm = static
pm.max_children = 2
pm.max_requests = 3
user = root
EOF
cat >"$TMP/drive.sh" <<'EOF'
#!/bin/bash
# drive.sh CONF SOCKET SCRIPT SECS
"$FPM" -R -y "$1" &
fpm=$!
for ((i = 0; i < 50; i++)); do
	[[ -S $2 ]] && break
	sleep 0.1
done
client()
{
	local n end=$((SECONDS + $4))
	for ((n = 0; n < 12 && SECONDS < end; n++)); do
		SCRIPT_FILENAME=$3 REQUEST_METHOD=GET cgi-fcgi -bind -connect "$2" >>"$2.out"
	done
}
client "$@" &
c=$!
client "$@"
wait $c
kill $fpm
wait $fpm
EOF
chmod +x "$TMP/drive.sh"
L_FHOT=$(line "$DATA/php_fpm.php" FPM_HOT)
L_FLEAF=$(line "$DATA/php_fpm.php" FPM_CALL_LEAF)
L_FRENDER=$(line "$DATA/php_fpm.php" FPM_CALL_RENDER)
L_FHANDLE=$(line "$DATA/php_fpm.php" FPM_CALL_HANDLE)
F=php_fpm\\.php
export FPM
record_stacks fpm "$TMP/drive.sh" "$TMP/fpm.conf" "$TMP/fpm.sock" "$DATA/php_fpm.php" 3
f=$TMP/fpm.stacks
served=$(grep -c "^11999993$" "$TMP/fpm.sock.out" 2>/dev/null)
check_ge "fpm: requests served" "${served:-0}" 4
check_ge "fpm: workers started (2, then recycled)" "$(grep -c 'child [0-9]* started' "$TMP/fpm.log")" 3
inc=$(samples "$f" "*" ";fpm_leaf@$F:")
chain=$(samples "$f" "*" \
	"php_execute_script;zend_execute_scripts;zend_execute;execute_ex;\\{main\\}@$F:$L_FHANDLE;fpm_handle@$F:$L_FRENDER;fpm_render@$F:$L_FLEAF;fpm_leaf@$F:$L_FHOT(;[^;@]*)*\$")
check_ge "fpm: worker samples in fpm_leaf" "$inc" 60
check_pct "fpm: workers' {main}:$L_FHANDLE -> fpm_handle:$L_FRENDER -> fpm_render:$L_FLEAF -> fpm_leaf:$L_FHOT" \
	"$chain" "$inc" 90 || show_php "$f"
echo "        fpm: $(grep -o '[0-9]* through a forked child.s parent' "$TMP/fpm.err" | head -1) (PHP frames)"

finish
