# Shared by the PHP system tests (test_php.sh, test_php_jit.sh), sourced after lib.sh (whose
# record_stacks gives "func@file:line;..." stacks: PHP user frames are the names with an "@";
# native frames and PHP internal functions have none): Debian's PHP 8.2 binaries, the marked
# lines of the php-fpm workload and a php-fpm pool driven by cgi-fcgi.

HZ=499
SECS=1.5
DATA=$SS_ROOT/tests/data
PHP=/usr/bin/php8.2
FPM=/usr/sbin/php-fpm8.2
N='[^;@]*;' # one native frame (or PHP internal function)

# need_php [fpm]: ends the test (counted skips) without the CLI, or php-fpm and cgi-fcgi
need_php()
{
	if [[ ! -x $PHP ]]; then
		skip_setup "Debian php8.2-cli missing: every PHP check"
		finish
	fi
	if [[ ${1:-} == fpm ]] && { [[ ! -x $FPM ]] || ! command -v cgi-fcgi >/dev/null; }; then
		skip_setup "php8.2-fpm or cgi-fcgi (libfcgi-bin) missing: php-fpm checks"
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
# $TMP/NAME/; $TMP/NAME.stacks, and checks that requests were served (the script prints
# 11999993) and workers recycled.
fpm_record()
{
	local name=$1 script=$2 secs=$3 served
	shift 3
	FPM=$FPM FPM_MAX_REQUESTS=3 FPM_CLIENT_REQUESTS=12 record_stacks "$name" \
		"$DATA/php_fpm_drive.sh" "$TMP/$name" "$script" "$secs" "$@"
	served=$(grep -c "^11999993$" "$TMP/$name/fpm.out" 2>/dev/null)
	check_ge "$name: requests served" "${served:-0}" 4
	check_ge "$name: workers started (2, then recycled)" \
		"$(grep -c 'child [0-9]* started' "$TMP/$name/fpm.log")" 3
}
