#!/bin/bash
# timeout: 300
# `stackscope agent` through a real OpenTelemetry Collector (scripts/collector.sh: the OTLP
# receiver with profiles, the contrib file exporter writing what it received as proto), while
# wl_chain_nofp runs:
#  - over gRPC and over HTTP: the Collector's file, decoded (otlp_file.py), holds the agent's
#    intervals, each with the same sample count as the agent's own store (--store) has for it;
#    the workload's stacks (otlp_profiles.py) equal the store's for the same intervals; the
#    resource attributes of the workload's process are there; the dictionaries keep their
#    invariants (index 0 the zero value, every index in its table, no duplicate keys); the
#    Collector logs no error.
#  - a Collector restarted mid-run (down ~2 s, within the agent's retry budget: the queue
#    holds 16 requests, retries go on for 120 s) loses no interval: /metrics counts none
#    lost and some delivered late; one down for longer (8 s at 0.3 s intervals: more than the
#    queue holds) loses intervals, and /metrics counts exactly those the store has and the
#    Collector never received (stackscope_exports_lost_total).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/collector_lib.sh"
need_root
have_fixture wl_chain_nofp || finish
collector_find || finish
ok "collector built or cached: ${COLLECTOR##*/}"
CHAIN='main;chain_a;chain_b;chain_c;hot_leaf'

# --- 1, 2. gRPC and HTTP: the Collector's output against the agent's own store -------------
for proto in grpc http; do
	echo "# agent -> Collector over $proto (at ${SECONDS} s)"
	name=$proto
	workload
	collector_start "$name" || continue
	MPORT=$(free_port)
	if [[ $proto == grpc ]]; then
		endpoint=http://127.0.0.1:$GRPC_PORT
	else
		endpoint=http://127.0.0.1:$HTTP_PORT
	fi
	agent "$name" --interval 1 --otlp-protocol "${proto/http/http\/protobuf}" \
		--otlp-endpoint "$endpoint" --metrics-addr "127.0.0.1:$MPORT"
	if ! wait_agent "$TMP/$name.err" "$APID"; then
		fail "$name: the agent did not start: $(tail -3 "$TMP/$name.err")"
		collector_stop
		continue
	fi
	wait_metric "$MPORT" 'stackscope_exports_total{result="ok"}' 3 30
	check_eq "$name: /metrics: requests lost" "$(lost_total)" 0
	stop_agent
	collector_stop
	check_eq "$name: agent exit status" "$ARC" 0
	check_against_store "$name"
	check "$name: the debug exporter logged the profiles" grep -q 'Profiles' "$TMP/$name.log"
done

# --- 3. the Collector restarted mid-run, then down for longer --------------------------------
echo "# Collector restarted, then down for longer (at ${SECONDS} s)"
name=restart
MPORT=$(free_port)
if collector_start r1; then
	workload
	agent "$name" --interval 0.3 --otlp-endpoint "http://127.0.0.1:$HTTP_PORT" \
		--metrics-addr "127.0.0.1:$MPORT"
	if wait_agent "$TMP/$name.err" "$APID" &&
		wait_metric "$MPORT" 'stackscope_exports_total{result="ok"}' 3 30; then
		# down ~2 s: ~7 intervals, under the queue's 16
		collector_stop
		sleep 2
		collector_start r2
		wait_metric "$MPORT" stackscope_exports_delivered_late_total 1 15
		check_eq "restart: /metrics: requests lost after a short outage" "$(lost_total)" 0
		check_ge "restart: /metrics: outages" "$(metric stackscope_export_outages_total)" 1
		check_ge "restart: /metrics: requests delivered late" \
			"$(metric stackscope_exports_delivered_late_total)" 1
		ok_before=$(metric 'stackscope_exports_total{result="ok"}')
		# down 8 s: ~27 intervals, more than the queue holds
		collector_stop
		sleep 8
		collector_start r3
		wait_metric "$MPORT" 'stackscope_exports_total{result="ok"}' $((ok_before + 20)) 20
		sleep 1
		stop_agent
		collector_stop
		scrape_ok=1
	else
		fail "restart: the agent did not deliver: $(tail -3 "$TMP/$name.err")"
		stop_agent
		collector_stop
		scrape_ok=0
	fi
	if [[ $scrape_ok == 1 ]]; then
		check_eq "restart: agent exit status" "$ARC" 0
		# the last /metrics seen (the agent is gone): what it counted lost
		lost=$(lost_total)
		check_ge "restart: /metrics: requests lost while down 8 s (queue_full)" \
			"$(metric 'stackscope_exports_lost_total{reason="queue_full"}')" 1
		received r1 r2 r3
		stored "$name"
		read -r matched missing got_only < <(match_intervals "$TMP/$name.siv" "$TMP/r1.iv")
		check_eq "restart: intervals the Collectors received that the store lacks" "$got_only" 0
		# every interval is received or counted lost, once: store = received + lost
		check "restart: store intervals ($((matched + missing))) = received ($matched) + counted lost ($lost)" \
			test "$missing" -eq "$lost"
		check_eq "restart: broken dictionary invariants" "$(grep -c '^bad ' "$TMP/r1.facts")" 0
		errs=$(collector_errors r1 r2 r3)
		check_eq "restart: Collector log lines at level error" "$(grep -c . <<<"$errs")" 0 ||
			head -3 <<<"$errs" | cut -c1-300 | sed 's/^/        /'
	fi
fi
# --- 4. --config FILE: keys applied, flags over them, errors naming the line ---------------------
echo "# --config (at ${SECONDS} s)"
name=config
MPORT=$(free_port)
printf '%s\n' '# stackscope agent settings (a comment)' '' 'freq = 49' 'interval = 0.5' \
	'otlp-protocol = grpc' 'otlp-endpoint = http://127.0.0.1:1' \
	"metrics-addr = 127.0.0.1:$MPORT" 'otlp-header = x-tenant=from-file' \
	'include-cmdline = false' >"$TMP/agent.conf"
if collector_start "$name"; then
	workload
	# the flag's endpoint over the file's (port 1: nothing listens there)
	agent "$name" --config "$TMP/agent.conf" --otlp-endpoint "http://127.0.0.1:$GRPC_PORT"
	if wait_agent "$TMP/$name.err" "$APID"; then
		check "config: exports through the flag's endpoint, /metrics on the file's address" \
			wait_metric "$MPORT" 'stackscope_exports_total{result="ok"}' 2 20
	else
		fail "config: the agent did not start: $(tail -3 "$TMP/$name.err")"
	fi
	stop_agent
	collector_stop
	check_eq "config: agent exit status" "$ARC" 0
	# (-F 99 of agent() over the file's freq = 49)
	check "config: the file's interval, the flag's frequency in the log ($(grep -o 'running at.*every [0-9.]* s' "$TMP/$name.err"))" \
		grep -q 'running at 99 Hz, reporting every 0.5 s' "$TMP/$name.err"
fi
# bad_conf DESCRIPTION PATTERN LINES...: a file of LINES refused at once with one line matching
# PATTERN (which names the file and the line)
bad_conf()
{
	local what=$1 pat=$2 rc
	shift 2
	printf '%s\n' "$@" >"$TMP/bad.conf"
	timeout -k 2 10 "$SS" agent --config "$TMP/bad.conf" --output-dir "$TMP/never" \
		2>"$TMP/bad.err" </dev/null
	rc=$?
	if [[ $rc -ne 0 && $rc -ne 124 && $(grep -c . "$TMP/bad.err") -eq 1 ]] &&
		grep -Eq "$pat" "$TMP/bad.err"; then
		ok "config: $what: exit $rc: $(cat "$TMP/bad.err")"
	else
		fail "config: $what: exit $rc: $(head -c 300 "$TMP/bad.err")"
	fi
}
bad_conf "an unknown key" "bad.conf:3: unknown option '--no-such-key" '# x' 'freq = 99' \
	'no-such-key = 1'
bad_conf "a bad value" 'bad.conf:2: .*interval' 'freq = 99' 'interval = 0'
bad_conf "a bad line" 'bad.conf:1: want KEY = VALUE' 'Freq: 99'
timeout -k 2 10 "$SS" agent --config "$TMP/nothing.conf" 2>"$TMP/bad.err" </dev/null
check "config: a missing file named ($(head -c 200 "$TMP/bad.err"))" \
	grep -q 'nothing.conf: No such file' "$TMP/bad.err"
check "config: no output folder created" test ! -e "$TMP/never"
kill "$WPID" 2>/dev/null

finish
