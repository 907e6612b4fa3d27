#!/bin/bash
# Helpers of the tests that send the agent's profiles through a real OpenTelemetry Collector
# (test_collector.sh, test_otlp_tls.sh), sourced after lib.sh. The Collector is
# scripts/collector.sh's build (the OTLP receiver with profiles, the contrib file exporter);
# each run NAME of it has its configuration $TMP/NAME.yaml, its log $TMP/NAME.log and its
# output $TMP/NAME.pb (proto messages, each behind its length: otlp_file.py reads them).

PY=/usr/bin/python3
OTLP_FILE=$SS_ROOT/tests/system/otlp_file.py
OTLP_PROFILES=$SS_ROOT/tests/system/otlp_profiles.py

# workload: wl_chain_nofp running (its pid in WPID), for 60 s from now (its limit) unless it
# runs already with 30 s left
workload()
{
	if [[ -n ${WPID:-} ]] && kill -0 "$WPID" 2>/dev/null &&
		[[ $((SECONDS - WSTART)) -lt 30 ]]; then
		return
	fi
	[[ -n ${WPID:-} ]] && kill "$WPID" 2>/dev/null
	spawn WPID "$FIX/wl_chain_nofp" 60
	WSTART=$SECONDS
}

# collector_find: COLLECTOR set to the binary (built once, then cached), GRPC_PORT and
# HTTP_PORT to free ports; false after a skip_setup if it cannot be built
collector_find()
{
	COLLECTOR=$("$SS_ROOT/scripts/collector.sh" 2>"$TMP/collector-build.err")
	if [[ ! -x $COLLECTOR ]]; then
		skip_setup "no OpenTelemetry Collector: $(tail -3 "$TMP/collector-build.err")"
		return 1
	fi
	GRPC_PORT=$(free_port)
	HTTP_PORT=$(free_port)
}

free_port()
{
	$PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# collector_config NAME [TLS-YAML]: the Collector's configuration for a run NAME: the OTLP
# receiver on GRPC_PORT and HTTP_PORT (each with the TLS block given, indented for it), the
# file exporter into $TMP/NAME.pb (proto, a length before each message), the debug exporter
# (one line per request in the log)
collector_config()
{
	local name=$1 tls=${2:-}
	cat >"$TMP/$name.yaml" <<-EOF
		receivers:
		  otlp:
		    protocols:
		      grpc:
		        endpoint: 127.0.0.1:$GRPC_PORT
		$tls
		      http:
		        endpoint: 127.0.0.1:$HTTP_PORT
		$tls
		exporters:
		  file:
		    path: $TMP/$name.pb
		    format: proto
		  debug:
		    verbosity: basic
		service:
		  telemetry:
		    logs:
		      level: info
		    metrics:
		      level: none
		  pipelines:
		    profiles:
		      receivers: [otlp]
		      exporters: [file, debug]
	EOF
}

# collector_start NAME [TLS-YAML]: starts the Collector for run NAME (log $TMP/NAME.log) and
# waits until it serves both ports; its pid in CPID. False after a failed check if not.
collector_start()
{
	local name=$1 end
	collector_config "$@"
	"$COLLECTOR" --config "$TMP/$name.yaml" --feature-gates=service.profilesSupport \
		>"$TMP/$name.log" 2>&1 &
	CPID=$!
	_bg_pids+=($CPID)
	end=$((SECONDS + 30))
	until grep -q 'Everything is ready' "$TMP/$name.log" 2>/dev/null; do
		if ! kill -0 "$CPID" 2>/dev/null || [[ $SECONDS -ge $end ]]; then
			fail "$name: the Collector did not start: $(grep -v '^\s*$' "$TMP/$name.log" | tail -3)"
			return 1
		fi
		sleep 0.1
	done
}

# collector_stop: SIGTERM (the file exporter flushes), waits for the exit
collector_stop()
{
	kill -TERM "$CPID" 2>/dev/null
	wait "$CPID" 2>/dev/null
}

# collector_errors NAME...: the Collector's log lines at level error (or worse) of those runs
collector_errors()
{
	local n
	for n in "$@"; do
		grep -E $'\t(error|dpanic|panic|fatal)\t|^panic:' "$TMP/$n.log"
	done
}

agent()
{
	local name=$1
	shift
	"$SS" agent -F 99 --store "$TMP/$name.db" "$@" 2>"$TMP/$name.err" &
	APID=$!
	_bg_pids+=($APID)
}

stop_agent()
{
	local i
	kill -TERM "$APID" 2>/dev/null
	for ((i = 0; i < 150; i++)); do
		kill -0 "$APID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$APID" 2>/dev/null; then
		kill -KILL "$APID"
		wait "$APID" 2>/dev/null
		ARC=124
	else
		wait "$APID"
		ARC=$?
	fi
}

# scrape PORT: the agent's /metrics into $TMP/metrics.txt; metric NAME: a value from it
scrape() { curl -sf -m 3 "http://127.0.0.1:$1/metrics" >"$TMP/metrics.txt"; }
metric() { awk -v m="$1" '$1 == m { print $2 }' "$TMP/metrics.txt"; }
lost_total() { awk '$1 ~ /^stackscope_exports_lost_total/ { n += $2 } END { print n + 0 }' "$TMP/metrics.txt"; }

# wait_metric PORT NAME MIN SECS: until NAME >= MIN in the agent's /metrics, at most SECS
wait_metric()
{
	local end=$((SECONDS + $4)) v
	while [[ $SECONDS -lt $end ]]; do
		if scrape "$1"; then
			v=$(metric "$2")
			[[ ${v:-0} -ge $3 ]] && return 0
		fi
		sleep 0.2
	done
	return 1
}

# received NAME...: the messages of those runs' files split into $TMP/NAME.msgs/ and their
# facts in $TMP/NAME.facts (the first NAME's), "interval START SAMPLES" of all in
# $TMP/NAME.iv
received()
{
	local first=$1 n
	: >"$TMP/$first.facts"
	for n in "$@"; do
		if [[ -s $TMP/$n.pb ]]; then
			$PY "$OTLP_FILE" split "$TMP/$n.pb" "$TMP/$first.msgs" >/dev/null ||
				fail "$n: the Collector's file does not split into whole messages"
		fi
	done
	if compgen -G "$TMP/$first.msgs/*.pb" >/dev/null; then
		$PY "$OTLP_FILE" facts "$TMP/$first.msgs"/*.pb >"$TMP/$first.facts"
	fi
	awk '$1 == "interval" { print $2, $3 }' "$TMP/$first.facts" >"$TMP/$first.iv"
}

# stored NAME: the store's intervals as "START SAMPLES" in $TMP/NAME.siv, in the order written
stored()
{
	"$SS" store intervals --store "$TMP/$1.db" 2>/dev/null | sort -n | awk '{ print $2, $4 }' \
		>"$TMP/$1.siv"
}


# match_intervals STORE_IV COLLECTOR_IV: pairs the intervals of the agent's store ("START
# SAMPLES", in the order written) with those a Collector received (in the order received):
# in order, the same sample count, the received window not starting after the stored one (the
# OTLP encoder widens a profile's window to cover every sample's timestamp, src/export/otlp.c);
# prints "MATCHED STORE_ONLY RECEIVED_ONLY" (received ones that match none: RECEIVED_ONLY)
match_intervals()
{
	$PY - "$1" "$2" <<-'PYEOF'
		import sys
		def load(p):
		    return [tuple(map(int, l.split())) for l in open(p) if l.strip()]
		store, got = load(sys.argv[1]), load(sys.argv[2])
		i = matched = 0
		for start, n in got:
		    j = i
		    while j < len(store) and not (store[j][1] == n and start <= store[j][0]):
		        j += 1
		    if j < len(store):
		        matched += 1
		        i = j + 1
		print(matched, len(store) - matched, len(got) - matched)
	PYEOF
}
