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


# check_against_store NAME: what the Collector received in run NAME (its file, split) against
# the agent's own store of the same run ($TMP/NAME.db): every stored interval arrived with its
# sample count, the dictionaries keep their invariants, the workload's ($WPID) stacks equal
# the store's, its resource attributes are there, the Collector logged no error
check_against_store()
{
	local name=$1 nmsg matched store_only got_only chain res kv errs
	received "$name"
	stored "$name"
	nmsg=$(find "$TMP/$name.msgs" -name '*.pb' 2>/dev/null | wc -l)
	check_ge "$name: messages in the Collector's file" "$nmsg" 3
	check_ge "$name: intervals in the store" "$(grep -c . "$TMP/$name.siv")" 3
	# the same intervals with the same sample counts on both sides
	read -r matched store_only got_only < <(match_intervals "$TMP/$name.siv" "$TMP/$name.iv")
	if [[ $store_only -eq 0 && $got_only -eq 0 && $matched -ge 3 ]]; then
		ok "$name: every interval of the store arrived with its sample count ($matched intervals, $(awk '{ n += $2 } END { print n }' "$TMP/$name.siv") samples)"
	else
		fail "$name: intervals: $matched matched, $store_only only in the store, $got_only only received"
		paste "$TMP/$name.siv" "$TMP/$name.iv" | head -8 | sed 's/^/        /'
	fi
	check_eq "$name: broken dictionary invariants" \
		"$(grep -c '^bad ' "$TMP/$name.facts")" 0 || grep '^bad ' "$TMP/$name.facts" | head -5
	# the workload's stacks, on both sides, over the same intervals
	$PY "$OTLP_FILE" stacks "$WPID" "$TMP/$name.msgs"/*.pb | sort >"$TMP/$name.col.stacks"
	"$SS" store query --store "$TMP/$name.db" --pid "$WPID" -o - 2>/dev/null |
		sed -E 's/^[^;]*;//' | awk '{ n = $NF; $NF = ""; sub(/ $/, ""); s[$0] += n }
			END { for (k in s) print k, s[k] }' | sort >"$TMP/$name.store.stacks"
	chain=$(awk -v c="$CHAIN" 'index($1, c) { n += $2 } END { print n + 0 }' \
		"$TMP/$name.col.stacks")
	check_ge "$name: the workload's chain in the Collector's output (samples)" "$chain" 10
	if diff "$TMP/$name.store.stacks" "$TMP/$name.col.stacks" >"$TMP/$name.stdiff"; then
		ok "$name: the workload's stacks equal the store's ($(grep -c . "$TMP/$name.col.stacks") stacks)"
	else
		fail "$name: the workload's stacks differ (< store, > Collector):"
		head -6 "$TMP/$name.stdiff" | cut -c1-300 | sed 's/^/        /'
	fi
	res=$(awk -v p="$WPID" '$1 == "resource" && $2 == p { print $3 }' "$TMP/$name.facts" |
		sort -u)
	for kv in "process.pid=$WPID" "process.executable.path=$FIX/wl_chain_nofp" \
		"process.executable.name=wl_chain_nofp" "host.name=$(hostname)" "os.type=linux"; do
		check "$name: resource attribute $kv" grep -qxF "$kv" <<<"$res"
	done
	check "$name: resource attribute host.id" grep -q '^host.id=.' <<<"$res"
	errs=$(collector_errors "$name")
	check_eq "$name: Collector log lines at level error" "$(grep -c . <<<"$errs")" 0 ||
		head -3 <<<"$errs" | cut -c1-300 | sed 's/^/        /'
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
