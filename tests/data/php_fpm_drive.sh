#!/bin/bash
# Drives a php-fpm pool for the PHP tests (tests/system/php_lib.sh fpm_record) and the runtime
# matrix's FPM row (scripts/runtime_matrix.sh row_php_fpm): a static pool of 2 workers on a
# unix socket, started here (so its workers are forked while a recording runs, and again after
# every FPM_MAX_REQUESTS requests), 4 cgi-fcgi clients requesting SCRIPT in a loop for SECS
# seconds (at most FPM_CLIENT_REQUESTS requests each), then the master stopped.
# Usage: php_fpm_drive.sh DIR SCRIPT SECS [PHP-FPM-ARGS...]
# DIR (created) gets fpm.conf, fpm.log (log_level debug: "child N started"), fpm.sock and
# fpm.out (the responses). Env: FPM (default: the newest /usr/sbin/php-fpm*), FPM_MAX_REQUESTS
# (default 20), FPM_CLIENT_REQUESTS (default: no cap).
set -u
dir=$1 script=$2 secs=$3
shift 3
[[ $dir == /* ]] || dir=$PWD/$dir
[[ $script == /* ]] || script=$PWD/$script
FPM=${FPM:-$(ls /usr/sbin/php-fpm* | sort -V | tail -1)}
mkdir -p "$dir"
cat >"$dir/fpm.conf" <<EOF
[global]
pid = $dir/fpm.pid
error_log = $dir/fpm.log
log_level = debug
daemonize = no
[stackscope]
listen = $dir/fpm.sock
pm = static
pm.max_children = 2
pm.max_requests = ${FPM_MAX_REQUESTS:-20}
user = root
EOF
rm -f "$dir/fpm.sock" "$dir/fpm.out" "$dir/fpm.log"
"$FPM" -R -y "$dir/fpm.conf" "$@" &
fpm=$!
for ((i = 0; i < 50; i++)); do
	[[ -S $dir/fpm.sock ]] && break
	sleep 0.1
done
ns=$(awk -v s="$secs" 'BEGIN { printf "%d", s * 1e9 }')
client()
{
	local n cap=${FPM_CLIENT_REQUESTS:-0} end=$(($(date +%s%N) + ns))
	for ((n = 0; (cap == 0 || n < cap) && $(date +%s%N) < end; n++)); do
		SCRIPT_FILENAME=$script REQUEST_METHOD=GET cgi-fcgi -bind -connect "$dir/fpm.sock" \
			>>"$dir/fpm.out"
	done
}
# more clients than workers: a worker finds the next request queued when it is done with one
clients=()
for ((i = 0; i < 4; i++)); do
	client &
	clients+=($!)
done
wait "${clients[@]}"
kill $fpm
wait $fpm
