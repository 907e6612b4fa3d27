# Shared by the PHP system tests (test_php.sh, test_php_jit.sh), sourced after lib.sh (whose
# record_stacks gives "func@file:line;..." stacks: PHP user frames are the names with an "@";
# native frames and PHP internal functions have none): the PHP under test, the marked lines of
# the php-fpm workload and a php-fpm pool driven by cgi-fcgi.
#
# The PHP under test: Debian 12's PHP 8.2 of the host, or with PHP_SUITE=bullseye|bookworm|
# trixie|sid that Debian's of the runtime matrix's root (scripts/runtime_root.sh, RM_CACHE;
# PHP 7.4, 8.2, 8.4), run in a container (scripts/in_container.sh) on the workloads copied into
# the root's /tmp for the test. Commands run as $PHP (a word list), files named as the process
# sees them ($PDATA, $PTMP) and as the test reads them ($PHOST$PTMP/...).

HZ=499
SECS=1.5
DATA=$SS_ROOT/tests/data
N='[^;@]*;' # one native frame (or PHP internal function)

if [[ -n ${PHP_SUITE:-} ]]; then
	PHP_ROOT=${RM_CACHE:-/var/cache/stackscope/runtime-matrix}/roots/$PHP_SUITE
	PHP_ID=$(printf 'stackscope-test-php %s' "$PHP_SUITE" | sha256sum | cut -c1-64)
	IN_ROOT=("$SS_ROOT/scripts/in_container.sh" "$PHP_ROOT" "$PHP_ID")
	PHP_BIN=$(cd "$PHP_ROOT" 2>/dev/null && ls usr/bin/php[0-9]* 2>/dev/null | sort -V | tail -1)
	PHP_BIN=/$PHP_BIN
	PHOST=$PHP_ROOT
	PTMP=
	if [[ -f $PHP_ROOT/.stackscope-root && $PHP_BIN != / ]]; then
		PTMP=$(mktemp -d "$PHP_ROOT/tmp/stackscope-systest-php.XXXXXX")
		PTMP=${PTMP#"$PHP_ROOT"}
		chmod 755 "$PHOST$PTMP"
		cp -p "$DATA"/php_* "$PHOST$PTMP/" # old files: opcache caches no file younger than 2 s
		trap 'rm -rf "${PHOST:?}$PTMP"; cleanup' EXIT
	fi
	PDATA=$PTMP
else
	PHP_SUITE=
	IN_ROOT=()
	PHP_BIN=/usr/bin/php8.2
	PHOST=
	PTMP=$TMP
	PDATA=$DATA
fi
PHPV=${PHP_BIN##*/php}
FPM=/usr/sbin/php-fpm$PHPV
PHP=("${IN_ROOT[@]}" "$PHP_BIN")

# need_php [fpm]: ends the test (counted skips) without the CLI, or php-fpm and cgi-fcgi
need_php()
{
	if [[ -n $PHP_SUITE && -z $PTMP ]]; then
		skip "no $PHP_SUITE root with a PHP (make runtime-matrix): every PHP check"
		finish
	fi
	if [[ ! -x $PHOST$PHP_BIN ]]; then
		skip_setup "Debian php8.2-cli missing: every PHP check"
		finish
	fi
	if [[ ${1:-} == fpm ]] && { [[ ! -x $PHOST$FPM ]] || [[ ! -x $PHOST/usr/bin/cgi-fcgi ]]; }; then
		skip_setup "php$PHPV-fpm or cgi-fcgi (libfcgi-bin) missing: php-fpm checks"
		finish
	fi
}

# fpm_marks: the marked lines of tests/data/php_fpm.php (L_F*) and its name as a regex (F)
fpm_marks()
{
	marks "$DATA/php_fpm.php" L_FHOT=FPM_HOT L_FLEAF=FPM_CALL_LEAF L_FRENDER=FPM_CALL_RENDER \
		L_FHANDLE=FPM_CALL_HANDLE
	F=php_fpm\\.php
}

# fpm_record NAME SCRIPT SECS [PHP-FPM-ARGS...]: tests/data/php_fpm_drive.sh's pool of 2 workers,
# started under the recording (the workers are forked while it runs, and again after every 3
# requests), driven by its cgi-fcgi clients (at most 12 requests each, SECS seconds) in
# $PTMP/NAME/, on SCRIPT (a file of tests/data); $TMP/NAME.stacks, and checks that requests were
# served (the script prints 11999993) and workers recycled.
fpm_record()
{
	local name=$1 script=$2 secs=$3 served
	shift 3
	record_stacks "$name" "${IN_ROOT[@]}" /usr/bin/env FPM="$FPM" FPM_MAX_REQUESTS=3 \
		FPM_CLIENT_REQUESTS=12 bash "$PDATA/php_fpm_drive.sh" "$PTMP/$name" "$PDATA/$script" \
		"$secs" "$@"
	served=$(grep -c "^11999993$" "$PHOST$PTMP/$name/fpm.out" 2>/dev/null)
	check_ge "$name: requests served" "${served:-0}" 4
	check_ge "$name: workers started (2, then recycled)" \
		"$(grep -c 'child [0-9]* started' "$PHOST$PTMP/$name/fpm.log")" 3
}

# The name of a closure as the PHP under test gives it ("{closure}"; 8.4: "{closure:beta():16}"),
# as a regex.
CLOSURE='\{closure[^;@}]*\}'

